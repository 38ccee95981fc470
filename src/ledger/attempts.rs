//! The worker's side of the ledger: claim an entry, renew leases, record an outcome, promote
//! due retries, and a person's resolution. One Lua script each; see their headers in `lua/`.
//!
//! A job that enters `needs_review` (held by claim.lua after a crash, or completed so by a
//! worker) is announced to `telegram.admin_chats` with review buttons by the same script, so a
//! crash cannot leave a held job that nobody was told about.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{Job, Ledger, LedgerError, keys, scripts};

/// One claimed attempt: the fencing token every later call presents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub job_id: u64,
    /// The jobs-stream entry this attempt was delivered as.
    pub entry: String,
    /// The consumer (worker) that owns the attempt.
    pub consumer: String,
    pub attempt: u64,
}

/// The job fields claim.lua returns, in its order (its `CLAIM_FIELDS`): what a worker reads.
pub const CLAIM_FIELDS: [&str; 14] = [
    "status",
    "attempts",
    "recoveries",
    "entry",
    "id",
    "command",
    "args",
    "chat_id",
    "user_id",
    "message_id",
    "recovery",
    "attempt_base",
    "auth_wait_since",
    "auth_waits",
];

/// What claiming an entry gave.
#[derive(Debug, Clone)]
pub enum Claimed {
    /// Run the job. `recovered` is true when its previous owner died mid-run: the caller must
    /// follow the job's recovery policy (verify before repeating a side effect). `job` carries
    /// the [`CLAIM_FIELDS`] only (a worker needs no more); `Ledger::job` reads a whole job.
    Run {
        attempt: Attempt,
        job: Box<Job>,
        recovered: bool,
    },
    /// Held for a person (its outcome is uncertain); the user was told.
    Held { attempt: u64 },
    /// Failed after too many crashes of its workers; the user was told.
    Failed { attempt: u64 },
    /// Nothing to run: the entry is stale or the job finished; the entry was acknowledged.
    Skip { status: String },
}

/// The outcome of one attempt, as recorded by complete.lua.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// succeeded | failed | retry_wait | needs_review
    pub status: &'static str,
    pub result: String,
    pub error: String,
    /// The user's reply ("" for none) and its kind.
    pub reply: String,
    pub reply_kind: &'static str,
    /// Buttons under the reply: a Telegram InlineKeyboardMarkup as JSON ("" for none).
    pub markup: String,
    /// The buttons' tokens (`TokenGroup::spec` JSON, "" for none), stored by complete.lua in the
    /// same step as the reply that shows them.
    pub tokens: String,
    /// For retry_wait: when it is due.
    pub retry_in: Duration,
    /// Extra job fields to record (MoviePilot ids touched, the external outcome, ...).
    pub fields: Vec<(String, String)>,
}

/// Whether complete.lua recorded the outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completed {
    Recorded,
    /// This attempt no longer owns the job (a zombie worker): nothing was changed.
    Stale {
        status: String,
        attempts: String,
    },
}

/// A person's decision on a `needs_review` job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Resolution {
    Succeeded,
    Failed,
    Retry,
}

impl Resolution {
    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Succeeded => "succeeded",
            Resolution::Failed => "failed",
            Resolution::Retry => "retry",
        }
    }
}

/// Texts claim.lua sends on its own; "{job}" becomes the job id.
#[derive(Debug, Clone)]
pub struct ClaimTexts {
    pub held: String,
    pub failed: String,
}

/// Limits claim.lua and complete.lua apply.
#[derive(Debug, Clone)]
pub struct AttemptLimits {
    pub max_recoveries: u32,
    pub retention: Duration,
}

impl Ledger {
    /// XREADGROUP `>` on the jobs stream for `consumer`, blocking up to `block`. `conn` must be
    /// a connection of the caller's own: a blocking read stalls every other command queued on a
    /// shared multiplexed connection.
    pub async fn read_new_entries(
        &self,
        conn: &mut crate::ledger::Conn,
        consumer: &str,
        count: usize,
        block: Duration,
    ) -> redis::RedisResult<Vec<redis::streams::StreamId>> {
        let stream = self.keys.jobs_stream();
        self.read_group(conn, &stream, keys::JOBS_GROUP, consumer, count, block)
            .await
    }

