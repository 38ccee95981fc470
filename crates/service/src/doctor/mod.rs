//! `oncebot doctor`: is this deployment ready to run? One check per line, ✓ or ✗, and for a ✗
//! the exact setting or action that fixes it; `--json` for scripts.
//!
//! Policy:
//! - **Looks, never touches.** It takes no updates (never `getUpdates`, so a running poller
//!   loses nothing), never calls `setWebhook` or `deleteWebhook`, writes nothing to Redis (no
//!   scripts loaded, no groups made, no login gate shared) and nothing to MoviePilot (its calls
//!   are reads). It can run beside a live deployment.
//! - **Every check ends.** Each has the `--timeout` (10 s by default) around everything it
//!   does, so a dead peer is a ✗ within it, not a hang. The three peers (Telegram, Redis,
//!   MoviePilot) are asked at the same time; the lines come in a fixed order.
//! - **A check that cannot run is a ✗.** When the token is refused, the webhook and the admin
//!   chats are "not checked"; likewise after Redis or MoviePilot did not answer.
//! - **No secret in the output.** The texts are built from settings' names, never their secret
//!   values, and every line passes the log's masking of the configuration's secrets
//!   (`telemetry::redact`) before it is printed.
//! - **Exit status.** 0 when every check passes, 1 otherwise ([`ChecksFailed`]); a setting that
//!   `serve` would refuse stops it before any check, with the setting's line and status 2, as
//!   every command does.

mod moviepilot;
mod redis;
mod telegram;

use std::io::Write;
use std::time::Duration;

use serde::Serialize;

use crate::config::Settings;

/// How `oncebot doctor` runs.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Updates arrive by long polling (`serve --poll`): no webhook may be set.
    pub poll: bool,
    /// One JSON object on stdout instead of lines.
    pub json: bool,
    /// The most any one check may take.
    pub timeout: Duration,
}

/// One check's result, as printed and as `--json` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Stable, for scripts: `telegram.token`, `redis.persistence`, …
    pub name: String,
    pub ok: bool,
    /// What was found.
    pub detail: String,
    /// For a failed check: the setting to change or the command to run. `None` when it passed.
    pub fix: Option<String>,
}

impl Check {
    fn pass(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok: true,
            detail: detail.into(),
            fix: None,
        }
    }

    fn fail(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok: false,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    /// A check that could not run because an earlier one failed.
    fn not_checked(name: impl Into<String>, because: &str) -> Check {
        Check::fail(
            name,
            format!("not checked: {because}"),
            "fix the check above first",
        )
    }

    /// The check as one line: `✓ name: detail`, or `✗ name: detail — fix: …`.
    fn line(&self) -> String {
        let line = format!("{} {}: {}", mark(self.ok), self.name, self.detail);
        match &self.fix {
            Some(fix) if !self.ok => format!("{line} — fix: {fix}"),
            _ => line,
        }
    }

    fn redacted(self, secrets: &[String]) -> Check {
        Check {
            name: self.name,
            ok: self.ok,
            detail: crate::telemetry::redact(&self.detail, secrets),
            fix: self.fix.map(|fix| crate::telemetry::redact(&fix, secrets)),
        }
    }
}

fn mark(ok: bool) -> &'static str {
    if ok { "✓" } else { "✗" }
}

/// Some checks failed (exit status 1); the lines on stdout say which and how to fix each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("doctor: {failed} of {total} checks failed (each ✗ line says what to fix)")]
pub struct ChecksFailed {
    pub failed: usize,
    pub total: usize,
}

/// Runs every check (settings already validated) and prints them: lines, or one JSON object
/// `{"ok": …, "checks": [{"name", "ok", "detail", "fix"}, …]}`.
pub async fn run(settings: &Settings, options: Options) -> anyhow::Result<()> {
    let checks = checks(settings, options).await;
    let failed = checks.iter().filter(|c| !c.ok).count();
    let mut out = std::io::stdout().lock();
    if options.json {
        let doc = serde_json::json!({ "ok": failed == 0, "checks": checks });
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
    } else {
        for check in &checks {
            writeln!(out, "{}", check.line())?;
        }
    }
    drop(out);
    if failed > 0 {
        return Err(ChecksFailed {
            failed,
            total: checks.len(),
        }
        .into());
    }
    Ok(())
}

/// Every check, in the order they are printed: the token and how updates arrive, Redis,
/// MoviePilot, the admin chats.
pub async fn checks(settings: &Settings, options: Options) -> Vec<Check> {
    let ((telegram, chats), redis, moviepilot) = tokio::join!(
        telegram::checks(settings, options.poll, options.timeout),
        redis::checks(settings, options.timeout),
        moviepilot::checks(&settings.moviepilot, options.timeout),
    );
    let secrets = settings.secrets();
    [telegram, redis, moviepilot, chats]
        .into_iter()
        .flatten()
        .map(|check| check.redacted(&secrets))
        .collect()
}

/// `work` within `timeout`, or what the check says when it did not end in time.
async fn within<T>(
    timeout: Duration,
    work: impl std::future::Future<Output = T>,
) -> Result<T, String> {
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| format!("no answer within {}", seconds(timeout)))
}

/// `10 s`, `1.5 s`.
fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_is_one_line_with_its_fix_and_no_secret() {
        let ok = Check::pass("redis.reachable", "Redis 7.2.4 answers");
        assert_eq!(ok.line(), "✓ redis.reachable: Redis 7.2.4 answers");
        let failed = Check::fail(
            "telegram.token",
            "Telegram refuses the token 123:secret-token-abc",
            "set ONCEBOT__TELEGRAM__TOKEN",
        )
        .redacted(&["123:secret-token-abc".to_string()]);
        assert_eq!(
            failed.line(),
            "✗ telegram.token: Telegram refuses the token [redacted] — fix: set \
             ONCEBOT__TELEGRAM__TOKEN"
        );
        let skipped = Check::not_checked("telegram.webhook", "the token was refused");
        assert!(!skipped.ok);
        assert!(
            skipped
                .line()
                .contains("not checked: the token was refused")
        );
        assert!(!skipped.line().contains('\n'));
    }

    #[test]
    fn timeouts_read_in_seconds() {
        assert_eq!(seconds(Duration::from_secs(10)), "10 s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
    }
}
