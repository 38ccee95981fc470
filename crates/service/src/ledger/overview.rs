//! Read-only views of the whole ledger for the operator's page (`admin_web`): the jobs waiting
//! for a person, the states of recent jobs, and the consumers of each group with their liveness.
//! Nothing here writes; key names come from `Keys`, as everywhere in `ledger`.

use std::time::Duration;

use redis::AsyncCommands as _;

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
        let groups = keys::Stream::ALL.map(|s| (s.name(), s.key(&self.keys), s.group()));
        let mut conn = self.conn.clone();
        let mut out = Vec::new();
        for (stream, key, group) in &groups {
            // The stream or its group is gone (Redis lost its data): nobody reads it. A missing
            // stream is asked first: Redis says so only as a bare `ERR`, in words.
            let exists: bool = conn
                .exists(key)
                .await
                .map_err(LedgerError::redis("looking for a stream"))?;
            let info: redis::RedisResult<redis::streams::StreamInfoConsumersReply> = if exists {
                conn.xinfo_consumers(key, *group).await
            } else {
                Ok(Default::default())
            };
            let seen = match info {
                Ok(reply) => reply.consumers,
                Err(e) if super::is_missing_group(&e) => Vec::new(),
                Err(e) => return Err(LedgerError::redis("reading a group's consumers")(e)),
            };
            let listed: Vec<String> = conn
                .smembers(self.keys.consumers(group))
                .await
                .map_err(LedgerError::redis("reading a group's liveness list"))?;
            let mut rows: Vec<ConsumerInfo> = seen
                .into_iter()
                .map(|c| ConsumerInfo {
                    stream,
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
                        stream,
                        group,
                        name,
                        pending: 0,
                        idle: None,
                        alive: false,
                    });
                }
            }
            if !rows.is_empty() {
                let mut pipe = redis::pipe();
                for r in &rows {
                    pipe.exists(self.keys.alive(&r.name));
                }
                let alive: Vec<bool> = pipe
                    .query_async(&mut conn)
                    .await
                    .map_err(LedgerError::redis("reading liveness keys"))?;
                for (r, alive) in rows.iter_mut().zip(alive) {
                    r.alive = alive;
                }
            }
            rows.sort_by(|a, b| a.name.cmp(&b.name));
            out.extend(rows);
        }
        Ok(out)
    }
}
