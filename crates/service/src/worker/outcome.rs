//! What one run's result means for its job: the outcome to record (succeeded, failed, retried
//! with backoff, held for a person) and the reply that says it, by the error's kind and the job's
//! own recovery policy; the wait while MoviePilot refuses oncebot's credentials; and the asks
//! for the relay remembered or undone with the outcome.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Worker;
use super::context::{Context, Done, Settle, now_ms};
use crate::backoff;
use crate::config::WorkerSettings;
use crate::ledger::{CREDENTIALS_NOTICE, Job, Outcome};
use crate::moviepilot::MpError;
use crate::vocabulary::{ErrorKind, JobState, Recovery, ReplyKind, job_field};

impl Worker {
    /// The job ends `failed`: the ask it noted before its create or download (this attempt, or
    /// an earlier one) is undone, so a failed ask draws no notices of that media for months. An
    /// uncertain end keeps it: the media may well be coming.
    pub(super) async fn forget_asker(&self, job: &Job, cx: &Context<'_>) {
        let digest = cx
            .asked_before_call
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .or_else(|| job.extra.get("asked_digest").cloned());
        let Some(digest) = digest else {
            return;
        };
        if let Err(e) = self.ledger.forget_asker(&digest, job.id).await {
            tracing::warn!(error = %e, "could not forget who asked for a failed job's media; its notifications may still reach this chat");
        }
    }

    /// Remembers the job's chat for the media it asked MoviePilot for (`notify.to_requester`).
    /// Before the outcome: a crash in between runs the job again, which remembers again.
    pub(super) async fn remember_asker(&self, job: &Job, result: &Result<Done, MpError>) {
        let (
            Ok(Done {
                asked: Some(media),
                settle: None,
                ..
            }),
            Some(ttl),
        ) = (result, self.asker_ttl)
        else {
            return;
        };
        if let Err(e) = self
            .ledger
            .remember_asker(media, job.chat_id, ttl, None)
            .await
        {
            tracing::warn!(error = %e, "could not remember who asked; MoviePilot's notifications about this media go to the configured chats only");
        }
    }

    /// What one run's result means for the job: the outcome to record, or a wait while
    /// MoviePilot refuses oncebot's credentials. `used`: attempts this job has used.
    pub(super) fn outcome_of(&self, job: &Job, result: Result<Done, MpError>, used: u32) -> Mapped {
        let mapped = self.outcome_of_run(job, result, used);
        match mapped {
            Mapped::Outcome(outcome) => Mapped::Outcome(quota_used(job, outcome)),
            wait => wait,
        }
    }

    fn outcome_of_run(&self, job: &Job, result: Result<Done, MpError>, used: u32) -> Mapped {
        Mapped::Outcome(match result {
            Ok(done) => settled(done),
            Err(e @ (MpError::Permanent(_) | MpError::Declined(_))) => self.failed(job, &e),
            Err(e @ MpError::CredentialsRefused(_)) => return Mapped::WaitForCredentials(e),
            Err(e @ MpError::Transient(_)) => self.retry_or_fail(job, &e, used),
            Err(e @ MpError::Uncertain(_)) => match recovery_of(job) {
                // The next attempt looks before it creates (or deletes): that look is the
                // verification. The policy is the job's own, stored at admission, not this
                // release's table.
                Some(Recovery::VerifyThenRetry | Recovery::IdempotentRerun | Recovery::Rerun) => {
                    self.retry_or_fail(job, &e, used)
                }
                // A costly read (`RerunOnce`: every indexer site again) is not repeated on a
                // doubt either; an unknown policy is a person's call.
                Some(Recovery::RerunOnce | Recovery::HoldForReview | Recovery::NoJob) | None => {
                    tracing::warn!(reason = %e, "uncertain outcome that cannot be verified; holding for a person");
                    Outcome {
                        status: JobState::NeedsReview,
                        error: format!("uncertain: {e}"),
                        reply: self.render.held(Some(job.id)),
                        reply_kind: ReplyKind::NeedsReview,
                        fields: vec![kind_field(e.kind())],
                        ..Outcome::default()
                    }
                }
            },
        })
    }

