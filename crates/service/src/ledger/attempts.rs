//! The worker's side of the ledger: claim an entry, renew leases, record an outcome, promote
//! due retries, and a person's resolution. One Lua script each; see their headers in `lua/`.
//!
//! A job that enters `needs_review` (held by claim.lua after a crash, or completed so by a
//! worker) is announced to `telegram.admin_chats` with review buttons by the same script, so a
//! crash cannot leave a held job that nobody was told about.

use std::time::Duration;

use super::reader::JobEntry;
use super::scripts::ScriptCall;
use super::{Job, Ledger, LedgerError, keys, scripts};
use crate::vocabulary::job_field as field;
use crate::vocabulary::{JobState, ReplyKind, Resolution, Resolved};

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
pub const CLAIM_FIELDS: [&str; 16] = [
    field::STATUS,
    field::ATTEMPTS,
    field::RECOVERIES,
    field::ENTRY,
    field::ID,
    field::COMMAND,
    field::ARGS,
    field::CHAT_ID,
    field::USER_ID,
    field::MESSAGE_ID,
    field::RECOVERY,
    field::ATTEMPT_BASE,
    field::AUTH_WAIT_SINCE,
    field::AUTH_WAITS,
    field::REQUESTER,
    field::ROLE,
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
    /// `status`: the job's, `None` when its HASH is gone (expired).
    Skip { status: Option<JobState> },
}

/// The outcome of one attempt, as recorded by complete.lua.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// succeeded | failed | retry_wait | needs_review
    pub status: JobState,
    pub result: String,
    pub error: String,
    /// The user's reply ("" for none) and its kind.
    pub reply: String,
    pub reply_kind: ReplyKind,
    /// Buttons under the reply: a Telegram InlineKeyboardMarkup as JSON ("" for none).
    pub markup: String,
    /// The buttons' tokens (`TokenGroup::spec` JSON, "" for none), stored by complete.lua in the
    /// same step as the reply that shows them.
    pub tokens: String,
    /// The poster sent with the reply (its http(s) URL, "" for none), written as the reply's
    /// `photo` field in the same step.
    pub photo: String,
    /// For retry_wait: when it is due.
    pub retry_in: Duration,
    /// Extra job fields to record (MoviePilot ids touched, the external outcome, ...).
    pub fields: Vec<(String, String)>,
}

/// A failure with no reply and no fields, to be filled in with `..Outcome::default()`.
impl Default for Outcome {
    fn default() -> Outcome {
        Outcome {
            status: JobState::Failed,
            result: String::new(),
            error: String::new(),
            reply: String::new(),
            reply_kind: ReplyKind::Result,
            markup: String::new(),
            tokens: String::new(),
            photo: String::new(),
            retry_in: Duration::ZERO,
            fields: Vec::new(),
        }
    }
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

/// Who takes new entries in the same call as a group's outcomes, and how many at most.
#[derive(Debug, Clone, Copy)]
pub struct Taker<'a> {
    pub consumer: &'a str,
    pub count: usize,
}

/// What [`Ledger::complete_and_take`] gave: one answer per outcome, in order, then the
/// entries it took.
#[derive(Debug)]
pub struct Completions {
    pub answers: Vec<Result<Completed, LedgerError>>,
    pub taken: Vec<Taken>,
}

/// One entry taken with a group's outcomes.
#[derive(Debug)]
pub enum Taken {
    /// Claimed as claim.lua claims (`Run`, or `Skip` for a stale entry, acknowledged).
    Claimed(Result<Claimed, LedgerError>),
    /// A `running` job (its owner died?): still pending for this consumer; claim it with
    /// [`Ledger::claim_all`], which applies the recovery policy.
    Deferred { job_id: u64, entry: String },
    /// An answer that makes no sense; the entry stays pending and is reclaimed later.
    Corrupt(LedgerError),
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
    /// XAUTOCLAIM: up to `count` jobs-stream entries idle longer than `min_idle` (their worker
    /// stopped renewing its lease), now delivered to `consumer`; none while the group is
    /// missing.
    pub async fn reclaim_idle_entries(
        &self,
        consumer: &str,
        min_idle: Duration,
        count: usize,
    ) -> Result<Vec<JobEntry>, LedgerError> {
        let stream = self.keys.jobs_stream();
        let ids = self
            .autoclaim(&stream, keys::JOBS_GROUP, consumer, min_idle, count)
            .await?;
        Ok(ids.into_iter().map(JobEntry::from_stream).collect())
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
    ) -> Result<Vec<redis::streams::StreamId>, LedgerError> {
        let mut conn = self.conn.clone();
        let reply: redis::RedisResult<redis::streams::StreamAutoClaimReply> =
            redis::cmd("XAUTOCLAIM")
                .arg(stream)
                .arg(group)
                .arg(consumer)
                .arg(min_idle.as_millis() as u64)
                .arg("0-0")
                .arg("COUNT")
                .arg(count)
                .query_async(&mut conn)
                .await;
        match reply {
            Ok(reply) => Ok(reply.claimed),
            // Nothing to take: the group's readers make it again.
            Err(e) if super::is_missing_group(&e) => Ok(Vec::new()),
            Err(e) => Err(LedgerError::redis("reclaiming idle entries")(e)),
        }
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
        let call = self.claim_call(delivered, consumer, limits, texts);
        let replies = self
            .invoke_batch(&call, delivered.len(), "claiming jobs")
            .await?;
        Ok(delivered
            .iter()
            .zip(replies)
            .map(|((job_id, entry), reply)| claimed_from(*job_id, entry, consumer, reply))
            .collect())
    }

