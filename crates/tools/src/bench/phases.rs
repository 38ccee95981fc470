//! The phases of `oncebot bench`, one function each, each measuring one window (a [`Slice`]).
//!
//! Every phase that writes to Redis uses update ids no other phase uses, so the phases can run
//! in any order on the same Redis. New phases (the worker drain, end to end) go here too.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio::sync::oneshot;
use warp::Filter as _;

use super::load::{self, CallerStats, HttpTarget, PhaseStats, Tally, Timing, Window};
use super::target::{CpuUse, Target};
use oncebot::ingress::Ingress;
use oncebot::ingress::webhook::SECRET_HEADER;
use oncebot::ledger::{Admission, Admitted};
use oncebot::servers;
use oncebot::telegram::types::Update;

/// One measured window of a phase: what it counted, what it did to the ledger, what it cost.
/// Windows of the same phase (one per round) merge into one [`Phase`].
pub struct Slice {
    tally: Tally,
    jobs_created: Option<u64>,
    cpu: Option<CpuUse>,
}

impl Slice {
    fn new(tally: Tally, jobs_created: Option<u64>, cpu: Option<CpuUse>) -> Slice {
        Slice {
            tally,
            jobs_created,
            cpu,
        }
    }

    /// Adds a later round of the same phase.
    pub fn merge(&mut self, other: Slice) {
        self.tally.merge(&other.tally);
        self.jobs_created = match (self.jobs_created, other.jobs_created) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.cpu = match (self.cpu, other.cpu) {
            (Some(a), Some(b)) => Some(CpuUse {
                redis_s: a.redis_s + b.redis_s,
                process_s: a.process_s + b.process_s,
            }),
            _ => None,
        };
    }

    /// The figures to report.
    pub fn finish(&self) -> Phase {
        let stats = self.tally.stats();
        let cpu = self.cpu.map(|c| CpuPerOp::new(c, stats.ok));
        Phase {
            stats,
            jobs_created: self.jobs_created,
            cpu,
        }
    }
}

/// A phase's figures plus what it did to the ledger and what it cost.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Phase {
    #[serde(flatten)]
    pub stats: PhaseStats,
    /// Jobs the phase created (warm-ups included; 0 expected for duplicates).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jobs_created: Option<u64>,
    /// CPU used during the measured windows, when it could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuPerOp>,
}

/// CPU time spent in the measured windows, in total and per successful request: where the
/// time goes, in a figure that other load on the machine does not change much.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CpuPerOp {
    /// Seconds of CPU of redis-server (`INFO cpu`, user + sys; the whole server).
    pub redis_s: f64,
    /// Seconds of CPU of this process: the load generator and the ingress together.
    pub process_s: f64,
    pub redis_us_per_op: f64,
    pub process_us_per_op: f64,
}

impl CpuPerOp {
    /// `cpu` spread over `ops` successful requests.
    pub fn new(cpu: CpuUse, ops: u64) -> CpuPerOp {
        let per_op = |s: f64| if ops > 0 { s * 1e6 / ops as f64 } else { 0.0 };
        CpuPerOp {
            redis_s: cpu.redis_s,
            process_s: cpu.process_s,
            redis_us_per_op: per_op(cpu.redis_s),
            process_us_per_op: per_op(cpu.process_s),
        }
    }
}

/// New updates through the webhook: HTTP → parse → decide → enqueue.lua → empty 200.
pub async fn admission(
    target: &mut Target,
    connections: usize,
    timing: Timing,
) -> anyhow::Result<Slice> {
    let base = target.reserve_update_ids(timing.max_requests);
    let updates = target.updates.clone();
    let before = target.jobs_created().await?;
    let window = Window::start(timing);
    let cpu = target.cpu_during(&window);
    let stats = load::post_bodies(
        &target.webhook,
        connections,
        &window,
        Arc::new(move |n| updates.body(n, base + n as i64)),
    )
    .await?;
    let after = target.jobs_created().await?;
    Ok(Slice::new(
        stats,
        Some(after.saturating_sub(before)),
        cpu.await.ok().flatten(),
    ))
}

/// How many distinct updates the duplicate phase delivers again and again.
const DUPLICATE_SET: u64 = 4096;

