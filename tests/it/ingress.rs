//! The webhook, end to end: HTTP in, Redis inspected directly.
//!
//! Every test checks both what Telegram is told (status, empty body, `Retry-After`) and what is
//! in Redis afterwards (streams, update and command keys, job HASHes), because a right status
//! with a wrong ledger is the failure this service exists to prevent.

use std::time::Duration;

use futures::future::join_all;
use oncebot::ingress::Handled;
use oncebot::ledger::{Admitted, JobState};
use oncebot_tools::redis_server::Persistence;
use redis::AsyncCommands as _;

use crate::support::app::{app, assert_empty_200, spawn_app};
use crate::support::{
    ALICE, BOB, DEADLINE, GROUP, MALLORY, SECRET, edited_text, eventually, group_text, message_id,
    poll_update, private_text,
};

// --- Transport layer: the same update_id ---------------------------------------------------

/// The seed's scenario 1: Telegram delivers the same update twice.
#[tokio::test]
async fn the_same_update_posted_twice_leaves_one_job() {
    let app = spawn_app().await;
    let update = private_text(7001, ALICE, "/subscribe Dune");

    app.post_ok(&update).await;
    app.post_ok(&update).await;

    let s = &app.store;
    assert_eq!(s.jobs_on_stream().await, vec![1]);
    assert_eq!(s.job_ids().await.into_iter().collect::<Vec<_>>(), vec![1]);
    assert_eq!(s.update(7001).await.as_deref(), Some("1"));
    let job = s.job(1).await;
    assert_eq!(job["status"], "pending");
    assert_eq!(job["update_id"], "7001");
    assert_eq!(
        job.get("duplicates"),
        None,
        "a redelivery is not a user's duplicate"
    );
    // A redelivery is Telegram retrying, not the user asking again: nothing is said.
    assert!(s.replies().await.is_empty());

    // A third delivery through the same decision path reads the original job and its state.
    let handled = app
        .ingress()
        .handle(&serde_json::from_value(update).unwrap())
        .await
        .unwrap();
    assert_eq!(
        handled,
        Handled::Admitted(Admitted::DuplicateUpdate {
            job_id: Some(1),
            state: Some(JobState::Pending)
        })
    );
    assert_eq!(s.jobs_on_stream().await, vec![1]);
}

/// The seed's scenario 1 under load: ten deliveries of one update at the same time.
#[tokio::test]
async fn the_same_update_posted_ten_times_concurrently_leaves_one_job() {
    let app = spawn_app().await;
    let update = private_text(7002, ALICE, "/subscribe Arrival");

    let answers = join_all((0..10).map(|_| app.post_update(&update))).await;
    for resp in answers {
        assert_empty_200(resp).await;
    }

    let s = &app.store;
    assert_eq!(s.jobs_on_stream().await, vec![1]);
    assert_eq!(s.job_ids().await.len(), 1);
    assert_eq!(s.get(&s.keys.job_seq()).await.as_deref(), Some("1"));
    assert_eq!(s.update(7002).await.as_deref(), Some("1"));
    assert_eq!(s.job(1).await["status"], "pending");
    assert!(s.replies().await.is_empty());
    app.stop().await;
}

#[tokio::test]
async fn an_update_id_is_remembered_as_long_as_the_configured_retention() {
    let app = spawn_app().await;
    app.post_ok(&private_text(7003, ALICE, "/jobs")).await;

    let mut conn = app.store.conn().await;
    let ttl: i64 = conn.ttl(app.store.keys.updates(7003)).await.unwrap();
    let retention = app.settings.ledger.update_retention_secs as i64;
    assert!(retention >= 86_400);
    assert!(
        (retention - 5..=retention).contains(&ttl),
        "TTL {ttl}, retention {retention}"
    );
}

// --- Business layer: the same command in different updates ----------------------------------

