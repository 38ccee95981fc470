//! The load generator: closed-loop callers, a measurement window, latency histograms.
//!
//! Each caller has one request outstanding at a time (like Telegram's webhook connections, or a
//! worker's Redis calls), so throughput and latency come from the same run. The first part of
//! every phase is a warm-up that is not counted: connections open, the allocator and Redis's
//! caches settle. A request counts if it completes inside the window; the phase stops at the end
//! of the window or after `max_requests`, whichever comes first, so the generator bounds itself
//! in time and count.
//!
//! HTTP goes through hyper's bare HTTP/1.1 client connection over one keep-alive TCP stream per
//! caller: no pool, no redirects, no TLS, so little client CPU is taken from the server being
//! measured on the same cores.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1;
use hyper::header::{CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;

/// How long a phase runs.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Not counted.
    pub warmup: Duration,
    /// Counted.
    pub measure: Duration,
    /// A phase never issues more requests than this (warm-up included).
    pub max_requests: u64,
}

/// The shared clock and budget of one phase's callers.
pub struct Window {
    warmup: Duration,
    begin: Instant,
    end: Instant,
    issued: AtomicU64,
    max_requests: u64,
}

impl Window {
    /// Opens a window that starts counting after the warm-up.
    pub fn start(timing: Timing) -> Arc<Window> {
        let now = Instant::now();
        let begin = now + timing.warmup;
        Arc::new(Window {
            warmup: timing.warmup,
            begin,
            end: begin + timing.measure,
            issued: AtomicU64::new(0),
            max_requests: timing.max_requests,
        })
    }

    /// The next request's sequence number (unique in the phase, from 0), or `None` when the
    /// phase is over.
    pub fn next(&self) -> Option<u64> {
        if Instant::now() >= self.end {
            return None;
        }
        let n = self.issued.fetch_add(1, Ordering::Relaxed);
        (n < self.max_requests).then_some(n)
    }

    /// When counting starts.
    pub fn begin(&self) -> Instant {
        self.begin
    }

    /// When counting stops (unless the request budget runs out first).
    pub fn end(&self) -> Instant {
        self.end
    }

    /// Records a request that was sent at `sent` and has just completed.
    pub fn record(&self, stats: &mut CallerStats, sent: Instant, ok: bool) {
        self.record_done(stats, sent, Instant::now(), ok);
    }

    /// Records a request sent at `sent` that completed at `done` (which another party may have
    /// observed, e.g. the Telegram simulator receiving the reply).
    pub fn record_done(&self, stats: &mut CallerStats, sent: Instant, done: Instant, ok: bool) {
        if done < self.begin || done >= self.end {
            return;
        }
        if ok {
            stats.ok += 1;
            let micros = done.duration_since(sent).as_micros();
            stats
                .latency
                .saturating_record(u64::try_from(micros).unwrap_or(u64::MAX));
        } else {
            stats.errors += 1;
        }
    }

    /// Sums the callers' figures. Call when every caller has stopped.
    pub fn summarise(&self, concurrency: usize, callers: Vec<CallerStats>) -> Tally {
        let stopped = Instant::now().min(self.end);
        let mut counts = CallerStats::new();
        for c in callers {
            counts.add(&c);
        }
        Tally {
            concurrency,
            slices: 1,
            warmup: self.warmup,
            measured: stopped.saturating_duration_since(self.begin),
            counts,
        }
    }
}

/// What one or more measured windows of the same phase counted; windows of a phase that runs
/// in several rounds (interleaved with the other phases) add up.
pub struct Tally {
    pub concurrency: usize,
    /// Windows added up.
    pub slices: u32,
    pub warmup: Duration,
    pub measured: Duration,
    pub counts: CallerStats,
}

impl Tally {
    /// Adds another window of the same phase.
    pub fn merge(&mut self, other: &Tally) {
        self.concurrency = self.concurrency.max(other.concurrency);
        self.slices += other.slices;
        self.warmup += other.warmup;
        self.measured += other.measured;
        self.counts.add(&other.counts);
    }

    /// Rates and latency quantiles.
    pub fn stats(&self) -> PhaseStats {
        let duration = self.measured.as_secs_f64();
        let h = &self.counts.latency;
        let ms = |micros: u64| micros as f64 / 1000.0;
        let q = |quantile: f64| {
            if h.is_empty() {
                0.0
            } else {
                ms(h.value_at_quantile(quantile))
            }
        };
        PhaseStats {
            concurrency: self.concurrency,
            rounds: self.slices,
            warmup_s: self.warmup.as_secs_f64(),
            duration_s: duration,
            ok: self.counts.ok,
            errors: self.counts.errors,
            per_s: if duration > 0.0 {
                self.counts.ok as f64 / duration
            } else {
                0.0
            },
            p50_ms: q(0.50),
            p90_ms: q(0.90),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            max_ms: ms(h.max()),
            mean_ms: h.mean() / 1000.0,
        }
    }
}

/// One caller's counts; merged at the end so callers never contend on a lock.
pub struct CallerStats {
    pub ok: u64,
    pub errors: u64,
    latency: Histogram<u32>,
}

