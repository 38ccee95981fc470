//! Long polling end to end: the real `oncebot` binary (`serve --role ingress --poll`) against a
//! private redis-server and the simulated Bot API.

use std::collections::BTreeMap;
use std::time::Duration;

use oncebot::config::Settings;
use oncebot::ledger::{Job, JobFilter, Ledger};
use oncebot_tools::redis_server::{Persistence, RedisServer};
use oncebot_tools::sim::telegram::{Fault, SIM_TOKEN, SimOptions, TelegramSim, text_update};
use redis::AsyncCommands as _;

use crate::support::child::Oncebot;

/// The one allowed user; they write to the bot in their private chat.
const USER: i64 = 4242;

/// Long enough for a busy 2-core machine; every wait returns as soon as its event happens.
const DEADLINE: Duration = Duration::from_secs(20);

const SERVE_POLL: &[&str] = &["serve", "--role", "ingress", "--poll"];

/// The environment of an ingress that polls `sim` and records into `redis`; `extra` overrides.
fn env(redis: &RedisServer, sim: &TelegramSim, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = [
        ("ONCEBOT__REDIS__URL", redis.url()),
        ("ONCEBOT__TELEGRAM__TOKEN", SIM_TOKEN.to_string()),
        ("ONCEBOT__TELEGRAM__API_URL", sim.url()),
        ("ONCEBOT__TELEGRAM__ALLOWED_USERS", USER.to_string()),
        ("ONCEBOT__HTTP__LISTEN", "127.0.0.1:0".to_string()),
        // Long: a test that sees an update quickly proves the long poll was woken, not timed out.
        ("ONCEBOT__TELEGRAM__POLL_TIMEOUT_SECS", "30".to_string()),
        ("ONCEBOT__LOG__LEVEL", "info".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (k, v) in extra {
        env.insert(k.to_string(), v.to_string());
    }
    env.into_iter().collect()
}

/// The test's own view of the ledger the child writes.
fn ledger(env: &[(String, String)]) -> Ledger {
    let settings = Settings::load_from(None, env.iter().cloned()).unwrap();
    Ledger::connect(
        &settings,
        oncebot::i18n::Texts::new(settings.telegram.locale).for_ledger(),
    )
    .unwrap()
}

async fn jobs(ledger: &Ledger) -> Vec<Job> {
    let mut jobs = ledger
        .list_jobs(&JobFilter {
            limit: 100,
            ..JobFilter::default()
        })
        .await
        .unwrap();
    jobs.sort_by_key(|j| j.id);
    jobs
}

async fn stored_offset(ledger: &Ledger) -> Option<i64> {
    let mut conn = ledger.connection();
    conn.get(ledger.keys().poll_offset()).await.unwrap()
}

#[tokio::test]
async fn polled_updates_become_jobs_and_the_offset_advances_past_them() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let sim = TelegramSim::start().await.unwrap();
    let first = sim.push_update(text_update(USER, USER, "/search Dune"));
    let second = sim.push_update(text_update(USER, USER, "/subscribe 三体"));
    let env = env(&redis, &sim, &[]);
    let ledger = ledger(&env);
    let _bot = Oncebot::spawn(SERVE_POLL, &env);

    // The next getUpdates carries offset = last + 1, which confirms both to Telegram.
    sim.wait_for(DEADLINE, |o| o.confirmed_offset() == second + 1)
        .await
        .unwrap();
    assert_eq!(stored_offset(&ledger).await, Some(second + 1));
    let made: Vec<(i64, String, String)> = jobs(&ledger)
        .await
        .into_iter()
        .map(|j| (j.update_id, j.command.clone(), j.args))
        .collect();
    assert_eq!(
        made,
        vec![
            (first, "search".into(), "Dune".into()),
            (second, "subscribe".into(), "三体".into()),
        ]
    );

    // An update pushed while the poller waits ends its 30 s long poll at once.
    sim.wait_for(DEADLINE, |o| o.polls_waiting() == 1)
        .await
        .unwrap();
    let third = sim.push_update(text_update(USER, USER, "/search Arrival"));
    sim.wait_for(Duration::from_secs(10), |o| {
        o.confirmed_offset() == third + 1
    })
    .await
    .unwrap();
    let all = jobs(&ledger).await;
    assert_eq!(all.len(), 3);
    assert_eq!(all[2].update_id, third);
    assert_eq!(stored_offset(&ledger).await, Some(third + 1));
    for id in [first, second, third] {
        assert_eq!(sim.observe(|o| o.deliveries(id)), 1, "update {id}");
    }
}

/// The crash point sits between the admission script and the offset commit: the job exists,
/// the offset does not say so, and Telegram has not been told.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_crash_before_the_offset_commit_rereads_the_update_and_makes_no_second_job() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let sim = TelegramSim::start().await.unwrap();
    let id = sim.push_update(text_update(USER, USER, "/subscribe Dune"));
    let env = env(&redis, &sim, &[]);
    let ledger = ledger(&env);

    let mut crashing = {
        let mut env = env.clone();
        env.push(("FAILPOINTS".into(), "poll.after_enqueue=return".into()));
        Oncebot::spawn(SERVE_POLL, &env)
    };
    crashing
        .wait_for_stderr("oncebot: crash point poll.after_enqueue reached", DEADLINE)
        .await;
    crashing.sigkill().await;

    let before = jobs(&ledger).await;
    assert_eq!(before.len(), 1);
    assert_eq!(before[0].update_id, id);
    assert_eq!(stored_offset(&ledger).await, None);
    assert_eq!(sim.confirmed_offset(), 0);
    assert_eq!(sim.observe(|o| o.pending_updates()), 1);

    let bot = Oncebot::spawn(SERVE_POLL, &env);
    sim.wait_for(DEADLINE, |o| o.confirmed_offset() == id + 1)
        .await
        .unwrap();
    assert_eq!(
        sim.observe(|o| o.deliveries(id)),
        2,
        "Telegram served the unconfirmed update again"
    );
    assert_eq!(stored_offset(&ledger).await, Some(id + 1));
    let after = jobs(&ledger).await;
    assert_eq!(after.len(), 1, "still exactly one job: {after:?}");
    assert_eq!(after[0].id, before[0].id);
    bot.wait_for_stderr("update delivered again; nothing changed", DEADLINE)
        .await;
}

