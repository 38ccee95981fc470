//! The worker's side of the ledger: claim an entry, renew leases, record an outcome, promote
//! due retries. One Lua script each; see their headers in `lua/`.
//!
//! A job that enters `needs_review` (held by claim.lua after a crash, or completed so by a
//! worker) is announced to `telegram.admin_chats` with review buttons by the same script, so a
//! crash cannot leave a held job that nobody was told about.

use std::time::Duration;

use super::entries::JobEntry;
use super::scripts::ScriptCall;
use super::{Job, Ledger, LedgerError, keys, scripts};
use crate::vocabulary::job_field as field;
use crate::vocabulary::{JobState, ReplyKind};

/// One claimed attempt: the fencing token every later call presents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub job_id: u64,
    /// The jobs-stream entry this attempt was delivered as.
    pub entry: String,
    /// The consumer (worker) that owns the attempt.
    pub consumer: String,
    pub attempt: u64,
    /// Where the attempt's reply goes: the job's `chat_id` (`chat/topic` with a forum topic,
    /// as complete.lua reads it) and `message_id` ("" for none) as the claim read them (neither
    /// ever changes), so that recording the outcome need not read them again.
    pub chat_id: String,
    pub message_id: String,
}

/// The job fields claim.lua returns, in its order (its `CLAIM_FIELDS`): what a worker reads.
pub const CLAIM_FIELDS: [&str; 17] = [
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
    field::THREAD_ID,
];

/// Where `chat_id` and `message_id` are in [`CLAIM_FIELDS`]: an [`Attempt`] keeps them.
const CLAIM_CHAT_ID: usize = 7;
const CLAIM_MESSAGE_ID: usize = 9;
const CLAIM_THREAD_ID: usize = 16;

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
    /// A job of a kind this worker does not run (a newer release's): nothing changed, the
    /// entry not acknowledged but left for a newer worker's reclaim (docs/releases.md).
    Unknown { kind: String, entry: String },
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
    /// The attempt may have queued the "working on it" message (progress.lua), which marks
    /// the job `progress`. Only then does a first attempt's outcome delete that field: asking
    /// to delete a field the job lacks costs Redis a scan of the whole HASH.
    pub progress_queued: bool,
}

/// A failure with no reply and no fields, to be filled in with `..Outcome::default()`.
impl Outcome {
    /// Nothing besides its state, reply and progress flag: no review, retry, error, buttons,
    /// tokens, poster or fields (complete.lua's short form).
    fn is_common(&self) -> bool {
        self.status != JobState::NeedsReview
            && self.status != JobState::RetryWait
            && self.error.is_empty()
            && self.markup.is_empty()
            && self.tokens.is_empty()
            && self.photo.is_empty()
            && self.fields.is_empty()
    }
}

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
            progress_queued: false,
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
    /// The job kinds it runs, as [`AttemptLimits::kinds`].
    pub kinds: &'a str,
}

/// Whether a completion trims the jobs stream after acknowledging (complete.lua's ARGV[6]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    /// Leave it to a later call.
    No,
    /// Trim now.
    Now,
    /// Trim only when the call's read took fewer entries than asked (or none was asked):
    /// nothing new waits, the worker is going idle.
    IfDrained,
}

impl Trim {
    fn as_arg(self) -> &'static str {
        match self {
            Trim::No => "0",
            Trim::Now => "1",
            Trim::IfDrained => "d",
        }
    }
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
    /// The job kinds the worker runs, each between two `|` (`versions::WORKER_KINDS`): a job
    /// of another kind is left for a newer worker.
    pub kinds: &'static str,
}

