//! oncebot's own releases ("version" here: a "release" in this code is a torrent's), and the
//! rule an upgrade follows (docs/releases.md): a worker leaves a job of a kind it does not run
//! for a newer one (claim.lua), every process registers its release and what it understands
//! (`ledger::Registration`, in its liveness key), a new job kind is admitted only once no
//! worker of a release before 0.2.0 (which registers nothing and fails what it does not know)
//! is alive ([`Gate`]), and a release refuses to start on a key layout newer than its own.
//!
//! A job's kind is its `command` field. A changed argument form is a new kind (`grab.2`); a
//! kind is never reused with a new form.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::ledger::{LAYOUT_NUMBER, LayoutCheck, Ledger, LedgerError, Registration};
use crate::shutdown::sleep_or_stop;

/// This release.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The first release that registers itself and leaves unknown kinds: a live worker without a
/// registration is older than this.
pub const FIRST_REGISTERED: &str = "0.2.0";

/// The job kinds of 1170969 (the release before 0.2.0, which registers nothing): every worker
/// alive runs these, so they need no gate.
pub const BASE_KINDS: [&str; 23] = [
    "search",
    "subscribe",
    "best",
    "download",
    "subscriptions",
    "unsubscribe",
    "searchnow",
    "downloading",
    "status",
    "jobs",
    "help",
    "start",
    "releases",
    "grab",
    "auto",
    "subscribe_search",
    "subscribe_refresh",
    "site_signin",
    "transfer",
    "mediaserver_sync",
    "cookiecloud",
    "restart",
    "redo",
];

/// The job kinds this release's worker runs, each between two `|`, as claim.lua and
/// complete.lua take them (`AttemptLimits::kinds`); a test (`commands::version`) holds it to
/// `Command::ALL`.
pub const WORKER_KINDS: &str = "|search|subscribe|best|download|subscriptions|unsubscribe|\
searchnow|downloading|status|jobs|whoami|help|start|releases|grab|auto|subscribe_search|\
subscribe_refresh|site_signin|transfer|mediaserver_sync|cookiecloud|restart|redo|version|users|\
revoke|requests|mine|quota|notify|";

/// The kinds this release adds to [`BASE_KINDS`], each between two `|`: what a tap must not
/// make while an older worker lives (`Ledger::tap_holding`).
pub fn new_kinds_arg() -> String {
    let new: Vec<&str> = worker_kinds().filter(|k| is_new_kind(k)).collect();
    format!("|{}|", new.join("|"))
}

/// How long [`Gate`]'s view of the live workers is used before it is read again.
pub const GATE_VIEW: Duration = Duration::from_secs(2);

/// Whether `kind` is newer than every release that registers nothing.
pub fn is_new_kind(kind: &str) -> bool {
    !BASE_KINDS.contains(&kind)
}

/// The kinds in [`WORKER_KINDS`], in order.
pub fn worker_kinds() -> impl Iterator<Item = &'static str> {
    WORKER_KINDS.trim_matches('|').split('|')
}

/// This process's registration, for its roles (`ingress`, `worker`, `dispatcher`, `notify`).
pub fn registration(roles: &[&str]) -> Registration {
    let worker = roles.contains(&"worker");
    Registration {
        version: VERSION.to_string(),
        layout: LAYOUT_NUMBER,
        roles: roles.iter().map(|r| r.to_string()).collect(),
        kinds: if worker {
            worker_kinds().map(str::to_string).collect()
        } else {
            Vec::new()
        },
        job_roles: if worker {
            crate::vocabulary::Role::ALL
                .map(|r| r.as_str().to_string())
                .to_vec()
        } else {
            Vec::new()
        },
    }
}

/// Ingress's view of whether a new job kind may be admitted: not while a worker of a release
/// before 0.2.0 is alive. Read from Redis when a job of a new kind is asked for, at most once
/// per [`GATE_VIEW`] (nothing while idle: an idle process's commands are counted).
#[derive(Default)]
pub struct Gate {
    seen: Mutex<Option<(Instant, bool)>>,
    /// The same view for a requester's job (issue 44): does a live worker not know the role?
    requester_seen: Mutex<Option<(Instant, bool)>>,
}

impl Gate {
    /// Whether a live worker registered nothing (then a job of a new kind must wait).
    pub async fn older_worker_alive(&self, ledger: &Ledger) -> Result<bool, LedgerError> {
        if let Some((at, older)) = *self.seen.lock().unwrap_or_else(|p| p.into_inner())
            && at.elapsed() < GATE_VIEW
        {
            return Ok(older);
        }
        let older = ledger.older_worker_alive().await?;
        *self.seen.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), older));
        Ok(older)
    }

    /// Whether a live worker cannot run a requester's job (0.2.0 fails a job whose role it
    /// cannot read): then a requester's command and taps are answered "being upgraded".
    pub async fn requester_unknown(&self, ledger: &Ledger) -> Result<bool, LedgerError> {
        let role = crate::vocabulary::Role::Requester.as_str();
        if let Some((at, unknown)) = *self
            .requester_seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            && at.elapsed() < GATE_VIEW
        {
            return Ok(unknown);
        }
        let unknown = ledger.worker_without_job_role(role).await?;
        *self
            .requester_seen
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), unknown));
        Ok(unknown)
    }
}

/// A newer release's key layout found at start: the process must not run (exit 2).
#[derive(Debug, thiserror::Error)]
#[error(
    "Redis holds oncebot's key layout v{found}, written by a newer release; this release \
     ({VERSION}) knows layout v{LAYOUT_NUMBER} only: run the newer release, or point \
     redis.key_prefix elsewhere"
)]
pub struct NewerLayout {
    pub found: u32,
}

/// The layout guard at start: waits at most 5 s for Redis (as the script load does); a Redis
/// that does not answer yet is checked by the next start, not waited for.
pub async fn check_layout(ledger: &Ledger) -> Result<(), NewerLayout> {
    match tokio::time::timeout(Duration::from_secs(5), ledger.check_layout()).await {
        Ok(Ok(LayoutCheck::Ours)) => Ok(()),
        Ok(Ok(LayoutCheck::Newer(found))) => Err(NewerLayout { found }),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "could not check the key layout");
            Ok(())
        }
        Err(_) => {
            tracing::warn!("Redis did not answer the key layout check within 5 s");
            Ok(())
        }
    }
}

/// Keeps a process with neither a worker nor a dispatcher registered (those register with
/// their heartbeat): its liveness key every `interval`, expiring after `ttl`; removed at stop.
pub async fn keep_registered(
    ledger: Ledger,
    id: String,
    registration: Registration,
    (interval, ttl): (Duration, Duration),
    stop: CancellationToken,
) {
    let value = registration.to_value();
    loop {
        if let Err(e) = ledger.register_process(&id, &value, ttl).await {
            tracing::debug!(error = %e, "registering the process failed");
        }
        if sleep_or_stop(interval, &stop).await {
            break;
        }
    }
    if let Err(e) = ledger.unregister_process(&id).await {
        tracing::debug!(error = %e, "unregistering the process failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_line_names_both_layouts_and_the_fix() {
        let line = NewerLayout { found: 2 }.to_string();
        assert!(
            line.contains("layout v2") && line.contains("layout v1"),
            "{line}"
        );
        assert!(
            line.contains(VERSION) && line.contains("redis.key_prefix"),
            "{line}"
        );
    }
}
