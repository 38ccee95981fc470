//! Consumer liveness: each worker and dispatcher process keeps a key that expires unless it is
//! renewed (liveness.lua), so a process killed outright is known dead within that expiry and its
//! pending entries are taken at once (by the same script, in a live process's next heartbeat),
//! not when their lease (PEL idle time) runs out.
//! The lease stays the backstop for a process that is alive but stuck.

use std::time::Duration;

use super::Lane;
use super::entries::{JobEntry, LaneEntry};
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

/// One heartbeat of a process, as liveness.lua takes it.
#[derive(Debug, Clone)]
pub struct Beat<'a> {
    /// The process's consumer name, the same in every group it is in.
    pub consumer: &'a str,
    /// The liveness expiry.
    pub ttl: Duration,
    /// List the consumer in every group given, whether or not its key was alive.
    pub list: bool,
    /// Most dead consumers' entries to take.
    pub take: usize,
    /// How long a consumer no list knows (an older release's) must have been idle, with nothing
    /// pending, before it is removed; zero skips that sweep.
    pub forget_after: Duration,
    /// Most due retries to promote; 0 for a process without a worker.
    pub promote: u32,
    /// The process's registration, the liveness key's value (`versions::Registration`'s JSON).
    pub registration: &'a str,
}

/// What one heartbeat did besides renewing the key.
#[derive(Debug, Default)]
pub struct Beaten {
    /// Due retries put back on the jobs stream.
    pub promoted: u64,
    /// Dead consumers' entries taken, and consumers removed.
    pub reaped: Reaped,
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
            Role::Worker => (keys::Stream::Jobs.group(), vec![self.keys.jobs_stream()]),
            // Both lanes in one group (`keys::Stream::group`): a test holds them together.
            Role::Dispatcher => (
                keys::Stream::Replies.group(),
                vec![self.keys.replies_stream(), self.keys.callbacks_stream()],
            ),
        }
    }

    /// liveness.lua `beat`: the process is alive for `beat.ttl` more in each of `roles`'
    /// groups; what dead consumers of those groups left is taken, and due retries promoted
    /// when the process runs a worker.
    pub async fn beat(&self, roles: &[Role], beat: &Beat<'_>) -> Result<Beaten, LedgerError> {
        let call = self.beat_call(roles, beat);
        let answer: Vec<redis::Value> = self.send(&call, "renewing the liveness key").await?;
        self.beaten(roles, answer)
    }

    pub(super) fn beat_call(&self, roles: &[Role], beat: &Beat<'_>) -> ScriptCall {
        let mut call = self.liveness_call(roles, beat.consumer);
        call.arg("beat | retire", "beat")
            .arg("consumer name", beat.consumer)
            .arg("beat: the liveness expiry", beat.ttl.as_millis() as u64)
            .arg("beat: 1 lists the consumer", u8::from(beat.list))
            .arg("beat: most entries to take", beat.take)
            .arg(
                "beat: milliseconds after which",
                beat.forget_after.as_millis() as u64,
            )
            .arg("beat: most due retries to promote", beat.promote)
            .arg("jobs consumer group", keys::Stream::Jobs.group())
            .arg("beat: the process's registration", beat.registration)
            .arg("number of groups", roles.len());
        self.group_args(&mut call, roles);
        call
    }

    /// KEYS of a liveness.lua call: the fixed five, then each role's list and streams.
    fn liveness_call(&self, roles: &[Role], consumer: &str) -> ScriptCall {
        let streams: usize = roles.iter().map(|r| self.streams_of(*r).1.len()).sum();
        let k = &self.keys;
        let mut call = ScriptCall::new(&scripts::LIVENESS, 5 + roles.len() + streams, 14, 768);
        call.key("its liveness key", k.alive(consumer))
            .key("liveness prefix", k.alive_prefix())
            .key("retry schedule", k.retry_schedule())
            .key("jobs stream", k.jobs_stream())
            .key("job key prefix", k.job_prefix());
        for role in roles {
            let (group, streams) = self.streams_of(*role);
            call.keys([k.consumers(group)]).keys(streams);
        }
        call
    }

    fn group_args(&self, call: &mut ScriptCall, roles: &[Role]) {
        for role in roles {
            let (group, streams) = self.streams_of(*role);
            call.args([group]).args([streams.len()]);
        }
    }

    /// liveness.lua's beat answer: `{removed, promoted, taken per stream...}`.
    fn beaten(&self, roles: &[Role], answer: Vec<redis::Value>) -> Result<Beaten, LedgerError> {
        let corrupt = |detail: String| LedgerError::Corrupt {
            doing: "renewing the liveness key",
            detail,
        };
        let mut answer = answer.into_iter();
        let mut number = || -> Result<u64, LedgerError> {
            answer
                .next()
                .map(redis::from_redis_value)
                .transpose()
                .map_err(|e| corrupt(e.to_string()))
                .map(|n| n.unwrap_or(0))
        };
        let removed = number()?;
        let promoted = number()?;
        let mut beaten = Beaten {
            promoted,
            reaped: Reaped {
                removed,
                ..Reaped::default()
            },
        };
        // In the order of the roles, each in the order of `streams_of`: the worker's jobs; the
        // dispatcher's replies, callbacks.
        let lanes = roles.iter().flat_map(|role| match role {
            Role::Worker => vec![None],
            Role::Dispatcher => vec![Some(Lane::Replies), Some(Lane::Callbacks)],
        });
        for (lane, entries) in lanes.zip(answer) {
            let reply: redis::streams::StreamClaimReply =
                redis::from_redis_value(entries).map_err(|e| corrupt(e.to_string()))?;
            match lane {
                None => beaten
                    .reaped
                    .jobs
                    .extend(reply.ids.into_iter().map(JobEntry::from_stream)),
                Some(lane) => beaten
                    .reaped
                    .lanes
                    .extend(reply.ids.iter().map(|id| LaneEntry::from_stream(lane, id))),
            }
        }
        Ok(beaten)
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

    /// liveness.lua `retire`: `consumer` leaves `role`'s group (removed if nothing is pending
    /// there); `last`: the process's last role, so its liveness key goes too and whatever it
    /// leaves pending is taken at once by the others. Returns the entries left.
    pub async fn retire(&self, role: Role, consumer: &str, last: bool) -> Result<u64, LedgerError> {
        let call = self.retire_call(role, consumer, last);
        self.send(&call, "retiring a consumer").await
    }

    pub(super) fn retire_call(&self, role: Role, consumer: &str, last: bool) -> ScriptCall {
        let mut call = self.liveness_call(&[role], consumer);
        call.arg("beat | retire", "retire")
            .arg("consumer name", consumer)
            .arg("beat: the liveness expiry", u8::from(last))
            .arg("beat: 1 lists the consumer", 0)
            .arg("beat: most entries to take", 0)
            .arg("beat: milliseconds after which", 0)
            .arg("beat: most due retries to promote", 0)
            .arg("jobs consumer group", keys::Stream::Jobs.group())
            .arg("beat: the process's registration", "")
            .arg("number of groups", 1);
        self.group_args(&mut call, &[role]);
        call
    }
}
