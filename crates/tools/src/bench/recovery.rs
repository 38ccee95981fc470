//! `oncebot bench --recovery`: how long a crash keeps users waiting. Real `oncebot serve`
//! processes (this binary, as children) against a private Redis and the simulators; each is
//! SIGKILLed with work in flight, and the time until that work is settled is measured.
//!
//! - `kill_with_peer`: a worker with jobs running is killed while another worker is alive.
//! - `restart`: the only worker is killed and started again at once; timed from the restart.
//! - `dispatcher_restart`: a dispatcher with sends under way is killed and started again; timed
//!   from the restart until every reply is delivered. Its sends were still at Telegram when it
//!   died, so each is delivered again (at least once): `resent` counts them.
//! - `slow_job`: a job that runs `--slow-job-secs` (two minutes by default) on a live worker
//!   with a 3 s liveness expiry while another worker waits to take dead workers' entries: it
//!   must stay where it is (one MoviePilot call, no recovery).
//! - `restarts`: `--restarts` restarts of a `serve` with every role, each handed work first (a
//!   consumer is in a group only once it was handed an entry), every other one SIGKILLed and
//!   the rest stopped with SIGTERM; then how many consumers each stream's group still lists
//!   (only the live process's should be there) and how long the dead ones took to go.
//! - `idle`: one idle `serve` (every role) for a while: its CPU and the Redis commands it
//!   sends per second, heartbeats included.
//!
//! The jobs are `/downloading` (read-only) whose MoviePilot call the simulator holds for a
//! minute, so they are surely running when the worker dies; without liveness, recovery would
//! wait for the lease (`worker.reclaim_idle_ms`, 60 s).

use std::time::{Duration, Instant};

use serde::Serialize;

use super::idle::{child_cpu, command_calls};
use crate::redis_server::{Persistence, RedisServer};
use crate::rig::{Oncebot, OncebotCommand, OncebotEnv, wait};
use crate::sim::moviepilot::{Fault, MoviePilotSim, SimOptions, routes};
use crate::sim::telegram::{self, TelegramSim};
use oncebot::commands::Command as BotCommand;
use oncebot::ledger::{Admission, AdmissionAction, ConsumerRole, Ledger};

/// Jobs (or replies) in flight at each kill.
const IN_FLIGHT: usize = 4;
/// The longest any one recovery may take before the bench gives up (the lease is 60 s).
const GIVE_UP: Duration = Duration::from_secs(90);

/// Times of one scenario, in milliseconds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Recoveries {
    pub runs: usize,
    pub p50_ms: f64,
    pub max_ms: f64,
}

impl Recoveries {
    fn of(mut times: Vec<Duration>) -> Recoveries {
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        Recoveries {
            runs: times.len(),
            p50_ms: times.get(times.len() / 2).map_or(0.0, |d| ms(*d)),
            max_ms: times.last().map_or(0.0, |d| ms(*d)),
        }
    }
}

/// The `--recovery --json` output.
#[derive(Debug, Clone, Serialize)]
pub struct RecoveryReport {
    pub in_flight_per_kill: usize,
    /// `worker.heartbeat_interval_ms`, `worker.liveness_ttl_ms`, `worker.reclaim_idle_ms` as run
    /// (the defaults).
    pub settings: &'static str,
    pub kill_with_peer: Recoveries,
    pub restart: Recoveries,
    pub dispatcher_restart: Recoveries,
    /// Replies the restarted dispatchers sent again (at least once), over all runs.
    pub resent: usize,
    /// How long the slow job ran, and whether it stayed with its live worker (one call, no
    /// recovery) with a 3 s liveness expiry.
    pub slow_job_secs: f64,
    pub slow_job_kept: bool,
    /// Restarts of a process with every role, and then the consumers left per stream besides
    /// the live process's (0: tidy) once the dead ones' liveness expired.
    pub restarts: usize,
    pub consumers_left_after_restarts: usize,
    /// From the last restart until the groups list only the live process.
    pub tidy_after_ms: f64,
    pub idle_cpu_percent: f64,
    pub idle_redis_commands_per_s: f64,
}

/// The deployment the scenarios run in.
struct Scene {
    redis: RedisServer,
    ledger: Ledger,
    mp: MoviePilotSim,
    tg: TelegramSim,
    next_update: i64,
}

