//! The bench's second half: the whole pipeline, workers and dispatcher included, against the
//! simulated MoviePilot and Bot API (the ones the demo and the tests use), on a Redis of its
//! own so that its memory figures are not mixed with the admission phases' millions of jobs.
//!
//! - `worker`: a backlog of read-only jobs (`/search <title>`, admitted directly with
//!   `Ledger::admit`) drained by one in-process worker; replies go to the reply stream, no
//!   dispatcher runs. Timed from the worker's start until the jobs stream is empty and every
//!   reply is queued.
//! - delivery: the dispatcher then sends the backlog's replies to the Bot API simulator, and
//!   Redis's memory growth over the whole life of those jobs, divided by their number, is
//!   `redis_bytes_per_job`.
//! - `e2e`: ingress, worker and dispatcher running together; callers POST an update to the
//!   webhook and wait for its reply to reach the simulator; latency is the simulator's arrival
//!   time of the `sendMessage` minus the moment the POST started.
//!
//! Settings tuned for throughput, and said in the report: worker and dispatcher concurrency 512,
//! `progress_after_ms = 0` (no "working on it" message), and Telegram's rate limits lifted (the
//! simulator has none): `per_chat_interval_ms = 0`, `group_interval_ms = 0`,
//! `global_per_second = 1000000`.

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::Serialize;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request, StatusCode};

use super::instructions::{self, Counters};
use super::load::{CallerStats, Conn, PhaseStats, Timing, Window};
use super::target::{
    CpuUse, at_window_edges, cpu_during, delete_matching, delete_prefix, info, process_cpu,
    redis_cpu, redis_reads,
};
use crate::redis_server::{Persistence, RedisServer};
use crate::rig::{OncebotEnv, wait};
use crate::sim::moviepilot::{MoviePilotSim, SimOptions};
use crate::sim::telegram::{
    SIM_BOT_USERNAME, SimOptions as TgSimOptions, TelegramSim, text_update,
};
use oncebot::app::{self, Running, ServeOptions};
use oncebot::config::Settings;
use oncebot::ingress::Ingress;
use oncebot::ingress::webhook::SECRET_HEADER;
use oncebot::ledger::{Admission, Admitted, Ledger};
use oncebot::moviepilot::MoviePilot;
use oncebot::telegram::types::Update;
use oncebot::worker::Worker;

/// Jobs run at once by the bench's worker, and replies sent at once by its dispatcher. A backlog
/// drains fastest with many jobs in flight: their Redis calls share round trips (0.06 reads per
/// job at 512, 0.25 at 64) and the MoviePilot calls overlap. Measured on 2 cores: 64 gave
/// 10k jobs/s, 256 gave 12k, 512 and 1024 12.5k (CPU-bound from there).
pub const CONCURRENCY: usize = 512;
/// Tasks admitting the worker phase's backlog (not timed).
const ADMITTERS: usize = 64;
/// Callers of the e2e phase: each POSTs an update and waits for its reply before the next.
pub const E2E_CALLERS: usize = 64;
/// Chats the pipeline's users write from (each its own private chat), so that per-chat order
/// (one job, one reply at a time per chat) does not serialise the load.
const CHATS: i64 = 1024;
const FIRST_CHAT: i64 = 7_200_000_001;
/// What the users search for: some titles are in the simulator's catalogue (a reply with
/// Subscribe buttons, whose tokens stay in Redis), most are not (a short "nothing found").
const TITLES: [&str; 8] = [
    "三体",
    "Dune",
    "The Expanse",
    "流浪地球2",
    "Oppenheimer",
    "狂飙",
    "Arrival",
    "繁花",
];
/// Every wait of the pipeline phases gives up after this.
const DEADLINE: Duration = Duration::from_secs(120);

/// What the settings were changed to for speed, for the report.
pub const TUNING: &str = "worker.concurrency=512, worker.progress_after_ms=0 (no progress \
    message), dispatcher.concurrency=512, worker/dispatcher read_block_ms=100; e2e: 64 callers";
/// Telegram's limits in the bench, for the report.
pub const TELEGRAM_LIMITS: &str = "lifted for the simulator: dispatcher.per_chat_interval_ms=0, \
    group_interval_ms=0, global_per_second=1000000 (defaults 1000 ms, 3000 ms, 30/s)";

/// The worker drain's figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WorkerPhase {
    pub jobs: u64,
    pub duration_s: f64,
    pub per_s: f64,
    /// CPU per job of redis-server and of this process (worker and MoviePilot simulator).
    pub redis_us_per_job: f64,
    pub process_us_per_job: f64,
    /// Seconds to admit the backlog (Ledger::admit, 64 tasks), not part of the drain.
    pub admit_s: f64,
    /// Socket reads redis-server made during the drain, per job: its round trips. Each is a
    /// wake-up and a syscall on both sides, so batching commands shows here first.
    pub redis_reads_per_job: f64,
    /// Redis commands during the drain (`INFO commandstats`, the whole server), per job:
    /// where Redis's share of the time goes. Most expensive first.
    pub redis_commands: Vec<CommandCost>,
    /// With `--callgrind`: instructions per drained job of this process and of redis-server.
    pub instructions_per_job: Option<instructions::PerJob>,
}

