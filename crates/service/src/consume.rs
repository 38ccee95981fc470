//! The read loop every stream consumer shares (the worker on the jobs stream, the dispatcher on
//! the replies and callbacks streams), over the ledger's `StreamReader`: its own blocking-read
//! connection, typed entries. A failed read is tried again with backoff (the reader makes a new
//! connection); the reader itself creates a missing consumer group again.

use tokio_util::sync::CancellationToken;

use crate::backoff::{self, Backoff};
use crate::ledger::{Ledger, LedgerError, StreamReader};
use crate::shutdown::sleep_or_stop;

/// One consumer of one stream: how it reads, and what it does with an entry.
pub(crate) trait Consumer: Send + Sync {
    /// What one read yields (`JobEntry`, `LaneEntry`).
    type Entry: Send;

    /// What it reads, for logs.
    fn what(&self) -> &'static str;

    /// One XREADGROUP with `reader`; `None` ends the loop (e.g. its semaphore was closed).
    fn read<'a>(
        &'a self,
        reader: &'a mut StreamReader,
    ) -> impl Future<Output = Option<Result<Vec<Self::Entry>, LedgerError>>> + Send + 'a;

    /// Takes the entries of one read (typically spawning their processing).
    fn handle(&self, entries: Vec<Self::Entry>) -> impl Future<Output = ()> + Send + '_;
}

/// Runs `consumer` with a reader of its own (`Ledger::reader`) until `stop`.
pub(crate) async fn read_loop(ledger: &Ledger, stop: &CancellationToken, consumer: &impl Consumer) {
    let what = consumer.what();
    let mut reader = ledger.reader();
    let mut backoff = Backoff::new(backoff::REDIS);
    while !stop.is_cancelled() {
        let reply = tokio::select! {
            _ = stop.cancelled() => break,
            r = consumer.read(&mut reader) => r,
        };
        match reply {
            None => break,
            Some(Ok(entries)) => {
                backoff.reset();
                if !entries.is_empty() {
                    consumer.handle(entries).await;
                }
            }
            Some(Err(e)) => {
                crate::log_unless_refused!(e, error, error = %e, what, "reading failed; retrying");
                if sleep_or_stop(backoff.next_delay(), stop).await {
                    break;
                }
            }
        }
    }
}
