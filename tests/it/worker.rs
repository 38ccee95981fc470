//! Workers as real processes (`serve --role ingress --role worker`) against the simulated
//! MoviePilot, in both dialects: each effect happens once, errors retry or fail by kind, and a
//! SIGKILL at every dangerous point ends with exactly one effect, no job lost, none stuck.
//!
//! Crash points (feature `failpoints`) freeze the process at an exact line; the test then
//! SIGKILLs it and starts a new one, whose worker reclaims the dead one's entry after
//! `worker.reclaim_idle_ms` (1 s here) and recovers it by the command's policy.

use std::time::Duration;

use oncebot::moviepilot::{Dialect, MediaKind};
use oncebot_tools::sim::moviepilot::{Fault, routes};

use crate::support::rig::{RECLAIM_IDLE_MS, RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, SECRET, private_text};

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

/// A crash right after MoviePilot deleted a subscription: the restarted worker looks, finds it
/// gone, and says so once; the delete is not sent again.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn crash_after_the_delete_call_is_verified_not_replayed() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = Rig::new(dialect).await;
        let sub = rig
            .mp
            .insert_subscription(THREE_BODY, MediaKind::Tv, Some(1))
            .unwrap();
        // The question comes from a lookup job, which must not stop at the crash point.
        let mut asking = rig.start(None).await;
        rig.send(1, &format!("/unsubscribe {sub}")).await;
        rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
        asking.sigkill().await;
        let question = rig
            .replies_for(1)
            .await
            .into_iter()
            .find(|r| r.contains_key("markup"))
            .expect("the question");
        let markup: serde_json::Value = serde_json::from_str(&question["markup"]).unwrap();
        let confirm = markup["inline_keyboard"][0][0]["callback_data"]
            .as_str()
            .unwrap()
            .to_string();

        let mut bot = rig.start(Some("worker.after_call")).await;
        let mut tap = oncebot_tools::sim::telegram::callback_update(ALICE, ALICE, 90_001, &confirm);
        tap["update_id"] = 2.into();
        rig.post(&tap).await;
        bot.wait_for_stderr(
            "crash point worker.after_call reached",
            Duration::from_secs(10),
        )
        .await;
        assert!(rig.mp.subscriptions().is_empty(), "MoviePilot deleted it");
        bot.sigkill().await;
        assert_eq!(rig.store.job(2).await["status"], "running");

        let _bot = rig.start(None).await;
        let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(job["recovery"], "verify");
        assert_eq!(job["mp_outcome"], "verified_deleted", "{dialect:?}");
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_DELETE), 1, "{dialect:?}");
        let results: Vec<_> = rig
            .replies_for(2)
            .await
            .into_iter()
            .filter(|r| r["kind"] == "result")
            .collect();
        assert_eq!(results.len(), 1, "told once: {results:?}");
        assert_eq!(
            results[0]["text"],
            format!("MoviePilot confirms subscription #{sub} is cancelled; nothing was repeated.")
        );
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

/// Two users ask for the same season at once, on two worker processes: MoviePilot sees one
/// create (it would re-send its notifications for a second), and both users get an answer.
#[tokio::test]
async fn two_workers_never_create_the_same_subscription_twice() {
    let rig = Rig::new(Dialect::V2).await;
    let a = rig.start(None).await;
    a.wait_for_stderr("worker started", Duration::from_secs(10))
        .await;
    let _b = rig.start_worker_only().await;
    // A slow create widens the window in which the other job could look and find nothing.
    rig.mp.fail_next(
        routes::SUBSCRIBE_CREATE,
        Fault::Delay(Duration::from_millis(500)),
    );
    let send = |update_id: i64, user: i64| {
        rig.http
            .post(rig.url("/telegram/webhook"))
            .header("x-telegram-bot-api-secret-token", SECRET)
            .json(&private_text(update_id, user, "/subscribe tmdb:108545 S1"))
            .send()
    };
    let (r1, r2) = tokio::join!(send(1, ALICE), send(2, BOB));
    assert_eq!(r1.unwrap().status(), 200);
    assert_eq!(r2.unwrap().status(), 200);
    let one = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let two = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1);
    assert_eq!(rig.mp.subscriptions().len(), 1);
    let mut outcomes = [one["mp_outcome"].clone(), two["mp_outcome"].clone()];
    outcomes.sort();
    assert_eq!(outcomes, ["already_existed", "created"]);
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
    let started = std::time::Instant::now();
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

