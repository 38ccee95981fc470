//! Posters on the worker's replies (issue 24): search results, a release list and a
//! subscription's confirmation go as one photo whose caption is the reply, fetched by the
//! simulated Bot API from a loopback image host that serves TMDB's paths (MoviePilot's
//! `poster_path` is TMDB's `original`, over Telegram's 5 MB limit; oncebot sends `w500`). A text
//! too long for a caption goes as text alone; a refused poster goes as text, once, also across a
//! crash between the two; a result after a text "working on it" message goes as a new photo and
//! the progress message is deleted; an edit of a photo message changes its caption (or its
//! photo); `telegram.posters = false` sends text only.

use std::collections::BTreeMap;
use std::time::Duration;

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::moviepilot::SimMedia;
use oncebot_tools::sim::posters::PosterServer;
use oncebot_tools::sim::telegram::{Fault, StoredMessage, callback_update, descriptions};
use redis::AsyncCommands as _;
use serde_json::json;

use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, eventually};

const DUNE: u64 = 438631;

/// A rig whose MoviePilot's media and subscriptions carry posters on `posters`, at Telegram's
/// pace scaled down.
async fn rig(posters: &PosterServer, overrides: &[(&str, &str)]) -> Rig {
    rig_of(Dialect::V2, posters, overrides).await
}

/// The same with MoviePilot speaking `dialect`.
async fn rig_of(dialect: Dialect, posters: &PosterServer, overrides: &[(&str, &str)]) -> Rig {
    let mut env = vec![
        ("ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS", "10"),
        ("ONCEBOT__DISPATCHER__SET_COMMANDS", "false"),
    ];
    env.extend_from_slice(overrides);
    let rig = Rig::with(dialect, &env).await;
    rig.mp.set_poster_host(Some(&posters.host()));
    rig
}

/// Waits until job `id`'s reply is recorded sent; returns the job.
async fn reply_sent(rig: &Rig, id: u64) -> BTreeMap<String, String> {
    let store = &rig.store;
    eventually(
        &format!("job {id}'s reply sent"),
        RECOVERY_DEADLINE,
        || async move {
            let job = store.job(id).await;
            (job.get("reply_state").map(String::as_str) == Some("sent")).then_some(job)
        },
    )
    .await
}

/// Message `id` in Alice's chat as it stands.
fn message(rig: &Rig, id: i64) -> StoredMessage {
    rig.tg
        .received(ALICE)
        .into_iter()
        .find(|m| m.message_id == id)
        .unwrap_or_else(|| panic!("no message {id}"))
}

fn only(received: Vec<StoredMessage>) -> StoredMessage {
    assert_eq!(received.len(), 1, "exactly one message: {received:#?}");
    received.into_iter().next().unwrap()
}

fn calls(rig: &Rig, method: &str) -> Vec<Option<u16>> {
    rig.tg
        .calls()
        .iter()
        .filter(|c| c.method == method)
        .map(|c| c.status())
        .collect()
}

/// Job `id`'s reply as complete.lua queued it, read once the job succeeded and before any
/// dispatcher runs (a delivered entry leaves the stream).
async fn queued_reply(rig: &Rig, id: u64) -> BTreeMap<String, String> {
    rig.job_in(id, "succeeded", RECOVERY_DEADLINE).await;
    rig.replies_for(id)
        .await
        .into_iter()
        .find(|r| r["kind"] == "result")
        .unwrap_or_else(|| panic!("job {id} queued no result"))
}

/// A dispatcher of its own, started after the jobs' replies were looked at.
async fn dispatcher(rig: &Rig) -> crate::support::child::Oncebot {
    let bot = rig.start_roles(&["dispatcher"], None).await;
    bot.wait_for_stderr("dispatcher started", Duration::from_secs(10))
        .await;
    bot
}

