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

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::Worker;
use crate::ledger::{Attempt, Completed, Completions, Outcome, Taken, Taker};

/// Most outcomes one complete.lua call records: a bigger group would hold Redis (and every
/// other client's command) for longer than a few milliseconds.
const MAX_GROUP: usize = 64;

/// Outcomes recorded between two trims of the jobs stream. A trim costs Redis an XPENDING and
/// an XTRIM, and while entries are pending it removes whole stream nodes only (100 entries by
/// default), so per group it would mostly remove nothing.
const TRIM_EVERY: usize = 48;

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
    Result<Completed, String>,
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
            // The outcomes that finish in the same turn of the runtime join this group.
            tokio::task::yield_now().await;
            let mut members = vec![first];
            while members.len() < MAX_GROUP
                && let Ok(m) = ready.try_recv()
            {
                members.push(m);
            }
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
        let slots: usize = members
            .iter()
            .map(|m| m.permit.as_ref().map_or(0, |p| p.num_permits()))
            .sum();
        // Every few dozen outcomes, and whenever this group holds every slot in use (nothing
        // else of this worker runs or is being claimed), so that a worker going idle leaves
        // the stream trimmed: empty, once no other worker has an entry pending.
        *untrimmed += members.len();
        let in_use = self
            .cfg
            .concurrency
            .saturating_sub(self.permits.available_permits());
        let trim = *untrimmed >= TRIM_EVERY || in_use <= slots;
        if trim {
            *untrimmed = 0;
        }
        let taker = Taker {
            consumer: &self.consumer,
            count: if self.may_take(reading) { slots } else { 0 },
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
                    let answer = answer.map_err(|e| e.to_string());
                    let _ = member.answer.send((answer, member.outcome, None));
                }
                if let Some(permits) = permits {
                    self.start_taken(taken, permits);
                }
            }
            Err(e) => {
                let e = e.to_string();
                for m in members {
                    let _ = m.answer.send((Err(e.clone()), m.outcome, m.permit));
                }
            }
        }
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
        Result<Completed, String>,
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
            return (Err("the committer stopped".into()), None, None);
        }
        match answered.await {
            Ok((answer, outcome, permit)) => (answer, Some(outcome), permit),
            Err(_) => (Err("the committer stopped".into()), None, None),
        }
    }
}
