//! Metrics for operators: counters kept in this process, and queue gauges read from Redis at
//! scrape time, served as Prometheus/OpenMetrics text on `GET /metrics`.
//!
//! One process-wide registry (`METRICS`): each oncebot process reports what it did itself; the
//! queue gauges are the same for every process of a deployment (they come from Redis).

use std::sync::LazyLock;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::vocabulary::ErrorKind;

type Labels = Vec<(&'static str, String)>;
type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

/// Every metric oncebot exports.
pub struct Metrics {
    registry: Registry,
    /// oncebot_updates_total{outcome}: new, duplicate_update, duplicate_command, unauthorised,
    /// bad_request, ignored, replied, callback; not recorded (503, or read again when polling):
    /// writes_refused (Redis refuses writes), unavailable (Redis away).
    pub updates: Family<Labels, Counter>,
    /// oncebot_http_rejected_total{route, reason}: requests a door refused before reading
    /// them (`refusals`): route webhook or wake, reason secret, too_large or bad_request.
    http_rejected: Family<Labels, Counter>,
    /// oncebot_job_transitions_total{command, to}
    pub transitions: Family<Labels, Counter>,
    /// oncebot_job_duration_seconds{command, status}: one attempt, claim to outcome.
    pub job_duration: Histograms,
    /// oncebot_moviepilot_call_duration_seconds{call}
    pub mp_latency: Histograms,
    /// oncebot_moviepilot_errors_total{call, kind}: permanent, declined, credentials,
    /// transient, uncertain.
    pub mp_errors: Family<Labels, Counter>,
    /// oncebot_replies_total{result}: sent, retried, failed, thread_refused (a forum topic
    /// refused: sent to General), poster_refused (a reply's or a
    /// notification's poster Telegram refused, sent as text instead).
    pub replies: Family<Labels, Counter>,
    /// oncebot_telegram_429_total
    pub telegram_429: Counter,
    /// oncebot_jobs_left_for_newer_total{kind}: jobs-stream entries this worker left for a
    /// newer one, their kind unknown to this release (once per entry and process).
    jobs_left_for_newer: Family<Labels, Counter>,
    /// oncebot_stream_length{stream}: jobs, replies, callbacks.
    stream_length: Family<Labels, Gauge>,
    /// oncebot_stream_pending{stream}: delivered, not yet acknowledged.
    stream_pending: Family<Labels, Gauge>,
    /// oncebot_stream_oldest_pending_seconds{stream}
    oldest_pending: Family<Labels, Gauge<f64, AtomicU64>>,
    /// oncebot_jobs_needs_review: jobs waiting for a person. Alert on it.
    needs_review: Gauge,
    /// oncebot_jobs_retry_scheduled: jobs in retry_wait.
    retry_scheduled: Gauge,
    /// oncebot_moviepilot_credentials_refused: 1 while MoviePilot refuses this process's
    /// credentials (jobs wait in retry_wait). Alert on it: an operator must fix a setting.
    credentials_refused: Gauge,
    /// oncebot_moviepilot_unreachable: 1 while this process has not reached MoviePilot since it
    /// started (a wrong `moviepilot.url` looks like this: jobs wait, the webhook still works).
    unreachable: Gauge,
    /// oncebot_redis_writes_refused: 1 while this process finds Redis refusing writes (`OOM`,
    /// `MISCONF`; `redis_health`). Alert on it: nothing is admitted or recorded meanwhile.
    writes_refused: Gauge,
    /// oncebot_notify_forwarded_total: MoviePilot notifications the relay queued (once each,
    /// whatever the number of chats).
    pub notify_forwarded: Counter,
    /// oncebot_notify_collapsed_total: MoviePilot's own repeats within the duplicate window.
    pub notify_collapsed: Counter,
    /// oncebot_notify_unrouted_total: notifications whose type has no route and no default.
    pub notify_unrouted: Counter,
    /// oncebot_notify_skipped_total: rows beyond `notify.max_pages` after a long outage.
    pub notify_skipped: Counter,
    /// oncebot_notify_poll_errors_total{kind}: polls that failed (MoviePilot's error kind, or
    /// `redis`).
    pub notify_poll_errors: Family<Labels, Counter>,
    /// oncebot_notify_lag_seconds: since the relay's last successful poll (read from Redis at
    /// scrape time): the oldest a notification can be while not yet forwarded.
    notify_lag: Gauge<f64, AtomicU64>,
    /// oncebot_users_mapped{source}: allowed users this process maps, by the source that decides
    /// their identity (`setting`: telegram.users; `moviepilot`: MoviePilot's own mapping, where
    /// the setting does not map them).
    users_mapped: Family<Labels, Gauge>,
    /// oncebot_card_steps_total{outcome}: what card.lua did with the follower's steps
    /// (`changed`: a new state or text, its edit queued; `held`: a progress edit paced; `same`,
    /// `stale`, `closed`, `missing`); and `failed`: a poll that could not record them.
    card_steps: Family<Labels, Counter>,
}

/// A failed poll's `kind` label: MoviePilot's error kind, or `redis`.
fn poll_error_kind(kind: Option<ErrorKind>) -> &'static str {
    kind.map_or("redis", ErrorKind::as_str)
}