#[tokio::test]
async fn search_results_and_a_subscription_carry_the_medias_poster_at_w500() {
    let posters = PosterServer::start().await.unwrap();
    let rig = rig(&posters, &[]).await;
    let _worker = rig.start(None).await;
    let w500 = |id: u64| format!("{}/t/p/w500/sim-{id}.jpg", posters.host());

    rig.send(1, "/search Dune").await;
    rig.send(2, "/subscribe tmdb:693134").await;
    let queued = queued_reply(&rig, 1).await;
    assert_eq!(
        queued["photo"],
        w500(DUNE),
        "complete.lua wrote it with the reply"
    );
    assert_eq!(queued_reply(&rig, 2).await["photo"], w500(693134));

    let _dispatcher = dispatcher(&rig).await;
    let job = reply_sent(&rig, 1).await;
    let list = message(&rig, job["reply_message_id"].parse().unwrap());
    assert_eq!(
        list.photo.as_deref(),
        Some(w500(DUNE).as_str()),
        "the first match's poster, TMDB's w500 for MoviePilot's original"
    );
    assert_eq!(list.text, queued["text"], "the reply is the caption");
    assert!(list.text.contains("Dune: Part Two"), "{}", list.text);
    assert!(
        list.reply_markup.is_some(),
        "the buttons are under the photo"
    );
    assert_eq!(job["reply_form"], "photo");
    assert_eq!(job["reply_message_id"], list.message_id.to_string());
    let subscribed = reply_sent(&rig, 2).await;
    assert!(
        rig.tg.sent().is_empty(),
        "no text message besides the photos"
    );
    assert_eq!(rig.tg.received(ALICE).len(), 2, "two replies, two messages");
    let confirmation = message(&rig, subscribed["reply_message_id"].parse().unwrap());
    assert_eq!(confirmation.photo.as_deref(), Some(w500(693134).as_str()));
    assert!(
        confirmation.text.contains("Dune: Part Two"),
        "{}",
        confirmation.text
    );

    let mut fetched = posters.requests();
    fetched.sort();
    assert_eq!(
        fetched,
        [
            "/t/p/w500/sim-438631.jpg".to_string(),
            "/t/p/w500/sim-693134.jpg".to_string()
        ],
        "Telegram fetched each poster once, never the original"
    );
}

#[tokio::test]
async fn a_reply_too_long_for_a_caption_goes_as_one_text_without_its_poster() {
    let posters = PosterServer::start().await.unwrap();
    let rig = rig(&posters, &[]).await;
    for i in 0..8u64 {
        let title = format!("Longtitle {i} {}", "of a very long series name ".repeat(6));
        rig.mp
            .add_media(SimMedia::movie(900_000 + i, &title, "2020"));
    }
    let _worker = rig.start(None).await;
    rig.send(1, "/search Longtitle").await;
    let queued = queued_reply(&rig, 1).await;
    assert!(
        queued.contains_key("photo"),
        "the worker offered the poster"
    );
    assert!(queued["text"].chars().count() > 1024);
    let _dispatcher = dispatcher(&rig).await;
    let job = reply_sent(&rig, 1).await;

    let message = only(rig.tg.received(ALICE));
    assert_eq!(message.photo, None, "text alone: {message:?}");
    assert_eq!(message.text, queued["text"]);
    assert!(message.reply_markup.is_some());
    assert_eq!(job["reply_form"], "text");
    assert!(calls(&rig, "sendPhoto").is_empty(), "no photo was tried");
    assert!(
        posters.requests().is_empty(),
        "the poster was never fetched"
    );
}

/// MoviePilot's poster host answers 404: Telegram refuses the photo (400, nothing sent), and
/// the reply goes as text at once, one message, its switch recorded in the delivery record.
#[tokio::test]
async fn a_refused_poster_is_sent_as_text_exactly_once() {
    let posters = PosterServer::start().await.unwrap();
    let rig = rig(&posters, &[]).await;
    rig.mp
        .set_poster_host(Some(&format!("{}/missing", posters.host())));
    let _bot = rig.start_pipeline().await;
    rig.send(1, "/search Dune").await;
    let job = reply_sent(&rig, 1).await;
    let message = only(rig.tg.received(ALICE));
    assert_eq!(message.photo, None);
    assert!(message.text.contains("Dune"), "{}", message.text);
    assert_eq!(calls(&rig, "sendPhoto"), [Some(400)]);
    assert_eq!(calls(&rig, "sendMessage"), [Some(200)]);
    assert_eq!(job["reply_form"], "text");
    assert_eq!(job["reply_attempts"], "1");
    let refusal = rig
        .tg
        .calls()
        .into_iter()
        .find(|c| c.method == "sendPhoto")
        .unwrap();
    assert!(
        format!("{:?}", refusal.outcome).contains(descriptions::PHOTO_URL_FAILED),
        "{:?}",
        refusal.outcome
    );
}

