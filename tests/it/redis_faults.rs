//! Redis refusing writes, as a household's server meets it: a shared Redis at its `maxmemory`
//! under `noeviction` (`OOM`), a disk that vanished under an RDB save or an AOF that cannot be
//! written (`MISCONF`). Real redis-server processes, the real binary, the simulators.
//!
//! What each test holds: the webhook answers 503 while writes are refused (counted in
//! `oncebot_updates_total{outcome="writes_refused"}`) and admits nothing halfway; `/readyz` names
//! the cause; the admin chat is told once when it starts and once when it ends; a worker that
//! finished a job meanwhile keeps its outcome and records it when Redis takes writes again
//! (its liveness key expired meanwhile included); and then every update is one job, every
//! effect happened once at MoviePilot, every reply was delivered once.

use std::path::Path;

use oncebot::vocabulary::NotificationType;
use oncebot_tools::redis_server::{Persistence, RedisServer};
use oncebot_tools::sim::moviepilot::{SimNotification, SimOptions, routes};
use oncebot_tools::sim::telegram::{Fault, text_update};
use serde_json::Value;

use crate::support::child::Oncebot;
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, GROUP, SECRET, eventually, private_text};

/// Room for the ledger of a short test, and little more: another client fills the rest.
const MAXMEMORY: &str = "24mb";

/// The settings every test here adds: `GROUP` is the admin chat, no "working on it" message
/// (so a chat's messages are its replies), and MoviePilot's answers awaited for as long as a
/// test holds them.
const SETTINGS: [(&str, &str); 3] = [
    ("ONCEBOT__TELEGRAM__ADMIN_CHATS", "-1001234567890"),
    ("ONCEBOT__WORKER__PROGRESS_AFTER_MS", "0"),
    ("ONCEBOT__MOVIEPILOT__TIMEOUT_SECS", "60"),
];

/// The admin notices' first words (English: the rig's locale).
const FULL: &str = "Redis (oncebot's database) is full and refuses writes.";
const NOT_SAVED: &str = "Redis (oncebot's database) could not save its data to disk";
const OVER: &str = "Redis takes writes again";

const WRITES_REFUSED: &str = r#"oncebot_updates_total{outcome="writes_refused"}"#;

async fn rig_over(redis: RedisServer) -> Rig {
    assert_eq!(GROUP.to_string(), SETTINGS[0].1);
    Rig::with_redis(redis, SimOptions::v2_5_6(), &SETTINGS).await
}