/// One Redis command's share of a phase, per job.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CommandCost {
    pub command: String,
    pub calls_per_job: f64,
    /// Microseconds inside Redis per job (Redis's own accounting; a script's time includes the
    /// commands it calls, which are also listed on their own).
    pub us_per_job: f64,
}

/// The dispatcher sending the drained backlog's replies, with nothing else running.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DeliveryPhase {
    pub replies: u64,
    pub duration_s: f64,
    pub per_s: f64,
    /// Redis commands per reply from the roles' start until the replies stream is empty
    /// (`INFO commandstats`, the whole server): the dispatcher's half of a job's Redis cost,
    /// with the roles' start-up (script loads, first heartbeats) spread over the replies.
    pub redis_commands: Vec<CommandCost>,
    /// With `--callgrind`: instructions per delivered reply over the same window.
    pub instructions_per_reply: Option<instructions::PerJob>,
}

/// Redis memory left behind by finished jobs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Memory {
    /// `used_memory` growth from before the backlog was admitted to after its replies went
    /// out, per job: everything a finished, delivered job leaves behind.
    pub bytes_per_job: f64,
    /// The same, measured after the drain and before delivery (replies still queued).
    pub bytes_per_job_before_delivery: f64,
    /// The same once the buttons' tokens are gone (measured by deleting them, as their TTL,
    /// `telegram.confirm_ttl_secs`, would 10 minutes later): what a job costs for the rest of
    /// its retention.
    pub bytes_per_job_after_buttons_expire: f64,
    /// Keys under the pipeline's prefix after delivery, by kind (`job`, `update`, `reply`,
    /// `token`, ...): how many, and their size as `MEMORY USAGE` reports it (sampled).
    pub keys: BTreeMap<String, KeyKind>,
}

#[derive(Debug, Clone, Serialize)]
pub struct KeyKind {
    pub count: u64,
    /// `MEMORY USAGE` of a sample of these keys, averaged, times `count`.
    pub bytes: u64,
    pub bytes_per_job: f64,
}

/// Starts a simulator on a thread of its own with a single-threaded runtime, as the real
/// service runs in a process of its own: answering the pipeline does not take turns with the
/// pipeline on its runtime threads (one, beside a private Redis on 2 cores). The thread ends
/// when the returned sender is dropped. (Measured for the Bot API simulator too: no gain in
/// e2e, so it stays on the pipeline's runtime.)
async fn on_own_thread<T, F, Fut>(name: &str, start: F) -> anyhow::Result<(T, oneshot::Sender<()>)>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = anyhow::Result<T>>,
{
    let (started_tx, started) = oneshot::channel();
    let (stop, stopped) = oneshot::channel::<()>();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            let runtime = match runtime {
                Ok(r) => r,
                Err(e) => {
                    let _ = started_tx.send(Err(anyhow::Error::from(e)));
                    return;
                }
            };
            runtime.block_on(async move {
                let _ = started_tx.send(start().await);
                let _ = stopped.await;
            });
        })
        .with_context(|| format!("starting the thread {name}"))?;
    let sim = started
        .await
        .with_context(|| format!("the thread {name} ended before its simulator started"))??;
    Ok((sim, stop))
}

/// Under callgrind everything runs some 50 times slower: a heartbeat late by more than the
/// liveness expiry would have the worker's own entries reaped and run twice, and a Redis call
/// may take longer than the usual timeout.
const SLOW: [(&str, &str); 5] = [
    ("ONCEBOT__REDIS__COMMAND_TIMEOUT_MS", "20000"),
    ("ONCEBOT__WORKER__LIVENESS_TTL_MS", "120000"),
    ("ONCEBOT__WORKER__RECLAIM_IDLE_MS", "600000"),
    ("ONCEBOT__DISPATCHER__LIVENESS_TTL_MS", "120000"),
    ("ONCEBOT__DISPATCHER__RECLAIM_IDLE_MS", "600000"),
];

/// A private Redis for the pipeline, or the one at `redis_url` under a fresh prefix: the
/// server (if private), its URL and the key prefix.
async fn pipeline_redis(
    redis_url: Option<&str>,
) -> anyhow::Result<(Option<RedisServer>, String, String)> {
    Ok(match redis_url {
        Some(url) => (
            None,
            url.to_string(),
            format!("oncebot-bench-pipeline-{:016x}", rand::random::<u64>()),
        ),
        None => {
            let server = tokio::task::spawn_blocking(|| RedisServer::start(Persistence::None))
                .await
                .context("starting redis-server for the pipeline")??;
            let url = server.url();
            (Some(server), url, "oncebot-bench".to_string())
        }
    })
}

