//! Follow it to the library (issue 45): a download's or subscription's reply is its live card,
//! edited in place as MoviePilot's data moves, then one short notice. Ingress, worker and
//! dispatcher run as a real process against the MoviePilot and Bot API simulators; the counts
//! are taken at the Bot API.

use std::collections::BTreeMap;
use std::time::Duration;

use oncebot::moviepilot::{Dialect, MediaKind};
use oncebot_tools::sim::moviepilot::{SimFiled, SimMedia};
use oncebot_tools::sim::telegram::callback_update;
use redis::AsyncCommands as _;
use serde_json::json;

use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, eventually};

const DUNE: u64 = 438631;
const WAIT: Duration = Duration::from_secs(20);

/// A rig whose follower polls every second.
async fn rig(dialect: Dialect, extra: &[(&str, &str)]) -> Rig {
    let mut env = vec![
        ("ONCEBOT__FOLLOW__PROGRESS_POLL_SECS", "1"),
        ("ONCEBOT__MOVIEPILOT__DOWNLOAD_SETTLE_SECS", "2"),
    ];
    env.extend_from_slice(extra);
    Rig::with(dialect, &env).await
}

/// Card `id` as stored.
async fn card(rig: &Rig, id: u64) -> BTreeMap<String, String> {
    let mut conn = rig.store.conn().await;
    conn.hgetall(rig.store.keys.card(id)).await.unwrap()
}

/// Waits until card `id` has `field` = `value`; returns the card.
async fn card_with(rig: &Rig, id: u64, field: &str, value: &str) -> BTreeMap<String, String> {
    eventually(
        &format!("card {id}'s {field} to be {value:?}"),
        WAIT,
        || async move {
            let c = card(rig, id).await;
            (c.get(field).map(String::as_str) == Some(value)).then_some(c)
        },
    )
    .await
}

/// The text of message `message_id` in Alice's chat as it stands, once it contains `needle`.
async fn shows(rig: &Rig, message_id: i64, needle: &str) -> String {
    let found = rig
        .tg
        .wait_for(WAIT, |o| {
            o.message(ALICE, message_id)
                .is_some_and(|m| m.text.contains(needle))
        })
        .await;
    let text = rig
        .tg
        .observe(|o| o.message(ALICE, message_id).map(|m| m.text.clone()));
    assert!(
        found.is_ok(),
        "message {message_id} never showed {needle:?}: {text:?}"
    );
    text.unwrap_or_default()
}

/// Edits of message `message_id` at the Bot API.
fn edits_of(rig: &Rig, message_id: i64) -> Vec<String> {
    rig.tg.observe(|o| {
        o.calls()
            .iter()
            .filter(|c| c.method.starts_with("editMessage"))
            .filter(|c| c.params["message_id"] == json!(message_id))
            .map(|c| c.params["text"].as_str().unwrap_or("").to_string())
            .collect()
    })
}