/// An `oncebot serve` child of the rig's.
struct Process(Oncebot);

impl Process {
    fn spawn(scene: &Scene, roles: &[&str]) -> anyhow::Result<Process> {
        Self::spawn_with(scene, roles, &[])
    }

    /// With settings of its own on top of the scene's.
    fn spawn_with(
        scene: &Scene,
        roles: &[&str],
        settings: &[(&str, &str)],
    ) -> anyhow::Result<Process> {
        let env = OncebotEnv::new(&scene.redis.url())
            .telegram(&scene.tg)
            .moviepilot(&scene.mp)
            .set_all([
                ("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1"),
                (
                    "ONCEBOT__TELEGRAM__WEBHOOK_SECRET",
                    "bench-secret-0123456789",
                ),
                ("ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS", "10"),
                // The worker scenarios' jobs end when MoviePilot lets their held calls go, a
                // minute later, and their 160 replies would queue behind Telegram's 30 a second
                // in front of the dispatcher scenario's: what it measures is recovery, not that.
                ("ONCEBOT__DISPATCHER__GLOBAL_PER_SECOND", "100000"),
                ("ONCEBOT__DISPATCHER__SET_COMMANDS", "false"),
                ("RUST_LOG", "error"),
            ])
            .set_all(settings.iter().copied());
        let child = OncebotCommand::serve(std::env::current_exe()?, roles)
            .oncebot_env(&env)
            .spawn()?;
        Ok(Process(child))
    }

    async fn sigkill(mut self) {
        let _ = self.0.sigkill().await;
    }

    /// SIGTERM, then waits for the graceful exit (SIGKILL after 30 s).
    async fn stop(mut self) {
        let _ = self.0.stop(Duration::from_secs(30)).await;
    }

    fn pid(&self) -> Option<u32> {
        self.0.pid()
    }
}

impl Scene {
    async fn start() -> anyhow::Result<Scene> {
        let redis = RedisServer::start(Persistence::None)?;
        let settings = OncebotEnv::new(&redis.url()).settings()?;
        let ledger = Ledger::connect(
            &settings,
            oncebot::i18n::Texts::new(settings.telegram.locale).for_ledger(),
        )?;
        ledger.prepare().await?;
        Ok(Scene {
            redis,
            ledger,
            mp: MoviePilotSim::start(SimOptions::v2_5_6()).await,
            tg: TelegramSim::start().await?,
            next_update: 1,
        })
    }

    /// Starts a process and waits until its consumer of `role` beats.
    async fn started(&self, roles: &[&str], role: ConsumerRole) -> anyhow::Result<Process> {
        self.started_with(roles, role, &[]).await
    }

    async fn started_with(
        &self,
        roles: &[&str],
        role: ConsumerRole,
        settings: &[(&str, &str)],
    ) -> anyhow::Result<Process> {
        let before = self.ledger.live_consumers(role).await?;
        let process = Process::spawn_with(self, roles, settings)?;
        self.until(Duration::from_secs(20), "the process to start", || async {
            let now = self.ledger.live_consumers(role).await.ok()?;
            now.iter().any(|c| !before.contains(c)).then_some(())
        })
        .await?;
        Ok(process)
    }