/// The crash the delivery record covers: the poster refused, the switch to text recorded, the
/// dispatcher SIGKILLed before the text went. After the restart the text goes, once, and the
/// refused poster is not tried (nor fetched) again.
#[tokio::test]
async fn a_crash_between_a_refused_poster_and_its_text_sends_one_message() {
    let posters = PosterServer::start().await.unwrap();
    let rig = rig(
        &posters,
        &[("ONCEBOT__DISPATCHER__RECLAIM_IDLE_MS", "1000")],
    )
    .await;
    rig.mp
        .set_poster_host(Some(&format!("{}/missing", posters.host())));
    let all = ["ingress", "worker", "dispatcher"];
    let mut bot = rig
        .start_roles(&all, Some("dispatch.before_text_fallback"))
        .await;
    rig.send(1, "/search Dune").await;
    bot.wait_for_stderr(
        "crash point dispatch.before_text_fallback reached",
        Duration::from_secs(10),
    )
    .await;
    bot.sigkill().await;
    assert!(
        rig.tg.received(ALICE).is_empty(),
        "nothing sent before the crash"
    );
    assert_eq!(calls(&rig, "sendPhoto"), [Some(400)]);

    let _bot = rig.start_roles(&all, None).await;
    let job = reply_sent(&rig, 1).await;
    let message = only(rig.tg.received(ALICE));
    assert_eq!(message.photo, None);
    assert_eq!(calls(&rig, "sendMessage"), [Some(200)], "the text, once");
    assert_eq!(
        calls(&rig, "sendPhoto"),
        [Some(400)],
        "the recorded form: the photo is not tried again"
    );
    assert_eq!(posters.requests().len(), 1, "the poster was fetched once");
    assert_eq!(job["reply_attempts"], "2", "a recovered send");
    assert_eq!(job["reply_form"], "text");
    assert_eq!(job["attempts"], "1", "the search ran once");
}

/// A resource search says "working on it" (text) at once; its list comes with the media's
/// poster, as a new photo, and the progress message is deleted: one message stays.
#[tokio::test]
async fn a_release_list_after_its_progress_message_replaces_it_with_a_photo() {
    for dialect in [Dialect::V2, Dialect::V3] {
        release_list_replaces_its_progress_message(dialect).await;
    }
}

async fn release_list_replaces_its_progress_message(dialect: Dialect) {
    let posters = PosterServer::start().await.unwrap();
    let rig = rig_of(dialect, &posters, &[]).await;
    rig.mp.set_search_delay(Duration::from_millis(500));
    let _bot = rig.start_pipeline().await;
    rig.send(1, &format!("/download tmdb:{DUNE}")).await;
    let job = reply_sent(&rig, 1).await;

    let progress: i64 = job["progress_message_id"].parse().unwrap();
    let progress_text = rig
        .tg
        .sent()
        .into_iter()
        .find(|m| m.message_id == progress)
        .expect("the progress message was sent as text")
        .text;
    assert!(
        progress_text.starts_with("Searching the sites"),
        "{progress_text}"
    );
    let message = only(rig.tg.received(ALICE));
    assert_ne!(message.message_id, progress);
    assert_eq!(
        message.photo,
        Some(format!("{}/t/p/w500/sim-{DUNE}.jpg", posters.host())),
        "the list's header media's poster, from the search's media_info"
    );
    assert!(message.text.contains("【PTSiteA】"), "{}", message.text);
    assert!(message.reply_markup.is_some(), "its Download buttons");
    assert_eq!(rig.tg.deleted(), [(ALICE, progress)], "{dialect:?}");
    assert!(calls(&rig, "editMessageText").is_empty());
    assert_eq!(job["reply_message_id"], message.message_id.to_string());
}

