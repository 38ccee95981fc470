//! Workers as real processes (`serve --role ingress --role worker`) against the simulated
//! MoviePilot, in both dialects: each effect happens once, errors retry or fail by kind, and a
//! SIGKILL at every dangerous point ends with exactly one effect, no job lost, none stuck.
//!
//! Crash points (feature `failpoints`) freeze the process at an exact line; the test then
//! SIGKILLs it and starts a new one, whose worker reclaims the dead one's entry after
//! `worker.reclaim_idle_ms` (1 s here) and recovers it by the command's policy.

use std::time::Duration;
#[cfg(feature = "failpoints")]
use std::time::Instant;

use oncebot::moviepilot::{Dialect, MediaKind};
use oncebot::redis_server::{Persistence, RedisServer};
use oncebot::sim::moviepilot::{Fault, MoviePilotSim, SimOptions, routes};
use serde_json::Value;

use crate::support::app::free_port;
use crate::support::child::Oncebot;
use crate::support::{ALICE, BOB, SECRET, Store, eventually, private_text};

const RECLAIM_IDLE_MS: u64 = 1000;
/// Long enough for a restart plus one reclaim cycle, with room for a loaded CI machine.
const RECOVERY_DEADLINE: Duration = Duration::from_secs(20);

/// A Redis, a MoviePilot simulator, and the environment for oncebot processes using them.
/// Other modules (confirmations) drive whole flows with it too.
pub(crate) struct Rig {
    pub(crate) redis: RedisServer,
    pub(crate) mp: MoviePilotSim,
    port: u16,
    env: Vec<(String, String)>,
    pub(crate) store: Store,
    http: reqwest::Client,
}

impl Rig {
    pub(crate) async fn new(dialect: Dialect) -> Rig {
        Self::with(dialect, &[]).await
    }

