//! The simulated Bot API answers as the real one does, through oncebot's own client
//! (`telegram::api::BotApi`) where that client's classification matters, and through raw HTTP
//! where the exact shape does.

use std::time::Duration;

use oncebot::config::Secret;
use oncebot::telegram::api::{ApiError, BotApi};
use oncebot_tools::sim::posters::PosterServer;
use oncebot_tools::sim::telegram::{
    Fault, Outcome, SIM_TOKEN, TelegramSim, callback_update, descriptions, text_update,
};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(10);

fn api(sim: &TelegramSim) -> BotApi {
    BotApi::new(&sim.url(), &Secret::new(SIM_TOKEN)).unwrap()
}

/// A raw POST with a JSON body: (HTTP status, JSON answer).
async fn post(sim: &TelegramSim, method: &str, body: Value) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(format!("{}/bot{}/{method}", sim.url(), SIM_TOKEN))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

fn ids(updates: &[Value]) -> Vec<i64> {
    updates
        .iter()
        .map(|u| u["update_id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn get_updates_forgets_below_offset_and_serves_the_rest_again() {
    let sim = TelegramSim::start().await.unwrap();
    let a = sim.push_update(text_update(1, 1, "a"));
    let b = sim.push_update(text_update(1, 1, "b"));
    assert_eq!(b, a + 1, "ids are sequential");
    let api = api(&sim);
    let get = |offset: i64| {
        let api = api.clone();
        async move {
            api.call::<Vec<Value>>("getUpdates", &json!({"offset": offset}), T)
                .await
                .unwrap()
        }
    };
    // Nothing confirmed: both, twice.
    assert_eq!(ids(&get(0).await), vec![a, b]);
    assert_eq!(ids(&get(0).await), vec![a, b]);
    // offset = a + 1 confirms a only.
    assert_eq!(ids(&get(a + 1).await), vec![b]);
    assert_eq!(ids(&get(0).await), vec![b], "a is gone for good");
    assert_eq!(sim.confirmed_offset(), a + 1);
    // The message got the fields Telegram fills in.
    let update = &get(0).await[0];
    assert_eq!(
        update["message"]["message_id"], 2,
        "second message in chat 1"
    );
    assert!(update["message"]["date"].as_i64().unwrap() > 0);
}

#[tokio::test]
async fn a_long_poll_answers_as_soon_as_an_update_is_pushed() {
    let sim = TelegramSim::start().await.unwrap();
    let api = api(&sim);
    let poll = tokio::spawn(async move {
        api.call::<Vec<Value>>("getUpdates", &json!({"timeout": 30}), T * 4)
            .await
            .unwrap()
    });
    sim.wait_for(T, |o| o.polls_waiting() == 1).await.unwrap();
    let id = sim.push_update(text_update(1, 1, "hi"));
    let got = tokio::time::timeout(T, poll).await.unwrap().unwrap();
    assert_eq!(ids(&got), vec![id]);
}

#[tokio::test]
async fn a_newer_poll_ends_the_waiting_one_with_409() {
    let sim = TelegramSim::start().await.unwrap();
    let first = {
        let api = api(&sim);
        tokio::spawn(async move {
            api.call::<Vec<Value>>("getUpdates", &json!({"timeout": 30}), T * 4)
                .await
        })
    };
    sim.wait_for(T, |o| o.polls_waiting() == 1).await.unwrap();
    let second = api(&sim)
        .call::<Vec<Value>>("getUpdates", &json!({"timeout": 0}), T)
        .await
        .unwrap();
    assert!(second.is_empty());
    match first.await.unwrap() {
        Err(ApiError::Conflict(d)) => assert_eq!(d, descriptions::OTHER_POLLER),
        other => panic!("expected 409, got {other:?}"),
    }
}

#[tokio::test]
async fn method_names_ignore_case_and_a_wrong_token_gets_401() {
    let sim = TelegramSim::start().await.unwrap();
    let (status, me) = post(&sim, "GetMe", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(me["result"]["is_bot"], true);
    assert_eq!(me["result"]["id"], 123456789);

    let resp = reqwest::Client::new()
        .post(format!("{}/bot1:wrong/getMe", sim.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    assert_eq!(
        resp.json::<Value>().await.unwrap(),
        json!({"ok": false, "error_code": 401, "description": "Unauthorized"})
    );
    let (status, body) = post(&sim, "frobnicate", json!({})).await;
    assert_eq!(
        (status, body["description"].as_str()),
        (404, Some("Not Found"))
    );
    assert_eq!(sim.count("getMe"), 1);
    assert_eq!(sim.observe(|o| o.unauthorized()), 1);
    let log = format!("{:?}", sim.calls());
    assert!(
        !log.contains("wrong") && !log.contains(SIM_TOKEN),
        "no token in the log"
    );
}

#[tokio::test]
async fn form_encoded_and_query_parameters_are_accepted() {
    let sim = TelegramSim::start().await.unwrap();
    let resp = reqwest::Client::new()
        .post(format!("{}/bot{SIM_TOKEN}/sendMessage", sim.url()))
        .form(&[
            ("chat_id", "7"),
            ("text", "hello"),
            (
                "reply_markup",
                r#"{"inline_keyboard":[[{"text":"ok","callback_data":"x"}]]}"#,
            ),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let resp = reqwest::Client::new()
        .get(format!(
            "{}/bot{SIM_TOKEN}/getUpdates?offset=5&timeout=0",
            sim.url()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let sent = sim.sent();
    assert_eq!(sent[0].chat_id, 7);
    assert_eq!(
        sent[0].reply_markup.as_ref().unwrap()["inline_keyboard"][0][0]["text"],
        "ok"
    );
    assert_eq!(sim.confirmed_offset(), 5);
}

#[tokio::test]
async fn sent_messages_are_numbered_per_chat_and_echo_their_keyboard() {
    let sim = TelegramSim::start().await.unwrap();
    let keyboard = json!({"inline_keyboard": [[{"text": "Yes", "callback_data": "y"}]]});
    let (status, one) = post(
        &sim,
        "sendMessage",
        json!({"chat_id": 10, "text": "one", "reply_markup": keyboard}),
    )
    .await;
    assert_eq!(status, 200);
    let (_, two) = post(&sim, "sendMessage", json!({"chat_id": 10, "text": "two"})).await;
    let (_, other) = post(&sim, "sendMessage", json!({"chat_id": -20, "text": "x"})).await;
    assert_eq!(one["result"]["message_id"], 1);
    assert_eq!(one["result"]["reply_markup"], keyboard);
    assert_eq!(one["result"]["chat"]["type"], "private");
    assert_eq!(two["result"]["message_id"], 2);
    assert!(two["result"].get("reply_markup").is_none());
    assert_eq!(other["result"]["message_id"], 1);
    assert_eq!(other["result"]["chat"]["type"], "supergroup");
    let (status, empty) = post(&sim, "sendMessage", json!({"chat_id": 10, "text": ""})).await;
    assert_eq!(
        (status, empty["description"].as_str()),
        (400, Some(descriptions::TEXT_EMPTY))
    );
    let texts: Vec<_> = sim.sent().into_iter().map(|m| m.text).collect();
    assert_eq!(texts, ["one", "two", "x"]);
}

/// A page turn and a used button's ✓ (issue 24): `editMessageText` with the same text and another
/// keyboard applies, as with another text and keyboard; only both the same is "not modified".
#[tokio::test]
async fn an_edit_of_only_the_keyboard_or_of_both_applies() {
    let sim = TelegramSim::start().await.unwrap();
    let page =
        |label: &str| json!({"inline_keyboard": [[{"text": label, "callback_data": "t:1"}]]});
    post(
        &sim,
        "sendMessage",
        json!({"chat_id": 10, "text": "Page 1", "reply_markup": page("Download 1")}),
    )
    .await;
    let edit = |text: &str, label: &str| json!({"chat_id": 10, "message_id": 1, "text": text, "reply_markup": page(label)});
    assert_eq!(
        post(&sim, "editMessageText", edit("Page 1", "✓ Download 1"))
            .await
            .0,
        200
    );
    assert_eq!(
        post(&sim, "editMessageText", edit("Page 2", "Download 6"))
            .await
            .0,
        200
    );
    let (status, body) = post(&sim, "editMessageText", edit("Page 2", "Download 6")).await;
    assert_eq!(
        (status, body["description"].as_str()),
        (400, Some(descriptions::NOT_MODIFIED))
    );
    let now = sim.observe(|o| o.message(10, 1).cloned()).unwrap();
    assert_eq!(
        (now.text.as_str(), now.reply_markup, now.edits),
        ("Page 2", Some(page("Download 6")), 2)
    );
}

#[tokio::test]
async fn an_identical_edit_is_not_modified_and_a_changed_one_applies() {
    let sim = TelegramSim::start().await.unwrap();
    let keyboard = json!({"inline_keyboard": [[{"text": "Yes", "callback_data": "y"}]]});
    post(
        &sim,
        "sendMessage",
        json!({"chat_id": 10, "text": "Sure?", "reply_markup": keyboard}),
    )
    .await;
    let same = json!({"chat_id": 10, "message_id": 1, "text": "Sure?", "reply_markup": keyboard});
    let (status, body) = post(&sim, "editMessageText", same).await;
    assert_eq!(
        (status, body["description"].as_str()),
        (400, Some(descriptions::NOT_MODIFIED))
    );
    // editMessageReplyMarkup without reply_markup removes the keyboard; again is not modified.
    let strip = json!({"chat_id": 10, "message_id": 1});
    assert_eq!(
        post(&sim, "editMessageReplyMarkup", strip.clone()).await.0,
        200
    );
    assert_eq!(post(&sim, "editMessageReplyMarkup", strip).await.0, 400);
    let (status, edited) = post(
        &sim,
        "editMessageText",
        json!({"chat_id": 10, "message_id": 1, "text": "Done"}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(edited["result"]["edit_date"].is_i64());
    let now = sim.observe(|o| o.message(10, 1).cloned()).unwrap();
    assert_eq!(
        (now.text.as_str(), now.reply_markup, now.edits),
        ("Done", None, 2)
    );
    let (status, body) = post(
        &sim,
        "editMessageText",
        json!({"chat_id": 10, "message_id": 99, "text": "x"}),
    )
    .await;
    assert_eq!(
        (status, body["description"].as_str()),
        (400, Some(descriptions::MESSAGE_TO_EDIT_NOT_FOUND))
    );
}

#[tokio::test]
async fn a_callback_query_is_answered_once() {
    let sim = TelegramSim::start().await.unwrap();
    let update = callback_update(10, 10, 1, "confirm:abc");
    let query_id = update["callback_query"]["id"].as_str().unwrap().to_string();
    sim.push_update(update);
    let answer = json!({"callback_query_id": query_id});
    assert_eq!(
        post(&sim, "answerCallbackQuery", answer.clone()).await.0,
        200
    );
    let (status, body) = post(&sim, "answerCallbackQuery", answer).await;
    assert_eq!(
        (status, body["description"].as_str()),
        (400, Some(descriptions::QUERY_TOO_OLD))
    );
    let (status, _) = post(
        &sim,
        "answerCallbackQuery",
        json!({"callback_query_id": "nope"}),
    )
    .await;
    assert_eq!(status, 400);
}

/// A tap Telegram delivers by webhook is as known as one it serves by getUpdates (issue 25,
/// item 13: the demo's taps were answered "query is too old"), is not queued for getUpdates, and
/// a redelivery of the same update does not make an answered query answerable again.
#[tokio::test]
async fn a_callback_query_delivered_by_webhook_is_answered_once() {
    let sim = TelegramSim::start().await.unwrap();
    let update = sim.webhook_update(callback_update(10, 10, 1, "t:abc"));
    assert!(update["update_id"].as_i64().is_some(), "{update}");
    let query_id = update["callback_query"]["id"].as_str().unwrap().to_string();
    let answer = json!({"callback_query_id": query_id});
    assert_eq!(
        post(&sim, "answerCallbackQuery", answer.clone()).await.0,
        200
    );
    assert_eq!(sim.webhook_update(update.clone()), update, "a redelivery");
    let (status, body) = post(&sim, "answerCallbackQuery", answer).await;
    assert_eq!(
        (status, body["description"].as_str()),
        (400, Some(descriptions::QUERY_TOO_OLD))
    );
    assert_eq!(sim.observe(|o| o.pending_updates()), 0);
}

/// sendPhoto fetches its URL as Telegram does and answers each refusal with the real body; a
/// sent photo is a Message with a `photo` array and its caption, its file id can be sent again,
/// and it has no text to edit.
#[tokio::test]
async fn send_photo_fetches_its_url_and_refuses_as_telegram_does() {
    let sim = TelegramSim::start().await.unwrap();
    let posters = PosterServer::start().await.unwrap();
    let refused = |url: String| json!({"chat_id": 7, "photo": url, "caption": "x"});
    for (body, description) in [
        (
            refused(posters.missing("a")),
            descriptions::PHOTO_URL_FAILED,
        ),
        (refused(posters.page("b")), descriptions::PHOTO_WRONG_TYPE),
        (
            refused(posters.broken("c")),
            descriptions::IMAGE_PROCESS_FAILED,
        ),
        // Nothing listens on port 1.
        (
            refused("http://127.0.0.1:1/d.jpg".into()),
            descriptions::PHOTO_URL_FAILED,
        ),
        // TMDB's original size, over the 5 MB a photo by URL may have.
        (
            refused(format!("{}/t/p/original/f.jpg", posters.host())),
            descriptions::PHOTO_URL_FAILED,
        ),
        (
            refused("AgACAgQAAxkBAAI".into()),
            descriptions::WRONG_FILE_ID,
        ),
        (json!({"chat_id": 7}), descriptions::NO_PHOTO),
        (
            json!({"chat_id": 7, "photo": posters.poster("e"), "caption": "字".repeat(1025)}),
            descriptions::CAPTION_TOO_LONG,
        ),
    ] {
        let (status, answer) = post(&sim, "sendPhoto", body.clone()).await;
        assert_eq!(
            answer,
            json!({"ok": false, "error_code": 400, "description": description}),
            "{body}"
        );
        assert_eq!(status, 400);
    }
    assert!(sim.photos().is_empty());

    let caption = "字".repeat(1024);
    let (status, answer) = post(
        &sim,
        "sendPhoto",
        json!({"chat_id": 7, "photo": posters.poster("ok"), "caption": caption}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let message = &answer["result"];
    assert_eq!(message["caption"], caption.as_str());
    assert!(message.get("text").is_none());
    let sizes = message["photo"].as_array().unwrap();
    assert!(
        sizes
            .iter()
            .all(|s| s["file_id"].is_string() && s["width"].is_u64())
    );
    let file_id = sizes.last().unwrap()["file_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, _) = post(&sim, "sendPhoto", json!({"chat_id": 8, "photo": file_id})).await;
    assert_eq!(status, 200, "a file id from an answer is sent again");
    assert_eq!(
        sim.photos().iter().map(|p| p.chat_id).collect::<Vec<_>>(),
        [7, 8]
    );
    assert_eq!(sim.received(7).len(), 1);
    assert_eq!(
        sim.received(7)[0].photo.as_deref(),
        Some(posters.poster("ok").as_str())
    );

    let message_id = message["message_id"].as_i64().unwrap();
    let (_, answer) = post(
        &sim,
        "editMessageText",
        json!({"chat_id": 7, "message_id": message_id, "text": "new"}),
    )
    .await;
    assert_eq!(answer["description"], descriptions::NO_TEXT_TO_EDIT);
}

/// A photo's caption and photo are edited, and a message deleted, as the real API does: a
/// text message has no caption and no media to edit, a caption over 1024 characters and an
/// edit that changes nothing are refused, a photo by URL that cannot be fetched is refused as
/// sendPhoto's, and a message deleted twice is not found the second time.
#[tokio::test]
async fn captions_media_and_deletions_are_edited_and_refused_as_telegram_does() {
    let sim = TelegramSim::start().await.unwrap();
    let posters = PosterServer::start().await.unwrap();
    let (_, photo) = post(
        &sim,
        "sendPhoto",
        json!({"chat_id": 7, "photo": posters.poster("a"), "caption": "page 1"}),
    )
    .await;
    let photo = photo["result"]["message_id"].as_i64().unwrap();
    let (_, text) = post(&sim, "sendMessage", json!({"chat_id": 7, "text": "hi"})).await;
    let text = text["result"]["message_id"].as_i64().unwrap();
    let caption =
        |id: i64, caption: String| json!({"chat_id": 7, "message_id": id, "caption": caption});
    let media = |id: i64, url: String| {
        json!({"chat_id": 7, "message_id": id,
               "media": {"type": "photo", "media": url, "caption": "page 3"}})
    };
    for (method, body, description) in [
        (
            "editMessageCaption",
            caption(text, "x".into()),
            descriptions::NO_CAPTION_TO_EDIT,
        ),
        (
            "editMessageMedia",
            media(text, posters.poster("b")),
            descriptions::NO_MEDIA_TO_EDIT,
        ),
        (
            "editMessageCaption",
            caption(photo, "字".repeat(1025)),
            descriptions::CAPTION_TOO_LONG,
        ),
        (
            "editMessageCaption",
            caption(photo, "page 1".into()),
            descriptions::NOT_MODIFIED,
        ),
        (
            "editMessageMedia",
            media(photo, posters.missing("c")),
            descriptions::PHOTO_URL_FAILED,
        ),
        (
            "deleteMessage",
            json!({"chat_id": 7, "message_id": 999}),
            descriptions::MESSAGE_TO_DELETE_NOT_FOUND,
        ),
    ] {
        let (status, answer) = post(&sim, method, body).await;
        assert_eq!(
            (status, answer["description"].as_str()),
            (400, Some(description)),
            "{method}"
        );
    }

    let (status, edited) = post(&sim, "editMessageCaption", caption(photo, "page 2".into())).await;
    assert_eq!(status, 200);
    assert_eq!(edited["result"]["caption"], "page 2");
    assert!(edited["result"]["edit_date"].is_i64());
    let (status, _) = post(&sim, "editMessageMedia", media(photo, posters.poster("b"))).await;
    assert_eq!(status, 200);
    let now = sim.received(7)[0].clone();
    assert_eq!(
        (now.photo, now.text),
        (Some(posters.poster("b")), "page 3".to_string())
    );

    let (status, answer) = post(
        &sim,
        "deleteMessage",
        json!({"chat_id": 7, "message_id": text}),
    )
    .await;
    assert_eq!((status, answer["result"].clone()), (200, json!(true)));
    let (_, again) = post(
        &sim,
        "deleteMessage",
        json!({"chat_id": 7, "message_id": text}),
    )
    .await;
    assert_eq!(
        again["description"],
        descriptions::MESSAGE_TO_DELETE_NOT_FOUND
    );
    assert_eq!(sim.deleted(), [(7, text)]);
    assert_eq!(
        sim.received(7).len(),
        1,
        "the photo stays, the text is gone"
    );
}

#[tokio::test]
async fn a_webhook_blocks_get_updates_until_deleted() {
    let sim = TelegramSim::start().await.unwrap();
    sim.push_update(text_update(1, 1, "x"));
    let (status, set) = post(
        &sim,
        "setWebhook",
        json!({"url": "https://bot.example.org/hook", "secret_token": "s", "max_connections": 5,
               "allowed_updates": ["message"]}),
    )
    .await;
    assert_eq!(
        (status, set["description"].as_str()),
        (200, Some("Webhook was set"))
    );
    let (_, info) = post(&sim, "getWebhookInfo", json!({})).await;
    assert_eq!(
        info["result"],
        json!({"url": "https://bot.example.org/hook", "has_custom_certificate": false,
               "pending_update_count": 1, "max_connections": 5, "allowed_updates": ["message"]})
    );
    let (status, body) = post(&sim, "getUpdates", json!({})).await;
    assert_eq!(
        (status, body["description"].as_str()),
        (409, Some(descriptions::WEBHOOK_ACTIVE))
    );
    let (status, http) = post(&sim, "setWebhook", json!({"url": "http://insecure"})).await;
    assert_eq!(status, 400, "{http}");
    let (_, deleted) = post(&sim, "deleteWebhook", json!({"drop_pending_updates": true})).await;
    assert_eq!(deleted["description"], "Webhook was deleted");
    let (status, body) = post(&sim, "getUpdates", json!({})).await;
    assert_eq!(
        (status, body["result"].clone()),
        (200, json!([])),
        "pending updates dropped"
    );
    let (_, info) = post(&sim, "getWebhookInfo", json!({})).await;
    assert_eq!(
        info["result"],
        json!({"url": "", "has_custom_certificate": false, "pending_update_count": 0})
    );
}

#[tokio::test]
async fn my_commands_are_validated_and_kept() {
    let sim = TelegramSim::start().await.unwrap();
    let commands = json!([{"command": "search", "description": "Search"}]);
    assert_eq!(
        post(&sim, "setMyCommands", json!({"commands": commands}))
            .await
            .0,
        200
    );
    let (_, got) = post(&sim, "getMyCommands", json!({})).await;
    assert_eq!(got["result"], commands);
    let bad = json!({"commands": [{"command": "Bad-Name", "description": "x"}]});
    let (status, body) = post(&sim, "setMyCommands", bad).await;
    assert_eq!(
        (status, body["description"].as_str()),
        (400, Some(descriptions::BOT_COMMAND_INVALID))
    );
}

#[tokio::test]
async fn faults_are_consumed_in_order_and_look_like_the_real_failures() {
    let sim = TelegramSim::start().await.unwrap();
    let api = api(&sim);
    let send = |text: &'static str| {
        let api = api.clone();
        async move {
            api.call::<Value>("sendMessage", &json!({"chat_id": 5, "text": text}), T)
                .await
        }
    };
    sim.fail_next("SENDMESSAGE", Fault::RetryAfter(7));
    sim.fail_next("sendMessage", Fault::ServerError(502));
    sim.fail_next(
        "sendMessage",
        Fault::Forbidden(descriptions::BOT_BLOCKED.into()),
    );
    sim.fail_next("sendMessage", Fault::Drop);
    sim.fail_next("sendMessage", Fault::DropAfter);
    sim.fail_next("sendMessage", Fault::Delay(Duration::from_millis(300)));

    assert!(matches!(send("1").await, Err(ApiError::RetryAfter(d)) if d == Duration::from_secs(7)));
    assert_eq!(
        sim.calls()[0].outcome,
        Outcome::Answered {
            status: 429,
            body: Some(json!({"ok": false, "error_code": 429,
                "description": "Too Many Requests: retry after 7",
                "parameters": {"retry_after": 7}})),
        }
    );
    match send("2").await {
        Err(ApiError::Network(m)) => assert!(m.contains("502"), "{m}"),
        other => panic!("a proxy's HTML page is a network failure, got {other:?}"),
    }
    match send("3").await {
        Err(ApiError::Api { code, description }) => {
            assert_eq!(
                (code, description.as_str()),
                (403, descriptions::BOT_BLOCKED)
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(send("4").await, Err(ApiError::Network(_))),
        "dropped before the effect"
    );
    assert!(
        matches!(send("5").await, Err(ApiError::Network(_))),
        "dropped after the effect"
    );
    let started = std::time::Instant::now();
    let sent = send("6").await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(sent["text"], "6");
    // Only the call dropped after its effect and the last one sent anything.
    let texts: Vec<_> = sim.sent().into_iter().map(|m| m.text).collect();
    assert_eq!(texts, ["5", "6"]);
    assert_eq!(sim.count("sendMessage"), 6);
}

#[tokio::test]
async fn a_poll_whose_client_went_away_stops_waiting() {
    let sim = TelegramSim::start().await.unwrap();
    let api = api(&sim);
    let poll = tokio::spawn(async move {
        api.call::<Vec<Value>>("getUpdates", &json!({"timeout": 30}), T * 4)
            .await
    });
    sim.wait_for(T, |o| o.polls_waiting() == 1).await.unwrap();
    // The client gives up (a process shutting down drops its request the same way).
    poll.abort();
    sim.wait_for(T, |o| o.polls_waiting() == 0).await.unwrap();
}