async fn connection(rig: &Rig) -> redis::aio::MultiplexedConnection {
    redis::Client::open(rig.redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Another client's keys (`filler:<n>`) until Redis refuses even a small one with OOM: big
/// values first, then smaller ones (a refused big value's own request was what tipped it).
async fn fill(rig: &Rig) -> Vec<String> {
    let mut conn = connection(rig).await;
    let mut keys = Vec::new();
    for size in [512 * 1024, 16 * 1024, 64] {
        let value = vec![b'x'; size];
        loop {
            assert!(
                keys.len() < 100_000,
                "Redis took too much under {MAXMEMORY}"
            );
            let key = format!("filler:{}", keys.len());
            let set: redis::RedisResult<()> = redis::cmd("SET")
                .arg(&key)
                .arg(&value)
                .query_async(&mut conn)
                .await;
            match set {
                Ok(()) => keys.push(key),
                Err(e) => {
                    assert_eq!(e.code(), Some("OOM"), "{e}");
                    break;
                }
            }
        }
    }
    // Full, but only just: the filling client's own buffers count, and its leaving would let a
    // few writes in again. Redis at its limit for good: the limit a little below what the
    // keys hold (the filler's deletion frees far more).
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(&mut conn)
        .await
        .unwrap();
    let used: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(used - 2 * 1024 * 1024)
        .query_async(&mut conn)
        .await
        .unwrap();
    keys
}

/// `/readyz` of the process the rig started last.
async fn readyz(rig: &Rig) -> (u16, String) {
    let resp = rig.http.get(rig.url("/readyz")).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// Waits until `/readyz` answers `status` with `text` in its body.
async fn readyz_says(rig: &Rig, status: u16, text: &str) {
    eventually(
        &format!("/readyz to answer {status} with {text:?}"),
        RECOVERY_DEADLINE,
        || async move {
            let (s, body) = readyz(rig).await;
            (s == status && body.contains(text)).then_some(())
        },
    )
    .await;
}

/// POSTs `update` to the webhook as Telegram does; its status and `Retry-After`.
async fn deliver(rig: &Rig, update: &Value) -> (u16, Option<String>) {
    let resp = rig
        .http
        .post(rig.url("/telegram/webhook"))
        .header("x-telegram-bot-api-secret-token", SECRET)
        .json(update)
        .send()
        .await
        .unwrap();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    (resp.status().as_u16(), retry_after)
}

/// The texts sent to the admin chat that contain `needle`.
fn notices(rig: &Rig, needle: &str) -> usize {
    rig.tg
        .sent()
        .iter()
        .filter(|m| m.chat_id == GROUP && m.text.contains(needle))
        .count()
}

async fn notice_arrives(rig: &Rig, needle: &str) {
    rig.tg
        .wait_for(RECOVERY_DEADLINE, |o| {
            o.sent()
                .iter()
                .any(|m| m.chat_id == GROUP && m.text.contains(needle))
        })
        .await
        .unwrap_or_else(|e| panic!("no admin notice {needle:?}: {e}"));
}

/// Each of jobs 1..=`jobs` succeeded with its reply sent, and ALICE got exactly one message
/// per job.
async fn every_job_done_once(rig: &Rig, jobs: u64) {
    for id in 1..=jobs {
        rig.job_in(id, "succeeded", RECOVERY_DEADLINE).await;
    }
    rig.replies_sent(1..=jobs, RECOVERY_DEADLINE).await;
    let to_alice = rig.tg.sent().iter().filter(|m| m.chat_id == ALICE).count();
    assert_eq!(
        to_alice as u64,
        jobs,
        "one reply per job: {:#?}",
        rig.tg.sent()
    );
    assert!(
        rig.store.job(jobs + 1).await.is_empty(),
        "no update became two jobs"
    );
    assert_eq!(rig.pending_entries().await, 0, "nothing left pending");
}

#[tokio::test]
async fn a_full_redis_gets_503s_keeps_the_outcome_and_loses_nothing_once_freed() {
    let redis = RedisServer::start_with(
        Persistence::None,
        &["--maxmemory", MAXMEMORY, "--maxmemory-policy", "noeviction"],
    )
    .unwrap();
    let rig = rig_over(redis).await;
    let bot = rig.start_pipeline().await;

    // Job 1 reaches MoviePilot, which holds its create while Redis fills up.
    rig.mp.hold(routes::SUBSCRIBE_CREATE);
    rig.send(1, "/subscribe tmdb:108545 S1").await;
    let mp = &rig.mp;
    eventually(
        "the create to reach MoviePilot",
        RECOVERY_DEADLINE,
        || async move { (mp.calls(routes::SUBSCRIBE_CREATE) == 1).then_some(()) },
    )
    .await;
    let filler = fill(&rig).await;
    readyz_says(&rig, 503, "not ready: Redis refuses writes: out of memory").await;
    notice_arrives(&rig, FULL).await;

    // The create takes effect at MoviePilot; the worker cannot record it, and keeps it.
    rig.mp.release(routes::SUBSCRIBE_CREATE);
    bot.wait_for_stderr(
        "keeping it and trying until Redis takes it",
        RECOVERY_DEADLINE,
    )
    .await;
    assert_eq!(rig.mp.subscriptions().len(), 1);

    // Updates meanwhile: each 503 with Retry-After, nothing written, each counted.
    let texts = [
        "/subscribe tmdb:438631",
        "/subscribe tmdb:693134",
        "/subscribe tmdb:63639 S2",
        "/subscriptions",
    ];
    let updates: Vec<Value> = (2..)
        .zip(texts)
        .map(|(id, text)| private_text(id, ALICE, text))
        .collect();
    for update in &updates {
        let (status, retry_after) = deliver(&rig, update).await;
        assert_eq!(status, 503, "{update}");
        assert!(retry_after.is_some(), "503 without Retry-After");
    }
    for id in 2..=5 {
        assert_eq!(
            rig.store.update(id).await,
            None,
            "update {id} was not recorded"
        );
    }
    assert!(rig.store.job(2).await.is_empty(), "no job was made");
    assert_eq!(rig.metric(WRITES_REFUSED).await.as_deref(), Some("4"));
    assert_eq!(
        rig.metric("oncebot_redis_writes_refused").await.as_deref(),
        Some("1")
    );
    // Duplicates of an admitted update need no write: still 200.
    rig.send(1, "/subscribe tmdb:108545 S1").await;

    // The operator frees memory: the outcome is recorded, Telegram's redeliveries admitted.
    let mut conn = connection(&rig).await;
    let _: () = redis::cmd("DEL")
        .arg(&filler)
        .query_async(&mut conn)
        .await
        .unwrap();
    readyz_says(&rig, 200, "ready").await;
    notice_arrives(&rig, OVER).await;
    assert_eq!(
        rig.metric("oncebot_redis_writes_refused").await.as_deref(),
        Some("0")
    );
    for update in &updates {
        assert_eq!(deliver(&rig, update).await.0, 200, "{update}");
    }
    every_job_done_once(&rig, 5).await;
    assert_eq!(
        rig.mp.calls(routes::SUBSCRIBE_CREATE),
        4,
        "one create per subscribe"
    );
    assert_eq!(rig.mp.subscriptions().len(), 4);
    assert_eq!(notices(&rig, FULL), 1, "told once for the episode");
    assert_eq!(notices(&rig, OVER), 1, "told once it was over");
    let job1 = rig.store.job(1).await;
    assert_eq!(job1["attempts"], "1", "the effect was not redone: {job1:?}");
}

/// Who records job 1 once Redis takes writes again, after the worker holding its outcome lost
/// its liveness key meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settles {
    /// The holder, as soon as Redis takes writes, the other worker frozen (SIGSTOP) until then.
    Holder,
    /// The other worker, by the job's recovery (verify): the holder is frozen (SIGSTOP) until
    /// then, and its outcome is then stale.
    TakenOver,
}

#[tokio::test]
async fn a_worker_whose_liveness_expired_while_writes_were_refused_records_its_outcome_once() {
    liveness_expired_during_the_refusal(Settles::Holder).await;
}

#[tokio::test]
async fn a_job_taken_over_while_its_outcome_waited_is_verified_not_redone() {
    liveness_expired_during_the_refusal(Settles::TakenOver).await;
}

async fn liveness_expired_during_the_refusal(settles: Settles) {
    let redis = RedisServer::start_with(
        Persistence::None,
        &["--maxmemory", MAXMEMORY, "--maxmemory-policy", "noeviction"],
    )
    .unwrap();
    let rig = rig_over(redis).await;
    let named = |name: &str| {
        let mut env = rig.env.clone();
        env.push(("ONCEBOT__WORKER__CONSUMER_NAME".into(), name.into()));
        env
    };
    let holder = rig
        .spawn(
            &[
                "serve",
                "--role",
                "ingress",
                "--role",
                "worker",
                "--role",
                "dispatcher",
            ],
            &named("holder"),
        )
        .await;
    holder
        .wait_for_stderr("dispatcher started", RECOVERY_DEADLINE)
        .await;
    rig.mp.hold(routes::SUBSCRIBE_CREATE);
    rig.send(1, "/subscribe tmdb:108545 S1").await;
    let mp = &rig.mp;
    eventually(
        "the create to reach MoviePilot",
        RECOVERY_DEADLINE,
        || async move { (mp.calls(routes::SUBSCRIBE_CREATE) == 1).then_some(()) },
    )
    .await;
    // Another worker, alive all along: it would take the holder's job once its key is gone.
    let other = Oncebot::spawn(&["serve", "--role", "worker"], &named("other"));
    other
        .wait_for_stderr("worker started", RECOVERY_DEADLINE)
        .await;

    let filler = fill(&rig).await;
    readyz_says(&rig, 503, "out of memory").await;
    rig.mp.release(routes::SUBSCRIBE_CREATE);
    holder
        .wait_for_stderr(
            "keeping it and trying until Redis takes it",
            RECOVERY_DEADLINE,
        )
        .await;
    // The holder cannot renew its liveness key: it expires.
    let store = &rig.store;
    let alive = store.keys.alive("holder");
    eventually(
        "the holder's liveness key to expire",
        RECOVERY_DEADLINE,
        || {
            let alive = alive.clone();
            async move { (!store.all_keys().await.contains(&alive)).then_some(()) }
        },
    )
    .await;

    // Who gets there first is a race between the holder's wake-up and the other's heartbeat:
    // each case freezes the one that must not win it until the other has.
    match settles {
        Settles::Holder => other.signal("STOP"),
        Settles::TakenOver => holder.signal("STOP"),
    }
    let mut conn = connection(&rig).await;
    let _: () = redis::cmd("DEL")
        .arg(&filler)
        .query_async(&mut conn)
        .await
        .unwrap();
    let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    match settles {
        Settles::Holder => {
            holder
                .wait_for_stderr("outcome recorded once Redis took it", RECOVERY_DEADLINE)
                .await;
            assert_eq!(job["attempts"], "1", "{job:?}");
            // The other, back, finds nothing left to take.
            other.signal("CONT");
        }
        Settles::TakenOver => {
            // The other worker verified what the holder did (found the subscription it made);
            // the holder, woken, finds its attempt replaced and records nothing.
            other
                .wait_for_stderr(
                    "took an entry from a worker whose liveness expired",
                    RECOVERY_DEADLINE,
                )
                .await;
            assert_eq!(job["attempts"], "2", "{job:?}");
            holder.signal("CONT");
            holder
                .wait_for_stderr("this attempt no longer owns the job", RECOVERY_DEADLINE)
                .await;
        }
    }
    // Either way: created once, the job succeeded, its reply delivered once.
    every_job_done_once(&rig, 1).await;
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1, "the effect once");
    assert_eq!(rig.mp.subscriptions().len(), 1);
    drop(other);
}

#[tokio::test]
async fn a_reply_sent_while_writes_are_refused_is_recorded_once_they_return_and_sent_once() {
    let redis = RedisServer::start_with(
        Persistence::None,
        &["--maxmemory", MAXMEMORY, "--maxmemory-policy", "noeviction"],
    )
    .unwrap();
    let rig = rig_over(redis).await;
    let bot = rig.start_pipeline().await;
    // The reply's send reaches Telegram (its record begun), and waits there.
    rig.tg.fail_next("sendMessage", Fault::Held);
    rig.send(1, "/subscriptions").await;
    rig.tg
        .wait_for(RECOVERY_DEADLINE, |o| o.count("sendMessage") == 1)
        .await
        .unwrap();
    let filler = fill(&rig).await;
    readyz_says(&rig, 503, "out of memory").await;
    rig.tg.release_held();
    bot.wait_for_stderr(
        "cannot record the reply's outcome yet; trying until Redis takes it",
        RECOVERY_DEADLINE,
    )
    .await;

    let mut conn = connection(&rig).await;
    let _: () = redis::cmd("DEL")
        .arg(&filler)
        .query_async(&mut conn)
        .await
        .unwrap();
    every_job_done_once(&rig, 1).await;
    let job = rig.store.job(1).await;
    assert_eq!(job["reply_state"], "sent", "{job:?}");
}

/// How a test makes Redis's disk fail, and how the operator fixes it.
#[derive(Debug, Clone, Copy)]
enum DiskFault {
    /// `--save "3600 1"`, the data directory removed, `BGSAVE`; fixed by `CONFIG SET save ""`.
    FailedSave,
    /// AOF on, its next file a full disk (`/dev/full`), `BGREWRITEAOF`; fixed by `CONFIG SET
    /// appendonly no`.
    AofWriteError,
}

#[tokio::test]
async fn a_failed_save_refuses_writes_until_saving_is_fixed() {
    disk_fault(DiskFault::FailedSave).await;
}

#[tokio::test]
async fn an_aof_write_error_refuses_writes_until_the_aof_is_fixed() {
    disk_fault(DiskFault::AofWriteError).await;
}

async fn disk_fault(fault: DiskFault) {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("redis-data");
    std::fs::create_dir(&dir).unwrap();
    let dir_arg = dir.to_str().unwrap();
    let redis = match fault {
        DiskFault::FailedSave => {
            RedisServer::start_with(Persistence::None, &["--dir", dir_arg, "--save", "3600 1"])
        }
        DiskFault::AofWriteError => {
            RedisServer::start_with(Persistence::AofEverySec, &["--dir", dir_arg])
        }
    }
    .unwrap();
    let rig = rig_over(redis).await;
    let _bot = rig.start_pipeline().await;
    rig.send(1, "/subscribe tmdb:108545 S1").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;

    let mut conn = connection(&rig).await;
    break_disk(&mut conn, fault, &dir).await;
    readyz_says(
        &rig,
        503,
        "not ready: Redis refuses writes: its last save failed",
    )
    .await;
    notice_arrives(&rig, NOT_SAVED).await;
    let update = private_text(2, ALICE, "/subscribe tmdb:438631");
    assert_eq!(deliver(&rig, &update).await.0, 503);
    assert_eq!(rig.metric(WRITES_REFUSED).await.as_deref(), Some("1"));

    let fix = match fault {
        DiskFault::FailedSave => ["save", ""],
        DiskFault::AofWriteError => ["appendonly", "no"],
    };
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg(&fix)
        .query_async(&mut conn)
        .await
        .unwrap();
    readyz_says(&rig, 200, "ready").await;
    notice_arrives(&rig, OVER).await;
    assert_eq!(deliver(&rig, &update).await.0, 200);
    every_job_done_once(&rig, 2).await;
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 2);
    assert_eq!(notices(&rig, NOT_SAVED), 1, "{fault:?}: told once");
    assert_eq!(notices(&rig, OVER), 1, "{fault:?}: told once it was over");
}

