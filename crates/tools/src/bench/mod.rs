//! `oncebot bench`: figures for the real pipeline, measured in one run on one machine.
//!
//! Absolute numbers drift with the machine and its neighbours, so every figure comes with the
//! limit it should be compared to, measured in the same run: the webhook's admission rate next
//! to the raw rate of the same Lua script on the same Redis (`admission_vs_raw`), and next to
//! plain HTTP with no work behind it (`http_floor_per_s`).
//!
//! Phases (see `phases`), each a closed loop of `--connections` callers with a warm-up that is
//! not counted (see `load`). A full run splits each phase into rounds that interleave the
//! phases, since other processes on a shared machine come and go during a run:
//! - `raw_evalsha`: `Ledger::admit` directly, no HTTP;
//! - `admission`: new updates POSTed to the real webhook, counting empty 200s;
//! - `duplicate`: the same, every update a redelivery;
//! - `http_floor`: the same POSTs to a route that does nothing.
//!
//! The ingress runs in this process on 127.0.0.1 (see `target`); the bench's Redis is private
//! and without persistence unless `--redis-url` is given. Logs go to stderr, the report to
//! stdout.

mod idle;
mod instructions;
mod load;
mod phases;
mod pipeline;
mod recovery;
mod relay;
mod soak;
mod target;
mod updates;

use std::io::Write as _;
use std::time::Duration;

use serde::Serialize;

pub use load::PhaseStats;
pub use phases::{CpuPerOp, Phase};
pub use pipeline::{CommandCost, DeliveryPhase, KeyKind, Memory, WorkerPhase};
use target::Target;

/// The log filter while benchmarking: the ingress's info line per update would flood stderr
/// (and costs some 3-4 µs of CPU per update, measured on the 2-core dev machine). `RUST_LOG`
/// overrides it, e.g. to measure with production logging.
pub const LOG_FILTER: &str = "warn,oncebot::bench=info";

/// The bench's runtime threads when `runtime.worker_threads` is 0 and it starts its own Redis:
/// one per core but one, which that redis-server needs. On the 2-core development machine one
/// thread beside Redis beat two on every pipeline figure (admission about a third faster with
/// half the p99, the drain and e2e about a tenth); docs/benchmarks.md has the runs.
pub fn runtime_threads_beside_private_redis() -> usize {
    oncebot::config::cpu_cores().saturating_sub(1).max(1)
}

/// Callers per phase unless `--connections` says otherwise (Telegram opens up to 40 webhook
/// connections by default, 100 at most).
const DEFAULT_CONNECTIONS: u64 = 64;

/// The self-imposed bound on requests per measured window (one round of one phase).
const MAX_REQUESTS_PER_PHASE: u64 = 5_000_000;

