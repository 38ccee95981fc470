//! Workers: the jobs stream's consumer group. Each entry is claimed (claim.lua), run against
//! MoviePilot, and its outcome recorded with the user's reply and the XACK in one step
//! (complete.lua).
//!
//! Policy, in one place:
//! - **Leases.** An entry's idle time in the group is its lease. A live worker renews the leases
//!   of its running jobs (extend.lua) every quarter of `reclaim_idle`, so a slow job is never
//!   taken from it; entries idle longer than `reclaim_idle` belong to a dead worker and are
//!   taken with XAUTOCLAIM.
//! - **Recovery is by policy, never a blind replay.** A reclaimed `running` job is re-run only
//!   if it is read-only or idempotent; a subscribe re-runs through its existence check (which
//!   verifies what the dead worker did); anything else waits for a person (`needs_review`).
//! - **Errors decide the next state.** Permanent: `failed` at once. Transient: `retry_wait` with
//!   exponential backoff and jitter until `max_attempts`. Uncertain (a side effect may have
//!   happened): verified or held by the same policy as a crash.
//! - **Fencing.** Every script after the claim presents (entry, consumer, attempt); a worker that
//!   was presumed dead cannot record anything over the attempt that replaced it.
//! - **Per-chat order.** Jobs of one chat run one after another within a process.
//!
//! The machinery only: this file reads, claims, runs a job's command (`commands::Command::run`)
//! and records its outcome; `commit` records the outcomes of one group in one call; `outcome`
//! says what a run's result means for its job; `rights` checks an admin's command when it runs;
//! `account` checks oncebot's own MoviePilot account before the first claim; `context` is the
//! leaf a command's run is given (it knows no command and none of this machinery).

mod account;
mod commit;
pub mod context;
mod outcome;
mod rights;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use crate::commands::JobCommand;
use crate::config::Settings;
use crate::config::WorkerSettings;
use crate::consume::{Consumer, read_loop};
pub use crate::i18n::Render;
use crate::ledger::{
    Attempt, AttemptLimits, ClaimTexts, Claimed, Completed, ConsumerRole, Job, JobEntry, Ledger,
    LedgerError, Outcome, StreamReader,
};
use crate::liveness::{Liveness, take_over};
use crate::metrics::METRICS;
use crate::moviepilot::{MoviePilot, MpError};
use crate::redis_health::{AfterFailure, UntilRecorded, WriteHealth};
use crate::shutdown::sleep_or_stop;
use crate::vocabulary::{JobState, job_field};
pub use account::check_own_account;
use context::{Context, MediaLocks};
pub use context::{KeyedLocks, now_ms};
use outcome::{Mapped, attempt_base};

/// One worker process's share of the jobs stream.
pub struct Worker {
    ledger: Ledger,
    mp: MoviePilot,
    cfg: WorkerSettings,
    consumer: String,
    render: Render,
    claim_texts: ClaimTexts,
    limits: AttemptLimits,
    /// Every setting, for the commands' runs (`Context::settings`).
    settings: Settings,
    /// Attempts this worker is running, by entry id: the leases it renews.
    in_flight: Mutex<HashMap<String, Attempt>>,
    /// Outcomes on their way to the committer (`commit.rs`), and its end of the channel until
    /// `run` starts it.
    commits: mpsc::UnboundedSender<commit::Member>,
    committer: Mutex<Option<mpsc::UnboundedReceiver<commit::Member>>>,
    /// Entries read (or reclaimed) that wait for a free slot: while there are any, the
    /// committer takes no new ones, so that they go first.
    waiting_entries: AtomicUsize,
    chat_locks: KeyedLocks<i64>,
    media_locks: MediaLocks,
    permits: Arc<Semaphore>,
    tasks: TaskTracker,
    /// `moviepilot.auth_wait_secs`.
    auth_wait: Duration,
    /// Whether a job of this worker met refused credentials since they last worked.
    credentials_refused: AtomicBool,
    /// This process's liveness key in the `workers` group.
    liveness: Arc<Liveness>,
    /// How long a chat that asked for a media is remembered for the relay; `None` while the
    /// relay or `notify.to_requester` is off.
    asker_ttl: Option<Duration>,
    /// Who may still run an admin's command when its job runs.
    rights: rights::Rights,
    /// Entries of kinds this release does not run, already logged and counted once.
    left_for_newer: Mutex<std::collections::HashSet<String>>,
    /// Whether Redis takes writes: an outcome it refused is recorded the moment it does.
    write_health: WriteHealth,
}

