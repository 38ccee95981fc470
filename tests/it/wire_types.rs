//! oncebot's Bot API wire shapes held to teloxide-core's types, the most complete typed model of
//! the Bot API (docs/design.md, "Why our own Bot API client"):
//!
//! - every request body the bot sends (the dispatcher, the poller, `oncebot webhook ...`) is
//!   exactly what teloxide-core's payload for the same values serializes to: no field it lacks,
//!   none of another type or spelling;
//! - every answer the Bot API simulator gives, success or error, parses as the payload's
//!   `Output` or as the error envelope with teloxide's `ResponseParameters`;
//! - recorded updates, as Telegram sends them (`tests/fixtures/telegram/updates/`), and the
//!   updates the tests build, read the same in `oncebot::telegram::types` and in teloxide.

use std::collections::BTreeSet;
use std::time::Duration;

use oncebot::moviepilot::{Dialect, MediaKind};
use oncebot_tools::sim::moviepilot::{Fault as MpFault, routes};
use oncebot_tools::sim::posters::PosterServer;
use oncebot_tools::sim::telegram::{Call, Fault, Outcome, callback_update, text_update};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use teloxide_core::payloads;
use teloxide_core::requests::Payload;
use teloxide_core::types::{
    AllowedUpdate, BotCommand, BotCommandScope, CallbackQueryId, InlineKeyboardMarkup, InputFile,
    InputMedia, InputMediaPhoto, MaybeInaccessibleMessage, MessageId, Recipient, ReplyMarkup,
    ReplyParameters, ResponseParameters, UpdateKind,
};

use crate::support::app::run_oncebot;
use crate::support::child::Oncebot;
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, edited_text, group_text, poll_update, private_text};

// ---------------------------------------------------------------------------------------------
// Updates

/// `v` read from its JSON text, as a client reads a body. (teloxide's `Update` wants its keys
/// borrowed from the input, which `serde_json::from_value` cannot give: it reads every update as
/// an error that way.)
fn parse<T: DeserializeOwned>(v: &Value) -> serde_json::Result<T> {
    serde_json::from_str(&v.to_string())
}

/// What oncebot takes from an update, read from either model.
#[derive(Debug, PartialEq)]
struct Seen {
    update_id: i64,
    /// `message`, `edited_message`, `callback_query`, or `other` (acknowledged, not modelled).
    kind: &'static str,
    message: Option<SeenMessage>,
    callback: Option<SeenCallback>,
}

#[derive(Debug, PartialEq)]
struct SeenMessage {
    id: i64,
    /// (id, is_bot)
    from: Option<(i64, bool)>,
    chat: (i64, String),
    text: Option<String>,
}

#[derive(Debug, PartialEq)]
struct SeenCallback {
    id: String,
    from: (i64, bool),
    /// (message id, chat id, chat type, date: 0 for an inaccessible message)
    message: Option<(i64, i64, String, i64)>,
    data: Option<String>,
}

fn seen_by_oncebot(raw: &Value) -> Seen {
    let u: oncebot::telegram::types::Update =
        parse(raw).unwrap_or_else(|e| panic!("oncebot cannot read {raw}: {e}"));
    let kind = if u.message.is_some() {
        "message"
    } else if u.edited_message.is_some() {
        "edited_message"
    } else if u.callback_query.is_some() {
        "callback_query"
    } else {
        "other"
    };
    Seen {
        update_id: u.update_id,
        kind,
        message: u.message.map(|m| SeenMessage {
            id: m.message_id,
            from: m.from.map(|f| (f.id, f.is_bot)),
            chat: (m.chat.id, m.chat.kind),
            text: m.text,
        }),
        callback: u.callback_query.map(|q| SeenCallback {
            id: q.id,
            from: (q.from.id, q.from.is_bot),
            message: q
                .message
                .map(|m| (m.message_id, m.chat.id, m.chat.kind, m.date)),
            data: q.data,
        }),
    }
}