/// Options of `oncebot bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// A short run (well under a minute): 3 s per phase instead of 10 s.
    #[arg(long)]
    pub quick: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Use this Redis instead of starting a private one (its data is not touched outside a
    /// fresh key prefix, whose keys are removed at the end).
    #[arg(long)]
    pub redis_url: Option<String>,
    /// `--redis-url` names one or more nodes of a Redis Cluster, comma-separated (the bench's
    /// ingress, worker and dispatcher then run with `redis.cluster`).
    #[arg(long, env = "ONCEBOT__REDIS__CLUSTER", requires = "redis_url")]
    pub redis_cluster: bool,
    /// Concurrent callers (HTTP connections, or Redis tasks) in every phase.
    #[arg(long, default_value_t = DEFAULT_CONNECTIONS, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub connections: u64,
    /// Split each phase's measured time into this many rounds that interleave the phases
    /// (default: 1 with --quick, 3 otherwise), so that load from other processes on the machine
    /// drifting during the run weighs on every phase alike.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub rounds: Option<u32>,
    /// Seconds each phase is measured in total (overrides --quick's and the full run's length; for
    /// tests).
    #[arg(long, hide = true, value_parser = parse_phase_secs)]
    pub phase_secs: Option<f64>,
    /// Only measure recovery from crashes instead: real `oncebot serve` processes SIGKILLed
    /// with work in flight, and the time until it is settled (see `recovery`).
    #[arg(long)]
    pub recovery: bool,
    /// Only measure the relay of MoviePilot's notifications instead: notifications per second
    /// through to the Bot API simulator, and its idle cost (see `relay`).
    #[arg(long, conflicts_with = "recovery")]
    pub relay: bool,
    /// Notifications written at once for `--relay`'s throughput.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub relay_notifications: u64,
    /// Seconds `--relay` watches the idle relay.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub relay_idle_secs: u64,
    /// Only measure an idle `serve` instead: the Redis commands it sends per second, per
    /// command, with the notification relay off and on (see `idle`).
    #[arg(long, conflicts_with_all = ["recovery", "relay"])]
    pub idle: bool,
    /// Seconds `--idle` counts each idle process's commands.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub idle_secs: u64,
    /// Kills per recovery scenario.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=200))]
    pub kills: u64,
    /// Restarts of a whole process in the recovery run, after which the groups must list only
    /// the live one.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub restarts: u64,
    /// How long the recovery run's slow job runs on its live worker, in seconds.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub slow_job_secs: u64,
    /// Jobs in the worker phase's backlog (default: 20000 with --quick, 50000 otherwise; for
    /// tests).
    #[arg(long, hide = true, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub backlog: Option<u64>,
    /// Only soak instead: a busy household's days replayed `--speed` times faster against one
    /// `oncebot serve` per role, with kills and MoviePilot outages; a line a minute, then the
    /// pass checks (see `soak`). Exits non-zero when a check fails.
    #[arg(long, conflicts_with_all = ["recovery", "relay", "idle"])]
    pub soak: bool,
    /// `--soak`: how many times faster than a real day (retentions and windows divided by it).
    #[arg(long, default_value_t = 20.0, value_parser = parse_speed)]
    pub speed: f64,
    /// `--soak`: how many minutes to run.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub minutes: u32,
    /// `--soak`: seconds in a soak minute (for tests: the suite's soak runs short minutes).
    #[arg(long, hide = true, default_value_t = 60.0, value_parser = parse_phase_secs)]
    pub minute_secs: f64,
    /// `--soak`: never kill this role (worker, dispatcher, ingress, notify), so that one
    /// process's RSS is followed over the whole run.
    #[arg(long, value_parser = ["worker", "dispatcher", "ingress", "notify"])]
    pub spare: Option<String>,
    /// Count instructions instead of time: run under `valgrind --tool=callgrind` with
    /// `--redis-url` a redis-server under callgrind too. Skips the admission phases and reports
    /// instructions per drained job and per e2e update of both processes (see `instructions`).
    #[arg(long, hide = true, requires = "redis_url")]
    pub callgrind: bool,
}

fn parse_speed(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (1.0..=100_000.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a speed between 1 and 100000")),
    }
}

fn parse_phase_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.05..=600.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds between 0.05 and 600"
        )),
    }
}

impl BenchArgs {
    fn rounds(&self) -> u32 {
        self.rounds.unwrap_or(if self.quick { 1 } else { 3 })
    }

    fn backlog(&self) -> u64 {
        self.backlog
            .unwrap_or(if self.quick { 20_000 } else { 50_000 })
    }

    fn timing(&self) -> load::Timing {
        let measure = match self.phase_secs {
            Some(s) => Duration::from_secs_f64(s),
            None if self.quick => Duration::from_secs(3),
            None => Duration::from_secs(10),
        };
        load::Timing {
            // Each round's window gets its own warm-up (see `measure`).
            warmup: Duration::ZERO,
            measure,
            max_requests: MAX_REQUESTS_PER_PHASE,
        }
    }
}

