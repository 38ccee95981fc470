//! The soak's deployment: a private Redis, the two simulators, and one `oncebot serve` child per
//! role (as a household with a compose file per role would run it), each restartable; and the
//! settings of a day compressed `speed` times.

use std::time::Duration;

use anyhow::Context as _;

use crate::redis_server::{Persistence, RedisServer};
use crate::rig::{Oncebot, OncebotCommand, OncebotEnv};
use crate::sim::moviepilot::{MoviePilotSim, SimMedia, SimNotification, SimOptions, SimRelease};
use crate::sim::telegram::TelegramSim;
use oncebot::vocabulary::NotificationType;

/// The roles, one process each, in the order the kills rotate through them.
pub const ROLES: [&str; 4] = ["worker", "dispatcher", "ingress", "notify"];

pub const WEBHOOK_SECRET: &str = "soak-webhook-secret-0123";
pub const WAKE_SECRET: &str = "soak-wake-secret-0123456789";

/// How long a started process may take to listen.
const START: Duration = Duration::from_secs(30);

/// One time-based setting: its name, its default and what the soak runs with.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Scaled {
    pub setting: &'static str,
    pub default_secs: u64,
    pub secs: u64,
    /// Why it is not `default / speed`, when it is not.
    pub note: &'static str,
}

/// Every retention, window and expiry of `config/default.toml` that keeps Redis keys, divided
/// by `speed`, each kept within what the setting's check accepts (a 0 would turn a window off).
pub fn scaled_settings(speed: f64) -> Vec<Scaled> {
    let s = |setting, default_secs: u64, least: u64, note| {
        let want = (default_secs as f64 / speed).round() as u64;
        Scaled {
            setting,
            default_secs,
            secs: want.max(least),
            note: if want < least { note } else { "" },
        }
    };
    let window = "at least 1 s: 0 turns the window off";
    vec![
        s(
            "ledger.update_retention_secs",
            604_800,
            86_400,
            "at least a day: Telegram keeps an update 24 h",
        ),
        s("worker.job_retention_secs", 2_592_000, 1, ""),
        s("dispatcher.reply_retention_secs", 604_800, 1, ""),
        s("telegram.confirm_ttl_secs", 600, 1, "at least 1 s"),
        s("telegram.review_ttl_secs", 86_400, 1, "at least 1 s"),
        s("commands.subscribe_window_secs", 60, 1, window),
        s("commands.best_window_secs", 60, 1, window),
        s("commands.unsubscribe_window_secs", 60, 1, window),
        s("commands.searchnow_window_secs", 300, 1, window),
        s("commands.resources_window_secs", 600, 1, window),
        s("commands.download_window_secs", 86_400, 1, window),
        s("commands.subscribe_search_window_secs", 1800, 1, window),
        s("commands.subscribe_refresh_window_secs", 1800, 1, window),
        s("commands.transfer_window_secs", 300, 1, window),
        s("commands.mediaserver_sync_window_secs", 1800, 1, window),
        s("commands.cookiecloud_window_secs", 600, 1, window),
        s("commands.restart_window_secs", 300, 1, window),
        s("commands.redo_window_secs", 86_400, 1, window),
        s(
            "moviepilot.library_cache_secs",
            600,
            1,
            "at least 1 s: 0 turns the cache off",
        ),
        s(
            "moviepilot.users_refresh_secs",
            600,
            1,
            "at least 1 s: 0 turns the refresh off",
        ),
        s("notify.duplicate_window_secs", 120, 1, window),
        s(
            "notify.requester_ttl_secs",
            7_776_000,
            60,
            "at least 60 s (the setting's check)",
        ),
    ]
}

/// The time-based bounds the soak cannot scale, for the report.
pub const UNSCALED: &str = "not scaled: notify:seen's 7 days (a constant of lua/notify.lua), \
    lock:media's 120 s and notify:wake's 60 s (constants), the liveness and lease timings \
    (they time processes, not records), moviepilot.auth_wait_secs (only while credentials are \
    refused, which the soak does not do)";

/// The environment variable of a `section.key` setting.
fn env_name(setting: &str) -> String {
    format!("ONCEBOT__{}", setting.replace('.', "__").to_uppercase())
}

/// A role's process and the soak minute it started (its RSS series).
pub struct RoleProcess {
    pub role: &'static str,
    pub process: Oncebot,
    pub since_minute: u32,
}

pub struct Scene {
    pub redis: RedisServer,
    pub mp: MoviePilotSim,
    pub tg: TelegramSim,
    pub env: OncebotEnv,
    /// The ingress's fixed address, so that a restarted ingress is where Telegram posts.
    pub ingress: std::net::SocketAddr,
}

/// The running processes, one per role.
pub struct Processes(pub Vec<RoleProcess>);