    async fn until<T, F, Fut>(&self, within: Duration, what: &str, f: F) -> anyhow::Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        wait(what, within)
            .every(Duration::from_millis(10))
            .until(f)
            .await
    }

    /// Admits `/downloading` jobs whose MoviePilot call is held for a minute, and waits until
    /// every call is at MoviePilot (each took its hold: a recovered job must not take one
    /// left over); their ids.
    async fn held_jobs(&mut self) -> anyhow::Result<Vec<u64>> {
        self.jobs_held_for(IN_FLIGHT, Duration::from_secs(60)).await
    }

    async fn jobs_held_for(&mut self, count: usize, hold: Duration) -> anyhow::Result<Vec<u64>> {
        let calls_before = self.mp.calls(routes::DOWNLOADS);
        let mut ids = Vec::new();
        for i in 0..count {
            self.mp.fail_next(routes::DOWNLOADS, Fault::Delay(hold));
            let update_id = self.next_update;
            self.next_update += 1;
            let admitted = self
                .ledger
                .admit(&Admission {
                    update_id,
                    // A chat each: jobs of one chat run one after another.
                    chat_id: 1000 + update_id,
                    user_id: 1,
                    message_id: None,
                    thread_id: None,
                    requester: None,
                    role: oncebot::vocabulary::Role::Admin,
                    action: AdmissionAction::Job(BotCommand::Downloading.job(
                        oncebot::commands::Asker::of(1000 + update_id, 1, None),
                        "",
                        Duration::ZERO,
                    )),
                })
                .await?;
            match admitted {
                oncebot::ledger::Admitted::New { job_id } => ids.push(job_id),
                other => anyhow::bail!("job {i} was not admitted: {other:?}"),
            }
        }
        self.until(Duration::from_secs(20), "the calls to be held", || async {
            (self.mp.calls(routes::DOWNLOADS) >= calls_before + count as u64).then_some(())
        })
        .await?;
        Ok(ids)
    }

    async fn all_in(&self, jobs: &[u64], status: &str) -> bool {
        for id in jobs {
            match self.ledger.job(*id).await {
                Ok(Some(job)) if job.status.as_str() == status => {}
                _ => return false,
            }
        }
        true
    }

    async fn settled(&self, jobs: &[u64], since: Instant) -> anyhow::Result<Duration> {
        self.settled_within(jobs, since, GIVE_UP).await
    }

    async fn settled_within(
        &self,
        jobs: &[u64],
        since: Instant,
        within: Duration,
    ) -> anyhow::Result<Duration> {
        self.until(within, "the jobs to be settled", || async {
            self.all_in(jobs, "succeeded")
                .await
                .then(|| since.elapsed())
        })
        .await
    }
}

/// Runs the scenarios, `kills` times each, one slow job of `slow_job` length, and `restarts`
/// restarts of a whole process.
pub async fn run(
    kills: usize,
    slow_job: Duration,
    restarts: usize,
) -> anyhow::Result<RecoveryReport> {
    let mut scene = Scene::start().await?;

    tracing::info!(kills, "recovery: killing a worker while another is alive");
    let mut times = Vec::new();
    let mut victim = scene.started(&["worker"], ConsumerRole::Worker).await?;
    for _ in 0..kills {
        let jobs = scene.held_jobs().await?;
        let peer = scene.started(&["worker"], ConsumerRole::Worker).await?;
        victim.sigkill().await;
        let killed = Instant::now();
        times.push(scene.settled(&jobs, killed).await?);
        victim = peer;
    }
    let kill_with_peer = Recoveries::of(times);
    tracing::info!(
        p50_ms = kill_with_peer.p50_ms,
        max_ms = kill_with_peer.max_ms,
        "recovery: worker killed, peer alive"
    );

    tracing::info!(kills, "recovery: restarting the only worker");
    let mut times = Vec::new();
    for _ in 0..kills {
        let jobs = scene.held_jobs().await?;
        victim.sigkill().await;
        let restarted = Instant::now();
        victim = Process::spawn(&scene, &["worker"])?;
        times.push(scene.settled(&jobs, restarted).await?);
    }
    let restart = Recoveries::of(times);
    tracing::info!(
        p50_ms = restart.p50_ms,
        max_ms = restart.max_ms,
        "recovery: only worker restarted"
    );
    victim.sigkill().await;

    tracing::info!(
        kills,
        "recovery: restarting a dispatcher with sends under way"
    );
    let (dispatcher_restart, resent) = dispatcher_restarts(&mut scene, kills).await?;
    tracing::info!(
        p50_ms = dispatcher_restart.p50_ms,
        max_ms = dispatcher_restart.max_ms,
        resent,
        "recovery: dispatcher restarted"
    );

    tracing::info!(
        secs = slow_job.as_secs_f64(),
        "recovery: a slow job on a live worker"
    );
    let slow_job_kept = slow_job_stays(&mut scene, slow_job).await?;

    tracing::info!(restarts, "recovery: restarting a whole process");
    let (consumers_left_after_restarts, tidy_after) = restart_many(&mut scene, restarts).await?;

    tracing::info!("recovery: an idle serve");
    let (idle_cpu_percent, idle_redis_commands_per_s) = idle(&scene).await?;

    Ok(RecoveryReport {
        in_flight_per_kill: IN_FLIGHT,
        settings: "defaults: heartbeat 1000 ms, liveness 3500 ms, lease 60000 ms",
        kill_with_peer,
        restart,
        dispatcher_restart,
        resent,
        slow_job_secs: slow_job.as_secs_f64(),
        slow_job_kept,
        restarts,
        consumers_left_after_restarts,
        tidy_after_ms: tidy_after.as_secs_f64() * 1000.0,
        idle_cpu_percent,
        idle_redis_commands_per_s,
    })
}

