//! Issue 43, "Ask for access from the chat" (`household.access_requests`): a stranger's answer
//! with their id and an Ask button, one card per admin, the first admin's tap deciding once
//! (a grant), every card edited, the person told once; and what must grant nothing: forged and
//! replayed taps, non-admins' taps, a decided request, and 10,000 strangers pressing Ask.

use std::collections::BTreeMap;

use std::time::Duration;

use futures::StreamExt as _;
use oncebot::ingress::Ingress;
use oncebot::moviepilot::Dialect;
use oncebot_tools::redis_server::{Persistence, RedisServer};
use oncebot_tools::sim::telegram::StoredMessage;
use redis::AsyncCommands as _;
use serde_json::{Value, json};

use crate::grants::{button, message_in};
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, MALLORY, Store, eventually, private_text, tap_answer};

/// Not on the allow-list, mapped to nobody: a user once anyone is mapped.
const CAROL: i64 = 1003;

/// A tap by `user` (who calls themselves `first_name`, `@username`) on `data` under `message`.
fn tap_as(
    update_id: i64,
    user: i64,
    names: (&str, &str),
    message: &StoredMessage,
    data: &str,
) -> Value {
    json!({
        "update_id": update_id,
        "callback_query": {
            "id": format!("{update_id}{user}"),
            "from": {"id": user, "is_bot": false, "first_name": names.0, "username": names.1},
            "chat_instance": "-1",
            "message": {
                "message_id": message.message_id,
                "chat": {"id": message.chat_id, "type": "private"},
                "date": 1_767_225_600,
            },
            "data": data,
        }
    })
}

/// The grants as stored: Telegram id → `<role>:<by>:<at>`.
async fn grants(store: &Store) -> BTreeMap<String, String> {
    store
        .conn()
        .await
        .hgetall(store.keys.users_granted())
        .await
        .unwrap()
}

/// A long stream's entries, oldest first, read 500 at a time (one XRANGE of all would outlast
/// the connection's response timeout).
async fn stream_in_pages(store: &Store, key: &str) -> Vec<BTreeMap<String, String>> {
    let mut conn = store.conn().await;
    let mut out = Vec::new();
    let mut from = "-".to_string();
    loop {
        let page: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
            .arg(key)
            .arg(&from)
            .arg("+")
            .arg("COUNT")
            .arg(500)
            .query_async(&mut conn)
            .await
            .unwrap();
        let Some((last, _)) = page.last() else {
            return out;
        };
        from = format!("({last}");
        out.extend(page.into_iter().map(|(_, f)| f.into_iter().collect()));
    }
}

/// A rig whose admins are Alice and Bob (the setting), with Carol allowed as a user and
/// strangers asking for access.
async fn household() -> Rig {
    Rig::with(
        Dialect::V2,
        &[
            ("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1001,1002,1003"),
            ("ONCEBOT__TELEGRAM__USERS", "1001=:admin,1002=:admin"),
            ("ONCEBOT__HOUSEHOLD__ACCESS_REQUESTS", "true"),
        ],
    )
    .await
}

/// Mallory writes, is answered with her id and the Ask button, and taps it: each admin gets a
/// card. The cards, Alice's then Bob's.
async fn mallory_asks(rig: &Rig) -> (StoredMessage, StoredMessage) {
    rig.post(&private_text(1, MALLORY, "/start")).await;
    let offer = message_in(rig, MALLORY, "Your Telegram id: 6666").await;
    let ask = button(&offer, "Ask for access");
    assert!(ask.starts_with("a:"), "{ask}");
    // Her name as she chose it, with a bidi override the card must not carry.
    rig.post(&tap_as(
        2,
        MALLORY,
        ("Mal\u{202e}lory", "mallory_x"),
        &offer,
        &ask,
    ))
    .await;
    message_in(rig, MALLORY, "Your request went to the admins").await;
    let alice = message_in(rig, ALICE, "Telegram id: 6666").await;
    let bob = message_in(rig, BOB, "Telegram id: 6666").await;
    assert!(rig.tg.received(CAROL).is_empty(), "a user gets no card");
    (alice, bob)
}