/// Makes Redis's persistence fail as `fault` says, and waits until a write is refused with
/// `MISCONF`.
async fn break_disk(conn: &mut redis::aio::MultiplexedConnection, fault: DiskFault, dir: &Path) {
    match fault {
        DiskFault::FailedSave => {
            std::fs::remove_dir_all(dir).unwrap();
            let _: String = redis::cmd("BGSAVE").query_async(conn).await.unwrap();
        }
        DiskFault::AofWriteError => {
            // Redis 7's multi-part AOF opens its next increment file at a rewrite: make it a
            // full disk.
            let next = dir.join("appendonlydir").join("appendonly.aof.2.incr.aof");
            std::os::unix::fs::symlink("/dev/full", next).unwrap();
            let _: String = redis::cmd("BGREWRITEAOF").query_async(conn).await.unwrap();
        }
    }
    let conn = &*conn;
    eventually(
        "Redis to refuse writes with MISCONF",
        RECOVERY_DEADLINE,
        || {
            let mut conn = conn.clone();
            async move {
                let set: redis::RedisResult<()> = redis::cmd("SET")
                    .arg("fault-probe")
                    .arg(1)
                    .query_async(&mut conn)
                    .await;
                match set {
                    Err(e) if e.code() == Some("MISCONF") => Some(()),
                    _ => None,
                }
            }
        },
    )
    .await;
}