    pub(crate) async fn with(dialect: Dialect, overrides: &[(&str, &str)]) -> Rig {
        let redis = RedisServer::start(Persistence::None).unwrap();
        let opts = match dialect {
            Dialect::V2 => SimOptions::v2_5_6(),
            Dialect::V3 => SimOptions::v3(),
        };
        let mp = MoviePilotSim::start(opts).await;
        let port = free_port();
        let mut env: Vec<(String, String)> = [
            ("ONCEBOT__REDIS__URL", redis.url()),
            ("ONCEBOT__HTTP__LISTEN", format!("127.0.0.1:{port}")),
            ("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", SECRET.into()),
            ("ONCEBOT__TELEGRAM__ALLOWED_USERS", format!("{ALICE},{BOB}")),
            ("ONCEBOT__TELEGRAM__LOCALE", "en".into()),
            ("ONCEBOT__MOVIEPILOT__URL", mp.url()),
            (
                "ONCEBOT__MOVIEPILOT__USERNAME",
                mp.options().username.clone(),
            ),
            (
                "ONCEBOT__MOVIEPILOT__PASSWORD",
                mp.options().password.clone(),
            ),
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
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        for (k, v) in overrides {
            env.retain(|(key, _)| key != k);
            env.push((k.to_string(), v.to_string()));
        }
        let store = Store::new(&redis.url(), "oncebot");
        Rig {
            redis,
            mp,
            port,
            env,
            store,
            http: reqwest::Client::new(),
        }
    }

    /// `oncebot serve --role ingress --role worker`, optionally frozen at a crash point.
    pub(crate) async fn start(&self, crash_point: Option<&str>) -> Oncebot {
        let mut env = self.env.clone();
        if let Some(point) = crash_point {
            env.push(("FAILPOINTS".into(), format!("{point}=return")));
        }
        let child = Oncebot::spawn(&["serve", "--role", "ingress", "--role", "worker"], &env);
        let url = format!("http://127.0.0.1:{}/readyz", self.port);
        let http = self.http.clone();
        eventually("oncebot to be ready", Duration::from_secs(10), || {
            let req = http.get(&url).send();
            async move { req.await.ok().filter(|r| r.status() == 200).map(|_| ()) }
        })
        .await;
        child
    }

    /// A second worker-only process (no HTTP listener of its own), once it reads jobs.
    pub(crate) async fn start_worker_only(&self) -> Oncebot {
        let mut env = self.env.clone();
        env.retain(|(k, _)| k != "ONCEBOT__HTTP__LISTEN");
        let child = Oncebot::spawn(&["serve", "--role", "worker"], &env);
        child
            .wait_for_stderr("worker started", Duration::from_secs(10))
            .await;
        child
    }

    pub(crate) async fn send(&self, update_id: i64, text: &str) {
        self.post(&private_text(update_id, ALICE, text)).await;
    }

    /// POSTs any update to the webhook and asserts it was accepted.
    pub(crate) async fn post(&self, update: &Value) {
        let resp = self
            .http
            .post(format!("http://127.0.0.1:{}/telegram/webhook", self.port))
            .header("x-telegram-bot-api-secret-token", SECRET)
            .json(update)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
    }

    /// Waits until job `id` is in `status`, and returns its HASH.
    pub(crate) async fn job_in(
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

    pub(crate) async fn replies_for(
        &self,
        job: u64,
    ) -> Vec<std::collections::BTreeMap<String, String>> {
        self.store
            .replies()
            .await
            .into_iter()
            .filter(|r| r.get("job_id").map(String::as_str) == Some(&job.to_string()))
            .collect()
    }

    pub(crate) async fn pending_entries(&self) -> u64 {
        let mut conn = redis::Client::open(self.redis.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let summary: Value = redis::cmd("XPENDING")
            .arg("{oncebot}:v1:stream:jobs")
            .arg("workers")
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

pub(crate) const THREE_BODY: u64 = 108545;

#[tokio::test]
async fn a_subscribe_creates_one_subscription_and_replies_once() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = Rig::new(dialect).await;
        let _bot = rig.start(None).await;
        rig.send(1, "/subscribe tmdb:108545 S1").await;
        let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(job["attempts"], "1");
        assert_eq!(job["mp_outcome"], "created");
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1, "{dialect:?}");
        assert_eq!(rig.mp.subscriptions().len(), 1);
        let replies = rig.replies_for(1).await;
        assert_eq!(replies.len(), 1, "{replies:?}");
        assert!(
            replies[0]["text"].starts_with("Subscribed to"),
            "{replies:?}"
        );
        assert_eq!(rig.pending_entries().await, 0);
    }
}

#[tokio::test]
async fn an_existing_subscription_is_not_created_again() {
    let rig = Rig::new(Dialect::V2).await;
    let existing = rig
        .mp
        .insert_subscription(THREE_BODY, MediaKind::Tv, Some(1))
        .unwrap();
    let _bot = rig.start(None).await;
    rig.send(1, "/subscribe tmdb:108545 S1").await;
    let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["mp_outcome"], "already_existed");
    assert_eq!(job["mp_subscription_id"], existing.to_string());
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 0);
}

/// The seed's scenario 2: MoviePilot committed the subscription, then oncebot died before
/// recording it. After a restart the job is verified against MoviePilot, not replayed.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn crash_after_the_create_call_is_verified_not_replayed() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = Rig::new(dialect).await;
        let mut bot = rig.start(Some("worker.after_call")).await;
        rig.send(1, "/subscribe tmdb:108545 S1").await;
        bot.wait_for_stderr(
            "crash point worker.after_call reached",
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(rig.mp.subscriptions().len(), 1, "MoviePilot committed it");
        bot.sigkill().await;
        assert_eq!(rig.store.job(1).await["status"], "running");

        let _bot = rig.start(None).await;
        let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(job["mp_outcome"], "verified_existing", "{dialect:?}");
        assert_eq!(job["recoveries"], "1");
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1, "{dialect:?}");
        assert_eq!(rig.mp.subscriptions().len(), 1);
        let replies = rig.replies_for(1).await;
        assert_eq!(replies.len(), 1, "{replies:?}");
        assert!(replies[0]["text"].contains("interrupted"), "{replies:?}");
        assert_eq!(rig.pending_entries().await, 0);
    }
}

