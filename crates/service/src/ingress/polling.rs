//! Long polling: getUpdates instead of a webhook, for hosts with no public HTTPS endpoint.
//!
//! The offset lives in Redis (`{p}:v1:poll:offset`) and advances past an update only after that
//! update's admission script committed. A crash in between re-reads the update on restart and
//! the update_id layer absorbs it; an update is never lost and never admitted twice.

use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::Ingress;
use crate::backoff::{self, Backoff};
use crate::config::TelegramSettings;
use crate::shutdown::sleep_or_stop;
use crate::telegram::api::{ApiError, BotApi};
use crate::telegram::types::Update;

/// How the poller paces itself.
#[derive(Debug, Clone, Copy)]
pub struct PollOptions {
    /// How long one getUpdates call waits for updates (`telegram.poll_timeout_secs`).
    pub timeout: Duration,
    /// The pause after a 409 Conflict (`telegram.poll_conflict_retry_secs`).
    pub conflict_retry: Duration,
}

impl PollOptions {
    pub fn from_settings(t: &TelegramSettings) -> Self {
        Self {
            timeout: Duration::from_secs(t.poll_timeout_secs),
            conflict_retry: Duration::from_secs(t.poll_conflict_retry_secs),
        }
    }
}

/// With `timeout` 0 (short polling) an empty answer comes back at once; wait this long before
/// asking again instead of calling Telegram in a tight loop.
const SHORT_POLL_PAUSE: Duration = Duration::from_secs(1);

/// Runs until `shutdown` is cancelled, or returns an error that no retry can fix (a bad token).
pub async fn run(
    ingress: Ingress,
    api: BotApi,
    opts: PollOptions,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let poll_timeout = opts.timeout;
    let ledger = ingress.ledger().clone();
    let mut backoff = Backoff::new(backoff::POLLING);
    tracing::info!("long polling started");
    loop {
        let offset: Option<i64> = tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            r = ledger.poll_offset() => match r {
                Ok(o) => o,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the polling offset from Redis; retrying");
                    if sleep_or_stop(backoff.next_delay(), &shutdown).await { return Ok(()) }
                    continue;
                }
            },
        };
        let body = json!({
            "offset": offset.unwrap_or(0),
            "timeout": poll_timeout.as_secs(),
            "allowed_updates": ["message", "callback_query"],
        });
        let call = api.call::<Vec<serde_json::Value>>(
            "getUpdates",
            &body,
            poll_timeout + Duration::from_secs(10),
        );
        let updates = tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            r = call => r,
        };
        let updates = match updates {
            Ok(u) => u,
            Err(ApiError::Unauthorized) => return Err(ApiError::Unauthorized.into()),
            Err(ApiError::Conflict(description)) => {
                let retry = opts.conflict_retry;
                if description.contains("webhook") {
                    tracing::error!(
                        description = %description,
                        retry_in = ?retry,
                        "getUpdates refused with 409 Conflict: a webhook is set for this bot. \
                         Remove it (`oncebot webhook delete`, or the Bot API's deleteWebhook) \
                         to poll, or serve without --poll to use the webhook"
                    );
                } else {
                    tracing::error!(
                        description = %description,
                        retry_in = ?retry,
                        "getUpdates refused with 409 Conflict: another process polls with this \
                         token (a second oncebot, or MoviePilot's own Telegram channel). Stop it \
                         or give oncebot its own bot token"
                    );
                }
                if sleep_or_stop(retry, &shutdown).await {
                    return Ok(());
                }
                continue;
            }
            Err(ApiError::RetryAfter(d)) => {
                tracing::warn!(wait = ?d, "getUpdates rate-limited");
                if sleep_or_stop(d, &shutdown).await {
                    return Ok(());
                }
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, "getUpdates failed; retrying");
                if sleep_or_stop(backoff.next_delay(), &shutdown).await {
                    return Ok(());
                }
                continue;
            }
        };
        backoff.reset();
        if updates.is_empty() && poll_timeout.is_zero() {
            if sleep_or_stop(SHORT_POLL_PAUSE, &shutdown).await {
                return Ok(());
            }
            continue;
        }
        let mut stalled = false;
        for raw in updates {
            let Some(update_id) = raw.get("update_id").and_then(|v| v.as_i64()) else {
                tracing::error!("getUpdates returned an entry without update_id; skipping it");
                continue;
            };
            match serde_json::from_value::<Update>(raw) {
                Ok(update) => {
                    if let Err(e) = ingress.handle(&update).await {
                        tracing::error!(update_id, error = %e, "update not recorded; will read it again");
                        stalled = true;
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(update_id, error = %e, "skipping an update that is not a valid Update");
                }
            }
            crate::crash_point!("poll.after_enqueue");
            let committed = ledger.commit_poll_offset(update_id + 1).await;
            if let Err(e) = committed {
                tracing::error!(update_id, error = %e, "offset not saved; the update will be read again and absorbed");
                stalled = true;
                break;
            }
        }
        if stalled && sleep_or_stop(backoff.next_delay(), &shutdown).await {
            return Ok(());
        }
    }
}
