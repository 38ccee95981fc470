//! A consumer process's liveness, shared by its worker and its dispatcher: one heartbeat that
//! keeps the process's liveness key alive and, in the same call (liveness.lua), takes dead
//! consumers' entries at once and promotes due retries; and the rule that a process which
//! cannot vouch for its own key stops claiming.
//!
//! Why separate from the lease: a lease (an entry's idle time) must outlast the slowest job,
//! or a live worker loses a long resource search; a liveness key only has to outlast one
//! heartbeat and one slow Redis call, so a process killed outright is known dead in seconds.
//!
//! Why one per process: a process is alive or dead as a whole, so its worker and dispatcher
//! share one consumer name and one key, and one call a heartbeat serves both (issue 27: an idle
//! process's Redis commands). With both roles, the shorter of the two heartbeat intervals and
//! of the two expiries applies to both; each still renews at least as often as its setting
//! says, and a dead process is found within the expiry its settings give or sooner.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::ledger::{Beat, ConsumerRole, Ledger, Reaped};
use crate::redis_health::WriteHealth;
use crate::shutdown::sleep_or_stop;

/// Most entries one heartbeat takes from dead consumers.
const REAP_BATCH: usize = 100;

/// Most due retries one heartbeat promotes.
const PROMOTE_BATCH: u32 = 100;

/// Every this many beats, one also sweeps the consumers an older release left (XINFO CONSUMERS
/// of every stream), which need not be quick.
const SWEEP_EVERY: u32 = 60;

/// Where a role's share of what a heartbeat took goes.
type Taken = mpsc::UnboundedSender<Reaped>;

/// The roles that joined, and whether the next beat must list the process in their groups.
#[derive(Default)]
struct Members {
    worker: Option<Taken>,
    dispatcher: Option<Taken>,
    list: bool,
}

impl Members {
    fn roles(&self) -> Vec<ConsumerRole> {
        let mut roles = Vec::with_capacity(2);
        if self.worker.is_some() {
            roles.push(ConsumerRole::Worker);
        }
        if self.dispatcher.is_some() {
            roles.push(ConsumerRole::Dispatcher);
        }
        roles
    }

    fn slot(&mut self, role: ConsumerRole) -> &mut Option<Taken> {
        match role {
            ConsumerRole::Worker => &mut self.worker,
            ConsumerRole::Dispatcher => &mut self.dispatcher,
        }
    }
}

/// One process's liveness in the consumer groups of its roles.
pub(crate) struct Liveness {
    ledger: Ledger,
    consumer: String,
    interval: Duration,
    ttl: Duration,
    /// `redis.command_timeout_ms`: the longest a claim may take to land.
    command_timeout: Duration,
    /// How long a consumer left by a release without liveness must be idle to be removed.
    forget_after: Duration,
    /// When the last beat that Redis took was sent: the key lives until at least then + ttl.
    last_beat: Mutex<Option<Instant>>,
    /// Beats so far, for [`SWEEP_EVERY`].
    beats: AtomicU32,
    members: Mutex<Members>,
    /// Held for a whole beat and a whole retire: a beat still taking a role's entries when that
    /// role retires would leave them pending under a consumer no list names.
    one_at_a_time: tokio::sync::Mutex<()>,
    /// Whether the heartbeat loop runs (started by the first role to join).
    running: AtomicBool,
    /// The process's registration, written as its key's value by every beat
    /// (`versions::Registration`); set by `app` before a role joins.
    registration: Mutex<String>,
    /// The process's view of Redis's writes: when it takes them again after refusing them the
    /// key (expired meanwhile) is renewed at once, before another process's heartbeat finds it
    /// gone and takes this one's entries.
    writes: std::sync::OnceLock<WriteHealth>,
}

