//! Recovery in seconds: every worker and dispatcher keeps a liveness key, a process killed
//! outright is known dead as soon as it expires, and its entries are taken at once instead of
//! when their lease (`reclaim_idle_ms`, 60 s here as by default) runs out. Through real
//! processes and SIGKILL; a live process that is merely slow keeps its work, and dead
//! consumers leave the groups.

use std::time::{Duration, Instant};

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::moviepilot::{Fault, routes};

use crate::support::rig::Rig;
use crate::support::{Store, eventually};

/// The lease backstop as by default: recovery faster than this is liveness's doing.
const LEASE: &str = "60000";
/// Long enough for a liveness expiry (3.5 s by default) and a loaded CI machine, far below
/// the lease.
const FAST: Duration = Duration::from_secs(20);

const ALL: [&str; 3] = ["ingress", "worker", "dispatcher"];

async fn lease_rig() -> Rig {
    Rig::with(
        Dialect::V2,
        &[
            ("ONCEBOT__WORKER__RECLAIM_IDLE_MS", LEASE),
            ("ONCEBOT__DISPATCHER__RECLAIM_IDLE_MS", LEASE),
            ("ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS", "10"),
        ],
    )
    .await
}

/// `XINFO CONSUMERS <stream> <group>`: each consumer's name and pending count.
async fn consumers(store: &Store, stream: &str, group: &str) -> Vec<(String, u64)> {
    let mut conn = store.conn().await;
    let rows: redis::RedisResult<Vec<Vec<redis::Value>>> = redis::cmd("XINFO")
        .arg("CONSUMERS")
        .arg(stream)
        .arg(group)
        .query_async(&mut conn)
        .await;
    rows.unwrap_or_else(|e| panic!("XINFO CONSUMERS {stream}: {e}"))
        .into_iter()
        .map(|row| {
            let mut name = String::new();
            let mut pending = 0;
            for pair in row.chunks(2) {
                let key: String = redis::from_redis_value_ref(&pair[0]).unwrap_or_default();
                match key.as_str() {
                    "name" => name = redis::from_redis_value_ref(&pair[1]).unwrap(),
                    "pending" => pending = redis::from_redis_value_ref(&pair[1]).unwrap(),
                    _ => {}
                }
            }
            (name, pending)
        })
        .collect()
}

#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_killed_workers_job_is_taken_by_another_worker_within_the_liveness_expiry() {
    let rig = lease_rig().await;
    let mut dying = rig.start(Some("worker.before_call")).await;
    rig.send(1, "/subscribe tmdb:108545 S1").await;
    dying
        .wait_for_stderr("crash point worker.before_call reached", FAST)
        .await;
    let _other = rig.start_worker_only().await;
    dying.sigkill().await;
    let killed = Instant::now();

    let job = rig.job_in(1, "succeeded", FAST).await;
    let took = killed.elapsed();
    assert!(took < FAST, "{took:?}");
    assert_eq!(job["recoveries"], "1", "{job:?}");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1);
    eprintln!("settled {took:?} after the SIGKILL (lease {LEASE} ms)");
}

#[cfg(feature = "failpoints")]
#[tokio::test]
async fn the_only_worker_restarted_at_once_recovers_its_predecessors_job() {
    let rig = lease_rig().await;
    let mut dying = rig.start(Some("worker.before_call")).await;
    rig.send(1, "/subscribe tmdb:108545 S1").await;
    dying
        .wait_for_stderr("crash point worker.before_call reached", FAST)
        .await;
    dying.sigkill().await;
    let restarted = Instant::now();
    let _bot = rig.start(None).await;

    rig.job_in(1, "succeeded", FAST).await;
    let took = restarted.elapsed();
    assert!(took < FAST, "{took:?}");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1);
    eprintln!("settled {took:?} after the restart (lease {LEASE} ms)");
}

