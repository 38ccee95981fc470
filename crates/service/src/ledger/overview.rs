//! Read-only views of the whole ledger for the operator's page (`admin_web`): the jobs waiting
//! for a person, the states of recent jobs, and the consumers of each group with their liveness.
//! Nothing here writes; key names come from `Keys`, as everywhere in `ledger`.

use std::collections::HashMap;
use std::time::Duration;

use redis::AsyncCommands as _;

use super::keys::Stream;
use super::{Job, JobState, Ledger, LedgerError, keys};

/// One consumer of one stream's group, as XINFO CONSUMERS and its liveness key show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerInfo {
    /// The stream's short name: jobs, replies, callbacks.
    pub stream: &'static str,
    /// workers | dispatchers
    pub group: &'static str,
    pub name: String,
    /// Entries delivered to it and not acknowledged.
    pub pending: u64,
    /// Since its last read or claim; `None` for a consumer its liveness list knows but the
    /// stream's group does not (yet).
    pub idle: Option<Duration>,
    /// Its liveness key `alive:<name>` exists: the process is renewing it.
    pub alive: bool,
}

/// How many of the most recent jobs are in each state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateCounts {
    /// Jobs looked at (the newest of the global index, at most the window asked for).
    pub counted: usize,
    /// By the ledger's own state names, in `JobState::ALL`'s order; every state is present.
    pub by_state: Vec<(&'static str, u64)>,
}

impl Ledger {
    /// Every job in the review index (`needs_review`), oldest first, at most `limit`.
    pub async fn jobs_needing_review(&self, limit: usize) -> Result<Vec<Job>, LedgerError> {
        let mut conn = self.conn.clone();
        let members: Vec<String> = conn
            .smembers(self.keys.review_index())
            .await
            .map_err(LedgerError::redis("reading the review index"))?;
        let mut ids: Vec<u64> = members.iter().filter_map(|m| m.parse().ok()).collect();
        ids.sort_unstable();
        ids.truncate(limit);
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut jobs = Vec::new();
        let doing = "reading jobs waiting for review";
        for job in self.jobs_by_id(&mut conn, &ids, doing).await? {
            // The index and the job change in one script; a job read between two scripts of
            // another process is shown as what it is now.
            if job.status == JobState::NeedsReview {
                jobs.push(job);
            }
        }
        Ok(jobs)
    }

    /// The states of the newest `window` jobs of the global index (one HGET each, pipelined),
    /// as `oncebot jobs list` would show them.
    pub async fn state_counts(&self, window: usize) -> Result<StateCounts, LedgerError> {
        let mut conn = self.conn.clone();
        let ids: Vec<u64> = conn
            .lrange(self.keys.jobs_index(), 0, window.max(1) as isize - 1)
            .await
            .map_err(LedgerError::redis("reading the jobs index"))?;
        let states: Vec<Option<String>> = if ids.is_empty() {
            Vec::new()
        } else {
            let mut pipe = redis::pipe();
            for id in &ids {
                pipe.hget(self.keys.job(*id), "status");
            }
            pipe.query_async(&mut conn)
                .await
                .map_err(LedgerError::redis("reading job states"))?
        };
        let mut counts = StateCounts {
            counted: 0,
            by_state: JobState::ALL.iter().map(|s| (s.as_str(), 0)).collect(),
        };
        for state in states.into_iter().flatten() {
            if let Some(slot) = counts.by_state.iter_mut().find(|(name, _)| *name == state) {
                slot.1 += 1;
                counts.counted += 1;
            }
        }
        Ok(counts)
    }

