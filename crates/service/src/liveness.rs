//! A consumer process's liveness, shared by the worker and the dispatcher: a heartbeat that
//! keeps its liveness key alive, the reaper that takes dead consumers' entries at once, and
//! the rule that a process which cannot vouch for its own key stops claiming.
//!
//! Why separate from the lease: a lease (an entry's idle time) must outlast the slowest job,
//! or a live worker loses a long resource search; a liveness key only has to outlast one
//! heartbeat and one slow Redis call, so a process killed outright is known dead in seconds.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::ledger::{ConsumerRole, Ledger, Reaped};
use crate::shutdown::sleep_or_stop;

/// Most entries one reap takes.
const REAP_BATCH: usize = 100;

/// Every this many reaps, one also sweeps the consumers an older release left (XINFO CONSUMERS
/// of every stream), which need not be quick.
const SWEEP_EVERY: u32 = 60;

/// One process's liveness in one consumer group.
pub(crate) struct Liveness {
    ledger: Ledger,
    role: ConsumerRole,
    consumer: String,
    interval: Duration,
    ttl: Duration,
    /// `redis.command_timeout_ms`: the longest a claim may take to land.
    command_timeout: Duration,
    /// How long a consumer left by a release without liveness must be idle to be removed.
    forget_after: Duration,
    /// When the last beat that Redis took was sent: the key lives until at least then + ttl.
    last_beat: Mutex<Option<Instant>>,
    /// Reaps so far, for [`SWEEP_EVERY`].
    reaps: std::sync::atomic::AtomicU32,
}

impl Liveness {
    pub(crate) fn new(
        ledger: Ledger,
        role: ConsumerRole,
        consumer: &str,
        interval: Duration,
        ttl: Duration,
        command_timeout: Duration,
        reclaim_idle: Duration,
    ) -> Arc<Self> {
        Arc::new(Liveness {
            ledger,
            role,
            consumer: consumer.to_string(),
            interval,
            ttl,
            command_timeout,
            forget_after: reclaim_idle.max(Duration::from_secs(60)),
            last_beat: Mutex::new(None),
            reaps: std::sync::atomic::AtomicU32::new(0),
        })
    }

    fn lock_last_beat(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        // A poisoned lock only means a panic while storing an Instant.
        self.last_beat.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether this process may claim now: its key lives at least as long as a claim sent now
    /// can take to land. False before the first beat and while beats fail.
    pub(crate) fn may_claim(&self) -> bool {
        self.lock_last_beat()
            .is_some_and(|sent| sent.elapsed() + self.command_timeout < self.ttl)
    }

    /// One heartbeat; true if Redis took it.
    async fn beat(&self) -> bool {
        let sent = Instant::now();
        match self.ledger.beat(self.role, &self.consumer, self.ttl).await {
            Ok(()) => {
                *self.lock_last_beat() = Some(sent);
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, consumer = %self.consumer, "renewing the liveness key failed; claiming stops until it works");
                false
            }
        }
    }

    /// Beats until Redis takes one (the key must exist before the first read), then takes what
    /// dead predecessors left. False if stopped first.
    pub(crate) async fn start(&self, stop: &CancellationToken) -> Option<Reaped> {
        while !self.beat().await {
            if sleep_or_stop(self.interval, stop).await {
                return None;
            }
        }
        Some(self.reap().await)
    }

    /// Takes the entries of consumers whose liveness expired, and tidies the group.
    pub(crate) async fn reap(&self) -> Reaped {
        if !self.may_claim() {
            return Reaped::default();
        }
        let n = self
            .reaps
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let sweep = if n.is_multiple_of(SWEEP_EVERY) {
            self.forget_after
        } else {
            Duration::ZERO
        };
        match self
            .ledger
            .reap(self.role, &self.consumer, REAP_BATCH, sweep)
            .await
        {
            Ok(reaped) => {
                if reaped.removed > 0 {
                    tracing::info!(
                        removed = reaped.removed,
                        "removed stopped consumers from the group"
                    );
                }
                if !reaped.taken.is_empty() {
                    tracing::warn!(
                        entries = reaped.taken.len(),
                        "took the entries of a consumer whose liveness expired"
                    );
                }
                reaped
            }
            Err(e) => {
                tracing::warn!(error = %e, "taking dead consumers' entries failed");
                Reaped::default()
            }
        }
    }

    /// Beats every interval and reaps twice as often until `stop`; what a reap takes goes to
    /// `take`. A dead consumer is found at most half an interval after its key expired.
    pub(crate) async fn run<F, Fut>(self: Arc<Self>, stop: CancellationToken, take: F)
    where
        F: Fn(Reaped) -> Fut,
        Fut: Future<Output = ()>,
    {
        let tick = self.interval / 2;
        let mut next = Instant::now() + tick;
        let mut beat_now = false;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            if sleep_or_stop(wait, &stop).await {
                return;
            }
            next += tick;
            if beat_now {
                self.beat().await;
            }
            beat_now = !beat_now;
            let reaped = self.reap().await;
            if !reaped.taken.is_empty() {
                take(reaped).await;
            }
        }
    }

    /// A graceful stop: the key goes, so whatever is still pending is taken at once by the
    /// others; with nothing pending the consumer leaves the group.
    pub(crate) async fn retire(&self) {
        match self.ledger.retire(self.role, &self.consumer).await {
            Ok(0) => tracing::debug!(consumer = %self.consumer, "left the consumer group"),
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