/// `/download tmdb:DUNE`, then `Download 1` tapped: the download job's id and its card's
/// message id, once the card knows it.
async fn download_dune(rig: &Rig) -> (u64, i64, String) {
    rig.send(1, &format!("/download tmdb:{DUNE}")).await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    // The list replaces the "searching" message in place.
    let list = eventually("the list shown", WAIT, || async {
        rig.tg
            .received(ALICE)
            .into_iter()
            .find(|m| m.text.contains("PTSiteA") && m.reply_markup.is_some())
    })
    .await;
    let markup = list.reply_markup.clone().unwrap();
    let data = markup["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .find(|b| b["text"] == "Download 1")
        .and_then(|b| b["callback_data"].as_str().map(str::to_string))
        .expect("a Download 1 button");
    let mut tap = callback_update(ALICE, ALICE, list.message_id, &data);
    tap["update_id"] = json!(2);
    rig.post(&tap).await;
    let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    let hash = job["mp_download_hash"].clone();
    let c = eventually("the card to know its message", WAIT, || async {
        let c = card(rig, 2).await;
        c.contains_key("message_id").then_some(c)
    })
    .await;
    (2, c["message_id"].parse().unwrap(), hash)
}

#[tokio::test]
async fn one_message_is_edited_through_every_state_of_a_download_then_one_notice() {
    for dialect in [Dialect::V2, Dialect::V3] {
        one_download_card(dialect).await;
    }
}

async fn one_download_card(dialect: Dialect) {
    let rig = rig(dialect, &[]).await;
    let _bot = rig.start_pipeline().await;
    let (id, message, hash) = download_dune(&rig).await;
    let sends_before = rig.tg.count("sendMessage");
    assert_eq!(card(&rig, id).await["kind"], "download");
    assert_eq!(card(&rig, id).await["hash"], hash);

    // Listed at 0 %: the card's first edit, a new state.
    let text = shows(&rig, message, "Downloading 0%").await;
    assert!(text.starts_with("\"Dune (2021)\""), "{text}");
    assert_eq!(edits_of(&rig, message).len(), 1);

    // 37 %: seen (kept in the card), but a progress edit waits a minute after the last.
    rig.mp.set_download_progress(&hash, 37.0);
    card_with(&rig, id, "percent", "37").await;
    assert_eq!(edits_of(&rig, message).len(), 1, "progress is paced");

    // Gone from the list: downloaded, waiting to be filed.
    rig.mp.finish_download(&hash);
    shows(&rig, message, "Downloaded, waiting to be filed").await;

    // Its transfer row: in the library, where MoviePilot filed it; then one notice.
    rig.mp.file_transfer(
        "/downloads/Dune.2021.2160p.mkv",
        "/media/movies/Dune (2021)/Dune (2021).mkv",
        "Dune",
        SimFiled {
            download_hash: Some(hash.clone()),
            tmdb_id: Some(DUNE),
            kind: Some(MediaKind::Movie),
            succeeded: true,
            ..SimFiled::default()
        },
    );
    let text = shows(&rig, message, "In the library ✓").await;
    assert!(
        text.contains("/media/movies/Dune (2021)/Dune (2021).mkv"),
        "{text}"
    );
    let closed = card_with(&rig, id, "state", "in_library").await;
    assert!(closed.contains_key("closed_at"));
    rig.tg
        .wait_for_calls("sendMessage", sends_before + 1, WAIT)
        .await
        .unwrap();
    let notice = rig.tg.sent().last().cloned().unwrap();
    assert!(notice.text.contains("In the library ✓"), "{notice:?}");
    let notice_call = rig.tg.observe(|o| {
        o.calls()
            .iter()
            .rev()
            .find(|c| c.method == "sendMessage")
            .map(|c| c.params.clone())
    });
    let params = notice_call.unwrap();
    let replied = params["reply_parameters"]["message_id"]
        .as_i64()
        .or_else(|| params["reply_to_message_id"].as_i64());
    assert_eq!(
        replied,
        Some(message),
        "the notice answers the card: {params}"
    );

    // Exactly: one message for the job, three edits, one notice; nothing after the end.
    let edits = edits_of(&rig, message);
    assert_eq!(edits.len(), 3, "{edits:#?}");
    let mut open: Vec<u64> = {
        let mut conn = rig.store.conn().await;
        conn.zrange(rig.store.keys.cards_open(), 0, -1)
            .await
            .unwrap()
    };
    open.sort();
    assert!(open.is_empty(), "{open:?}");
    assert_eq!(rig.tg.count("sendMessage"), sends_before + 1);
    let changed = rig
        .metric("oncebot_card_steps_total{outcome=\"changed\"}")
        .await;
    assert_eq!(changed.as_deref(), Some("3"), "{dialect:?}");
}

#[tokio::test]
async fn a_card_whose_message_was_deleted_stops_and_its_notice_still_comes() {
    let rig = rig(Dialect::V2, &[]).await;
    let _bot = rig.start_pipeline().await;
    let (id, message, hash) = download_dune(&rig).await;
    shows(&rig, message, "Downloading 0%").await;
    assert!(rig.tg.user_deletes(ALICE, message));
    rig.mp.finish_download(&hash);
    card_with(&rig, id, "gone", "1").await;
    let sends_before = rig.tg.count("sendMessage");
    rig.mp.file_transfer(
        "/downloads/Dune.mkv",
        "",
        "Dune",
        SimFiled {
            download_hash: Some(hash.clone()),
            succeeded: false,
            errmsg: Some("未识别到媒体信息".into()),
            ..SimFiled::default()
        },
    );
    card_with(&rig, id, "state", "transfer_failed").await;
    rig.tg
        .wait_for_calls("sendMessage", sends_before + 1, WAIT)
        .await
        .unwrap();
    let notice = rig.tg.sent().last().cloned().unwrap();
    assert!(
        notice.text.contains("Filing failed: 未识别到媒体信息"),
        "{notice:?}"
    );
    // One edit refused (the deleted message), none tried after it.
    let failed_edits = rig.tg.observe(|o| {
        o.calls()
            .iter()
            .filter(|c| c.method.starts_with("editMessage"))
            .filter(|c| c.params["message_id"] == json!(message))
            .filter(|c| c.status() == Some(400))
            .count()
    });
    assert_eq!(failed_edits, 1);
    assert_eq!(
        rig.tg.count("sendMessage"),
        sends_before + 1,
        "no card sent in its place"
    );
}

/// A series subscribed: the card says what is missing, what came and what was filed, and the
/// end: completed (a subscription-history row) or cancelled (none). The media has no year, so
/// MoviePilot's titles start with no `title_year` and the relay's guess would match nothing.
#[tokio::test]
async fn a_subscription_card_follows_episodes_to_completion_and_a_deleted_one_is_cancelled() {
    let rig = rig(Dialect::V2, &[]).await;
    rig.mp
        .add_media(SimMedia::tv(900_001, "测试剧01", "", &[(1, 8)]));
    rig.mp
        .add_media(SimMedia::tv(900_002, "测试剧02", "", &[(1, 6)]));
    let _bot = rig.start_pipeline().await;
    rig.send(1, "/subscribe tmdb:900001 S1").await;
    let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let sub: u64 = job["mp_subscription_id"].parse().unwrap();
    let c = eventually("the card's message", WAIT, || async {
        let c = card(&rig, 1).await;
        c.contains_key("message_id").then_some(c)
    })
    .await;
    let message: i64 = c["message_id"].parse().unwrap();
    assert_eq!(c["kind"], "subscription");
    shows(&rig, message, "Subscribed (8 missing)").await;

    rig.mp.set_subscription_progress(sub, 6, &[5, 6]);
    shows(&rig, message, "Downloaded E05–E06").await;
    for e in [5, 6] {
        rig.mp.file_transfer(
            &format!("/downloads/测试剧01.S01E0{e}.mkv"),
            &format!("/media/tv/测试剧01/Season 1/测试剧01 - S01E0{e}.mkv"),
            "测试剧01",
            SimFiled {
                tmdb_id: Some(900_001),
                kind: Some(MediaKind::Tv),
                seasons: Some("S01".into()),
                episodes: Some(format!("E0{e}")),
                succeeded: true,
                ..SimFiled::default()
            },
        );
    }
    shows(&rig, message, "Filed E05–E06").await;
    let sends_before = rig.tg.count("sendMessage");
    assert!(rig.mp.complete_subscription(sub));
    shows(&rig, message, "Subscription complete ✓ (filed E05–E06)").await;
    card_with(&rig, 1, "state", "completed").await;
    rig.tg
        .wait_for_calls("sendMessage", sends_before + 1, WAIT)
        .await
        .unwrap();

    // Another one, deleted in MoviePilot: cancelled, and no notice.
    rig.send(2, "/subscribe tmdb:900002 S1").await;
    let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    let sub: u64 = job["mp_subscription_id"].parse().unwrap();
    let c = eventually("the second card's message", WAIT, || async {
        let c = card(&rig, 2).await;
        c.contains_key("message_id").then_some(c)
    })
    .await;
    let message: i64 = c["message_id"].parse().unwrap();
    shows(&rig, message, "Subscribed (6 missing)").await;
    let sends = rig.tg.count("sendMessage");
    rig.mp.delete_subscription(sub);
    shows(&rig, message, "Cancelled").await;
    card_with(&rig, 2, "state", "cancelled").await;
    assert_eq!(
        rig.tg.count("sendMessage"),
        sends,
        "a cancelled card sends no notice"
    );
}

/// The rank of a download card's text: the order its states come in.
fn download_rank(text: &str) -> usize {
    ["Downloading", "Downloaded", "In the library"]
        .iter()
        .position(|s| text.contains(s))
        .unwrap_or_else(|| panic!("not a download card's state: {text}"))
}

/// SIGKILL of the process following the cards right after it recorded a step: the restarted one
/// goes on from the card's stored state. No state is lost or shown out of order (the edit queued
/// before the kill is sent, or dropped once a newer state exists), and the notice comes once.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_kill_between_two_states_loses_none_and_shows_none_out_of_order() {
    let rig = rig(Dialect::V2, &[]).await;
    let mut bot = rig
        .start_roles(
            &["ingress", "worker", "dispatcher"],
            Some("follow.after_step"),
        )
        .await;
    let (id, message, hash) = download_dune(&rig).await;
    bot.wait_for_stderr("crash point follow.after_step reached", WAIT)
        .await;
    bot.sigkill().await;
    let at_kill = card(&rig, id).await;
    assert_eq!(at_kill["state"], "downloading", "{at_kill:?}");
    rig.mp.finish_download(&hash);

    // The edit queued before the kill may be dropped unsent now: the card moved on, and an
    // older state is never sent over a newer one.
    let _bot = rig.start_pipeline().await;
    shows(&rig, message, "Downloaded, waiting to be filed").await;
    let sends_before = rig.tg.count("sendMessage");
    rig.mp.file_transfer(
        "/downloads/Dune.mkv",
        "/media/movies/Dune (2021)/Dune (2021).mkv",
        "Dune",
        SimFiled {
            download_hash: Some(hash.clone()),
            succeeded: true,
            ..SimFiled::default()
        },
    );
    shows(&rig, message, "In the library ✓").await;
    rig.tg
        .wait_for_calls("sendMessage", sends_before + 1, WAIT)
        .await
        .unwrap();
    let edits = edits_of(&rig, message);
    let ranks: Vec<usize> = edits.iter().map(|t| download_rank(t)).collect();
    assert!(
        ranks.windows(2).all(|w| w[0] <= w[1]),
        "out of order: {edits:#?}"
    );
    assert!((2..=4).contains(&edits.len()), "{edits:#?}");
    assert!(edits.last().unwrap().contains("In the library"));
    let notices = rig
        .tg
        .sent()
        .iter()
        .filter(|m| m.text.contains("In the library"))
        .count();
    assert_eq!(notices, 1);
}