    /// The consumers of each group on each stream it reads, with their pending entries, idle
    /// time and liveness (XINFO CONSUMERS, SMEMBERS of the liveness list, EXISTS of each
    /// `alive:` key). A consumer the liveness list names but the group does not appears with
    /// no idle time.
    pub async fn consumers(&self) -> Result<Vec<ConsumerInfo>, LedgerError> {
        let mut out = Vec::new();
        for stream in keys::Stream::ALL {
            let group = stream.group();
            let listed: Vec<String> = self
                .conn
                .clone()
                .smembers(self.keys.consumers(group))
                .await
                .map_err(LedgerError::redis("reading a group's liveness list"))?;
            let mut rows: Vec<ConsumerInfo> = self
                .group_consumers(stream)
                .await?
                .into_iter()
                .map(|c| ConsumerInfo {
                    stream: stream.name(),
                    group,
                    name: c.name,
                    pending: c.pending as u64,
                    idle: Some(Duration::from_millis(c.idle as u64)),
                    alive: false,
                })
                .collect();
            for name in listed {
                if !rows.iter().any(|r| r.name == name) {
                    rows.push(ConsumerInfo {
                        stream: stream.name(),
                        group,
                        name,
                        pending: 0,
                        idle: None,
                        alive: false,
                    });
                }
            }
            self.mark_alive(&mut rows).await?;
            rows.sort_by(|a, b| a.name.cmp(&b.name));
            out.extend(rows);
        }
        Ok(out)
    }

    /// XINFO CONSUMERS of `stream`'s group: none when the stream or its group is gone (Redis
    /// lost its data), as nobody reads it then. A missing stream is asked first: Redis says so
    /// only as a bare `ERR`, in words.
    async fn group_consumers(
        &self,
        stream: keys::Stream,
    ) -> Result<Vec<redis::streams::StreamInfoConsumer>, LedgerError> {
        let mut conn = self.conn.clone();
        let key = stream.key(&self.keys);
        let exists: bool = conn
            .exists(&key)
            .await
            .map_err(LedgerError::redis("looking for a stream"))?;
        if !exists {
            return Ok(Vec::new());
        }
        let info: redis::RedisResult<redis::streams::StreamInfoConsumersReply> =
            conn.xinfo_consumers(&key, stream.group()).await;
        match info {
            Ok(reply) => Ok(reply.consumers),
            Err(e) if super::is_missing_group(&e) => Ok(Vec::new()),
            Err(e) => Err(LedgerError::redis("reading a group's consumers")(e)),
        }
    }

    /// Sets each row's `alive`: its liveness key exists.
    async fn mark_alive(&self, rows: &mut [ConsumerInfo]) -> Result<(), LedgerError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for r in rows.iter() {
            pipe.exists(self.keys.alive(&r.name));
        }
        let alive: Vec<bool> = pipe
            .query_async(&mut self.conn.clone())
            .await
            .map_err(LedgerError::redis("reading liveness keys"))?;
        for (r, alive) in rows.iter_mut().zip(alive) {
            r.alive = alive;
        }
        Ok(())
    }
}

/// One stream's backlog, for the metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamStats {
    pub name: &'static str,
    /// Entries not done yet: waiting for a consumer plus pending. For the replies and
    /// callbacks streams that is XLEN (a finished entry is deleted). The jobs stream is trimmed
    /// in order (complete.lua) and may also keep finished entries newer than its oldest
    /// unfinished one, so there it is the group's `lag` plus `pending` (`XINFO GROUPS`, Redis
    /// 7), or XLEN from a Redis that does not report the lag.
    pub length: u64,
    /// Delivered to a consumer and not acknowledged.
    pub pending: u64,
    /// Age of the oldest unacknowledged entry (from its id's timestamp).
    pub oldest_pending: Duration,
}

/// The queues at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueStats {
    pub streams: Vec<StreamStats>,
    pub needs_review: u64,
    pub retry_scheduled: u64,
}

