//! Stopping: the one listener for SIGTERM and SIGINT (`serve` and `demo`), and the one sleep
//! that ends early when a `CancellationToken` is cancelled.

use std::time::Duration;

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Sleeps `d`; true if `stop` was cancelled meanwhile.
pub(crate) async fn sleep_or_stop(d: Duration, stop: &CancellationToken) -> bool {
    tokio::select! {
        _ = stop.cancelled() => true,
        _ = tokio::time::sleep(d) => false,
    }
}

/// SIGTERM and SIGINT (Ctrl-C), listened for from the moment this is built: install it before
/// anything can be interrupted, or a signal in between takes the default action and kills the
/// process without its clean-up.
pub struct Signals {
    term: Option<Signal>,
    int: Option<Signal>,
}

impl Signals {
    /// A signal that cannot be listened for is logged (it will stop the process abruptly) and
    /// never resolves `recv`.
    pub fn install() -> Signals {
        let listen = |kind: SignalKind, name: &str| match signal(kind) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for {name}; it will stop oncebot abruptly");
                None
            }
        };
        Signals {
            term: listen(SignalKind::terminate(), "SIGTERM"),
            int: listen(SignalKind::interrupt(), "SIGINT"),
        }
    }

    /// Resolves at the next SIGTERM or SIGINT.
    pub async fn recv(&mut self) {
        async fn next(s: &mut Option<Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            _ = next(&mut self.term) => {}
            _ = next(&mut self.int) => {}
        }
    }
}