/// Everything one run measured; the `--json` output.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub quick: bool,
    pub connections: usize,
    /// Rounds the phases were interleaved in; each phase's window is split across them.
    pub rounds: u32,
    /// "private (no persistence)", or the URL given (password masked).
    pub redis: String,
    /// How the HTTP load is generated.
    pub client: &'static str,
    /// Threads of the async runtime the whole bench ran on: `runtime.worker_threads`, or, when
    /// that is 0 and the bench starts its own Redis, one per core but one (left to that Redis).
    /// The Bot API simulator and the load generator share them with the pipeline; the
    /// pipeline phases' MoviePilot simulator has a thread of its own.
    pub runtime_threads: usize,
    pub admission_per_s: f64,
    pub ack_p50_ms: f64,
    pub ack_p99_ms: f64,
    pub duplicate_per_s: f64,
    pub raw_evalsha_per_s: f64,
    pub http_floor_per_s: f64,
    pub admission_vs_raw: f64,
    pub duplicate_vs_raw: f64,
    pub admission_vs_http_floor: f64,
    /// Redis `used_memory` before the first phase and after the last, bytes.
    pub redis_used_memory_before: u64,
    pub redis_used_memory_after: u64,
    /// Jobs created during the run (all phases, warm-ups included).
    pub jobs_created: u64,
    /// Jobs per second drained by one worker (a backlog of read-only jobs against the
    /// MoviePilot simulator, replies queued, no dispatcher).
    pub worker_per_s: f64,
    /// Updates per second from webhook POST to `sendMessage` at the Bot API simulator, with
    /// ingress, worker and dispatcher running, 64 callers each waiting for its reply.
    pub e2e_per_s: f64,
    pub e2e_p50_ms: f64,
    pub e2e_p99_ms: f64,
    /// Redis `used_memory` growth per finished, delivered job (see `pipeline.memory`).
    pub redis_bytes_per_job: f64,
    /// Telegram's rate limits in the e2e phase.
    pub telegram_limits: &'static str,
    /// What the worker and e2e phases changed in the settings for speed.
    pub pipeline_tuning: &'static str,
    pub phases: Phases,
    pub pipeline: PipelineReport,
}

/// The worker, delivery and e2e phases, on a Redis of their own.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PipelineReport {
    pub worker: WorkerPhase,
    pub delivery: DeliveryPhase,
    pub memory: Memory,
    pub e2e: PhaseStats,
    /// CPU of redis-server and of this process per e2e update (the process hosts the ingress,
    /// worker, dispatcher, both simulators and the callers).
    pub e2e_cpu: Option<CpuPerOp>,
    /// Redis commands during the e2e window, per update (`INFO commandstats`), most time first.
    pub e2e_redis_commands: Vec<pipeline::CommandCost>,
    /// With `--callgrind`: instructions per e2e update of this process and of redis-server.
    pub e2e_instructions: Option<instructions::PerJob>,
}

/// Per-phase figures, in the order they run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Phases {
    pub raw_evalsha: Phase,
    pub admission: Phase,
    pub duplicate: Phase,
    pub http_floor: Phase,
}

/// Runs every phase and prints the report.
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    if args.recovery {
        return run_recovery(&args).await;
    }
    if args.relay {
        return run_relay(&args).await;
    }
    if args.soak {
        return run_soak(&args).await;
    }
    if args.idle {
        return run_idle(&args).await;
    }
    let connections = args.connections as usize;
    let timing = args.timing();
    tracing::info!(
        connections,
        phase_secs = timing.measure.as_secs_f64(),
        rounds = args.rounds(),
        "starting the bench"
    );
    let mut report = if args.callgrind {
        callgrind_report(&args, connections)
    } else {
        let mut target = Target::start(args.redis_url.as_deref(), args.redis_cluster).await?;
        let measured = measure(&mut target, &args, connections, timing).await;
        let stopped = target.stop().await;
        let report = measured?;
        stopped?;
        report
    };
    let mut pipeline = pipeline::Pipeline::start(
        args.redis_url.as_deref(),
        args.redis_cluster,
        args.callgrind,
    )
    .await?;
    let measured = measure_pipeline(&mut pipeline, &args, timing).await;
    let stopped = pipeline.stop().await;
    let p = measured?;
    stopped?;
    report.worker_per_s = p.worker.per_s;
    report.e2e_per_s = p.e2e.per_s;
    report.e2e_p50_ms = p.e2e.p50_ms;
    report.e2e_p99_ms = p.e2e.p99_ms;
    report.redis_bytes_per_job = p.memory.bytes_per_job;
    report.pipeline = p;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write_table(&mut out, &report)?;
    }
    out.flush()?;
    Ok(())
}

