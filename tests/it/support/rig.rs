//! A whole deployment for process-level tests: a private Redis, simulated MoviePilot and Bot API
//! servers, and the environment for `oncebot serve` processes using them (short leases and
//! backoffs so recoveries take about a second).

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use oncebot::moviepilot::Dialect;
use oncebot_tools::redis_server::{Persistence, RedisServer};
use oncebot_tools::rig::Sims;
use oncebot_tools::sim::moviepilot::{MoviePilotSim, SimOptions};
use oncebot_tools::sim::telegram::TelegramSim;
use serde_json::Value;

use super::child::Oncebot;
use super::{ALICE, BOB, SECRET, Store, eventually, private_text};

pub const RECLAIM_IDLE_MS: u64 = 1000;
/// Long enough for a restart plus one reclaim cycle, with room for a loaded CI machine.
pub const RECOVERY_DEADLINE: Duration = Duration::from_secs(20);

/// A Redis, a MoviePilot simulator, and the environment for oncebot processes using them.
pub struct Rig {
    pub redis: RedisServer,
    pub mp: MoviePilotSim,
    pub tg: TelegramSim,
    /// Where the process [`Rig::spawn`] started last listens: the environment says port
    /// 0, so each process gets a free port of its own and logs it.
    addr: Mutex<Option<SocketAddr>>,
    pub env: Vec<(String, String)>,
    pub store: Store,
    pub http: reqwest::Client,
}

/// Whatever the dispatcher sent, no user read a setting name, a URL path or an OS error.
impl Drop for Rig {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let unfit = self.tg.unfit_texts();
        assert!(unfit.is_empty(), "texts no user should read: {unfit:#?}");
    }
}

impl Rig {
    pub async fn new(dialect: Dialect) -> Rig {
        Self::with(dialect, &[]).await
    }

    pub async fn with(dialect: Dialect, overrides: &[(&str, &str)]) -> Rig {
        let opts = match dialect {
            Dialect::V2 => SimOptions::v2_5_6(),
            Dialect::V3 => SimOptions::v3(),
        };
        Self::with_sim(opts, overrides).await
    }

    /// A rig whose MoviePilot simulator behaves as `opts` says (a version, its API token).
    pub async fn with_sim(opts: SimOptions, overrides: &[(&str, &str)]) -> Rig {
        let redis = RedisServer::start(Persistence::None).unwrap();
        Self::with_redis(redis, opts, overrides).await
    }

    /// A rig over `redis`, started as a test needs it (`RedisServer::start_with`'s arguments:
    /// `--maxmemory`, another `--dir`).
    pub async fn with_redis(
        redis: RedisServer,
        opts: SimOptions,
        overrides: &[(&str, &str)],
    ) -> Rig {
        let Sims { mp, tg } = Sims::start(opts).await.unwrap();
        // `Sims::env_of` listens on 127.0.0.1 port 0.
        let env = Sims::env_of(&mp, &tg, &redis.url())
            .set_all([
                ("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", SECRET.into()),
                ("ONCEBOT__TELEGRAM__ALLOWED_USERS", format!("{ALICE},{BOB}")),
                ("ONCEBOT__TELEGRAM__LOCALE", "en".into()),
                ("ONCEBOT__MOVIEPILOT__TIMEOUT_SECS", "5".into()),
                (
                    "ONCEBOT__WORKER__RECLAIM_IDLE_MS",
                    RECLAIM_IDLE_MS.to_string(),
                ),
                ("ONCEBOT__WORKER__RETRY_MIN_DELAY_MS", "100".into()),
                ("ONCEBOT__WORKER__RETRY_MAX_DELAY_MS", "400".into()),
                ("ONCEBOT__WORKER__READ_BLOCK_MS", "200".into()),
                ("ONCEBOT__WORKER__SHUTDOWN_GRACE_SECS", "2".into()),
                ("RUST_LOG", "oncebot=debug,info".into()),
            ])
            .set_all(overrides.iter().map(|(k, v)| (*k, v.to_string())))
            .vars()
            .to_vec();
        let store = Store::new(&redis.url(), "oncebot");
        Rig {
            redis,
            mp,
            tg,
            addr: Mutex::new(None),
            env,
            store,
            http: reqwest::Client::new(),
        }
    }

    /// `oncebot serve --role ingress --role worker`, optionally frozen at a crash point.
    pub async fn start(&self, crash_point: Option<&str>) -> Oncebot {
        self.start_roles(&["ingress", "worker"], crash_point).await
    }

    /// `http://<addr><path>` on the process [`Rig::spawn`] (or `start*`) started last.
    pub fn url(&self, path: &str) -> String {
        let addr = self.addr.lock().unwrap_or_else(|p| p.into_inner());
        let addr = addr.expect("a process started with Rig::spawn or Rig::start*");
        format!("http://{addr}{path}")
    }

    /// The `/metrics` text of the process [`Rig::url`] names.
    pub async fn metrics(&self) -> String {
        let response = self.http.get(self.url("/metrics")).send().await.unwrap();
        response.text().await.unwrap()
    }