/// The pipeline's settings against the simulators: `CHATS` allowed users, `CONCURRENCY` jobs
/// and sends at a time, no pacing and short blocking reads.
fn pipeline_env(
    url: &str,
    tg: &TelegramSim,
    mp: &MoviePilotSim,
    prefix: String,
    cluster: bool,
    secret: &str,
) -> OncebotEnv {
    let users = (0..CHATS)
        .map(|c| (FIRST_CHAT + c).to_string())
        .collect::<Vec<_>>()
        .join(",");
    let concurrency = CONCURRENCY.to_string();
    OncebotEnv::new(url).telegram(tg).moviepilot(mp).set_all([
        ("ONCEBOT__REDIS__KEY_PREFIX", prefix),
        ("ONCEBOT__REDIS__CLUSTER", cluster.to_string()),
        ("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", secret.to_string()),
        ("ONCEBOT__TELEGRAM__ALLOWED_USERS", users),
        ("ONCEBOT__TELEGRAM__BOT_USERNAME", SIM_BOT_USERNAME.into()),
        ("ONCEBOT__WORKER__CONCURRENCY", concurrency.clone()),
        ("ONCEBOT__WORKER__PROGRESS_AFTER_MS", "0".into()),
        ("ONCEBOT__WORKER__READ_BLOCK_MS", "100".into()),
        ("ONCEBOT__WORKER__SHUTDOWN_GRACE_SECS", "2".into()),
        ("ONCEBOT__DISPATCHER__CONCURRENCY", concurrency),
        ("ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS", "0".into()),
        ("ONCEBOT__DISPATCHER__GROUP_INTERVAL_MS", "0".into()),
        ("ONCEBOT__DISPATCHER__GLOBAL_PER_SECOND", "1000000".into()),
        ("ONCEBOT__DISPATCHER__READ_BLOCK_MS", "100".into()),
        ("ONCEBOT__DISPATCHER__SET_COMMANDS", "false".into()),
    ])
}

/// One admission per title, decided by the ingress as a `/search` from the first chat: the
/// backlog's jobs are copies of them.
fn admission_templates(settings: &Settings, ledger: &Ledger) -> anyhow::Result<Vec<Admission>> {
    let ingress = Ingress::new(settings, ledger.clone());
    let mut templates = Vec::with_capacity(TITLES.len());
    for (i, title) in TITLES.iter().enumerate() {
        let update: Update = serde_json::from_value(update_json(
            FIRST_CHAT,
            1 + i as i64,
            1,
            &format!("/search {title}"),
        ))
        .context("the bench's own update does not parse")?;
        templates.push(ingress.decide(&update).map_err(|why| {
            anyhow::anyhow!("the bench's own update is ignored: {}", why.as_str())
        })?);
    }
    Ok(templates)
}

/// The pipeline, its own Redis and the simulators.
pub struct Pipeline {
    _redis: Option<RedisServer>,
    pub settings: Settings,
    ledger: Ledger,
    _mp: MoviePilotSim,
    /// Dropped with the pipeline: ends the simulator's thread.
    _mp_thread: oneshot::Sender<()>,
    tg: TelegramSim,
    secret: String,
    templates: Vec<Admission>,
    next_update_id: i64,
    external: bool,
    /// Every role, started after the drain (for delivery, then the e2e phase).
    running: Option<Running>,
    /// With `--callgrind`: the processes whose instructions are counted.
    counters: Option<Counters>,
    /// How often the drain's end is polled for: every poll is work in both processes, which
    /// under callgrind (everything some 50 times slower) would weigh on the counts.
    poll: Duration,
}

impl Pipeline {
    /// Starts the simulators and a private Redis (or uses `redis_url` under a fresh prefix;
    /// `cluster`: it names Redis Cluster nodes). With `callgrind`, instructions are counted
    /// (see `instructions`).
    pub async fn start(
        redis_url: Option<&str>,
        cluster: bool,
        callgrind: bool,
    ) -> anyhow::Result<Pipeline> {
        let (server, url, prefix) = pipeline_redis(redis_url).await?;
        let external = server.is_none();
        // Lean: the bench reads only counts and arrival times, and recording tens of thousands
        // of messages whole would put the simulator's memory growth into the figures.
        let tg = TelegramSim::start_with(TgSimOptions {
            lean: true,
            ..TgSimOptions::default()
        })
        .await?;
        // MoviePilot runs in a process of its own; on 2 cores, sharing the worker's one runtime
        // thread with its simulator cost the drain about 5 % (9 runs alternated).
        let (mp, mp_thread) = on_own_thread("moviepilot-sim", || {
            MoviePilotSim::try_start(SimOptions::v2_5_6())
        })
        .await?;
        let secret = hex::encode(rand::random::<[u8; 16]>());
        let env = pipeline_env(&url, &tg, &mp, prefix, cluster, &secret);
        let env = if callgrind { env.set_all(SLOW) } else { env };
        let settings = env.settings().context("the pipeline's settings")?;
        let ledger = Ledger::connect(
            &settings,
            oncebot::i18n::Texts::new(settings.telegram.locale).for_ledger(),
        )?;
        ledger
            .prepare()
            .await
            .context("preparing the pipeline's Redis")?;
        let templates = admission_templates(&settings, &ledger)?;
        let counters = if callgrind {
            Some(Counters::new(&ledger).await?)
        } else {
            None
        };
        Ok(Pipeline {
            counters,
            poll: Duration::from_millis(if callgrind { 100 } else { 2 }),
            _redis: server,
            settings,
            ledger,
            _mp: mp,
            _mp_thread: mp_thread,
            tg,
            secret,
            templates,
            next_update_id: 1,
            external,
            running: None,
        })
    }