    pub(super) fn claim_call(
        &self,
        delivered: &[(u64, String)],
        consumer: &str,
        limits: &AttemptLimits,
        texts: &ClaimTexts,
    ) -> ScriptCall {
        let k = &self.keys;
        let n = delivered.len();
        let mut call = ScriptCall::new(&scripts::CLAIM, 5 + n, 7 + 2 * n, 512 + 96 * n);
        call.key("jobs stream", k.jobs_stream())
            .key("replies stream", k.replies_stream())
            .key("review index", k.review_index())
            .key("token prefix", k.token_prefix())
            .key("token-group pfx", k.token_group_prefix())
            .keys(delivered.iter().map(|(job_id, _)| k.job(*job_id)))
            .arg("consumer name", consumer)
            .arg("jobs consumer group", keys::JOBS_GROUP)
            .arg("replies consumer group", keys::REPLIES_GROUP)
            .arg("most recoveries", limits.max_recoveries)
            .arg("text sent when a job is held", &texts.held)
            .arg("text sent when a read-only job failed", &texts.failed)
            .arg("retention", limits.retention.as_secs());
        for (job_id, entry) in delivered {
            // Only the script knows whether it holds the job; the buttons are ready in case.
            call.args([entry.as_str(), self.review.for_job(*job_id).as_str()]);
        }
        call
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
        let call = self.lock_media_call(tmdb_id, season, owner, ttl);
        let held: i64 = self.send(&call, "locking a media").await?;
        Ok(held == 1)
    }

