//! `/best` (`洗版`, issue 24 "Best version"): a subscription with MoviePilot's `best_version`,
//! a command of its own (its own duplicate key and window), looked for before it is made (one
//! subscription per media at MoviePilot), and verified, not made again, after a crash.

use std::collections::BTreeMap;
use std::time::Duration;

use oncebot::moviepilot::{Dialect, MediaKind};
use oncebot_tools::sim::moviepilot::{MediaServer, routes};
use oncebot_tools::sim::telegram::callback_update;
use serde_json::json;

use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, buttons, eventually};

const DUNE: u64 = 438631;
const THREE_BODY: u64 = 108545;

/// Job `job`'s answer (its `result` reply), once it succeeded.
async fn answer(rig: &Rig, job: u64) -> BTreeMap<String, String> {
    rig.job_in(job, "succeeded", RECOVERY_DEADLINE).await;
    eventually(
        &format!("job {job}'s answer"),
        RECOVERY_DEADLINE,
        || async move {
            rig.replies_for(job)
                .await
                .into_iter()
                .find(|r| r["kind"] == "result")
        },
    )
    .await
}

#[tokio::test]
async fn best_subscribes_with_best_version_and_is_not_a_repeat_of_a_plain_subscribe() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = Rig::new(dialect).await;
        // 洗版 is for media one has: the library is not asked.
        rig.mp.set_media_server(MediaServer::Configured);
        rig.mp.library_add_movie(DUNE);
        let _bot = rig.start(None).await;
        rig.send(1, &format!("/best tmdb:{DUNE}")).await;
        let done = answer(&rig, 1).await;
        assert!(
            done["text"].starts_with("Subscribed to \"Dune\"")
                && done["text"].contains("\nBest version: MoviePilot keeps looking"),
            "{dialect:?}: {done:?}"
        );
        let sub = rig.mp.find_subscription(DUNE, None).expect("created");
        assert!(sub.best_version, "{dialect:?}: created with best_version");
        assert_eq!(rig.mp.calls(routes::MEDIASERVER_NOTEXISTS), 0);
        let job = rig.store.job(1).await;
        assert_eq!(job["command"], "best");
        assert_eq!(job["mp_outcome"], "created");

        // The same /best inside its window: no job. A plain /subscribe of the same media is
        // another command: a job of its own, which finds the subscription.
        rig.send(2, &format!("/best tmdb:{DUNE}")).await;
        rig.send(3, &format!("/subscribe tmdb:{DUNE}")).await;
        let plain = answer(&rig, 2).await;
        assert!(
            plain["text"].contains("is already subscribed"),
            "{dialect:?}: {plain:?}"
        );
        assert_eq!(rig.store.job_ids().await.len(), 2, "{dialect:?}");
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1, "{dialect:?}");
    }
}

#[tokio::test]
async fn xiban_lists_matches_whose_best_button_subscribes_best_once() {
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__TELEGRAM__LOCALE", "zh")]).await;
    let _bot = rig.start(None).await;
    rig.send(1, "洗版 dune").await;
    let list = answer(&rig, 1).await;
    assert!(
        list["text"].starts_with("「dune」有 2 个结果，请选择要洗版（订阅更好版本）的条目："),
        "{list:?}"
    );
    assert!(list["text"].contains("\n   /best tmdb:438631"), "{list:?}");
    let (label, data) = buttons(&list).into_iter().next().expect("a button");
    assert_eq!(label, "1. 洗版 Dune (2021)");
    let mut tap = callback_update(ALICE, ALICE, 93_001, &data);
    tap["update_id"] = json!(2);
    let again = {
        let mut t = callback_update(ALICE, ALICE, 93_001, &data);
        t["update_id"] = json!(3);
        t
    };
    futures::future::join(rig.post(&tap), rig.post(&again)).await;
    let done = answer(&rig, 2).await;
    assert!(
        done["text"].contains("洗版：MoviePilot 会一直寻找更好的版本"),
        "{done:?}"
    );
    let job = rig.store.job(2).await;
    assert_eq!(job["command"], "best");
    assert_eq!(job["args"], format!("tmdb:{DUNE}"));
    assert!(rig.mp.find_subscription(DUNE, None).unwrap().best_version);
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1);
    assert_eq!(
        rig.store.job_ids().await.len(),
        2,
        "the second tap made no job"
    );
}

/// MoviePilot keeps one subscription per media: a plain one is left as it is (switching means
/// rewriting someone's row), and the user is told how to switch.
#[tokio::test]
async fn best_leaves_a_plain_subscription_as_it_is_and_says_how_to_switch() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = Rig::new(dialect).await;
        let id = rig
            .mp
            .insert_subscription(THREE_BODY, MediaKind::Tv, Some(1))
            .unwrap();
        let _bot = rig.start(None).await;
        rig.send(1, &format!("/best tmdb:{THREE_BODY} S1")).await;
        let done = answer(&rig, 1).await;
        assert_eq!(
            done["text"],
            format!(
                "\"三体\" season 1 already has a plain subscription (#{id}), and MoviePilot keeps \
                 one per title, so it was not changed to best version. To get the best version, \
                 send /unsubscribe {id} first, then /best again."
            ),
            "{dialect:?}"
        );
        let job = rig.store.job(1).await;
        assert_eq!(job["mp_outcome"], "plain_exists");
        assert_eq!(job["mp_subscription_id"], id.to_string());
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 0, "{dialect:?}");
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_UPDATE), 0, "{dialect:?}");
        assert!(
            !rig.mp
                .find_subscription(THREE_BODY, Some(1))
                .unwrap()
                .best_version
        );
    }
}

#[tokio::test]
async fn best_of_a_best_version_subscription_is_already_there() {
    let rig = Rig::new(Dialect::V2).await;
    let id = rig
        .mp
        .insert_subscription(DUNE, MediaKind::Movie, None)
        .unwrap();
    rig.mp.set_best_version(id, true);
    let _bot = rig.start(None).await;
    rig.send(1, &format!("/best tmdb:{DUNE}")).await;
    let done = answer(&rig, 1).await;
    assert!(
        done["text"].starts_with(&format!(
            "\"Dune\" is already subscribed (subscription #{id}); nothing added."
        )),
        "{done:?}"
    );
    assert_eq!(rig.store.job(1).await["mp_outcome"], "already_existed");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 0);
}

/// A crash right after MoviePilot made the best-version subscription: the restarted worker
/// looks, finds it (best version: this job's), and says so once; nothing is created again.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn crash_after_the_best_create_is_verified_not_replayed() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = Rig::new(dialect).await;
        let mut bot = rig.start(Some("worker.after_call")).await;
        rig.send(1, &format!("/best tmdb:{THREE_BODY} S1")).await;
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
        assert_eq!(job["recovery"], "verify");
        assert_eq!(job["mp_outcome"], "verified_existing", "{dialect:?}");
        assert_eq!(job["recoveries"], "1");
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1, "{dialect:?}");
        let subs = rig.mp.subscriptions();
        assert_eq!(subs.len(), 1);
        assert!(subs[0].best_version, "{dialect:?}");
        let replies = rig.replies_for(1).await;
        assert_eq!(replies.len(), 1, "{replies:?}");
        assert!(
            replies[0]["text"].contains("interrupted")
                && replies[0]["text"].contains("Best version"),
            "{replies:?}"
        );
        assert_eq!(rig.pending_entries().await, 0);
    }
}
