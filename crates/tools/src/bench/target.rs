//! What the bench measures: a Redis (private, or the operator's under a throwaway key prefix)
//! and the real ingress started in this process on a loopback port.
//!
//! The bench builds its own settings instead of reading the operator's: the figures must not
//! depend on a config file, and an operator's Redis must never see keys outside the bench's own
//! prefix, which are removed at the end.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use hyper::header::HeaderValue;
use redis::AsyncCommands as _;

use super::load::{HttpTarget, Window};
use super::updates::UpdateMaker;
use crate::redis_server::{Persistence, RedisServer};
use crate::rig::OncebotEnv;
use oncebot::app::{self, Role, Running, ServeOptions};
use oncebot::config::Settings;
use oncebot::ingress::webhook::SECRET_HEADER;
use oncebot::ledger::Ledger;

/// Where the bench's Redis comes from.
enum RedisSource {
    /// Started by the bench, without persistence; held only so it lives as long as the bench
    /// (it is killed when dropped).
    Private { _server: RedisServer },
    /// The operator's; only keys under the bench's prefix are written, and removed at the end.
    External { url: String },
}

/// The system under test.
pub struct Target {
    redis: RedisSource,
    pub settings: Settings,
    /// The ledger on the same Redis (its own multiplexed connection), for Redis-only phases
    /// and probes.
    pub ledger: Ledger,
    running: Option<Running>,
    /// The ingress's webhook, with its secret.
    pub webhook: HttpTarget,
    pub updates: Arc<UpdateMaker>,
    next_update_id: i64,
}

/// The bench's Redis: a private one (keys under `oncebot-bench`), or the one at `redis_url`
/// under a fresh prefix; with its URL and the prefix.
async fn bench_redis(redis_url: Option<&str>) -> anyhow::Result<(RedisSource, String, String)> {
    Ok(match redis_url {
        Some(url) => {
            let prefix = format!("oncebot-bench-{:016x}", rand::random::<u64>());
            (
                RedisSource::External {
                    url: url.to_string(),
                },
                url.to_string(),
                prefix,
            )
        }
        None => {
            if !RedisServer::available() {
                anyhow::bail!(
                    "redis-server is not installed: install it (e.g. `apt-get install \
                     redis-server`) or pass --redis-url redis://127.0.0.1:6379"
                );
            }
            let server = tokio::task::spawn_blocking(|| RedisServer::start(Persistence::None))
                .await
                .context("starting redis-server")??;
            let url = server.url();
            (
                RedisSource::Private { _server: server },
                url,
                "oncebot-bench".to_string(),
            )
        }
    })
}

/// The ingress's settings: a webhook with `secret` for `users`, and a Bot API never called.
fn bench_env(url: &str, prefix: &str, cluster: bool, secret: &str, users: &str) -> OncebotEnv {
    OncebotEnv::new(url).set_all([
        ("ONCEBOT__REDIS__KEY_PREFIX", prefix),
        (
            "ONCEBOT__REDIS__CLUSTER",
            if cluster { "true" } else { "false" },
        ),
        ("ONCEBOT__TELEGRAM__TOKEN", "123456:bench-token-never-sent"),
        // Nothing is sent: the dispatcher does not run in this cut of the bench.
        ("ONCEBOT__TELEGRAM__API_URL", "http://127.0.0.1:9"),
        ("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", secret),
        ("ONCEBOT__TELEGRAM__ALLOWED_USERS", users),
    ])
}

impl Target {
    /// Starts Redis (unless `redis_url` is given; `cluster`: it names Redis Cluster nodes) and
    /// the ingress.
    pub async fn start(redis_url: Option<&str>, cluster: bool) -> anyhow::Result<Target> {
        let (redis, url, prefix) = bench_redis(redis_url).await?;
        let updates = Arc::new(UpdateMaker::new());
        let secret = hex::encode(rand::random::<[u8; 16]>());
        let users = updates
            .user_ids()
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let settings = bench_env(&url, &prefix, cluster, &secret, &users)
            .settings()
            .context("the bench's settings")?;
        let ledger = Ledger::connect(
            &settings,
            oncebot::i18n::Texts::new(settings.telegram.locale).for_ledger(),
        )?;
        ledger
            .prepare()
            .await
            .context("preparing the bench's Redis (scripts, consumer groups)")?;
        let mut target = Target {
            redis,
            settings: settings.clone(),
            ledger,
            running: None,
            webhook: HttpTarget {
                addr: ([127, 0, 0, 1], 0).into(),
                path: "/telegram/webhook",
                header: Some((SECRET_HEADER, HeaderValue::from_str(&secret)?)),
            },
            updates,
            next_update_id: 100_000_000,
        };
        let running = app::start(
            settings,
            ServeOptions {
                roles: vec![Role::Ingress],
                poll: false,
            },
        )
        .await
        .context("starting the ingress");
        let running = match running {
            Ok(r) => r,
            Err(e) => {
                target.cleanup().await;
                return Err(e);
            }
        };
        target.webhook.addr = running
            .http_addr
            .context("the ingress reported no HTTP address")?;
        target.running = Some(running);
        Ok(target)
    }