#[tokio::test]
async fn a_repeated_subscribe_inside_its_window_is_one_job_and_one_duplicate_reply() {
    let app = spawn_app().await;

    app.post_ok(&private_text(100, ALICE, "/subscribe Dune"))
        .await;
    app.post_ok(&private_text(101, ALICE, "/subscribe Dune"))
        .await;

    let s = &app.store;
    assert_eq!(s.jobs_on_stream().await, vec![1]);
    assert_eq!(s.job_ids().await.len(), 1);
    // The second update now points at the first job, which counts the duplicate.
    assert_eq!(s.update(101).await.as_deref(), Some("1"));
    let job = s.job(1).await;
    assert_eq!(job["duplicates"], "1");
    assert_eq!(job["last_duplicate_update_id"], "101");

    let replies = s.replies().await;
    assert_eq!(replies.len(), 1, "{replies:?}");
    let reply = &replies[0];
    assert_eq!(reply["kind"], "duplicate");
    assert_eq!(reply["job_id"], "1");
    assert_eq!(reply["chat_id"], ALICE.to_string());
    assert_eq!(reply["reply_to"], message_id(101).to_string());
    assert!(
        reply["text"].contains("Already received as job #1 (queued)"),
        "{}",
        reply["text"]
    );
}

/// A user tapping the same command many times at once: every tap is its own update.
#[tokio::test]
async fn ten_concurrent_taps_of_one_subscribe_make_one_job_and_nine_duplicate_replies() {
    let app = spawn_app().await;
    let taps: Vec<_> = (0..10)
        .map(|i| private_text(150 + i, ALICE, "/subscribe Dune"))
        .collect();

    let answers = join_all(taps.iter().map(|u| app.post_update(u))).await;
    for resp in answers {
        assert_empty_200(resp).await;
    }

    let s = &app.store;
    assert_eq!(s.jobs_on_stream().await.len(), 1);
    let job_id = s.jobs_on_stream().await[0];
    assert_eq!(s.job(job_id).await["duplicates"], "9");
    let replies = s.replies().await;
    assert_eq!(replies.len(), 9);
    assert!(replies.iter().all(|r| r["kind"] == "duplicate"));
    for update_id in 150..160 {
        let points_at = s.update(update_id).await;
        assert_eq!(points_at, Some(job_id.to_string()), "update {update_id}");
    }
}

#[tokio::test]
async fn spelling_variants_of_one_command_are_the_same_command() {
    let app = spawn_app().await;
    let variants = [
        "/subscribe Dune",
        "/Subscribe   Dune",
        "  /SUBSCRIBE dune  ",
        "/subscribe@OnceTestBot DUNE",
        "/subscribe@oncetestbot  dUnE",
        "订阅 Dune",
    ];
    for (i, text) in variants.iter().enumerate() {
        let resp = app
            .post_update(&private_text(200 + i as i64, ALICE, text))
            .await;
        assert_empty_200(resp).await;
    }

    let s = &app.store;
    assert_eq!(s.jobs_on_stream().await, vec![1]);
    let job = s.job(1).await;
    assert_eq!(job["command"], "subscribe");
    assert_eq!(job["args"], "Dune");
    assert_eq!(job["duplicates"], (variants.len() - 1).to_string());
    let replies = s.replies().await;
    assert_eq!(replies.len(), variants.len() - 1);
    assert!(
        replies
            .iter()
            .all(|r| r["kind"] == "duplicate" && r["job_id"] == "1")
    );
}

#[tokio::test]
async fn different_arguments_users_or_chats_are_different_commands() {
    let app = spawn_app().await;
    for (update_id, update) in [
        (300, private_text(300, ALICE, "/subscribe Dune")),
        (301, private_text(301, ALICE, "/subscribe Dune Part Two")),
        (302, private_text(302, BOB, "/subscribe Dune")),
        (303, group_text(303, ALICE, "/subscribe@OnceTestBot Dune")),
    ] {
        let resp = app.post_update(&update).await;
        assert_eq!(resp.status(), 200, "update {update_id}");
    }

    let s = &app.store;
    assert_eq!(s.jobs_on_stream().await, vec![1, 2, 3, 4]);
    assert_eq!(s.job(4).await["chat_id"], GROUP.to_string());
    assert!(s.replies().await.is_empty());
}

#[tokio::test]
async fn the_same_subscribe_after_its_window_expired_is_a_new_job() {
    let app = app()
        .env("ONCEBOT__COMMANDS__SUBSCRIBE_WINDOW_SECS", "1")
        .spawn()
        .await;
    app.post_ok(&private_text(400, ALICE, "/subscribe Dune"))
        .await;

    // The window is the command key's expiry, and it started at the first request.
    let s = &app.store;
    let keys = s.command_keys().await;
    assert_eq!(keys.len(), 1, "{keys:?}");
    let mut conn = s.conn().await;
    let pttl: i64 = conn.pttl(&keys[0]).await.unwrap();
    assert!((1..=1000).contains(&pttl), "PTTL {pttl}");
    eventually("the subscribe window to expire", DEADLINE, || async {
        let exists: bool = s.conn().await.exists(&keys[0]).await.unwrap();
        (!exists).then_some(())
    })
    .await;

    app.post_ok(&private_text(401, ALICE, "/subscribe Dune"))
        .await;
    assert_eq!(s.jobs_on_stream().await, vec![1, 2]);
    assert_eq!(s.update(401).await.as_deref(), Some("2"));
    assert!(
        s.replies().await.is_empty(),
        "no duplicate reply outside the window"
    );
}