    /// The value of one sample on `/metrics` (its name with its labels, as the text writes it:
    /// `oncebot_updates_total{outcome="rejected"}`), `None` when the process does not report it.
    pub async fn metric(&self, sample: &str) -> Option<String> {
        let key = format!("{sample} ");
        let text = self.metrics().await;
        text.lines()
            .find_map(|l| l.strip_prefix(&key).map(|v| v.trim().to_string()))
    }

    /// `oncebot serve` with these roles (ingress among them), once it answers /readyz; its
    /// address is [`Rig::url`]'s from now on.
    pub async fn start_roles(&self, roles: &[&str], crash_point: Option<&str>) -> Oncebot {
        let mut env = self.env.clone();
        if let Some(point) = crash_point {
            env.push(("FAILPOINTS".into(), format!("{point}=return")));
        }
        let mut args = vec!["serve"];
        for role in roles {
            args.extend(["--role", role]);
        }
        let child = self.spawn(&args, &env).await;
        let url = self.url("/readyz");
        let http = self.http.clone();
        eventually("oncebot to be ready", Duration::from_secs(10), || {
            let req = http.get(&url).send();
            async move { req.await.ok().filter(|r| r.status() == 200).map(|_| ()) }
        })
        .await;
        child
    }

    /// Ingress, worker and dispatcher in one process, once its dispatcher reads replies.
    pub async fn start_pipeline(&self) -> Oncebot {
        let bot = self
            .start_roles(&["ingress", "worker", "dispatcher"], None)
            .await;
        bot.wait_for_stderr("dispatcher started", Duration::from_secs(10))
            .await;
        bot
    }

    /// `oncebot <args>` with `env` (the rig's, changed), once it listens; its address is
    /// [`Rig::url`]'s from now on.
    pub async fn spawn(&self, args: &[&str], env: &[(String, String)]) -> Oncebot {
        let child = Oncebot::spawn(args, env);
        let addr = child.http_addr().await;
        *self.addr.lock().unwrap_or_else(|p| p.into_inner()) = Some(addr);
        child
    }

    /// A second worker-only process (on a port of its own), once it reads jobs.
    pub async fn start_worker_only(&self) -> Oncebot {
        let child = Oncebot::spawn(&["serve", "--role", "worker"], &self.env);
        child
            .wait_for_stderr("worker started", Duration::from_secs(10))
            .await;
        child
    }

    pub async fn send(&self, update_id: i64, text: &str) {
        let resp = self
            .http
            .post(self.url("/telegram/webhook"))
            .header("x-telegram-bot-api-secret-token", SECRET)
            .json(&private_text(update_id, ALICE, text))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
    }

    /// Posts any update to the webhook; it must answer 200.
    pub async fn post(&self, update: &Value) {
        let resp = self
            .http
            .post(self.url("/telegram/webhook"))
            .header("x-telegram-bot-api-secret-token", SECRET)
            .json(update)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
    }

    /// Waits until job `id` is in `status`, and returns its HASH.
    pub async fn job_in(
        &self,
        id: u64,
        status: &str,
        deadline: Duration,
    ) -> std::collections::BTreeMap<String, String> {
        let store = &self.store;
        eventually(
            &format!("job {id} to be {status}"),
            deadline,
            || async move {
                let job = store.job(id).await;
                (job.get("status").map(String::as_str) == Some(status)).then_some(job)
            },
        )
        .await
    }

    /// Waits until the replies of jobs `ids` are recorded sent in their jobs.
    pub async fn replies_sent(&self, ids: std::ops::RangeInclusive<u64>, deadline: Duration) {
        let store = &self.store;
        eventually("every reply recorded sent", deadline, || {
            let ids = ids.clone();
            async move {
                for id in ids {
                    if store.job(id).await.get("reply_state").map(String::as_str) != Some("sent") {
                        return None;
                    }
                }
                Some(())
            }
        })
        .await;
    }

    /// `oncebot jobs show <id> --json` against this rig's Redis, as an operator runs it.
    pub async fn job_shown(&self, id: u64) -> Value {
        let url = self.redis.url();
        let id = id.to_string();
        let out = super::app::run_oncebot(
            &["jobs", "show", &id, "--json"],
            &[("ONCEBOT__REDIS__URL", &url)],
        )
        .await;
        assert!(out.status.success(), "{out:?}");
        serde_json::from_str(&out.stdout).unwrap()
    }

    pub async fn replies_for(&self, job: u64) -> Vec<std::collections::BTreeMap<String, String>> {
        self.store
            .replies()
            .await
            .into_iter()
            .filter(|r| r.get("job_id").map(String::as_str) == Some(&job.to_string()))
            .collect()
    }

    pub async fn pending_entries(&self) -> u64 {
        let mut conn = redis::Client::open(self.redis.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let summary: Value = redis::cmd("XPENDING")
            .arg(self.store.keys.jobs_stream())
            .arg(oncebot::ledger::keys::Stream::Jobs.group())
            .query_async::<redis::Value>(&mut conn)
            .await
            .map(|v| match v {
                redis::Value::Array(items) => match items.first() {
                    Some(redis::Value::Int(n)) => Value::from(*n),
                    _ => Value::Null,
                },
                _ => Value::Null,
            })
            .unwrap();
        summary.as_u64().unwrap_or(0)
    }
}