async fn dispatcher_restarts(
    scene: &mut Scene,
    kills: usize,
) -> anyhow::Result<(Recoveries, usize)> {
    let mut times = Vec::new();
    let mut dispatcher = scene
        .started(&["dispatcher"], ConsumerRole::Dispatcher)
        .await?;
    let mut resent = 0usize;
    for _ in 0..kills {
        let calls_before = scene.tg.count("sendMessage");
        let mut chats = Vec::new();
        for _ in 0..IN_FLIGHT {
            scene.tg.fail_next(
                "sendMessage",
                telegram::Fault::Delay(Duration::from_secs(60)),
            );
            let update_id = scene.next_update;
            scene.next_update += 1;
            // A chat each, so that per-chat order does not serialise them.
            let chat_id = 5000 + update_id;
            chats.push(chat_id);
            scene
                .ledger
                .admit(&Admission {
                    update_id,
                    chat_id,
                    user_id: 1,
                    message_id: None,
                    thread_id: None,
                    requester: None,
                    role: oncebot::vocabulary::Role::Admin,
                    action: AdmissionAction::Reply {
                        kind: oncebot::ledger::ReplyKind::Help,
                        text: "help".into(),
                        window: Duration::ZERO,
                        once_key: String::new(),
                    },
                })
                .await?;
        }
        // Every send under way at Telegram (held there) when the dispatcher dies.
        scene
            .until(
                Duration::from_secs(20),
                "the sends to be under way",
                || async {
                    (scene.tg.count("sendMessage") >= calls_before + IN_FLIGHT).then_some(())
                },
            )
            .await?;
        dispatcher.sigkill().await;
        let restarted = Instant::now();
        dispatcher = Process::spawn(scene, &["dispatcher"])?;
        let delivered = scene
            .until(GIVE_UP, "the replies to be delivered", || async {
                let sent: Vec<i64> = scene.tg.sent().iter().map(|m| m.chat_id).collect();
                chats
                    .iter()
                    .all(|c| sent.contains(c))
                    .then(|| restarted.elapsed())
            })
            .await?;
        tracing::debug!(
            ms = delivered.as_millis() as u64,
            "dispatcher restart delivered"
        );
        times.push(delivered);
        // The held sends are carried out by Telegram after all, a minute later: each of these
        // replies is delivered twice. That is what at-least-once costs for a send whose
        // answer its sender did not live to record.
        resent += chats.len();
    }
    dispatcher.sigkill().await;
    Ok((Recoveries::of(times), resent))
}

/// A job held by MoviePilot for `hold` on a worker with a 3 s liveness expiry, another worker
/// reaping meanwhile: whether it ended with one call and no recovery.
async fn slow_job_stays(scene: &mut Scene, hold: Duration) -> anyhow::Result<bool> {
    let timeout = (hold.as_secs() + 30).to_string();
    let settings = [
        ("ONCEBOT__WORKER__HEARTBEAT_INTERVAL_MS", "500"),
        ("ONCEBOT__WORKER__LIVENESS_TTL_MS", "3000"),
        ("ONCEBOT__MOVIEPILOT__TIMEOUT_SECS", timeout.as_str()),
    ];
    let slow = scene
        .started_with(&["worker"], ConsumerRole::Worker, &settings)
        .await?;
    let calls_before = scene.mp.calls(routes::DOWNLOADS);
    let jobs = scene.jobs_held_for(1, hold).await?;
    let other = scene
        .started_with(&["worker"], ConsumerRole::Worker, &settings)
        .await?;
    scene
        .settled_within(&jobs, Instant::now(), hold + GIVE_UP)
        .await?;
    let job = scene.ledger.job(jobs[0]).await?;
    let recovered = job.is_none_or(|j| j.extra.contains_key("recoveries"));
    let calls = scene.mp.calls(routes::DOWNLOADS) - calls_before;
    slow.sigkill().await;
    other.sigkill().await;
    Ok(!recovered && calls == 1)
}