/// The same crash with an effect MoviePilot cannot confirm (search-now answers success even
/// when nothing runs): the job waits for a person, and the call is not made again.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn crash_after_a_search_now_call_holds_the_job_for_review() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = Rig::new(dialect).await;
        let sub = rig
            .mp
            .insert_subscription(THREE_BODY, MediaKind::Tv, Some(1))
            .unwrap();
        let mut bot = rig.start(Some("worker.after_call")).await;
        rig.send(1, &format!("/searchnow {sub}")).await;
        bot.wait_for_stderr(
            "crash point worker.after_call reached",
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(rig.mp.searches(sub), 1);
        bot.sigkill().await;

        let _bot = rig.start(None).await;
        let job = rig.job_in(1, "needs_review", RECOVERY_DEADLINE).await;
        assert!(job["error"].contains("uncertain"), "{job:?}");
        assert_eq!(rig.mp.searches(sub), 1, "{dialect:?}: no second call");
        let replies = rig.replies_for(1).await;
        assert_eq!(replies.len(), 1);
        assert_eq!(replies[0]["kind"], "needs_review");
        assert!(rig.store.job_ids().await.contains(&1));
        assert_eq!(rig.pending_entries().await, 0, "held jobs leave the stream");
    }
}

/// A SIGKILL at each other dangerous point of a subscribe: exactly one subscription, one
/// create call, the job `succeeded`, nothing left pending.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn crash_at_every_other_point_ends_with_exactly_one_effect() {
    for point in [
        "worker.after_claim",
        "worker.before_call",
        "worker.after_complete",
    ] {
        let rig = Rig::new(Dialect::V2).await;
        let mut bot = rig.start(Some(point)).await;
        rig.send(1, "/subscribe tmdb:108545 S1").await;
        bot.wait_for_stderr(
            &format!("crash point {point} reached"),
            Duration::from_secs(10),
        )
        .await;
        bot.sigkill().await;
        let _bot = rig.start(None).await;
        let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1, "{point}");
        assert_eq!(rig.mp.subscriptions().len(), 1, "{point}");
        assert_eq!(rig.pending_entries().await, 0, "{point}");
        if point == "worker.after_complete" {
            // The outcome and the XACK were one step: nothing to recover, nothing re-run.
            assert_eq!(job["attempts"], "1", "{point}");
            assert!(!job.contains_key("recoveries"), "{point}: {job:?}");
        } else {
            assert_eq!(job["recoveries"], "1", "{point}");
        }
        assert_eq!(rig.replies_for(1).await.len(), 1, "{point}");
    }
}

#[tokio::test]
async fn two_workers_never_run_the_same_job() {
    let rig = Rig::new(Dialect::V2).await;
    let a = rig.start(None).await;
    a.wait_for_stderr("worker started", Duration::from_secs(10))
        .await;
    let _b = rig.start_worker_only().await;
    let before = rig.mp.calls(routes::SUBSCRIBE_LIST);
    const JOBS: i64 = 12;
    for id in 1..=JOBS {
        rig.send(id, "/subscriptions").await;
    }
    for id in 1..=JOBS as u64 {
        let job = rig.job_in(id, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(job["attempts"], "1");
    }
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_LIST) - before, JOBS as u64);
}

#[tokio::test]
async fn a_slow_job_on_a_live_worker_is_not_reclaimed() {
    let rig = Rig::new(Dialect::V2).await;
    let a = rig.start(None).await;
    a.wait_for_stderr("worker started", Duration::from_secs(10))
        .await;
    let _b = rig.start_worker_only().await;
    // Three reclaim periods long: only lease renewal keeps it with its worker.
    rig.mp.fail_next(
        routes::SUBSCRIBE_LIST,
        Fault::Delay(Duration::from_millis(3 * RECLAIM_IDLE_MS)),
    );
    let before = rig.mp.calls(routes::SUBSCRIBE_LIST);
    rig.send(1, "/subscriptions").await;
    let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["attempts"], "1");
    assert!(!job.contains_key("recoveries"), "{job:?}");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_LIST) - before, 1);
}

