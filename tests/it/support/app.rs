//! oncebot under test, two ways: in this process ([`spawn_app`]: a fresh Redis and
//! `oncebot::app::start` on port 0, the system's choice), or as the real binary in a child process
//! ([`run_oncebot`], [`super::child::Oncebot`]) for what only a process shows: exit codes, stdout vs stderr,
//! signals.
//!
//! Each test gets its own `redis-server` on a unix socket in a temporary directory, so tests
//! share nothing and run in parallel. Settings are built the way the binary builds them
//! (`Settings::load_from` over `ONCEBOT__*` variables), never by filling in structs by hand.
//! Set `TEST_LOG=1` to see the app's logs.

use std::net::SocketAddr;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use oncebot::app::{Role, Running, ServeOptions};
use oncebot::config::Settings;
use oncebot::ingress::Ingress;
use oncebot::ledger::Ledger;
use oncebot_tools::redis_server::{Persistence, RedisServer};
use oncebot_tools::rig::OncebotEnv;
use serde_json::Value;

use super::{ALICE, BOB, BOT_USERNAME, DEADLINE, SECRET, Store};

/// The environment every test app starts from; [`AppBuilder::env`] overrides single entries.
pub fn base_env(redis_url: &str) -> OncebotEnv {
    OncebotEnv::new(redis_url).set_all([
        ("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", SECRET.to_string()),
        ("ONCEBOT__TELEGRAM__ALLOWED_USERS", format!("{ALICE},{BOB}")),
        ("ONCEBOT__TELEGRAM__BOT_USERNAME", BOT_USERNAME.into()),
        // English replies make the assertions on reply texts readable.
        ("ONCEBOT__TELEGRAM__LOCALE", "en".into()),
    ])
}

/// `base_env` for a child process, with `extra` on top, as [`super::child::Oncebot::spawn`]
/// takes it. It listens on 127.0.0.1 port 0; [`super::child::Oncebot::http_addr`] says where.
pub fn child_env(redis_url: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    base_env(redis_url)
        .set_all(extra.iter().copied())
        .vars()
        .to_vec()
}

/// Builds settings from `base_env` plus `overrides`, exactly as the binary would from its
/// environment.
pub fn settings(redis_url: &str, overrides: &[(String, String)]) -> Settings {
    base_env(redis_url)
        .set_all(overrides.iter().map(|(k, v)| (k, v.clone())))
        .settings()
        .unwrap()
}

/// A throwaway Redis with a prepared ledger on it, for tests that call the ledger directly.
pub async fn spawn_ledger(overrides: &[(&str, &str)]) -> (RedisServer, Ledger, Store, Settings) {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let overrides: Vec<_> = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let settings = settings(&redis.url(), &overrides);
    let ledger = Ledger::connect(
        &settings,
        oncebot::i18n::Texts::new(settings.telegram.locale).for_ledger(),
    )
    .unwrap();
    ledger.prepare().await.unwrap();
    let store = Store::new(&redis.url(), &settings.redis.key_prefix);
    (redis, ledger, store, settings)
}

/// Options for [`spawn_app`].
pub struct AppBuilder {
    env: Vec<(String, String)>,
    persistence: Persistence,
    redis_down_at_start: bool,
}

/// An app with the default test settings; see [`AppBuilder`] to change them.
pub fn app() -> AppBuilder {
    AppBuilder {
        env: Vec::new(),
        persistence: Persistence::None,
        redis_down_at_start: false,
    }
}

/// A fresh Redis and oncebot's ingress, in this process, on a port of the system's choosing.
pub async fn spawn_app() -> TestApp {
    app().spawn().await
}

