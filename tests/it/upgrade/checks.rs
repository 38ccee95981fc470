//! What the upgrade must have kept, read from Redis and from the simulators (never from the
//! processes' own reports): each accepted update one job or one reply, each job one effect at
//! MoviePilot, each reply delivered once, nothing left pending.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::time::Duration;

use oncebot::ledger::keys::Stream;
use oncebot_tools::sim::moviepilot::routes;
use tokio::time::Instant;

use super::load::{
    DOWNLOADED, Load, NOTIFIED, SUBSCRIBED, Sent, UNSUBSCRIBED, delivered, note_title, shown_text,
};
use crate::support::message_id;
use crate::support::rig::Rig;

/// How long the deployment may take to finish what it holds once the load stops.
const QUIESCENCE: Duration = Duration::from_secs(60);

type Entry = BTreeMap<String, String>;

/// Waits until nothing is in flight: every accepted update settled, every job ended, no entry
/// pending in any group, every reply and callback answer at Telegram. Panics with what was
/// still open after [`QUIESCENCE`].
pub async fn quiescence(load: &Load) {
    let result = oncebot_tools::rig::wait("the deployment to go quiet", QUIESCENCE)
        .every(Duration::from_millis(200))
        .until_seen(|| async {
            Ok(match still_open(load).await {
                None => ControlFlow::Break(()),
                Some(open) => ControlFlow::Continue(open),
            })
        })
        .await;
    if let Err(e) = result {
        panic!("{e:#}");
    }
}

/// What is still in flight, in words; `None` once nothing is.
async fn still_open(load: &Load) -> Option<String> {
    let store = &load.rig.store;
    for a in load.admitted() {
        if store.update(a.update_id).await.is_none() {
            return Some(format!("update {} has no record", a.update_id));
        }
    }
    for (id, (status, _)) in store.job_states().await {
        if !matches!(status.as_str(), "succeeded" | "failed") {
            return Some(format!("job {id} is {status}"));
        }
    }
    for stream in Stream::ALL {
        let pending = pending(&load.rig, stream).await;
        if pending > 0 {
            return Some(format!("{pending} pending in {}", stream.name()));
        }
    }
    for (id, job) in jobs_now(store).await {
        if job.get("reply_state").map(String::as_str) != Some("sent") {
            return Some(format!("job {id}'s reply is {:?}", job.get("reply_state")));
        }
    }
    None
}

/// The pending entries of `stream`'s group.
pub async fn pending(rig: &Rig, stream: Stream) -> u64 {
    let mut conn = rig.store.conn().await;
    let summary: redis::Value = redis::cmd("XPENDING")
        .arg(stream.key(&rig.store.keys))
        .arg(stream.group())
        .query_async(&mut conn)
        .await
        .unwrap();
    match summary {
        redis::Value::Array(items) => match items.first() {
            Some(redis::Value::Int(n)) => *n as u64,
            other => panic!("XPENDING {}: {other:?}", stream.name()),
        },
        other => panic!("XPENDING {}: {other:?}", stream.name()),
    }
}

/// Every job's HASH.
async fn jobs_now(store: &crate::support::Store) -> BTreeMap<u64, Entry> {
    let mut out = BTreeMap::new();
    for id in store.job_ids().await {
        out.insert(id, store.job(id).await);
    }
    out
}