impl Liveness {
    /// The liveness of a process running a worker and/or a dispatcher, as `settings` say:
    /// the worker's `consumer_name` (or a unique one) in both groups, the shorter heartbeat
    /// interval and expiry of the roles it runs.
    pub(crate) fn for_process(
        settings: &Settings,
        ledger: Ledger,
        worker: bool,
        dispatcher: bool,
    ) -> Arc<Self> {
        let (w, d) = (&settings.worker, &settings.dispatcher);
        let consumer = if w.consumer_name.is_empty() {
            default_consumer_name()
        } else {
            w.consumer_name.clone()
        };
        let ms = Duration::from_millis;
        let pick = |of_worker: u64, of_dispatcher: u64, shorter: bool| {
            let runs = [(worker, of_worker), (dispatcher, of_dispatcher)];
            let values = runs.iter().filter(|(runs, _)| *runs).map(|(_, v)| *v);
            let value = if shorter { values.min() } else { values.max() };
            ms(value.unwrap_or(of_worker))
        };
        Arc::new(Liveness {
            ledger,
            consumer,
            interval: pick(w.heartbeat_interval_ms, d.heartbeat_interval_ms, true),
            ttl: pick(w.liveness_ttl_ms, d.liveness_ttl_ms, true),
            command_timeout: ms(settings.redis.command_timeout_ms),
            forget_after: pick(w.reclaim_idle_ms, d.reclaim_idle_ms, false)
                .max(Duration::from_secs(60)),
            last_beat: Mutex::new(None),
            beats: AtomicU32::new(0),
            members: Mutex::default(),
            one_at_a_time: tokio::sync::Mutex::new(()),
            registration: Mutex::new(String::new()),
            running: AtomicBool::new(false),
            writes: std::sync::OnceLock::new(),
        })
    }

    /// Beats at once whenever `health` sees Redis take writes again (`redis_health`).
    pub(crate) fn renew_when_writes_return(&self, health: WriteHealth) {
        let _ = self.writes.set(health);
    }

    /// The process's consumer name, the same in every group.
    pub(crate) fn consumer(&self) -> &str {
        &self.consumer
    }

    /// What every beat from now on writes as the key's value: the process's registration
    /// (`versions::Registration`'s JSON), unless one is set already and `replace` is false (a
    /// worker made without `app` registers itself; `app`'s, naming every role, wins).
    pub(crate) fn register(&self, registration: String, replace: bool) {
        let mut current = self.registration.lock().unwrap_or_else(|p| p.into_inner());
        if replace || current.is_empty() {
            *current = registration;
        }
    }