/// Telegram may refuse to delete the progress message (a bot cannot delete a message older than
/// 48 hours): it is left, and the result with its poster is delivered and recorded all the same.
#[tokio::test]
async fn a_progress_message_telegram_will_not_delete_is_left_and_the_result_still_arrives() {
    let posters = PosterServer::start().await.unwrap();
    let rig = rig(&posters, &[]).await;
    rig.mp.set_search_delay(Duration::from_millis(500));
    rig.tg.fail_next(
        "deleteMessage",
        Fault::BadRequest("Bad Request: message can't be deleted for everyone".into()),
    );
    let bot = rig.start_pipeline().await;
    rig.send(1, &format!("/download tmdb:{DUNE}")).await;
    let job = reply_sent(&rig, 1).await;
    let progress: i64 = job["progress_message_id"].parse().unwrap();
    let received = rig.tg.received(ALICE);
    assert_eq!(received.len(), 2, "{received:#?}");
    assert!(received[0].message_id == progress && received[0].photo.is_none());
    assert!(received[1].photo.is_some(), "the list with its poster");
    assert_eq!(job["reply_message_id"], received[1].message_id.to_string());
    assert_eq!(job["reply_attempts"], "1", "delivered once, not retried");
    assert_eq!(calls(&rig, "deleteMessage"), [Some(400)], "tried once");
    assert!(
        bot.stderr()
            .contains("could not delete the \"working on it\" message")
    );
}

/// Queues an entry that edits `message_id` (as a page turn does), with `job` when given.
async fn queue_edit(rig: &Rig, message_id: i64, job: Option<u64>, text: &str, photo: &str) {
    let mut conn = rig.store.conn().await;
    let _: String = conn
        .xadd(
            rig.store.keys.replies_stream(),
            "*",
            &[
                ("chat_id", ALICE.to_string()),
                ("reply_to", String::new()),
                ("kind", "result".into()),
                ("job_id", job.map(|j| j.to_string()).unwrap_or_default()),
                ("text", text.into()),
                ("edit_message_id", message_id.to_string()),
                ("photo", photo.into()),
                ("created_at", "0".into()),
            ],
        )
        .await
        .unwrap();
}