impl Ledger {
    /// XLEN and XPENDING of every stream, and the sizes of the review and retry sets.
    pub async fn queue_stats(&self) -> Result<QueueStats, LedgerError> {
        let values = self.queue_sizes().await?;
        let count = |i: usize| as_count(values.get(i));
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        let mut streams = Vec::new();
        for (i, stream) in Stream::ALL.into_iter().enumerate() {
            let mut length = count(2 * i);
            let (pending, oldest_pending) = pending_summary(values.get(2 * i + 1), now_ms);
            if stream == Stream::Jobs && length > 0 {
                // Only for a stream that exists: XINFO of a missing key is an error.
                let key = stream.key(&self.keys);
                if let Some(lag) = self.group_lag(&key, stream.group()).await? {
                    length = lag + pending;
                }
            }
            streams.push(StreamStats {
                name: stream.name(),
                length,
                pending,
                oldest_pending,
            });
        }
        let sets = 2 * Stream::ALL.len();
        Ok(QueueStats {
            streams,
            needs_review: count(sets),
            retry_scheduled: count(sets + 1),
        })
    }

    /// In one pipeline: XLEN and XPENDING of each stream of [`Stream::ALL`], then SCARD of the
    /// review set and ZCARD of the retry schedule.
    async fn queue_sizes(&self) -> Result<Vec<redis::Value>, LedgerError> {
        let mut pipe = redis::pipe();
        for stream in Stream::ALL {
            let key = stream.key(&self.keys);
            pipe.cmd("XLEN").arg(&key);
            pipe.cmd("XPENDING").arg(&key).arg(stream.group());
        }
        pipe.cmd("SCARD").arg(self.keys.review_index());
        pipe.cmd("ZCARD").arg(self.keys.retry_schedule());
        let mut conn = self.conn.clone();
        let values: Vec<redis::Value> = pipe
            .ignore_errors()
            .query_async(&mut conn)
            .await
            .map_err(LedgerError::redis("reading queue sizes"))?;
        // XPENDING on a stream without its group (Redis lost its data) counts nothing pending;
        // any other refusal is an error.
        for value in &values {
            if let redis::Value::ServerError(e) = value
                && !super::is_missing_group_reply(e)
            {
                return Err(LedgerError::redis("reading queue sizes")(e.clone().into()));
            }
        }
        Ok(values)
    }

    /// `lag` of `group` on `stream` (`XINFO GROUPS`): entries not yet delivered to it. `None`
    /// when Redis does not say (before 7.0, or when it cannot tell after deletions).
    async fn group_lag(&self, stream: &str, group: &str) -> Result<Option<u64>, LedgerError> {
        let mut conn = self.conn.clone();
        let groups: Vec<HashMap<String, redis::Value>> = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(stream)
            .query_async(&mut conn)
            .await
            .map_err(LedgerError::redis("reading the jobs group's lag"))?;
        Ok(groups
            .iter()
            .find(|g| {
                g.get("name")
                    .and_then(|n| redis::from_redis_value::<String>(n.clone()).ok())
                    .is_some_and(|n| n == group)
            })
            .and_then(|g| match g.get("lag") {
                Some(redis::Value::Int(n)) => u64::try_from(*n).ok(),
                _ => None,
            }))
    }
}

/// A count Redis answered (0 for anything else: a stream without its group).
fn as_count(value: Option<&redis::Value>) -> u64 {
    match value {
        Some(redis::Value::Int(n)) => *n as u64,
        _ => 0,
    }
}

/// XPENDING's summary: how many entries are pending, and the age of the oldest (from its id's
/// timestamp) at `now_ms`.
fn pending_summary(value: Option<&redis::Value>, now_ms: u64) -> (u64, Duration) {
    let Some(redis::Value::Array(summary)) = value else {
        return (0, Duration::ZERO);
    };
    let oldest_ms = summary
        .get(1)
        .and_then(|v| redis::from_redis_value::<String>(v.clone()).ok())
        .and_then(|id| id.split('-').next().and_then(|ms| ms.parse::<u64>().ok()))
        .map(|ms| now_ms.saturating_sub(ms))
        .unwrap_or(0);
    (as_count(summary.first()), Duration::from_millis(oldest_ms))
}