/// The report's start under callgrind, where only the pipeline's instructions are counted: no
/// admission phases.
fn callgrind_report(args: &BenchArgs, connections: usize) -> Report {
    Report {
        quick: args.quick,
        connections,
        rounds: args.rounds(),
        redis: "external, under callgrind".into(),
        runtime_threads: tokio::runtime::Handle::current().metrics().num_workers(),
        telegram_limits: pipeline::TELEGRAM_LIMITS,
        pipeline_tuning: pipeline::TUNING,
        ..Report::default()
    }
}

/// `--soak`: the compressed month; an error (a non-zero exit) when a check failed.
async fn run_soak(args: &BenchArgs) -> anyhow::Result<()> {
    let pass = soak::run(&soak::Options {
        speed: args.speed,
        minutes: args.minutes,
        minute_secs: args.minute_secs,
        spare: args.spare.clone(),
        json: args.json,
    })
    .await?;
    anyhow::ensure!(pass, "the soak failed a check (FAIL above)");
    Ok(())
}

/// `--relay`: the relay's throughput and idle cost, then the report.
async fn run_relay(args: &BenchArgs) -> anyhow::Result<()> {
    let r = relay::run(
        args.relay_notifications as usize,
        Duration::from_secs(args.relay_idle_secs),
    )
    .await?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &r)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "relay: {} notifications written at once, delivered to the Bot API simulator at {:.0}/s",
            r.notifications, r.per_s
        )?;
        writeln!(
            out,
            "relay idle (poll every {} s, {:.0} s watched): {:.1} MoviePilot calls/min, {:.0} Redis commands/min",
            r.poll_interval_secs, r.idle_secs, r.moviepilot_calls_per_min, r.redis_commands_per_min
        )?;
    }
    out.flush()?;
    Ok(())
}

/// `--idle`: an idle `serve`'s Redis commands, relay off and on, then the report.
async fn run_idle(args: &BenchArgs) -> anyhow::Result<()> {
    let r = idle::run(Duration::from_secs(args.idle_secs)).await?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &r)?;
        writeln!(out)?;
        out.flush()?;
        return Ok(());
    }
    writeln!(
        out,
        "idle serve, {:.0} s counted ({})",
        r.window_secs, r.settings
    )?;
    for (name, f) in [("relay off", &r.relay_off), ("relay on", &r.relay_on)] {
        writeln!(
            out,
            "{name} ({}): {:.2} Redis commands/s, {:.2} of them script calls; {:.2} % of a core",
            f.roles.join(", "),
            f.commands_per_s,
            f.script_calls_per_s,
            f.cpu_percent
        )?;
        for (command, per_s) in &f.per_command {
            writeln!(out, "  {command:<20} {per_s:>6.2}/s")?;
        }
    }
    out.flush()?;
    Ok(())
}

/// `--recovery`: the crash scenarios, then the report.
async fn run_recovery(args: &BenchArgs) -> anyhow::Result<()> {
    let report = recovery::run(
        args.kills as usize,
        Duration::from_secs(args.slow_job_secs),
        args.restarts as usize,
    )
    .await?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        let row = |out: &mut dyn std::io::Write, name: &str, r: &recovery::Recoveries| {
            writeln!(
                out,
                "{name:<28} p50 {:>7.0} ms   max {:>7.0} ms   ({} kills, {} in flight each)",
                r.p50_ms, r.max_ms, r.runs, report.in_flight_per_kill
            )
        };
        writeln!(out, "recovery after SIGKILL ({})", report.settings)?;
        row(
            &mut out,
            "worker killed, peer alive",
            &report.kill_with_peer,
        )?;
        row(&mut out, "only worker restarted", &report.restart)?;
        row(&mut out, "dispatcher restarted", &report.dispatcher_restart)?;
        writeln!(
            out,
            "{:<28} {} (sent again, at least once)",
            "replies resent", report.resent
        )?;
        writeln!(
            out,
            "{:<28} {} after {:.0} s with a 3 s liveness expiry",
            "slow job on a live worker",
            if report.slow_job_kept {
                "kept"
            } else {
                "TAKEN"
            },
            report.slow_job_secs
        )?;
        writeln!(
            out,
            "{:<28} {} other consumers left in the groups after {} restarts ({:.0} ms after the last)",
            "consumers after restarts",
            report.consumers_left_after_restarts,
            report.restarts,
            report.tidy_after_ms
        )?;
        writeln!(
            out,
            "{:<28} {:.2} % of a core, {:.1} Redis commands/s",
            "idle serve (all roles)", report.idle_cpu_percent, report.idle_redis_commands_per_s
        )?;
    }
    out.flush()?;
    Ok(())
}

