//! `GET /metrics` after a scripted run: every counter says what happened, no more, no less.

use std::collections::BTreeMap;

use oncebot::moviepilot::Dialect;

use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, MALLORY, SECRET, eventually, private_text};

/// `name{labels} value` lines of an OpenMetrics text, by `name{labels}`.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (key, value) = l.rsplit_once(' ')?;
            Some((key.to_string(), value.parse().ok()?))
        })
        .collect()
}

#[tokio::test]
async fn metrics_count_what_happened() {
    let rig = Rig::with(
        Dialect::V2,
        &[("ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS", "10")],
    )
    .await;
    let _bot = rig.start_pipeline().await;
    let url = |path: &str| format!("http://127.0.0.1:{}{path}", rig.port);

    // Two new jobs, one redelivered update, one repeated command, one stranger, one /help.
    rig.send(1, "/subscriptions").await;
    rig.send(1, "/subscriptions").await;
    rig.send(2, "/subscribe tmdb:108545 S1").await;
    rig.send(3, "/subscribe tmdb:108545 S1").await;
    rig.post(&private_text(4, MALLORY, "/subscriptions")).await;
    rig.send(5, "/help").await;
    // Refused at the door: a wrong secret, and a body that is not an update.
    let wrong = rig
        .http
        .post(url("/telegram/webhook"))
        .header("x-telegram-bot-api-secret-token", "nope")
        .json(&private_text(6, ALICE, "/jobs"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let bad = rig
        .http
        .post(url("/telegram/webhook"))
        .header("x-telegram-bot-api-secret-token", SECRET)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);

    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    // Replies: job 1, job 2, the duplicate notice, the refusal, /help.
    let http = rig.http.clone();
    let metrics_url = url("/metrics");
    let text = eventually("all five replies sent", RECOVERY_DEADLINE, || {
        let req = http.get(&metrics_url).send();
        async move {
            let text = req.await.ok()?.text().await.ok()?;
            let s = samples(&text);
            // The counters are bumped just after the step they count (the reply is sent before
            // it is acknowledged, a job's reply can go out before its worker counts the
            // transition): wait until every one of them has caught up.
            let settled = s.get("oncebot_replies_total{result=\"sent\"}") == Some(&5.0)
                && s.get("oncebot_stream_pending{stream=\"replies\"}") == Some(&0.0)
                && ["subscriptions", "subscribe"].iter().all(|c| {
                    let key = format!(
                        "oncebot_job_transitions_total{{command=\"{c}\",to=\"succeeded\"}}"
                    );
                    s.get(&key) == Some(&1.0)
                });
            settled.then_some(text)
        }
    })
    .await;
    let s = samples(&text);
    let get = |k: &str| s.get(k).copied().unwrap_or(0.0);
    assert_eq!(get("oncebot_updates_total{outcome=\"new\"}"), 2.0, "{text}");
    assert_eq!(
        get("oncebot_updates_total{outcome=\"duplicate_update\"}"),
        1.0
    );
    assert_eq!(
        get("oncebot_updates_total{outcome=\"duplicate_command\"}"),
        1.0
    );
    assert_eq!(get("oncebot_updates_total{outcome=\"unauthorised\"}"), 1.0);
    assert_eq!(get("oncebot_updates_total{outcome=\"replied\"}"), 1.0);
    assert_eq!(get("oncebot_updates_total{outcome=\"rejected\"}"), 1.0);
    assert_eq!(get("oncebot_updates_total{outcome=\"bad_request\"}"), 1.0);
    for command in ["subscriptions", "subscribe"] {
        for to in ["pending", "running", "succeeded"] {
            let key = format!("oncebot_job_transitions_total{{command=\"{command}\",to=\"{to}\"}}");
            assert_eq!(get(&key), 1.0, "{key}\n{text}");
        }
        let key = format!(
            "oncebot_job_duration_seconds_count{{command=\"{command}\",status=\"succeeded\"}}"
        );
        assert_eq!(get(&key), 1.0, "{key}");
    }
    assert_eq!(get("oncebot_replies_total{result=\"failed\"}"), 0.0);
    assert_eq!(get("oncebot_telegram_429_total"), 0.0);
    assert_eq!(
        get("oncebot_moviepilot_call_duration_seconds_count{call=\"POST /api/v1/subscribe/\"}"),
        1.0
    );
    assert_eq!(get("oncebot_jobs_needs_review"), 0.0);
    assert_eq!(get("oncebot_stream_length{stream=\"jobs\"}"), 0.0);
    assert_eq!(get("oncebot_stream_pending{stream=\"replies\"}"), 0.0);
    assert!(s.contains_key("oncebot_stream_oldest_pending_seconds{stream=\"jobs\"}"));
}