#[tokio::test]
async fn a_read_only_command_twice_is_two_jobs() {
    let app = spawn_app().await;
    for (id, text) in [
        (500, "/subscriptions"),
        (501, "/subscriptions"),
        (502, "Dune"),
        (503, "Dune"),
    ] {
        app.post_ok(&private_text(id, ALICE, text)).await;
    }

    let s = &app.store;
    assert_eq!(s.jobs_on_stream().await, vec![1, 2, 3, 4]);
    let commands: Vec<String> = futures::future::join_all((1..=4).map(|id| s.job(id)))
        .await
        .into_iter()
        .map(|j| j["command"].clone())
        .collect();
    assert_eq!(
        commands,
        ["subscriptions", "subscriptions", "search", "search"]
    );
    assert!(
        s.command_keys().await.is_empty(),
        "read-only commands have no window"
    );
    assert!(s.replies().await.is_empty());
}

// --- Refused and ignored updates ---------------------------------------------------------------

#[tokio::test]
async fn a_missing_or_wrong_secret_is_401_and_writes_nothing() {
    let app = spawn_app().await;
    let body = serde_json::to_vec(&private_text(600, ALICE, "/subscribe Dune")).unwrap();
    let wrong_same_length = "x".repeat(SECRET.len());
    let prefix = &SECRET[..SECRET.len() - 1];
    let longer = format!("{SECRET}x");

    for secret in [
        None,
        Some(""),
        Some("wrong"),
        Some(&*wrong_same_length),
        Some(prefix),
        Some(&*longer),
    ] {
        let resp = app.post_webhook(secret, body.clone()).await;
        assert_eq!(resp.status(), 401, "secret {secret:?}");
        assert_eq!(resp.text().await.unwrap(), "");
    }
    app.store.assert_pristine().await;
}

/// Found by fuzzing: a header with bytes outside ASCII was refused as a malformed request (400)
/// before the comparison, so the operator never saw the "wrong secret" line. It is a wrong
/// secret like any other.
#[tokio::test]
async fn a_secret_with_non_ascii_bytes_is_401_not_400() {
    let app = spawn_app().await;
    let body = serde_json::to_vec(&private_text(605, ALICE, "/subscribe Dune")).unwrap();
    let utf8 = format!("{SECRET}é");
    let latin1: Vec<u8> = SECRET.bytes().map(|b| b | 0x80).collect();
    for raw in [utf8.as_bytes(), &latin1, &[0xff, 0xfe][..]] {
        let resp = app
            .http
            .post(app.url("/telegram/webhook"))
            .header("content-type", "application/json")
            .header(
                "x-telegram-bot-api-secret-token",
                reqwest::header::HeaderValue::from_bytes(raw).unwrap(),
            )
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 401, "secret bytes {raw:?}");
    }
    let metrics = app.http.get(app.url("/metrics")).send().await.unwrap();
    let text = metrics.text().await.unwrap();
    assert!(
        text.lines()
            .any(|l| l == "oncebot_updates_total{outcome=\"rejected\"} 3"),
        "each refusal is counted as a wrong secret:\n{text}"
    );
    app.store.assert_pristine().await;
}

#[tokio::test]
async fn a_body_over_the_limit_with_content_length_is_413_and_writes_nothing() {
    let app = app()
        .env("ONCEBOT__HTTP__MAX_BODY_BYTES", "4096")
        .spawn()
        .await;
    // A valid update from an allowed user that would be admitted if it were not too large.
    let body = padded_update(601, 4097);

    let resp = app.post_webhook(Some(SECRET), body).await;
    assert_eq!(resp.status(), 413);
    app.store.assert_pristine().await;
}

