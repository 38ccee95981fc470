//! Issue 22: users and roles (`telegram.users`) through a real oncebot, the fake Telegram and the
//! fake MoviePilot.

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::telegram::callback_update;
use serde_json::Value;

use crate::support::app::run_oncebot;
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, GROUP, eventually, group_text, private_text};

/// `oncebot_updates_total{outcome}` as the bot's `/metrics` says it.
async fn updates_counted(rig: &Rig, outcome: &str) -> f64 {
    let sample = format!("oncebot_updates_total{{outcome=\"{outcome}\"}}");
    rig.metric(&sample)
        .await
        .map_or(0.0, |v| v.parse().unwrap())
}

/// A viewer's /subscribe makes no job, is counted as forbidden and gets the one sentence; a read
/// is still theirs.
#[tokio::test]
async fn a_viewers_subscribe_makes_no_job_and_is_counted() {
    let users = format!("{ALICE}=alice:viewer,{BOB}=bob:admin");
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    let _bot = rig.start_pipeline().await;
    rig.send(1, "/subscribe tmdb:108545 S1").await;
    reply_with_text(&rig, ALICE, "You can only look").await;
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
    reply_with_text(&rig, ALICE, "Only an admin can do that.").await;
    assert!(rig.store.jobs_on_stream().await.is_empty());
    rig.post(&private_text(2, BOB, "/subscriptions all")).await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(updates_counted(&rig, "forbidden").await, 1.0);
}

/// A mapped user is one person in every chat: their `/subscribe` in the group and again in a
/// private chat is one job, which records who asked (`requester`, `role`, shown by `jobs show`).
/// An unmapped user keeps the window per user and chat: the same two messages make two jobs.
#[tokio::test]
async fn a_mapped_users_repeat_in_another_chat_is_the_same_job_and_the_job_says_who_asked() {
    let users = format!("{ALICE}=alice:user");
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    let _bot = rig.start_pipeline().await;
    let ask = "/subscribe tmdb:108545 S1";
    rig.post(&group_text(1, ALICE, ask)).await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    rig.post(&private_text(2, ALICE, ask)).await;
    eventually(
        "the repeat is absorbed by job 1",
        RECOVERY_DEADLINE,
        || async {
            (rig.store.job(1).await.get("duplicates").map(String::as_str) == Some("1"))
                .then_some(())
        },
    )
    .await;
    assert_eq!(rig.store.job_ids().await, [1].into());
    let job = rig.store.job(1).await;
    assert_eq!(job["requester"], "alice");
    assert_eq!(job["role"], "user");

    // Bob is allowed but unmapped: a `user` as the service account, one chat at a time.
    rig.post(&group_text(3, BOB, ask)).await;
    rig.post(&private_text(4, BOB, ask)).await;
    rig.job_in(3, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(rig.store.job_ids().await, [1, 2, 3].into());
    let bobs = rig.store.job(2).await;
    assert_eq!(bobs["role"], "user");
    assert!(!bobs.contains_key("requester"), "{bobs:?}");

    let shown = rig.job_shown(1).await;
    assert_eq!(shown["requester"], "alice");
    assert_eq!(shown["role"], "user");
    let url = rig.redis.url();
    let out = run_oncebot(&["jobs", "show", "2"], &[("ONCEBOT__REDIS__URL", &url)]).await;
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stdout
            .lines()
            .any(|l| l.split_whitespace().eq(["requester", "-"])),
        "the service account reads as -: {}",
        out.stdout
    );
    assert!(
        out.stdout
            .lines()
            .any(|l| l.split_whitespace().eq(["role", "user"]))
    );
}

/// Waits for the bot's first message to `chat` containing `text`: its message id and buttons.
async fn reply_with_text(rig: &Rig, chat: i64, text: &'static str) -> (i64, Option<Value>) {
    eventually("the reply is sent", RECOVERY_DEADLINE, || {
        let sent = rig.tg.sent();
        async move {
            sent.into_iter()
                .find(|m| m.chat_id == chat && m.text.contains(text))
                .map(|m| (m.message_id, m.reply_markup))
        }
    })
    .await
}

/// A viewer's search results come without buttons (every one would be refused them); an
/// admin's come with Subscribe buttons, and the job a tap makes acts for the one who tapped.
#[tokio::test]
async fn a_viewer_sees_results_without_buttons_and_a_tapped_job_acts_for_the_tapper() {
    let users = format!("{ALICE}=alice:viewer,{BOB}=bob:admin");
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    let _bot = rig.start_pipeline().await;
    rig.send(1, "/search Dune").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let (_, markup) = reply_with_text(&rig, ALICE, "Dune").await;
    assert_eq!(markup, None, "a viewer's results carry no buttons");

    rig.post(&group_text(2, BOB, "/search Dune")).await;
    rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    let (message_id, markup) = reply_with_text(&rig, GROUP, "Dune").await;
    let markup = markup.expect("an admin's results carry Subscribe buttons");
    let data = markup["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .expect("a button with callback data")
        .to_string();
    let mut tap = callback_update(GROUP, BOB, message_id, &data);
    tap["update_id"] = serde_json::json!(3);
    rig.post(&tap).await;
    rig.job_in(3, "succeeded", RECOVERY_DEADLINE).await;
    let job = rig.store.job(3).await;
    assert_eq!(job["command"], "subscribe");
    assert_eq!(job["requester"], "bob");
    assert_eq!(job["role"], "admin");
}