/// The idle time an entry left for a newer worker is given in the pending list: above any
/// worker's `reclaim_idle_ms`, so the next reclaim of any worker may take it (claim.lua's
/// `leave_for_newer`), and below Redis's clock, which an idle must not pass.
pub const LEFT_ENTRY_IDLE: Duration = Duration::from_secs(24 * 3600);

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
            .autoclaim(
                &stream,
                keys::Stream::Jobs.group(),
                consumer,
                min_idle,
                count,
            )
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
        let mut call = ScriptCall::new(&scripts::CLAIM, 5 + n, 9 + 3 * n, 768 + 112 * n);
        call.key("jobs stream", k.jobs_stream())
            .key("replies stream", k.replies_stream())
            .key("review index", k.review_index())
            .key("token prefix", k.token_prefix())
            .key("token-group pfx", k.token_group_prefix())
            .keys(delivered.iter().map(|(job_id, _)| k.job(*job_id)))
            .arg("consumer name", consumer)
            .arg("jobs consumer group", keys::Stream::Jobs.group())
            .arg("replies consumer group", keys::Stream::Replies.group())
            .arg("most recoveries", limits.max_recoveries)
            .arg("text sent when a job is held", &texts.held)
            .arg("text sent when a read-only job failed", &texts.failed)
            .arg("retention", limits.retention.as_secs())
            .arg("job kinds this worker runs", limits.kinds)
            .arg(
                "idle time (ms) an entry left",
                LEFT_ENTRY_IDLE.as_millis() as u64,
            );
        for (job_id, entry) in delivered {
            // Only the script knows whether it holds the job; the buttons are ready in case.
            call.args([entry.as_str()])
                .args([*job_id])
                .args([self.review.for_job(*job_id).as_str()]);
        }
        call
    }

    /// Acknowledges and deletes a jobs-stream entry that names no job (written by hand?).
    pub async fn drop_entry(&self, entry: &str) -> Result<(), LedgerError> {
        let stream = self.keys.jobs_stream();
        self.ack_and_delete(
            &stream,
            keys::Stream::Jobs.group(),
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
            kinds: "",
        };
        Ok(self
            .complete_and_take(done, retention, &taker, Trim::Now)
            .await?
            .answers)
    }

    /// [`Self::complete_all`], then up to `taker.count` new entries of the jobs stream read for
    /// `taker.consumer` and claimed, in the same atomic call (complete.lua's "taken"): a busy
    /// worker's one call per group. A `running` job among them is deferred to
    /// [`Self::claim_all`], which applies its recovery policy. `trim`: whether to trim the jobs
    /// stream after acknowledging ([`Self::complete_all`] always does).
    pub async fn complete_and_take(
        &self,
        done: &[(&Attempt, &Outcome)],
        retention: Duration,
        taker: &Taker<'_>,
        trim: Trim,
    ) -> Result<Completions, LedgerError> {
        const DOING: &str = "recording jobs' outcomes";
        let call = self.complete_call(done, retention, taker, trim);
        // Durable: a claim (the attempt counted) and an outcome must survive a failover before
        // the worker acts on them (`Ledger::durable`).
        let mut reply: Vec<String> = self.send_durable(&call, DOING).await?;
        let answered = reply.first().and_then(|n| n.parse::<usize>().ok());
        if answered != Some(done.len()) || reply.len() < 1 + done.len() {
            return Err(LedgerError::Corrupt {
                doing: DOING,
                detail: format!("{} values for {} outcomes", reply.len(), done.len()),
            });
        }
        let taken = taken_from(taker.consumer, reply.split_off(1 + done.len()));
        if taken.len() > taker.count {
            return Err(LedgerError::Corrupt {
                doing: DOING,
                detail: format!(
                    "{} entries taken, at most {} asked",
                    taken.len(),
                    taker.count
                ),
            });
        }
        Ok(Completions {
            answers: reply
                .into_iter()
                .skip(1)
                .map(|a| completed_from(serde_json::from_str(&a).unwrap_or_default()))
                .collect(),
            taken,
        })
    }

    pub(super) fn complete_call(
        &self,
        done: &[(&Attempt, &Outcome)],
        retention: Duration,
        taker: &Taker<'_>,
        trim: Trim,
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
            8 + 9 * n,
            768 + 256 * n + text_len,
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
            .arg("jobs consumer group", keys::Stream::Jobs.group())
            .arg("replies consumer group", keys::Stream::Replies.group())
            .arg("how many new entries to take", taker.count)
            .arg("consumer name that takes them", taker.consumer)
            .arg("trim the jobs stream after acknowledging", trim.as_arg())
            .arg("job kinds the taker runs", taker.kinds)
            .arg(
                "idle time (ms) an entry left",
                LEFT_ENTRY_IDLE.as_millis() as u64,
            );
        for (attempt, outcome) in done {
            self.outcome_args(&mut call, attempt, outcome, now);
        }
        call
    }

    /// One outcome's arguments, in the order complete.lua reads them (its header, "per
    /// outcome"): the common case (succeeded or failed with a reply and nothing else) in one
    /// flag, the rest spelled out.
    fn outcome_args(
        &self,
        call: &mut ScriptCall,
        attempt: &Attempt,
        outcome: &Outcome,
        now: Duration,
    ) {
        call.args([attempt.entry.as_str()])
            .args([attempt.attempt])
            .args([
                attempt.chat_id.as_str(),
                attempt.message_id.as_str(),
                outcome.status.as_str(),
                outcome.result.as_str(),
                outcome.reply.as_str(),
                outcome.reply_kind.as_str(),
            ]);
        if outcome.is_common() {
            call.args([if outcome.progress_queued { "p" } else { "0" }]);
            return;
        }
        let review = if outcome.status == JobState::NeedsReview {
            self.review.for_job(attempt.job_id)
        } else {
            String::new()
        };
        call.args(["1", outcome.error.as_str()])
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
            .arg("jobs consumer group", keys::Stream::Jobs.group())
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
            .arg("jobs consumer group", keys::Stream::Jobs.group());
        call
    }
}

