//! The ⚡ Auto button under a release list (issue 24, MoviePilot's 自动选择下载): one job that
//! downloads release 1 (MoviePilot's best by its own order) as `下载 1` does and, for a season,
//! subscribes to it as `/subscribe` does; one download whichever of the two buttons is tapped
//! first; one report, the progress message edited between the steps; a SIGKILL at either step
//! re-runs nothing blindly. Ingress and a worker run as a real process against the simulators.

use std::collections::BTreeMap;
use std::time::Duration;

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::moviepilot::{Fault, MediaServer, routes};
use oncebot_tools::sim::telegram::callback_update;
use serde_json::{Value, json};

use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, buttons, eventually};

const DUNE: u64 = 438631;
const THREE_BODY: u64 = 108545;
/// The id Telegram gave the bot's message with the list (no dispatcher runs here).
const LIST_MESSAGE: i64 = 94_001;

/// A rig whose media server holds 三体 season 1 but E05–E08, and whose downloads settle fast.
async fn rig(dialect: Dialect, overrides: &[(&str, &str)]) -> Rig {
    let mut all = vec![("ONCEBOT__MOVIEPILOT__DOWNLOAD_SETTLE_SECS", "2")];
    all.extend_from_slice(overrides);
    let rig = Rig::with(dialect, &all).await;
    rig.mp.set_media_server(MediaServer::Configured);
    rig.mp
        .library_add_episodes(THREE_BODY, 1, (1..=4).chain(9..=30));
    rig
}

fn tap(update_id: i64, data: &str) -> Value {
    let mut update = callback_update(ALICE, ALICE, LIST_MESSAGE, data);
    update["update_id"] = json!(update_id);
    update
}

fn button(reply: &BTreeMap<String, String>, text: &str) -> String {
    buttons(reply)
        .into_iter()
        .find(|(t, _)| t == text)
        .unwrap_or_else(|| panic!("no button {text:?} in {reply:?}"))
        .1
}

/// `/download <target>` as update `update_id`, run to its list (job `job`).
async fn list(rig: &Rig, update_id: i64, job: u64, target: &str) -> BTreeMap<String, String> {
    rig.send(update_id, &format!("/download {target}")).await;
    rig.job_in(job, "succeeded", RECOVERY_DEADLINE).await;
    eventually("the list", RECOVERY_DEADLINE, || async move {
        rig.replies_for(job)
            .await
            .into_iter()
            .find(|r| r.contains_key("markup"))
    })
    .await
}

/// Job `job`'s reply of `kind`.
async fn reply(rig: &Rig, job: u64, kind: &str) -> BTreeMap<String, String> {
    eventually(
        &format!("job {job}'s {kind}"),
        RECOVERY_DEADLINE,
        || async move {
            rig.replies_for(job)
                .await
                .into_iter()
                .find(|r| r["kind"] == kind)
        },
    )
    .await
}

async fn callback_answer(rig: &Rig, update: &Value) -> String {
    let id = update["callback_query"]["id"].as_str().unwrap().to_string();
    let store = &rig.store;
    eventually("the tap's answer", Duration::from_secs(10), || {
        let id = id.clone();
        async move {
            store
                .stream(&store.keys.callbacks_stream())
                .await
                .into_iter()
                .find(|c| c["callback_query_id"] == id)
                .map(|c| c["text"].clone())
        }
    })
    .await
}

