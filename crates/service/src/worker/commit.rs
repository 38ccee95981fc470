//! The worker's committer: one task that records outcomes in groups (complete.lua) and, in the
//! same call, takes new jobs for the slots the group frees.
//!
//! At most one complete.lua call per worker is in flight; the outcomes that finish meanwhile
//! wait in a channel and form the next group, so a busy worker's groups grow by themselves and
//! an idle one records each outcome at once. The group's permits (its slots) travel with it:
//! the call reads and claims up to as many new entries as the group had members, and each one
//! starts on a freed permit, so a busy worker makes one Redis call per group instead of a read,
//! a claim and a completion. What the call did not fill is released to the read loop, which
//! reads (and blocks) as before.
//!
//! A group waits a little for the jobs still running beside it ([`GROUP_WAIT`]): most of what
//! a complete.lua call costs Redis is the call itself (the round trip's system calls, the
//! script's set-up, the read and the acknowledgement), so eight outcomes in one call cost it
//! far less than eight in two. An idle worker's single job is recorded at once.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::Worker;
use crate::ledger::{Attempt, Completed, Completions, Outcome, Taken, Taker, Trim, Unrecorded};

/// What an outcome's holder hears when the committer stopped (shutdown) before recording it.
const COMMITTER_STOPPED: &str = "the committer stopped";

/// Most outcomes one complete.lua call records: a bigger group would hold Redis (and every
/// other client's command) for longer than a few milliseconds.
const MAX_GROUP: usize = 64;

/// Outcomes recorded between two trims of the jobs stream. A trim costs Redis an XPENDING and
/// an XTRIM, and while entries are pending it removes whole stream nodes only (100 entries by
/// default), so per group it would mostly remove nothing.
const TRIM_EVERY: usize = 48;

/// How long a group waits for the outcomes of this worker's other running jobs before it is
/// recorded without them. Jobs a call takes start together and mostly finish together, so on a
/// busy worker they arrive within a fraction of this; a slow one (a search across trackers)
/// costs the others at most this long. One tick of tokio's timer: nothing shorter is kept.
const GROUP_WAIT: Duration = Duration::from_millis(1);

/// One outcome waiting to be recorded, the slot its job held, and where its answer goes.
pub(super) struct Member {
    pub attempt: Attempt,
    pub outcome: Outcome,
    pub permit: Option<OwnedSemaphorePermit>,
    pub answer: oneshot::Sender<Answer>,
}

/// What a member gets back: the answer, its outcome (for a retry) and, when nothing was
/// recorded, its permit.
pub(super) type Answer = (
    Result<Completed, Unrecorded>,
    Outcome,
    Option<OwnedSemaphorePermit>,
);

impl Worker {
    /// Records outcomes until `stop`, one group at a time; `reading` ends the taking of new
    /// entries (shutdown). Runs as its own task for the worker's whole life.
    pub(super) async fn commit_loop(
        self: Arc<Self>,
        mut ready: mpsc::UnboundedReceiver<Member>,
        reading: CancellationToken,
        stop: CancellationToken,
    ) {
        let mut untrimmed = 0;
        loop {
            let first = tokio::select! {
                m = ready.recv() => m,
                () = stop.cancelled() => None,
            };
            let Some(first) = first else {
                return;
            };
            let running_beside = |members: &[Member]| self.slots_in_use() > slots_of(members);
            let members = gather(first, &mut ready, running_beside, GROUP_WAIT).await;
            self.commit_group(members, &reading, &mut untrimmed).await;
        }
    }

