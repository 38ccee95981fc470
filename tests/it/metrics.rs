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
    let url = |path: &str| rig.url(path);

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

/// Every metric name in `text`: each sample's, and what each `# TYPE` line declares (a family
/// without samples yet still exports its name: `_total` for a counter, `_bucket`, `_sum` and
/// `_count` for a histogram).
fn exported_names(text: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for line in text.lines() {
        if let Some(decl) = line.strip_prefix("# TYPE ") {
            let mut parts = decl.split_whitespace();
            let (Some(name), Some(kind)) = (parts.next(), parts.next()) else {
                continue;
            };
            let suffixes: &[&str] = match kind {
                "counter" => &["_total"],
                "histogram" => &["_bucket", "_sum", "_count"],
                _ => &[""],
            };
            names.extend(suffixes.iter().map(|s| format!("{name}{s}")));
        } else if !line.starts_with('#') && !line.is_empty() {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            names.insert(line[..end].to_string());
        }
    }
    names
}

/// The `oncebot_*` names a PromQL expression reads.
fn metric_names_in(expr: &str) -> Vec<String> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|t| t.starts_with("oncebot_"))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn the_grafana_dashboard_reads_only_metrics_oncebot_exports_and_all_of_them() {
    let dashboard: serde_json::Value =
        serde_json::from_str(include_str!("../../deploy/grafana/oncebot.json"))
            .expect("deploy/grafana/oncebot.json is JSON");
    // The shape Grafana imports: a titled dashboard with a uid, a schema version and panels,
    // each with a unique id, a type, a place on the grid and Prometheus queries.
    assert_eq!(dashboard["uid"], "oncebot");
    assert!(dashboard["title"].is_string());
    assert!(dashboard["schemaVersion"].as_u64().unwrap() >= 30);
    let panels = dashboard["panels"].as_array().expect("panels");
    let mut ids = std::collections::BTreeSet::new();
    let mut exprs = Vec::new();
    for p in panels {
        assert!(ids.insert(p["id"].as_u64().expect("a panel id")), "{p}");
        assert!(p["title"].is_string() && p["type"].is_string(), "{p}");
        for k in ["x", "y", "w", "h"] {
            assert!(p["gridPos"][k].is_u64(), "{k} of {}", p["title"]);
        }
        if p["type"] == "row" {
            continue;
        }
        assert_eq!(p["datasource"]["type"], "prometheus", "{}", p["title"]);
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{}", p["title"]);
        for t in targets {
            assert!(t["refId"].is_string());
            let expr = t["expr"].as_str().expect("an expr").to_string();
            assert!(!metric_names_in(&expr).is_empty(), "{expr}");
            exprs.push(expr);
        }
    }
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    assert!(
        variables
            .iter()
            .any(|v| v["name"] == "datasource" && v["type"] == "datasource"),
        "panels use ${{datasource}}"
    );

    // /metrics after some traffic: a command that meets a MoviePilot error (a family is
    // rendered once it has a sample), is retried and runs to its reply.
    let rig = Rig::with(Dialect::V2, &[]).await;
    let _bot = rig.start_pipeline().await;
    rig.mp.fail_next(
        oncebot_tools::sim::moviepilot::routes::SUBSCRIBE_LIST,
        oncebot_tools::sim::moviepilot::Fault::Status(502, "<html>Bad Gateway</html>".into()),
    );
    rig.send(1, "/subscriptions").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let metrics_url = rig.url("/metrics");
    let http = rig.http.clone();
    let text = eventually("the reply counted", RECOVERY_DEADLINE, || {
        let req = http.get(&metrics_url).send();
        async move {
            let text = req.await.ok()?.text().await.ok()?;
            samples(&text)
                .contains_key("oncebot_replies_total{result=\"sent\"}")
                .then_some(text)
        }
    })
    .await;
    let s = samples(&text);
    assert_eq!(
        s.get(r#"oncebot_moviepilot_errors_total{call="GET /api/v1/subscribe/",kind="transient"}"#),
        Some(&1.0),
        "the 502 is counted as MoviePilot's error\n{text}"
    );
    let exported = exported_names(&text);
    for expr in &exprs {
        for name in metric_names_in(expr) {
            assert!(
                exported.contains(&name),
                "the dashboard reads {name}, which /metrics does not export ({expr})\n{text}"
            );
        }
    }
    // And no family goes unwatched.
    let used: std::collections::BTreeSet<String> =
        exprs.iter().flat_map(|e| metric_names_in(e)).collect();
    for line in text.lines() {
        if let Some(decl) = line.strip_prefix("# TYPE ") {
            let family = decl.split_whitespace().next().unwrap();
            assert!(
                used.iter().any(|u| u.starts_with(family)),
                "no panel shows {family}"
            );
        }
    }
}
