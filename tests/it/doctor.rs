//! `oncebot doctor` (issue 43, part 6) as a real process against a healthy world and against
//! each broken piece: a wrong token (Telegram's real 401), a webhook at another URL or failing,
//! a webhook left set while polling, a Redis that may evict (`allkeys-lru` with a `maxmemory`)
//! or keeps nothing on disk, MoviePilot refusing the credentials or not a superuser, an admin
//! chat the bot cannot reach, and peers that never answer (✗ within `--timeout`). It takes no
//! updates, sets or deletes no webhook and writes nothing; `--json` parses; no secret is
//! printed.

use std::time::{Duration, Instant};

use oncebot_tools::redis_server::{Persistence, RedisServer};
use oncebot_tools::rig::OncebotEnv;
use oncebot_tools::sim::moviepilot::{MediaServer, MoviePilotSim, SimOptions, routes};
use oncebot_tools::sim::telegram::{Fault, SIM_BOT_USERNAME, TelegramSim};
use serde_json::Value;

use crate::support::app::{Finished, run_oncebot};
use crate::support::{ALICE, GROUP, SECRET};

const HOOK: &str = "https://bot.example.org/telegram/webhook";
/// Distinctive, so finding one in the output is a leak and not an ordinary word.
const MP_PASSWORD: &str = "doctor-pass_5bd1c0e7";
const MP_API_TOKEN: &str = "doctor-api-token_9f2e41aa";

/// Every check a healthy world with two admin chats prints, in order.
const CHECKS: [&str; 11] = [
    "telegram.token",
    "telegram.webhook",
    "redis.reachable",
    "redis.persistence",
    "redis.eviction",
    "moviepilot.version",
    "moviepilot.credentials",
    "moviepilot.superuser",
    "moviepilot.library",
    "telegram.admin_chats:1001",
    "telegram.admin_chats:-1001234567890",
];

/// A deployment whose every piece works: Redis with the AOF and no memory limit, the webhook
/// registered where the settings say, MoviePilot v3 with a media server and a superuser login,
/// two admin chats the bot is in.
struct World {
    redis: RedisServer,
    tg: TelegramSim,
    mp: MoviePilotSim,
    env: OncebotEnv,
}

impl World {
    async fn healthy() -> World {
        World::with(
            RedisServer::start(Persistence::AofEverySec).unwrap(),
            SimOptions {
                password: MP_PASSWORD.into(),
                api_token: MP_API_TOKEN.into(),
                ..SimOptions::v3()
            },
        )
        .await
    }

    async fn with(redis: RedisServer, mp: SimOptions) -> World {
        let tg = TelegramSim::start().await.unwrap();
        let mp = MoviePilotSim::start(mp).await;
        mp.set_media_server(MediaServer::Configured);
        tg.set_webhook(HOOK);
        let env = OncebotEnv::new(&redis.url())
            .telegram(&tg)
            .moviepilot(&mp)
            .set_all([
                ("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", SECRET),
                ("ONCEBOT__TELEGRAM__WEBHOOK_URL", HOOK),
                ("ONCEBOT__TELEGRAM__ALLOWED_USERS", &ALICE.to_string()),
                ("ONCEBOT__TELEGRAM__BOT_USERNAME", SIM_BOT_USERNAME),
                (
                    "ONCEBOT__TELEGRAM__ADMIN_CHATS",
                    &format!("{ALICE},{GROUP}"),
                ),
            ]);
        World { redis, tg, mp, env }
    }

    /// `oncebot doctor <args>` with this world's settings and `extra` on top.
    async fn doctor(&self, args: &[&str], extra: &[(&str, &str)]) -> Finished {
        let env = self.env.clone().set_all(extra.iter().copied());
        let vars: Vec<(&str, &str)> = env
            .vars()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut argv = vec!["doctor"];
        argv.extend_from_slice(args);
        let out = run_oncebot(&argv, &vars).await;
        self.assert_nothing_changed(&out);
        out
    }

