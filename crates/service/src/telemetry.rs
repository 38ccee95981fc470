//! Logging: human-readable or JSON lines on stderr (stdout is for a command's own output).

use tracing_subscriber::EnvFilter;

use crate::config::{LogFormat, LogSettings};

/// Installs the global subscriber. `RUST_LOG` overrides `log.level`.
pub fn init(settings: &LogSettings) {
    // warp's own server (still used by the bench's HTTP floor; oncebot's listeners run on
    // `http_server`) reports every keep-alive connection its graceful shutdown cancels as an
    // ERROR "server connection error: Cancelled": noise at every stop, so that one target is off
    // unless RUST_LOG asks for it.
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(format!("{},warp::server::run=off", settings.level)))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    // Colours only on a terminal: in a pipe, a file or `docker logs` they are escape-code noise.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = match settings.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}