/// A job a newer release made, of a command this release does not know, is left pending for a
/// newer worker when this release's worker reads it, never failed (docs/releases.md): the row
/// is read (not taken for corrupt) and shown with the name it was stored with.
#[tokio::test]
async fn a_job_of_a_command_this_release_does_not_know_waits_for_a_newer_worker() {
    use redis::AsyncCommands as _;
    let rig = Rig::new(Dialect::V2).await;
    let ingress = rig.start_roles(&["ingress"], None).await;
    rig.send(1, "/search Dune").await;
    let _: () = rig
        .store
        .conn()
        .await
        .hset(rig.store.keys.job(1), "command", "frobnicate")
        .await
        .unwrap();
    let worker = rig.start_worker_only().await;
    worker
        .wait_for_stderr("left for a newer worker", RECOVERY_DEADLINE)
        .await;
    let job = rig.store.job(1).await;
    assert_eq!(job["status"], "pending", "{job:?}");
    assert_eq!(rig.pending_entries().await, 1);
    assert_eq!(rig.job_shown(1).await["command"], "frobnicate");
    drop(ingress);
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
        // Nothing MoviePilot or oncebot can fix: the user's own request cannot be done, and
        // the reply says why in the user's words.
        assert_eq!(job["mp_error_kind"], "declined");
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 0);
        let replies = rig.replies_for(1).await;
        assert_eq!(replies.len(), 1);
        assert_eq!(
            replies[0]["text"],
            "Job #1 did not go through: MoviePilot does not know tmdb:999999999",
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

/// `ONCEBOT__LOG__FORMAT=json`: one JSON object per line, and every line of a job's life in the
/// worker carries its job id, so `jq 'select(.span.job_id == 1)'` finds all of it at 3 a.m.
#[tokio::test]
async fn json_logs_carry_the_job_id_on_every_line_of_a_jobs_life() {
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__LOG__FORMAT", "json")]).await;
    let bot = rig.start(None).await;
    rig.send(1, "/subscribe tmdb:108545 S1").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    bot.wait_for_stderr("outcome recorded", Duration::from_secs(10))
        .await;
    let mut job_lines = 0;
    for line in bot.stderr().lines() {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not one JSON object per line ({e}): {line}"));
        if v["target"]
            .as_str()
            .is_some_and(|t| t.starts_with("oncebot::worker"))
        {
            let job = &v["span"]["job_id"];
            if v["message"] != "worker started" {
                assert_eq!(job, 1, "a worker line without its job id: {line}");
                job_lines += 1;
            }
        }
    }
    assert!(job_lines >= 3, "job started, succeeded, recorded");
}

/// A dead worker left more entries than the new worker may run at once: the reclaimed batch is
/// claimed a permit's worth at a time, and every job runs (a claim that waited for permits for
/// the whole batch would wait for ever, and stall the lease renewals behind it).
#[tokio::test]
async fn a_reclaimed_batch_larger_than_the_concurrency_runs_in_full() {
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__WORKER__CONCURRENCY", "1")]).await;
    let ingress = rig.start_roles(&["ingress"], None).await;
    for update_id in 1..=3 {
        rig.send(update_id, "/subscriptions").await;
    }
    // A worker that read the three entries and died before claiming any of them.
    for _ in 0..3 {
        crate::support::deliver(&rig.redis.url(), "dead-worker").await;
    }
    drop(ingress);
    let _alive = rig.start_worker_only().await;
    for id in 1..=3 {
        let job = rig.job_in(id, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(
            job["attempts"], "1",
            "job {id} was pending, so this is a fresh run"
        );
    }
}