impl CallerStats {
    fn add(&mut self, other: &CallerStats) {
        self.ok += other.ok;
        self.errors += other.errors;
        // Same bounds on both sides, and far fewer than 2^32 requests per bucket: cannot fail.
        let _ = self.latency.add(&other.latency);
    }

    pub fn new() -> Self {
        Self {
            ok: 0,
            errors: 0,
            // Microseconds, 1 µs to 10 s (longer saturates), three significant digits; 32-bit
            // counts keep 64 callers' histograms small enough not to crowd the caches of
            // the server being measured.
            latency: Histogram::new_with_bounds(1, 10_000_000, 3)
                .expect("constant histogram bounds are valid"),
        }
    }
}

impl Default for CallerStats {
    fn default() -> Self {
        Self::new()
    }
}

/// What one phase measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PhaseStats {
    /// Callers (connections, or tasks for Redis-only phases).
    pub concurrency: usize,
    /// Measured windows, interleaved with the other phases' (see `--rounds`).
    pub rounds: u32,
    /// Warm-ups, not counted, summed over the rounds.
    pub warmup_s: f64,
    /// The measured windows, summed over the rounds.
    pub duration_s: f64,
    /// Successful requests completed in the window.
    pub ok: u64,
    /// Failed requests (non-200, transport errors, unexpected outcomes) in the window.
    pub errors: u64,
    pub per_s: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
}

/// Where HTTP phases send their POSTs.
#[derive(Clone)]
pub struct HttpTarget {
    pub addr: SocketAddr,
    pub path: &'static str,
    /// Extra header (the webhook secret), sent with every request.
    pub header: Option<(&'static str, HeaderValue)>,
}

/// One keep-alive HTTP/1.1 connection.
pub(super) struct Conn {
    sender: http1::SendRequest<Full<Bytes>>,
    driver: tokio::task::JoinHandle<()>,
}

impl Conn {
    pub(super) async fn open(addr: SocketAddr) -> anyhow::Result<Conn> {
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .with_context(|| format!("connecting to {addr}"))?;
        stream.set_nodelay(true)?;
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .context("HTTP/1.1 handshake")?;
        let driver = tokio::spawn(async move {
            // Ends when the sender is dropped or the server closes; either is fine here.
            let _ = conn.await;
        });
        Ok(Conn { sender, driver })
    }

    /// Closes the connection and waits until it is closed, so that a server stopped right
    /// after does not find it open (and log it as cancelled).
    pub(super) async fn close(self) {
        drop(self.sender);
        let _ = self.driver.await;
    }

    pub(super) async fn post(&mut self, req: Request<Full<Bytes>>) -> anyhow::Result<StatusCode> {
        self.sender.ready().await?;
        let resp = self.sender.send_request(req).await?;
        let status = resp.status();
        // Read the (empty) body to the end so the connection can carry the next request.
        resp.into_body().collect().await?;
        Ok(status)
    }
}

/// Consecutive failures after which a caller gives up (the server is gone, not slow).
const MAX_CONSECUTIVE_FAILURES: u32 = 100;

/// POSTs `body(n)` for n = 0, 1, ... from `connections` keep-alive connections until `window`
/// closes; counts 200s.
pub async fn post_bodies(
    target: &HttpTarget,
    connections: usize,
    window: &Arc<Window>,
    body: Arc<dyn Fn(u64) -> Bytes + Send + Sync>,
) -> anyhow::Result<Tally> {
    let host = HeaderValue::from_str(&target.addr.to_string())?;
    // Connecting takes a few milliseconds of the warm-up.
    let mut conns = Vec::with_capacity(connections);
    for _ in 0..connections {
        conns.push(Conn::open(target.addr).await?);
    }
    let mut tasks = Vec::with_capacity(connections);
    for mut conn in conns {
        let window = window.clone();
        let target = target.clone();
        let host = host.clone();
        let body = body.clone();
        tasks.push(tokio::spawn(async move {
            let mut stats = CallerStats::new();
            let mut failures = 0;
            while let Some(n) = window.next() {
                let mut req = Request::new(Full::new(body(n)));
                *req.method_mut() = Method::POST;
                *req.uri_mut() = hyper::Uri::from_static(target.path);
                let headers = req.headers_mut();
                headers.insert(HOST, host.clone());
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                if let Some((name, value)) = &target.header {
                    headers.insert(*name, value.clone());
                }
                let sent = Instant::now();
                match conn.post(req).await {
                    Ok(status) => {
                        failures = 0;
                        window.record(&mut stats, sent, status == StatusCode::OK);
                    }
                    Err(e) => {
                        window.record(&mut stats, sent, false);
                        failures += 1;
                        if failures >= MAX_CONSECUTIVE_FAILURES {
                            tracing::warn!(error = %e, "a bench connection keeps failing; it stops");
                            break;
                        }
                        match Conn::open(target.addr).await {
                            Ok(c) => conn = c,
                            Err(e) => {
                                tracing::warn!(error = %e, "a bench connection cannot reconnect");
                                tokio::time::sleep(Duration::from_millis(10)).await;
                            }
                        }
                    }
                }
            }
            stats
        }));
    }
    let mut callers = Vec::with_capacity(connections);
    for task in tasks {
        callers.push(task.await.context("a bench connection panicked")?);
    }
    Ok(window.summarise(connections, callers))
}