fn latency_histogram() -> Histogram {
    // 5 ms to about 40 s.
    Histogram::new(exponential_buckets(0.005, 2.0, 14))
}

/// The process's metrics.
pub static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

impl Metrics {
    fn new() -> Self {
        let mut m = Metrics {
            updates: Family::default(),
            http_rejected: Family::default(),
            transitions: Family::default(),
            job_duration: Family::new_with_constructor(latency_histogram),
            mp_latency: Family::new_with_constructor(latency_histogram),
            mp_errors: Family::default(),
            replies: Family::default(),
            telegram_429: Counter::default(),
            jobs_left_for_newer: Family::default(),
            stream_length: Family::default(),
            stream_pending: Family::default(),
            oldest_pending: Family::default(),
            needs_review: Gauge::default(),
            retry_scheduled: Gauge::default(),
            credentials_refused: Gauge::default(),
            unreachable: Gauge::default(),
            writes_refused: Gauge::default(),
            notify_forwarded: Counter::default(),
            notify_collapsed: Counter::default(),
            notify_unrouted: Counter::default(),
            notify_skipped: Counter::default(),
            notify_poll_errors: Family::default(),
            notify_lag: Gauge::default(),
            users_mapped: Family::default(),
            card_steps: Family::default(),
            registry: Registry::default(),
        };
        // Registered in this order, which is the order of the text on /metrics.
        let mut registry = Registry::with_prefix("oncebot");
        m.register_jobs(&mut registry);
        m.register_waiting(&mut registry);
        m.register_notify(&mut registry);
        m.register_users(&mut registry);
        m.register_cards(&mut registry);
        m.registry = registry;
        m
    }

    /// What happens to updates and jobs: admission, attempts, MoviePilot's calls, replies.
    fn register_jobs(&self, registry: &mut Registry) {
        registry.register(
            "updates",
            "Telegram updates by admission outcome",
            self.updates.clone(),
        );
        registry.register(
            "http_rejected",
            "Requests a door refused (a wrong secret, a body too large or malformed), by route and reason",
            self.http_rejected.clone(),
        );
        registry.register(
            "job_transitions",
            "Job state changes by command and new state",
            self.transitions.clone(),
        );
        registry.register(
            "job_duration_seconds",
            "One job attempt, claim to recorded outcome",
            self.job_duration.clone(),
        );
        registry.register(
            "moviepilot_call_duration_seconds",
            "MoviePilot HTTP calls by call",
            self.mp_latency.clone(),
        );
        registry.register(
            "moviepilot_errors",
            "MoviePilot call errors by call and kind (permanent, declined, credentials, transient, uncertain)",
            self.mp_errors.clone(),
        );
        registry.register(
            "replies",
            "Replies to Telegram: sent, retried (one per retry), failed",
            self.replies.clone(),
        );
        registry.register(
            "telegram_429",
            "429 Too Many Requests answers from the Bot API",
            self.telegram_429.clone(),
        );
        registry.register(
            "jobs_left_for_newer",
            "Jobs of a kind this release does not run, left for a newer worker, by kind",
            self.jobs_left_for_newer.clone(),
        );
    }