#[tokio::test]
async fn auto_downloads_release_one_and_subscribes_the_season_once() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = rig(dialect, &[]).await;
        let _bot = rig.start(None).await;
        let list = list(&rig, 1, 1, &format!("tmdb:{THREE_BODY} S1")).await;
        let labels: Vec<String> = buttons(&list).into_iter().map(|b| b.0).collect();
        assert_eq!(
            labels,
            ["Download 1", "Download 2", "⚡ Auto"],
            "{dialect:?}"
        );
        let auto = button(&list, "⚡ Auto");
        // Another user's tap in the same chat runs nothing and leaves the button working.
        let mut foreign = callback_update(ALICE, BOB, LIST_MESSAGE, &auto);
        foreign["update_id"] = json!(9);
        rig.post(&foreign).await;
        assert_eq!(
            callback_answer(&rig, &foreign).await,
            "This button is not for you."
        );
        assert_eq!(rig.store.job_ids().await.len(), 1);
        let (a, b) = (tap(2, &auto), tap(3, &auto));
        futures::future::join(rig.post(&a), rig.post(&b)).await;
        let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(job["command"], "auto");
        assert_eq!(job["args"], format!("1 tmdb:{THREE_BODY} S1"));
        assert_eq!(job["mp_outcome"], "added", "{job:?}");
        assert_eq!(job["mp_subscribe_outcome"], "created", "{job:?}");
        assert_eq!(job["auto_download_job"], "2");
        let mut answers = vec![
            callback_answer(&rig, &a).await,
            callback_answer(&rig, &b).await,
        ];
        answers.sort();
        assert_eq!(answers[1], "Received: job #2", "{answers:?}");
        assert!(
            answers[0].starts_with("Already handled: job #2"),
            "{answers:?}"
        );

        // Release 1, MoviePilot's first (its best by its own order), once.
        let adds = rig.mp.download_adds();
        assert_eq!(adds.len(), 1, "{dialect:?}");
        assert_eq!(adds[0]["torrent_in"]["site_name"], "PTSiteA");
        assert_eq!(
            adds[0]["torrent_in"]["title"],
            "Three Body S01 2023 2160p WEB-DL H265-SIM"
        );
        let sub = rig
            .mp
            .find_subscription(THREE_BODY, Some(1))
            .expect("subscribed");
        assert!(!sub.best_version);
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1);

        let result = reply(&rig, 2, "result").await;
        let text = &result["text"];
        assert!(text.starts_with("⚡ Auto:\n✓ Started downloading \"Three Body S01 2023 2160p WEB-DL H265-SIM\" (site: PTSiteA)."), "{text}");
        assert!(text.contains("\n✓ Subscribed to \""), "{text}");
        assert!(
            text.contains("Missing from your library: season 1 is missing E05–E08"),
            "{text}"
        );
        let results = rig.replies_for(2).await;
        assert_eq!(
            results.iter().filter(|r| r["kind"] == "result").count(),
            1,
            "one report: {results:?}"
        );

        // 下载 1 after it is the same download: answered as the auto job's duplicate.
        let one = tap(4, &button(&list, "Download 1"));
        rig.post(&one).await;
        assert!(
            callback_answer(&rig, &one)
                .await
                .starts_with("Already received as job #2"),
            "{dialect:?}"
        );
        assert_eq!(rig.mp.download_adds().len(), 1);
        assert_eq!(rig.store.job_ids().await.len(), 2);
        // 下载 2 is another release: a job of its own.
        rig.post(&tap(5, &button(&list, "Download 2"))).await;
        rig.job_in(3, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(rig.mp.download_adds().len(), 2);
    }
}

/// A `下载 1` tapped first is the download: the auto job sends nothing, names that job, and
/// a movie has no second step.
#[tokio::test]
async fn a_download_1_tapped_first_is_the_auto_jobs_download() {
    let rig = rig(Dialect::V2, &[("ONCEBOT__TELEGRAM__LOCALE", "zh")]).await;
    let _bot = rig.start(None).await;
    let list = list(&rig, 1, 1, &format!("tmdb:{DUNE}")).await;
    rig.post(&tap(2, &button(&list, "下载 1"))).await;
    rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    rig.post(&tap(3, &button(&list, "⚡ 自动"))).await;
    let job = rig.job_in(3, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["auto_download_job"], "2");
    assert_eq!(rig.mp.download_adds().len(), 1, "not downloaded again");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 0, "a movie");
    let result = reply(&rig, 3, "result").await;
    assert_eq!(
        result["text"],
        "⚡ 自动：\n✓ 第 1 个资源已由任务 #2 下载（已完成），没有再次下载。"
    );
    // The tapped button is marked used on its page.
    let edit = eventually(
        "the list's keyboard edited",
        Duration::from_secs(10),
        || async {
            rig.store
                .replies()
                .await
                .into_iter()
                .filter(|r| r["kind"] == "page")
                .find(|r| buttons(r).iter().any(|b| b.0 == "✓ ⚡ 自动"))
        },
    )
    .await;
    assert_eq!(edit["edit_message_id"], LIST_MESSAGE.to_string());
}