/// MoviePilot answering a poll with garbage, an error or too late stops no card: it keeps its
/// state and says nothing wrong, then moves on once MoviePilot answers.
#[tokio::test]
async fn a_poll_answered_with_garbage_or_an_error_keeps_the_card_as_it_was() {
    use oncebot_tools::sim::moviepilot::{Fault, routes};
    let rig = rig(Dialect::V2, &[]).await;
    let _bot = rig.start_pipeline().await;
    let (id, message, hash) = download_dune(&rig).await;
    shows(&rig, message, "Downloading 0%").await;
    let edits = edits_of(&rig, message).len();
    rig.mp.finish_download(&hash);
    let lists = rig.mp.calls(routes::DOWNLOADS);
    rig.mp.fail_next(
        routes::DOWNLOADS,
        Fault::Status(200, "<html>502 Bad Gateway</html>".into()),
    );
    rig.mp.fail_next(
        routes::DOWNLOADS,
        Fault::Status(500, r#"{"detail":"Internal Server Error"}"#.into()),
    );
    // A third: the poll after the two checked below is faulty too, so nothing moves meanwhile.
    rig.mp
        .fail_next(routes::DOWNLOADS, Fault::Status(502, "Bad Gateway".into()));
    rig.mp
        .fail_next(routes::TRANSFER_HISTORY, Fault::Status(200, "[".into()));
    eventually("two faulty polls", WAIT, || async {
        (rig.mp.calls(routes::DOWNLOADS) >= lists + 2).then_some(())
    })
    .await;
    assert_eq!(card(&rig, id).await["state"], "downloading");
    assert_eq!(
        edits_of(&rig, message).len(),
        edits,
        "nothing shown for a bad poll"
    );
    shows(&rig, message, "Downloaded, waiting to be filed").await;
}
