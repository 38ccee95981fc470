//! Notifications with posters, as the dispatcher delivers them (issue 21): entries queued with
//! `queue_reply` (lua/include/common.lua, the relay's writer) with a `photo` go as one
//! `sendPhoto` that the simulated Bot API fetches from a loopback image host; a poster Telegram
//! refuses goes as text at once, a text too long for a caption goes as text alone, and a send
//! with no answer or a 429 is retried as the photo. Each notification reaches its chat as
//! exactly one message, with one delivery record.

use std::collections::BTreeMap;
use std::time::Duration;

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::posters::PosterServer;
use oncebot_tools::sim::telegram::{Fault, Outcome, StoredMessage, descriptions};
use redis::AsyncCommands as _;

use crate::support::child::Oncebot;
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, Store, eventually};

const COMMON_LUA: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/lua/include/common.lua"
));

/// Queues a notification the way the relay does: `queue_reply` itself, run by Redis.
async fn queue_notification(store: &Store, chat: i64, text: &str, photo: Option<&str>) -> String {
    let script = redis::Script::new(&format!(
        "{COMMON_LUA}\nensure_group(KEYS[1], ARGV[5])\n\
         return queue_reply(KEYS[1], {{chat_id = ARGV[1], kind = 'notification', \
         text = ARGV[2], photo = ARGV[3], now = ARGV[4]}})"
    ));
    let mut conn = store.conn().await;
    script
        .key(store.keys.replies_stream())
        .arg(chat)
        .arg(text)
        .arg(photo.unwrap_or(""))
        .arg("1764547200000")
        .arg(oncebot::ledger::keys::Stream::Replies.group())
        .invoke_async(&mut conn)
        .await
        .unwrap()
}

/// A dispatcher (with the ingress that answers /readyz) at Telegram's pace scaled down.
async fn dispatcher(rig: &Rig) -> Oncebot {
    let bot = rig.start_roles(&["ingress", "dispatcher"], None).await;
    bot.wait_for_stderr("dispatcher started", Duration::from_secs(10))
        .await;
    bot
}

async fn rig() -> Rig {
    Rig::with(
        Dialect::V2,
        &[
            ("ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS", "10"),
            ("ONCEBOT__DISPATCHER__SET_COMMANDS", "false"),
            ("ONCEBOT__DISPATCHER__RETRY_MIN_DELAY_MS", "50"),
            ("ONCEBOT__DISPATCHER__RETRY_MAX_DELAY_MS", "200"),
        ],
    )
    .await
}

/// Waits until the entry's delivery record says how it ended; returns it.
async fn settled(store: &Store, entry: &str) -> BTreeMap<String, String> {
    let key = store.keys.reply(entry);
    eventually(
        "the notification's delivery record",
        RECOVERY_DEADLINE,
        || {
            let key = key.clone();
            async move {
                let mut conn = store.conn().await;
                let record: BTreeMap<String, String> = conn.hgetall(&key).await.unwrap();
                matches!(
                    record.get("state").map(String::as_str),
                    Some("sent" | "failed")
                )
                .then_some(record)
            }
        },
    )
    .await
}

fn statuses(rig: &Rig, method: &str) -> Vec<Option<u16>> {
    rig.tg
        .calls()
        .iter()
        .filter(|c| c.method == method)
        .map(|c| c.status())
        .collect()
}

fn only(received: Vec<StoredMessage>) -> StoredMessage {
    assert_eq!(received.len(), 1, "exactly one message: {received:#?}");
    received.into_iter().next().unwrap()
}