    /// Removes the pipeline's keys from an external Redis (a private one dies with `self`).
    pub async fn stop(mut self) -> anyhow::Result<()> {
        let stopped = match self.running.take() {
            Some(running) => {
                match tokio::time::timeout(Duration::from_secs(10), running.stop()).await {
                    Ok(r) => r,
                    Err(_) => Err(anyhow::anyhow!("the pipeline did not stop within 10 s")),
                }
            }
            None => Ok(()),
        };
        if self.external {
            match delete_prefix(&self.ledger, &self.settings.redis.key_prefix).await {
                Ok(n) => tracing::info!(keys = n, "removed the pipeline's keys"),
                Err(e) => tracing::warn!(
                    error = %e,
                    prefix = self.settings.redis.key_prefix,
                    "could not remove the pipeline's keys; delete them by hand"
                ),
            }
        }
        stopped
    }

    async fn used_memory(&self) -> anyhow::Result<u64> {
        super::target::used_memory(&self.ledger).await
    }

    async fn command_stats(&self) -> anyhow::Result<HashMap<String, (u64, u64)>> {
        command_stats(&self.ledger).await
    }

    /// XLEN of the jobs stream and of the replies stream.
    async fn stream_lengths(&self) -> anyhow::Result<(u64, u64)> {
        let keys = self.ledger.keys();
        let mut conn = self.ledger.connection();
        let (jobs, replies): (u64, u64) = redis::pipe()
            .cmd("XLEN")
            .arg(keys.jobs_stream())
            .cmd("XLEN")
            .arg(keys.replies_stream())
            .query_async(&mut conn)
            .await
            .context("XLEN of the streams")?;
        Ok((jobs, replies))
    }

