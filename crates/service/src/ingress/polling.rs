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

/// How often the poller looks again while Redis may evict (the webhook's `Retry-After`).
const EVICTING_PAUSE: Duration = Duration::from_secs(5);

/// Runs until `shutdown` is cancelled, or returns an error that no retry can fix (a bad token).
pub async fn run(
    ingress: Ingress,
    api: BotApi,
    opts: PollOptions,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let mut poller = Poller {
        ingress,
        api,
        opts,
        backoff: Backoff::new(backoff::POLLING),
        shutdown,
    };
    tracing::info!("long polling started");
    loop {
        let wait = match poller.round().await? {
            Next::Stop => return Ok(()),
            Next::Now => continue,
            Next::After(wait) => wait,
        };
        if sleep_or_stop(wait, &poller.shutdown).await {
            return Ok(());
        }
    }
}

/// What a round of polling leaves to do before the next one.
enum Next {
    Now,
    /// Wait this long first (a failure's backoff, a 409's or 429's pause, short polling).
    After(Duration),
    /// Shutdown was asked for.
    Stop,
}

struct Poller {
    ingress: Ingress,
    api: BotApi,
    opts: PollOptions,
    /// Between failures of Redis or the Bot API; reset by every answered getUpdates.
    backoff: Backoff,
    shutdown: CancellationToken,
}

impl Poller {
    /// One getUpdates from the stored offset, and each update it returns admitted in order.
    async fn round(&mut self) -> anyhow::Result<Next> {
        // Redis may evict what admission would write (`redis_policy`): Telegram keeps the
        // updates, read from the same offset once it is fixed.
        if self.ingress.redis_policy().evicting().is_some() {
            return Ok(Next::After(EVICTING_PAUSE));
        }
        let ledger = self.ingress.ledger();
        let offset: Option<i64> = tokio::select! {
            _ = self.shutdown.cancelled() => return Ok(Next::Stop),
            r = ledger.poll_offset() => match r {
                Ok(o) => o,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the polling offset from Redis; retrying");
                    return Ok(Next::After(self.backoff.next_delay()));
                }
            },
        };
        let updates = tokio::select! {
            _ = self.shutdown.cancelled() => return Ok(Next::Stop),
            r = self.get_updates(offset.unwrap_or(0)) => r,
        };
        let updates = match updates {
            Ok(u) => u,
            Err(e) => return self.wait_after(e).map(Next::After),
        };
        self.backoff.reset();
        if updates.is_empty() && self.opts.timeout.is_zero() {
            return Ok(Next::After(SHORT_POLL_PAUSE));
        }
        Ok(match self.admit_all(updates).await {
            true => Next::Now,
            false => Next::After(self.backoff.next_delay()),
        })
    }

    async fn get_updates(&self, offset: i64) -> Result<Vec<serde_json::Value>, ApiError> {
        let timeout = self.opts.timeout;
        let body = json!({
            "offset": offset,
            "timeout": timeout.as_secs(),
            "allowed_updates": ["message", "callback_query"],
        });
        self.api
            .call("getUpdates", &body, timeout + Duration::from_secs(10))
            .await
    }

    /// How long to wait after getUpdates failed, or the error that no retry fixes (a bad token).
    fn wait_after(&mut self, error: ApiError) -> anyhow::Result<Duration> {
        match error {
            ApiError::Unauthorized => Err(ApiError::Unauthorized.into()),
            ApiError::Conflict(description) => {
                log_conflict(&description, self.opts.conflict_retry);
                Ok(self.opts.conflict_retry)
            }
            ApiError::RetryAfter(d) => {
                tracing::warn!(wait = ?d, "getUpdates rate-limited");
                Ok(d)
            }
            e => {
                tracing::warn!(error = %e, "getUpdates failed; retrying");
                Ok(self.backoff.next_delay())
            }
        }
    }

    /// Admits each update, then commits the offset past it. False when one was not recorded or
    /// its offset not saved: it and the rest are read again after a pause.
    async fn admit_all(&self, updates: Vec<serde_json::Value>) -> bool {
        for raw in updates {
            let Some(update_id) = raw.get("update_id").and_then(|v| v.as_i64()) else {
                tracing::error!("getUpdates returned an entry without update_id; skipping it");
                continue;
            };
            // A long poll sent before the live check found an evicting Redis.
            if self.ingress.redis_policy().evicting().is_some() {
                tracing::warn!(
                    update_id,
                    "Redis may evict oncebot's keys (see /readyz): update not admitted; it is \
                     read again once that is fixed"
                );
                return false;
            }
            match serde_json::from_value::<Update>(raw) {
                Ok(update) => {
                    if let Err(e) = self.ingress.handle(&update).await {
                        self.ingress
                            .not_recorded(update_id, &e, "will read it again");
                        return false;
                    }
                }
                Err(e) => {
                    tracing::warn!(update_id, error = %e, "skipping an update that is not a valid Update");
                }
            }
            crate::crash_point!("poll.after_enqueue");
            let committed = self
                .ingress
                .ledger()
                .commit_poll_offset(update_id + 1)
                .await;
            if let Err(e) = committed {
                tracing::error!(update_id, error = %e, "offset not saved; the update will be read again and absorbed");
                return false;
            }
        }
        true
    }
}

/// A 409 says who else takes this bot's updates: a webhook, or another poller.
fn log_conflict(description: &str, retry: Duration) {
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
}