/// Redeliveries through the webhook: every update was admitted before, so the script only reads
/// the update_id's entry and the job's state.
pub async fn duplicate(
    target: &mut Target,
    connections: usize,
    timing: Timing,
) -> anyhow::Result<Slice> {
    let base = target.reserve_update_ids(DUPLICATE_SET);
    let updates = target.updates.clone();
    let seed = {
        let updates = updates.clone();
        Arc::new(move |n: u64| updates.body(n, base + n as i64))
    };
    let seeding = Timing {
        warmup: Duration::ZERO,
        measure: Duration::from_secs(120),
        max_requests: DUPLICATE_SET,
    };
    let seeded =
        load::post_bodies(&target.webhook, connections, &Window::start(seeding), seed).await?;
    if seeded.counts.ok != DUPLICATE_SET {
        anyhow::bail!(
            "seeding the duplicate phase: {} of {DUPLICATE_SET} updates were admitted",
            seeded.counts.ok
        );
    }
    let before = target.jobs_created().await?;
    let window = Window::start(timing);
    let cpu = target.cpu_during(&window);
    let stats = load::post_bodies(
        &target.webhook,
        connections,
        &window,
        Arc::new(move |n| {
            let n = n % DUPLICATE_SET;
            updates.body(n, base + n as i64)
        }),
    )
    .await?;
    let after = target.jobs_created().await?;
    Ok(Slice::new(
        stats,
        Some(after.saturating_sub(before)),
        cpu.await.ok().flatten(),
    ))
}

/// The admission script alone: `Ledger::admit` from `tasks` concurrent callers on one
/// multiplexed connection, with the admissions ingress builds for the same updates. No HTTP,
/// no JSON: the limit the webhook can approach.
pub async fn raw_evalsha(
    target: &mut Target,
    tasks: usize,
    timing: Timing,
) -> anyhow::Result<Slice> {
    let ingress = Ingress::new(&target.settings, target.ledger.clone());
    let updates = target.updates.clone();
    let mut templates = Vec::with_capacity(updates.variants());
    for n in 0..updates.variants() as u64 {
        let update: Update = serde_json::from_slice(&updates.body(n, 0))
            .context("the bench's own update does not parse")?;
        let admission = ingress.decide(&update).map_err(|why| {
            anyhow::anyhow!("the bench's own update is ignored: {}", why.as_str())
        })?;
        templates.push(admission);
    }
    let templates: Arc<[Admission]> = templates.into();
    let base = target.reserve_update_ids(timing.max_requests);
    let before = target.jobs_created().await?;
    let window = Window::start(timing);
    let cpu = target.cpu_during(&window);
    let mut handles = Vec::with_capacity(tasks);
    for _ in 0..tasks {
        let window = window.clone();
        let templates = templates.clone();
        let ledger = target.ledger.clone();
        handles.push(tokio::spawn(async move {
            let mut stats = CallerStats::new();
            let len = templates.len() as u64;
            while let Some(n) = window.next() {
                let mut admission = templates[(n % len) as usize].clone();
                admission.update_id = base + n as i64;
                admission.message_id = Some(1 + (n / len) as i64);
                let sent = Instant::now();
                let admitted = ledger.admit(&admission).await;
                window.record(
                    &mut stats,
                    sent,
                    matches!(admitted, Ok(Admitted::New { .. })),
                );
            }
            stats
        }));
    }
    let mut callers = Vec::with_capacity(tasks);
    for h in handles {
        callers.push(h.await.context("a bench task panicked")?);
    }
    let stats = window.summarise(tasks, callers);
    let after = target.jobs_created().await?;
    Ok(Slice::new(
        stats,
        Some(after.saturating_sub(before)),
        cpu.await.ok().flatten(),
    ))
}

/// A diagnostic: the same POSTs to a warp route that reads the body and answers an empty 200
/// without touching Redis. The ceiling of HTTP on this machine, with this client, in this
/// process; the webhook's distance to it is the cost of parsing, deciding and the script.
pub async fn http_floor(
    target: &Target,
    connections: usize,
    timing: Timing,
) -> anyhow::Result<Slice> {
    let route = warp::path!("telegram" / "webhook")
        .and(warp::post())
        .and(warp::header::optional::<String>(SECRET_HEADER))
        .and(warp::body::bytes())
        .map(|_secret: Option<String>, _body: bytes::Bytes| warp::reply());
    let listener = servers::bind(([127, 0, 0, 1], 0).into()).await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(
        warp::serve(route)
            .incoming(listener)
            .graceful(async move {
                let _ = stopped.await;
            })
            .run(),
    );
    let floor = HttpTarget {
        addr,
        ..target.webhook.clone()
    };
    let updates = target.updates.clone();
    let window = Window::start(timing);
    let cpu = target.cpu_during(&window);
    let stats = load::post_bodies(
        &floor,
        connections,
        &window,
        Arc::new(move |n| updates.body(n, n as i64)),
    )
    .await;
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(5), server).await;
    Ok(Slice::new(stats?, None, cpu.await.ok().flatten()))
}