    /// Admits `n` search jobs from `CHATS` chats, 64 callers at a time.
    async fn admit_backlog(&mut self, n: u64) -> anyhow::Result<()> {
        let base = self.next_update_id;
        self.next_update_id += n as i64;
        let templates: Arc<[Admission]> = self.templates.clone().into();
        let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut tasks = Vec::new();
        for _ in 0..ADMITTERS {
            let (ledger, templates, next) = (self.ledger.clone(), templates.clone(), next.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= n {
                        return Ok::<_, anyhow::Error>(());
                    }
                    let mut a = templates[(i % templates.len() as u64) as usize].clone();
                    let chat = FIRST_CHAT + (i as i64 % CHATS);
                    a.update_id = base + i as i64;
                    a.chat_id = chat;
                    a.user_id = chat;
                    a.message_id = Some(1 + i as i64);
                    match ledger.admit(&a).await? {
                        Admitted::New { .. } => {}
                        other => anyhow::bail!("backlog job {i} was not admitted: {other:?}"),
                    }
                }
            }));
        }
        for t in tasks {
            t.await.context("an admitting task panicked")??;
        }
        Ok(())
    }

    /// Admits a backlog of `n` jobs, drains it with one worker (no dispatcher), then delivers
    /// its replies with the dispatcher, measuring memory before and after.
    pub async fn worker_and_memory(
        &mut self,
        n: u64,
    ) -> anyhow::Result<(WorkerPhase, DeliveryPhase, Memory)> {
        let memory_before = self.used_memory().await?;
        let worker = self.drain(n).await?;
        let memory_drained = self.used_memory().await?;
        let (delivery, memory_after, keys) = self.deliver(n).await?;
        let keys_ = self.ledger.keys();
        for prefix in [keys_.token_prefix(), keys_.token_group_prefix()] {
            delete_matching(&self.ledger, &format!("{prefix}*")).await?;
        }
        let memory_without_buttons = self.used_memory().await?;
        let memory = Memory {
            bytes_per_job_after_buttons_expire: memory_without_buttons.saturating_sub(memory_before)
                as f64
                / n as f64,
            bytes_per_job: memory_after.saturating_sub(memory_before) as f64 / n as f64,
            bytes_per_job_before_delivery: memory_drained.saturating_sub(memory_before) as f64
                / n as f64,
            keys,
        };
        Ok((worker, delivery, memory))
    }

    /// Admits a backlog of `n` jobs and drains it with one worker (no dispatcher).
    async fn drain(&mut self, n: u64) -> anyhow::Result<WorkerPhase> {
        let admitting = Instant::now();
        self.admit_backlog(n).await?;
        let admit_s = admitting.elapsed().as_secs_f64();

        let mp = MoviePilot::connect(&self.settings.moviepilot)
            .await
            .context("connecting to the MoviePilot simulator")?;
        let worker = Worker::new(&self.settings, self.ledger.clone(), mp);
        let stop = CancellationToken::new();
        let stats0 = self.command_stats().await?;
        let reads0 = redis_reads(&self.ledger).await;
        let (redis0, process0) = (redis_cpu(&self.ledger).await, process_cpu());
        let counted0 = self.count().await?;
        tracing::info!(jobs = n, admit_s, "backlog admitted; draining it");
        let started = Instant::now();
        let running = tokio::spawn(worker.run(stop.clone()));
        let drained = self
            .until(|(jobs, replies)| jobs == 0 && replies >= n)
            .await;
        let elapsed = started.elapsed();
        let instructions_per_job = self.instructions_since(counted0, n).await?;
        let (redis1, process1) = (redis_cpu(&self.ledger).await, process_cpu());
        let reads1 = redis_reads(&self.ledger).await;
        let stats1 = self.command_stats().await?;
        stop.cancel();
        let stopped = running.await;
        drained.context("draining the backlog")?;
        stopped.context("the worker panicked")??;
        let per_job = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => (b - a) * 1e6 / n as f64,
            _ => f64::NAN,
        };
        Ok(WorkerPhase {
            jobs: n,
            duration_s: elapsed.as_secs_f64(),
            per_s: n as f64 / elapsed.as_secs_f64(),
            redis_us_per_job: per_job(redis0, redis1),
            process_us_per_job: per_job(process0, process1),
            admit_s,
            redis_reads_per_job: match (reads0, reads1) {
                (Some(a), Some(b)) => b.saturating_sub(a) as f64 / n as f64,
                _ => f64::NAN,
            },
            redis_commands: command_costs(&stats0, &stats1, n),
            instructions_per_job,
        })
    }

    /// Delivers the drained backlog's `n` replies with every role running (the webhook idles,
    /// so the same app serves the e2e phase): the delivery's figures, then Redis's used memory
    /// and its keys by kind once the replies stream is empty.
    async fn deliver(
        &mut self,
        n: u64,
    ) -> anyhow::Result<(DeliveryPhase, u64, BTreeMap<String, KeyKind>)> {
        let sent_before = self.tg.observe(|o| o.sent().len());
        let delivery_stats0 = self.command_stats().await?;
        let delivery_counted0 = self.count().await?;
        let started = Instant::now();
        let running = app::start(
            self.settings.clone(),
            ServeOptions {
                roles: vec![],
                poll: false,
            },
        )
        .await
        .context("starting the pipeline's roles")?;
        let target = sent_before + n as usize;
        let delivered = self
            .tg
            .wait_for(DEADLINE, |o| o.sent().len() >= target)
            .await;
        let elapsed = started.elapsed();
        if let Err(e) = delivered {
            let _ = running.stop().await;
            anyhow::bail!(
                "the backlog's replies were not all sent within {:?}: {}",
                e.deadline,
                e.calls
            );
        }
        // The reply's delivery record is written after Telegram answered; wait for the
        // replies stream to empty as well, so memory is measured at rest.
        let settled = self.until(|(_, replies)| replies == 0).await;
        let instructions_per_reply = self.instructions_since(delivery_counted0, n).await?;
        let delivery_stats1 = self.command_stats().await?;
        let memory_after = self.used_memory().await?;
        let delivery = DeliveryPhase {
            replies: n,
            duration_s: elapsed.as_secs_f64(),
            per_s: n as f64 / elapsed.as_secs_f64(),
            redis_commands: command_costs(&delivery_stats0, &delivery_stats1, n),
            instructions_per_reply,
        };
        let keys = match settled {
            Ok(()) => self.key_kinds(n).await,
            Err(e) => Err(e),
        };
        self.running = Some(running);
        Ok((delivery, memory_after, keys?))
    }

    /// The instructions counted so far (with `--callgrind`).
    async fn count(&self) -> anyhow::Result<Option<instructions::Count>> {
        Ok(match &self.counters {
            Some(c) => Some(c.read().await?),
            None => None,
        })
    }

    /// Instructions per job since `before` was counted (with `--callgrind`).
    async fn instructions_since(
        &self,
        before: Option<instructions::Count>,
        jobs: u64,
    ) -> anyhow::Result<Option<instructions::PerJob>> {
        Ok(match (&self.counters, before) {
            (Some(c), Some(before)) => Some(before.per_job(&c.read().await?, jobs)),
            _ => None,
        })
    }

    /// Polls the stream lengths every `poll` (the drain's end is measured by it) until `done`
    /// holds (or the deadline passes).
    async fn until(&self, done: impl Fn((u64, u64)) -> bool) -> anyhow::Result<()> {
        wait("the streams to drain", DEADLINE)
            .every(self.poll)
            .until_seen(|| async {
                let lengths = self.stream_lengths().await?;
                Ok(if done(lengths) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(format!(
                        "jobs stream {} and replies stream {} entries long",
                        lengths.0, lengths.1
                    ))
                })
            })
            .await
    }

    /// Keys under the prefix by kind, with `MEMORY USAGE` of up to 32 of each kind.
    async fn key_kinds(&self, jobs: u64) -> anyhow::Result<BTreeMap<String, KeyKind>> {
        let base = self.ledger.keys().base().to_string();
        let mut conn = self.ledger.connection();
        let mut cursor: u64 = 0;
        let mut kinds: BTreeMap<String, (u64, Vec<String>)> = BTreeMap::new();
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(format!("{base}*"))
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
                .await
                .context("SCAN")?;
            for key in keys {
                let rest = &key[base.len()..];
                let kind = rest.split(':').next().unwrap_or(rest).to_string();
                let entry = kinds.entry(kind).or_default();
                entry.0 += 1;
                if entry.1.len() < 32 {
                    entry.1.push(key);
                }
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        let mut out = BTreeMap::new();
        for (kind, (count, sample)) in kinds {
            let mut total = 0u64;
            for key in &sample {
                let used: Option<u64> = redis::cmd("MEMORY")
                    .arg("USAGE")
                    .arg(key)
                    .query_async(&mut conn)
                    .await
                    .context("MEMORY USAGE")?;
                total += used.unwrap_or(0);
            }
            let bytes = total * count / sample.len().max(1) as u64;
            out.insert(
                kind,
                KeyKind {
                    count,
                    bytes,
                    bytes_per_job: bytes as f64 / jobs.max(1) as f64,
                },
            );
        }
        Ok(out)
    }
}