impl Worker {
    /// A worker with a liveness of its own (a process that runs no dispatcher beside it).
    pub fn new(settings: &Settings, ledger: Ledger, mp: MoviePilot) -> Arc<Self> {
        let liveness = Liveness::for_process(settings, ledger.clone(), true, false);
        Self::with_liveness(settings, ledger, mp, liveness, WriteHealth::new())
    }

    /// A worker sharing its process's liveness (and so its consumer name).
    pub(crate) fn with_liveness(
        settings: &Settings,
        ledger: Ledger,
        mp: MoviePilot,
        liveness: Arc<Liveness>,
        write_health: WriteHealth,
    ) -> Arc<Self> {
        let cfg = settings.worker.clone();
        let render = Render::new(settings.telegram.locale);
        let consumer = liveness.consumer().to_string();
        // `app` registers the process with all its roles; a worker made alone says it is one.
        liveness.register(crate::versions::registration(&["worker"]).to_value(), false);
        let notify = &settings.notify;
        let (commits, committer) = mpsc::unbounded_channel();
        let rights = rights::Rights::new(settings, ledger.clone());
        Arc::new(Worker {
            write_health,
            rights,
            liveness,
            asker_ttl: (notify.enabled && notify.to_requester)
                .then(|| Duration::from_secs(notify.requester_ttl_secs)),
            claim_texts: ClaimTexts {
                held: render.held(None),
                failed: render.crashed_too_often(),
            },
            limits: AttemptLimits {
                max_recoveries: cfg.max_recoveries,
                retention: Duration::from_secs(cfg.job_retention_secs),
                kinds: crate::versions::WORKER_KINDS,
            },
            left_for_newer: Mutex::default(),
            settings: settings.clone(),
            permits: Arc::new(Semaphore::new(cfg.concurrency)),
            ledger,
            mp,
            consumer,
            render,
            in_flight: Mutex::default(),
            commits,
            committer: Mutex::new(Some(committer)),
            waiting_entries: AtomicUsize::new(0),
            chat_locks: KeyedLocks::default(),
            media_locks: MediaLocks::default(),
            tasks: TaskTracker::new(),
            auth_wait: Duration::from_secs(settings.moviepilot.auth_wait_secs),
            credentials_refused: AtomicBool::new(false),
            cfg,
        })
    }

    /// This worker's consumer name in the group.
    pub fn consumer(&self) -> &str {
        &self.consumer
    }

