//! Issue 46, part 2: a Redis that may evict oncebot's keys (`maxmemory` set and a
//! `maxmemory-policy` other than `noeviction`), through real `redis-server` processes started
//! with those settings or changed with `CONFIG SET` while oncebot runs: start-up stops with one
//! line and exit 2 (`redis.allow_eviction` goes on, warning), `maxmemory 0` and a renamed
//! `CONFIG` only warn, and found live the webhook answers 503, polling admits nothing and
//! `/readyz` says why, until it is fixed; then the update Telegram delivers again is admitted
//! once. On a cluster the line names the master.

use oncebot::ledger::Ledger;
use oncebot::moviepilot::Dialect;
use oncebot::servers::HTTP_LISTENING;
use oncebot_tools::redis_server::{Persistence, RedisServer};
use oncebot_tools::sim::telegram::{SIM_TOKEN, TelegramSim, text_update};
use redis::AsyncCommands as _;

use crate::support::app::{child_env, run_oncebot};
use crate::support::child::Oncebot;
use crate::support::cluster::Cluster;
use crate::support::rig::Rig;
use crate::support::{ALICE, DEADLINE, SECRET, Store, eventually, private_text};

/// A Redis run as a cache, as many images and hosting defaults do.
const LRU_100MB: [&str; 4] = ["--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"];

const SERVE_INGRESS: &[&str] = &["serve", "--role", "ingress"];

/// The line the live check logs when it finds an evicting policy (once per episode).
const FOUND_LIVE: &str = "Redis may evict oncebot's keys (maxmemory-policy allkeys-lru";
/// The line it logs when the policy is fixed.
const FIXED_LIVE: &str = "no longer evicts oncebot's keys";