/// A photo message stays editable: a tap clears its buttons (editMessageReplyMarkup), an edit
/// of the job's reply changes its caption (the recorded form), an edit that does not know the
/// form learns it from Telegram's "there is no text in the message to edit", and an edit with
/// a new poster changes the photo (editMessageMedia). Never editMessageText that sticks.
#[tokio::test]
async fn a_photo_message_is_edited_with_the_methods_for_a_photo() {
    let posters = PosterServer::start().await.unwrap();
    let rig = rig(&posters, &[]).await;
    let _bot = rig.start_pipeline().await;
    rig.send(1, "/search Dune").await;
    reply_sent(&rig, 1).await;
    let list = only(rig.tg.received(ALICE));
    assert!(list.photo.is_some());

    // A Subscribe tap: its buttons go.
    let markup = list.reply_markup.clone().expect("buttons under the photo");
    let data = markup["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_string();
    let mut tap = callback_update(ALICE, ALICE, list.message_id, &data);
    tap["update_id"] = json!(2);
    rig.post(&tap).await;
    eventually("the buttons cleared", RECOVERY_DEADLINE, || async {
        message(&rig, list.message_id)
            .reply_markup
            .is_none()
            .then_some(())
    })
    .await;
    assert_eq!(calls(&rig, "editMessageReplyMarkup"), [Some(200)]);

    // The job's reply edited: its form is known, the caption changes at once.
    queue_edit(&rig, list.message_id, Some(1), "page 2 of the matches", "").await;
    eventually("the caption edited", RECOVERY_DEADLINE, || async {
        (message(&rig, list.message_id).text == "page 2 of the matches").then_some(())
    })
    .await;
    assert_eq!(calls(&rig, "editMessageCaption"), [Some(200)]);
    assert!(calls(&rig, "editMessageText").is_empty());

    // No job: Telegram's answer tells the form.
    queue_edit(&rig, list.message_id, None, "page 3", "").await;
    eventually("the caption edited again", RECOVERY_DEADLINE, || async {
        (message(&rig, list.message_id).text == "page 3").then_some(())
    })
    .await;
    assert_eq!(calls(&rig, "editMessageText"), [Some(400)]);
    assert_eq!(calls(&rig, "editMessageCaption"), [Some(200), Some(200)]);
    let refused = rig
        .tg
        .calls()
        .into_iter()
        .find(|c| c.method == "editMessageText")
        .unwrap();
    assert!(format!("{:?}", refused.outcome).contains(descriptions::NO_TEXT_TO_EDIT));

    // A new poster: the photo changes with its caption.
    let other = posters.poster("dune-part-two");
    queue_edit(&rig, list.message_id, Some(1), "page 4", &other).await;
    eventually("the photo replaced", RECOVERY_DEADLINE, || async {
        let m = message(&rig, list.message_id);
        (m.photo.as_deref() == Some(other.as_str()) && m.text == "page 4").then_some(())
    })
    .await;
    assert_eq!(calls(&rig, "editMessageMedia"), [Some(200)]);
    // The list and the tapped subscription's confirmation: no message more.
    assert_eq!(
        rig.tg.received(ALICE).len(),
        2,
        "{:#?}",
        rig.tg.received(ALICE)
    );
}

/// `telegram.posters = false`: every reply is text, the relay's notifications too, and no
/// poster is fetched.
#[tokio::test]
async fn posters_off_sends_text_only() {
    let posters = PosterServer::start().await.unwrap();
    let rig = rig(&posters, &[("ONCEBOT__TELEGRAM__POSTERS", "false")]).await;
    let _worker = rig.start(None).await;
    rig.send(1, "/search Dune").await;
    assert!(
        queued_reply(&rig, 1).await.contains_key("photo"),
        "the worker still names the poster; the dispatcher leaves it out"
    );
    let _dispatcher = dispatcher(&rig).await;
    let job = reply_sent(&rig, 1).await;
    let message = only(rig.tg.received(ALICE));
    assert_eq!(message.photo, None);
    assert_eq!(job["reply_form"], "text");

    // A relayed notification with a poster, as notify.lua queues one.
    let mut conn = rig.store.conn().await;
    let _: String = conn
        .xadd(
            rig.store.keys.replies_stream(),
            "*",
            &[
                ("chat_id", ALICE.to_string()),
                ("reply_to", String::new()),
                ("kind", "notification".into()),
                ("job_id", String::new()),
                ("text", "入库完成 沙丘".into()),
                ("photo", posters.poster("dune")),
                ("created_at", "0".into()),
            ],
        )
        .await
        .unwrap();
    eventually("the notification delivered", RECOVERY_DEADLINE, || async {
        (rig.tg.received(ALICE).len() == 2).then_some(())
    })
    .await;
    assert!(rig.tg.received(ALICE).iter().all(|m| m.photo.is_none()));
    assert!(calls(&rig, "sendPhoto").is_empty());
    assert!(posters.requests().is_empty());
}

/// A release list that went as a photo pages by its caption: the page turn's entry names the
/// list's job, whose recorded form says photo, so the turn is one editMessageCaption and never
/// a refused editMessageText first.
#[tokio::test]
async fn a_release_list_sent_as_a_photo_pages_by_its_caption() {
    let posters = PosterServer::start().await.unwrap();
    let rig = rig(&posters, &[]).await;
    rig.mp.add_releases((1..=4).map(|n| {
        oncebot_tools::sim::moviepilot::SimRelease::movie(
            DUNE,
            &format!("PTSite{n}"),
            &format!("Dune 2021 Pack {n:02} 1080p"),
            "",
        )
    }));
    let _bot = rig.start_pipeline().await;
    rig.send(1, &format!("/download tmdb:{DUNE}")).await;
    let job = reply_sent(&rig, 1).await;
    let list = message(&rig, job["reply_message_id"].parse().unwrap());
    assert!(list.photo.is_some(), "the list went with its poster");
    assert_eq!(job["reply_form"], "photo");
    let next = list
        .reply_markup
        .as_ref()
        .and_then(|k| k["inline_keyboard"].as_array())
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .find(|b| b["text"] == "▶")
        .and_then(|b| b["callback_data"].as_str().map(str::to_string))
        .expect("seven releases make two pages");
    let mut update = callback_update(ALICE, ALICE, list.message_id, &next);
    update["update_id"] = json!(9001);
    rig.tg.push_update(update.clone());
    rig.post(&update).await;
    rig.tg
        .wait_for(RECOVERY_DEADLINE, |o| {
            o.message(ALICE, list.message_id)
                .is_some_and(|m| m.text.lines().any(|l| l.starts_with("6. ")))
        })
        .await
        .expect("page 2 shown in the caption");
    assert_eq!(calls(&rig, "editMessageCaption"), [Some(200)]);
    assert!(
        calls(&rig, "editMessageText").is_empty(),
        "no edit of a text the photo does not have"
    );
    assert!(message(&rig, list.message_id).photo.is_some());
}