async fn measure(
    target: &mut Target,
    args: &BenchArgs,
    connections: usize,
    timing: load::Timing,
) -> anyhow::Result<Report> {
    let memory_before = target.used_memory().await?;
    let jobs_before = target.jobs_created().await?;
    let rounds = args.rounds();
    let [raw_evalsha, admission, duplicate, http_floor] =
        measure_rounds(target, connections, rounds, timing).await?;
    let memory_after = target.used_memory().await?;
    let jobs_after = target.jobs_created().await?;
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    Ok(Report {
        quick: args.quick,
        connections,
        rounds,
        redis: target.redis_label(),
        client: "hyper 1 HTTP/1.1, one keep-alive connection per caller, in this process",
        runtime_threads: tokio::runtime::Handle::current().metrics().num_workers(),
        admission_per_s: admission.stats.per_s,
        ack_p50_ms: admission.stats.p50_ms,
        ack_p99_ms: admission.stats.p99_ms,
        duplicate_per_s: duplicate.stats.per_s,
        raw_evalsha_per_s: raw_evalsha.stats.per_s,
        http_floor_per_s: http_floor.stats.per_s,
        admission_vs_raw: ratio(admission.stats.per_s, raw_evalsha.stats.per_s),
        duplicate_vs_raw: ratio(duplicate.stats.per_s, raw_evalsha.stats.per_s),
        admission_vs_http_floor: ratio(admission.stats.per_s, http_floor.stats.per_s),
        redis_used_memory_before: memory_before,
        redis_used_memory_after: memory_after,
        jobs_created: jobs_after.saturating_sub(jobs_before),
        telegram_limits: pipeline::TELEGRAM_LIMITS,
        pipeline_tuning: pipeline::TUNING,
        phases: Phases {
            raw_evalsha,
            admission,
            duplicate,
            http_floor,
        },
        // The pipeline's figures are filled in by `run` once its phases ran.
        ..Report::default()
    })
}

/// The four admission phases, each measured in `rounds` slices of the window and merged, in
/// [`PhaseKind::ALL`]'s order.
async fn measure_rounds(
    target: &mut Target,
    connections: usize,
    rounds: u32,
    timing: load::Timing,
) -> anyhow::Result<[Phase; PhaseKind::ALL.len()]> {
    let slice = load::Timing {
        measure: timing.measure / rounds,
        warmup: (timing.measure / rounds / 5).min(Duration::from_secs(1)),
        ..timing
    };
    let mut merged: [Option<phases::Slice>; PhaseKind::ALL.len()] = Default::default();
    for round in 1..=rounds {
        // Raw first in each round, on the emptier Redis: if anything, that flatters the limit,
        // not the webhook. Rounds interleave the phases, so that a neighbour's load on this
        // machine weighs on all of them alike rather than on one phase.
        for (kind, merged) in PhaseKind::ALL.into_iter().zip(&mut merged) {
            tracing::info!(round, rounds, phase = kind.name(), "measuring");
            let measured = match kind {
                PhaseKind::RawEvalsha => phases::raw_evalsha(target, connections, slice).await?,
                PhaseKind::Admission => phases::admission(target, connections, slice).await?,
                PhaseKind::Duplicate => phases::duplicate(target, connections, slice).await?,
                PhaseKind::HttpFloor => phases::http_floor(target, connections, slice).await?,
            };
            match merged {
                Some(m) => m.merge(measured),
                None => *merged = Some(measured),
            }
        }
    }
    // `rounds` is at least 1 (clap's range), so every phase ran.
    let phases = merged.map(|m| {
        m.map(|s| s.finish())
            .expect("every phase ran at least once")
    });
    for (kind, phase) in PhaseKind::ALL.into_iter().zip(&phases) {
        log_phase(kind.name(), phase);
    }
    let [_, _, duplicate, _] = &phases;
    if duplicate.jobs_created != Some(0) {
        tracing::warn!(
            jobs = ?duplicate.jobs_created,
            "redeliveries created jobs: the transport layer let duplicates through"
        );
    }
    Ok(phases)
}