/// The first admin's tap decides, once: one grant, both cards edited to say who decided what,
/// the person told once; the second admin's tap is told it is decided and changes nothing.
#[tokio::test]
async fn an_access_request_is_decided_once_by_the_first_of_two_admins() {
    let rig = household().await;
    let _bot = rig.start_pipeline().await;
    let (alice, bob) = mallory_asks(&rig).await;
    assert!(
        alice
            .text
            .starts_with("Someone asks to use the bot\nTelegram id: 6666"),
        "{}",
        alice.text
    );
    assert!(
        alice.text.contains("Name (their own choice): Mallory"),
        "{}",
        alice.text
    );
    assert!(alice.text.contains("@mallory_x"), "{}", alice.text);
    for label in ["Allow: viewer", "Allow: user", "Allow: admin", "Decline"] {
        button(&bob, label);
    }

    let first = tap_as(
        10,
        ALICE,
        ("Alice", "alice"),
        &alice,
        &button(&alice, "Allow: user"),
    );
    rig.post(&first).await;
    assert!(
        tap_answer(&rig, &first)
            .await
            .starts_with("Done: ✅ Allowed as user by Alice (1001)")
    );
    let told = message_in(&rig, MALLORY, "Your request was accepted").await;
    assert!(told.text.contains("role: user"), "{}", told.text);
    for card in [&alice, &bob] {
        eventually("the card edited", RECOVERY_DEADLINE, || {
            let now = rig
                .tg
                .received(card.chat_id)
                .into_iter()
                .find(|m| m.message_id == card.message_id);
            async move {
                now.filter(|c| c.text.ends_with("✅ Allowed as user by Alice (1001)"))
                    .filter(|c| c.reply_markup.is_none())
            }
        })
        .await;
    }
    let second = tap_as(11, BOB, ("Bob", "bob"), &bob, &button(&bob, "Allow: admin"));
    rig.post(&second).await;
    let said = tap_answer(&rig, &second).await;
    assert!(
        said.starts_with("Already decided: ✅ Allowed as user by Alice"),
        "{said}"
    );
    let granted = grants(&rig.store).await;
    assert_eq!(granted.len(), 1, "{granted:?}");
    assert!(granted["6666"].starts_with("user:1001:"), "{granted:?}");
    assert_eq!(
        rig.tg
            .received(MALLORY)
            .iter()
            .filter(|m| m.text.contains("accepted"))
            .count(),
        1,
        "told once"
    );
    // She may use the bot now, as the grant says.
    let next = std::sync::atomic::AtomicI64::new(100);
    eventually("Mallory's /whoami answered", RECOVERY_DEADLINE, || async {
        let update_id = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        rig.post(&private_text(update_id, MALLORY, "/whoami")).await;
        rig.tg
            .received(MALLORY)
            .iter()
            .find(|m| m.text.contains("Role: user"))
            .map(|_| ())
    })
    .await;
}

/// A tap by a non-admin, a forged token, a replayed update, a card's token sent as an ordinary
/// button, the person tapping a card: none grants. A decline then decides; the declined person is
/// not offered the button again.
#[tokio::test]
async fn forged_replayed_and_non_admin_taps_grant_nothing() {
    let rig = household().await;
    let _bot = rig.start_pipeline().await;
    let (alice, _bob) = mallory_asks(&rig).await;
    let allow = button(&alice, "Allow: admin");

    let carol = tap_as(20, CAROL, ("Carol", "carol"), &alice, &allow);
    rig.post(&carol).await;
    assert_eq!(
        tap_answer(&rig, &carol).await,
        "Only an admin can decide a request."
    );
    let mallory = tap_as(21, MALLORY, ("Mallory", "m"), &alice, &allow);
    rig.post(&mallory).await;
    assert_eq!(
        tap_answer(&rig, &mallory).await,
        "Only an admin can decide a request."
    );
    let forged = tap_as(
        22,
        ALICE,
        ("Alice", "a"),
        &alice,
        &format!("a:{}", "0".repeat(32)),
    );
    rig.post(&forged).await;
    assert_eq!(tap_answer(&rig, &forged).await, "This request has expired.");
    // The card's token as tap.lua's: nothing is made of it.
    let as_run = tap_as(
        23,
        ALICE,
        ("Alice", "a"),
        &alice,
        &allow.replacen("a:", "t:", 1),
    );
    rig.post(&as_run).await;
    tap_answer(&rig, &as_run).await;
    assert!(
        rig.store.job_ids().await.is_empty(),
        "no job of an access button"
    );
    // Bob's tap in Alice's chat: his own chat is not the card's.
    let foreign = tap_as(
        24,
        BOB,
        ("Bob", "b"),
        &StoredMessage {
            chat_id: BOB,
            ..alice.clone()
        },
        &allow,
    );
    rig.post(&foreign).await;
    assert_eq!(
        tap_answer(&rig, &foreign).await,
        "This button is not for you."
    );
    assert!(grants(&rig.store).await.is_empty());

    let decline = tap_as(
        25,
        ALICE,
        ("Alice", "a"),
        &alice,
        &button(&alice, "Decline"),
    );
    rig.post(&decline).await;
    message_in(&rig, MALLORY, "Your request was declined.").await;
    // The same update again (Telegram redelivering): nothing more.
    rig.post(&decline).await;
    rig.post(&tap_as(26, ALICE, ("Alice", "a"), &alice, &allow))
        .await;
    let after = tap_as(27, ALICE, ("Alice", "a"), &alice, &allow);
    rig.post(&after).await;
    assert!(
        tap_answer(&rig, &after)
            .await
            .starts_with("Already decided: ❌ Declined by Alice")
    );
    assert!(grants(&rig.store).await.is_empty());
    let calls = |u: &Value| {
        let q = u["callback_query"]["id"].clone();
        rig.tg
            .calls()
            .iter()
            .filter(|c| c.method == "answerCallbackQuery" && c.params["callback_query_id"] == q)
            .count()
    };
    assert_eq!(calls(&decline), 1, "a replayed update is answered once");

    // Declined within the window: answered without the button, once an hour.
    rig.store
        .conn()
        .await
        .del::<_, ()>(rig.store.command_keys().await)
        .await
        .unwrap();
    rig.post(&private_text(30, MALLORY, "hello")).await;
    let again = message_in(&rig, MALLORY, "you cannot ask again for now").await;
    assert!(again.reply_markup.is_none(), "{again:?}");
}