/// MoviePilot refuses release 1: the season is subscribed all the same, the report says which
/// step failed, and the download's key is given back, so a later `下载 1` may try.
#[tokio::test]
async fn a_refused_download_does_not_stop_the_subscription_and_frees_download_1() {
    let rig = rig(Dialect::V3, &[]).await;
    let _bot = rig.start(None).await;
    let list = list(&rig, 1, 1, &format!("tmdb:{THREE_BODY} S1")).await;
    rig.mp.fail_next(
        routes::DOWNLOAD_ADD,
        Fault::Status(
            200,
            r#"{"success":false,"message":"任务添加失败","data":{}}"#.into(),
        ),
    );
    rig.post(&tap(2, &button(&list, "⚡ Auto"))).await;
    let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["mp_subscribe_outcome"], "created", "{job:?}");
    assert!(
        job["auto_download_refused"].contains("任务添加失败"),
        "noted, so a recovery does not send it again: {job:?}"
    );
    let text = reply(&rig, 2, "result").await["text"].clone();
    assert!(
        text.contains("\n✗ MoviePilot did not add \"Three Body S01"),
        "{text}"
    );
    assert!(text.contains("\n✓ Subscribed to \""), "{text}");
    assert!(
        !text.contains("任务添加失败"),
        "nothing MoviePilot said raw: {text}"
    );
    rig.post(&tap(3, &button(&list, "Download 1"))).await;
    rig.job_in(3, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(rig.mp.calls(routes::DOWNLOAD_ADD), 2);
}

/// A job slow enough to have a progress message: it is edited with the download's outcome
/// before the subscription (kind `step`), and the result replaces it.
#[tokio::test]
async fn the_progress_message_says_the_download_before_the_subscription() {
    let rig = rig(Dialect::V2, &[("ONCEBOT__WORKER__PROGRESS_AFTER_MS", "50")]).await;
    let _bot = rig.start(None).await;
    let list = list(&rig, 1, 1, &format!("tmdb:{THREE_BODY} S1")).await;
    // The add takes longer than worker.progress_after_ms: "working on it" goes first.
    rig.mp.set_add_delay(Duration::from_millis(600));
    rig.post(&tap(2, &button(&list, "⚡ Auto"))).await;
    rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    let kinds: Vec<String> = rig
        .replies_for(2)
        .await
        .iter()
        .map(|r| r["kind"].clone())
        .collect();
    assert_eq!(kinds, ["progress", "step", "result"]);
    let step = reply(&rig, 2, "step").await;
    assert_eq!(
        step["text"],
        "⚡ Auto:\n✓ Started downloading \"Three Body S01 2023 2160p WEB-DL H265-SIM\" (site: PTSiteA).\n… subscribing to the season"
    );
    assert!(
        !step.contains_key("edit_message_id"),
        "the dispatcher edits the job's progress message"
    );
}