/// The worker drain, the delivery of its replies, and the e2e phase.
async fn measure_pipeline(
    pipeline: &mut pipeline::Pipeline,
    args: &BenchArgs,
    timing: load::Timing,
) -> anyhow::Result<PipelineReport> {
    let backlog = args.backlog();
    tracing::info!(jobs = backlog, "measuring the worker drain");
    let (worker, delivery, memory) = pipeline.worker_and_memory(backlog).await?;
    tracing::info!(
        per_s = worker.per_s.round(),
        delivered_per_s = delivery.per_s.round(),
        bytes_per_job = memory.bytes_per_job.round(),
        "worker phase done"
    );
    tracing::info!("measuring end to end");
    let (e2e, e2e_cpu, e2e_redis_commands, e2e_instructions) = pipeline
        .e2e(load::Timing {
            warmup: (timing.measure / 5).min(Duration::from_secs(1)),
            ..timing
        })
        .await?;
    let e2e_cpu = e2e_cpu.map(|c| CpuPerOp::new(c, e2e.ok));
    log_phase(
        "e2e",
        &Phase {
            stats: e2e.clone(),
            jobs_created: None,
            cpu: e2e_cpu.clone(),
        },
    );
    Ok(PipelineReport {
        worker,
        delivery,
        memory,
        e2e,
        e2e_cpu,
        e2e_redis_commands,
        e2e_instructions,
    })
}

/// The phases, in the order each round runs them.
#[derive(Debug, Clone, Copy)]
enum PhaseKind {
    RawEvalsha,
    Admission,
    Duplicate,
    HttpFloor,
}

impl PhaseKind {
    const ALL: [PhaseKind; 4] = [
        PhaseKind::RawEvalsha,
        PhaseKind::Admission,
        PhaseKind::Duplicate,
        PhaseKind::HttpFloor,
    ];

    fn name(self) -> &'static str {
        match self {
            PhaseKind::RawEvalsha => "raw_evalsha",
            PhaseKind::Admission => "admission",
            PhaseKind::Duplicate => "duplicate",
            PhaseKind::HttpFloor => "http_floor",
        }
    }
}

fn log_phase(name: &str, phase: &Phase) {
    let s = &phase.stats;
    tracing::info!(
        phase = name,
        per_s = s.per_s.round(),
        p50_ms = s.p50_ms,
        p99_ms = s.p99_ms,
        ok = s.ok,
        errors = s.errors,
        "phase done"
    );
}

fn write_table(out: &mut impl std::io::Write, r: &Report) -> std::io::Result<()> {
    write_phases(out, r)?;
    writeln!(out)?;
    writeln!(
        out,
        "admission / raw EVALSHA  {:.2}  (target at least 0.6)",
        r.admission_vs_raw
    )?;
    writeln!(
        out,
        "ack p99                  {:.2} ms  (target under 5 ms)",
        r.ack_p99_ms
    )?;
    writeln!(out, "duplicate / raw EVALSHA  {:.2}", r.duplicate_vs_raw)?;
    writeln!(
        out,
        "admission / HTTP floor   {:.2}",
        r.admission_vs_http_floor
    )?;
    writeln!(
        out,
        "Redis used_memory        {:.1} MiB before, {:.1} MiB after; {} jobs created",
        r.redis_used_memory_before as f64 / 1048576.0,
        r.redis_used_memory_after as f64 / 1048576.0,
        r.jobs_created
    )?;
    writeln!(out, "client                   {}", r.client)?;
    write_pipeline(out, r)
}