    /// What every run holds to: only reads reached Telegram and MoviePilot, Redis holds no key,
    /// and no secret is in stdout or stderr.
    fn assert_nothing_changed(&self, out: &Finished) {
        for call in self.tg.calls() {
            assert!(
                ["getMe", "getWebhookInfo", "getChat"].contains(&call.method.as_str()),
                "doctor called {}: {out:?}",
                call.method
            );
        }
        for path in self.mp.paths() {
            let read = path.starts_with("GET ")
                || path.starts_with(routes::LOGIN)
                || path.starts_with(routes::MEDIASERVER_NOTEXISTS);
            assert!(read, "doctor sent {path} to MoviePilot");
        }
        let token = self.tg.token();
        for secret in [token.as_str(), MP_PASSWORD, MP_API_TOKEN, SECRET] {
            assert!(!out.stdout.contains(secret), "a secret in stdout: {out:?}");
            assert!(!out.stderr.contains(secret), "a secret in stderr: {out:?}");
        }
    }

    async fn keys_in_redis(&self) -> usize {
        let client = redis::Client::open(self.redis.url()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        redis::cmd("DBSIZE").query_async(&mut conn).await.unwrap()
    }
}

/// The printed line of check `name` (each check is one line, starting ✓ or ✗).
fn line<'a>(out: &'a Finished, name: &str) -> &'a str {
    let prefix = format!(" {name}: ");
    out.stdout
        .lines()
        .find(|l| l[l.find(' ').unwrap_or(0)..].starts_with(&prefix))
        .unwrap_or_else(|| panic!("no line for {name}: {out:?}"))
}

fn passed(out: &Finished, name: &str) -> bool {
    line(out, name).starts_with('✓')
}

#[tokio::test]
async fn a_healthy_world_passes_every_check_and_changes_nothing() {
    let world = World::healthy().await;
    let pending = world
        .tg
        .push_update(crate::support::private_text(1, ALICE, "/status"));

    let out = world.doctor(&[], &[]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), CHECKS.len(), "{out:?}");
    for (line, name) in lines.iter().zip(CHECKS) {
        assert!(line.starts_with(&format!("✓ {name}: ")), "{line}");
        assert!(!line.contains(" — fix: "), "{line}");
    }
    assert!(line(&out, "telegram.token").contains(&format!("@{SIM_BOT_USERNAME}")));
    assert!(line(&out, "telegram.webhook").contains(HOOK));
    assert!(line(&out, "telegram.webhook").contains("1 update(s) pending"));
    assert!(line(&out, "redis.persistence").contains("append-only file"));
    assert!(line(&out, "moviepilot.version").contains("v3.1.0"));
    assert!(line(&out, "moviepilot.version").contains("API dialect v3"));
    assert!(line(&out, "telegram.admin_chats:-1001234567890").contains("supergroup"));
    assert_eq!(out.stderr, "", "{out:?}");

    // Nothing taken, set or written: the update is still Telegram's, the webhook as it was.
    assert_eq!(world.tg.count("getUpdates"), 0);
    assert_eq!(
        world.tg.observe(|o| o.webhook().map(|w| w.url.clone())),
        Some(HOOK.to_string())
    );
    assert!(pending > 0);
    assert_eq!(world.keys_in_redis().await, 0);
    assert_eq!(world.mp.calls(routes::SUBSCRIBE_CREATE), 0);

    let json = world.doctor(&["--json"], &[]).await;
    assert_eq!(json.status.code(), Some(0), "{json:?}");
    let doc: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["ok"], true);
    let checks = doc["checks"].as_array().unwrap();
    let names: Vec<&str> = checks.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, CHECKS);
    for check in checks {
        assert_eq!(check["ok"], true, "{check}");
        assert!(check["detail"].as_str().is_some_and(|d| !d.is_empty()));
        assert!(check["fix"].is_null(), "{check}");
    }
}

