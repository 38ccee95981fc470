//! `[worker]`: how workers run jobs (concurrency, attempts, retries, leases and liveness).
//! Its liveness is checked with the dispatcher's in `Settings::validate`, since both lean on
//! `redis.command_timeout_ms`.

use serde::Deserialize;

use super::{SettingError, env_name, nonzero};

/// How workers run jobs; see `worker`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerSettings {
    pub concurrency: usize,
    pub max_attempts: u32,
    pub retry_min_delay_ms: u64,
    pub retry_max_delay_ms: u64,
    /// Lease length: an entry idle this long belongs to a dead worker.
    pub reclaim_idle_ms: u64,
    pub max_recoveries: u32,
    pub read_block_ms: u64,
    pub shutdown_grace_secs: u64,
    pub job_retention_secs: u64,
    /// After this long a running job tells its user it is working on it (0: never).
    pub progress_after_ms: u64,
    pub consumer_name: String,
    /// How often the worker renews its liveness key.
    pub heartbeat_interval_ms: u64,
    /// The liveness key's expiry: a worker that has not renewed it for this long is dead, and
    /// its entries are taken at once.
    pub liveness_ttl_ms: u64,
}

impl WorkerSettings {
    pub(super) fn validate(&self) -> Result<(), SettingError> {
        nonzero(
            &[
                ("worker.concurrency", self.concurrency as u64),
                ("worker.max_attempts", self.max_attempts as u64),
                ("worker.reclaim_idle_ms", self.reclaim_idle_ms),
                ("worker.read_block_ms", self.read_block_ms),
                ("worker.job_retention_secs", self.job_retention_secs),
            ],
            "",
            "a positive number",
        )?;
        if self.retry_max_delay_ms < self.retry_min_delay_ms {
            return Err(SettingError::new(
                "worker.retry_max_delay_ms",
                "is below worker.retry_min_delay_ms",
                format!(
                    "set {} to at least {}",
                    env_name("worker.retry_max_delay_ms"),
                    self.retry_min_delay_ms
                ),
            ));
        }
        if self.reclaim_idle_ms < 4 * 50 {
            return Err(SettingError::new(
                "worker.reclaim_idle_ms",
                format!(
                    "is {}, too short to renew leases in time",
                    self.reclaim_idle_ms
                ),
                format!(
                    "set {} to at least 200 (default 60000)",
                    env_name("worker.reclaim_idle_ms")
                ),
            ));
        }
        Ok(())
    }
}