fn as_refs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// `CONFIG SET name value` for each pair, on the Redis at `url`.
async fn config_set(url: &str, settings: &[(&str, &str)]) {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    for (name, value) in settings {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg(name)
            .arg(value)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
}

/// `/readyz`'s status and body.
async fn readyz(http: &reqwest::Client, url: &str) -> (u16, String) {
    let resp = http.get(url).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// Waits until `/readyz` answers `status`; its body then.
async fn ready_is(http: &reqwest::Client, url: &str, status: u16) -> String {
    eventually(&format!("/readyz to answer {status}"), DEADLINE, || async {
        let (got, body) = readyz(http, url).await;
        (got == status).then_some(body)
    })
    .await
}

/// The one line `oncebot` printed for its error (`oncebot: ...`).
fn error_line(stderr: &str) -> &str {
    stderr
        .lines()
        .find(|l| l.starts_with("oncebot: "))
        .unwrap_or_else(|| panic!("no error line in:\n{stderr}"))
}

#[tokio::test]
async fn an_evicting_policy_at_start_stops_serve_with_exit_2_and_one_line_with_the_fix() {
    let redis = RedisServer::start_with(Persistence::None, &LRU_100MB).unwrap();
    let env = child_env(&redis.url(), &[]);
    let out = run_oncebot(SERVE_INGRESS, &as_refs(&env)).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(out.stdout, "");
    let line = error_line(&out.stderr);
    for words in [
        "maxmemory-policy allkeys-lru, maxmemory 100mb",
        "run twice or be lost",
        "`CONFIG SET maxmemory-policy noeviction` and `CONFIG REWRITE`",
        "--maxmemory-policy noeviction",
        "ONCEBOT__REDIS__ALLOW_EVICTION=true",
    ] {
        assert!(line.contains(words), "{words:?} not in {line}");
    }
    assert!(
        !out.stderr.contains(HTTP_LISTENING),
        "it stopped before listening:\n{}",
        out.stderr
    );
    // Nothing was admitted: only the empty streams that preparing the ledger makes.
    Store::new(&redis.url(), "oncebot").assert_pristine().await;
}

#[tokio::test]
async fn with_allow_eviction_the_same_redis_starts_warning_and_admits() {
    let redis = RedisServer::start_with(Persistence::None, &LRU_100MB).unwrap();
    let env = child_env(
        &redis.url(),
        &[
            ("ONCEBOT__REDIS__ALLOW_EVICTION", "true"),
            ("ONCEBOT__REDIS__POLICY_CHECK_SECS", "1"),
        ],
    );
    let mut bot = Oncebot::spawn(SERVE_INGRESS, &env);
    let http = reqwest::Client::new();
    ready_is(&http, &bot.url("/readyz").await, 200).await;
    assert!(
        bot.stderr()
            .contains("ONCEBOT__REDIS__ALLOW_EVICTION=true goes on anyway"),
        "{}",
        bot.stderr()
    );
    let resp = http
        .post(bot.url("/telegram/webhook").await)
        .header("x-telegram-bot-api-secret-token", SECRET)
        .json(&private_text(1, ALICE, "/subscribe Dune"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        Store::new(&redis.url(), "oncebot").job_ids().await,
        [1].into()
    );
    bot.sigterm();
    assert_eq!(
        bot.wait_exit(DEADLINE).await.code(),
        Some(0),
        "{}",
        bot.stderr()
    );
    // Allowed, the live check has nothing to say: no 503 episode was logged.
    assert!(
        !bot.stderr().contains("the webhook answers 503"),
        "{}",
        bot.stderr()
    );
}

/// `maxmemory 0` (nothing is evicted), a `CONFIG` that is not there (renamed, as managed
/// Redis does) and one the ACL refuses: each starts, with its own warning.
#[tokio::test]
async fn no_maxmemory_or_a_renamed_or_refused_config_starts_with_a_warning() {
    let no_limit = RedisServer::start_with(
        Persistence::None,
        &["--maxmemory", "0", "--maxmemory-policy", "allkeys-lru"],
    )
    .unwrap();
    starts_warning(
        &no_limit.url(),
        "nothing is evicted while maxmemory is 0, but if someone sets it",
    )
    .await;
    let renamed =
        RedisServer::start_with(Persistence::None, &["--rename-command", "CONFIG", ""]).unwrap();
    starts_warning(
        &renamed.url(),
        "(CONFIG is renamed, as on managed Redis): make sure maxmemory-policy is noeviction",
    )
    .await;
    // A user allowed everything but CONFIG.
    let refused = RedisServer::start_with(Persistence::None, &LRU_100MB).unwrap();
    let client = redis::Client::open(refused.url()).unwrap();
    let mut admin = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER",
            "oncebot",
            "on",
            ">a-long-password",
            "~*",
            "&*",
            "+@all",
            "-config",
        ])
        .query_async(&mut admin)
        .await
        .unwrap();
    let as_user = format!("{}?user=oncebot&pass=a-long-password", refused.url());
    starts_warning(
        &as_user,
        "(CONFIG is refused (NOPERM), as on managed Redis): make sure maxmemory-policy is noeviction",
    )
    .await;
}

/// `serve --role ingress` against `redis_url` becomes ready and has logged `warning`.
async fn starts_warning(redis_url: &str, warning: &str) {
    let env = child_env(redis_url, &[]);
    let mut bot = Oncebot::spawn(SERVE_INGRESS, &env);
    let http = reqwest::Client::new();
    ready_is(&http, &bot.url("/readyz").await, 200).await;
    assert!(
        bot.stderr().contains(warning),
        "{warning:?} not in:\n{}",
        bot.stderr()
    );
    bot.sigterm();
    assert_eq!(
        bot.wait_exit(DEADLINE).await.code(),
        Some(0),
        "{}",
        bot.stderr()
    );
}

/// Found while running: within `redis.policy_check_secs` the webhook answers 503 with
/// `Retry-After` (counted) and `/readyz` says which policy to change, one warning in the log;
/// fixed, the update Telegram delivers again is admitted, run and answered once.
#[tokio::test]
async fn an_evicting_policy_set_live_makes_the_webhook_503_until_it_is_fixed() {
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__REDIS__POLICY_CHECK_SECS", "1")]).await;
    let bot = rig.start_pipeline().await;
    rig.send(1, "/search Dune").await;
    rig.job_in(1, "succeeded", DEADLINE).await;

    config_set(
        &rig.redis.url(),
        &[("maxmemory", "100mb"), ("maxmemory-policy", "allkeys-lru")],
    )
    .await;
    let why = ready_is(&rig.http, &rig.url("/readyz"), 503).await;
    assert_eq!(
        why,
        "not ready: Redis may evict oncebot's keys (maxmemory-policy allkeys-lru): set it to \
         noeviction\n"
    );
    let update = private_text(2, ALICE, "/search Arrival");
    let post = || {
        rig.http
            .post(rig.url("/telegram/webhook"))
            .header("x-telegram-bot-api-secret-token", SECRET)
            .json(&update)
            .send()
    };
    let refused = post().await.unwrap();
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(rig.store.update(2).await, None, "nothing of it was written");
    // The gate stands after the door's own checks: secret, then shape.
    let wrong_secret = rig
        .http
        .post(rig.url("/telegram/webhook"))
        .header("x-telegram-bot-api-secret-token", "not-the-secret-0123")
        .json(&update)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_secret.status(), 401);
    let no_update = rig
        .http
        .post(rig.url("/telegram/webhook"))
        .header("x-telegram-bot-api-secret-token", SECRET)
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(no_update.status(), 400);
    assert_eq!(rig.store.job_ids().await, [1].into());
    let counted = rig
        .metric("oncebot_updates_total{outcome=\"redis_evicting\"}")
        .await;
    assert_eq!(counted.as_deref(), Some("1"));

    config_set(&rig.redis.url(), &[("maxmemory-policy", "noeviction")]).await;
    // Telegram delivers again until it gets a 200.
    eventually(
        "the webhook to admit the update again",
        DEADLINE,
        || async {
            match post().await.unwrap().status().as_u16() {
                200 => Some(()),
                503 => None,
                other => panic!("unexpected status {other}"),
            }
        },
    )
    .await;
    // And once more, as a retry racing the first success would.
    assert_eq!(post().await.unwrap().status(), 200);
    rig.job_in(2, "succeeded", DEADLINE).await;
    rig.replies_sent(1..=2, DEADLINE).await;
    assert_eq!(rig.store.job_ids().await, [1, 2].into());
    assert_eq!(rig.store.update(2).await.as_deref(), Some("2"));
    assert_eq!(
        ready_is(&rig.http, &rig.url("/readyz"), 200).await,
        "ready\n"
    );
    let log = bot.stderr();
    assert_eq!(log.matches(FOUND_LIVE).count(), 1, "{log}");
    assert_eq!(log.matches(FIXED_LIVE).count(), 1, "{log}");
}