impl Pipeline {
    /// Update in, message out: `E2E_CALLERS` callers each POST an update to the webhook and wait
    /// until the Bot API simulator receives its reply, then send the next. Each caller writes
    /// from its own chats, so a chat never has two updates in flight and a reply is matched to
    /// its update by chat id.
    /// Also returns the CPU redis-server and this process used during the measured window, and
    /// Redis's `commandstats` over it, per update.
    pub async fn e2e(
        &mut self,
        timing: Timing,
    ) -> anyhow::Result<(
        PhaseStats,
        Option<CpuUse>,
        Vec<CommandCost>,
        Option<instructions::PerJob>,
    )> {
        let addr = self
            .running
            .as_ref()
            .and_then(|r| r.http_addr)
            .context("the pipeline's roles are not running")?;
        let host = HeaderValue::from_str(&addr.to_string())?;
        let secret = HeaderValue::from_str(&self.secret)?;
        let base = self.next_update_id;
        self.next_update_id += i64::try_from(timing.max_requests).unwrap_or(i64::MAX / 4);
        let waiters: Waiters = Arc::default();
        let window = Window::start(timing);
        let cpu = cpu_during(&self.ledger, &window);
        let commands = {
            let ledger = self.ledger.clone();
            at_window_edges(&window, move || {
                let ledger = ledger.clone();
                async move { command_stats(&ledger).await.ok() }
            })
        };
        let counted = self.counters.map(|c| {
            at_window_edges(&window, move || async move {
                c.read()
                    .await
                    .inspect_err(|e| tracing::warn!(error = %e, "counting instructions"))
                    .ok()
            })
        });
        let done = CancellationToken::new();
        // Taken before any caller starts: a reply that arrives before the watcher first runs
        // must still be matched.
        let seen = self.tg.observe(|o| o.sent().len());
        let watcher = match_replies(&self.tg, seen, waiters.clone(), done.clone());
        let callers = spawn_e2e_callers(addr, base, (host, secret), &window, &waiters).await?;
        let stats = join_callers(callers, watcher, &done).await?;
        let cpu = cpu.await.ok().flatten();
        let stats = window.summarise(E2E_CALLERS, stats).stats();
        let commands = match commands.await.ok().flatten() {
            Some((before, after)) => command_costs(&before, &after, stats.ok),
            None => Vec::new(),
        };
        let instructions = match counted {
            Some(c) => c
                .await
                .ok()
                .flatten()
                .map(|(before, after)| before.per_job(&after, stats.ok)),
            None => None,
        };
        Ok((stats, cpu, commands, instructions))
    }
}