/// Long polling while Redis refuses writes: the update is read, not recorded, and the offset
/// stays before it (Telegram keeps it); once writes are taken it becomes one job.
#[tokio::test]
async fn a_poller_does_not_move_its_offset_past_an_update_redis_refused() {
    let redis = RedisServer::start_with(
        Persistence::None,
        &["--maxmemory", MAXMEMORY, "--maxmemory-policy", "noeviction"],
    )
    .unwrap();
    let rig = rig_over(redis).await;
    let mut env = rig.env.clone();
    env.push(("ONCEBOT__TELEGRAM__POLL_TIMEOUT_SECS".into(), "1".into()));
    let poller = rig
        .spawn(&["serve", "--role", "ingress", "--poll"], &env)
        .await;
    let offset_key = rig.store.keys.poll_offset();
    let store = &rig.store;
    let offset = |key: String| async move { store.get(&key).await };

    let first = rig
        .tg
        .push_update(text_update(ALICE, ALICE, "/subscriptions"));
    rig.job_in(1, "pending", RECOVERY_DEADLINE).await;
    let after_first = (first + 1).to_string();
    eventually(
        "the offset past the first update",
        RECOVERY_DEADLINE,
        || {
            let (key, want) = (offset_key.clone(), after_first.clone());
            async move { (offset(key).await == Some(want)).then_some(()) }
        },
    )
    .await;

    let filler = fill(&rig).await;
    readyz_says(&rig, 503, "out of memory").await;
    let second = rig
        .tg
        .push_update(text_update(ALICE, ALICE, "/downloading"));
    poller
        .wait_for_stderr("update not recorded; will read it again", RECOVERY_DEADLINE)
        .await;
    assert_ne!(rig.metric(WRITES_REFUSED).await.as_deref(), None);
    assert!(rig.store.job(2).await.is_empty(), "nothing was admitted");
    assert_eq!(rig.store.update(second).await, None);
    assert_eq!(
        offset(offset_key.clone()).await,
        Some(after_first),
        "the offset stays before the update Redis refused"
    );

    let mut conn = connection(&rig).await;
    let _: () = redis::cmd("DEL")
        .arg(&filler)
        .query_async(&mut conn)
        .await
        .unwrap();
    rig.job_in(2, "pending", RECOVERY_DEADLINE).await;
    let after_second = (second + 1).to_string();
    eventually(
        "the offset past the second update",
        RECOVERY_DEADLINE,
        || {
            let (key, want) = (offset_key.clone(), after_second.clone());
            async move { (offset(key).await == Some(want)).then_some(()) }
        },
    )
    .await;
    assert!(rig.store.job(3).await.is_empty(), "each update one job");
}