#[tokio::test]
async fn a_notification_with_a_poster_arrives_as_one_photo_with_its_caption() {
    let rig = rig().await;
    let posters = PosterServer::start().await.unwrap();
    let _bot = dispatcher(&rig).await;
    let poster = format!("{}?sig=s3cret", posters.poster("dune"));
    let text = "开始下载 沙丘 (2021)\n站点：Example · 大小：12.3 GB";
    let entry = queue_notification(&rig.store, ALICE, text, Some(&poster)).await;

    let record = settled(&rig.store, &entry).await;
    assert_eq!(record["state"], "sent", "{record:?}");
    assert_eq!(record["kind"], "notification");
    assert_eq!(record["attempts"], "1");
    let message = only(rig.tg.received(ALICE));
    assert_eq!(message.photo.as_deref(), Some(poster.as_str()));
    assert_eq!(message.text, text, "the text is the caption");
    assert_eq!(record["message_id"], message.message_id.to_string());
    assert!(
        rig.tg.sent().is_empty(),
        "no text message besides the photo"
    );
    assert_eq!(
        posters.requests(),
        ["/poster/dune.jpg?sig=s3cret"],
        "Telegram fetched the poster once"
    );
    let call = rig
        .tg
        .calls()
        .into_iter()
        .find(|c| c.method == "sendPhoto")
        .unwrap();
    assert!(
        call.params.get("parse_mode").is_none(),
        "plain text: {}",
        call.params
    );
    let Outcome::Answered {
        body: Some(body), ..
    } = &call.outcome
    else {
        panic!("{call:?}");
    };
    assert!(
        body["result"]["photo"]
            .as_array()
            .is_some_and(|sizes| !sizes.is_empty()),
        "a Message with a photo array: {body}"
    );
    assert_eq!(body["result"]["caption"], text);
}

/// A poster that 404s, and one that answers a web page: Telegram refuses both with a 400, and
/// each notification goes as text at once, exactly one message, with one log line that does
/// not carry the URL's query.
#[tokio::test]
async fn a_poster_telegram_cannot_fetch_is_sent_as_text_once() {
    let rig = rig().await;
    let posters = PosterServer::start().await.unwrap();
    let bot = dispatcher(&rig).await;
    let gone = format!("{}?api_key=tmdb-s3cret", posters.missing("dune"));
    let page = posters.page("expanse");
    let to_alice = queue_notification(&rig.store, ALICE, "入库完成 沙丘", Some(&gone)).await;
    let to_bob = queue_notification(&rig.store, BOB, "订阅完成 苍穹浩瀚", Some(&page)).await;

    for (entry, chat, text) in [
        (&to_alice, ALICE, "入库完成 沙丘"),
        (&to_bob, BOB, "订阅完成 苍穹浩瀚"),
    ] {
        let record = settled(&rig.store, entry).await;
        assert_eq!(record["state"], "sent", "{record:?}");
        assert_eq!(record["attempts"], "1", "one delivery, not a retry");
        let message = only(rig.tg.received(chat));
        assert_eq!(message.photo, None);
        assert_eq!(message.text, text);
        assert_eq!(record["message_id"], message.message_id.to_string());
    }
    let refusals: Vec<String> = rig
        .tg
        .calls()
        .iter()
        .filter(|c| c.method == "sendPhoto")
        .filter_map(|c| match &c.outcome {
            Outcome::Answered {
                status: 400,
                body: Some(b),
            } => b["description"].as_str().map(str::to_string),
            _ => None,
        })
        .collect();
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    assert!(refusals.contains(&descriptions::PHOTO_URL_FAILED.to_string()));
    assert!(refusals.contains(&descriptions::PHOTO_WRONG_TYPE.to_string()));
    assert_eq!(statuses(&rig, "sendMessage"), [Some(200), Some(200)]);
    assert!(rig.tg.photos().is_empty());

    let log = bot.stderr();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("Telegram refused the poster"))
        .collect();
    assert_eq!(lines.len(), 2, "one line per notification:\n{log}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&posters.missing("dune")) && l.contains("failed to get HTTP URL")),
        "{lines:#?}"
    );
    assert!(
        !log.contains("tmdb-s3cret"),
        "a poster URL's query is never logged:\n{log}"
    );
}

#[tokio::test]
async fn a_text_too_long_for_a_caption_goes_as_text_alone() {
    let rig = rig().await;
    let posters = PosterServer::start().await.unwrap();
    let _bot = dispatcher(&rig).await;
    // 1500 characters, 4500 bytes: over the caption's 1024 whichever way it is counted.
    let text = "剧".repeat(1500);
    let entry = queue_notification(&rig.store, ALICE, &text, Some(&posters.poster("long"))).await;

    let record = settled(&rig.store, &entry).await;
    assert_eq!(record["state"], "sent", "{record:?}");
    let message = only(rig.tg.received(ALICE));
    assert_eq!(message.photo, None);
    assert_eq!(message.text, text);
    assert_eq!(
        rig.tg.count("sendPhoto"),
        0,
        "no photo tried, so never both forms"
    );
    assert!(posters.requests().is_empty());
}

