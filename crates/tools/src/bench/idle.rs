//! `oncebot bench --idle`: what an idle `oncebot serve` costs Redis. One real `serve` process
//! (this binary, as a child) with every role against a private Redis and the simulators, once
//! with the notification relay off and once with it on; nothing is sent to it. Redis's own
//! count of the commands it ran (`INFO commandstats`, so the commands a script runs are counted
//! as well as the script call) is read before and after a fixed window, per command.
//!
//! Command counts, unlike wall time, do not depend on the machine's load: every idle command
//! is driven by a timer (a heartbeat, a blocking read's timeout, a poll), so the same window
//! gives the same counts within a tick of each timer. `tests/it/bench.rs` holds the figure to
//! its bound.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::Serialize;

use crate::redis_server::{Persistence, RedisServer};
use crate::rig::{OncebotCommand, OncebotEnv, wait};
use crate::sim::moviepilot::{MoviePilotSim, SimOptions};
use crate::sim::telegram::TelegramSim;
use oncebot::ledger::{ConsumerRole, Ledger};

/// How long start-up (connecting, the first reap, the relay's first poll) is left to pass
/// after both consumers beat, before the window opens.
const SETTLE: Duration = Duration::from_secs(3);

/// One idle process's cost.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IdleFigures {
    /// The roles it ran.
    pub roles: Vec<&'static str>,
    /// Every command Redis ran for it, per second (script calls and what they ran).
    pub commands_per_s: f64,
    /// The script calls among them (EVALSHA, EVAL), per second.
    pub script_calls_per_s: f64,
    /// Per command (lower case, as `INFO commandstats` names it), per second.
    pub per_command: BTreeMap<String, f64>,
    /// Its CPU, percent of one core.
    pub cpu_percent: f64,
}

/// The `--idle --json` output.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IdleReport {
    pub window_secs: f64,
    /// `worker.heartbeat_interval_ms`, `worker.liveness_ttl_ms`, read blocks, relay poll, as run.
    pub settings: &'static str,
    pub relay_off: IdleFigures,
    pub relay_on: IdleFigures,
}

/// Both measurements, each on a fresh Redis.
pub async fn run(window: Duration) -> anyhow::Result<IdleReport> {
    Ok(IdleReport {
        window_secs: window.as_secs_f64(),
        settings: "defaults: heartbeat 1000 ms, liveness 3500 ms, read blocks 2000 ms, \
                   relay poll 15 s",
        relay_off: measure(false, window).await?,
        relay_on: measure(true, window).await?,
    })
}

/// One `serve` with every role (and the relay when `relay`), idle for `window`.
pub async fn measure(relay: bool, window: Duration) -> anyhow::Result<IdleFigures> {
    let redis = RedisServer::start(Persistence::None).context("starting a private Redis")?;
    let mp = MoviePilotSim::start(SimOptions::v2_5_6()).await;
    let tg = TelegramSim::start().await?;
    let mut env = OncebotEnv::new(&redis.url())
        .telegram(&tg)
        .moviepilot(&mp)
        .set_all([
            ("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1"),
            (
                "ONCEBOT__TELEGRAM__WEBHOOK_SECRET",
                "bench-secret-0123456789",
            ),
            ("ONCEBOT__DISPATCHER__SET_COMMANDS", "false"),
            ("RUST_LOG", "error"),
        ]);
    let mut roles = vec!["ingress", "worker", "dispatcher"];
    if relay {
        roles.push("notify");
        env = env.set_all([
            ("ONCEBOT__NOTIFY__ENABLED", "true"),
            ("ONCEBOT__NOTIFY__WEBHOOK_SECRET", "bench-wake-secret"),
            ("ONCEBOT__NOTIFY__CHATS", "1001"),
        ]);
    }
    let settings = env.settings()?;
    let ledger = Ledger::connect(
        &settings,
        oncebot::i18n::Texts::new(settings.telegram.locale).for_ledger(),
    )?;
    let mut process = OncebotCommand::serve(std::env::current_exe()?, &roles)
        .oncebot_env(&env)
        .spawn()?;
    let started = &ledger;
    wait("both consumers to beat", Duration::from_secs(20))
        .every(Duration::from_millis(10))
        .until(|| async move {
            let workers = started.live_consumers(ConsumerRole::Worker).await.ok()?;
            let dispatchers = started
                .live_consumers(ConsumerRole::Dispatcher)
                .await
                .ok()?;
            (!workers.is_empty() && !dispatchers.is_empty()).then_some(())
        })
        .await?;
    tokio::time::sleep(SETTLE).await;
    let pid = process.pid().context("the idle process is gone")?;
    let cpu_before = child_cpu(pid);
    let before = command_calls(&ledger).await?;
    let opened = Instant::now();
    tokio::time::sleep(window).await;
    let after = command_calls(&ledger).await?;
    let took = opened.elapsed().as_secs_f64();
    let cpu = child_cpu(pid).zip(cpu_before).map_or(0.0, |(a, b)| a - b);
    let _ = process.sigkill().await;
    let mut per_command = BTreeMap::new();
    for (name, calls) in after {
        let mut n = calls - before.get(&name).copied().unwrap_or(0);
        if name == "info" {
            // The bench's own second read; the first ran before the window's count.
            n = n.saturating_sub(1);
        }
        if n > 0 {
            per_command.insert(name, n as f64 / took);
        }
    }
    let script_calls_per_s = ["evalsha", "eval", "evalsha_ro", "eval_ro"]
        .iter()
        .filter_map(|c| per_command.get(*c))
        .sum();
    Ok(IdleFigures {
        roles,
        commands_per_s: per_command.values().sum(),
        script_calls_per_s,
        per_command,
        cpu_percent: 100.0 * cpu / took,
    })
}

/// Calls per command Redis has run so far, from `INFO commandstats`
/// (`cmdstat_<name>:calls=<n>,...`; subcommands as `<name>|<sub>`).
pub(super) async fn command_calls(ledger: &Ledger) -> anyhow::Result<BTreeMap<String, u64>> {
    let mut conn = ledger.connection();
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await?;
    Ok(info
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest
                .strip_prefix("calls=")?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            Some((name.to_string(), calls))
        })
        .collect())
}

/// A child's CPU seconds (user + sys) from `/proc/<pid>/stat`.
pub(super) fn child_cpu(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}