/// `restarts` restarts of a process with every role, each handed a job and a reply so its
/// consumers join the groups; then the consumers besides the live process's that the groups
/// still list once `GIVE_UP` passed or none is left, and when that was.
async fn restart_many(scene: &mut Scene, restarts: usize) -> anyhow::Result<(usize, Duration)> {
    let all = ["ingress", "worker", "dispatcher"];
    let mut process = scene.started(&all, ConsumerRole::Dispatcher).await?;
    let mut before = Vec::new();
    for i in 0..restarts {
        let jobs = scene.jobs_held_for(1, Duration::ZERO).await?;
        scene.settled(&jobs, Instant::now()).await?;
        // The job's reply went through the dispatcher: its consumer is in the replies group.
        let job = jobs[0];
        scene
            .until(Duration::from_secs(20), "the reply to be sent", || async {
                let j = scene.ledger.job(job).await.ok()??;
                (j.extra.get("reply_state").map(String::as_str) == Some("sent")).then_some(())
            })
            .await?;
        if i % 2 == 0 {
            process.sigkill().await;
        } else {
            process.stop().await;
        }
        // The names alive before this start, dead or dying ones included: the new process's
        // are the ones that appear.
        before = [
            scene.ledger.live_consumers(ConsumerRole::Worker).await?,
            scene
                .ledger
                .live_consumers(ConsumerRole::Dispatcher)
                .await?,
        ]
        .concat();
        process = scene.started(&all, ConsumerRole::Dispatcher).await?;
    }
    let since = Instant::now();
    let live: Vec<String> = scene
        .until(
            Duration::from_secs(20),
            "the last process's consumers",
            || async {
                let now = [
                    scene
                        .ledger
                        .live_consumers(ConsumerRole::Worker)
                        .await
                        .ok()?,
                    scene
                        .ledger
                        .live_consumers(ConsumerRole::Dispatcher)
                        .await
                        .ok()?,
                ]
                .concat();
                let new: Vec<String> = now.into_iter().filter(|c| !before.contains(c)).collect();
                // One worker and one dispatcher.
                (new.len() == 2).then_some(new)
            },
        )
        .await?;
    let left = |consumers: Vec<oncebot::ledger::ConsumerInfo>| {
        consumers
            .into_iter()
            .filter(|c| !live.contains(&c.name))
            .count()
    };
    let tidy = scene
        .until(
            GIVE_UP,
            "the groups to list only the live process",
            || async {
                let consumers = scene.ledger.consumers().await.ok()?;
                (left(consumers) == 0).then(|| since.elapsed())
            },
        )
        .await;
    let remaining = left(scene.ledger.consumers().await?);
    process.sigkill().await;
    Ok((remaining, tidy.unwrap_or(GIVE_UP)))
}

/// One `serve` with every role, idle for ten seconds: CPU share and Redis commands per second.
async fn idle(scene: &Scene) -> anyhow::Result<(f64, f64)> {
    let process = scene
        .started(
            &["ingress", "worker", "dispatcher"],
            ConsumerRole::Dispatcher,
        )
        .await?;
    // Let start-up (connecting, setMyCommands, the first reap) pass.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pid = process
        .pid()
        .ok_or_else(|| anyhow::anyhow!("the idle process is gone"))?;
    let window = Duration::from_secs(10);
    let cpu_before = child_cpu(pid);
    let calls_before = total_calls(&scene.ledger).await?;
    let started = Instant::now();
    tokio::time::sleep(window).await;
    let took = started.elapsed().as_secs_f64();
    let calls = total_calls(&scene.ledger).await? - calls_before;
    let cpu = child_cpu(pid).zip(cpu_before).map_or(0.0, |(a, b)| a - b);
    process.sigkill().await;
    // The two reads of INFO are the bench's own, not the process's.
    Ok((100.0 * cpu / took, (calls.saturating_sub(2)) as f64 / took))
}

/// Commands Redis has run, from `INFO commandstats`.
async fn total_calls(ledger: &Ledger) -> anyhow::Result<u64> {
    Ok(command_calls(ledger).await?.values().sum())
}