/// The relay while Redis refuses writes: it cannot renew its lease, so it pauses, and its
/// position stays before MoviePilot's new row; once writes are taken the row reaches its chat
/// once.
#[tokio::test]
async fn the_relay_keeps_its_position_until_it_can_record_a_row_and_forwards_it_once() {
    let redis = RedisServer::start_with(
        Persistence::None,
        &["--maxmemory", MAXMEMORY, "--maxmemory-policy", "noeviction"],
    )
    .unwrap();
    let mut settings = SETTINGS.to_vec();
    settings.extend([
        ("ONCEBOT__NOTIFY__ENABLED", "true"),
        ("ONCEBOT__NOTIFY__POLL_INTERVAL_SECS", "1"),
        ("ONCEBOT__NOTIFY__CHATS", "1001"),
        ("ONCEBOT__DISPATCHER__SET_COMMANDS", "false"),
    ]);
    let rig = Rig::with_redis(redis, SimOptions::v2_5_6(), &settings).await;
    let relay = rig
        .spawn(
            &["serve", "--role", "notify", "--role", "dispatcher"],
            &rig.env,
        )
        .await;
    relay
        .wait_for_stderr("this process now polls", RECOVERY_DEADLINE)
        .await;
    let store = &rig.store;
    let position = || async move {
        let mut conn = store.conn().await;
        let h: std::collections::BTreeMap<String, String> =
            redis::AsyncCommands::hgetall(&mut conn, store.keys.notify_position())
                .await
                .unwrap();
        h
    };
    eventually("the relay's position", RECOVERY_DEADLINE, || async {
        position().await.contains_key("reg_time").then_some(())
    })
    .await;

    let filler = fill(&rig).await;
    readyz_says(&rig, 503, "out of memory").await;
    let before = position().await;
    rig.mp.notify(SimNotification::new(
        NotificationType::Download,
        "沙丘2 开始下载",
        "来自 MoviePilot",
    ));
    // Its lease cannot be renewed: it stops polling (reading what it could not record would
    // be of no use), and the row waits in MoviePilot's history.
    relay
        .wait_for_stderr(
            "renewing the relay's lease failed; polling pauses until it works",
            RECOVERY_DEADLINE,
        )
        .await;
    assert_eq!(position().await, before, "the position did not move");
    let to_alice = |rig: &Rig| {
        rig.tg
            .sent()
            .iter()
            .filter(|m| m.chat_id == ALICE && m.text.contains("开始下载"))
            .count()
    };
    assert_eq!(to_alice(&rig), 0);

    let mut conn = connection(&rig).await;
    let _: () = redis::cmd("DEL")
        .arg(&filler)
        .query_async(&mut conn)
        .await
        .unwrap();
    rig.tg
        .wait_for(RECOVERY_DEADLINE, |o| {
            o.sent()
                .iter()
                .any(|m| m.chat_id == ALICE && m.text.contains("开始下载"))
        })
        .await
        .unwrap();
    let polled = rig.mp.calls(routes::MESSAGE_WEB);
    let mp = &rig.mp;
    eventually("two more polls", RECOVERY_DEADLINE, || async move {
        (mp.calls(routes::MESSAGE_WEB) >= polled + 2).then_some(())
    })
    .await;
    assert_eq!(to_alice(&rig), 1, "forwarded once");
    assert_ne!(position().await, before, "the position moved past it");
}