/// SIGKILL after the job's MoviePilot calls, and between its two steps: the restarted worker
/// verifies the download in the history and looks for the subscription; MoviePilot counts one
/// add and one subscription.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_crash_at_either_step_downloads_and_subscribes_once() {
    for point in ["worker.after_call", "worker.auto_between_steps"] {
        let rig = rig(Dialect::V2, &[]).await;
        let mut bot = rig.start(None).await;
        let list = list(&rig, 1, 1, &format!("tmdb:{THREE_BODY} S1")).await;
        bot.sigkill().await;
        let mut bot = rig.start(Some(point)).await;
        rig.post(&tap(2, &button(&list, "⚡ Auto"))).await;
        bot.wait_for_stderr(
            &format!("crash point {point} reached"),
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(
            rig.mp.download_adds().len(),
            1,
            "{point}: MoviePilot added it"
        );
        bot.sigkill().await;
        let _bot = rig.start(None).await;
        let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(job["recoveries"], "1", "{point}");
        assert_eq!(job["mp_outcome"], "verified_existing", "{point}: {job:?}");
        assert_eq!(
            rig.mp.calls(routes::DOWNLOAD_ADD),
            1,
            "{point}: not sent again"
        );
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1, "{point}");
        assert_eq!(rig.mp.subscriptions().len(), 1, "{point}");
        let results: Vec<_> = rig
            .replies_for(2)
            .await
            .into_iter()
            .filter(|r| r["kind"] == "result")
            .collect();
        assert_eq!(results.len(), 1, "{point}: {results:?}");
        assert!(
            results[0]["text"].contains("✓ Started downloading"),
            "{results:?}"
        );
    }
}

/// Through the dispatcher and the Bot API simulator: the job's one message is its "working on
/// it" message, edited with the download's line, then with the report.
#[tokio::test]
async fn one_message_is_edited_as_the_steps_finish() {
    let rig = rig(
        Dialect::V2,
        &[
            ("ONCEBOT__WORKER__PROGRESS_AFTER_MS", "50"),
            ("ONCEBOT__TELEGRAM__POSTERS", "false"),
        ],
    )
    .await;
    let _bot = rig.start_pipeline().await;
    rig.send(1, &format!("/download tmdb:{THREE_BODY} S1"))
        .await;
    rig.replies_sent(1..=1, RECOVERY_DEADLINE).await;
    let job = rig.store.job(1).await;
    let list_message: i64 = job["reply_message_id"].parse().unwrap();
    let markup = rig
        .tg
        .observe(|o| o.message(ALICE, list_message).cloned())
        .and_then(|m| m.reply_markup)
        .expect("the list's buttons");
    let auto = markup["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter())
        .find(|b| b["text"] == "⚡ Auto")
        .and_then(|b| b["callback_data"].as_str())
        .expect("a ⚡ Auto button")
        .to_string();
    let before = rig.tg.calls().len();
    rig.mp.set_add_delay(Duration::from_millis(600));
    let mut update = callback_update(ALICE, ALICE, list_message, &auto);
    update["update_id"] = json!(2);
    rig.post(&update).await;
    rig.replies_sent(2..=2, RECOVERY_DEADLINE).await;
    let calls: Vec<_> = rig.tg.calls().into_iter().skip(before).collect();
    // The messages of job 2 (its callback answer is not a message).
    let for_job = |c: &&oncebot_tools::sim::telegram::Call| {
        c.status() == Some(200)
            && ["sendMessage", "editMessageText", "sendPhoto"].contains(&c.method.as_str())
            && c.params
                .get("text")
                .and_then(Value::as_str)
                .is_some_and(|t| t.contains("job #2") || t.starts_with("⚡ Auto:"))
    };
    let ours: Vec<_> = calls.iter().filter(for_job).collect();
    let methods: Vec<&str> = ours.iter().map(|c| c.method.as_str()).collect();
    assert_eq!(
        methods,
        ["sendMessage", "editMessageText", "editMessageText"],
        "{ours:#?}"
    );
    let progress = rig.store.job(2).await["progress_message_id"].clone();
    for edit in &ours[1..] {
        assert_eq!(edit.params["message_id"].to_string(), progress, "{edit:?}");
    }
    assert!(
        ours[1].params["text"]
            .as_str()
            .unwrap()
            .ends_with("… subscribing to the season")
    );
    let shown = rig
        .tg
        .observe(|o| o.message(ALICE, progress.parse().unwrap()).cloned())
        .expect("the progress message");
    assert!(
        shown.text.starts_with("⚡ Auto:\n✓ Started downloading"),
        "{shown:?}"
    );
    assert!(shown.text.contains("\n✓ Subscribed to \""), "{shown:?}");
}
