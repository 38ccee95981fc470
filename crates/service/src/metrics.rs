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

type Labels = Vec<(&'static str, String)>;
type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

/// Every metric oncebot exports.
pub struct Metrics {
    registry: Registry,
    /// oncebot_updates_total{outcome}: new, duplicate_update, duplicate_command, unauthorised,
    /// bad_request, ignored, replied, callback.
    pub updates: Family<Labels, Counter>,
    /// oncebot_job_transitions_total{command, to}
    pub transitions: Family<Labels, Counter>,
    /// oncebot_job_duration_seconds{command, status}: one attempt, claim to outcome.
    pub job_duration: Histograms,
    /// oncebot_moviepilot_call_duration_seconds{call}
    pub mp_latency: Histograms,
    /// oncebot_moviepilot_errors_total{call, kind}: permanent, declined, credentials,
    /// transient, uncertain.
    pub mp_errors: Family<Labels, Counter>,
    /// oncebot_replies_total{result}: sent, retried, failed, poster_refused (a notification's
    /// poster Telegram refused, sent as text instead).
    pub replies: Family<Labels, Counter>,
    /// oncebot_telegram_429_total
    pub telegram_429: Counter,
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
}

fn latency_histogram() -> Histogram {
    // 5 ms to about 40 s.
    Histogram::new(exponential_buckets(0.005, 2.0, 14))
}

/// The process's metrics.
pub static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

impl Metrics {
    fn new() -> Self {
        let mut registry = Registry::with_prefix("oncebot");
        let m = Metrics {
            updates: Family::default(),
            transitions: Family::default(),
            job_duration: Family::new_with_constructor(latency_histogram),
            mp_latency: Family::new_with_constructor(latency_histogram),
            mp_errors: Family::default(),
            replies: Family::default(),
            telegram_429: Counter::default(),
            stream_length: Family::default(),
            stream_pending: Family::default(),
            oldest_pending: Family::default(),
            needs_review: Gauge::default(),
            retry_scheduled: Gauge::default(),
            credentials_refused: Gauge::default(),
            registry: Registry::default(),
        };
        registry.register(
            "updates",
            "Telegram updates by admission outcome",
            m.updates.clone(),
        );
        registry.register(
            "job_transitions",
            "Job state changes by command and new state",
            m.transitions.clone(),
        );
        registry.register(
            "job_duration_seconds",
            "One job attempt, claim to recorded outcome",
            m.job_duration.clone(),
        );
        registry.register(
            "moviepilot_call_duration_seconds",
            "MoviePilot HTTP calls by call",
            m.mp_latency.clone(),
        );
        registry.register(
            "moviepilot_errors",
            "MoviePilot call errors by call and kind (permanent, declined, credentials, transient, uncertain)",
            m.mp_errors.clone(),
        );
        registry.register(
            "replies",
            "Replies to Telegram: sent, retried (one per retry), failed",
            m.replies.clone(),
        );
        registry.register(
            "telegram_429",
            "429 Too Many Requests answers from the Bot API",
            m.telegram_429.clone(),
        );
        registry.register(
            "stream_length",
            "Entries in each stream",
            m.stream_length.clone(),
        );
        registry.register(
            "stream_pending",
            "Entries delivered to a consumer and not yet acknowledged",
            m.stream_pending.clone(),
        );
        registry.register(
            "stream_oldest_pending_seconds",
            "Age of the oldest unacknowledged entry (its idle time)",
            m.oldest_pending.clone(),
        );
        registry.register(
            "jobs_needs_review",
            "Jobs waiting for a person (needs_review)",
            m.needs_review.clone(),
        );
        registry.register(
            "jobs_retry_scheduled",
            "Jobs waiting for their retry (retry_wait)",
            m.retry_scheduled.clone(),
        );
        registry.register(
            "moviepilot_credentials_refused",
            "1 while MoviePilot refuses this process's credentials (jobs wait for an operator)",
            m.credentials_refused.clone(),
        );
        Metrics { registry, ..m }
    }

    /// Whether MoviePilot refuses this process's credentials now (set by its client).
    pub fn moviepilot_credentials_refused(&self, refused: bool) {
        self.credentials_refused.set(i64::from(refused));
    }

    /// See [`Self::moviepilot_credentials_refused`]; read by `/readyz`.
    pub fn credentials_are_refused(&self) -> bool {
        self.credentials_refused.get() != 0
    }

    /// Counts an admission outcome.
    pub fn update(&self, outcome: &str) {
        self.updates
            .get_or_create(&vec![("outcome", outcome.to_string())])
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
    pub fn moviepilot_call(&self, call: &str, took: Duration, error_kind: Option<&str>) {
        self.mp_latency
            .get_or_create(&vec![("call", call.to_string())])
            .observe(took.as_secs_f64());
        if let Some(kind) = error_kind {
            self.mp_errors
                .get_or_create(&vec![
                    ("call", call.to_string()),
                    ("kind", kind.to_string()),
                ])
                .inc();
        }
    }

    /// Counts a MoviePilot answer whose HTTP status is an error (its latency was recorded with
    /// the call).
    pub fn moviepilot_error(&self, call: &str, kind: &str) {
        self.mp_errors
            .get_or_create(&vec![
                ("call", call.to_string()),
                ("kind", kind.to_string()),
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