impl Scene {
    pub async fn start(speed: f64, members: &[i64]) -> anyhow::Result<Scene> {
        let redis = RedisServer::start(Persistence::None)?;
        let mp = MoviePilotSim::start(SimOptions::v2_5_6()).await;
        // Enough matches for a second page of /search (five a page): a page turn to tap; each
        // with two releases to download.
        for i in 1..=8u64 {
            let year = format!("{}", 1978 + i);
            mp.add_media(SimMedia::movie(
                900_000 + i,
                &format!("Star Trek {i}"),
                &year,
            ));
            for site in ["SimSite", "OtherSite"] {
                mp.add_release(SimRelease::movie(
                    900_000 + i,
                    site,
                    &format!("Star.Trek.{i}.{year}.1080p.BluRay.x264"),
                    &format!("Star Trek {i} 1080p"),
                ));
            }
        }
        // A household's MoviePilot has a history: two pages of old notifications, which the
        // relay starts after (notify.backfill 0), so its reads are full pages from the start
        // rather than growing with the run.
        for i in 0..100 {
            mp.notify(SimNotification::new(
                NotificationType::Organize,
                &format!("Old Film {i} (2001) 已入库"),
                "before the soak",
            ));
        }
        let tg = TelegramSim::start().await?;
        let ingress = free_port()?;
        let ids: Vec<String> = members.iter().map(i64::to_string).collect();
        let mut env = OncebotEnv::new(&redis.url())
            .telegram(&tg)
            .moviepilot(&mp)
            .set_all([
                ("ONCEBOT__TELEGRAM__ALLOWED_USERS", ids.join(",")),
                ("ONCEBOT__TELEGRAM__ADMIN_CHATS", ids[0].clone()),
                ("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", WEBHOOK_SECRET.into()),
                ("ONCEBOT__TELEGRAM__LOCALE", "en".into()),
                ("ONCEBOT__DISPATCHER__SET_COMMANDS", "false".into()),
                ("ONCEBOT__NOTIFY__ENABLED", "true".into()),
                ("ONCEBOT__NOTIFY__WEBHOOK_SECRET", WAKE_SECRET.into()),
                // Errors, and the line that says a process listens (it is started then).
                ("RUST_LOG", "error,oncebot::servers=info".into()),
                // RSS in 4 KiB pages: with transparent huge pages (the kernel's `madvise` mode,
                // which mimalloc asks for on its arena) RSS grows in 2 MiB steps up to the
                // allocator's high-water mark, which hides how the heap itself moves.
                ("MIMALLOC_ALLOW_THP", "0".into()),
            ]);
        for s in scaled_settings(speed) {
            env = env.set(&env_name(s.setting), s.secs.to_string());
        }
        Ok(Scene {
            redis,
            mp,
            tg,
            env,
            ingress,
        })
    }

    /// One process per role, each listening.
    pub async fn start_processes(&self) -> anyhow::Result<Processes> {
        let mut processes = Vec::new();
        for role in ROLES {
            processes.push(RoleProcess {
                role,
                process: self.spawn(role).await?,
                since_minute: 0,
            });
        }
        Ok(Processes(processes))
    }

    /// Starts `role` and waits until it listens.
    async fn spawn(&self, role: &'static str) -> anyhow::Result<Oncebot> {
        let mut env = self.env.clone();
        if role == "ingress" {
            env = env.set("ONCEBOT__HTTP__LISTEN", self.ingress.to_string());
        }
        let process = OncebotCommand::serve(std::env::current_exe()?, &[role])
            .oncebot_env(&env)
            .spawn()?;
        process
            .http_addr(START)
            .await
            .with_context(|| format!("the {role} process did not start: {}", process.stderr()))?;
        Ok(process)
    }

    /// SIGKILLs `role`'s process and starts another at once; its RSS series starts at `minute`.
    pub async fn kill_and_restart(
        &self,
        processes: &mut Processes,
        role: &'static str,
        minute: u32,
    ) -> anyhow::Result<()> {
        let p = processes
            .0
            .iter_mut()
            .find(|p| p.role == role)
            .context("no such role")?;
        p.process.sigkill().await?;
        *p = RoleProcess {
            role,
            process: self.spawn(role).await?,
            since_minute: minute,
        };
        Ok(())
    }

    /// MoviePilot goes away for `down` (connections refused) and comes back by itself.
    pub fn moviepilot_away(&self, down: Duration) {
        self.mp.restart_refusing_connections_for(down);
    }

    pub fn webhook_url(&self) -> String {
        format!("http://{}/telegram/webhook", self.ingress)
    }

    pub fn wake_url(&self) -> String {
        format!("http://{}/moviepilot/notify/{WAKE_SECRET}", self.ingress)
    }
}

impl Processes {
    /// SIGTERM to each, waiting for its graceful exit.
    pub async fn stop(mut self) {
        for p in &mut self.0 {
            let _ = p.process.stop(Duration::from_secs(20)).await;
        }
    }
}

/// A port nobody listens on now (bound, then let go).
fn free_port() -> anyhow::Result<std::net::SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?)
}