    pub(super) fn lock_media_call(
        &self,
        tmdb_id: u64,
        season: Option<u32>,
        owner: &str,
        ttl: Duration,
    ) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::LOCK, 1, 2, 64);
        call.key("lock key", self.keys.media_lock(tmdb_id, season))
            .arg("owner", owner)
            .arg("lease", ttl.as_millis() as u64);
        call
    }

    /// notice.lua: tells the admin chats `text` unless they were told about `condition` within
    /// the last `lasts`; true when this call told them.
    pub async fn raise_notice(
        &self,
        condition: &str,
        text: &str,
        lasts: Duration,
    ) -> Result<bool, LedgerError> {
        let call = self.raise_notice_call(condition, text, lasts);
        let told: i64 = self.send(&call, "telling the admin chats").await?;
        Ok(told == 1)
    }

    pub(super) fn raise_notice_call(
        &self,
        condition: &str,
        text: &str,
        lasts: Duration,
    ) -> ScriptCall {
        let mut call = ScriptCall::new(
            &scripts::NOTICE,
            3,
            4 + self.review.admin_chats.len(),
            64 + text.len(),
        );
        call.key("notice key", self.keys.notice(condition))
            .key("replies stream", self.keys.replies_stream())
            .key("told set", self.keys.notice_told(condition))
            .arg("raise | tell | clear", "raise")
            .arg("replies consumer group", keys::REPLIES_GROUP)
            .arg("seconds the notice lasts", lasts.as_secs().max(1))
            .arg("text or user", text)
            .args(&self.review.admin_chats);
        call
    }

    /// notice.lua: whether `user_id` is to be told about `condition` now (true once per user
    /// while it lasts, `lasts` at most): the caller's reply tells them.
    pub async fn tell_user_once(
        &self,
        condition: &str,
        user_id: i64,
        lasts: Duration,
    ) -> Result<bool, LedgerError> {
        let call = self.tell_user_call(condition, user_id, lasts);
        let new: i64 = self.send(&call, "noting a user told").await?;
        Ok(new == 1)
    }

    pub(super) fn tell_user_call(
        &self,
        condition: &str,
        user_id: i64,
        lasts: Duration,
    ) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::NOTICE, 3, 4, 64);
        call.key("notice key", self.keys.notice(condition))
            .key("replies stream", self.keys.replies_stream())
            .key("told set", self.keys.notice_told(condition))
            .arg("raise | tell | clear", "tell")
            .arg("replies consumer group", keys::REPLIES_GROUP)
            .arg("seconds the notice lasts", lasts.as_secs().max(1))
            .arg("text or user", user_id);
        call
    }

    /// notice.lua: `condition` is over (and the users told about it forgotten); its next
    /// occurrence is told again. True if it was on.
    pub async fn clear_notice(&self, condition: &str) -> Result<bool, LedgerError> {
        let call = self.clear_notice_call(condition);
        let cleared: i64 = self.send(&call, "ending an admin notice").await?;
        Ok(cleared == 1)
    }

    pub(super) fn clear_notice_call(&self, condition: &str) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::NOTICE, 3, 2, 64);
        call.key("notice key", self.keys.notice(condition))
            .key("replies stream", self.keys.replies_stream())
            .key("told set", self.keys.notice_told(condition))
            .arg("raise | tell | clear", "clear")
            .arg("replies consumer group", keys::REPLIES_GROUP);
        call
    }

    /// Releases the media lock if `owner` still holds it.
    pub async fn unlock_media(
        &self,
        tmdb_id: u64,
        season: Option<u32>,
        owner: &str,
    ) -> Result<(), LedgerError> {
        let call = self.unlock_media_call(tmdb_id, season, owner);
        let _: i64 = self.send(&call, "unlocking a media").await?;
        Ok(())
    }

    pub(super) fn unlock_media_call(
        &self,
        tmdb_id: u64,
        season: Option<u32>,
        owner: &str,
    ) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::UNLOCK, 1, 1, 64);
        call.key("lock key", self.keys.media_lock(tmdb_id, season))
            .arg("owner", owner);
        call
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
        let taker = Taker {
            consumer: "",
            count: 0,
        };
        Ok(self
            .complete_and_take(done, retention, &taker, true)
            .await?
            .answers)
    }

    /// [`Self::complete_all`], then up to `taker.count` new entries of the jobs stream read for
    /// `taker.consumer` and claimed, in the same atomic call (complete.lua's "taken"): a busy
    /// worker's one call per group. A `running` job among them is deferred to
    /// [`Self::claim_all`], which applies its recovery policy. `trim`: trim the jobs stream
    /// after acknowledging (complete.lua's ARGV[6]; [`Self::complete_all`] always does).
    pub async fn complete_and_take(
        &self,
        done: &[(&Attempt, &Outcome)],
        retention: Duration,
        taker: &Taker<'_>,
        trim: bool,
    ) -> Result<Completions, LedgerError> {
        const DOING: &str = "recording jobs' outcomes";
        let call = self.complete_call(done, retention, taker, trim);
        // Durable: a claim (the attempt counted) and an outcome must survive a failover before
        // the worker acts on them (`Ledger::durable`).
        let mut reply: Vec<String> = self.send_durable(&call, DOING).await?;
        let answered = reply.first().and_then(|n| n.parse::<usize>().ok());
        if answered != Some(done.len()) || reply.len() > 1 + done.len() + taker.count {
            return Err(LedgerError::Corrupt {
                doing: DOING,
                detail: format!(
                    "{} values for {} outcomes and at most {} entries taken",
                    reply.len(),
                    done.len(),
                    taker.count
                ),
            });
        }
        let taken = reply.split_off(1 + done.len());
        Ok(Completions {
            answers: reply
                .into_iter()
                .skip(1)
                .map(|a| completed_from(serde_json::from_str(&a).unwrap_or_default()))
                .collect(),
            taken: taken
                .into_iter()
                .map(|t| taken_from(taker.consumer, t))
                .collect(),
        })
    }

    pub(super) fn complete_call(
        &self,
        done: &[(&Attempt, &Outcome)],
        retention: Duration,
        taker: &Taker<'_>,
        trim: bool,
    ) -> ScriptCall {
        let k = &self.keys;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let n = done.len();
        let text_len: usize = done
            .iter()
            .map(|(_, o)| o.reply.len() + o.markup.len() + o.tokens.len() + o.photo.len())
            .sum();
        let mut call = ScriptCall::new(
            &scripts::COMPLETE,
            7 + n,
            6 + 16 * n,
            512 + 256 * n + text_len,
        );
        call.key("jobs stream", k.jobs_stream())
            .key("replies stream", k.replies_stream())
            .key("retry schedule", k.retry_schedule())
            .key("review index", k.review_index())
            .key("token prefix", k.token_prefix())
            .key("token-group pfx", k.token_group_prefix())
            .key("job key prefix", k.job_prefix())
            .keys(done.iter().map(|(attempt, _)| k.job(attempt.job_id)))
            .arg("retention", retention.as_secs())
            .arg("jobs consumer group", keys::JOBS_GROUP)
            .arg("replies consumer group", keys::REPLIES_GROUP)
            .arg("how many new entries to take", taker.count)
            .arg("consumer name that takes them", taker.consumer)
            .arg(
                "trim the jobs stream after acknowledging",
                if trim { "1" } else { "0" },
            );
        for (attempt, outcome) in done {
            let review = if outcome.status == JobState::NeedsReview {
                self.review.for_job(attempt.job_id)
            } else {
                String::new()
            };
            // One outcome, in the order complete.lua reads it (its header, "per outcome").
            call.args([attempt.entry.as_str(), attempt.consumer.as_str()])
                .args([attempt.attempt])
                .args([
                    outcome.status.as_str(),
                    outcome.result.as_str(),
                    outcome.error.as_str(),
                    outcome.reply.as_str(),
                    outcome.reply_kind.as_str(),
                ])
                .args([(now + outcome.retry_in).as_millis() as u64])
                .args([
                    outcome.markup.as_str(),
                    review.as_str(),
                    outcome.tokens.as_str(),
                    outcome.photo.as_str(),
                ])
                .args([outcome.fields.len()]);
            for (name, value) in &outcome.fields {
                call.args([name, value]);
            }
        }
        call
    }

    /// Sends `call`, of a script that answers once per item of a batch (claim.lua,
    /// complete.lua), and checks that it answered for every item.
    async fn invoke_batch(
        &self,
        call: &ScriptCall,
        items: usize,
        doing: &'static str,
    ) -> Result<Vec<Vec<String>>, LedgerError> {
        // Durable: a claim (the attempt counted) and an outcome must survive a failover before
        // the worker acts on them (`Ledger::durable`).
        let answers: Vec<Vec<String>> = self.send_durable(call, doing).await?;
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
        let call = self.extend_call(consumer, running);
        self.send(&call, "renewing leases").await
    }

    pub(super) fn extend_call(&self, consumer: &str, running: &[Attempt]) -> ScriptCall {
        let k = &self.keys;
        let mut call = ScriptCall::new(
            &scripts::EXTEND,
            1 + running.len(),
            2 + 2 * running.len(),
            64 * running.len(),
        );
        call.key("jobs stream", k.jobs_stream())
            .keys(running.iter().map(|a| k.job(a.job_id)))
            .arg("jobs consumer group", keys::JOBS_GROUP)
            .arg("consumer name", consumer);
        for a in running {
            call.args([a.entry.as_str()]).args([a.attempt]);
        }
        call
    }

    /// promote.lua: due retries back on the jobs stream; returns how many.
    pub async fn promote_due(&self, limit: u32) -> Result<u64, LedgerError> {
        let call = self.promote_due_call(limit);
        self.send(&call, "promoting due retries").await
    }

    pub(super) fn promote_due_call(&self, limit: u32) -> ScriptCall {
        let k = &self.keys;
        let mut call = ScriptCall::new(&scripts::PROMOTE, 3, 2, 128);
        call.key("retry schedule", k.retry_schedule())
            .key("jobs stream", k.jobs_stream())
            .key("job key prefix", k.job_prefix())
            .arg("most jobs to promote", limit)
            .arg("jobs consumer group", keys::JOBS_GROUP);
        call
    }

    /// resolve.lua: settles a `needs_review` job, or says why it did not.
    pub async fn resolve(
        &self,
        job_id: u64,
        decision: Resolution,
        note: &str,
        reply: &str,
        retention: Duration,
    ) -> Result<Resolved, LedgerError> {
        let call = self.resolve_call(job_id, decision, note, reply, retention);
        let out: Vec<String> = self.send_durable(&call, "resolving a job").await?;
        let state = out.get(1).and_then(|s| s.parse::<JobState>().ok());
        match (
            out.first().map(String::as_str),
            out.get(1).map(String::as_str),
            state,
        ) {
            (Some("refused"), Some("missing"), _) => Ok(Resolved::Missing),
            (Some("ok"), _, Some(state)) => Ok(Resolved::Settled(state)),
            (Some("refused"), _, Some(state)) => Ok(Resolved::NotWaiting(state)),
            _ => Err(LedgerError::Corrupt {
                doing: "resolving a job",
                detail: format!("resolve answered {out:?}"),
            }),
        }
    }
}

