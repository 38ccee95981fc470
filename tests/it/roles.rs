//! Issue 22: users and roles (`telegram.users`) through a real oncebot, the fake Telegram and the
//! fake MoviePilot.

use std::collections::BTreeMap;

use oncebot::moviepilot::Dialect;

use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, eventually, private_text};

/// `oncebot_updates_total{outcome}` as the bot's `/metrics` says it.
async fn updates_counted(rig: &Rig, outcome: &str) -> f64 {
    let text = rig
        .http
        .get(format!("http://127.0.0.1:{}/metrics", rig.port))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let key = format!("oncebot_updates_total{{outcome=\"{outcome}\"}}");
    let samples: BTreeMap<&str, f64> = text
        .lines()
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k, v.parse().ok()?))
        })
        .collect();
    samples.get(key.as_str()).copied().unwrap_or(0.0)
}

/// A viewer's /subscribe makes no job, is counted as forbidden and gets the one sentence; a read
/// is still theirs.
#[tokio::test]
async fn a_viewers_subscribe_makes_no_job_and_is_counted() {
    let users = format!("{ALICE}=alice:viewer,{BOB}=bob:admin");
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    let _bot = rig.start_pipeline().await;
    rig.send(1, "/subscribe tmdb:108545 S1").await;
    eventually("the refusal is sent", RECOVERY_DEADLINE, || {
        let sent = rig.tg.sent();
        async move {
            sent.iter()
                .any(|m| m.chat_id == ALICE && m.text.contains("You can only look"))
                .then_some(())
        }
    })
    .await;
    assert!(rig.store.jobs_on_stream().await.is_empty());
    assert_eq!(updates_counted(&rig, "forbidden").await, 1.0);
    // A read is a viewer's: it becomes a job.
    rig.send(2, "/subscriptions").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
}

/// Nothing changes for a deployment that maps nobody: an allowed user may list everything.
#[tokio::test]
async fn with_nobody_mapped_subscriptions_all_runs_as_before() {
    let rig = Rig::with(Dialect::V2, &[]).await;
    let _bot = rig.start_pipeline().await;
    rig.send(1, "/subscriptions all").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(updates_counted(&rig, "forbidden").await, 0.0);
}

/// Once anyone is mapped, an unmapped allowed user is a `user`: `/subscriptions all` is refused
/// them and runs for an admin.
#[tokio::test]
async fn subscriptions_all_is_an_admins_once_anyone_is_mapped() {
    let users = format!("{BOB}=bob:admin");
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    let _bot = rig.start_pipeline().await;
    rig.send(1, "/subscriptions all").await;
    eventually("the refusal is sent", RECOVERY_DEADLINE, || {
        let sent = rig.tg.sent();
        async move {
            sent.iter()
                .any(|m| m.chat_id == ALICE && m.text.contains("Only an admin can do that."))
                .then_some(())
        }
    })
    .await;
    assert!(rig.store.jobs_on_stream().await.is_empty());
    rig.post(&private_text(2, BOB, "/subscriptions all")).await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(updates_counted(&rig, "forbidden").await, 1.0);
}