    /// Gauges of work waiting (streams, reviews, retries) and of MoviePilot's state.
    fn register_waiting(&self, registry: &mut Registry) {
        registry.register(
            "stream_length",
            "Entries in each stream",
            self.stream_length.clone(),
        );
        registry.register(
            "stream_pending",
            "Entries delivered to a consumer and not yet acknowledged",
            self.stream_pending.clone(),
        );
        registry.register(
            "stream_oldest_pending_seconds",
            "Age of the oldest unacknowledged entry (its idle time)",
            self.oldest_pending.clone(),
        );
        registry.register(
            "jobs_needs_review",
            "Jobs waiting for a person (needs_review)",
            self.needs_review.clone(),
        );
        registry.register(
            "jobs_retry_scheduled",
            "Jobs waiting for their retry (retry_wait)",
            self.retry_scheduled.clone(),
        );
        registry.register(
            "moviepilot_credentials_refused",
            "1 while MoviePilot refuses this process's credentials (jobs wait for an operator)",
            self.credentials_refused.clone(),
        );
        registry.register(
            "moviepilot_unreachable",
            "1 while this process has not reached MoviePilot since it started (jobs wait)",
            self.unreachable.clone(),
        );
        registry.register(
            "redis_writes_refused",
            "1 while this process finds Redis refusing writes (out of memory, or a failed save)",
            self.writes_refused.clone(),
        );
    }

    /// The notification relay.
    fn register_notify(&self, registry: &mut Registry) {
        registry.register(
            "notify_forwarded",
            "MoviePilot notifications forwarded by the relay (once each)",
            self.notify_forwarded.clone(),
        );
        registry.register(
            "notify_collapsed",
            "MoviePilot's repeated notifications collapsed within the duplicate window",
            self.notify_collapsed.clone(),
        );
        registry.register(
            "notify_unrouted",
            "MoviePilot notifications with no route and no default chat",
            self.notify_unrouted.clone(),
        );
        registry.register(
            "notify_skipped",
            "MoviePilot notifications skipped after an outage longer than notify.max_pages",
            self.notify_skipped.clone(),
        );
        // Every kind at 0 from the start, so a rate over the first failure shows it.
        let polls_fail_by = [
            ErrorKind::Transient,
            ErrorKind::Credentials,
            ErrorKind::Permanent,
            ErrorKind::Uncertain,
        ];
        for kind in polls_fail_by.map(Some).into_iter().chain([None]) {
            drop(
                self.notify_poll_errors
                    .get_or_create(&vec![("kind", poll_error_kind(kind).to_string())]),
            );
        }
        registry.register(
            "notify_poll_errors",
            "Polls of MoviePilot's message history that failed, by kind",
            self.notify_poll_errors.clone(),
        );
        registry.register(
            "notify_lag_seconds",
            "Seconds since the relay's last successful poll of MoviePilot's message history",
            self.notify_lag.clone(),
        );
    }

    /// Who the allowed users are, by source.
    fn register_users(&self, registry: &mut Registry) {
        for source in ["setting", "moviepilot"] {
            drop(
                self.users_mapped
                    .get_or_create(&vec![("source", source.to_string())]),
            );
        }
        registry.register(
            "users_mapped",
            "Allowed users this process maps, by the source that decides their identity",
            self.users_mapped.clone(),
        );
    }

    fn register_cards(&self, registry: &mut Registry) {
        registry.register(
            "card_steps",
            "Live card steps the follower recorded, by what card.lua did with them",
            self.card_steps.clone(),
        );
    }

    /// Counts one live card step by card.lua's outcome (or `failed`).
    pub fn card_step(&self, outcome: &str) {
        self.card_steps
            .get_or_create(&vec![("outcome", outcome.to_string())])
            .inc();
    }

    /// Counts a failed poll of the message history: MoviePilot's error kind, or `None` when
    /// Redis failed it.
    pub fn notify_poll_error(&self, kind: Option<ErrorKind>) {
        self.notify_poll_errors
            .get_or_create(&vec![("kind", poll_error_kind(kind).to_string())])
            .inc();
    }

    /// Sets the relay's lag (see `notify_lag`).
    pub fn set_notify_lag(&self, lag: Duration) {
        self.notify_lag.set(lag.as_secs_f64());
    }

    /// Whether MoviePilot refuses this process's credentials now (set by its client).
    pub fn moviepilot_credentials_refused(&self, refused: bool) {
        self.credentials_refused.set(i64::from(refused));
    }