fn chat_type(chat: &teloxide_core::types::Chat) -> String {
    let kind = if chat.is_private() {
        "private"
    } else if chat.is_group() {
        "group"
    } else if chat.is_supergroup() {
        "supergroup"
    } else if chat.is_channel() {
        "channel"
    } else {
        panic!("a chat of no known type: {chat:?}")
    };
    kind.to_string()
}

fn user_of(u: &teloxide_core::types::User) -> (i64, bool) {
    (i64::try_from(u.id.0).unwrap(), u.is_bot)
}

fn seen_by_teloxide(raw: &Value) -> Seen {
    let u: teloxide_core::types::Update =
        parse(raw).unwrap_or_else(|e| panic!("teloxide-core cannot read {raw}: {e}"));
    let message = |m: &teloxide_core::types::Message| SeenMessage {
        id: i64::from(m.id.0),
        from: m.from.as_ref().map(user_of),
        chat: (m.chat.id.0, chat_type(&m.chat)),
        text: m.text().map(str::to_string),
    };
    let (kind, seen_message, callback) = match &u.kind {
        UpdateKind::Message(m) => ("message", Some(message(m)), None),
        UpdateKind::EditedMessage(_) => ("edited_message", None, None),
        UpdateKind::CallbackQuery(q) => {
            let seen = SeenCallback {
                id: q.id.0.clone(),
                from: user_of(&q.from),
                message: q.message.as_ref().map(|m| {
                    let date = match m {
                        MaybeInaccessibleMessage::Regular(m) => m.date.timestamp(),
                        MaybeInaccessibleMessage::Inaccessible(_) => 0,
                    };
                    (
                        i64::from(m.id().0),
                        m.chat().id.0,
                        chat_type(m.chat()),
                        date,
                    )
                }),
                data: q.data.clone(),
            };
            ("callback_query", None, Some(seen))
        }
        // teloxide keeps what it cannot read as `Error` instead of failing: here that is a
        // shape oncebot's tests or fixtures got wrong.
        UpdateKind::Error(_) => panic!(
            "teloxide-core cannot read {raw}: {}",
            why_teloxide_refuses(raw)
        ),
        _ => ("other", None, None),
    };
    Seen {
        update_id: i64::from(u.id.0),
        kind,
        message: seen_message,
        callback,
    }
}

/// teloxide's `Update` keeps no reason when its kind fails to parse; parse the kind alone.
fn why_teloxide_refuses(raw: &Value) -> String {
    use teloxide_core::types as t;
    fn reason<T: DeserializeOwned>(v: &Value) -> String {
        parse::<T>(v)
            .err()
            .map_or_else(|| "it parses alone".into(), |e| e.to_string())
    }
    let obj = raw.as_object().unwrap();
    let (kind, v) = obj.iter().find(|(k, _)| *k != "update_id").unwrap();
    match kind.as_str() {
        "message" | "edited_message" => reason::<t::Message>(v),
        "callback_query" => reason::<t::CallbackQuery>(v),
        "my_chat_member" => reason::<t::ChatMemberUpdated>(v),
        "poll" => reason::<t::Poll>(v),
        other => format!("no reason known for {other}"),
    }
}

fn assert_read_alike(what: &str, raw: &Value) -> Seen {
    let ours = seen_by_oncebot(raw);
    let theirs = seen_by_teloxide(raw);
    assert_eq!(ours, theirs, "{what} reads differently");
    ours
}