/// No answer (the connection cut before the photo was sent), then a proxy's 502: both leave
/// open whether the photo arrived, so the notification is retried as the photo, never switched
/// to text; it arrives once, as a photo.
#[tokio::test]
async fn a_photo_send_without_an_answer_is_retried_as_a_photo_never_as_text() {
    let rig = rig().await;
    let posters = PosterServer::start().await.unwrap();
    let _bot = dispatcher(&rig).await;
    rig.tg.fail_next("sendPhoto", Fault::Drop);
    rig.tg.fail_next("sendPhoto", Fault::ServerError(502));
    let poster = posters.poster("retry");
    let entry = queue_notification(&rig.store, ALICE, "下载失败 沙丘", Some(&poster)).await;

    let record = settled(&rig.store, &entry).await;
    assert_eq!(record["state"], "sent", "{record:?}");
    let message = only(rig.tg.received(ALICE));
    assert_eq!(message.photo.as_deref(), Some(poster.as_str()));
    assert_eq!(rig.tg.photos().len(), 1);
    assert_eq!(rig.tg.count("sendMessage"), 0, "never the text form");
    let outcomes: Vec<Outcome> = rig
        .tg
        .calls()
        .into_iter()
        .filter(|c| c.method == "sendPhoto")
        .map(|c| match c.outcome {
            Outcome::Answered { status, .. } => Outcome::Answered { status, body: None },
            other => other,
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            Outcome::Dropped,
            Outcome::Answered {
                status: 502,
                body: None
            },
            Outcome::Answered {
                status: 200,
                body: None
            }
        ]
    );
}

#[tokio::test]
async fn a_429_on_a_photo_is_waited_out_and_the_photo_sent_once() {
    let rig = rig().await;
    let posters = PosterServer::start().await.unwrap();
    let _bot = dispatcher(&rig).await;
    rig.tg.fail_next("sendPhoto", Fault::RetryAfter(1));
    let poster = posters.poster("slow-down");
    let entry = queue_notification(&rig.store, ALICE, "签到成功", Some(&poster)).await;

    let record = settled(&rig.store, &entry).await;
    assert_eq!(record["state"], "sent", "{record:?}");
    let calls: Vec<_> = rig
        .tg
        .calls()
        .into_iter()
        .filter(|c| c.method == "sendPhoto")
        .collect();
    assert_eq!(
        calls.iter().map(|c| c.status()).collect::<Vec<_>>(),
        [Some(429), Some(200)]
    );
    assert!(
        calls[1].at.duration_since(calls[0].at) >= Duration::from_secs(1),
        "the retry waited retry_after"
    );
    assert_eq!(
        only(rig.tg.received(ALICE)).photo.as_deref(),
        Some(poster.as_str())
    );
    assert_eq!(rig.tg.count("sendMessage"), 0);
}

/// `queue_reply` writes `photo` like `markup`: only when there is one.
#[tokio::test]
async fn queue_reply_writes_a_photo_only_when_there_is_one() {
    let (_redis, _ledger, store, _) = crate::support::app::spawn_ledger(&[]).await;
    queue_notification(
        &store,
        ALICE,
        "with",
        Some("https://image.tmdb.org/t/p/w500/x.jpg"),
    )
    .await;
    queue_notification(&store, ALICE, "without", None).await;
    let entries = store.stream(&store.keys.replies_stream()).await;
    assert_eq!(entries.len(), 2);
    assert_eq!(
        entries[0].get("photo").map(String::as_str),
        Some("https://image.tmdb.org/t/p/w500/x.jpg")
    );
    assert_eq!(entries[0]["kind"], "notification");
    assert!(!entries[1].contains_key("photo"), "{:?}", entries[1]);
}