/// A Redis down at start-up is checked as soon as it answers (every few seconds until a read
/// works, not after the default five minutes): one that comes up evicting is refused live.
#[tokio::test]
async fn a_redis_down_at_start_that_comes_up_evicting_is_found_within_seconds() {
    let mut redis = RedisServer::start_with(Persistence::None, &LRU_100MB).unwrap();
    redis.kill();
    let env = child_env(&redis.url(), &[]);
    let bot = Oncebot::spawn(SERVE_INGRESS, &env);
    let http = reqwest::Client::new();
    let ready = bot.url("/readyz").await;
    assert_eq!(readyz(&http, &ready).await.0, 503, "Redis is down");
    redis.restart().unwrap();
    let why = eventually("/readyz to name the policy", DEADLINE, || async {
        let (status, body) = readyz(&http, &ready).await;
        (status == 503 && body.contains("maxmemory-policy allkeys-lru")).then_some(body)
    })
    .await;
    assert!(why.contains("set it to noeviction"), "{why}");
    bot.wait_for_stderr(FOUND_LIVE, DEADLINE).await;
}

/// Polling found live: an update a long poll brings back meanwhile is not admitted and the
/// offset stays before it; fixed, it is read again and admitted once.
#[tokio::test]
async fn an_evicting_policy_set_live_stops_polling_from_admitting_until_it_is_fixed() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let sim = TelegramSim::start().await.unwrap();
    let env = child_env(
        &redis.url(),
        &[
            ("ONCEBOT__TELEGRAM__TOKEN", SIM_TOKEN),
            ("ONCEBOT__TELEGRAM__API_URL", &sim.url()),
            ("ONCEBOT__TELEGRAM__POLL_TIMEOUT_SECS", "30"),
            ("ONCEBOT__REDIS__POLICY_CHECK_SECS", "1"),
        ],
    );
    let bot = Oncebot::spawn(&["serve", "--role", "ingress", "--poll"], &env);
    let http = reqwest::Client::new();
    let ready = bot.url("/readyz").await;
    let first = sim.push_update(text_update(ALICE, ALICE, "/search Dune"));
    sim.wait_for(DEADLINE, |o| o.confirmed_offset() == first + 1)
        .await
        .unwrap();

    config_set(
        &redis.url(),
        &[("maxmemory", "100mb"), ("maxmemory-policy", "allkeys-lru")],
    )
    .await;
    ready_is(&http, &ready, 503).await;
    // The poller is in the long poll it sent before: the update ends it.
    let second = sim.push_update(text_update(ALICE, ALICE, "/search Arrival"));
    bot.wait_for_stderr("update not admitted", DEADLINE).await;
    let settings = oncebot::config::Settings::load_from(None, env.iter().cloned()).unwrap();
    let ledger = Ledger::connect(
        &settings,
        oncebot::i18n::Texts::new(settings.telegram.locale).for_ledger(),
    )
    .unwrap();
    let offset = || async {
        let mut conn = ledger.connection();
        let at: Option<i64> = conn.get(ledger.keys().poll_offset()).await.unwrap();
        at
    };
    let store = Store::new(&redis.url(), "oncebot");
    assert_eq!(offset().await, Some(second));
    assert_eq!(store.update(second).await, None);
    assert_eq!(store.job_ids().await, [1].into());

    config_set(&redis.url(), &[("maxmemory-policy", "noeviction")]).await;
    sim.wait_for(DEADLINE, |o| o.confirmed_offset() == second + 1)
        .await
        .unwrap();
    assert_eq!(offset().await, Some(second + 1));
    assert_eq!(store.job_ids().await, [1, 2].into());
    assert_eq!(store.update(second).await.as_deref(), Some("2"));
    assert_eq!(ready_is(&http, &ready, 200).await, "ready\n");
}