    /// Reads and runs jobs until `shutdown`, then lets running jobs finish within the grace
    /// period; what is still running after that is left to be reclaimed.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) -> anyhow::Result<()> {
        // Alive before the first read; then what dead predecessors left, before new entries.
        let Some(taken) = self.liveness.join(ConsumerRole::Worker, &shutdown).await else {
            return Ok(());
        };
        tracing::info!(consumer = %self.consumer, concurrency = self.cfg.concurrency, "worker started");
        let this = self.clone();
        let heartbeat = take_over(taken, shutdown.clone(), move |reaped| {
            this.clone().take_reaped(reaped)
        })
        .await;
        let housekeeping = tokio::spawn(self.clone().housekeeping(shutdown.clone()));
        let committed = CancellationToken::new();
        let committer = self
            .committer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .map(|ready| {
                tokio::spawn(
                    self.clone()
                        .commit_loop(ready, shutdown.clone(), committed.clone()),
                )
            });
        let reader = self.clone().read_loop(shutdown.clone()).await;
        let _ = housekeeping.await;
        let _ = heartbeat.await;
        self.tasks.close();
        let grace = Duration::from_secs(self.cfg.shutdown_grace_secs);
        if tokio::time::timeout(grace, self.tasks.wait())
            .await
            .is_err()
        {
            let left = self.lock_in_flight().len();
            tracing::warn!(
                jobs = left,
                "shutdown grace period over; leaving running jobs to be reclaimed and recovered by policy"
            );
        }
        committed.cancel();
        if let Some(committer) = committer {
            let _ = committer.await;
        }
        self.liveness.retire(ConsumerRole::Worker).await;
        tracing::info!(consumer = %self.consumer, "worker stopped");
        reader
    }

    /// Runs the entries taken from dead workers (recovered by policy in claim.lua).
    async fn take_reaped(self: Arc<Self>, reaped: crate::ledger::Reaped) {
        let entries = reaped.jobs;
        for entry in &entries {
            tracing::warn!(entry = %entry.entry, "took an entry from a worker whose liveness expired");
        }
        if !entries.is_empty() {
            self.spawn_entries(entries, true).await;
        }
    }

    fn lock_in_flight(&self) -> std::sync::MutexGuard<'_, HashMap<String, Attempt>> {
        // Poisoning only means a task panicked mid-update of a plain map; it is still usable.
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// XREADGROUP on a connection of its own (a blocking read would stall every other command
    /// on a shared multiplexed connection), as many entries as there are free permits.
    async fn read_loop(self: Arc<Self>, shutdown: CancellationToken) -> anyhow::Result<()> {
        read_loop(&self.ledger, &shutdown, &JobsReader(self.clone())).await;
        Ok(())
    }

    /// Claims `entries` (one read's worth) with as few calls as the free permits allow and runs
    /// each claimed job in its own task, each under a permit taken before the claim: a job is
    /// never marked `running` before it can start. It waits for one permit at a time (a batch
    /// of reclaimed entries may be larger than `worker.concurrency`) and takes with it what
    /// else is free. Each claim runs in a task of its own, so the reader can read again while
    /// it is on its way to Redis.
    async fn spawn_entries(self: Arc<Self>, entries: Vec<JobEntry>, reclaimed: bool) {
        let mut delivered = Vec::with_capacity(entries.len());
        for entry in entries {
            match entry.job_id {
                Some(job_id) => delivered.push((job_id, entry.entry)),
                None => {
                    tracing::error!(entry = %entry.entry, "jobs-stream entry without a job id; dropping it");
                    if let Err(e) = self.ledger.drop_entry(&entry.entry).await {
                        tracing::error!(error = %e, "could not drop the malformed entry");
                    }
                }
            }
        }
        self.waiting_entries
            .fetch_add(delivered.len(), Ordering::AcqRel);
        while !delivered.is_empty() {
            let Ok(mut permits) = self.permits.clone().acquire_owned().await else {
                self.waiting_entries
                    .fetch_sub(delivered.len(), Ordering::AcqRel);
                return;
            };
            let more = self.permits.available_permits().min(delivered.len() - 1);
            if more > 0
                && let Ok(extra) = self.permits.clone().try_acquire_many_owned(more as u32)
            {
                permits.merge(extra);
            }
            let rest = delivered.split_off(permits.num_permits());
            let batch = std::mem::replace(&mut delivered, rest);
            self.waiting_entries
                .fetch_sub(batch.len(), Ordering::AcqRel);
            let this = self.clone();
            self.tasks
                .spawn(async move { this.claim_and_start(batch, permits, reclaimed).await });
        }
    }

    /// claim.lua for `delivered`, then one task per job, each with one of `permits`.
    async fn claim_and_start(
        self: Arc<Self>,
        delivered: Vec<(u64, String)>,
        mut permits: OwnedSemaphorePermit,
        reclaimed: bool,
    ) {
        let claimed = match self
            .ledger
            .claim_all(&delivered, &self.consumer, &self.limits, &self.claim_texts)
            .await
        {
            Ok(claimed) => claimed,
            Err(e) => {
                // Nothing was claimed: the entries stay in this worker's pending list and are
                // reclaimed later.
                tracing::error!(
                    error = %e,
                    entries = delivered.len(),
                    first = %delivered[0].1,
                    "claim failed; the entries will be reclaimed"
                );
                return;
            }
        };
        for claimed in claimed {
            let Some(permit) = permits.split(1) else {
                return;
            };
            self.start(claimed, reclaimed, permit);
        }
    }

    /// A job of a kind this release does not run, left for a newer worker (claim.lua): said and
    /// counted once per entry, however often a reclaim brings it back.
    fn left_for_newer(&self, kind: &str, entry: &str) {
        let mut seen = self
            .left_for_newer
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if seen.len() >= 10_000 {
            seen.clear();
        }
        if seen.insert(entry.to_string()) {
            METRICS.job_left_for_newer(kind);
            tracing::info!(
                entry,
                kind,
                "a job of a kind this release does not run: left for a newer worker"
            );
        }
    }

    /// Runs a claimed job in a task of its own, on `permit` (its slot).
    fn start(
        self: &Arc<Self>,
        claimed: Result<Claimed, LedgerError>,
        reclaimed: bool,
        permit: OwnedSemaphorePermit,
    ) {
        if let Ok(Claimed::Unknown { kind, entry }) = &claimed {
            // Its permit goes back with it: a job left for a newer worker holds no slot.
            self.left_for_newer(kind, entry);
            return;
        }
        let Some((attempt, job, recovered)) = runnable(claimed, reclaimed) else {
            return;
        };
        let this = self.clone();
        let span = tracing::info_span!("job", job_id = attempt.job_id, entry = %attempt.entry);
        self.tasks.spawn(
            async move {
                this.run_claimed(attempt, job, recovered, permit).await;
            }
            .instrument(span),
        );
    }

    /// The rest of one attempt after its claim: run it and record its outcome; `permit` (its
    /// slot) goes with the outcome to the committer, which hands it to the next job.
    async fn run_claimed(
        &self,
        attempt: Attempt,
        job: Job,
        recovered: bool,
        permit: OwnedSemaphorePermit,
    ) {
        crate::crash_point!("worker.after_claim");
        METRICS.transition(job.command.as_str(), JobState::Running.as_str());
        let started = std::time::Instant::now();
        if recovered {
            tracing::warn!(
                attempt = attempt.attempt,
                command = %job.command,
                policy = job.extra.get(job_field::RECOVERY).map(String::as_str).unwrap_or(""),
                "recovering a job whose worker stopped mid-run"
            );
        } else {
            tracing::info!(attempt = attempt.attempt, command = %job.command, "job started");
        }
        self.lock_in_flight()
            .insert(attempt.entry.clone(), attempt.clone());
        let chat_lock = self.chat_locks.get(job.chat_id);
        let outcome = {
            let _in_chat_order = chat_lock.lock().await;
            self.execute_telling_progress(&job, &attempt, recovered)
                .await
        };
        let status = outcome.status;
        if self.record(&attempt, outcome, permit).await {
            METRICS.transition(job.command.as_str(), status.as_str());
            METRICS.job_finished(job.command.as_str(), status.as_str(), started.elapsed());
        }
        crate::crash_point!("worker.after_complete");
        self.lock_in_flight().remove(&attempt.entry);
    }

    /// [`Self::execute`], with a "working on it" message queued if it takes longer than
    /// `worker.progress_after_ms`.
    async fn execute_telling_progress(
        &self,
        job: &Job,
        attempt: &Attempt,
        recovered: bool,
    ) -> Outcome {
        let progress = AtomicBool::new(false);
        let run = self.execute(job, attempt, recovered, &progress);
        tokio::pin!(run);
        let progress_after = Duration::from_millis(self.cfg.progress_after_ms);
        let mut outcome = if progress_after.is_zero() {
            run.await
        } else {
            tokio::select! {
                outcome = &mut run => outcome,
                _ = tokio::time::sleep(progress_after) => {
                    progress.store(true, Ordering::Relaxed);
                    let text = self.render.working_on_it();
                    if let Err(e) = self.ledger.queue_progress(job.id, attempt.attempt, &text).await {
                        tracing::warn!(error = %e, "could not queue the progress message");
                    }
                    run.await
                }
            }
        };
        // `progress` is set before each queue_progress call, whatever the call then answers:
        // one that timed out may still have queued the message.
        outcome.progress_queued = progress.load(Ordering::Relaxed);
        outcome
    }

    /// For a command a request or a quota may concern (issue 44), the job with the fields a
    /// first attempt's claim does not answer: `approved_by` (its rights are the approver's)
    /// and `quota` (the slots its outcome settles). `None`: nothing to add.
    async fn request_fields(
        &self,
        job: &Job,
        command: crate::commands::Command,
    ) -> Result<Option<Job>, MpError> {
        const NAMES: [&str; 2] = [job_field::APPROVED_BY, "quota"];
        if !command.requestable() || NAMES.iter().all(|n| job.extra.contains_key(*n)) {
            return Ok(None);
        }
        let values = self.ledger.job_fields(job.id, &NAMES).await.map_err(|e| {
            MpError::Transient(format!("reading the job's approval and quota: {e}"))
        })?;
        let found: Vec<_> = NAMES
            .iter()
            .zip(values)
            .filter_map(|(n, v)| v.map(|v| (n.to_string(), v)))
            .collect();
        if found.is_empty() {
            return Ok(None);
        }
        let mut job = job.clone();
        job.extra.extend(found);
        Ok(Some(job))
    }

    /// The job as it runs: with the fields a first attempt's claim does not answer (see
    /// [`Self::request_fields`]), its user's (or approver's) right to it checked now.
    async fn checked(
        &self,
        job: &Job,
        command: crate::commands::Command,
    ) -> Result<Option<Job>, MpError> {
        let more = self.request_fields(job, command).await?;
        self.rights
            .still_allowed(more.as_ref().unwrap_or(job), command)
            .await?;
        Ok(more)
    }

    /// Runs the job's action and turns the result into the outcome to record.
    /// `progress` is set before a progress message is queued.
    async fn execute(
        &self,
        job: &Job,
        attempt: &Attempt,
        recovered: bool,
        progress: &AtomicBool,
    ) -> Outcome {
        let JobCommand::Known(command) = JobCommand::parse(&job.command) else {
            // The claim leaves a kind this release does not run (claim.lua's `unknown`), so
            // this is a claim made without this worker's kinds: never fail a newer release's
            // job, retry it (a newer worker takes it; `retry_wait` keeps its recovery intact).
            return self.not_mine(job);
        };
        let with_fields;
        let job = match self.checked(job, command).await {
            Ok(Some(more)) => {
                with_fields = more;
                &with_fields
            }
            Ok(None) => job,
            Err(e) => {
                let used = attempt.attempt.saturating_sub(attempt_base(job)) as u32;
                return match self.outcome_of(job, Err(e), used) {
                    Mapped::Outcome(outcome) => outcome,
                    Mapped::WaitForCredentials(e) => self.wait_for_credentials(job, &e).await,
                };
            }
        };
        let cx = Context {
            mp: &self.mp,
            ledger: &self.ledger,
            render: self.render,
            settings: &self.settings,
            media_locks: &self.media_locks,
            attempt,
            job_id: job.id,
            progress,
            asked_before_call: std::sync::Mutex::new(None),
        };
        crate::crash_point!("worker.before_call");
        let result = command.run(&cx, job, recovered).await;
        crate::crash_point!("worker.after_call");
        self.remember_asker(job, &result).await;
        if !matches!(result, Err(MpError::CredentialsRefused(_))) {
            self.credentials_accepted().await;
        }
        let used = attempt.attempt.saturating_sub(attempt_base(job)) as u32;
        let mut outcome = match self.outcome_of(job, result, used) {
            Mapped::Outcome(outcome) => outcome,
            Mapped::WaitForCredentials(e) => return self.wait_for_credentials(job, &e).await,
        };
        if job.extra.contains_key("auth_wait_since") {
            // The credentials worked for this attempt: a later refusal waits afresh.
            outcome
                .fields
                .push(("auth_wait_since".into(), String::new()));
        }
        if outcome.status == JobState::Failed {
            self.forget_asker(job, &cx).await;
        }
        outcome
    }

    /// complete.lua until it records the outcome: while Redis is away or refuses writes the
    /// outcome is kept and tried again (the effect is never redone because its record failed),
    /// at once when `redis_health` sees writes taken again, so that it mostly lands before
    /// another worker's heartbeat takes the job from this one's expired liveness key. If the job
    /// was taken meanwhile, the recorded attempt is stale and the job's new owner decides by its
    /// policy. Returns whether the outcome was recorded (false: stale, an error that does not
    /// pass, or the committer stopped). Its waits do not end at shutdown: the grace period is
    /// there for outcomes like this one, and bounds them.
    async fn record(
        &self,
        attempt: &Attempt,
        mut outcome: Outcome,
        permit: OwnedSemaphorePermit,
    ) -> bool {
        let mut tries = UntilRecorded::new(31);
        let mut permit = Some(permit);
        loop {
            let (answer, returned, kept) =
                self.record_together(attempt, outcome, permit.take()).await;
            permit = kept;
            let Some(returned) = returned else {
                tracing::error!(
                    "the outcome was lost while being recorded (shutting down?); the job will be recovered by policy"
                );
                return false;
            };
            outcome = returned;
            let e = match answer {
                Ok(Completed::Recorded) => {
                    match tries.kept_since() {
                        Some(t) => {
                            tracing::info!(status = %outcome.status, kept_secs = t.elapsed().as_secs(), "outcome recorded once Redis took it")
                        }
                        None => tracing::debug!(status = %outcome.status, "outcome recorded"),
                    }
                    return true;
                }
                Ok(Completed::Stale { status, attempts }) => {
                    tracing::warn!(
                        status = %status,
                        attempts = %attempts,
                        "this attempt no longer owns the job (its lease was taken); outcome discarded"
                    );
                    return false;
                }
                Err(e) => e,
            };
            // One line while a passing failure lasts, not one a try.
            match tries.failed(&e, &self.write_health).await {
                AfterFailure::KeepsTrying => {
                    tracing::warn!(error = %e.error, "recording the outcome failed; keeping it and trying until Redis takes it (the job is not run again)");
                }
                AfterFailure::StillTrying => {}
                AfterFailure::Retrying => {
                    tracing::error!(error = %e.error, "recording the outcome failed; retrying");
                }
                AfterFailure::GivenUp => {
                    tracing::error!(error = %e.error, "giving up recording; the job will be recovered by policy");
                    return false;
                }
            }
        }
    }

    /// Renews leases, and reclaims the entries of workers that stopped renewing theirs. (Due
    /// retries are promoted by the heartbeat, in the same call: `Liveness`.)
    async fn housekeeping(self: Arc<Self>, shutdown: CancellationToken) {
        let reclaim_idle = Duration::from_millis(self.cfg.reclaim_idle_ms);
        let renew_every = reclaim_idle / 4;
        let mut last_reclaim = tokio::time::Instant::now();
        loop {
            if sleep_or_stop(renew_every, &shutdown).await {
                return;
            }
            self.renew_leases().await;
            if last_reclaim.elapsed() >= reclaim_idle / 2 {
                last_reclaim = tokio::time::Instant::now();
                self.clone().reclaim(reclaim_idle).await;
            }
        }
    }

    async fn renew_leases(&self) {
        let running: Vec<Attempt> = self.lock_in_flight().values().cloned().collect();
        match self.ledger.extend(&self.consumer, &running).await {
            Ok(lost) => {
                for entry in lost {
                    tracing::warn!(entry = %entry, "lease lost: another worker owns this job now; its result will be discarded");
                }
            }
            Err(e) => crate::log_unless_refused!(e, warn, error = %e, "renewing leases failed"),
        }
    }

    /// XAUTOCLAIM: entries idle longer than `min_idle` (their worker stopped renewing).
    async fn reclaim(self: Arc<Self>, min_idle: Duration) {
        let reply = self
            .ledger
            .reclaim_idle_entries(&self.consumer, min_idle, 50)
            .await;
        match reply {
            Ok(entries) => {
                for entry in &entries {
                    tracing::warn!(entry = %entry.entry, "reclaimed an entry from a worker that stopped");
                }
                self.clone().spawn_entries(entries, true).await;
            }
            Err(e) => tracing::warn!(error = %e, "reclaiming idle entries failed"),
        }
    }
}