impl AppBuilder {
    /// Overrides one `ONCEBOT__*` setting.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    pub fn persistence(mut self, persistence: Persistence) -> Self {
        self.persistence = persistence;
        self
    }

    /// Starts the app while its Redis is stopped; `TestApp::redis.restart()` brings it up.
    pub fn redis_down_at_start(mut self) -> Self {
        self.redis_down_at_start = true;
        self
    }

    pub async fn spawn(self) -> TestApp {
        if std::env::var_os("TEST_LOG").is_some() {
            oncebot::telemetry::init(&settings("redis://unused", &[]).log, Vec::new());
        }
        let mut redis = RedisServer::start(self.persistence).unwrap();
        if self.redis_down_at_start {
            redis.kill();
        }
        let settings = settings(&redis.url(), &self.env);
        // Only the ingress role: these tests are about admission, and a worker consuming the
        // jobs stream would change the very state they assert on.
        let running = oncebot::app::start(
            settings.clone(),
            ServeOptions {
                roles: vec![Role::Ingress],
                poll: false,
            },
        )
        .await
        .unwrap();
        let addr = running.http_addr.unwrap();
        let store = Store::new(&redis.url(), &settings.redis.key_prefix);
        TestApp {
            addr,
            redis,
            settings,
            store,
            http: reqwest::Client::new(),
            running: Some(running),
        }
    }
}

/// One running oncebot ingress and its private Redis. Stopped when dropped.
pub struct TestApp {
    pub addr: SocketAddr,
    pub redis: RedisServer,
    pub settings: Settings,
    /// A direct view of this app's Redis.
    pub store: Store,
    pub http: reqwest::Client,
    running: Option<Running>,
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// POSTs `update` as Telegram does: JSON, with the right secret.
    pub async fn post_update(&self, update: &Value) -> reqwest::Response {
        self.post_webhook(Some(SECRET), serde_json::to_vec(update).unwrap())
            .await
    }

    /// POSTs `update` and asserts the answer an accepted update gets: 200, empty body.
    pub async fn post_ok(&self, update: &Value) {
        assert_empty_200(self.post_update(update).await).await;
    }

    /// POSTs a raw body to the webhook with the given secret header (none if `None`).
    pub async fn post_webhook(
        &self,
        secret: Option<&str>,
        body: impl Into<reqwest::Body>,
    ) -> reqwest::Response {
        let mut req = self
            .http
            .post(self.url("/telegram/webhook"))
            .header("content-type", "application/json")
            .body(body);
        if let Some(secret) = secret {
            req = req.header("x-telegram-bot-api-secret-token", secret);
        }
        req.send().await.unwrap()
    }

    /// A second `Ingress` over the same settings and Redis: the webhook's decision path, but
    /// returning what it decided (the webhook itself only ever answers an empty 200).
    pub fn ingress(&self) -> Ingress {
        let ledger = Ledger::connect(
            &self.settings,
            oncebot::i18n::Texts::new(self.settings.telegram.locale).for_ledger(),
        )
        .unwrap();
        Ingress::new(&self.settings, ledger)
    }

    /// Graceful shutdown, asserting it finished cleanly.
    pub async fn stop(mut self) {
        if let Some(running) = self.running.take() {
            running.stop().await.unwrap();
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(running) = &self.running {
            running.shutdown.cancel();
        }
    }
}

/// Asserts a webhook answer is what Telegram must get for an accepted update: 200 and an empty
/// body (a body with `method` would be executed by Telegram).
pub async fn assert_empty_200(resp: reqwest::Response) {
    let status = resp.status();
    let body = resp.text().await.unwrap();
    assert_eq!(status, 200, "body: {body:?}");
    assert_eq!(body, "", "a webhook answer must have an empty body");
}

/// What a finished `oncebot` process left behind.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// The real binary, with exactly `env` as its environment (nothing leaks in from the test's).
fn oncebot_command(args: &[&str], env: &[(&str, &str)]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_oncebot"));
    cmd.args(args)
        .env_clear()
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// Runs `oncebot args...` to completion (within [`DEADLINE`]) and captures its output.
pub async fn run_oncebot(args: &[&str], env: &[(&str, &str)]) -> Finished {
    run_oncebot_within(args, env, DEADLINE).await
}

/// [`run_oncebot`] for a command that takes longer (`demo`).
pub async fn run_oncebot_within(
    args: &[&str],
    env: &[(&str, &str)],
    deadline: Duration,
) -> Finished {
    let child = oncebot_command(args, env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = tokio::time::timeout(deadline, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("oncebot {args:?} did not finish within {deadline:?}"))
        .unwrap();
    Finished {
        status: out.status,
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}