#[tokio::test]
async fn a_webhook_conflict_is_explained_and_polling_resumes_after_delete_webhook() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let sim = TelegramSim::start().await.unwrap();
    sim.set_webhook("https://bot.example.org/telegram/webhook");
    let id = sim.push_update(text_update(USER, USER, "/search Dune"));
    let env = env(
        &redis,
        &sim,
        &[("ONCEBOT__TELEGRAM__POLL_CONFLICT_RETRY_SECS", "1")],
    );
    let ledger = ledger(&env);
    let mut bot = Oncebot::spawn(SERVE_POLL, &env);

    // The log names the cause and the fix, not just Telegram's description.
    bot.wait_for_stderr("a webhook is set for this bot", DEADLINE)
        .await;
    assert!(
        bot.stderr().contains("oncebot webhook delete"),
        "{}",
        bot.stderr()
    );
    // It keeps asking (after the configured pause) instead of giving up.
    sim.wait_for(DEADLINE, |o| o.answered("getUpdates") >= 2)
        .await
        .unwrap();
    assert!(bot.is_running(), "stderr:\n{}", bot.stderr());
    assert!(jobs(&ledger).await.is_empty());

    sim.delete_webhook();
    sim.wait_for(DEADLINE, |o| o.confirmed_offset() == id + 1)
        .await
        .unwrap();
    let made = jobs(&ledger).await;
    assert_eq!(made.len(), 1);
    assert_eq!(made[0].update_id, id);
}

#[tokio::test]
async fn a_rejected_token_stops_the_process_with_a_message_naming_its_variable() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let sim = TelegramSim::start_with(SimOptions {
        token: "987654321:another-bots_token".into(),
        ..SimOptions::default()
    })
    .await
    .unwrap();
    let env = env(&redis, &sim, &[]);
    let mut bot = Oncebot::spawn(SERVE_POLL, &env);

    let status = bot.wait_exit(DEADLINE).await;
    let stderr = bot.stderr();
    assert!(!status.success(), "exit status {status}; stderr:\n{stderr}");
    assert!(stderr.contains("ONCEBOT__TELEGRAM__TOKEN"), "{stderr}");
    let secret_part = SIM_TOKEN.split_once(':').unwrap().1;
    assert!(
        !stderr.contains(secret_part),
        "the token leaked into the log"
    );
    assert_eq!(
        sim.observe(|o| o.unauthorized()),
        1,
        "a bad token is not retried"
    );
}

#[tokio::test]
async fn sigterm_during_a_long_poll_exits_zero_promptly() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let sim = TelegramSim::start().await.unwrap();
    let env = env(&redis, &sim, &[]);
    let mut bot = Oncebot::spawn(SERVE_POLL, &env);

    sim.wait_for(DEADLINE, |o| o.polls_waiting() == 1)
        .await
        .unwrap();
    bot.sigterm();
    // The poll has ~30 s left; shutdown must not wait for it.
    let status = bot.wait_exit(Duration::from_secs(5)).await;
    assert!(
        status.success(),
        "exit status {status}; stderr:\n{}",
        bot.stderr()
    );
}

#[tokio::test]
async fn rate_limits_and_proxy_errors_on_get_updates_are_waited_out() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let sim = TelegramSim::start().await.unwrap();
    sim.fail_next("getUpdates", Fault::RetryAfter(1));
    sim.fail_next("getUpdates", Fault::ServerError(502));
    let id = sim.push_update(text_update(USER, USER, "/search Dune"));
    let env = env(&redis, &sim, &[]);
    let ledger = ledger(&env);
    let _bot = Oncebot::spawn(SERVE_POLL, &env);

    sim.wait_for(DEADLINE, |o| o.confirmed_offset() == id + 1)
        .await
        .unwrap();
    let polls: Vec<_> = sim
        .calls()
        .into_iter()
        .filter(|c| c.method == "getUpdates")
        .collect();
    assert_eq!(polls[0].status(), Some(429));
    assert_eq!(polls[1].status(), Some(502));
    assert_eq!(polls[2].status(), Some(200));
    // retry_after is obeyed, and a proxy error backs off (1 s at first) instead of spinning.
    assert!(polls[1].at - polls[0].at >= Duration::from_secs(1));
    assert!(polls[2].at - polls[1].at >= Duration::from_secs(1));
    assert_eq!(jobs(&ledger).await.len(), 1);
}