    /// The job failed for good: its error for the ledger, a plain sentence for the user.
    pub(super) fn failed(&self, job: &Job, error: &MpError) -> Outcome {
        tracing::warn!(reason = %error, kind = %error.kind(), "job failed");
        let declined = matches!(error, MpError::Declined(_)).then(|| error.message());
        Self::finished_failed(
            error.to_string(),
            self.render.failed(job.id, error.kind(), declined),
            error.kind(),
        )
    }

    /// A job of a kind this release does not run, claimed anyway (by a claim made without this
    /// worker's kinds): never failed, but back to `retry_wait` without a word, for a newer
    /// worker (docs/releases.md).
    pub(super) fn not_mine(&self, job: &Job) -> Outcome {
        tracing::info!(
            kind = %job.command,
            "a job of a kind this release does not run: back to retry_wait for a newer worker"
        );
        Outcome {
            status: JobState::RetryWait,
            retry_in: std::time::Duration::from_millis(self.cfg.reclaim_idle_ms),
            reply_kind: ReplyKind::Retrying,
            ..Outcome::default()
        }
    }

    pub(super) fn finished_failed(error: String, reply: String, kind: ErrorKind) -> Outcome {
        Outcome {
            status: JobState::Failed,
            error,
            reply,
            reply_kind: ReplyKind::Result,
            fields: vec![kind_field(kind)],
            ..Outcome::default()
        }
    }

    pub(super) fn retry_or_fail(&self, job: &Job, error: &MpError, used: u32) -> Outcome {
        let max = self.cfg.max_attempts;
        let kind = error.kind();
        if used >= max {
            tracing::warn!(reason = %error, %kind, attempts = used, "job failed after its last attempt");
            return Self::finished_failed(
                format!("gave up after {used} attempts: {error}"),
                self.render.gave_up(job.id, kind, used),
                kind,
            );
        }
        let delay = retry_delay(&self.cfg, used);
        tracing::warn!(reason = %error, %kind, retry_in = ?delay, "job will be retried");
        // One "failed for now" message per job, at its first retry; the final outcome follows.
        let reply = if used == 1 {
            self.render
                .retrying(job.id, kind, delay.as_secs().max(1), used + 1, max)
        } else {
            String::new()
        };
        Outcome {
            status: JobState::RetryWait,
            error: error.to_string(),
            reply,
            reply_kind: ReplyKind::Retrying,
            retry_in: delay,
            fields: vec![kind_field(kind)],
            ..Outcome::default()
        }
    }

    /// MoviePilot refused oncebot's credentials: the operator's to fix, so the job waits in
    /// `retry_wait` without spending an attempt, for at most `moviepilot.auth_wait_secs` from
    /// its first refusal; the admin chats are told once, each user once (at the first of their
    /// jobs that waits), however many jobs and workers meet it.
    pub(super) async fn wait_for_credentials(&self, job: &Job, error: &MpError) -> Outcome {
        self.credentials_refused.store(true, Ordering::Relaxed);
        let kind = error.kind();
        let now = now_ms();
        let since = job
            .extra
            .get("auth_wait_since")
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(now);
        self.tell_admins_refused(error).await;
        let waited = Duration::from_millis(now.saturating_sub(since));
        if waited >= self.auth_wait {
            tracing::error!(reason = %error, waited = ?waited, "job failed: MoviePilot refused oncebot's credentials for too long");
            return Self::finished_failed(
                format!(
                    "MoviePilot refused oncebot's credentials for {} s: {error}",
                    waited.as_secs()
                ),
                self.render.failed(job.id, kind, None),
                kind,
            );
        }
        let waits = job
            .extra
            .get("auth_waits")
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
            + 1;
        let delay = retry_delay(&self.cfg, waits)
            .min(CREDENTIALS_RETRY_MAX)
            .min(self.auth_wait - waited);
        tracing::warn!(reason = %error, retry_in = ?delay, "MoviePilot refused oncebot's credentials; the job waits without using an attempt");
        let tell = !job.extra.contains_key("auth_wait_since") && self.first_to_tell(job).await;
        Outcome {
            status: JobState::RetryWait,
            error: error.to_string(),
            reply: if tell {
                self.render.waiting_for_credentials(job.id)
            } else {
                String::new()
            },
            reply_kind: ReplyKind::Retrying,
            retry_in: delay,
            fields: vec![
                kind_field(kind),
                ("auth_wait_since".into(), since.to_string()),
                ("auth_waits".into(), waits.to_string()),
                // This attempt does not count against worker.max_attempts.
                ("attempt_base".into(), (attempt_base(job) + 1).to_string()),
            ],
            ..Outcome::default()
        }
    }

