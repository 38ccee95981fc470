//! `[dispatcher]`: how replies reach Telegram (concurrency, Telegram's rate limits, retries,
//! leases and liveness).

use serde::Deserialize;

use super::{SettingError, nonzero};

/// How replies reach Telegram; see `dispatch`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DispatcherSettings {
    pub concurrency: usize,
    pub per_chat_interval_ms: u64,
    /// Groups (negative chat ids) allow about 20 messages a minute.
    pub group_interval_ms: u64,
    pub global_per_second: u32,
    pub max_attempts: u32,
    pub retry_min_delay_ms: u64,
    pub retry_max_delay_ms: u64,
    pub reclaim_idle_ms: u64,
    pub read_block_ms: u64,
    pub reply_retention_secs: u64,
    pub set_commands: bool,
    /// As `worker.heartbeat_interval_ms`, for the dispatcher.
    pub heartbeat_interval_ms: u64,
    /// As `worker.liveness_ttl_ms`, for the dispatcher.
    pub liveness_ttl_ms: u64,
}

impl DispatcherSettings {
    pub(super) fn validate(&self) -> Result<(), SettingError> {
        nonzero(
            &[
                ("dispatcher.concurrency", self.concurrency as u64),
                (
                    "dispatcher.global_per_second",
                    self.global_per_second as u64,
                ),
                ("dispatcher.max_attempts", self.max_attempts as u64),
                ("dispatcher.reclaim_idle_ms", self.reclaim_idle_ms),
                ("dispatcher.read_block_ms", self.read_block_ms),
                ("dispatcher.reply_retention_secs", self.reply_retention_secs),
            ],
            "",
            "a positive number",
        )
    }
}