    /// What to print as "redis": never a password.
    pub fn redis_label(&self) -> String {
        match &self.redis {
            RedisSource::Private { .. } => "private (no persistence)".to_string(),
            RedisSource::External { url } => without_password(url),
        }
    }

    /// A block of `n` update ids no other phase uses.
    pub fn reserve_update_ids(&mut self, n: u64) -> i64 {
        let first = self.next_update_id;
        self.next_update_id += i64::try_from(n).unwrap_or(i64::MAX / 4);
        first
    }

    /// Redis's `used_memory` (the whole server's, also on a shared Redis).
    pub async fn used_memory(&self) -> anyhow::Result<u64> {
        used_memory(&self.ledger).await
    }

    /// Jobs created so far (the job id sequence).
    pub async fn jobs_created(&self) -> anyhow::Result<u64> {
        let mut conn = self.ledger.connection();
        let n: Option<u64> = conn
            .get(self.ledger.keys().job_seq())
            .await
            .context("reading the job id sequence")?;
        Ok(n.unwrap_or(0))
    }

    /// Samples CPU use at the window's begin and end (in a task, so callers keep running):
    /// redis-server's from `INFO cpu`, this process's from `/proc/self/stat` (Linux).
    pub fn cpu_during(&self, window: &Arc<Window>) -> tokio::task::JoinHandle<Option<CpuUse>> {
        cpu_during(&self.ledger, window)
    }

    /// Stops the ingress, removes the bench's keys from an external Redis, stops a private one.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        let stopped = match self.running.take() {
            Some(running) => {
                match tokio::time::timeout(Duration::from_secs(10), running.stop()).await {
                    Ok(r) => r,
                    Err(_) => Err(anyhow::anyhow!("the ingress did not stop within 10 s")),
                }
            }
            None => Ok(()),
        };
        self.cleanup().await;
        stopped
    }

    async fn cleanup(&mut self) {
        if let RedisSource::External { .. } = &self.redis {
            match self.delete_bench_keys().await {
                Ok(n) => tracing::info!(keys = n, "removed the bench's keys"),
                Err(e) => tracing::warn!(
                    error = %e,
                    prefix = self.settings.redis.key_prefix,
                    "could not remove the bench's keys; delete keys starting with {{prefix}} by hand"
                ),
            }
        }
        // A private server is killed when `self.redis` drops.
    }

    /// SCAN + UNLINK of every key under the bench's prefix (the hash tag `{prefix}`).
    async fn delete_bench_keys(&self) -> anyhow::Result<u64> {
        delete_prefix(&self.ledger, &self.settings.redis.key_prefix).await
    }
}

/// SCAN + UNLINK of every key under `prefix` (the hash tag `{prefix}`); how many went.
pub(super) async fn delete_prefix(ledger: &Ledger, prefix: &str) -> anyhow::Result<u64> {
    delete_matching(ledger, &format!("{{{prefix}}}*")).await
}

/// SCAN + UNLINK of every key matching `pattern`; how many went.
pub(super) async fn delete_matching(ledger: &Ledger, pattern: &str) -> anyhow::Result<u64> {
    let mut conn = ledger.connection();
    let mut cursor: u64 = 0;
    let mut deleted = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut conn)
            .await
            .context("SCAN")?;
        if !keys.is_empty() {
            let n: u64 = redis::cmd("UNLINK")
                .arg(&keys)
                .query_async(&mut conn)
                .await
                .context("UNLINK")?;
            deleted += n;
        }
        if next == 0 {
            return Ok(deleted);
        }
        cursor = next;
    }
}