/// Starts the `E2E_CALLERS` callers, each on a connection of its own and with chats of its own;
/// their update ids count from `base`.
async fn spawn_e2e_callers(
    addr: std::net::SocketAddr,
    base: i64,
    (host, secret): (HeaderValue, HeaderValue),
    window: &Arc<Window>,
    waiters: &Waiters,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<CallerStats>>> {
    let chats_each = CHATS / E2E_CALLERS as i64;
    let bodies: Arc<[E2eBody]> = TITLES.iter().map(|t| E2eBody::new(t)).collect();
    let mut callers = Vec::with_capacity(E2E_CALLERS);
    for c in 0..E2E_CALLERS as i64 {
        let (window, waiters, bodies) = (window.clone(), waiters.clone(), bodies.clone());
        let (host, secret) = (host.clone(), secret.clone());
        let conn = Conn::open(addr).await?;
        let caller = E2eCaller {
            first_chat: FIRST_CHAT + c,
            chats_each,
            base,
            host,
            secret,
        };
        callers.push(tokio::spawn(
            caller.run(addr, conn, window, waiters, bodies),
        ));
    }
    Ok(callers)
}

/// Each caller's figures once all are done, the reply watcher running meanwhile and stopped
/// (by `done`) when the last caller ends.
async fn join_callers(
    callers: Vec<tokio::task::JoinHandle<CallerStats>>,
    watcher: impl Future<Output = ()>,
    done: &CancellationToken,
) -> anyhow::Result<Vec<CallerStats>> {
    let run_callers = async {
        let mut out = Vec::with_capacity(callers.len());
        for h in callers {
            out.push(h.await);
        }
        done.cancel();
        out
    };
    let (joined, ()) = futures::future::join(run_callers, watcher).await;
    let mut stats = Vec::with_capacity(joined.len());
    for j in joined {
        stats.push(j.context("an e2e caller panicked")?);
    }
    Ok(stats)
}

/// Callers waiting for the reply to their chat's update, by chat id.
type Waiters = Arc<Mutex<HashMap<i64, oneshot::Sender<Instant>>>>;

/// Until `done`: hands each message the Bot API simulator got (from the `seen`-th on) to the
/// caller waiting on its chat, with the instant it arrived.
async fn match_replies(
    tg: &TelegramSim,
    mut seen: usize,
    waiters: Waiters,
    done: CancellationToken,
) {
    while !done.is_cancelled() {
        let _ = tg
            .wait_for(Duration::from_millis(50), |o| o.sent().len() > seen)
            .await;
        let new: Vec<(i64, Instant)> =
            tg.observe(|o| o.sent()[seen..].iter().map(|m| (m.chat_id, m.at)).collect());
        seen += new.len();
        let mut waiting = waiters.lock().unwrap_or_else(|p| p.into_inner());
        for (chat, at) in new {
            if let Some(tx) = waiting.remove(&chat) {
                let _ = tx.send(at);
            }
        }
    }
}

/// One closed-loop e2e caller: its chats (every `E2E_CALLERS`-th from `first_chat`), the
/// first update id of the run, and the headers of its webhook posts.
struct E2eCaller {
    first_chat: i64,
    chats_each: i64,
    base: i64,
    host: HeaderValue,
    secret: HeaderValue,
}

impl E2eCaller {
    /// While the window lasts: posts an update, and times it until its reply reaches the Bot
    /// API simulator (a post that failed, or no reply within 10 s, counts as an error).
    async fn run(
        self,
        addr: std::net::SocketAddr,
        mut conn: Conn,
        window: Arc<Window>,
        waiters: Waiters,
        bodies: Arc<[E2eBody]>,
    ) -> CallerStats {
        let mut stats = CallerStats::new();
        let mut k = 0i64;
        while let Some(n) = window.next() {
            let chat = self.first_chat + E2E_CALLERS as i64 * (k % self.chats_each);
            k += 1;
            let update_id = self.base + n as i64;
            let body =
                bodies[(n % bodies.len() as u64) as usize].render(chat, update_id, 1 + n as i64);
            let (tx, rx) = oneshot::channel();
            waiters
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(chat, tx);
            let sent = Instant::now();
            let posted = conn.post(self.request(body)).await;
            let accepted = matches!(posted, Ok(StatusCode::OK));
            let arrived = if accepted {
                tokio::time::timeout(Duration::from_secs(10), rx)
                    .await
                    .ok()
                    .and_then(Result::ok)
            } else {
                None
            };
            if let Some(at) = arrived {
                window.record_done(&mut stats, sent, at, true);
                continue;
            }
            tracing::warn!(
                chat,
                update_id,
                accepted,
                "an e2e update got no reply within 10 s"
            );
            waiters
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&chat);
            window.record(&mut stats, sent, false);
            if posted.is_err() {
                match Conn::open(addr).await {
                    Ok(fresh) => std::mem::replace(&mut conn, fresh).close().await,
                    Err(e) => {
                        tracing::warn!(error = %e, "an e2e caller cannot reconnect");
                        break;
                    }
                }
            }
        }
        conn.close().await;
        stats
    }

    /// The webhook post of one update, as Telegram sends it.
    fn request(&self, body: String) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(Bytes::from(body)));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = hyper::Uri::from_static("/telegram/webhook");
        let headers = req.headers_mut();
        headers.insert(HOST, self.host.clone());
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(SECRET_HEADER, self.secret.clone());
        req
    }
}