    /// XAUTOCLAIM: up to `count` jobs-stream entries idle longer than `min_idle` (their worker
    /// stopped renewing its lease), now delivered to `consumer`.
    pub async fn reclaim_idle_entries(
        &self,
        consumer: &str,
        min_idle: Duration,
        count: usize,
    ) -> redis::RedisResult<Vec<redis::streams::StreamId>> {
        let stream = self.keys.jobs_stream();
        self.autoclaim(&stream, keys::JOBS_GROUP, consumer, min_idle, count)
            .await
    }

    pub(super) async fn read_group(
        &self,
        conn: &mut crate::ledger::Conn,
        stream: &str,
        group: &str,
        consumer: &str,
        count: usize,
        block: Duration,
    ) -> redis::RedisResult<Vec<redis::streams::StreamId>> {
        let reply: Option<redis::streams::StreamReadReply> = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(group)
            .arg(consumer)
            .arg("COUNT")
            .arg(count)
            .arg("BLOCK")
            .arg(block.as_millis() as u64)
            .arg("STREAMS")
            .arg(stream)
            .arg(">")
            .query_async(conn)
            .await?;
        Ok(reply
            .into_iter()
            .flat_map(|r| r.keys)
            .flat_map(|k| k.ids)
            .collect())
    }

    pub(super) async fn autoclaim(
        &self,
        stream: &str,
        group: &str,
        consumer: &str,
        min_idle: Duration,
        count: usize,
    ) -> redis::RedisResult<Vec<redis::streams::StreamId>> {
        let mut conn = self.conn.clone();
        let reply: redis::streams::StreamAutoClaimReply = redis::cmd("XAUTOCLAIM")
            .arg(stream)
            .arg(group)
            .arg(consumer)
            .arg(min_idle.as_millis() as u64)
            .arg("0-0")
            .arg("COUNT")
            .arg(count)
            .query_async(&mut conn)
            .await?;
        Ok(reply.claimed)
    }

    /// claim.lua for one delivered entry.
    pub async fn claim(
        &self,
        job_id: u64,
        entry: &str,
        consumer: &str,
        limits: &AttemptLimits,
        texts: &ClaimTexts,
    ) -> Result<Claimed, LedgerError> {
        let delivered = [(job_id, entry.to_string())];
        let mut claimed = self.claim_all(&delivered, consumer, limits, texts).await?;
        claimed.pop().unwrap_or_else(|| {
            Err(LedgerError::Corrupt {
                doing: "claiming a job",
                detail: "claim answered nothing".into(),
            })
        })
    }

    /// claim.lua for every entry one read delivered, `(job id, entry id)` each, in one call:
    /// one answer per entry, in the same order. The outer error means none was claimed (the
    /// script is atomic; the entries stay pending and are reclaimed later); an inner one is an
    /// answer that did not parse, which leaves that job to be reclaimed and recovered by policy.
    pub async fn claim_all(
        &self,
        delivered: &[(u64, String)],
        consumer: &str,
        limits: &AttemptLimits,
        texts: &ClaimTexts,
    ) -> Result<Vec<Result<Claimed, LedgerError>>, LedgerError> {
        if delivered.is_empty() {
            return Ok(Vec::new());
        }
        let k = &self.keys;
        let n = delivered.len();
        let mut cmd = redis::Cmd::with_capacity(15 + 3 * n, 512 + 96 * n);
        cmd.arg("EVALSHA")
            .arg(scripts::CLAIM.get_hash())
            .arg(5 + n)
            .arg(k.jobs_stream())
            .arg(k.replies_stream())
            .arg(k.review_index())
            .arg(k.token_prefix())
            .arg(k.token_group_prefix());
        for (job_id, _) in delivered {
            cmd.arg(k.job(*job_id));
        }
        cmd.arg(consumer)
            .arg(keys::JOBS_GROUP)
            .arg(keys::REPLIES_GROUP)
            .arg(limits.max_recoveries)
            .arg(&texts.held)
            .arg(&texts.failed)
            .arg(limits.retention.as_secs());
        for (job_id, entry) in delivered {
            // Only the script knows whether it holds the job; the buttons are ready in case.
            cmd.arg(entry).arg(self.review.for_job(*job_id));
        }
        let replies = self
            .invoke_batch(&scripts::CLAIM, &cmd, n, "claiming jobs")
            .await?;
        Ok(delivered
            .iter()
            .zip(replies)
            .map(|((job_id, entry), reply)| claimed_from(*job_id, entry, consumer, reply))
            .collect())
    }