/// CPU seconds used in a window.
#[derive(Debug, Clone, Copy)]
pub struct CpuUse {
    pub redis_s: f64,
    pub process_s: f64,
}

/// Redis's `used_memory` (`INFO memory`), the whole server's.
pub(super) async fn used_memory(ledger: &Ledger) -> anyhow::Result<u64> {
    let info = info(ledger, "memory").await.context("INFO memory")?;
    info_field(&info, "used_memory").context("INFO memory has no used_memory")
}

/// `INFO <section>` of the ledger's Redis.
pub(super) async fn info(ledger: &Ledger, section: &str) -> redis::RedisResult<String> {
    let mut conn = ledger.connection();
    redis::cmd("INFO").arg(section).query_async(&mut conn).await
}

/// The value of `name:` in an INFO answer.
pub(super) fn info_field<T: std::str::FromStr>(info: &str, name: &str) -> Option<T> {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
}

/// CPU use of redis-server (behind `ledger`) and of this process during `window`.
pub(super) fn cpu_during(
    ledger: &Ledger,
    window: &Arc<Window>,
) -> tokio::task::JoinHandle<Option<CpuUse>> {
    let ledger = ledger.clone();
    let sampled = at_window_edges(window, move || {
        let ledger = ledger.clone();
        async move { Some((redis_cpu(&ledger).await?, process_cpu()?)) }
    });
    tokio::spawn(async move {
        let ((redis0, process0), (redis1, process1)) = sampled.await.ok()??;
        Some(CpuUse {
            redis_s: redis1 - redis0,
            process_s: process1 - process0,
        })
    })
}

/// Takes `sample` at the window's begin and at its end, in a task of its own so that the
/// callers keep running; `None` if either sample failed.
pub(super) fn at_window_edges<T, F, Fut>(
    window: &Arc<Window>,
    sample: F,
) -> tokio::task::JoinHandle<Option<(T, T)>>
where
    T: Send + 'static,
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = Option<T>> + Send,
{
    let window = window.clone();
    tokio::spawn(async move {
        tokio::time::sleep_until(window.begin().into()).await;
        let before = sample().await?;
        tokio::time::sleep_until(window.end().into()).await;
        let after = sample().await?;
        Some((before, after))
    })
}

/// redis-server's CPU seconds so far (user + sys), or `None` if INFO does not say.
pub(super) async fn redis_cpu(ledger: &Ledger) -> Option<f64> {
    let info = info(ledger, "cpu").await.ok()?;
    Some(info_field::<f64>(&info, "used_cpu_user")? + info_field::<f64>(&info, "used_cpu_sys")?)
}

/// Requests (reads) redis-server has taken from its clients so far, from `INFO stats`
/// (`total_reads_processed`, Redis 6+): fewer per job means more commands per round trip.
pub(super) async fn redis_reads(ledger: &Ledger) -> Option<u64> {
    info_field(&info(ledger, "stats").await.ok()?, "total_reads_processed")
}

/// This process's CPU seconds so far (user + sys), from `/proc/self/stat`; `None` elsewhere
/// than Linux. Clock ticks are taken as 100 per second, the value of USER_HZ on every Linux
/// architecture oncebot runs on.
pub(super) fn process_cpu() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; the fields after its ')' are fixed.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    // utime and stime are fields 14 and 15 of the line, i.e. 12 and 13 after the name.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}

/// `url` with any password replaced by `***` (and unchanged if it does not parse).
fn without_password(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.to_string()
        }
        Err(_) => "(a Redis URL that does not parse)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_cpu_time_is_read_and_grows() {
        let before = process_cpu().unwrap();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        // Spin until a clock tick (10 ms of CPU) shows; on a loaded machine the 10 ms of CPU
        // may take much longer than 10 ms of wall time.
        while process_cpu().unwrap() <= before && start.elapsed() < Duration::from_secs(10) {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
        assert!(process_cpu().unwrap() > before);
    }

    #[test]
    fn a_redis_password_is_never_shown() {
        let shown = without_password("redis://:hunter2@10.0.0.1:6379/0");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("10.0.0.1:6379"), "{shown}");
        assert_eq!(
            without_password("redis+unix:///run/redis.sock"),
            "redis+unix:///run/redis.sock"
        );
    }
}