    /// The admin chats are told once while MoviePilot refuses oncebot's credentials.
    pub(super) async fn tell_admins_refused(&self, error: &MpError) {
        let notice = self
            .render
            .credentials_notice(error.message(), self.auth_wait.as_secs());
        match self
            .ledger
            .raise_notice(CREDENTIALS_NOTICE, &notice, self.auth_wait)
            .await
        {
            Ok(true) => {
                tracing::warn!("told the admin chats that MoviePilot refuses oncebot's credentials")
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(error = %e, "could not tell the admin chats about the refused credentials")
            }
        }
    }

    /// Whether this job's user has not been told of the refused credentials yet (each user is
    /// told once, at their first waiting job).
    pub(super) async fn first_to_tell(&self, job: &Job) -> bool {
        match self
            .ledger
            .tell_user_once(CREDENTIALS_NOTICE, job.user_id, self.auth_wait)
            .await
        {
            Ok(new) => new,
            Err(e) => {
                // Better told twice than never.
                tracing::warn!(error = %e, "could not check whether the user was told about the refused credentials");
                true
            }
        }
    }

    /// After a job whose credentials got through: if this worker saw them refused, the
    /// condition is over, and its next occurrence is told to the admin chats again.
    pub(super) async fn credentials_accepted(&self) {
        if self.mp.credentials_refused().is_some()
            || !self.credentials_refused.swap(false, Ordering::Relaxed)
        {
            return;
        }
        match self.ledger.clear_notice(CREDENTIALS_NOTICE).await {
            Ok(_) => tracing::info!(
                "MoviePilot accepts oncebot's credentials again; waiting jobs run at their next retry"
            ),
            Err(e) => {
                self.credentials_refused.store(true, Ordering::Relaxed);
                tracing::warn!(error = %e, "could not end the admin notice about refused credentials");
            }
        }
    }
}

/// The job's own recovery policy, stored at admission (`None` for a value this release does
/// not know, which is then held for a person).
/// The outcome of a run MoviePilot answered: succeeded, or settled as [`Settle`] says (with
/// the run's fields either way: what it found is worth keeping when it did not succeed).
pub(super) fn settled(done: Done) -> Outcome {
    match done.settle {
        Some(Settle::Failed { error }) => {
            tracing::warn!(reason = %error, "job failed");
            Outcome {
                status: JobState::Failed,
                error,
                reply: done.reply,
                reply_kind: ReplyKind::Result,
                fields: [vec![kind_field(ErrorKind::Permanent)], done.fields].concat(),
                ..Outcome::default()
            }
        }
        Some(Settle::Held { error }) => {
            tracing::warn!(reason = %error, "outcome cannot be decided; holding for a person");
            Outcome {
                status: JobState::NeedsReview,
                error: format!("uncertain: {error}"),
                reply: done.reply,
                reply_kind: ReplyKind::NeedsReview,
                fields: [vec![kind_field(ErrorKind::Uncertain)], done.fields].concat(),
                ..Outcome::default()
            }
        }
        None => {
            tracing::info!(result = %done.result, "job succeeded");
            let (markup, tokens) = done
                .buttons
                .map(|b| (b.markup, b.tokens))
                .unwrap_or_default();
            Outcome {
                status: JobState::Succeeded,
                result: done.result,
                reply: done.reply,
                reply_kind: ReplyKind::Result,
                markup,
                tokens,
                photo: done.photo.unwrap_or_default(),
                fields: done.fields,
                ..Outcome::default()
            }
        }
    }
}