#[tokio::test]
async fn a_wrong_token_fails_with_telegrams_401_and_skips_what_needs_it() {
    let world = World::healthy().await;
    let wrong = "123456789:AAwrong-token_that_telegram_refuses";
    let out = world
        .doctor(&[], &[("ONCEBOT__TELEGRAM__TOKEN", wrong)])
        .await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        !out.stdout.contains(wrong) && !out.stderr.contains(wrong),
        "{out:?}"
    );
    let token = line(&out, "telegram.token");
    assert!(token.starts_with('✗'), "{token}");
    assert!(token.contains("401 Unauthorized"), "{token}");
    assert!(
        token.contains("fix: set ONCEBOT__TELEGRAM__TOKEN"),
        "{token}"
    );
    for skipped in ["telegram.webhook", "telegram.admin_chats:1001"] {
        assert!(line(&out, skipped).contains("✗ ") && line(&out, skipped).contains("not checked"));
    }
    // The other peers are still checked.
    for name in ["redis.eviction", "moviepilot.library"] {
        assert!(passed(&out, name), "{out:?}");
    }
    assert!(out.stderr.contains("checks failed"), "{out:?}");

    // The same as JSON: the failed check with its fix.
    let json = world
        .doctor(&["--json"], &[("ONCEBOT__TELEGRAM__TOKEN", wrong)])
        .await;
    assert_eq!(json.status.code(), Some(1), "{json:?}");
    let doc: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["ok"], false);
    let first = &doc["checks"][0];
    assert_eq!(first["name"], "telegram.token");
    assert_eq!(first["ok"], false);
    assert!(
        first["fix"]
            .as_str()
            .unwrap()
            .contains("ONCEBOT__TELEGRAM__TOKEN")
    );
}

#[tokio::test]
async fn a_webhook_elsewhere_or_failing_fails_and_polling_wants_none() {
    let world = World::healthy().await;
    world.tg.set_webhook("https://old.example.org/hook");
    let out = world.doctor(&[], &[]).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let hook = line(&out, "telegram.webhook");
    assert!(hook.starts_with('✗'), "{hook}");
    assert!(
        hook.contains("https://old.example.org/hook") && hook.contains(HOOK),
        "{hook}"
    );
    assert!(hook.contains("fix: run `oncebot webhook set`"), "{hook}");
    assert_eq!(
        out.stdout.matches('✗').count(),
        1,
        "only the webhook: {out:?}"
    );

    // The right URL, but Telegram's last delivery failed just now.
    world.tg.set_webhook(HOOK);
    world
        .tg
        .webhook_delivery_failed("Wrong response from the webhook: 401 Unauthorized");
    let out = world.doctor(&[], &[]).await;
    let hook = line(&out, "telegram.webhook");
    assert!(hook.starts_with('✗'), "{hook}");
    assert!(hook.contains("401 Unauthorized"), "{hook}");
    assert!(hook.contains("ONCEBOT__TELEGRAM__WEBHOOK_SECRET"), "{hook}");

    // Polling: a webhook set is what makes getUpdates fail.
    let out = world.doctor(&["--poll"], &[]).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let polling = line(&out, "telegram.polling");
    assert!(
        polling.starts_with('✗') && polling.contains("oncebot webhook delete"),
        "{polling}"
    );
    world.tg.delete_webhook();
    let out = world.doctor(&["--poll"], &[]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(passed(&out, "telegram.polling"));
    assert_eq!(world.tg.count("getUpdates"), 0);
    assert_eq!(world.tg.count("deleteWebhook"), 0);
}

#[tokio::test]
async fn a_redis_that_may_evict_or_keeps_nothing_on_disk_fails() {
    let lru = RedisServer::start_with(
        Persistence::AofEverySec,
        &["--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"],
    )
    .unwrap();
    let world = World::with(lru, SimOptions::v3()).await;
    let out = world.doctor(&[], &[]).await;
    // A check that failed, not a setting refused: 1, where `serve` would stop with 2.
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let eviction = line(&out, "redis.eviction");
    assert!(eviction.starts_with('✗'), "{eviction}");
    assert!(
        eviction.contains("maxmemory-policy allkeys-lru, maxmemory 100mb"),
        "{eviction}"
    );
    assert!(
        eviction.contains("fix: run `CONFIG SET maxmemory-policy noeviction`"),
        "{eviction}"
    );
    assert!(passed(&out, "redis.persistence"), "{out:?}");
    assert_eq!(world.keys_in_redis().await, 0);

    let bare = World::with(
        RedisServer::start(Persistence::None).unwrap(),
        SimOptions::v3(),
    )
    .await;
    let out = bare.doctor(&[], &[]).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let kept = line(&out, "redis.persistence");
    assert!(
        kept.starts_with('✗') && kept.contains("keeps nothing on disk"),
        "{kept}"
    );
    assert!(kept.contains("CONFIG SET appendonly yes"), "{kept}");
    assert!(passed(&out, "redis.eviction"), "{out:?}");
}

#[tokio::test]
async fn moviepilot_refusing_the_credentials_or_a_plain_user_fails() {
    let world = World::healthy().await;
    let wrong = "not-the-password_31f7c2";
    let out = world
        .doctor(&[], &[("ONCEBOT__MOVIEPILOT__PASSWORD", wrong)])
        .await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        !out.stdout.contains(wrong) && !out.stderr.contains(wrong),
        "{out:?}"
    );
    assert!(passed(&out, "moviepilot.version"), "{out:?}");
    let credentials = line(&out, "moviepilot.credentials");
    assert!(credentials.starts_with('✗'), "{credentials}");
    assert!(
        credentials.contains("refused the username or password"),
        "{credentials}"
    );
    assert!(
        credentials.contains("ONCEBOT__MOVIEPILOT__PASSWORD"),
        "{credentials}"
    );
    for skipped in ["moviepilot.superuser", "moviepilot.library"] {
        assert!(line(&out, skipped).contains("not checked"), "{out:?}");
    }

    world.mp.set_superuser("admin", false);
    let out = world.doctor(&[], &[]).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let superuser = line(&out, "moviepilot.superuser");
    assert!(superuser.starts_with('✗'), "{superuser}");
    assert!(superuser.contains("not a superuser"), "{superuser}");
    assert!(
        superuser.contains("fix: make MoviePilot user \"admin\" a superuser"),
        "{superuser}"
    );
    assert!(passed(&out, "moviepilot.credentials"), "{out:?}");
}