#[tokio::test]
async fn the_secret_is_checked_before_the_size() {
    let app = app()
        .env("ONCEBOT__HTTP__MAX_BODY_BYTES", "4096")
        .spawn()
        .await;
    let resp = app
        .post_webhook(Some("wrong"), padded_update(604, 8192))
        .await;
    assert_eq!(
        resp.status(),
        401,
        "a stranger learns nothing about the limit"
    );
    app.store.assert_pristine().await;
}

#[tokio::test]
async fn a_body_exactly_at_the_limit_is_admitted() {
    let app = app()
        .env("ONCEBOT__HTTP__MAX_BODY_BYTES", "4096")
        .spawn()
        .await;
    assert_empty_200(
        app.post_webhook(Some(SECRET), padded_update(602, 4096))
            .await,
    )
    .await;
    assert_eq!(app.store.jobs_on_stream().await, vec![1]);
}

#[tokio::test]
async fn a_chunked_body_over_the_limit_without_content_length_is_413_and_writes_nothing() {
    let app = app()
        .env("ONCEBOT__HTTP__MAX_BODY_BYTES", "4096")
        .spawn()
        .await;
    let body = padded_update(603, 6000);

    let (status, head) = post_chunked(app.addr, &body, 1000).await;
    assert_eq!(status, 413, "{head}");
    app.store.assert_pristine().await;

    // The same body under the limit, chunked, is admitted: the 413 was the size, not chunking.
    let app = app_with_limit(8192).await;
    let (status, head) = post_chunked(app.addr, &body, 1000).await;
    assert_eq!(status, 200, "{head}");
    assert_eq!(app.store.jobs_on_stream().await, vec![1]);
}

async fn app_with_limit(limit: u64) -> crate::support::app::TestApp {
    app()
        .env("ONCEBOT__HTTP__MAX_BODY_BYTES", &limit.to_string())
        .spawn()
        .await
}

#[tokio::test]
async fn a_body_that_is_not_json_is_400_and_writes_nothing() {
    let app = spawn_app().await;
    for body in [
        &b"{\"update_id\": 5, \"message\": "[..],
        b"not json at all",
        b"",
        b"\xff\xfe",
    ] {
        let resp = app.post_webhook(Some(SECRET), body.to_vec()).await;
        assert_eq!(
            resp.status(),
            400,
            "body {:?}",
            String::from_utf8_lossy(body)
        );
    }
    app.store.assert_pristine().await;
}

#[tokio::test]
async fn json_that_is_not_an_update_is_400_and_writes_nothing() {
    let app = spawn_app().await;
    for body in [
        r#"{"message": {"message_id": 1, "chat": {"id": 1001, "type": "private"}, "text": "/jobs"}}"#,
        r#"{"update_id": "seven"}"#,
        r#"{"update_id": null}"#,
        r#"[{"update_id": 5}]"#,
        r#""update_id""#,
    ] {
        let resp = app.post_webhook(Some(SECRET), body).await;
        assert_eq!(resp.status(), 400, "body {body}");
    }
    app.store.assert_pristine().await;
}

#[tokio::test]
async fn an_unhandled_update_kind_gets_an_empty_200_and_writes_nothing() {
    let app = spawn_app().await;
    let chat_member = serde_json::json!({
        "update_id": 701,
        "my_chat_member": {
            "chat": {"id": GROUP, "title": "Movie night", "type": "supergroup"},
            "from": {"id": ALICE, "is_bot": false, "first_name": "Test"},
            "date": 1_767_225_600,
            "old_chat_member": {"status": "left", "user": {"id": 42, "is_bot": true, "first_name": "bot"}},
            "new_chat_member": {"status": "member", "user": {"id": 42, "is_bot": true, "first_name": "bot"}}
        }
    });
    app.post_ok(&poll_update(700)).await;
    app.post_ok(&chat_member).await;
    app.store.assert_pristine().await;
}

#[tokio::test]
async fn an_edited_message_gets_an_empty_200_and_no_job() {
    let app = spawn_app().await;
    app.post_ok(&edited_text(710, ALICE, "/subscribe Dune"))
        .await;
    app.store.assert_pristine().await;
}

#[tokio::test]
async fn in_a_group_only_commands_for_this_bot_count() {
    let app = spawn_app().await;
    for (id, text) in [
        (720, "Dune tonight?"),
        (721, "/subscribe@some_other_bot Dune"),
    ] {
        app.post_ok(&group_text(id, ALICE, text)).await;
    }
    app.store.assert_pristine().await;

    app.post_ok(&group_text(722, ALICE, "/subscribe@OnceTestBot Dune"))
        .await;
    assert_eq!(app.store.jobs_on_stream().await, vec![1]);
}