/// 10,000 strangers write and press Ask at once (the ingress's own path, in this process):
/// at most the cap of requests, no grant, and every key they leave expires or is bounded.
#[tokio::test]
async fn ten_thousand_strangers_asking_leave_at_most_the_cap_and_bounded_keys() {
    const STRANGERS: i64 = 10_000;
    let redis = RedisServer::start(Persistence::None).unwrap();
    let settings = oncebot::config::Settings::load_from(
        None,
        [
            ("ONCEBOT__REDIS__URL", redis.url()),
            ("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1001".into()),
            ("ONCEBOT__TELEGRAM__USERS", "1001=:admin".into()),
            ("ONCEBOT__TELEGRAM__LOCALE", "en".into()),
            ("ONCEBOT__HOUSEHOLD__ACCESS_REQUESTS", "true".into()),
        ]
        .map(|(k, v)| (k.to_string(), v)),
    )
    .unwrap();
    let ledger = oncebot::ledger::Ledger::connect(
        &settings,
        oncebot::i18n::Texts::new(settings.telegram.locale).for_ledger(),
    )
    .unwrap();
    ledger.prepare().await.unwrap();
    let ingress = Ingress::new(&settings, ledger);
    let store = Store::new(&redis.url(), "oncebot");
    let update =
        |v: Value| -> oncebot::telegram::types::Update { serde_json::from_value(v).unwrap() };
    let handle = |v: Value| {
        let ingress = ingress.clone();
        async move { ingress.handle(&update(v)).await.unwrap() }
    };
    futures::stream::iter(0..STRANGERS)
        .map(|i| handle(private_text(i + 1, 100_000 + i, "/start")))
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    // Each stranger's Ask button, from their answer on the replies stream.
    let mut asks = Vec::new();
    for entry in stream_in_pages(&store, &store.keys.replies_stream()).await {
        let chat: i64 = entry["chat_id"].parse().unwrap();
        let data = crate::support::buttons(&entry)[0].1.clone();
        let offer = StoredMessage {
            chat_id: chat,
            message_id: 1,
            text: String::new(),
            photo: None,
            reply_markup: None,
            edits: 0,
        };
        asks.push(tap_as(
            20_000 + chat,
            chat,
            ("Stranger", "s"),
            &offer,
            &data,
        ));
    }
    assert_eq!(asks.len(), STRANGERS as usize);
    futures::stream::iter(asks)
        .map(handle)
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;

    let mut conn = store.conn().await;
    let pending: usize = conn.zcard(store.keys.access_pending()).await.unwrap();
    assert_eq!(pending, 20, "the cap");
    let granted: usize = conn.hlen(store.keys.users_granted()).await.unwrap();
    assert_eq!(granted, 0);
    let mut requests = 0;
    for key in store.every_key().await {
        let Some(rest) = key.strip_prefix(store.keys.base()) else {
            continue;
        };
        let kind = rest.split(':').next().unwrap();
        match kind {
            "stream" | "seq" => {}
            "pending" => assert_eq!(key, store.keys.access_pending()),
            "access" | "token" | "cmd" | "updates" => {
                let ttl: i64 = conn.ttl(&key).await.unwrap();
                assert!(ttl > 0, "{key} must expire (TTL {ttl})");
                requests += usize::from(kind == "access");
            }
            _ => panic!("{key}: a key this test does not know"),
        }
    }
    assert_eq!(requests, 20);
    // The admin got one card per request, no more.
    let cards = stream_in_pages(&store, &store.keys.replies_stream())
        .await
        .into_iter()
        .filter(|e| e["kind"] == "access_card" && e["chat_id"] == "1001")
        .count();
    assert_eq!(cards, 20);
}

