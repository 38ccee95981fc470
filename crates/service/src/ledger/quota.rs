//! The weekly quota ledger (issue 44, `household.quotas`): one ZSET per person of the slots
//! their requests and jobs hold or used (`lua/include/quota.lua`). Read here to tell someone
//! where they stand; written only by the scripts that make a request or a job, settle a
//! decision or an outcome, and by `lua/quota.lua` for a typed command's job.

use redis::AsyncCommands as _;

use super::scripts::ScriptCall;
use super::{Ledger, LedgerError, scripts};

/// How long a slot counts: a rolling week.
pub const QUOTA_WINDOW_MS: i64 = 7 * 86_400_000;

/// Where one person stands against their quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QuotaState {
    /// Slots held or used within the last 7 days.
    pub used: u32,
    /// When the oldest of them stops counting (ms); `None`: none is held.
    pub next_free_ms: Option<i64>,
}

impl Ledger {
    /// `user_id`'s quota as it stands at `now_ms`.
    pub async fn quota_state(&self, user_id: i64, now_ms: i64) -> Result<QuotaState, LedgerError> {
        let slots: Vec<(String, f64)> = self
            .conn
            .clone()
            .zrangebyscore_withscores(
                self.keys.quota(user_id),
                format!("({}", now_ms - QUOTA_WINDOW_MS),
                "+inf",
            )
            .await
            .map_err(LedgerError::redis("reading a quota"))?;
        Ok(QuotaState {
            used: u32::try_from(slots.len()).unwrap_or(u32::MAX),
            next_free_ms: slots
                .iter()
                .map(|(_, at)| *at as i64 + QUOTA_WINDOW_MS)
                .min(),
        })
    }

    /// A job's fields `names`, in order (`None`: not stored): what a first attempt's claim
    /// does not answer (an approval's `approved_by`, a job's `quota`).
    pub async fn job_fields(
        &self,
        job_id: u64,
        names: &[&str],
    ) -> Result<Vec<Option<String>>, LedgerError> {
        redis::cmd("HMGET")
            .arg(self.keys.job(job_id))
            .arg(names)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(LedgerError::redis("reading a job's fields"))
    }

    /// quota.lua: a running job takes `slots` of `user_id`'s quota (`limit`); the outcome
    /// (`held`, `had`, `full`) and the slots used then.
    pub async fn take_quota(
        &self,
        (user_id, job_id): (i64, u64),
        limit: u32,
        slots: u32,
    ) -> Result<(String, u32), LedgerError> {
        let mut call = ScriptCall::new(&scripts::QUOTA, 2, 3, 128);
        call.key("quota ZSET", self.keys.quota(user_id))
            .key("job HASH", self.keys.job(job_id))
            .arg("the person's weekly limit", limit)
            .arg("slots the job takes", slots)
            .arg("the job's id", job_id);
        self.send_durable(&call, "taking a quota slot").await
    }
}
