//! Issue 45, item 5: forum topics, through a real oncebot, the fake Bot API (a forum supergroup
//! with topics, a plain supergroup with a reply thread) and a private Redis. A command in topic
//! 7 is answered in topic 7 and so is the job its button makes; a reply in a plain supergroup,
//! which carries a `message_thread_id` that is no topic, is answered without a thread; a topic
//! Telegram refuses (closed, deleted) gets the reply in General, once, and the reply is sent.

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::telegram::{Outcome, StoredMessage, descriptions};
use serde_json::{Value, json};

use crate::grants::button;
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, GROUP, eventually, group_text, tapped};

/// A plain supergroup (no topics).
const PLAIN: i64 = -1009876543210;

/// `text` from Alice in `chat`, in `thread`: a topic message when `topic`, else a reply in a
/// plain supergroup (Telegram gives it the replied-to message's id as `message_thread_id`).
fn threaded(update_id: i64, chat: i64, thread: i64, topic: bool, text: &str) -> Value {
    let mut update = group_text(update_id, ALICE, text);
    update["message"]["chat"]["id"] = json!(chat);
    update["message"]["message_thread_id"] = json!(thread);
    if topic {
        update["message"]["is_topic_message"] = json!(true);
        update["message"]["chat"]["is_forum"] = json!(true);
    } else {
        update["message"]["reply_to_message"] = json!({"message_id": thread, "date": 1_767_225_600, "chat": {"id": chat, "type": "supergroup"}});
    }
    update
}

/// The first message to `chat` with buttons, once there is one.
async fn with_buttons(rig: &Rig, chat: i64) -> StoredMessage {
    eventually(
        &format!("a message to {chat} with buttons"),
        RECOVERY_DEADLINE,
        || {
            let found = rig
                .tg
                .received(chat)
                .into_iter()
                .find(|m| m.reply_markup.is_some());
            async move { found }
        },
    )
    .await
}

/// Every sendMessage / sendPhoto to `chat` that Telegram took, with its `message_thread_id`.
fn sends_to(rig: &Rig, chat: i64) -> Vec<Option<i64>> {
    rig.tg
        .calls()
        .iter()
        .filter(|c| c.method == "sendMessage" || c.method == "sendPhoto")
        .filter(|c| c.params["chat_id"].as_i64() == Some(chat) && c.status() == Some(200))
        .map(|c| c.params["message_thread_id"].as_i64())
        .collect()
}

/// Sends to `chat` Telegram refused with `description`.
fn refused(rig: &Rig, chat: i64, description: &str) -> usize {
    rig.tg
        .calls()
        .iter()
        .filter(|c| c.params["chat_id"].as_i64() == Some(chat) && c.status() == Some(400))
        .filter(|c| match &c.outcome {
            Outcome::Answered { body: Some(b), .. } => b.to_string().contains(description),
            _ => false,
        })
        .count()
}

#[tokio::test]
async fn a_command_in_topic_7_is_answered_in_topic_7_and_so_is_its_buttons_job() {
    let rig = Rig::with(Dialect::V2, &[]).await;
    rig.tg.forum_topic(GROUP, 7);
    let _bot = rig.start_pipeline().await;

    rig.post(&threaded(1, GROUP, 7, true, "/search Dune")).await;
    let results = with_buttons(&rig, GROUP).await;
    assert_eq!(
        rig.tg.observe(|o| o.thread_of(GROUP, results.message_id)),
        Some(7),
        "the results are in the topic"
    );
    // A button under them: its job's answer stays in the topic too.
    let data = button(&results, "");
    let mut tap = oncebot_tools::sim::telegram::topic_callback_update(
        GROUP,
        ALICE,
        results.message_id,
        7,
        &data,
    );
    tap["update_id"] = json!(2);
    tapped(&rig, tap).await;
    eventually("the tap's job answered", RECOVERY_DEADLINE, || {
        let n = sends_to(&rig, GROUP).len();
        async move { (n >= 2).then_some(()) }
    })
    .await;
    let sends = sends_to(&rig, GROUP);
    assert!(sends.iter().all(|t| *t == Some(7)), "{sends:?}");
    assert_eq!(refused(&rig, GROUP, "thread"), 0);
}

#[tokio::test]
async fn a_reply_in_a_plain_supergroup_is_answered_without_a_thread() {
    let rig = Rig::with(Dialect::V2, &[]).await;
    let _bot = rig.start_pipeline().await;

    rig.post(&threaded(1, PLAIN, 3, false, "/search Dune"))
        .await;
    with_buttons(&rig, PLAIN).await;
    let sends = sends_to(&rig, PLAIN);
    assert!(
        !sends.is_empty() && sends.iter().all(Option::is_none),
        "{sends:?}"
    );
    assert_eq!(refused(&rig, PLAIN, "thread"), 0, "nothing was echoed");
}

/// A topic closed (or deleted) after the command: the answer goes once more, to General,
/// without the thread and the reply reference, and is recorded as sent.
#[tokio::test]
async fn a_refused_topic_gets_its_answer_in_general_once() {
    let rig = Rig::with(Dialect::V2, &[]).await;
    rig.tg.forum_topic(GROUP, 9);
    rig.tg.close_topic(GROUP, 9);
    rig.tg.forum_topic(PLAIN, 4);
    rig.tg.delete_topic(PLAIN, 4);
    let _bot = rig.start_pipeline().await;

    rig.post(&threaded(1, GROUP, 9, true, "/search Dune")).await;
    rig.post(&threaded(2, PLAIN, 4, true, "/search Dune")).await;
    let closed = with_buttons(&rig, GROUP).await;
    let deleted = with_buttons(&rig, PLAIN).await;
    for (chat, message, why) in [
        (GROUP, &closed, descriptions::TOPIC_CLOSED),
        (PLAIN, &deleted, descriptions::THREAD_NOT_FOUND),
    ] {
        assert_eq!(
            rig.tg.observe(|o| o.thread_of(chat, message.message_id)),
            None
        );
        assert!(refused(&rig, chat, why) >= 1, "{why}");
        let resent = rig
            .tg
            .calls()
            .into_iter()
            .filter(|c| c.params["chat_id"].as_i64() == Some(chat) && c.status() == Some(200))
            .filter(|c| c.method == "sendMessage" || c.method == "sendPhoto")
            .collect::<Vec<_>>();
        assert!(
            resent
                .iter()
                .all(|c| c.params.get("reply_parameters").is_none()
                    && c.params.get("message_thread_id").is_none()),
            "sent again without the thread and the reply reference"
        );
    }
    assert_eq!(
        rig.metric("oncebot_replies_total{result=\"failed\"}").await,
        None,
        "a refused topic is no failure"
    );
    let thread_refused = rig
        .metric("oncebot_replies_total{result=\"thread_refused\"}")
        .await;
    assert_eq!(thread_refused.as_deref(), Some("2"), "once per reply");
}
