//! Consumer liveness: each worker and dispatcher process keeps a key that expires unless it is
//! renewed (liveness.lua), so a process killed outright is known dead within that expiry and its
//! pending entries are taken at once (reap.lua), not when their lease (PEL idle time) runs out.
//! The lease stays the backstop for a process that is alive but stuck.

use std::time::Duration;

use super::Lane;
use super::reader::{JobEntry, LaneEntry};
use super::scripts::ScriptCall;
use super::{Ledger, LedgerError, keys, scripts};

/// Which consumer group a process belongs to, and so which streams it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Group `workers`, on the jobs stream.
    Worker,
    /// Group `dispatchers`, on the replies and callbacks streams.
    Dispatcher,
}

/// What one reap took and tidied.
#[derive(Debug, Default)]
pub struct Reaped {
    /// Consumers removed from the group (dead with nothing pending, or left by an old release).
    pub removed: u64,
    /// Jobs-stream entries taken from dead workers.
    pub jobs: Vec<JobEntry>,
    /// Replies and callbacks taken from dead dispatchers.
    pub lanes: Vec<LaneEntry>,
}

impl Ledger {
    /// The group and the streams `role` reads, in the order reap answers them.
    fn streams_of(&self, role: Role) -> (&'static str, Vec<String>) {
        match role {
            Role::Worker => (keys::JOBS_GROUP, vec![self.keys.jobs_stream()]),
            Role::Dispatcher => (
                keys::REPLIES_GROUP,
                vec![self.keys.replies_stream(), self.keys.callbacks_stream()],
            ),
        }
    }

    /// liveness.lua `beat`: `consumer` is alive for `ttl` more, and listed for the reapers.
    pub async fn beat(&self, role: Role, consumer: &str, ttl: Duration) -> Result<(), LedgerError> {
        let call = self.beat_call(role, consumer, ttl);
        let _: i64 = self.send(&call, "renewing the liveness key").await?;
        Ok(())
    }

    pub(super) fn beat_call(&self, role: Role, consumer: &str, ttl: Duration) -> ScriptCall {
        let (group, _) = self.streams_of(role);
        let mut call = ScriptCall::new(&scripts::LIVENESS, 2, 4, 128);
        call.key("its liveness key", self.keys.alive(consumer))
            .key("the group's list", self.keys.consumers(group))
            .arg("beat | retire", "beat")
            .arg("consumer name", consumer)
            .arg("consumer group", group)
            .arg("beat: the liveness expiry", ttl.as_millis() as u64);
        call
    }

    /// The consumers of `role`'s group that keep a liveness key now (listed and alive).
    pub async fn live_consumers(&self, role: Role) -> Result<Vec<String>, LedgerError> {
        let (group, _) = self.streams_of(role);
        let mut conn = self.conn.clone();
        let listed: Vec<String> = redis::cmd("SMEMBERS")
            .arg(self.keys.consumers(group))
            .query_async(&mut conn)
            .await
            .map_err(LedgerError::redis("listing consumers"))?;
        let mut live = Vec::with_capacity(listed.len());
        for consumer in listed {
            let alive: bool = redis::cmd("EXISTS")
                .arg(self.keys.alive(&consumer))
                .query_async(&mut conn)
                .await
                .map_err(LedgerError::redis("reading a liveness key"))?;
            if alive {
                live.push(consumer);
            }
        }
        Ok(live)
    }

    /// liveness.lua `retire`: `consumer` stops; what it leaves pending is taken at once by the
    /// others, and it is removed from the group if nothing is. Returns the entries left.
    pub async fn retire(&self, role: Role, consumer: &str) -> Result<u64, LedgerError> {
        let call = self.retire_call(role, consumer);
        self.send(&call, "retiring a consumer").await
    }

    pub(super) fn retire_call(&self, role: Role, consumer: &str) -> ScriptCall {
        let (group, streams) = self.streams_of(role);
        let mut call = ScriptCall::new(&scripts::LIVENESS, 2 + streams.len(), 3, 256);
        call.key("its liveness key", self.keys.alive(consumer))
            .key("the group's list", self.keys.consumers(group))
            .keys(&streams)
            .arg("beat | retire", "retire")
            .arg("consumer name", consumer)
            .arg("consumer group", group);
        call
    }

    /// reap.lua: the entries of dead consumers of `role`'s group, taken by `consumer` (at most
    /// `count`), and dead consumers with nothing pending removed. `forget_after`: how long a
    /// consumer no liveness list knows (a release without liveness left it) must have been
    /// idle, with nothing pending, before it is removed; zero skips that sweep.
    pub async fn reap(
        &self,
        role: Role,
        consumer: &str,
        count: usize,
        forget_after: Duration,
    ) -> Result<Reaped, LedgerError> {
        let call = self.reap_call(role, consumer, count, forget_after);
        let answer: Vec<redis::Value> = self.send(&call, "taking dead consumers' entries").await?;
        let corrupt = |detail: String| LedgerError::Corrupt {
            doing: "taking dead consumers' entries",
            detail,
        };
        let mut answer = answer.into_iter();
        let removed: u64 = answer
            .next()
            .map(redis::from_redis_value)
            .transpose()
            .map_err(|e| corrupt(e.to_string()))?
            .unwrap_or(0);
        let mut reaped = Reaped {
            removed,
            jobs: Vec::new(),
            lanes: Vec::new(),
        };
        for (index, entries) in answer.enumerate() {
            let reply: redis::streams::StreamClaimReply =
                redis::from_redis_value(entries).map_err(|e| corrupt(e.to_string()))?;
            // In the order of `streams_of`: the worker's jobs; the dispatcher's replies, callbacks.
            match (role, index) {
                (Role::Worker, _) => reaped
                    .jobs
                    .extend(reply.ids.into_iter().map(JobEntry::from_stream)),
                (Role::Dispatcher, i) => {
                    let lane = if i == 0 {
                        Lane::Replies
                    } else {
                        Lane::Callbacks
                    };
                    reaped
                        .lanes
                        .extend(reply.ids.iter().map(|id| LaneEntry::from_stream(lane, id)));
                }
            }
        }
        Ok(reaped)
    }
}

impl Ledger {
    pub(super) fn reap_call(
        &self,
        role: Role,
        consumer: &str,
        count: usize,
        forget_after: Duration,
    ) -> ScriptCall {
        let (group, streams) = self.streams_of(role);
        let mut call = ScriptCall::new(&scripts::REAP, 2 + streams.len(), 4, 256);
        call.key("the group's list", self.keys.consumers(group))
            .key("liveness prefix", self.keys.alive_prefix())
            .keys(&streams)
            .arg("consumer group", group)
            .arg("the taking consumer", consumer)
            .arg("most entries to take", count)
            .arg("milliseconds after which", forget_after.as_millis() as u64);
        call
    }
}
