//! The operator's commands as real processes: `oncebot jobs resolve` (needs only Redis) and
//! `oncebot webhook set|info|delete` against the simulated Bot API.

use std::time::Duration;

use oncebot::commands::Command;
use oncebot::ledger::{Admission, AdmissionAction, Admitted, AttemptLimits, ClaimTexts, keys};
use oncebot_tools::sim::telegram::TelegramSim;
use redis::streams::StreamReadReply;

use crate::support::ALICE;
use crate::support::app::{run_oncebot, spawn_ledger};

#[tokio::test]
async fn jobs_resolve_settles_only_a_job_waiting_for_review() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let Admitted::New { job_id } = ledger
        .admit(&Admission {
            update_id: 1,
            chat_id: ALICE,
            user_id: ALICE,
            message_id: Some(501),
            thread_id: None,
            requester: None,
            role: oncebot::vocabulary::Role::Admin,
            action: AdmissionAction::Job(Command::SearchNow.job(
                oncebot::commands::Asker::of(ALICE, ALICE, None),
                "7",
                Duration::ZERO,
            )),
        })
        .await
        .unwrap()
    else {
        panic!("not admitted")
    };
    let url = redis.url();
    let env = [("ONCEBOT__REDIS__URL", url.as_str())];
    let id = job_id.to_string();

    let refused = run_oncebot(&["jobs", "resolve", &id, "--as", "succeeded"], &env).await;
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(refused.stderr.contains("not needs_review"), "{refused:?}");
    assert_eq!(refused.stdout, "");

    // Claimed by a worker that died; the next claim holds it for a person.
    let mut conn = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let read: StreamReadReply = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg(keys::Stream::Jobs.group())
        .arg("dead")
        .arg("STREAMS")
        .arg(ledger.keys().jobs_stream())
        .arg(">")
        .query_async(&mut conn)
        .await
        .unwrap();
    let entry = read.keys[0].ids[0].id.clone();
    let limits = AttemptLimits {
        max_recoveries: 3,
        retention: Duration::from_secs(60),
        kinds: oncebot::versions::WORKER_KINDS,
    };
    let texts = ClaimTexts {
        held: "held".into(),
        failed: "failed".into(),
    };
    ledger
        .claim(job_id, &entry, "dead", &limits, &texts)
        .await
        .unwrap();
    ledger
        .claim(job_id, &entry, "next", &limits, &texts)
        .await
        .unwrap();
    assert_eq!(store.job(job_id).await["status"], "needs_review");

    let done = run_oncebot(
        &[
            "jobs",
            "resolve",
            &id,
            "--as",
            "failed",
            "--note",
            "nothing ran",
            "--json",
        ],
        &env,
    )
    .await;
    assert_eq!(done.status.code(), Some(0), "{done:?}");
    let doc: serde_json::Value = serde_json::from_str(&done.stdout).unwrap();
    assert_eq!(doc["status"], "failed");
    assert_eq!(store.job(job_id).await["resolution_note"], "nothing ran");
    let last = store.replies().await.pop().unwrap();
    assert_eq!(last["kind"], "resolved");
}

#[tokio::test]
async fn webhook_set_info_and_delete_talk_to_the_bot_api() {
    let sim = TelegramSim::start().await.unwrap();
    let url = sim.url();
    let token = sim.token();
    let env = [
        ("ONCEBOT__TELEGRAM__API_URL", url.as_str()),
        ("ONCEBOT__TELEGRAM__TOKEN", token.as_str()),
        (
            "ONCEBOT__TELEGRAM__WEBHOOK_SECRET",
            "hook_secret-0123456789",
        ),
        (
            "ONCEBOT__TELEGRAM__WEBHOOK_URL",
            "https://bot.example.org/telegram/webhook",
        ),
    ];
    let set = run_oncebot(&["webhook", "set", "--max-connections", "10"], &env).await;
    assert_eq!(set.status.code(), Some(0), "{set:?}");
    let info: serde_json::Value = serde_json::from_str(&set.stdout).unwrap();
    assert_eq!(info["url"], "https://bot.example.org/telegram/webhook");
    let hook = sim
        .observe(|o| o.webhook().cloned())
        .expect("a webhook is set");
    assert_eq!(hook.secret_token.as_deref(), Some("hook_secret-0123456789"));
    assert_eq!(
        hook.allowed_updates,
        Some(serde_json::json!(["message", "callback_query"]))
    );
    assert_eq!(hook.max_connections, 10);
    assert!(
        !set.stderr.contains(&token),
        "the token never reaches a log"
    );

    let deleted = run_oncebot(&["webhook", "delete"], &env).await;
    assert_eq!(deleted.status.code(), Some(0), "{deleted:?}");
    assert!(sim.observe(|o| o.webhook().is_none()));
}

#[tokio::test]
async fn webhook_set_refuses_a_url_telegram_would_not_call() {
    let sim = TelegramSim::start().await.unwrap();
    let url = sim.url();
    let token = sim.token();
    let env = [
        ("ONCEBOT__TELEGRAM__API_URL", url.as_str()),
        ("ONCEBOT__TELEGRAM__TOKEN", token.as_str()),
        (
            "ONCEBOT__TELEGRAM__WEBHOOK_SECRET",
            "hook_secret-0123456789",
        ),
        (
            "ONCEBOT__TELEGRAM__WEBHOOK_URL",
            "http://bot.example.org/hook",
        ),
    ];
    let out = run_oncebot(&["webhook", "set"], &env).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr.contains("ONCEBOT__TELEGRAM__WEBHOOK_URL"),
        "{out:?}"
    );
    assert_eq!(sim.count("setWebhook"), 0);
}