    /// See [`Self::moviepilot_credentials_refused`]; read by `/readyz`.
    pub fn credentials_are_refused(&self) -> bool {
        self.credentials_refused.get() != 0
    }

    /// Sets `oncebot_users_mapped` (see `users_mapped`).
    pub fn set_users_mapped(&self, setting: usize, moviepilot: usize, granted: usize) {
        let sources = [
            ("setting", setting),
            ("moviepilot", moviepilot),
            ("granted", granted),
        ];
        for (source, n) in sources {
            self.users_mapped
                .get_or_create(&vec![("source", source.to_string())])
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// Sets `oncebot_redis_writes_refused` (see `writes_refused`).
    pub fn redis_writes_refused(&self, refused: bool) {
        self.writes_refused.set(i64::from(refused));
    }

    /// Whether this process is still waiting for its first connection to MoviePilot.
    pub fn moviepilot_unreachable(&self, unreachable: bool) {
        self.unreachable.set(i64::from(unreachable));
    }

    /// See [`Self::moviepilot_unreachable`]; read by `/readyz`.
    pub fn moviepilot_is_unreachable(&self) -> bool {
        self.unreachable.get() != 0
    }

    /// Counts an admission outcome.
    pub fn update(&self, outcome: &str) {
        self.updates
            .get_or_create(&vec![("outcome", outcome.to_string())])
            .inc();
    }

    /// Counts a request `route` refused for `reason` (`refusals::RefusalLog`).
    pub fn http_rejected(&self, route: &'static str, reason: &'static str) {
        self.http_rejected
            .get_or_create(&vec![("route", route.into()), ("reason", reason.into())])
            .inc();
    }

    /// Counts a jobs-stream entry left for a newer worker.
    pub fn job_left_for_newer(&self, kind: &str) {
        self.jobs_left_for_newer
            .get_or_create(&vec![("kind", kind.to_string())])
            .inc();
    }

    /// Counts a job entering `to`.
    pub fn transition(&self, command: &str, to: &str) {
        self.transitions
            .get_or_create(&vec![
                ("command", command.to_string()),
                ("to", to.to_string()),
            ])
            .inc();
    }

    /// Records one attempt's duration with its recorded status.
    pub fn job_finished(&self, command: &str, status: &str, took: Duration) {
        self.job_duration
            .get_or_create(&vec![
                ("command", command.to_string()),
                ("status", status.to_string()),
            ])
            .observe(took.as_secs_f64());
    }

    /// Records one MoviePilot call: its latency, and its error kind if it failed.
    pub fn moviepilot_call(&self, call: &str, took: Duration, error_kind: Option<ErrorKind>) {
        self.mp_latency
            .get_or_create(&vec![("call", call.to_string())])
            .observe(took.as_secs_f64());
        if let Some(kind) = error_kind {
            self.moviepilot_error(call, kind);
        }
    }

    /// Counts a MoviePilot answer whose HTTP status is an error (its latency was recorded with
    /// the call).
    pub fn moviepilot_error(&self, call: &str, kind: ErrorKind) {
        self.mp_errors
            .get_or_create(&vec![
                ("call", call.to_string()),
                ("kind", kind.as_str().to_string()),
            ])
            .inc();
    }

    /// Counts a reply outcome: sent, retried or failed.
    pub fn reply(&self, result: &str) {
        self.replies
            .get_or_create(&vec![("result", result.to_string())])
            .inc();
    }

    /// Sets one stream's gauges, read from Redis at scrape time by the caller (metrics knows
    /// no Redis: it is a leaf every module may count into).
    pub fn set_stream(&self, stream: &str, length: u64, pending: u64, oldest_pending: Duration) {
        let label = vec![("stream", stream.to_string())];
        self.stream_length.get_or_create(&label).set(length as i64);
        self.stream_pending
            .get_or_create(&label)
            .set(pending as i64);
        self.oldest_pending
            .get_or_create(&label)
            .set(oldest_pending.as_secs_f64());
    }

    /// Sets the sizes of the review set and the retry schedule.
    pub fn set_waiting(&self, needs_review: u64, retry_scheduled: u64) {
        self.needs_review.set(needs_review as i64);
        self.retry_scheduled.set(retry_scheduled as i64);
    }

    /// Everything as OpenMetrics text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}