    fn lock_last_beat(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        // A poisoned lock only means a panic while storing an Instant.
        self.last_beat.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_members(&self) -> std::sync::MutexGuard<'_, Members> {
        // As above: plain fields, still consistent after a panic elsewhere.
        self.members.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether this process may claim now: its key lives at least as long as a claim sent now
    /// can take to land. False before the first beat and while beats fail.
    pub(crate) fn may_claim(&self) -> bool {
        self.lock_last_beat()
            .is_some_and(|sent| sent.elapsed() + self.command_timeout < self.ttl)
    }

    /// `role` starts: beats until Redis takes one that lists the process in its group (the
    /// key must exist before the first read), then hands back what heartbeats take for this
    /// role, the first beat's included. None if stopped first.
    pub(crate) async fn join(
        self: &Arc<Self>,
        role: ConsumerRole,
        stop: &CancellationToken,
    ) -> Option<mpsc::UnboundedReceiver<Reaped>> {
        let (tx, rx) = mpsc::unbounded_channel();
        {
            let mut members = self.lock_members();
            *members.slot(role) = Some(tx);
            members.list = true;
        }
        while !self.beat().await {
            if sleep_or_stop(self.interval, stop).await {
                return None;
            }
        }
        if !self.running.swap(true, Ordering::SeqCst) {
            tokio::spawn(self.clone().run(stop.clone()));
        }
        Some(rx)
    }

    /// One heartbeat for every role that joined; true if Redis took it. What it took from dead
    /// consumers goes to the role of its group.
    async fn beat(&self) -> bool {
        let _turn = self.one_at_a_time.lock().await;
        let (roles, list) = {
            let mut members = self.lock_members();
            (members.roles(), std::mem::take(&mut members.list))
        };
        if roles.is_empty() {
            return true;
        }
        let n = self.beats.fetch_add(1, Ordering::Relaxed);
        let registration = self
            .registration
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let beat = Beat {
            registration: &registration,
            consumer: &self.consumer,
            ttl: self.ttl,
            list,
            take: REAP_BATCH,
            forget_after: if n.is_multiple_of(SWEEP_EVERY) {
                self.forget_after
            } else {
                Duration::ZERO
            },
            promote: if roles.contains(&ConsumerRole::Worker) {
                PROMOTE_BATCH
            } else {
                0
            },
        };
        let sent = Instant::now();
        match self.ledger.beat(&roles, &beat).await {
            Ok(beaten) => {
                *self.lock_last_beat() = Some(sent);
                if let Some(health) = self.writes.get() {
                    // A beat is a write: the watcher need not probe while beats go through.
                    health.wrote();
                }
                if beaten.promoted > 0 {
                    tracing::debug!(
                        jobs = beaten.promoted,
                        "due retries back on the jobs stream"
                    );
                }
                self.hand_out(beaten.reaped);
                true
            }
            Err(e) => {
                // The next beat lists the process again, in case a reaper removed it meanwhile.
                self.lock_members().list = true;
                crate::log_unless_refused!(e, warn, error = %e, consumer = %self.consumer, "renewing the liveness key failed; claiming stops until it works");
                false
            }
        }
    }

    /// Gives each role its share of what a beat took.
    fn hand_out(&self, reaped: Reaped) {
        if reaped.removed > 0 {
            tracing::info!(
                removed = reaped.removed,
                "removed stopped consumers from the group"
            );
        }
        if reaped.jobs.is_empty() && reaped.lanes.is_empty() {
            return;
        }
        tracing::warn!(
            entries = reaped.jobs.len() + reaped.lanes.len(),
            "took the entries of a consumer whose liveness expired"
        );
        let members = self.lock_members();
        let shares = [
            (&members.worker, reaped.jobs, Vec::new()),
            (&members.dispatcher, Vec::new(), reaped.lanes),
        ];
        for (to, jobs, lanes) in shares {
            if jobs.is_empty() && lanes.is_empty() {
                continue;
            }
            // Taken only for a group whose role joined, so its receiver is there until it
            // retires; after that the entries stay pending, ours, until the key goes.
            if let Some(to) = to {
                let _ = to.send(Reaped {
                    removed: 0,
                    jobs,
                    lanes,
                });
            }
        }
    }

    /// Beats every interval until `stop`. A dead consumer is found at most one interval after
    /// its key expired.
    async fn run(self: Arc<Self>, stop: CancellationToken) {
        let mut next = Instant::now() + self.interval;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            let returned = async {
                match self.writes.get() {
                    Some(health) => health.accepted_again().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                stopped = sleep_or_stop(wait, &stop) => {
                    if stopped {
                        return;
                    }
                    next += self.interval;
                }
                () = returned => next = Instant::now() + self.interval,
            }
            self.beat().await;
        }
    }

    /// A graceful stop of `role`: it leaves its group when nothing is pending there. The key
    /// goes with the process's last role, so whatever is still pending is taken at once by
    /// the others (until then it lives while the heartbeat runs, and then expires by itself).
    pub(crate) async fn retire(&self, role: ConsumerRole) {
        let _turn = self.one_at_a_time.lock().await;
        let last = {
            let mut members = self.lock_members();
            *members.slot(role) = None;
            members.roles().is_empty()
        };
        match self.ledger.retire(role, &self.consumer, last).await {
            Ok(0) => tracing::debug!(consumer = %self.consumer, ?role, "left the consumer group"),
            Ok(left) => tracing::warn!(
                consumer = %self.consumer,
                entries = left,
                "stopping with entries pending; the other processes take them at once"
            ),
            Err(e) => {
                tracing::warn!(error = %e, "could not remove the liveness key; it expires by itself")
            }
        }
    }
}

/// Hands what the heartbeat takes from dead consumers (`taken`, from [`Liveness::join`]) to
/// `take`: what is there already before returning, so that a role starts with its dead
/// predecessors' entries, then the rest in a task until `stop`.
pub(crate) async fn take_over<F, Fut>(
    mut taken: mpsc::UnboundedReceiver<Reaped>,
    stop: CancellationToken,
    take: F,
) -> tokio::task::JoinHandle<()>
where
    F: Fn(Reaped) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    while let Ok(left) = taken.try_recv() {
        take(left).await;
    }
    tokio::spawn(async move {
        while let Some(reaped) = tokio::select! {
            r = taken.recv() => r,
            () = stop.cancelled() => None,
        } {
            take(reaped).await;
        }
    })
}
/// `<hostname>-<pid>-<random>`: unique per process, so a restarted process is a new consumer and
/// its predecessor's entries are reclaimed by idle time, not mistaken for its own.
pub fn default_consumer_name() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "oncebot".into());
    format!(
        "{host}-{}-{:04x}",
        std::process::id(),
        rand::random::<u16>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumer_names_differ_between_processes_and_calls() {
        let a = default_consumer_name();
        let b = default_consumer_name();
        assert!(a.contains(&std::process::id().to_string()));
        // Two random suffixes collide 1 time in 65536; try again once to keep this honest.
        assert!(a != b || default_consumer_name() != a);
    }
}