    /// Acknowledges and deletes a jobs-stream entry that names no job (written by hand?).
    pub async fn drop_entry(&self, entry: &str) -> Result<(), LedgerError> {
        let stream = self.keys.jobs_stream();
        self.ack_and_delete(
            &stream,
            keys::JOBS_GROUP,
            entry,
            "dropping a malformed entry",
        )
        .await
    }

    /// XACK + XDEL of one entry, in one MULTI: an entry nobody will ever process again.
    pub(super) async fn ack_and_delete(
        &self,
        stream: &str,
        group: &str,
        entry: &str,
        doing: &'static str,
    ) -> Result<(), LedgerError> {
        let mut conn = self.conn.clone();
        redis::pipe()
            .atomic()
            .xack(stream, group, &[entry])
            .xdel(stream, &[entry])
            .query_async::<()>(&mut conn)
            .await
            .map_err(LedgerError::redis(doing))
    }

    /// Takes the lock on creating a subscription to this media for `ttl` (lock.lua; the same
    /// owner may take it again); false if another owner holds it.
    pub async fn lock_media(
        &self,
        tmdb_id: u64,
        season: Option<u32>,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, LedgerError> {
        let mut inv = scripts::LOCK.prepare_invoke();
        inv.key(self.keys.media_lock(tmdb_id, season))
            .arg(owner)
            .arg(ttl.as_millis() as u64);
        let mut conn = self.conn.clone();
        let held: i64 = inv
            .invoke_async(&mut conn)
            .await
            .map_err(LedgerError::redis("locking a media"))?;
        Ok(held == 1)
    }

    /// notice.lua: tells the admin chats `text` unless they were told about `condition` within
    /// the last `lasts`; true when this call told them.
    pub async fn raise_notice(
        &self,
        condition: &str,
        text: &str,
        lasts: Duration,
    ) -> Result<bool, LedgerError> {
        let mut inv = scripts::NOTICE.prepare_invoke();
        inv.key(self.keys.notice(condition))
            .key(self.keys.replies_stream())
            .arg("raise")
            .arg(keys::REPLIES_GROUP)
            .arg(lasts.as_secs().max(1))
            .arg(text);
        for chat in &self.review.admin_chats {
            inv.arg(*chat);
        }
        let mut conn = self.conn.clone();
        let told: i64 = inv
            .invoke_async(&mut conn)
            .await
            .map_err(LedgerError::redis("telling the admin chats"))?;
        Ok(told == 1)
    }

    /// notice.lua: `condition` is over; its next occurrence is told again. True if it was on.
    pub async fn clear_notice(&self, condition: &str) -> Result<bool, LedgerError> {
        let mut inv = scripts::NOTICE.prepare_invoke();
        inv.key(self.keys.notice(condition))
            .key(self.keys.replies_stream())
            .arg("clear")
            .arg(keys::REPLIES_GROUP);
        let mut conn = self.conn.clone();
        let cleared: i64 = inv
            .invoke_async(&mut conn)
            .await
            .map_err(LedgerError::redis("ending an admin notice"))?;
        Ok(cleared == 1)
    }

    /// Releases the media lock if `owner` still holds it.
    pub async fn unlock_media(
        &self,
        tmdb_id: u64,
        season: Option<u32>,
        owner: &str,
    ) -> Result<(), LedgerError> {
        let mut inv = scripts::UNLOCK.prepare_invoke();
        inv.key(self.keys.media_lock(tmdb_id, season)).arg(owner);
        let mut conn = self.conn.clone();
        let _: i64 = inv
            .invoke_async(&mut conn)
            .await
            .map_err(LedgerError::redis("unlocking a media"))?;
        Ok(())
    }

    /// complete.lua: the outcome, the reply and the XACK in one step, fenced by the attempt.
    pub async fn complete(
        &self,
        attempt: &Attempt,
        outcome: &Outcome,
        retention: Duration,
    ) -> Result<Completed, LedgerError> {
        let mut answers = self.complete_all(&[(attempt, outcome)], retention).await?;
        answers.pop().unwrap_or_else(|| {
            Err(LedgerError::Corrupt {
                doing: "recording a job's outcome",
                detail: "complete answered nothing".into(),
            })
        })
    }

    /// complete.lua for several attempts in one call (a group commit): one answer per attempt,
    /// in order, each fenced and recorded as if alone. The outer error means nothing was
    /// recorded (the script is atomic).
    pub async fn complete_all(
        &self,
        done: &[(&Attempt, &Outcome)],
        retention: Duration,
    ) -> Result<Vec<Result<Completed, LedgerError>>, LedgerError> {
        if done.is_empty() {
            return Ok(Vec::new());
        }
        let k = &self.keys;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let n = done.len();
        let text_len: usize = done
            .iter()
            .map(|(_, o)| o.reply.len() + o.markup.len() + o.tokens.len())
            .sum();
        let mut cmd = redis::Cmd::with_capacity(12 + 16 * n, 512 + 256 * n + text_len);
        cmd.arg("EVALSHA")
            .arg(scripts::COMPLETE.get_hash())
            .arg(6 + n)
            .arg(k.jobs_stream())
            .arg(k.replies_stream())
            .arg(k.retry_schedule())
            .arg(k.review_index())
            .arg(k.token_prefix())
            .arg(k.token_group_prefix());
        for (attempt, _) in done {
            cmd.arg(k.job(attempt.job_id));
        }
        cmd.arg(retention.as_secs())
            .arg(keys::JOBS_GROUP)
            .arg(keys::REPLIES_GROUP);
        for (attempt, outcome) in done {
            cmd.arg(&attempt.entry)
                .arg(&attempt.consumer)
                .arg(attempt.attempt)
                .arg(outcome.status)
                .arg(&outcome.result)
                .arg(&outcome.error)
                .arg(&outcome.reply)
                .arg(outcome.reply_kind)
                .arg((now + outcome.retry_in).as_millis() as u64)
                .arg(&outcome.markup)
                .arg(if outcome.status == "needs_review" {
                    self.review.for_job(attempt.job_id)
                } else {
                    String::new()
                })
                .arg(&outcome.tokens)
                .arg(outcome.fields.len());
            for (name, value) in &outcome.fields {
                cmd.arg(name).arg(value);
            }
        }
        let answers = self
            .invoke_batch(&scripts::COMPLETE, &cmd, n, "recording jobs' outcomes")
            .await?;
        Ok(answers.into_iter().map(completed_from).collect())
    }

    /// Sends `cmd`, the EVALSHA of a script that answers once per item of a batch (claim.lua,
    /// complete.lua), and checks that it answered for every item. The command is written
    /// straight into one buffer, as `admit` does: `Script::prepare_invoke` would hold each of
    /// the batch's hundreds of keys and arguments in a Vec of its own first.
    async fn invoke_batch(
        &self,
        script: &redis::Script,
        cmd: &redis::Cmd,
        items: usize,
        doing: &'static str,
    ) -> Result<Vec<Vec<String>>, LedgerError> {
        // Durable: a claim (the attempt counted) and an outcome must survive a failover before
        // the worker acts on them (`Ledger::durable`).
        let mut conn = self.durable();
        let answers: Vec<Vec<String>> = scripts::evalsha(script, cmd, &mut conn)
            .await
            .map_err(LedgerError::redis(doing))?;
        if answers.len() != items {
            return Err(LedgerError::Corrupt {
                doing,
                detail: format!("{} answers for {items} items", answers.len()),
            });
        }
        Ok(answers)
    }

    /// extend.lua: renews the leases of `running`; returns the entries this worker lost.
    pub async fn extend(
        &self,
        consumer: &str,
        running: &[Attempt],
    ) -> Result<Vec<String>, LedgerError> {
        if running.is_empty() {
            return Ok(Vec::new());
        }
        let k = &self.keys;
        let mut inv = scripts::EXTEND.prepare_invoke();
        inv.key(k.jobs_stream()).arg(keys::JOBS_GROUP).arg(consumer);
        for a in running {
            inv.key(k.job(a.job_id)).arg(&a.entry).arg(a.attempt);
        }
        let mut conn = self.conn.clone();
        inv.invoke_async(&mut conn)
            .await
            .map_err(LedgerError::redis("renewing leases"))
    }

    /// promote.lua: due retries back on the jobs stream; returns how many.
    pub async fn promote_due(&self, limit: u32) -> Result<u64, LedgerError> {
        let k = &self.keys;
        let mut inv = scripts::PROMOTE.prepare_invoke();
        inv.key(k.retry_schedule())
            .key(k.jobs_stream())
            .key(k.job_prefix())
            .arg(limit)
            .arg(keys::JOBS_GROUP);
        let mut conn = self.conn.clone();
        inv.invoke_async(&mut conn)
            .await
            .map_err(LedgerError::redis("promoting due retries"))
    }

    /// resolve.lua: settles a `needs_review` job. `Err(status)` inside `Ok` when it is not
    /// waiting for review.
    pub async fn resolve(
        &self,
        job_id: u64,
        decision: Resolution,
        note: &str,
        reply: &str,
        retention: Duration,
    ) -> Result<Result<String, String>, LedgerError> {
        let k = &self.keys;
        let mut inv = scripts::RESOLVE.prepare_invoke();
        inv.key(k.job(job_id))
            .key(k.jobs_stream())
            .key(k.replies_stream())
            .key(k.review_index())
            .arg(decision.as_str())
            .arg(note)
            .arg(reply)
            .arg(retention.as_secs())
            .arg(keys::JOBS_GROUP)
            .arg(keys::REPLIES_GROUP);
        let mut conn = self.durable();
        let out: Vec<String> = inv
            .invoke_async(&mut conn)
            .await
            .map_err(LedgerError::redis("resolving a job"))?;
        match out.first().map(String::as_str) {
            Some("ok") => Ok(Ok(out.get(1).cloned().unwrap_or_default())),
            Some("refused") => Ok(Err(out.get(1).cloned().unwrap_or_default())),
            _ => Err(LedgerError::Corrupt {
                doing: "resolving a job",
                detail: format!("resolve answered {out:?}"),
            }),
        }
    }
}

/// One outcome's answer from complete.lua (see its header).
fn completed_from(answer: Vec<String>) -> Result<Completed, LedgerError> {
    match answer.first().map(String::as_str) {
        Some("ok") => Ok(Completed::Recorded),
        Some("stale") => Ok(Completed::Stale {
            status: answer.get(1).cloned().unwrap_or_default(),
            attempts: answer.get(2).cloned().unwrap_or_default(),
        }),
        _ => Err(LedgerError::Corrupt {
            doing: "recording a job's outcome",
            detail: format!("complete answered {answer:?}"),
        }),
    }
}

/// One entry's answer from claim.lua (see its header).
fn claimed_from(
    job_id: u64,
    entry: &str,
    consumer: &str,
    reply: Vec<String>,
) -> Result<Claimed, LedgerError> {
    let corrupt = |detail: String| LedgerError::Corrupt {
        doing: "claiming a job",
        detail,
    };
    let number = |i: usize| -> Result<u64, LedgerError> {
        reply
            .get(i)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| corrupt(format!("claim answered {reply:?}")))
    };
    match reply.first().map(String::as_str) {
        Some("run") => {
            let attempt = number(1)?;
            let recovered = reply.get(2).map(String::as_str) == Some("recovered");
            if reply.len() != 3 + CLAIM_FIELDS.len() {
                return Err(corrupt(format!("claim answered {reply:?}")));
            }
            let fields: BTreeMap<String, String> = CLAIM_FIELDS
                .iter()
                .zip(reply.into_iter().skip(3))
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            let job = Job::from_hash(fields).map_err(corrupt)?;
            Ok(Claimed::Run {
                attempt: Attempt {
                    job_id,
                    entry: entry.to_string(),
                    consumer: consumer.to_string(),
                    attempt,
                },
                job: Box::new(job),
                recovered,
            })
        }
        Some("held") => Ok(Claimed::Held {
            attempt: number(1)?,
        }),
        Some("failed") => Ok(Claimed::Failed {
            attempt: number(1)?,
        }),
        Some("skip") => Ok(Claimed::Skip {
            status: reply.get(1).cloned().unwrap_or_default(),
        }),
        _ => Err(corrupt(format!("claim answered {reply:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::CLAIM_FIELDS;

    #[test]
    fn claim_fields_are_the_scripts_list() {
        let script = include_str!("../../lua/claim.lua");
        let start = script
            .find("local CLAIM_FIELDS = {")
            .expect("claim.lua lists CLAIM_FIELDS");
        let list = &script[start..];
        let list = &list[list.find('{').unwrap() + 1..list.find('}').unwrap()];
        let names: Vec<&str> = list
            .split(',')
            .map(|n| n.trim().trim_matches('\''))
            .filter(|n| !n.is_empty())
            .collect();
        assert_eq!(names, CLAIM_FIELDS);
    }
}