#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_dispatcher_killed_after_a_send_has_its_replies_delivered_soon_after_its_restart() {
    let rig = lease_rig().await;
    let mut dying = rig.start_roles(&ALL, Some("dispatch.after_send")).await;
    for id in 1..=3 {
        rig.send(id, "/subscriptions").await;
    }
    dying
        .wait_for_stderr("crash point dispatch.after_send reached", FAST)
        .await;
    for id in 1..=3 {
        rig.job_in(id, "succeeded", FAST).await;
    }
    dying.sigkill().await;
    let restarted = Instant::now();
    let _bot = rig.start_roles(&ALL, None).await;
    rig.replies_sent(1..=3, FAST).await;
    let took = restarted.elapsed();
    assert!(took < FAST, "{took:?}");
    // At least once: the reply sent just before the kill may be sent again, no other.
    let sends = rig
        .tg
        .calls()
        .into_iter()
        .filter(|c| c.method == "sendMessage" && c.status() == Some(200))
        .count();
    assert!((3..=4).contains(&sends), "{sends} sends for 3 replies");
    eprintln!("delivered {took:?} after the restart, {} resent", sends - 3);
}

/// One of two dispatchers killed while the other lives: the replies it held (the first one
/// sent, the chat's next two waiting behind it) are the live one's within the liveness expiry,
/// and a callback answer queued meanwhile is answered whichever of them holds it.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_killed_dispatchers_entries_are_taken_by_the_dispatcher_that_lives() {
    let rig = lease_rig().await;
    let mut dying = rig.start_roles(&ALL, Some("dispatch.after_send")).await;
    for id in 1..=3 {
        rig.send(id, "/subscriptions").await;
    }
    dying
        .wait_for_stderr("crash point dispatch.after_send reached", FAST)
        .await;
    // A tap on a button nobody issued: answered ("expired") through the callbacks stream.
    let mut tap = oncebot_tools::sim::telegram::callback_update(
        crate::support::ALICE,
        crate::support::ALICE,
        1,
        "t:00000000000000000000000000000000",
    );
    tap["update_id"] = 50.into();
    rig.tg.push_update(tap.clone());
    rig.post(&tap).await;
    let other = crate::support::child::Oncebot::spawn(&["serve", "--role", "dispatcher"], &rig.env);
    other.wait_for_stderr("dispatcher started", FAST).await;
    dying.sigkill().await;
    let killed = Instant::now();
    rig.replies_sent(1..=3, FAST).await;
    let tg = &rig.tg;
    eventually("the tap answered", FAST, || async move {
        tg.calls()
            .iter()
            .any(|c| c.method == "answerCallbackQuery" && c.status() == Some(200))
            .then_some(())
    })
    .await;
    let took = killed.elapsed();
    assert!(took < FAST, "{took:?}");
    eprintln!("delivered {took:?} after the SIGKILL, another dispatcher alive");
}

/// A job that runs far longer than the liveness expiry, on a live worker with another one
/// waiting to take dead workers' entries: never taken.
#[tokio::test]
async fn a_slow_job_on_a_live_worker_is_never_taken_however_short_the_liveness_expiry() {
    let rig = Rig::with(
        Dialect::V2,
        &[
            ("ONCEBOT__REDIS__COMMAND_TIMEOUT_MS", "300"),
            ("ONCEBOT__WORKER__HEARTBEAT_INTERVAL_MS", "100"),
            ("ONCEBOT__WORKER__LIVENESS_TTL_MS", "500"),
            ("ONCEBOT__WORKER__RECLAIM_IDLE_MS", LEASE),
            ("ONCEBOT__MOVIEPILOT__TIMEOUT_SECS", "30"),
        ],
    )
    .await;
    let bot = rig.start(None).await;
    bot.wait_for_stderr("worker started", FAST).await;
    rig.mp
        .fail_next(routes::SUBSCRIBE_LIST, Fault::Delay(Duration::from_secs(8)));
    rig.send(1, "/subscriptions").await;
    let store = &rig.store;
    eventually("the job running", FAST, || async move {
        (store.job(1).await.get("status").map(String::as_str) == Some("running")).then_some(())
    })
    .await;
    let _other = rig.start_worker_only().await;
    let job = rig.job_in(1, "succeeded", FAST).await;
    assert_eq!(job["attempts"], "1", "{job:?}");
    assert!(!job.contains_key("recoveries"), "{job:?}");
}