impl Ledger {
    pub(super) fn resolve_call(
        &self,
        job_id: u64,
        decision: Resolution,
        note: &str,
        reply: &str,
        retention: Duration,
    ) -> ScriptCall {
        let k = &self.keys;
        let mut call = ScriptCall::new(&scripts::RESOLVE, 4, 6, 256 + note.len() + reply.len());
        call.key("job HASH", k.job(job_id))
            .key("jobs stream", k.jobs_stream())
            .key("replies stream", k.replies_stream())
            .key("review index", k.review_index())
            .arg("decision", decision.as_str())
            .arg("note", note)
            .arg("reply text", reply)
            .arg("retention", retention.as_secs())
            .arg("jobs consumer group", keys::JOBS_GROUP)
            .arg("replies consumer group", keys::REPLIES_GROUP);
        call
    }
}

/// One entry complete.lua took (its header's "taken": a JSON array of strings).
fn taken_from(consumer: &str, raw: String) -> Taken {
    let mut answer = match serde_json::from_str::<Vec<String>>(&raw) {
        Ok(answer) if answer.len() >= 3 => answer,
        _ => {
            return Taken::Corrupt(LedgerError::Corrupt {
                doing: "taking new jobs",
                detail: format!("complete took {raw:?}"),
            });
        }
    };
    let rest = answer.split_off(2);
    let entry = answer.pop().unwrap_or_default();
    let job_id = answer.pop().unwrap_or_default();
    let Ok(job_id) = job_id.parse::<u64>() else {
        // An entry naming no job: acknowledged and deleted by the script.
        return Taken::Claimed(Ok(Claimed::Skip { status: None }));
    };
    if rest.first().map(String::as_str) == Some("defer") {
        return Taken::Deferred { job_id, entry };
    }
    Taken::Claimed(claimed_from(job_id, &entry, consumer, rest))
}