#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_dead_workers_job_is_reclaimed_within_the_reclaim_time() {
    let rig = Rig::new(Dialect::V2).await;
    let mut dead = rig.start(Some("worker.before_call")).await;
    rig.send(1, "/subscriptions").await;
    dead.wait_for_stderr(
        "crash point worker.before_call reached",
        Duration::from_secs(10),
    )
    .await;
    dead.sigkill().await;
    let started = Instant::now();
    let _alive = rig.start_worker_only().await;
    // Counted after the new worker connected (connecting may read the list once).
    let before = rig.mp.calls(routes::SUBSCRIBE_LIST);
    let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    // Reclaimed after the entry's idle time passed the reclaim time, at the next reclaim pass
    // (every half reclaim time), plus the worker's own start-up.
    let bound = Duration::from_millis(RECLAIM_IDLE_MS * 2) + Duration::from_secs(3);
    assert!(started.elapsed() < bound, "took {:?}", started.elapsed());
    assert_eq!(job["recoveries"], "1");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_LIST) - before, 1);
}

#[tokio::test]
async fn transient_errors_retry_and_then_succeed() {
    let rig = Rig::new(Dialect::V2).await;
    let bot = rig.start(None).await;
    bot.wait_for_stderr("worker started", Duration::from_secs(10))
        .await;
    for _ in 0..2 {
        rig.mp.fail_next(
            routes::SUBSCRIBE_LIST,
            Fault::Status(502, "<html>Bad Gateway</html>".into()),
        );
    }
    let before = rig.mp.calls(routes::SUBSCRIBE_LIST);
    rig.send(1, "/subscriptions").await;
    let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["attempts"], "3");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_LIST) - before, 3);
    // One "failed for now" notice at the first retry, then the result.
    let kinds: Vec<_> = rig
        .replies_for(1)
        .await
        .into_iter()
        .map(|r| r["kind"].clone())
        .collect();
    assert_eq!(kinds, ["retrying", "result"]);
}

#[tokio::test]
async fn transient_errors_fail_the_job_at_the_attempt_limit() {
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__WORKER__MAX_ATTEMPTS", "2")]).await;
    let bot = rig.start(None).await;
    bot.wait_for_stderr("worker started", Duration::from_secs(10))
        .await;
    for _ in 0..5 {
        rig.mp.fail_next(
            routes::SUBSCRIBE_LIST,
            Fault::Status(500, "Internal Server Error".into()),
        );
    }
    let before = rig.mp.calls(routes::SUBSCRIBE_LIST);
    rig.send(1, "/subscriptions").await;
    let job = rig.job_in(1, "failed", RECOVERY_DEADLINE).await;
    assert_eq!(job["attempts"], "2");
    assert!(job["error"].contains("gave up after 2 attempts"), "{job:?}");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_LIST) - before, 2);
}

#[tokio::test]
async fn a_permanent_error_fails_at_once() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = Rig::new(dialect).await;
        let _bot = rig.start(None).await;
        // MoviePilot does not know this media.
        rig.send(1, "/subscribe tmdb:999999999").await;
        let job = rig.job_in(1, "failed", RECOVERY_DEADLINE).await;
        assert_eq!(job["attempts"], "1", "{dialect:?}");
        assert_eq!(job["mp_error_kind"], "permanent");
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 0);
        let replies = rig.replies_for(1).await;
        assert_eq!(replies.len(), 1);
        assert!(
            replies[0]["text"].starts_with("Job #1 failed"),
            "{replies:?}"
        );
    }
}

#[tokio::test]
async fn a_token_that_died_causes_one_new_login() {
    let rig = Rig::new(Dialect::V2).await;
    let _bot = rig.start(None).await;
    rig.send(1, "/subscriptions").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let logins = rig.mp.logins();
    // MoviePilot restarted without a fixed SECRET_KEY: every JWT it issued is dead.
    rig.mp.invalidate_tokens();
    for id in 2..=5 {
        rig.send(id, "/subscriptions").await;
    }
    for id in 2..=5 {
        let job = rig.job_in(id, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(job["attempts"], "1");
    }
    assert_eq!(rig.mp.logins(), logins + 1);
}