/// The title, then a row for each admission phase.
fn write_phases(out: &mut impl std::io::Write, r: &Report) -> std::io::Result<()> {
    writeln!(
        out,
        "oncebot bench{}: {} callers per phase, {} round(s), Redis {}",
        if r.quick { " --quick" } else { "" },
        r.connections,
        r.rounds,
        r.redis
    )?;
    writeln!(
        out,
        "{:<12} {:>9} {:>7} {:>7} {:>8} {:>7} {:>9} {:>6} {:>8} {:>9} {:>10}",
        "phase",
        "per_s",
        "p50_ms",
        "p99_ms",
        "p99.9_ms",
        "max_ms",
        "ok",
        "errors",
        "window_s",
        "redis_us",
        "process_us"
    )?;
    let p = &r.phases;
    for (name, phase) in [
        ("raw_evalsha", &p.raw_evalsha),
        ("admission", &p.admission),
        ("duplicate", &p.duplicate),
        ("http_floor", &p.http_floor),
    ] {
        let s = &phase.stats;
        let cpu = |f: fn(&CpuPerOp) -> f64| phase.cpu.as_ref().map_or(f64::NAN, f);
        writeln!(
            out,
            "{:<12} {:>9.0} {:>7.3} {:>7.3} {:>8.3} {:>7.2} {:>9} {:>6} {:>8.2} {:>9.1} {:>10.1}",
            name,
            s.per_s,
            s.p50_ms,
            s.p99_ms,
            s.p999_ms,
            s.max_ms,
            s.ok,
            s.errors,
            s.duration_s,
            cpu(|c| c.redis_us_per_op),
            cpu(|c| c.process_us_per_op),
        )?;
    }
    writeln!(
        out,
        "(redis_us, process_us: CPU microseconds per request of redis-server and of this \
         process, load generator included)"
    )?;
    Ok(())
}

/// The worker drain, delivery, end to end and memory figures, and the settings they ran with.
fn write_pipeline(out: &mut impl std::io::Write, r: &Report) -> std::io::Result<()> {
    writeln!(out)?;
    let p = &r.pipeline;
    writeln!(
        out,
        "worker drain             {:.0} jobs/s ({} jobs in {:.2} s; CPU per job: redis {:.1} µs, \
         this process {:.1} µs; Redis round trips per job {:.2})",
        r.worker_per_s,
        p.worker.jobs,
        p.worker.duration_s,
        p.worker.redis_us_per_job,
        p.worker.process_us_per_job,
        p.worker.redis_reads_per_job
    )?;
    writeln!(
        out,
        "delivery                 {:.0} replies/s to the Bot API simulator",
        p.delivery.per_s
    )?;
    writeln!(
        out,
        "end to end               {:.0} updates/s, p50 {:.2} ms, p99 {:.2} ms ({} callers; CPU per \
         update: redis {:.1} µs, this process {:.1} µs)",
        r.e2e_per_s,
        r.e2e_p50_ms,
        r.e2e_p99_ms,
        p.e2e.concurrency,
        p.e2e_cpu.as_ref().map_or(f64::NAN, |c| c.redis_us_per_op),
        p.e2e_cpu.as_ref().map_or(f64::NAN, |c| c.process_us_per_op)
    )?;
    writeln!(
        out,
        "Redis per finished job   {:.0} bytes (target at most 1024); {:.0} once the buttons' \
         tokens expire; by kind:",
        r.redis_bytes_per_job, p.memory.bytes_per_job_after_buttons_expire
    )?;
    for (kind, k) in &p.memory.keys {
        writeln!(
            out,
            "  {kind:<8} {:>8} keys {:>8.1} bytes per job",
            k.count, k.bytes_per_job
        )?;
    }
    writeln!(out, "Telegram limits          {}", r.telegram_limits)?;
    writeln!(out, "pipeline settings        {}", r.pipeline_tuning)?;
    writeln!(
        out,
        "runtime threads          {} (runtime.worker_threads; shared with the Bot API simulator; the MoviePilot simulator has a thread of its own)",
        r.runtime_threads
    )?;
    Ok(())
}
