//! Logging: human-readable or JSON lines on stderr (stdout is for a command's own output).
//!
//! Every line passes a last line of defence before it is written: each secret of the
//! configuration it holds (`Settings::secrets`) is replaced by `[redacted]`. oncebot's own code
//! never logs one (`Secret` prints as `[redacted]`, the Bot API client strips URLs), but a
//! library logging at trace may show what it was given: warp's path filters logged the relay's
//! wake-up secret, a path segment, 30,049 times at `RUST_LOG=trace`.

use std::io::{self, Write};
use std::sync::Arc;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

use crate::config::{LogFormat, LogSettings};

/// What stands in for a secret in a log line.
const REDACTED: &str = "[redacted]";

/// Secrets shorter than this are not masked: they cannot be told from ordinary words, and
/// masking every `admin` in the log would hide more than it protects (none is ever logged by
/// oncebot itself).
pub const MIN_MASKED_CHARS: usize = 8;

/// Installs the global subscriber. `RUST_LOG` overrides `log.level`. `secrets` are masked in
/// every line (see the module's doc).
pub fn init(settings: &LogSettings, secrets: Vec<String>) {
    // warp's own server (still used by the bench's HTTP floor; oncebot's listeners run on
    // `http_server`) reports every keep-alive connection its graceful shutdown cancels as an
    // ERROR "server connection error: Cancelled": noise at every stop, so that one target is off
    // unless RUST_LOG asks for it.
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(format!("{},warp::server::run=off", settings.level)))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let writer = Redacting::new(secrets);
    // Colours only on a terminal: in a pipe, a file or `docker logs` they are escape-code noise.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(writer);
    let _ = match settings.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// `text` with each of `secrets` masked as a log line's are (those of at least
/// [`MIN_MASKED_CHARS`]): for what a command prints on stdout (`oncebot doctor`).
pub fn redact(text: &str, secrets: &[String]) -> String {
    let r = Redacting::new(secrets.to_vec());
    String::from_utf8_lossy(&mask(text.as_bytes(), &r.secrets)).into_owned()
}

/// Stderr, with the configuration's secrets masked in each line.
#[derive(Clone)]
struct Redacting {
    /// Longest first, so a secret that contains another is masked whole.
    secrets: Arc<[String]>,
}

impl Redacting {
    fn new(mut secrets: Vec<String>) -> Redacting {
        secrets.retain(|s| s.chars().count() >= MIN_MASKED_CHARS);
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Redacting {
            secrets: secrets.into(),
        }
    }
}

impl<'a> MakeWriter<'a> for Redacting {
    type Writer = RedactingWriter;
    fn make_writer(&'a self) -> RedactingWriter {
        RedactingWriter {
            secrets: self.secrets.clone(),
        }
    }
}

/// One event's writer: the formatter hands it the whole formatted line in one `write`.
struct RedactingWriter {
    secrets: Arc<[String]>,
}

impl Write for RedactingWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let masked = mask(buf, &self.secrets);
        io::stderr().lock().write_all(&masked)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

/// `line` with every occurrence of each secret replaced by [`REDACTED`]; borrowed as it is
/// when it holds none (nearly every line).
fn mask<'a>(line: &'a [u8], secrets: &[String]) -> std::borrow::Cow<'a, [u8]> {
    let mut out = std::borrow::Cow::Borrowed(line);
    for secret in secrets {
        let needle = secret.as_bytes();
        if !contains(&out, needle) {
            continue;
        }
        let mut next = Vec::with_capacity(out.len());
        let mut rest: &[u8] = &out;
        while let Some(at) = find(rest, needle) {
            next.extend_from_slice(&rest[..at]);
            next.extend_from_slice(REDACTED.as_bytes());
            rest = &rest[at + needle.len()..];
        }
        next.extend_from_slice(rest);
        out = std::borrow::Cow::Owned(next);
    }
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(line: &str, secrets: &[&str]) -> String {
        let r = Redacting::new(secrets.iter().map(|s| s.to_string()).collect());
        String::from_utf8(mask(line.as_bytes(), &r.secrets).into_owned()).unwrap()
    }

    #[test]
    fn every_occurrence_of_each_secret_is_masked() {
        assert_eq!(
            masked(
                "param?: \"wake-secret_0123\" then wake-secret_0123/x and tok:en-123456789",
                &["wake-secret_0123", "tok:en-123456789"]
            ),
            "param?: \"[redacted]\" then [redacted]/x and [redacted]"
        );
    }

    #[test]
    fn the_longer_secret_is_masked_whole_and_short_ones_are_left() {
        assert_eq!(
            masked("abcdefgh-long and abcdefgh", &["abcdefgh", "abcdefgh-long"]),
            "[redacted] and [redacted]"
        );
        assert_eq!(masked("admin chats", &["admin"]), "admin chats");
    }

    #[test]
    fn a_line_without_a_secret_is_borrowed() {
        let r = Redacting::new(vec!["0123456789abcdef".into()]);
        assert!(matches!(
            mask(b"nothing here", &r.secrets),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