/// A cluster whose one master runs as a cache: start-up stops, naming that master.
#[tokio::test]
async fn on_a_cluster_one_evicting_master_stops_start_up_naming_it() {
    let cluster = Cluster::start().await;
    let masters = cluster.masters().await;
    let evicting = &cluster.nodes[masters[1]];
    config_set(
        &evicting.url(),
        &[("maxmemory", "100mb"), ("maxmemory-policy", "volatile-lru")],
    )
    .await;
    let seeds = masters
        .iter()
        .map(|&m| cluster.nodes[m].url())
        .collect::<Vec<_>>()
        .join(",");
    let env = child_env(&seeds, &[("ONCEBOT__REDIS__CLUSTER", "true")]);
    let out = run_oncebot(SERVE_INGRESS, &as_refs(&env)).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let line = error_line(&out.stderr);
    let named = format!(
        "maxmemory-policy volatile-lru, maxmemory 100mb, on node 127.0.0.1:{}",
        evicting.port
    );
    assert!(line.contains(&named), "{named:?} not in {line}");
    assert!(line.contains("on that node"), "{line}");

    // Fixed on that master, the same settings start.
    config_set(&evicting.url(), &[("maxmemory-policy", "noeviction")]).await;
    let mut bot = Oncebot::spawn(SERVE_INGRESS, &env);
    ready_is(&reqwest::Client::new(), &bot.url("/readyz").await, 200).await;
    bot.sigterm();
    assert_eq!(
        bot.wait_exit(DEADLINE).await.code(),
        Some(0),
        "{}",
        bot.stderr()
    );
}