#[tokio::test]
async fn a_stranger_is_refused_once_per_window_and_gets_no_job() {
    let app = spawn_app().await;

    app.post_ok(&private_text(800, MALLORY, "/subscribe Dune"))
        .await;
    let s = &app.store;
    let replies = s.replies().await;
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0]["kind"], "refusal");
    assert_eq!(replies[0]["chat_id"], MALLORY.to_string());
    assert_eq!(replies[0]["reply_to"], message_id(800).to_string());
    assert_eq!(replies[0]["job_id"], "");
    assert!(
        replies[0]["text"].contains("not allowed"),
        "{}",
        replies[0]["text"]
    );
    // The update is remembered as "no job", so a redelivery changes nothing either.
    assert_eq!(s.update(800).await.as_deref(), Some("-"));

    // A second message inside the hour: still 200, no second refusal.
    app.post_ok(&private_text(801, MALLORY, "please")).await;
    app.post_ok(&private_text(800, MALLORY, "/subscribe Dune"))
        .await;
    assert_eq!(s.replies().await.len(), 1);

    // No job at any point.
    assert_eq!(s.stream_len(&s.keys.jobs_stream()).await, 0);
    assert!(s.job_ids().await.is_empty());
    assert_eq!(s.get(&s.keys.job_seq()).await, None);

    // The refusal window is an hour, started by the first message.
    let keys = s.command_keys().await;
    assert_eq!(keys.len(), 1, "{keys:?}");
    let mut conn = s.conn().await;
    let pttl: i64 = conn.pttl(&keys[0]).await.unwrap();
    assert!((3_590_000..=3_600_000).contains(&pttl), "PTTL {pttl}");
}

// --- Redis outages --------------------------------------------------------------------------

#[tokio::test]
async fn with_redis_down_the_webhook_answers_503_and_the_redelivery_is_admitted_once() {
    let mut app = app().persistence(Persistence::AofAlways).spawn().await;
    app.post_ok(&private_text(900, ALICE, "/subscribe Dune"))
        .await;

    app.redis.kill();
    let update = private_text(901, ALICE, "/subscribe Arrival");
    let resp = app.post_update(&update).await;
    assert_eq!(resp.status(), 503);
    let retry_after = resp
        .headers()
        .get("retry-after")
        .expect("a Retry-After header");
    let secs: u64 = retry_after.to_str().unwrap().parse().unwrap();
    assert!((1..=3600).contains(&secs), "Retry-After {secs}");

    app.redis.restart().unwrap();
    // Telegram delivers again until it gets a 200; the connection comes back on its own.
    eventually("the webhook to answer 200 again", DEADLINE, || {
        let app = &app;
        let update = &update;
        async move {
            let resp = app.post_update(update).await;
            match resp.status().as_u16() {
                200 => Some(()),
                503 => None,
                other => panic!("unexpected status {other}"),
            }
        }
    })
    .await;
    // And once more, as Telegram's retry racing the first success would.
    app.post_ok(&update).await;

    let s = &app.store;
    assert_eq!(s.jobs_on_stream().await, vec![1, 2]);
    assert_eq!(s.update(901).await.as_deref(), Some("2"));
    assert_eq!(s.job(2).await["args"], "Arrival");
    assert_eq!(s.job_ids().await.len(), 2);
}

#[tokio::test]
async fn while_redis_stays_down_every_call_answers_503_within_the_command_timeout() {
    let mut app = spawn_app().await;
    let timeout = Duration::from_millis(app.settings.redis.command_timeout_ms);
    app.redis.kill();

    for update_id in 910..913 {
        let started = std::time::Instant::now();
        let resp = app
            .post_update(&private_text(update_id, ALICE, "/jobs"))
            .await;
        assert_eq!(resp.status(), 503);
        assert!(resp.headers().contains_key("retry-after"));
        assert!(
            started.elapsed() < timeout,
            "503 after {:?}, beyond redis.command_timeout_ms",
            started.elapsed()
        );
    }
    let ready = app.http.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 503);
    // Liveness is not readiness: the process is fine, only Redis is not.
    let alive = app.http.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(alive.status(), 200);

    app.redis.restart().unwrap();
    eventually("/readyz to answer 200 again", DEADLINE, || {
        let req = app.http.get(app.url("/readyz")).send();
        async move { (req.await.unwrap().status() == 200).then_some(()) }
    })
    .await;
}