#[tokio::test]
async fn an_admin_chat_the_bot_cannot_reach_fails_with_how_to_reach_it() {
    let world = World::healthy().await;
    world.tg.lose_chat(GROUP);
    let out = world.doctor(&[], &[]).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let chat = line(&out, "telegram.admin_chats:-1001234567890");
    assert!(
        chat.starts_with('✗') && chat.contains("chat not found"),
        "{chat}"
    );
    assert!(chat.contains("add the bot to that group"), "{chat}");
    assert!(passed(&out, "telegram.admin_chats:1001"), "{out:?}");
}

#[tokio::test]
async fn peers_that_never_answer_fail_within_the_timeout() {
    let world = World::healthy().await;
    // Accepts connections (the kernel does) and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    world.tg.fail_next("getMe", Fault::Held);
    let started = Instant::now();
    let out = world
        .doctor(
            &["--timeout", "1"],
            &[("ONCEBOT__MOVIEPILOT__URL", silent_url.as_str())],
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    for name in ["telegram.token", "moviepilot.version"] {
        let l = line(&out, name);
        assert!(
            l.starts_with('✗') && l.contains("no answer within 1 s"),
            "{l}"
        );
    }
    assert!(passed(&out, "redis.reachable"), "{out:?}");
    world.tg.release_held();
}

#[tokio::test]
async fn a_setting_serve_would_refuse_exits_2_before_any_check() {
    let world = World::healthy().await;
    let out = world
        .doctor(&[], &[("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", "")])
        .await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(out.stdout, "");
    assert!(out.stderr.contains("telegram.webhook_secret"), "{out:?}");
    assert!(world.tg.calls().is_empty());
    // Polling needs no webhook secret.
    let out = world
        .doctor(&["--poll"], &[("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", "")])
        .await;
    assert_ne!(out.status.code(), Some(2), "{out:?}");
}