/// The entries complete.lua took (its header's "taken"), one string each, in stream order:
/// the job id, the entry id and an answer, joined by NUL bytes or as a JSON array of strings.
fn taken_from(consumer: &str, values: Vec<String>) -> Vec<Taken> {
    values
        .into_iter()
        .map(|raw| {
            let parts: Option<Vec<String>> = if raw.starts_with('[') {
                serde_json::from_str(&raw).ok()
            } else {
                Some(raw.split('\0').map(str::to_string).collect())
            };
            match parts {
                Some(parts) if parts.len() >= 3 => taken_one(consumer, parts),
                _ => Taken::Corrupt(LedgerError::Corrupt {
                    doing: "taking new jobs",
                    detail: format!("complete took {raw:?}"),
                }),
            }
        })
        .collect()
}

/// One taken entry: its job id, its entry id and its answer.
fn taken_one(consumer: &str, mut parts: Vec<String>) -> Taken {
    let answer = parts.split_off(2);
    let entry = parts.pop().unwrap_or_default();
    let Ok(job_id) = parts.pop().unwrap_or_default().parse::<u64>() else {
        // An entry naming no job: acknowledged and deleted by the script.
        return Taken::Claimed(Ok(Claimed::Skip { status: None }));
    };
    let answer = match answer[0].as_str() {
        "defer" => return Taken::Deferred { job_id, entry },
        "first" => first_attempt_answer(&entry, job_id, answer),
        _ => answer,
    };
    Taken::Claimed(claimed_from(job_id, &entry, consumer, answer))
}