    /// One complete.lua call for `members` (at most [`MAX_GROUP`]); every member is answered.
    /// `untrimmed`: the outcomes recorded since the jobs stream was last trimmed.
    async fn commit_group(
        self: &Arc<Self>,
        mut members: Vec<Member>,
        reading: &CancellationToken,
        untrimmed: &mut usize,
    ) {
        let retention = Duration::from_secs(self.cfg.job_retention_secs);
        let slots = slots_of(&members);
        // Every few dozen outcomes; and when this group holds every slot in use (nothing else
        // of this worker runs or is being claimed) and its call finds nothing new to take, so
        // that a worker going idle leaves the stream trimmed: empty, once no other worker has
        // an entry pending. (A busy worker's groups hold every slot too: they wait for the
        // jobs beside them.)
        *untrimmed += members.len();
        let in_use = self.slots_in_use();
        let trim = if *untrimmed >= TRIM_EVERY {
            *untrimmed = 0;
            Trim::Now
        } else if in_use <= slots {
            Trim::IfDrained
        } else {
            Trim::No
        };
        let taker = Taker {
            consumer: &self.consumer,
            count: if self.may_take(reading) { slots } else { 0 },
            kinds: self.limits.kinds,
        };
        let done: Vec<(&Attempt, &Outcome)> =
            members.iter().map(|m| (&m.attempt, &m.outcome)).collect();
        let reply = self
            .ledger
            .complete_and_take(&done, retention, &taker, trim)
            .await;
        drop(done);
        match reply {
            Ok(Completions { answers, taken }) => {
                let mut permits: Option<OwnedSemaphorePermit> = None;
                for m in &mut members {
                    if let Some(p) = m.permit.take() {
                        match permits.as_mut() {
                            Some(all) => all.merge(p),
                            None => permits = Some(p),
                        }
                    }
                }
                for (member, answer) in members.into_iter().zip(answers) {
                    let answer = answer.map_err(|e| {
                        self.write_health.learn(&e);
                        Unrecorded::of(&e)
                    });
                    let _ = member.answer.send((answer, member.outcome, None));
                }
                if let Some(permits) = permits {
                    self.start_taken(taken, permits);
                }
            }
            Err(e) => {
                self.write_health.learn(&e);
                let e = Unrecorded::of(&e);
                for m in members {
                    let _ = m.answer.send((Err(e.clone()), m.outcome, m.permit));
                }
            }
        }
    }

    /// The worker's slots held now: by running jobs, by claims on their way, by outcomes
    /// waiting to be recorded.
    fn slots_in_use(&self) -> usize {
        self.cfg
            .concurrency
            .saturating_sub(self.permits.available_permits())
    }

    /// Whether a group's call should take new entries: not after shutdown began, not while
    /// this worker cannot vouch for its liveness (another may think it dead), and not while
    /// entries already read wait for a slot (they go first).
    fn may_take(&self, reading: &CancellationToken) -> bool {
        !reading.is_cancelled()
            && self.liveness.may_claim()
            && self.waiting_entries.load(Ordering::Acquire) == 0
    }

    /// Starts each job a group's call took, on one of the group's `permits`; a job whose owner
    /// seems gone goes through claim.lua and its recovery policy. The permits left over are
    /// released (to the read loop).
    fn start_taken(self: &Arc<Self>, taken: Vec<Taken>, mut permits: OwnedSemaphorePermit) {
        let mut deferred = Vec::new();
        for t in taken {
            match t {
                Taken::Claimed(claimed) => {
                    let Some(permit) = permits.split(1) else {
                        tracing::error!("took more entries than free slots");
                        return;
                    };
                    self.start(claimed, false, permit);
                }
                Taken::Deferred { job_id, entry } => deferred.push((job_id, entry)),
                Taken::Corrupt(e) => {
                    tracing::error!(error = %e, "a taken entry answered oddly; it will be reclaimed");
                }
            }
        }
        if let Some(slots) = permits.split(deferred.len()) {
            let this = self.clone();
            self.tasks
                .spawn(async move { this.claim_and_start(deferred, slots, false).await });
        }
    }

    /// complete.lua for one outcome, with the others ready at the same moment (a group
    /// commit); `permit` is the slot its job held, handed on to the next job. Returns the
    /// answer, the outcome (for a retry) and the permit when nothing was recorded; `None` for
    /// the outcome when the committer stopped (shutdown) before recording it.
    pub(super) async fn record_together(
        &self,
        attempt: &Attempt,
        outcome: Outcome,
        permit: Option<OwnedSemaphorePermit>,
    ) -> (
        Result<Completed, Unrecorded>,
        Option<Outcome>,
        Option<OwnedSemaphorePermit>,
    ) {
        let (answer, answered) = oneshot::channel();
        let member = Member {
            attempt: attempt.clone(),
            outcome,
            permit,
            answer,
        };
        if self.commits.send(member).is_err() {
            return (Err(Unrecorded::because(COMMITTER_STOPPED)), None, None);
        }
        match answered.await {
            Ok((answer, outcome, permit)) => (answer, Some(outcome), permit),
            Err(_) => (Err(Unrecorded::because(COMMITTER_STOPPED)), None, None),
        }
    }
}