/// `INFO commandstats`: calls and microseconds by command.
async fn command_stats(ledger: &Ledger) -> anyhow::Result<HashMap<String, (u64, u64)>> {
    let info = info(ledger, "commandstats")
        .await
        .context("INFO commandstats")?;
    Ok(parse_command_stats(&info))
}

/// `cmdstat_evalsha:calls=12,usec=345,...` lines into command → (calls, usec).
fn parse_command_stats(info: &str) -> HashMap<String, (u64, u64)> {
    let mut out = HashMap::new();
    for line in info.lines() {
        let Some((name, fields)) = line
            .strip_prefix("cmdstat_")
            .and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        let field = |key: &str| {
            fields
                .split(',')
                .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        out.insert(name.to_string(), (field("calls"), field("usec")));
    }
    out
}

/// The commands whose counts grew between two snapshots, per job, most time first.
fn command_costs(
    before: &HashMap<String, (u64, u64)>,
    after: &HashMap<String, (u64, u64)>,
    jobs: u64,
) -> Vec<CommandCost> {
    let jobs = jobs.max(1) as f64;
    let mut out: Vec<CommandCost> = after
        .iter()
        .filter_map(|(name, &(calls, usec))| {
            let (c0, u0) = before.get(name).copied().unwrap_or((0, 0));
            let calls = calls.saturating_sub(c0);
            // INFO itself and the bench's polling are not the worker's.
            (calls > 0 && !matches!(name.as_str(), "info" | "xlen")).then(|| CommandCost {
                command: name.clone(),
                calls_per_job: calls as f64 / jobs,
                us_per_job: usec.saturating_sub(u0) as f64 / jobs,
            })
        })
        .collect();
    out.sort_by(|a, b| b.us_per_job.total_cmp(&a.us_per_job));
    out
}

/// A private-chat text message as Telegram sends it, with its ids.
/// An e2e update body rendered once per title with marker numbers that `render` replaces: the
/// callers then spend about a microsecond per update on it instead of building a JSON tree, and
/// leave the CPU to the pipeline they measure.
struct E2eBody(String);

impl E2eBody {
    const CHAT: &str = "990000000000001";
    const UPDATE_ID: &str = "880000000000001";
    const MESSAGE_ID: &str = "770000000000001";

    fn new(title: &str) -> Self {
        let number = |s: &str| s.parse::<i64>().unwrap_or_default();
        Self(
            update_json(
                number(Self::CHAT),
                number(Self::UPDATE_ID),
                number(Self::MESSAGE_ID),
                &format!("/search {title}"),
            )
            .to_string(),
        )
    }

    fn render(&self, chat: i64, update_id: i64, message_id: i64) -> String {
        self.0
            .replace(Self::CHAT, &chat.to_string())
            .replace(Self::UPDATE_ID, &update_id.to_string())
            .replace(Self::MESSAGE_ID, &message_id.to_string())
    }
}

fn update_json(chat: i64, update_id: i64, message_id: i64, text: &str) -> serde_json::Value {
    let mut update = text_update(chat, chat, text);
    update["update_id"] = update_id.into();
    update["message"]["message_id"] = message_id.into();
    update["message"]["date"] = 1_767_225_600.into();
    update
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e2e_bodies_are_the_updates_update_json_makes() {
        let title = TITLES[2];
        let body = E2eBody::new(title).render(FIRST_CHAT + 5, 42, 7);
        let parsed: serde_json::Value = serde_json::from_str(&body).unwrap();
        let expected = update_json(FIRST_CHAT + 5, 42, 7, &format!("/search {title}"));
        assert_eq!(parsed, expected);
    }

    #[test]
    fn command_stats_are_read_and_diffed_per_job() {
        let before = parse_command_stats(
            "# Commandstats\r\ncmdstat_evalsha:calls=10,usec=100,usec_per_call=10.00,\
             rejected_calls=0,failed_calls=0\r\ncmdstat_info:calls=1,usec=5\r\n",
        );
        let after = parse_command_stats(
            "cmdstat_evalsha:calls=30,usec=500,usec_per_call=16.67\r\n\
             cmdstat_xreadgroup:calls=2,usec=40\r\ncmdstat_info:calls=3,usec=15\r\n",
        );
        assert_eq!(before["evalsha"], (10, 100));
        let costs = command_costs(&before, &after, 10);
        let names: Vec<&str> = costs.iter().map(|c| c.command.as_str()).collect();
        assert_eq!(names, ["evalsha", "xreadgroup"]);
        assert_eq!(costs[0].calls_per_job, 2.0);
        assert_eq!(costs[0].us_per_job, 40.0);
    }
}