/// What Telegram accepted as a new message: `(chat, the message it replies to, text)`.
fn sends(rig: &Rig) -> Vec<(i64, Option<i64>, String)> {
    rig.tg
        .calls()
        .into_iter()
        .filter(|c| {
            matches!(c.method.as_str(), "sendMessage" | "sendPhoto") && c.status() == Some(200)
        })
        .map(|c| {
            let chat = c.params["chat_id"].as_i64().unwrap();
            let reply_to = c.params["reply_parameters"]["message_id"].as_i64();
            (
                chat,
                reply_to,
                shown_text(&c.params).unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// No reply reached Telegram twice: no two messages with the same chat, the same message
/// replied to and the same text (each update's message is replied to by its own answers, each
/// notification's text is its own). Every job's reply is recorded sent, as a message Telegram
/// has.
pub fn each_reply_delivered_once(rig: &Rig, jobs: &BTreeMap<i64, Entry>) {
    let mut seen = BTreeMap::new();
    for send in sends(rig) {
        *seen.entry(send).or_insert(0) += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "replies delivered more than once: {twice:#?}"
    );
    for job in jobs.values() {
        assert_eq!(
            job.get("reply_state").map(String::as_str),
            Some("sent"),
            "{job:?}"
        );
        let chat: i64 = job["chat_id"].parse().unwrap();
        let message: i64 = job["reply_message_id"].parse().unwrap();
        assert!(
            rig.tg.observe(|o| o.message(chat, message).is_some()),
            "job {}'s reply is no message at Telegram",
            job["id"]
        );
    }
}

/// Every accepted update is one job or at most one reply (a reply repeated inside its window is
/// sent once), never both and never twice: no two updates share a job, no job exists that no
/// update made, a tap has exactly one answer, delivered once. Returns the jobs by update.
pub async fn each_update_once(load: &Load) -> BTreeMap<i64, Entry> {
    let store = &load.rig.store;
    let sent = sends(&load.rig);
    let calls = load.rig.tg.calls();
    let mut jobs = BTreeMap::new();
    let admitted = load.admitted();
    for a in &admitted {
        let record = store.update(a.update_id).await.unwrap();
        match (&a.sent, record.as_str()) {
            (Sent::Text { chat, .. }, "-") => {
                let to = Some(message_id(a.update_id));
                let answers = sent
                    .iter()
                    .filter(|(c, r, _)| c == chat && *r == to)
                    .count();
                assert!(
                    answers <= 1,
                    "update {} answered {answers} times",
                    a.update_id
                );
            }
            (Sent::Tap { query }, _) => {
                let at_telegram = calls
                    .iter()
                    .filter(|c| {
                        c.method == "answerCallbackQuery"
                            && c.status() == Some(200)
                            && c.params["callback_query_id"].as_str() == Some(query)
                    })
                    .count();
                assert_eq!(at_telegram, 1, "tap {}'s answer delivered", a.update_id);
            }
            _ => {}
        }
        if record != "-" {
            let job = store.job(record.parse().unwrap()).await;
            assert_eq!(
                job["update_id"],
                a.update_id.to_string(),
                "update {} is another update's job: {job:?}",
                a.update_id
            );
            jobs.insert(a.update_id, job);
        }
    }
    let distinct: BTreeSet<i64> = admitted.iter().map(|a| a.update_id).collect();
    assert_eq!(distinct.len(), admitted.len(), "an update id taken twice");
    let made: BTreeSet<u64> = jobs.values().map(|j| j["id"].parse().unwrap()).collect();
    assert_eq!(made.len(), jobs.len(), "two updates share a job");
    assert_eq!(store.job_ids().await, made, "jobs no accepted update made");
    jobs
}

/// Every job succeeded, and each did its effect once at MoviePilot: one subscription created
/// per film and cancelled once, one download per release.
pub fn each_job_one_effect(rig: &Rig, jobs: &BTreeMap<i64, Entry>) {
    let failed: Vec<_> = jobs
        .values()
        .filter(|j| j["status"] != "succeeded")
        .collect();
    assert!(failed.is_empty(), "jobs that did not succeed: {failed:#?}");
    let with = |command: &str, outcomes: &[&str]| -> Vec<&Entry> {
        jobs.values()
            .filter(|j| j["command"] == command)
            .filter(|j| outcomes.contains(&j.get("mp_outcome").map_or("", String::as_str)))
            .collect()
    };
    // Each subscribe button's job one create, each Confirm one delete, each download one add,
    // whether its worker lived or was killed (then its successor found it done).
    let created = with("subscribe", &SUBSCRIBED);
    let films: BTreeSet<&str> = created.iter().map(|j| j["args"].as_str()).collect();
    assert_eq!(films.len(), created.len(), "a film subscribed twice");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), created.len() as u64);
    let deleted = with("unsubscribe", &UNSUBSCRIBED);
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_DELETE), deleted.len() as u64);
    assert_eq!(
        deleted.len(),
        created.len(),
        "each subscription cancelled once"
    );
    assert!(
        rig.mp.subscriptions().is_empty(),
        "{:?}",
        rig.mp.subscriptions()
    );
    let added = with("grab", &DOWNLOADED);
    let adds = rig.mp.download_adds();
    assert_eq!(
        adds.len(),
        added.len(),
        "downloads at MoviePilot: {adds:#?}"
    );
    let releases: BTreeSet<String> = adds.iter().map(|a| a.to_string()).collect();
    assert_eq!(releases.len(), adds.len(), "a release added twice");
    assert!(
        !created.is_empty() && !added.is_empty(),
        "the load made no effect"
    );
}

/// Each of MoviePilot's notifications reached its chat exactly once.
pub fn each_notification_once(load: &Load) {
    assert!(load.notes() > 0);
    for n in 1..=load.notes() {
        let got = delivered(&load.rig, NOTIFIED, &note_title(n));
        assert_eq!(got, 1, "notification {n} delivered {got} times");
    }
}

/// `/version`, the command 0.2.0 added: no job of it ever failed; while an old worker that does
/// not know it lived (a base before 0.2.0), none was made (the ingress answered instead); once
/// the old workers were gone, it was answered by a job, naming this release's version. A later
/// release that adds a command holds it here the same way.
pub async fn version_across_the_upgrade(
    load: &Load,
    jobs: &BTreeMap<i64, Entry>,
    old_workers_gone: Instant,
) {
    let versions: Vec<_> = load
        .admitted()
        .into_iter()
        .filter(|a| matches!(&a.sent, Sent::Text { text, .. } if text == "/version"))
        .collect();
    let base_knows_it = std::path::Path::new(&std::env::var("ONCEBOT_OLD_TREE").unwrap())
        .join("crates/service/src/commands/version.rs")
        .exists();
    for a in &versions {
        let job = jobs.get(&a.update_id);
        if let Some(job) = job {
            assert_ne!(job["status"], "failed", "/version failed: {job:?}");
        }
        if a.at < old_workers_gone && !base_knows_it {
            assert!(
                job.is_none(),
                "/version became a job while an old worker lived: {job:?}"
            );
        }
    }
    let answered: Vec<&Entry> = versions
        .iter()
        .filter(|a| a.at > old_workers_gone)
        .filter_map(|a| jobs.get(&a.update_id))
        .filter(|j| j["command"] == "version" && j["status"] == "succeeded")
        .collect();
    assert!(
        !answered.is_empty(),
        "no /version was answered by a job after the old workers were gone"
    );
    let job = answered[0];
    let chat: i64 = job["chat_id"].parse().unwrap();
    let message: i64 = job["reply_message_id"].parse().unwrap();
    let text = load
        .rig
        .tg
        .observe(|o| o.message(chat, message).map(|m| m.text.clone()))
        .unwrap_or_else(|| panic!("no answer of {job:?} at Telegram"));
    assert!(
        text.contains(env!("CARGO_PKG_VERSION")),
        "/version's answer names this release: {text:?}"
    );
}