/// Updates as Telegram sent them: private and group messages, commands with and without the
/// bot's @name, plain text, a photo, an edit, button taps under accessible and inaccessible
/// messages, and a membership change oncebot only acknowledges.
#[test]
fn recorded_updates_read_the_same_in_oncebot_and_teloxide() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/telegram/updates"
    );
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut covered = BTreeSet::new();
    for path in &files {
        let raw: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let seen = assert_read_alike(&path.display().to_string(), &raw);
        let chat = match (&seen.message, &seen.callback) {
            (Some(m), _) => m.chat.1.clone(),
            (
                _,
                Some(SeenCallback {
                    message: Some((_, _, chat, _)),
                    ..
                }),
            ) => chat.clone(),
            _ => String::new(),
        };
        covered.insert(format!("{} {chat}", seen.kind).trim().to_string());
    }
    for needed in [
        "message private",
        "message group",
        "message supergroup",
        "callback_query private",
        "callback_query supergroup",
        "edited_message",
        "other",
    ] {
        assert!(
            covered.contains(needed),
            "no fixture of {needed}: {covered:?}"
        );
    }
}

/// The updates the tests and the simulator build stand in for Telegram's, so they must be
/// Telegram's shapes too.
#[test]
fn the_updates_tests_build_are_real_update_shapes() {
    let mut typed = text_update(ALICE, ALICE, "/search Dune");
    typed["update_id"] = json!(7);
    typed["message"]["message_id"] = json!(70);
    typed["message"]["date"] = json!(1_767_225_600);
    let mut tap = callback_update(-1_001_234_567_890, BOB, 71, "t:00ff");
    tap["update_id"] = json!(8);
    let built = [
        (
            "support::private_text",
            private_text(1, ALICE, "/subscribe 三体"),
        ),
        (
            "support::group_text",
            group_text(2, BOB, "/search@OnceTestBot Dune"),
        ),
        ("support::edited_text", edited_text(3, ALICE, "/status")),
        ("support::poll_update", poll_update(4)),
        ("sim::telegram::text_update", typed),
        ("sim::telegram::callback_update", tap),
    ];
    for (what, raw) in built {
        assert_read_alike(what, &raw);
    }
}

// ---------------------------------------------------------------------------------------------
// Requests and answers

/// A successful answer: `{"ok": true, "result": ..., "description"?}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Success<T> {
    ok: literal::True,
    result: T,
    description: Option<String>,
}

/// A failed answer, as Telegram sends it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Failed {
    ok: literal::False,
    error_code: u16,
    description: String,
    parameters: Option<ResponseParameters>,
}

/// `true` and `false` as types, for the envelope's `ok`.
mod literal {
    use serde::{Deserialize, Deserializer, de::Error as _};

    pub struct True;
    pub struct False;

    impl<'de> Deserialize<'de> for True {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            bool::deserialize(d)?
                .then_some(True)
                .ok_or_else(|| D::Error::custom("ok is false in a 200 answer"))
        }
    }

    impl<'de> Deserialize<'de> for False {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            (!bool::deserialize(d)?)
                .then_some(False)
                .ok_or_else(|| D::Error::custom("ok is true in an error answer"))
        }
    }
}

/// `call`'s parameters read into `B` (teloxide's types for every field the bot sends), made
/// into teloxide-core's payload by `build`, must serialize back to exactly those parameters;
/// its answer must parse as the payload's `Output` or as an error envelope.
fn check<B, P>(call: &Call, build: impl FnOnce(B) -> P)
where
    B: DeserializeOwned,
    P: Payload + serde::Serialize,
    P::Output: DeserializeOwned,
{
    let method = &call.method;
    let body: B = parse(&call.params).unwrap_or_else(|e| {
        panic!(
            "{method}: {} does not fit teloxide-core's types ({e}); a new field belongs in \
             this test's mirror of the payload if teloxide-core's {} has it",
            call.params,
            P::NAME
        )
    });
    let payload = serde_json::to_value(build(body)).unwrap();
    assert_eq!(
        payload,
        call.params,
        "{method}: teloxide-core's {} for the same values is not what was sent",
        P::NAME
    );
    check_answer::<P::Output>(call);
}