/// A request not decided within its window expires: its cards say so (the card whose delivery
/// record names its message is edited), it is no longer pending, a tap on its card grants
/// nothing, and the person may ask again. (The window here is a second, below what the settings
/// check allows, on the ingress's own path in this process.)
#[tokio::test]
async fn an_undecided_request_expires_and_its_cards_say_so() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let settings = oncebot::config::Settings::load_from(
        None,
        [
            ("ONCEBOT__REDIS__URL", redis.url()),
            ("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1001".into()),
            ("ONCEBOT__TELEGRAM__USERS", "1001=:admin".into()),
            ("ONCEBOT__TELEGRAM__LOCALE", "en".into()),
            ("ONCEBOT__HOUSEHOLD__ACCESS_REQUESTS", "true".into()),
            ("ONCEBOT__HOUSEHOLD__ACCESS_REQUEST_WINDOW_SECS", "1".into()),
        ]
        .map(|(k, v)| (k.to_string(), v)),
    )
    .unwrap();
    let ledger = oncebot::ledger::Ledger::connect(
        &settings,
        oncebot::i18n::Texts::new(settings.telegram.locale).for_ledger(),
    )
    .unwrap();
    ledger.prepare().await.unwrap();
    let ingress = Ingress::new(&settings, ledger);
    let store = Store::new(&redis.url(), "oncebot");
    let handle = |v: Value| {
        let ingress = ingress.clone();
        async move {
            let update: oncebot::telegram::types::Update = serde_json::from_value(v).unwrap();
            ingress.handle(&update).await.unwrap()
        }
    };
    let replies = store.keys.replies_stream();
    let entries = || stream_in_pages(&store, &replies);
    let message = |chat: i64, id: i64| StoredMessage {
        chat_id: chat,
        message_id: id,
        text: String::new(),
        photo: None,
        reply_markup: None,
        edits: 0,
    };
    handle(private_text(1, MALLORY, "/start")).await;
    let ask = crate::support::buttons(&entries().await[0])[0].1.clone();
    handle(tap_as(
        2,
        MALLORY,
        ("Mallory", "m"),
        &message(MALLORY, 9),
        &ask,
    ))
    .await;
    let card = entries()
        .await
        .into_iter()
        .find(|e| e["kind"] == "access_card")
        .unwrap();
    let allow = crate::support::buttons(&card)[1].1.clone();
    // The dispatcher sent the card as message 77 (its delivery record says so).
    let mut conn = store.conn().await;
    let ids: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
        .arg(store.keys.replies_stream())
        .arg("-")
        .arg("+")
        .query_async(&mut conn)
        .await
        .unwrap();
    let entry = &ids
        .iter()
        .find(|(_, f)| f.iter().any(|(k, v)| k == "kind" && v == "access_card"))
        .unwrap()
        .0;
    conn.hset::<_, _, _, ()>(store.keys.reply(entry), "message_id", "77")
        .await
        .unwrap();

    eventually("the request to expire", Duration::from_secs(10), || async {
        ingress.expire_access_requests().await.unwrap();
        entries()
            .await
            .into_iter()
            .find(|e| e.get("edit_message_id").map(String::as_str) == Some("77"))
    })
    .await
    .get("text")
    .filter(|t| t.ends_with("⌛ Expired without a decision"))
    .expect("the card says it expired");
    let pending: usize = conn.zcard(store.keys.access_pending()).await.unwrap();
    assert_eq!(pending, 0);
    handle(tap_as(
        3,
        ALICE,
        ("Alice", "a"),
        &message(ALICE, 77),
        &allow,
    ))
    .await;
    let granted: usize = conn.hlen(store.keys.users_granted()).await.unwrap();
    assert_eq!(granted, 0, "an expired request grants nothing");
    // She may ask again: the next offer (after the hour's answer) has the button.
    conn.del::<_, ()>(store.command_keys().await).await.unwrap();
    handle(private_text(4, MALLORY, "hello")).await;
    let offers = entries()
        .await
        .into_iter()
        .filter(|e| e["chat_id"] == MALLORY.to_string() && e.contains_key("markup"))
        .count();
    assert_eq!(offers, 2);
}