/// What [`Worker::outcome_of`] decided.
pub(super) enum Mapped {
    Outcome(Outcome),
    /// MoviePilot refused the credentials: the job waits without spending an attempt.
    WaitForCredentials(MpError),
}

pub(super) fn recovery_of(job: &Job) -> Option<Recovery> {
    job.extra
        .get(job_field::RECOVERY)
        .and_then(|name| name.parse().ok())
}

/// The longest wait between two tries of a job waiting for its credentials: once an operator
/// fixes them, waiting jobs run within this.
pub(super) const CREDENTIALS_RETRY_MAX: Duration = Duration::from_secs(60);

/// Attempts made before a person sent the job back (`jobs resolve --as retry`) do not count
/// against the retry budget again.
pub(super) fn attempt_base(job: &Job) -> u64 {
    job.extra
        .get("attempt_base")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The delay before attempt `used + 1`: exponential from the minimum, with jitter.
pub(super) fn retry_delay(cfg: &WorkerSettings, used: u32) -> Duration {
    let min = Duration::from_millis(cfg.retry_min_delay_ms);
    let max = Duration::from_millis(cfg.retry_max_delay_ms);
    backoff::nth(backoff::jittered(min, max), used)
}

/// A job's `mp_error_kind` field.
fn kind_field(kind: ErrorKind) -> (String, String) {
    (ErrorKind::FIELD.to_string(), kind.as_str().to_string())
}

/// A job that holds weekly quota slots (its `quota` field, issue 44) and ended: how many it
/// used, for complete.lua to keep (from now) or free: what it made at MoviePilot (a
/// subscription created, a download added, or either found made after a crash), none when it
/// failed. A job that may still run keeps its slots.
fn quota_used(job: &Job, mut outcome: Outcome) -> Outcome {
    let held: u32 = match job.extra.get("quota").and_then(|q| q.parse().ok()) {
        Some(n) if n > 0 => n,
        _ => return outcome,
    };
    let made = |value: &str| matches!(value, "created" | "added" | "verified_existing");
    let used = match outcome.status {
        JobState::Succeeded => outcome
            .fields
            .iter()
            .filter(|(name, value)| {
                (name == "mp_outcome" || name == "mp_subscribe_outcome") && made(value)
            })
            .count() as u32,
        JobState::Failed => 0,
        _ => return outcome,
    };
    outcome
        .fields
        .push(("quota_used".into(), used.min(held).to_string()));
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;

    fn worker_settings() -> WorkerSettings {
        Settings::load_from(None, std::iter::empty())
            .unwrap()
            .worker
    }

    #[test]
    fn backoff_grows_with_each_attempt_and_stays_under_the_maximum() {
        let cfg = worker_settings();
        let delay = |used: u32| retry_delay(&cfg, used);
        for _ in 0..50 {
            // Jitter adds less than one base delay, so two doublings always outgrow it.
            assert!(delay(1) < delay(3));
            assert!(delay(3) < delay(5));
            assert!(delay(1) >= Duration::from_millis(cfg.retry_min_delay_ms));
            assert!(delay(30) <= Duration::from_millis(2 * cfg.retry_max_delay_ms));
        }
    }

    /// MoviePilot v2.14.0 refuses connections for 20 to 27 s while it restarts (longer on a
    /// small host): the default attempts must outlast that with room to spare.
    #[test]
    fn the_default_retry_budget_outlasts_a_moviepilot_restart() {
        let cfg = worker_settings();
        // Jitter only adds, so the sum without it is the least the budget spans.
        let least: Duration = (1..cfg.max_attempts)
            .map(|used| {
                Duration::from_millis(cfg.retry_min_delay_ms * 2u64.pow(used - 1))
                    .min(Duration::from_millis(cfg.retry_max_delay_ms))
            })
            .sum();
        assert!(least >= Duration::from_secs(120), "{least:?}");
        assert!(
            least <= Duration::from_secs(600),
            "still bounded: {least:?}"
        );
    }
}
