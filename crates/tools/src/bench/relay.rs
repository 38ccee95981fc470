//! `oncebot bench --relay`: the relay of MoviePilot's notifications, in this process, on a
//! private Redis, against the MoviePilot and Bot API simulators.
//!
//! - **Throughput**: `n` notifications written to the simulator's history at once, one wake-up
//!   call, and the time until the Bot API simulator has accepted every one (the dispatcher's
//!   per-chat limit lifted, so the figure is the relay's and the pipeline's, not Telegram's).
//! - **Idle cost**: the relay alone with nothing new, at the default poll interval: MoviePilot
//!   calls and Redis commands (INFO commandstats, the commands run inside scripts included) per
//!   minute.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::Serialize;

use crate::redis_server::{Persistence, RedisServer};
use crate::rig::{Sims, wait};
use crate::sim::moviepilot::{MoviePilotSim, SimNotification, SimOptions, routes};
use crate::sim::telegram::TelegramSim;
use oncebot::app::{self, Role, ServeOptions};
use oncebot::config::Settings;
use oncebot::ledger::Ledger;
use oncebot::vocabulary::NotificationType;

/// The wake-up secret of the bench's relay.
const SECRET: &str = "bench-wake-secret";

/// What `--relay` measured.
#[derive(Debug, Default, Serialize)]
pub struct RelayReport {
    pub notifications: usize,
    pub per_s: f64,
    pub idle_secs: f64,
    pub poll_interval_secs: u64,
    pub moviepilot_calls_per_min: f64,
    pub redis_commands_per_min: f64,
}

/// Runs both measurements.
pub async fn run(notifications: usize, idle: Duration) -> anyhow::Result<RelayReport> {
    let redis = RedisServer::start(Persistence::None).context("starting a private Redis")?;
    let Sims { mp, tg } = Sims::start(SimOptions::v3()).await?;
    let base = Sims::env_of(&mp, &tg, &redis.url()).set_all([
        ("ONCEBOT__HTTP__LISTEN", "127.0.0.1:0"),
        ("ONCEBOT__NOTIFY__ENABLED", "true"),
        ("ONCEBOT__NOTIFY__WEBHOOK_SECRET", SECRET),
        ("ONCEBOT__NOTIFY__CHATS", "1001"),
        ("ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS", "0"),
        ("ONCEBOT__DISPATCHER__GLOBAL_PER_SECOND", "100000"),
        ("ONCEBOT__DISPATCHER__SET_COMMANDS", "false"),
    ]);
    let settings = base.settings()?;
    let poll_interval_secs = settings.notify.poll_interval_secs;
    let ledger = Ledger::connect(
        &settings,
        oncebot::i18n::Texts::new(settings.telegram.locale).for_ledger(),
    )?;

    let took = throughput(&settings, &ledger, &mp, &tg, notifications).await?;
    let (calls, cmds) = idle_cost(settings, &ledger, &mp, idle).await?;
    let per_min = 60.0 / idle.as_secs_f64();
    Ok(RelayReport {
        notifications,
        per_s: notifications as f64 / took.as_secs_f64(),
        idle_secs: idle.as_secs_f64(),
        poll_interval_secs,
        moviepilot_calls_per_min: calls as f64 * per_min,
        redis_commands_per_min: cmds as f64 * per_min,
    })
}

/// Throughput: how long the dispatcher and relay take to deliver `notifications` notices
/// written at once, from the wake-up call on.
async fn throughput(
    settings: &Settings,
    ledger: &Ledger,
    mp: &MoviePilotSim,
    tg: &TelegramSim,
    notifications: usize,
) -> anyhow::Result<Duration> {
    let running = app::start(
        settings.clone(),
        ServeOptions {
            roles: vec![Role::Dispatcher, Role::Notify],
            poll: false,
        },
    )
    .await?;
    let addr = running.http_addr.context("no HTTP address")?;
    wait("the relay's first poll", Duration::from_secs(20))
        .until(|| async move { ledger.notify_position().await.ok().flatten() })
        .await?;
    for i in 0..notifications {
        mp.notify(SimNotification::new(
            NotificationType::Organize,
            &format!("bench {i}"),
            "入库完成",
        ));
    }
    let t0 = Instant::now();
    let status = reqwest::Client::new()
        .post(format!("http://{addr}/moviepilot/notify/{SECRET}"))
        .send()
        .await?
        .status();
    anyhow::ensure!(status == 204, "the wake-up call answered {status}");
    wait("every notification delivered", Duration::from_secs(120))
        .until(|| async move {
            let sent = tg.observe(|o| {
                o.calls()
                    .iter()
                    .filter(|c| {
                        matches!(c.method.as_str(), "sendMessage" | "sendPhoto")
                            && c.status() == Some(200)
                    })
                    .count()
            });
            (sent >= notifications).then_some(())
        })
        .await?;
    let took = t0.elapsed();
    running.stop().await?;
    Ok(took)
}

/// Idle cost: the relay alone, nothing new; its MoviePilot calls and Redis commands over `idle`.
async fn idle_cost(
    settings: Settings,
    ledger: &Ledger,
    mp: &MoviePilotSim,
    idle: Duration,
) -> anyhow::Result<(u64, u64)> {
    let relay_only = app::start(
        settings,
        ServeOptions {
            roles: vec![Role::Notify],
            poll: false,
        },
    )
    .await?;
    let mut conn = ledger.connection();
    // Let it take the lease and settle into its rhythm first.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let calls0 = mp.calls(routes::MESSAGE_WEB);
    let cmds0 = commands(&mut conn).await?;
    tokio::time::sleep(idle).await;
    let calls = mp.calls(routes::MESSAGE_WEB) - calls0;
    let cmds = commands(&mut conn).await?.saturating_sub(cmds0 + 1);
    relay_only.stop().await?;
    Ok((calls, cmds))
}

/// Every command Redis has run (INFO commandstats: inside scripts too).
async fn commands(conn: &mut oncebot::ledger::Conn) -> anyhow::Result<u64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await?;
    Ok(info
        .lines()
        .filter_map(|l| l.split("calls=").nth(1))
        .filter_map(|rest| rest.split(',').next()?.parse::<u64>().ok())
        .sum())
}