/// The worker as a consumer of the jobs stream.
struct JobsReader(Arc<Worker>);
impl Consumer for JobsReader {
    fn what(&self) -> &'static str {
        "jobs"
    }

    type Entry = JobEntry;

    fn read<'a>(
        &'a self,
        reader: &'a mut StreamReader,
    ) -> impl std::future::Future<Output = Option<Result<Vec<JobEntry>, LedgerError>>> + Send + 'a
    {
        let w = &self.0;
        async move {
            // A worker that cannot vouch for its liveness key claims nothing: another may
            // think it dead and take its entries.
            if !w.liveness.may_claim() {
                tokio::time::sleep(Duration::from_millis(w.cfg.heartbeat_interval_ms)).await;
                return Some(Ok(Vec::new()));
            }
            // Read only when a job can start, and as many as can start.
            let permit = w.permits.clone().acquire_owned().await.ok()?;
            let count = w.permits.available_permits() + 1;
            drop(permit);
            let block = Duration::from_millis(w.cfg.read_block_ms);
            Some(reader.jobs(&w.consumer, count, block).await)
        }
    }

    fn handle(&self, entries: Vec<JobEntry>) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.0.clone().spawn_entries(entries, false)
    }
}

/// The attempt a claim handed over, if there is one to run; the rest is logged here.
fn runnable(
    claimed: Result<Claimed, LedgerError>,
    reclaimed: bool,
) -> Option<(Attempt, Job, bool)> {
    let claimed = match claimed {
        Ok(c) => c,
        Err(e) => {
            // The job may be `running` now: its lease lapses and it is recovered by policy.
            tracing::error!(error = %e, "claim answered oddly; the job will be reclaimed");
            return None;
        }
    };
    match claimed {
        Claimed::Run {
            attempt,
            job,
            recovered,
        } => Some((attempt, *job, recovered)),
        Claimed::Held { attempt } => {
            METRICS.transition("unknown", JobState::NeedsReview.as_str());
            tracing::warn!(
                attempt,
                reclaimed,
                "interrupted job held for a person (needs_review)"
            );
            None
        }
        Claimed::Failed { attempt } => {
            METRICS.transition("unknown", JobState::Failed.as_str());
            tracing::warn!(attempt, "job lost its worker too often; marked failed");
            None
        }
        // Told by `Worker::left_for_newer` before.
        Claimed::Unknown { .. } => None,
        Claimed::Skip { status } => {
            let status = status.map_or("missing", JobState::as_str);
            tracing::debug!(status, "nothing to run for this entry");
            None
        }
    }
}