/// claim.lua's answer for a job's first attempt, from complete.lua's shorter "first" one
/// (`first`, command, args, chat_id, user_id, message_id, recovery, requester, role,
/// thread_id): what every first attempt has alike filled in. Any other length is left to fail
/// as corrupt.
fn first_attempt_answer(entry: &str, job_id: u64, answer: Vec<String>) -> Vec<String> {
    if answer.len() != 10 {
        return answer;
    }
    let mut v = answer.into_iter().skip(1);
    let mut next = || v.next().unwrap_or_default();
    let (command, args, chat_id, user_id) = (next(), next(), next(), next());
    let (message_id, recovery, requester, role) = (next(), next(), next(), next());
    let thread_id = next();
    // In CLAIM_FIELDS order, after "run", the attempt and the mode.
    vec![
        "run".into(),
        "1".into(),
        "fresh".into(),
        JobState::Running.as_str().into(),
        "1".into(),
        "0".into(),
        entry.to_string(),
        job_id.to_string(),
        command,
        args,
        chat_id,
        user_id,
        message_id,
        recovery,
        String::new(),
        String::new(),
        String::new(),
        requester,
        role,
        thread_id,
    ]
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
    // Inserted one by one: collecting a map sorts a vector of its entries first, which for
    // the few fields left cost more than the inserts.
    for (k, v) in CLAIM_FIELDS.iter().zip(values) {
        if let Some(v) = v {
            job.extra.insert(k.to_string(), v);
        }
    }
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
            let chat_id = match reply[3 + CLAIM_THREAD_ID].as_str() {
                "" => reply[3 + CLAIM_CHAT_ID].clone(),
                thread => format!("{}/{thread}", reply[3 + CLAIM_CHAT_ID]),
            };
            let message_id = reply[3 + CLAIM_MESSAGE_ID].clone();
            let job = job_from_claim(reply.into_iter().skip(3)).map_err(corrupt)?;
            Ok(Claimed::Run {
                attempt: Attempt {
                    job_id,
                    entry: entry.to_string(),
                    consumer: consumer.to_string(),
                    attempt,
                    chat_id,
                    message_id,
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
        Some("unknown") => Ok(Claimed::Unknown {
            kind: reply.get(1).cloned().unwrap_or_default(),
            entry: entry.to_string(),
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
    use super::{CLAIM_FIELDS, Claimed, Job, JobState, Taken, field, job_from_claim};
    use std::collections::BTreeMap;

    /// A fresh job's CLAIM_FIELDS as a claim answers them.
    const FRESH: [&str; 17] = [
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
        "4",
    ];

    #[test]
    fn a_claims_job_is_the_job_its_fields_make() {
        let fresh = FRESH;
        let retried = [
            "running", "3", "1", "5-1", "43", "search", "x", "5", "5", "", "once", "2", "1700",
            "1", "alice", "", "",
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

    /// complete.lua's taken entries, one of each kind, and a first attempt's short answer
    /// making the same job and attempt as the full one claim.lua gives.
    #[test]
    fn taken_entries_are_read_by_their_kind() {
        let s = |v: &[&str]| v.iter().map(|v| v.to_string()).collect::<Vec<String>>();
        // FRESH's job as complete.lua answers its first attempt: id, entry, "first", command,
        // args, chat_id, user_id, message_id, recovery, requester, role, thread_id.
        let f = FRESH;
        let first = [
            f[4], f[3], "first", f[5], f[6], f[7], f[8], f[9], f[10], f[14], f[15], f[16],
        ];
        let mut full = s(&["run", "1", "fresh"]);
        full.extend(s(&FRESH));
        // What a first attempt has alike: recoveries "0" where FRESH has none.
        full[5] = "0".into();
        let retried = serde_json::to_string(&[
            "43", "2-0", "run", "3", "fresh", "running", "3", "1", "2-0", "43", "search", "x", "5",
            "5", "", "once", "2", "1700", "1", "alice", "", "",
        ])
        .unwrap();
        // A first attempt whose arguments hold a NUL byte comes as JSON.
        let mut nul = first;
        nul[0] = "46";
        nul[4] = "a\0b";
        let taken = super::taken_from(
            "w1",
            vec![
                first.join("\0"),
                retried,
                r#"["44","3-0","skip","succeeded"]"#.into(),
                r#"["45","4-0","defer"]"#.into(),
                r#"["","5-0","skip","missing"]"#.into(),
                serde_json::to_string(&nul).unwrap(),
                "not an answer".into(),
            ],
        );
        assert_eq!(taken.len(), 7, "{taken:?}");
        let Taken::Claimed(Ok(Claimed::Run { attempt, job, .. })) = &taken[0] else {
            panic!("{:?}", taken[0]);
        };
        let Ok(Claimed::Run {
            attempt: whole_attempt,
            job: whole_job,
            recovered: false,
        }) = super::claimed_from(42, "1-0", "w1", full)
        else {
            panic!("the full answer claims");
        };
        assert_eq!((attempt, job), (&whole_attempt, &whole_job));
        assert_eq!(
            (attempt.chat_id.as_str(), attempt.message_id.as_str()),
            ("-100/4", "9"),
            "a job in a forum topic: its reply goes there (complete.lua splits chat/topic)"
        );
        let Taken::Claimed(Ok(Claimed::Run { attempt, job, .. })) = &taken[1] else {
            panic!("{:?}", taken[1]);
        };
        assert_eq!((attempt.attempt, job.id, job.attempts), (3, 43, 3));
        assert!(matches!(
            taken[2],
            Taken::Claimed(Ok(Claimed::Skip {
                status: Some(JobState::Succeeded)
            }))
        ));
        assert!(matches!(&taken[3], Taken::Deferred { job_id: 45, entry } if entry == "4-0"));
        assert!(matches!(
            taken[4],
            Taken::Claimed(Ok(Claimed::Skip { status: None }))
        ));
        let Taken::Claimed(Ok(Claimed::Run { job, .. })) = &taken[5] else {
            panic!("{:?}", taken[5]);
        };
        assert_eq!((job.id, job.args.as_str()), (46, "a\0b"));
        assert!(matches!(taken[6], Taken::Corrupt(_)), "{:?}", taken[6]);
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
        assert_eq!(CLAIM_FIELDS[super::CLAIM_CHAT_ID], field::CHAT_ID);
        assert_eq!(CLAIM_FIELDS[super::CLAIM_MESSAGE_ID], field::MESSAGE_ID);
    }
}