fn check_answer<T: DeserializeOwned>(call: &Call) {
    let method = &call.method;
    match &call.outcome {
        Outcome::Answered {
            status: 200,
            body: Some(body),
        } => {
            if let Err(e) = parse::<Success<T>>(body) {
                panic!("{method}: the answer {body} is not teloxide-core's type: {e}");
            }
            if method == "getUpdates" {
                for update in body["result"].as_array().unwrap() {
                    assert_read_alike("a getUpdates answer", update);
                }
            }
        }
        Outcome::Answered {
            status,
            body: Some(body),
        } => {
            let failed: Failed = parse(body)
                .unwrap_or_else(|e| panic!("{method}: the error {body} is not Telegram's: {e}"));
            assert_eq!(failed.error_code, *status, "{method}: {body}");
        }
        // A proxy's HTML page, a dropped connection or a call still waiting: nothing typed.
        _ => {}
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SendMessageBody {
    chat_id: Recipient,
    text: String,
    reply_markup: Option<ReplyMarkup>,
    reply_parameters: Option<ReplyParameters>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SendPhotoBody {
    chat_id: Recipient,
    /// A poster's URL (teloxide's `InputFile` serializes one as the plain string).
    photo: reqwest::Url,
    caption: Option<String>,
    reply_markup: Option<ReplyMarkup>,
    reply_parameters: Option<ReplyParameters>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditTextBody {
    chat_id: Recipient,
    message_id: i32,
    text: String,
    reply_markup: Option<InlineKeyboardMarkup>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditCaptionBody {
    chat_id: Recipient,
    message_id: i32,
    caption: Option<String>,
    reply_markup: Option<InlineKeyboardMarkup>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditMediaBody {
    chat_id: Recipient,
    message_id: i32,
    media: PhotoByUrl,
    reply_markup: Option<InlineKeyboardMarkup>,
}

/// An `InputMediaPhoto` by URL (teloxide's `InputMedia` is not read back, only written).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PhotoByUrl {
    #[serde(rename = "type")]
    kind: String,
    media: reqwest::Url,
    caption: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GetChatBody {
    chat_id: Recipient,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteBody {
    chat_id: Recipient,
    message_id: i32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditMarkupBody {
    chat_id: Recipient,
    message_id: i32,
    reply_markup: Option<InlineKeyboardMarkup>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerCallbackBody {
    callback_query_id: String,
    text: Option<String>,
    show_alert: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandsBody {
    commands: Option<Vec<BotCommand>>,
    scope: Option<BotCommandScope>,
    language_code: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetWebhookBody {
    url: reqwest::Url,
    secret_token: Option<String>,
    allowed_updates: Option<Vec<AllowedUpdate>>,
    max_connections: Option<u8>,
    drop_pending_updates: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteWebhookBody {
    drop_pending_updates: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GetUpdatesBody {
    offset: Option<i32>,
    limit: Option<u8>,
    timeout: Option<u32>,
    allowed_updates: Option<Vec<AllowedUpdate>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

/// Every method the simulator knows, checked against its teloxide-core payload.
fn check_call(call: &Call) {
    match call.method.as_str() {
        "sendMessage" => check(call, |b: SendMessageBody| {
            let mut p = payloads::SendMessage::new(b.chat_id, b.text);
            p.reply_markup = b.reply_markup;
            p.reply_parameters = b.reply_parameters;
            p
        }),
        "sendPhoto" => check(call, |b: SendPhotoBody| {
            let mut p = payloads::SendPhoto::new(b.chat_id, InputFile::url(b.photo));
            p.caption = b.caption;
            p.reply_markup = b.reply_markup;
            p.reply_parameters = b.reply_parameters;
            p
        }),
        "editMessageText" => check(call, |b: EditTextBody| {
            let mut p = payloads::EditMessageText::new(b.chat_id, MessageId(b.message_id), b.text);
            p.reply_markup = b.reply_markup;
            p
        }),
        "editMessageCaption" => check(call, |b: EditCaptionBody| {
            let mut p = payloads::EditMessageCaption::new(b.chat_id, MessageId(b.message_id));
            p.caption = b.caption;
            p.reply_markup = b.reply_markup;
            p
        }),
        "editMessageMedia" => check(call, |b: EditMediaBody| {
            assert_eq!(b.media.kind, "photo");
            let mut photo = InputMediaPhoto::new(InputFile::url(b.media.media));
            photo.caption = b.media.caption;
            let mut p = payloads::EditMessageMedia::new(
                b.chat_id,
                MessageId(b.message_id),
                InputMedia::Photo(photo),
            );
            p.reply_markup = b.reply_markup;
            p
        }),
        "deleteMessage" => check(call, |b: DeleteBody| {
            payloads::DeleteMessage::new(b.chat_id, MessageId(b.message_id))
        }),
        "editMessageReplyMarkup" => check(call, |b: EditMarkupBody| {
            let mut p = payloads::EditMessageReplyMarkup::new(b.chat_id, MessageId(b.message_id));
            p.reply_markup = b.reply_markup;
            p
        }),
        "answerCallbackQuery" => check(call, |b: AnswerCallbackBody| {
            let mut p = payloads::AnswerCallbackQuery::new(CallbackQueryId(b.callback_query_id));
            p.text = b.text;
            p.show_alert = b.show_alert;
            p
        }),
        "setMyCommands" => check(call, |b: CommandsBody| {
            let mut p = payloads::SetMyCommands::new(b.commands.expect("commands"));
            p.scope = b.scope;
            p.language_code = b.language_code;
            p
        }),
        "getMyCommands" => check(call, |b: CommandsBody| {
            assert!(b.commands.is_none());
            let mut p = payloads::GetMyCommands::new();
            p.scope = b.scope;
            p.language_code = b.language_code;
            p
        }),
        "deleteMyCommands" => check(call, |b: CommandsBody| {
            assert!(b.commands.is_none());
            let mut p = payloads::DeleteMyCommands::new();
            p.scope = b.scope;
            p.language_code = b.language_code;
            p
        }),
        "setWebhook" => check(call, |b: SetWebhookBody| {
            let mut p = payloads::SetWebhook::new(b.url);
            p.secret_token = b.secret_token;
            p.allowed_updates = b.allowed_updates;
            p.max_connections = b.max_connections;
            p.drop_pending_updates = b.drop_pending_updates;
            p
        }),
        "deleteWebhook" => check(call, |b: DeleteWebhookBody| {
            let mut p = payloads::DeleteWebhook::new();
            p.drop_pending_updates = b.drop_pending_updates;
            p
        }),
        "getWebhookInfo" => check(call, |NoParams {}| payloads::GetWebhookInfo::new()),
        "getMe" => check(call, |NoParams {}| payloads::GetMe::new()),
        "getChat" => check(call, |b: GetChatBody| payloads::GetChat::new(b.chat_id)),
        "getUpdates" => check(call, |b: GetUpdatesBody| {
            let mut p = payloads::GetUpdates::new();
            p.offset = b.offset;
            p.limit = b.limit;
            p.timeout = b.timeout;
            p.allowed_updates = b.allowed_updates;
            p
        }),
        other => panic!("no teloxide-core check for {other}: add one here"),
    }
}

/// Waits until the sim has answered `n` calls of `method` with 200.
async fn answered(rig: &Rig, method: &str, n: usize) {
    let m = method.to_string();
    rig.tg
        .wait_for(RECOVERY_DEADLINE, |o| {
            o.calls()
                .iter()
                .filter(|c| c.method == m && c.status() == Some(200))
                .count()
                >= n
        })
        .await
        .unwrap_or_else(|e| panic!("{method} x{n}: {e:?}\n{:#?}", rig.tg.calls()));
}

/// Posts `params` to the simulator's `method` as a Bot API client would.
async fn call_sim(rig: &Rig, method: &str, params: Value) {
    let url = format!("{}/bot{}/{method}", rig.tg.url(), rig.tg.token());
    rig.http.post(url).json(&params).send().await.unwrap();
}

/// The bot's whole use of the Bot API, each call checked: `webhook set`, the dispatcher's
/// setMyCommands, a reply with buttons and one replying to the user's message, a progress
/// message edited into the result, a 429 answer, two taps answered and the buttons removed,
/// `webhook info` and `delete`, and a poller's getUpdates; then the methods only a client
/// other than the bot calls, so every kind of answer the simulator gives is checked too.
#[tokio::test]
async fn every_bot_api_request_and_every_simulator_answer_is_teloxide_typed() {
    let rig = Rig::with(
        Dialect::V2,
        &[
            ("ONCEBOT__WORKER__PROGRESS_AFTER_MS", "200"),
            ("ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS", "10"),
            (
                "ONCEBOT__TELEGRAM__WEBHOOK_URL",
                "https://bot.example.org/telegram/webhook",
            ),
        ],
    )
    .await;
    let env: Vec<(&str, &str)> = rig
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let set = run_oncebot(&["webhook", "set", "--max-connections", "20"], &env).await;
    assert_eq!(set.status.code(), Some(0), "{set:?}");

    let bot = rig.start_pipeline().await;
    answered(&rig, "setMyCommands", 1).await;

    // A result with buttons, and a 429 on the way.
    rig.tg.fail_next("sendMessage", Fault::RetryAfter(1));
    rig.send(1, "/search Dune").await;
    answered(&rig, "sendMessage", 1).await;

    // "Working on it", edited into the result.
    rig.mp.fail_next(
        routes::SUBSCRIBE_LIST,
        MpFault::Delay(Duration::from_millis(1500)),
    );
    rig.send(2, "/subscriptions").await;
    answered(&rig, "editMessageText", 1).await;

    // A question with Confirm / Cancel, tapped twice.
    let sub = rig
        .mp
        .insert_subscription(108545, MediaKind::Tv, Some(1))
        .unwrap();
    let before = rig.tg.sent().len();
    rig.send(3, &format!("/unsubscribe {sub}")).await;
    answered(&rig, "sendMessage", before + 1).await;
    let question = rig.tg.sent().last().cloned().unwrap();
    let confirm =
        question.reply_markup.as_ref().expect("buttons")["inline_keyboard"][0][0]["callback_data"]
            .as_str()
            .unwrap()
            .to_string();
    for update_id in [10, 11] {
        let mut tap = callback_update(ALICE, ALICE, question.message_id, &confirm);
        tap["update_id"] = json!(update_id);
        rig.tg.push_update(tap.clone());
        rig.post(&tap).await;
    }
    answered(&rig, "answerCallbackQuery", 2).await;
    answered(&rig, "editMessageReplyMarkup", 1).await;

    // A relayed notification with its poster, fetched from a loopback image host.
    let posters = PosterServer::start().await.unwrap();
    let mut conn = rig.store.conn().await;
    let _: String = redis::AsyncCommands::xadd(
        &mut conn,
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
    answered(&rig, "sendPhoto", 1).await;

    // That photo edited as a page turn edits a list: without a job its form is learnt from
    // editMessageText's refusal; the caption, then a new poster with it.
    let photo = rig.tg.photos()[0].message_id;
    for (i, new_photo) in [String::new(), posters.poster("dune-part-two")]
        .into_iter()
        .enumerate()
    {
        let _: String = redis::AsyncCommands::xadd(
            &mut conn,
            rig.store.keys.replies_stream(),
            "*",
            &[
                ("chat_id", ALICE.to_string()),
                ("kind", "result".into()),
                ("text", format!("第 {} 页", i + 2)),
                ("edit_message_id", photo.to_string()),
                ("photo", new_photo),
                ("created_at", "0".into()),
            ],
        )
        .await
        .unwrap();
    }
    answered(&rig, "editMessageCaption", 1).await;
    answered(&rig, "editMessageMedia", 1).await;
    drop(bot);

    let info = run_oncebot(&["webhook", "info"], &env).await;
    assert_eq!(info.status.code(), Some(0), "{info:?}");
    let deleted = run_oncebot(&["webhook", "delete"], &env).await;
    assert_eq!(deleted.status.code(), Some(0), "{deleted:?}");

    // A poller: an update waiting, and the long poll after it.
    let pushed = rig.tg.push_update(private_text(0, ALICE, "/help"));
    let poller = Oncebot::spawn(&["serve", "--role", "ingress", "--poll"], &rig.env);
    rig.tg
        .wait_for(RECOVERY_DEADLINE, |o| o.confirmed_offset() == pushed + 1)
        .await
        .unwrap();
    drop(poller);

    // What the bot never calls, and errors of several kinds.
    call_sim(&rig, "getMe", json!({})).await;
    // `oncebot doctor`'s: each kind of chat, and one the bot cannot reach.
    for chat in [ALICE, -100_123, -1_001_234_567_890] {
        call_sim(&rig, "getChat", json!({ "chat_id": chat })).await;
    }
    rig.tg.lose_chat(-42);
    call_sim(&rig, "getChat", json!({ "chat_id": -42 })).await;
    call_sim(
        &rig,
        "deleteMessage",
        json!({"chat_id": ALICE, "message_id": question.message_id}),
    )
    .await;
    call_sim(
        &rig,
        "deleteMessage",
        json!({"chat_id": ALICE, "message_id": question.message_id}),
    )
    .await;
    call_sim(&rig, "getMyCommands", json!({})).await;
    call_sim(&rig, "deleteMyCommands", json!({"language_code": "en"})).await;
    call_sim(&rig, "sendMessage", json!({"chat_id": ALICE, "text": " "})).await;
    call_sim(
        &rig,
        "answerCallbackQuery",
        json!({"callback_query_id": "1"}),
    )
    .await;
    // A webhook whose last delivery failed: `last_error_date` and `last_error_message`.
    rig.tg
        .set_webhook("https://bot.example.org/telegram/webhook");
    rig.tg
        .webhook_delivery_failed("Wrong response from the webhook: 502 Bad Gateway");
    call_sim(&rig, "getWebhookInfo", json!({})).await;
    rig.tg.fail_next("getWebhookInfo", Fault::RetryAfter(3));
    call_sim(&rig, "getWebhookInfo", json!({})).await;

    let calls = rig.tg.calls();
    let mut methods = BTreeSet::new();
    let mut errors = 0;
    for call in &calls {
        check_call(call);
        if call.status() == Some(200) {
            methods.insert(call.method.as_str());
        } else if call.status().is_some() {
            errors += 1;
        }
    }
    let all = [
        "answerCallbackQuery",
        "deleteMessage",
        "deleteMyCommands",
        "deleteWebhook",
        "editMessageCaption",
        "editMessageMedia",
        "editMessageReplyMarkup",
        "editMessageText",
        "getChat",
        "getMe",
        "getMyCommands",
        "getUpdates",
        "getWebhookInfo",
        "sendMessage",
        "sendPhoto",
        "setMyCommands",
        "setWebhook",
    ];
    assert_eq!(
        methods,
        all.into_iter().collect(),
        "methods answered with 200"
    );
    assert!(
        errors >= 4,
        "429s, a bad request and a too-old query: {errors}"
    );
    let replied_to = calls.iter().any(|c| {
        c.method == "sendMessage"
            && c.params.get("reply_parameters").is_some()
            && c.status() == Some(200)
    });
    assert!(
        replied_to,
        "a reply to the user's message was among the checked sends"
    );
}