#[tokio::test]
async fn an_app_started_while_redis_is_down_admits_once_redis_is_up() {
    let mut app = app().redis_down_at_start().spawn().await;
    let update = private_text(920, ALICE, "/subscribe Dune");
    assert_eq!(app.post_update(&update).await.status(), 503);

    app.redis.restart().unwrap();
    eventually("the webhook to answer 200", DEADLINE, || {
        let post = app.post_update(&update);
        async move { (post.await.status() == 200).then_some(()) }
    })
    .await;

    // The streams and their consumer groups did not exist at start; admission made them.
    let s = &app.store;
    assert_eq!(s.jobs_on_stream().await, vec![1]);
    let mut conn = s.conn().await;
    let groups: Vec<redis::Value> = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg(s.keys.jobs_stream())
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(groups.len(), 1);
}

#[tokio::test]
async fn a_redis_restart_with_aof_loses_no_acknowledged_job() {
    const N: i64 = 25;
    let mut app = app().persistence(Persistence::AofAlways).spawn().await;
    let updates: Vec<_> = (0..N)
        .map(|i| private_text(1000 + i, ALICE, &format!("/subscribe Film {i}")))
        .collect();
    let answers = join_all(updates.iter().map(|u| app.post_update(u))).await;
    for resp in answers {
        assert_empty_200(resp).await;
    }

    app.redis.kill();
    app.redis.restart().unwrap();

    let s = &app.store;
    let mut on_stream = s.jobs_on_stream().await;
    on_stream.sort();
    assert_eq!(on_stream, (1..=N as u64).collect::<Vec<_>>());
    for i in 0..N {
        let job_id: u64 = s
            .update(1000 + i)
            .await
            .unwrap_or_else(|| panic!("update {} was forgotten", 1000 + i))
            .parse()
            .unwrap();
        let job = s.job(job_id).await;
        assert_eq!(job["status"], "pending");
        assert_eq!(job["update_id"], (1000 + i).to_string());
    }

    // The restored ledger still absorbs redeliveries of those updates.
    for u in &updates[..3] {
        let app = &app;
        eventually(
            "the redelivery to be answered 200",
            DEADLINE,
            || async move { (app.post_update(u).await.status() == 200).then_some(()) },
        )
        .await;
    }
    assert_eq!(s.stream_len(&s.keys.jobs_stream()).await, N as usize);
}

// --- Helpers ----------------------------------------------------------------------------------

/// A valid `/subscribe Dune` from ALICE, exactly `len` bytes of JSON: the message quotes a
/// long earlier message (`reply_to_message`), as a real reply can.
fn padded_update(update_id: i64, len: usize) -> Vec<u8> {
    let with_quote = |quote: &str| {
        let mut update = private_text(update_id, ALICE, "/subscribe Dune");
        update["message"]["reply_to_message"] = serde_json::json!({
            "message_id": 1,
            "chat": {"id": ALICE, "type": "private"},
            "date": 1_767_225_000,
            "text": quote,
        });
        serde_json::to_vec(&update).unwrap()
    };
    let base = with_quote("").len();
    let body = with_quote(&"x".repeat(len.checked_sub(base).expect("len too small")));
    assert_eq!(body.len(), len);
    body
}

/// POSTs `body` to the webhook with `Transfer-Encoding: chunked` and no Content-Length, over a
/// raw connection so exactly those headers are sent. Returns the status and the response head.
async fn post_chunked(addr: std::net::SocketAddr, body: &[u8], chunk: usize) -> (u16, String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut request = format!(
        "POST /telegram/webhook HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         X-Telegram-Bot-Api-Secret-Token: {SECRET}\r\nTransfer-Encoding: chunked\r\n\
         Connection: close\r\n\r\n"
    )
    .into_bytes();
    for part in body.chunks(chunk) {
        request.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        request.extend_from_slice(part);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    // The server may answer 413 and close before it has read everything; that is its right.
    let _ = stream.write_all(&request).await;
    let mut response = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut response));
    let _ = read.await.expect("the server answers within 5 s");
    let text = String::from_utf8_lossy(&response).to_string();
    let head = text
        .split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    (status, head)
}