/// The slots `members` hold (a member's permit is its job's slot).
fn slots_of(members: &[Member]) -> usize {
    members
        .iter()
        .map(|m| m.permit.as_ref().map_or(0, |p| p.num_permits()))
        .sum()
}

/// One group: `first`, the outcomes that finish in the same turn of the runtime, then, while
/// `running_beside` says jobs outside the group still run (their slots are in use and not the
/// group's), what arrives before `wait` is over; at most [`MAX_GROUP`].
async fn gather<M>(
    first: M,
    ready: &mut mpsc::UnboundedReceiver<M>,
    running_beside: impl Fn(&[M]) -> bool,
    wait: Duration,
) -> Vec<M> {
    tokio::task::yield_now().await;
    let mut members = vec![first];
    while members.len() < MAX_GROUP
        && let Ok(m) = ready.try_recv()
    {
        members.push(m);
    }
    let deadline = tokio::time::Instant::now() + wait;
    while members.len() < MAX_GROUP && running_beside(&members) {
        match tokio::time::timeout_at(deadline, ready.recv()).await {
            Ok(Some(m)) => members.push(m),
            // The wait is over, or the worker stopped: record what is here.
            Ok(None) | Err(_) => break,
        }
    }
    members
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `running` jobs in all, one of them in each member (as a member's permit is its job's).
    fn beside(running: usize) -> impl Fn(&[u32]) -> bool {
        move |members: &[u32]| running > members.len()
    }

    /// [`gather`] for a first outcome `1`, with `ready` already sent, `running` jobs in all and
    /// the channel left open unless `stopped`: the group, and how long the gathering took.
    async fn gathered(ready: &[u32], running: usize, stopped: bool) -> (Vec<u32>, Duration) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        for &m in ready {
            tx.send(m).unwrap();
        }
        let open = (!stopped).then_some(tx);
        let started = tokio::time::Instant::now();
        let group = gather(1, &mut rx, beside(running), GROUP_WAIT).await;
        drop(open);
        (group, started.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn a_lone_outcome_is_recorded_at_once() {
        assert_eq!(gathered(&[], 1, false).await, (vec![1], Duration::ZERO));
    }

    #[tokio::test(start_paused = true)]
    async fn outcomes_ready_together_form_one_group_without_waiting() {
        assert_eq!(
            gathered(&[2, 3], 3, false).await,
            (vec![1, 2, 3], Duration::ZERO)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_group_waits_for_the_jobs_running_beside_it() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let later = tx.clone();
        // Milliseconds: tokio's timer keeps nothing finer.
        let wait = Duration::from_millis(10);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            later.send(2).unwrap();
            tokio::time::sleep(Duration::from_millis(2)).await;
            later.send(3).unwrap();
        });
        let started = tokio::time::Instant::now();
        let group = gather(1, &mut rx, beside(3), wait).await;
        assert_eq!(group, vec![1, 2, 3]);
        assert_eq!(
            started.elapsed(),
            Duration::from_millis(4),
            "it waited past the last one"
        );
        drop(tx);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_job_holds_the_group_back_for_the_wait_only() {
        // Three run, the third for longer than the wait.
        assert_eq!(gathered(&[2], 3, false).await, (vec![1, 2], GROUP_WAIT));
    }

    #[tokio::test(start_paused = true)]
    async fn a_group_is_recorded_when_the_worker_stops() {
        assert_eq!(gathered(&[], 8, true).await, (vec![1], Duration::ZERO));
    }

    #[tokio::test(start_paused = true)]
    async fn a_group_holds_at_most_max_group() {
        let ready: Vec<u32> = (2..=(MAX_GROUP as u32 + 5)).collect();
        let (group, _) = gathered(&ready, MAX_GROUP + 5, false).await;
        assert_eq!(group.len(), MAX_GROUP);
    }
}