/// A worker alone needs no bot token, and is not made to need one: without it the episode is
/// only logged (and said by `/readyz`), though admin chats are set.
#[tokio::test]
async fn a_process_without_a_bot_token_only_logs_the_refusal() {
    let redis = RedisServer::start_with(
        Persistence::None,
        &["--maxmemory", MAXMEMORY, "--maxmemory-policy", "noeviction"],
    )
    .unwrap();
    let rig = rig_over(redis).await;
    let mut env = rig.env.clone();
    env.push(("ONCEBOT__TELEGRAM__TOKEN".into(), String::new()));
    let worker = rig.spawn(&["serve", "--role", "worker"], &env).await;
    worker
        .wait_for_stderr("worker started", RECOVERY_DEADLINE)
        .await;
    let filler = fill(&rig).await;
    worker
        .wait_for_stderr("Redis refuses writes", RECOVERY_DEADLINE)
        .await;
    readyz_says(&rig, 503, "out of memory").await;
    let mut conn = connection(&rig).await;
    let _: () = redis::cmd("DEL")
        .arg(&filler)
        .query_async(&mut conn)
        .await
        .unwrap();
    worker
        .wait_for_stderr("Redis takes writes again", RECOVERY_DEADLINE)
        .await;
    readyz_says(&rig, 200, "ready").await;
    assert_eq!(rig.tg.count("sendMessage"), 0, "{:?}", rig.tg.sent());
}