/// Issue 27: a process with a worker and a dispatcher is one consumer with one liveness key,
/// listed in both groups, so one heartbeat a second keeps both alive.
#[tokio::test]
async fn a_process_with_both_roles_keeps_one_liveness_key_listed_in_both_groups() {
    let rig = lease_rig().await;
    let bot = rig.start_roles(&ALL, None).await;
    bot.wait_for_stderr("dispatcher started", FAST).await;
    bot.wait_for_stderr("worker started", FAST).await;
    let keys = rig.store.keys.clone();
    let mut conn = rig.store.conn().await;
    let mut listed = Vec::new();
    for group in ["workers", "dispatchers"] {
        let names: Vec<String> = redis::cmd("SMEMBERS")
            .arg(keys.consumers(group))
            .query_async(&mut conn)
            .await
            .unwrap();
        listed.push(names);
    }
    assert_eq!(listed[0].len(), 1, "{listed:?}");
    assert_eq!(listed[0], listed[1], "the same consumer in both groups");
    let alive: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}*", keys.alive_prefix()))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(alive, vec![keys.alive(&listed[0][0])]);
    assert!(live_process_named(&bot.stderr(), &listed[0][0]));
}

/// Every restart is a new consumer; the dead ones leave the groups once nothing is pending.
#[tokio::test]
async fn after_many_restarts_the_groups_list_only_the_live_processes() {
    let rig = lease_rig().await;
    let keys = rig.store.keys.clone();
    for round in 0..6i64 {
        let mut bot = rig.start_roles(&ALL, None).await;
        bot.wait_for_stderr("dispatcher started", FAST).await;
        rig.send(round + 1, "/subscriptions").await;
        let store = &rig.store;
        eventually("the reply sent", FAST, || async move {
            (store
                .job(round as u64 + 1)
                .await
                .get("reply_state")
                .map(String::as_str)
                == Some("sent"))
            .then_some(())
        })
        .await;
        if round % 2 == 0 {
            bot.sigkill().await;
        } else {
            bot.signal("TERM");
            bot.wait_exit(FAST).await;
        }
    }
    let live = rig.start_roles(&ALL, None).await;
    live.wait_for_stderr("dispatcher started", FAST).await;
    live.wait_for_stderr("worker started", FAST).await;
    let live_stderr = live.stderr();
    // A consumer appears in a group once it was handed an entry: give the live one work.
    rig.send(100, "/subscriptions").await;
    let store = &rig.store;
    eventually("the live process's reply sent", FAST, || async move {
        (store.job(7).await.get("reply_state").map(String::as_str) == Some("sent")).then_some(())
    })
    .await;
    let (jobs, replies, callbacks) = (
        keys.jobs_stream(),
        keys.replies_stream(),
        keys.callbacks_stream(),
    );
    let (workers, dispatchers) = eventually("only the live consumers", FAST, || {
        let (jobs, replies, callbacks) = (jobs.clone(), replies.clone(), callbacks.clone());
        async move {
            let w = consumers(store, &jobs, "workers").await;
            let r = consumers(store, &replies, "dispatchers").await;
            let c = consumers(store, &callbacks, "dispatchers").await;
            (w.len() == 1 && r.len() == 1 && c.is_empty()).then_some((w, r))
        }
    })
    .await;
    // One process, one consumer name in both groups (issue 27: one heartbeat a process).
    assert_eq!(workers[0].0, dispatchers[0].0);
    // The live ones, and the group lists know only them.
    let mut conn = store.conn().await;
    for (group, live) in [
        ("workers", &workers[0].0),
        ("dispatchers", &dispatchers[0].0),
    ] {
        let listed: Vec<String> = redis::cmd("SMEMBERS")
            .arg(keys.consumers(group))
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(listed, std::slice::from_ref(live), "{group}");
        assert!(
            live_process_named(&live_stderr, live),
            "{live} is the live process"
        );
    }
}

fn live_process_named(stderr: &str, consumer: &str) -> bool {
    stderr.contains(&format!("consumer={consumer}"))
}