/// One outcome's answer from complete.lua (see its header; JSON-decoded by the caller).
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

/// The job in a claim's answer: its CLAIM_FIELDS values in order, "" for a field it lacks. The
/// same job `Job::from_hash` makes of those fields, without a map of them in between (one
/// claim per job: the map was a twentieth of the worker's instructions).
fn job_from_claim(values: impl Iterator<Item = String>) -> Result<Job, String> {
    let mut values: Vec<Option<String>> = values.map(|v| (!v.is_empty()).then_some(v)).collect();
    let mut job = Job::from_known(&mut |k| {
        let at = CLAIM_FIELDS.iter().position(|f| *f == k)?;
        values[at].take()
    })?;
    job.extra = CLAIM_FIELDS
        .iter()
        .zip(values)
        .filter_map(|(k, v)| Some((k.to_string(), v?)))
        .collect();
    Ok(job)
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
            let job = job_from_claim(reply.into_iter().skip(3)).map_err(corrupt)?;
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
            status: match reply.get(1).map(String::as_str) {
                None | Some("missing") => None,
                Some(status) => Some(
                    status
                        .parse()
                        .map_err(|_| corrupt(format!("claim skipped a job in {status:?}")))?,
                ),
            },
        }),
        _ => Err(corrupt(format!("claim answered {reply:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::{CLAIM_FIELDS, Job, job_from_claim};
    use std::collections::BTreeMap;

    #[test]
    fn a_claims_job_is_the_job_its_fields_make() {
        let fresh = [
            "running",
            "1",
            "",
            "1-0",
            "42",
            "subscribe",
            "三体",
            "-100",
            "7",
            "9",
            "verify",
            "",
            "",
            "",
            "",
            "user",
        ];
        let retried = [
            "running", "3", "1", "5-1", "43", "search", "x", "5", "5", "", "once", "2", "1700",
            "1", "alice", "",
        ];
        for values in [fresh, retried] {
            let hash: BTreeMap<String, String> = CLAIM_FIELDS
                .iter()
                .zip(values)
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let claimed = job_from_claim(values.iter().map(|v| v.to_string())).unwrap();
            assert_eq!(claimed, Job::from_hash(hash).unwrap());
        }
        let mut bad = fresh.map(String::from);
        bad[7] = "not a chat".into();
        assert!(job_from_claim(bad.into_iter()).is_err());
    }

    #[test]
    fn claim_fields_are_the_scripts_list() {
        let script = crate::assets::read("lua/include/claim.lua");
        let start = script
            .find("local CLAIM_FIELDS = {")
            .expect("include/claim.lua lists CLAIM_FIELDS");
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
