//! One-time buttons (the seed's scenario 3): Confirm / Cancel under `/unsubscribe`, Subscribe under
//! search results, the season choice, and the review buttons admin chats get for a job that
//! needs a person.
//!
//! The webhook tests run ingress alone, so every state change is the script under test's and is
//! checked with `checked_transitions`; the end-to-end tests run ingress and a worker as a real
//! process against the MoviePilot simulator, where the worker changes job states concurrently,
//! so only the taps that cannot race it (review decisions) are wrapped. Every test reads Redis
//! itself: the jobs, the token keys, and both streams a tap writes (callbacks, replies).

use crate::support::{buttons, deliver, hand_over};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use oncebot::commands::Command;
use oncebot::ingress::Handled;
use oncebot::ledger::{
    Admission, AdmissionAction, Admitted, AttemptLimits, ClaimTexts, Claimed, JobState, Owner, Tap,
    Tapped, TokenAction, TokenGroup,
};
use oncebot::moviepilot::{Dialect, MediaKind};
use oncebot_tools::sim::moviepilot::{Fault, routes};
use oncebot_tools::sim::telegram::callback_update;
use redis::AsyncCommands as _;
use serde_json::{Value, json};

use crate::support::app::{TestApp, app, spawn_app, spawn_ledger};
use crate::support::rig::Rig;
use crate::support::{
    ALICE, BOB, DEADLINE, GROUP, MALLORY, Store, checked_transitions, eventually, message_id,
    private_text,
};
use crate::worker::THREE_BODY;

/// Dune (2021), a movie the MoviePilot simulator knows.
const DUNE: u64 = 438631;

/// The id Telegram gave the bot's message that carries the buttons (the dispatcher sent it).
const BOT_MESSAGE: i64 = 90_001;
/// Long enough for a job to go through a worker process on a loaded machine.
const JOB_DEADLINE: Duration = Duration::from_secs(20);

/// A tap on the button with `data` under message `message` in `chat`, by `user`.
fn tap(update_id: i64, chat: i64, user: i64, message: i64, data: &str) -> Value {
    let mut update = callback_update(chat, user, message, data);
    update["update_id"] = json!(update_id);
    update
}

fn query_id(update: &Value) -> String {
    update["callback_query"]["id"].as_str().unwrap().to_string()
}

/// The callback data of the button whose text starts with `text`.
fn button(reply: &BTreeMap<String, String>, text: &str) -> String {
    buttons(reply)
        .into_iter()
        .find(|(t, _)| t.starts_with(text))
        .unwrap_or_else(|| panic!("no button {text:?} in {reply:?}"))
        .1
}

async fn callbacks(store: &Store) -> Vec<BTreeMap<String, String>> {
    store.stream(&store.keys.callbacks_stream()).await
}

/// The answer given to the callback query of `update`: exactly one.
async fn answer_to(store: &Store, update: &Value) -> BTreeMap<String, String> {
    let id = query_id(update);
    let answers: Vec<_> = callbacks(store)
        .await
        .into_iter()
        .filter(|a| a["callback_query_id"] == id)
        .collect();
    assert_eq!(
        answers.len(),
        1,
        "one answer per callback query: {answers:?}"
    );
    answers.into_iter().next().unwrap()
}

/// The replies entries that remove the buttons of a message.
async fn clears(store: &Store) -> Vec<BTreeMap<String, String>> {
    store
        .replies()
        .await
        .into_iter()
        .filter(|r| r.get("op").map(String::as_str) == Some("clear_markup"))
        .collect()
}

async fn token_keys(store: &Store) -> BTreeSet<String> {
    let mut conn = store.conn().await;
    let keys: Vec<String> = conn
        .keys(format!("{}*", store.keys.token_prefix()))
        .await
        .unwrap();
    keys.into_iter().collect()
}

fn token_of(data: &str) -> &str {
    data.strip_prefix("t:").unwrap()
}

/// POSTs `update` to the webhook, checking the job-state changes it makes.
async fn post(app: &TestApp, script: &str, update: &Value) {
    checked_transitions(&app.store, script, app.post_ok(update)).await;
}

/// The Confirm button's arguments for subscription #7 to 三体 season 1: the id and its media.
const UNSUBSCRIBE_ARGS: &str = "7 tmdb:108545 S1";

/// The Confirm / Cancel question for subscription #7, asked of ALICE in `chat` (in reply to
/// message `message_id(update_id)`), with the texts of `zh` or English; returns its reply.
///
/// In the service the question is the reply of the lookup job `/unsubscribe 7` makes (see the
/// end-to-end tests below). These tests run ingress alone, so the question is admitted with the
/// ledger's question-with-buttons admission (enqueue.lua), which stores the same kind of token
/// group: what a tap meets is the same.
async fn ask_in(app: &TestApp, update_id: i64, chat: i64, zh: bool) -> BTreeMap<String, String> {
    let owner = Owner::User {
        chat_id: chat,
        user_id: ALICE,
    };
    let (prompt, yes, no) = if zh {
        (
            "确认取消订阅 #7「三体」 第 1 季？此操作不可撤销。",
            "确认",
            "取消",
        )
    } else {
        (
            "Cancel subscription #7 to \"三体\" season 1? This cannot be undone.",
            "Confirm",
            "Cancel",
        )
    };
    let window = Duration::from_secs(60);
    let reply_to = Some(message_id(update_id));
    let mut group = TokenGroup::new(Duration::from_secs(app.settings.telegram.confirm_ttl_secs));
    let run = TokenAction::Run(Command::Unsubscribe.button(owner, None, UNSUBSCRIBE_ARGS, window));
    let confirm = group.add(owner, yes, run, reply_to);
    let cancel = group.add(owner, no, TokenAction::Cancel, reply_to);
    let markup = oncebot::telegram::keyboard::Keyboard::new()
        .row(vec![(yes.into(), confirm), (no.into(), cancel)])
        .to_json();
    let admission = Admission {
        update_id,
        chat_id: chat,
        user_id: ALICE,
        message_id: reply_to,
        thread_id: None,
        requester: None,
        role: oncebot::vocabulary::Role::Admin,
        action: AdmissionAction::Confirm {
            job: Command::Unsubscribe.job(
                oncebot::commands::Asker::of(chat, ALICE, None),
                UNSUBSCRIBE_ARGS,
                window,
            ),
            prompt: prompt.into(),
            buttons: group,
            markup,
        },
    };
    let before = app.store.replies().await.len();
    let ledger = app.ingress().ledger().clone();
    let admitted = checked_transitions(&app.store, "enqueue.lua", ledger.admit(&admission))
        .await
        .unwrap();
    assert_eq!(admitted, Admitted::Confirming);
    let replies = app.store.replies().await;
    assert_eq!(replies.len(), before + 1, "{replies:?}");
    replies.last().unwrap().clone()
}

/// [`ask_in`] ALICE's private chat, in English.
async fn ask_to_unsubscribe(app: &TestApp, update_id: i64) -> BTreeMap<String, String> {
    ask_in(app, update_id, ALICE, false).await
}

// --- Confirm / Cancel -------------------------------------------------------------------------

#[tokio::test]
async fn unsubscribe_asks_with_two_buttons_and_makes_no_job_yet() {
    let app = spawn_app().await;
    let s = &app.store;
    let question = ask_to_unsubscribe(&app, 1).await;

    assert_eq!(question["kind"], "confirm");
    assert_eq!(question["chat_id"], ALICE.to_string());
    assert_eq!(question["reply_to"], message_id(1).to_string());
    assert_eq!(question["job_id"], "");
    assert_eq!(
        question["text"],
        "Cancel subscription #7 to \"三体\" season 1? This cannot be undone."
    );
    let offered = buttons(&question);
    let labels: Vec<_> = offered.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(labels, ["Confirm", "Cancel"]);
    for (_, data) in &offered {
        assert!(data.len() <= 64, "{data}");
        let token = token_of(data);
        assert_eq!(token.len(), 32, "128 bits in hex: {token}");
    }
    assert_ne!(offered[0].1, offered[1].1);

    assert!(s.job_ids().await.is_empty());
    assert!(s.jobs_on_stream().await.is_empty());
    assert_eq!(s.update(1).await.as_deref(), Some("-"));

    // The tokens are bound to ALICE in her chat and expire with telegram.confirm_ttl_secs.
    let mut conn = s.conn().await;
    let confirm: BTreeMap<String, String> = conn
        .hgetall(s.keys.token(token_of(&offered[0].1)))
        .await
        .unwrap();
    assert_eq!(confirm["chat_id"], ALICE.to_string());
    assert_eq!(confirm["user_id"], ALICE.to_string());
    assert_eq!(confirm["action"], "run");
    assert_eq!(confirm["command"], "unsubscribe");
    assert_eq!(confirm["args"], UNSUBSCRIBE_ARGS);
    let ttl: i64 = conn
        .ttl(s.keys.token(token_of(&offered[0].1)))
        .await
        .unwrap();
    assert!((590..=600).contains(&ttl), "TTL {ttl}");
    // The group has no key until a tap uses it: the tokens alone are the open group.
    let group_exists: bool = conn
        .exists(s.keys.token_group(&confirm["group"]))
        .await
        .unwrap();
    assert!(!group_exists, "no group key before a tap");
}

/// Stores `group` with include/tokens.lua's `create_tokens`, the function complete.lua stores a
/// reply's buttons with (`ledger` keeps no call of its own for it).
async fn store_token_group(
    conn: &mut redis::aio::MultiplexedConnection,
    store: &Store,
    group: &TokenGroup,
) {
    let script = redis::Script::new(concat!(
        include_str!("../../lua/include/common.lua"),
        "\n",
        include_str!("../../lua/include/tokens.lua"),
        "\ncreate_tokens(KEYS[1], KEYS[2], cjson.decode(ARGV[1]), now_ms())\nreturn 'ok'\n",
    ));
    let _: String = script
        .key(store.keys.token_prefix())
        .key(store.keys.token_group_prefix())
        .arg(group.spec().to_string())
        .invoke_async(conn)
        .await
        .unwrap();
}

/// A token HASH stores only the fields that have a value; a tap reads a missing one as empty,
/// so a button whose job has no arguments and replies to no message still makes its job.
#[tokio::test]
async fn a_token_stores_no_empty_field_and_its_tap_still_makes_the_job() {
    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;
    let owner = Owner::User {
        chat_id: ALICE,
        user_id: ALICE,
    };
    let mut group = TokenGroup::new(Duration::from_secs(600));
    let run = group.add(
        owner,
        "Run",
        TokenAction::Run(Command::Subscriptions.button(owner, None, "", Duration::from_secs(60))),
        None,
    );
    let cancel = group.add(owner, "Cancel", TokenAction::Cancel, None);
    let mut conn = store.conn().await;
    store_token_group(&mut conn, &store, &group).await;
    let mut stored = Vec::new();
    for data in [&run, &cancel] {
        let token: BTreeMap<String, String> = conn
            .hgetall(store.keys.token(token_of(data)))
            .await
            .unwrap();
        assert!(token.values().all(|v| !v.is_empty()), "{token:?}");
        stored.push(token);
    }
    for absent in [
        "args",
        "reply_to",
        "job_id",
        "decision",
        "scope",
        "created_at",
    ] {
        assert!(!stored[0].contains_key(absent), "{absent}: {:?}", stored[0]);
    }
    assert_eq!(stored[0]["group"], group.id);
    assert_eq!(group.id.len(), 16, "a group id is 64 bits in hex");
    let group_row: BTreeMap<String, String> = conn
        .hgetall(store.keys.token_group(&group.id))
        .await
        .unwrap();
    assert!(
        group_row.is_empty(),
        "no group key before a tap: {group_row:?}"
    );
    assert_eq!(stored[0]["command"], "subscriptions");
    assert_eq!(stored[0]["window_ms"], "60000");
    for absent in [
        "command",
        "args",
        "idem",
        "window_ms",
        "recovery",
        "reply_to",
    ] {
        assert!(!stored[1].contains_key(absent), "{absent}: {:?}", stored[1]);
    }
    assert_eq!(stored[1]["action"], "cancel");

    let tap = Tap {
        update_id: 1,
        callback_query_id: "q1".into(),
        user_id: ALICE,
        allowed: true,
        chat_id: Some(ALICE),
        message_id: Some(BOT_MESSAGE),
        thread_id: None,
        role: oncebot::vocabulary::Role::Admin,
        requester: None,
        token: Some(token_of(&run).to_string()),
        request: None,
        quota: None,
    };
    let tapped = checked_transitions(&store, "tap.lua", ledger.tap(&tap))
        .await
        .unwrap();
    assert_eq!(tapped, Tapped::New { job_id: 1 });
    let job = store.job(1).await;
    assert_eq!(job["command"], "subscriptions");
    assert_eq!(job["args"], "");
    assert_eq!(job["message_id"], "");
    assert_eq!(job["recovery"], stored[0]["recovery"]);
    assert_eq!(job["idempotency_key"], stored[0]["idem"]);
    assert_eq!(
        store
            .get(&store.keys.command(&stored[0]["idem"]))
            .await
            .as_deref(),
        Some("1"),
        "the button's duplicate window is open"
    );
}

/// The seed's scenario 3: the same confirmation button tapped twice.
#[tokio::test]
async fn the_same_confirm_button_tapped_twice_runs_one_job_and_the_second_tap_is_told() {
    let app = spawn_app().await;
    let s = &app.store;
    let question = ask_to_unsubscribe(&app, 1).await;
    let confirm = button(&question, "Confirm");

    let first = tap(2, ALICE, ALICE, BOT_MESSAGE, &confirm);
    post(&app, "tap.lua", &first).await;
    assert_eq!(s.jobs_on_stream().await, vec![1]);
    let job = s.job(1).await;
    assert_eq!(job["status"], "pending");
    assert_eq!(job["command"], "unsubscribe");
    assert_eq!(job["args"], UNSUBSCRIBE_ARGS);
    assert_eq!(job["chat_id"], ALICE.to_string());
    assert_eq!(job["user_id"], ALICE.to_string());
    assert_eq!(job["update_id"], "2");
    assert_eq!(job["recovery"], "verify");
    // Its result will answer the user's command, not the bot's question.
    assert_eq!(job["message_id"], message_id(1).to_string());
    assert_eq!(s.update(2).await.as_deref(), Some("1"));
    let answer = answer_to(s, &first).await;
    assert_eq!(answer["text"], "Received: job #1");
    assert_eq!(answer["show_alert"], "0");
    let cleared = clears(s).await;
    assert_eq!(cleared.len(), 1, "{cleared:?}");
    assert_eq!(cleared[0]["edit_message_id"], BOT_MESSAGE.to_string());
    assert_eq!(cleared[0]["chat_id"], ALICE.to_string());
    assert_eq!(cleared[0]["job_id"], "1");

    // A second tap on the same button: another update, another callback query.
    let second = tap(3, ALICE, ALICE, BOT_MESSAGE, &confirm);
    post(&app, "tap.lua", &second).await;
    assert_eq!(s.jobs_on_stream().await, vec![1]);
    assert_eq!(s.job_ids().await.len(), 1);
    assert_eq!(
        answer_to(s, &second).await["text"],
        "Already handled: job #1 queued"
    );
    assert_eq!(clears(s).await.len(), 1, "the buttons were already removed");

    // Its sibling is used too.
    let cancel = tap(4, ALICE, ALICE, BOT_MESSAGE, &button(&question, "Cancel"));
    post(&app, "tap.lua", &cancel).await;
    assert_eq!(s.job_ids().await.len(), 1);
    assert_eq!(
        answer_to(s, &cancel).await["text"],
        "Already handled: job #1 queued"
    );

    // Through the same decision path, the outcome is a value.
    let again = tap(5, ALICE, ALICE, BOT_MESSAGE, &confirm);
    let handled = app
        .ingress()
        .handle(&serde_json::from_value(again).unwrap())
        .await
        .unwrap();
    assert_eq!(
        handled,
        Handled::Tapped(Tapped::Used {
            job_id: Some(1),
            state: Some(JobState::Pending)
        })
    );
    assert_eq!(callbacks(s).await.len(), 4, "one answer per tap");
}

#[tokio::test]
async fn taps_at_the_same_instant_make_one_job() {
    let app = spawn_app().await;
    let s = &app.store;
    let question = ask_to_unsubscribe(&app, 1).await;
    let confirm = button(&question, "Confirm");
    let taps: Vec<Value> = (0..10)
        .map(|i| tap(100 + i, ALICE, ALICE, BOT_MESSAGE, &confirm))
        .collect();
    checked_transitions(
        s,
        "tap.lua",
        futures::future::join_all(taps.iter().map(|t| app.post_ok(t))),
    )
    .await;
    assert_eq!(s.jobs_on_stream().await, vec![1]);
    let mut texts: Vec<String> = callbacks(s)
        .await
        .into_iter()
        .map(|a| a["text"].clone())
        .collect();
    texts.sort();
    assert_eq!(texts.len(), 10);
    assert_eq!(texts.iter().filter(|t| *t == "Received: job #1").count(), 1);
    assert_eq!(
        texts
            .iter()
            .filter(|t| *t == "Already handled: job #1 queued")
            .count(),
        9
    );
}

#[tokio::test]
async fn an_expired_button_runs_nothing_and_says_so() {
    let app = app()
        .env("ONCEBOT__TELEGRAM__CONFIRM_TTL_SECS", "1")
        .spawn()
        .await;
    let s = &app.store;
    let question = ask_to_unsubscribe(&app, 1).await;
    let confirm = button(&question, "Confirm");
    assert_eq!(token_keys(s).await.len(), 2);

    // Wait for Redis to expire the tokens (active expiry or a lookup), not for a fixed time.
    eventually("the buttons' tokens to expire", DEADLINE, || async {
        let mut conn = s.conn().await;
        let exists: bool = conn.exists(s.keys.token(token_of(&confirm))).await.unwrap();
        (!exists).then_some(())
    })
    .await;

    let late = tap(2, ALICE, ALICE, BOT_MESSAGE, &confirm);
    post(&app, "tap.lua", &late).await;
    assert!(s.job_ids().await.is_empty());
    assert!(s.jobs_on_stream().await.is_empty());
    let answer = answer_to(s, &late).await;
    assert_eq!(
        answer["text"],
        "This button has expired; send the command again."
    );
    assert_eq!(answer["show_alert"], "1");
    // The stale buttons are taken off the message.
    let cleared = clears(s).await;
    assert_eq!(cleared.len(), 1);
    assert_eq!(cleared[0]["edit_message_id"], BOT_MESSAGE.to_string());
    assert_eq!(s.update(2).await.as_deref(), Some("-"));
}

#[tokio::test]
async fn another_users_tap_runs_nothing_and_the_owner_can_still_use_the_button() {
    let app = spawn_app().await;
    let s = &app.store;
    let question = ask_in(&app, 1, GROUP, false).await;
    assert_eq!(question["chat_id"], GROUP.to_string());
    let confirm = button(&question, "Confirm");

    // BOB is allowed to use the bot, but this is ALICE's button; MALLORY is not allowed at all;
    // ALICE's own tap from another chat (the data copied there) is not this button's chat.
    let bob = tap(2, GROUP, BOB, BOT_MESSAGE, &confirm);
    let mallory = tap(3, GROUP, MALLORY, BOT_MESSAGE, &confirm);
    let elsewhere = tap(4, ALICE, ALICE, BOT_MESSAGE, &confirm);
    for update in [&bob, &mallory, &elsewhere] {
        let before = token_keys(s).await;
        post(&app, "tap.lua", update).await;
        assert!(s.job_ids().await.is_empty());
        let answer = answer_to(s, update).await;
        assert_eq!(answer["text"], "This button is not for you.");
        assert_eq!(token_keys(s).await, before, "the token is not consumed");
    }
    assert!(clears(s).await.is_empty(), "the owner's buttons stay");

    let alice = tap(5, GROUP, ALICE, BOT_MESSAGE, &confirm);
    post(&app, "tap.lua", &alice).await;
    assert_eq!(s.jobs_on_stream().await, vec![1]);
    assert_eq!(s.job(1).await["chat_id"], GROUP.to_string());
    assert_eq!(answer_to(s, &alice).await["text"], "Received: job #1");
}

#[tokio::test]
async fn a_redelivered_callback_update_writes_nothing() {
    let app = spawn_app().await;
    let s = &app.store;
    let question = ask_to_unsubscribe(&app, 1).await;
    let first = tap(2, ALICE, ALICE, BOT_MESSAGE, &button(&question, "Confirm"));
    post(&app, "tap.lua", &first).await;

    let before = s.snapshot().await;
    post(&app, "tap.lua", &first).await;
    assert_eq!(s.snapshot().await, before, "a redelivery changes no key");
    let handled = app
        .ingress()
        .handle(&serde_json::from_value(first.clone()).unwrap())
        .await
        .unwrap();
    assert_eq!(
        handled,
        Handled::Tapped(Tapped::DuplicateUpdate {
            job_id: Some(1),
            state: Some(JobState::Pending)
        })
    );
    assert_eq!(s.snapshot().await, before);
    assert_eq!(callbacks(s).await.len(), 1);

    // A redelivered tap that made no job (an expired or foreign one) writes nothing either.
    let foreign = tap(3, ALICE, BOB, BOT_MESSAGE, &button(&question, "Confirm"));
    post(&app, "tap.lua", &foreign).await;
    let before = s.snapshot().await;
    post(&app, "tap.lua", &foreign).await;
    assert_eq!(s.snapshot().await, before);
}

#[tokio::test]
async fn cancel_runs_nothing_and_uses_the_confirm_button_too() {
    let app = spawn_app().await;
    let s = &app.store;
    let question = ask_to_unsubscribe(&app, 1).await;

    let cancel = tap(2, ALICE, ALICE, BOT_MESSAGE, &button(&question, "Cancel"));
    post(&app, "tap.lua", &cancel).await;
    assert_eq!(answer_to(s, &cancel).await["text"], "Cancelled.");
    assert_eq!(clears(s).await.len(), 1);

    let confirm = tap(3, ALICE, ALICE, BOT_MESSAGE, &button(&question, "Confirm"));
    post(&app, "tap.lua", &confirm).await;
    assert_eq!(answer_to(s, &confirm).await["text"], "Cancelled.");
    assert!(s.job_ids().await.is_empty());
    assert!(s.jobs_on_stream().await.is_empty());
    assert!(s.command_keys().await.is_empty(), "no window was opened");

    // Asking again gets new buttons.
    let again = ask_to_unsubscribe(&app, 4).await;
    assert_eq!(again["kind"], "confirm");
    assert_ne!(button(&again, "Confirm"), button(&question, "Confirm"));
}

#[tokio::test]
async fn a_confirmed_command_still_has_its_duplicate_window() {
    let app = spawn_app().await;
    let s = &app.store;
    // Two questions before either is answered: both are offered.
    let first = ask_to_unsubscribe(&app, 1).await;
    let second = ask_to_unsubscribe(&app, 2).await;
    post(
        &app,
        "tap.lua",
        &tap(3, ALICE, ALICE, BOT_MESSAGE, &button(&first, "Confirm")),
    )
    .await;
    let late = tap(
        4,
        ALICE,
        ALICE,
        BOT_MESSAGE + 1,
        &button(&second, "Confirm"),
    );
    post(&app, "tap.lua", &late).await;
    assert_eq!(s.jobs_on_stream().await, vec![1], "one job per window");
    assert_eq!(s.job(1).await["duplicates"], "1");
    assert!(answer_to(s, &late).await["text"].starts_with("Already received as job #1 (queued)"),);

    // The typed command has no window: it only looks the subscription up and asks again
    // (MoviePilot may have given #7 to another subscription meanwhile); its Confirm would be
    // the same command as job 1's, and so a duplicate, only while #7 names the same media.
    let keys = s.command_keys().await;
    post(
        &app,
        "enqueue.lua",
        &private_text(5, ALICE, "/unsubscribe 7"),
    )
    .await;
    assert_eq!(s.jobs_on_stream().await, vec![1, 2]);
    let lookup = s.job(2).await;
    assert_eq!(lookup["args"], "7");
    assert_eq!(s.command_keys().await, keys, "no window for the lookup");
}

#[tokio::test]
async fn a_button_that_is_not_ours_is_answered_and_changes_nothing_else() {
    let app = spawn_app().await;
    let s = &app.store;
    let foreign_data = tap(1, ALICE, ALICE, BOT_MESSAGE, "confirm:abc");
    post(&app, "tap.lua", &foreign_data).await;
    assert_eq!(
        answer_to(s, &foreign_data).await["text"],
        "This button no longer works; send the command again."
    );
    // A well-formed token that was never issued reads as expired.
    let forged = tap(
        2,
        ALICE,
        ALICE,
        BOT_MESSAGE,
        &format!("t:{}", "0".repeat(32)),
    );
    post(&app, "tap.lua", &forged).await;
    assert_eq!(
        answer_to(s, &forged).await["text"],
        "This button has expired; send the command again."
    );
    assert!(s.job_ids().await.is_empty());
    let keys = s.all_keys().await;
    let (tokens, groups) = (s.keys.token_prefix(), s.keys.token_group_prefix());
    assert!(
        keys.iter()
            .all(|k| !k.starts_with(&tokens) && !k.starts_with(&groups)),
        "{keys:?}"
    );
}

#[tokio::test]
async fn replies_are_in_chinese_by_default() {
    let app = app().env("ONCEBOT__TELEGRAM__LOCALE", "zh").spawn().await;
    let s = &app.store;
    let question = ask_in(&app, 1, ALICE, true).await;
    let confirm = button(&question, "确认");
    button(&question, "取消");
    let first = tap(2, ALICE, ALICE, BOT_MESSAGE, &confirm);
    post(&app, "tap.lua", &first).await;
    assert_eq!(answer_to(s, &first).await["text"], "已接收：任务 #1");
    let second = tap(3, ALICE, ALICE, BOT_MESSAGE, &confirm);
    post(&app, "tap.lua", &second).await;
    assert_eq!(
        answer_to(s, &second).await["text"],
        "已处理过：任务 #1（排队中）"
    );
    let stranger = tap(4, ALICE, BOB, BOT_MESSAGE, &confirm);
    post(&app, "tap.lua", &stranger).await;
    assert_eq!(answer_to(s, &stranger).await["text"], "这个按钮不是给你的");
}

// --- End to end, with a worker and MoviePilot ------------------------------------------------

/// Waits for the reply of `job` that carries buttons.
async fn reply_with_buttons(rig: &Rig, job: u64) -> BTreeMap<String, String> {
    eventually(
        &format!("a reply with buttons for job {job}"),
        JOB_DEADLINE,
        || async move {
            rig.replies_for(job)
                .await
                .into_iter()
                .find(|r| r.contains_key("markup"))
        },
    )
    .await
}

#[tokio::test]
async fn unsubscribe_confirmed_twice_deletes_the_subscription_once() {
    let rig = Rig::new(Dialect::V2).await;
    let sub = rig
        .mp
        .insert_subscription(THREE_BODY, MediaKind::Tv, Some(1))
        .unwrap();
    let _bot = rig.start(None).await;
    let s = &rig.store;

    // The command looks the subscription up (job 1, read-only) and asks, naming it.
    rig.send(1, &format!("/unsubscribe {sub}")).await;
    let question = reply_with_buttons(&rig, 1).await;
    assert_eq!(
        question["text"],
        format!("Cancel subscription #{sub} to \"三体\" season 1? This cannot be undone.")
    );
    let lookup = rig.job_in(1, "succeeded", JOB_DEADLINE).await;
    assert_eq!(lookup["args"], sub.to_string());
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_DELETE), 0, "nothing yet");

    let confirm = button(&question, "Confirm");
    let first = tap(2, ALICE, ALICE, BOT_MESSAGE, &confirm);
    let second = tap(3, ALICE, ALICE, BOT_MESSAGE, &confirm);
    futures::future::join(rig.post(&first), rig.post(&second)).await;
    let job = rig.job_in(2, "succeeded", JOB_DEADLINE).await;
    assert_eq!(job["command"], "unsubscribe");
    assert_eq!(job["args"], format!("{sub} tmdb:{THREE_BODY} S1"));
    assert_eq!(job["mp_subscription_id"], sub.to_string());
    assert_eq!(job["mp_outcome"], "deleted");
    assert!(rig.mp.subscriptions().is_empty());
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_DELETE), 1);
    assert_eq!(s.job_ids().await.len(), 2);

    let mut answers = vec![
        answer_to(s, &first).await["text"].clone(),
        answer_to(s, &second).await["text"].clone(),
    ];
    answers.sort();
    assert_eq!(answers[1], "Received: job #2");
    assert!(
        answers[0].starts_with("Already handled: job #2"),
        "{answers:?}"
    );

    let results = rig.replies_for(2).await;
    let results: Vec<_> = results.iter().filter(|r| r["kind"] == "result").collect();
    assert_eq!(results.len(), 1);
    assert_eq!(
        results[0]["text"],
        format!("Subscription #{sub} to \"三体\" season 1 cancelled.")
    );
    assert_eq!(results[0]["reply_to"], message_id(1).to_string());
    assert_eq!(rig.pending_entries().await, 0);
}

/// Who owns a subscription decides who may cancel it (MoviePilot's own bot lets anyone cancel
/// anyone's, #5098): a `user` asking to cancel another MoviePilot user's is refused in the job
/// with no button and nothing deleted; their own is asked about as before; an admin may cancel
/// someone else's, and both the question and the result name the owner.
#[tokio::test]
async fn a_user_cannot_cancel_someone_elses_subscription_and_an_admin_can_naming_the_owner() {
    let users = format!("{ALICE}=alice:user,{BOB}=bob:admin");
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    let carols = rig
        .mp
        .insert_subscription_for(THREE_BODY, MediaKind::Tv, Some(1), "carol")
        .unwrap();
    let alices = rig
        .mp
        .insert_subscription_for(THREE_BODY, MediaKind::Tv, Some(2), "alice")
        .unwrap();
    let _bot = rig.start(None).await;

    rig.send(1, &format!("/unsubscribe {carols}")).await;
    let refused = rig.job_in(1, "failed", JOB_DEADLINE).await;
    assert_eq!(refused["mp_error_kind"], "declined", "{refused:?}");
    let said: Vec<_> = rig.replies_for(1).await;
    assert!(
        said.iter().any(|r| r["text"].ends_with(&format!(
            "did not go through: Subscription #{carols} is carol's: only an admin can cancel someone else's subscription."
        )) && !r.contains_key("markup")),
        "{said:?}"
    );

    rig.send(2, &format!("/unsubscribe {alices}")).await;
    let question = reply_with_buttons(&rig, 2).await;
    assert_eq!(
        question["text"],
        format!("Cancel subscription #{alices} to \"三体\" season 2? This cannot be undone.")
    );

    rig.post(&private_text(3, BOB, &format!("/unsubscribe {carols}")))
        .await;
    let question = reply_with_buttons(&rig, 3).await;
    assert_eq!(
        question["text"],
        format!(
            "Cancel subscription #{carols} to \"三体\" season 1? This cannot be undone. (It is carol's subscription.)"
        )
    );
    let confirm = button(&question, "Confirm");
    rig.post(&tap(4, BOB, BOB, BOT_MESSAGE, &confirm)).await;
    let job = rig.job_in(4, "succeeded", JOB_DEADLINE).await;
    assert_eq!(job["mp_outcome"], "deleted");
    assert_eq!(job["requester"], "bob");
    let results = rig.replies_for(4).await;
    assert!(
        results.iter().any(|r| r["text"]
            == format!(
                "Subscription #{carols} to \"三体\" season 1 cancelled. (It is carol's subscription.)"
            )),
        "{results:?}"
    );
    let left: Vec<u64> = rig.mp.subscriptions().iter().map(|s| s.id).collect();
    assert_eq!(left, vec![alices], "only carol's was deleted, by the admin");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_DELETE), 1);
}

/// MoviePilot reuses ids: after #1 is deleted the next subscription is #1 again. Its
/// `/unsubscribe 1` is a new question naming the new subscription, and a Confirm left over from
/// the old question deletes nothing.
#[tokio::test]
async fn a_reused_subscription_id_is_a_different_command_and_an_old_confirm_deletes_nothing() {
    for dialect in [Dialect::V2, Dialect::V3] {
        // Without a window, so the old Confirm makes a job and meets the check at run time
        // (inside the window it would be a duplicate of the first delete, which deletes nothing
        // either: see a_confirmed_command_still_has_its_duplicate_window).
        let rig = Rig::with(
            dialect,
            &[("ONCEBOT__COMMANDS__UNSUBSCRIBE_WINDOW_SECS", "0")],
        )
        .await;
        let old = rig
            .mp
            .insert_subscription(THREE_BODY, MediaKind::Tv, Some(1))
            .unwrap();
        let _bot = rig.start(None).await;
        rig.send(1, &format!("/unsubscribe {old}")).await;
        let first_question = reply_with_buttons(&rig, 1).await;
        // A second question for the same #1 before anything is deleted: its Confirm is kept
        // for later.
        rig.send(2, &format!("/unsubscribe {old}")).await;
        let stale_question = reply_with_buttons(&rig, 2).await;
        rig.post(&tap(
            3,
            ALICE,
            ALICE,
            BOT_MESSAGE,
            &button(&first_question, "Confirm"),
        ))
        .await;
        rig.job_in(3, "succeeded", JOB_DEADLINE).await;
        assert!(rig.mp.subscriptions().is_empty());

        // MoviePilot gives the next subscription the same id.
        let new = rig
            .mp
            .insert_subscription(DUNE, MediaKind::Movie, None)
            .unwrap();
        assert_eq!(new, old, "the simulator reuses ids as MoviePilot does");

        // The old question's Confirm: the same id, but not the media it named.
        rig.post(&tap(
            4,
            ALICE,
            ALICE,
            BOT_MESSAGE + 1,
            &button(&stale_question, "Confirm"),
        ))
        .await;
        let refused = rig.job_in(4, "failed", JOB_DEADLINE).await;
        assert_eq!(refused["mp_error_kind"], "declined", "{refused:?}");
        assert_eq!(rig.mp.subscriptions().len(), 1, "the new #1 stays");
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_DELETE), 1);
        let told = rig.replies_for(4).await;
        assert!(
            told.iter()
                .any(|r| r["text"].contains("nothing was cancelled")),
            "{told:?}"
        );

        // Asked afresh, the question names the new subscription; its Confirm deletes it.
        rig.send(5, &format!("/unsubscribe {new}")).await;
        let question = reply_with_buttons(&rig, 5).await;
        assert!(question["text"].contains("Dune"), "{question:?}");
        rig.post(&tap(
            6,
            ALICE,
            ALICE,
            BOT_MESSAGE + 2,
            &button(&question, "Confirm"),
        ))
        .await;
        let deleted = rig.job_in(6, "succeeded", JOB_DEADLINE).await;
        assert_eq!(deleted["mp_outcome"], "deleted");
        assert!(rig.mp.subscriptions().is_empty());
    }
}

/// v2 answers success to deleting any id: a missing one must not become a "cancelled" reply.
#[tokio::test]
async fn unsubscribing_an_id_that_does_not_exist_makes_no_delete_job_and_shows_no_buttons() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = Rig::new(dialect).await;
        let _bot = rig.start(None).await;
        rig.send(1, "/unsubscribe 999").await;
        let lookup = rig.job_in(1, "succeeded", JOB_DEADLINE).await;
        assert_eq!(lookup["result"], "no subscription 999");
        let replies = rig.replies_for(1).await;
        let answer = replies
            .iter()
            .find(|r| r["kind"] == "result")
            .expect("the lookup's answer");
        assert_eq!(
            answer["text"],
            "There is no subscription #999. Send /subscriptions to see them with their ids."
        );
        assert!(
            replies.iter().all(|r| !r.contains_key("markup")),
            "{replies:?}"
        );
        assert_eq!(rig.store.job_ids().await.len(), 1, "no delete job");
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_DELETE), 0);
        assert!(token_keys(&rig.store).await.is_empty(), "no buttons");
    }
}

#[tokio::test]
async fn search_results_carry_subscribe_buttons_whose_tap_subscribes_once() {
    let rig = Rig::new(Dialect::V2).await;
    let _bot = rig.start(None).await;
    let s = &rig.store;

    rig.send(1, "/search Dune").await;
    rig.job_in(1, "succeeded", JOB_DEADLINE).await;
    let results = reply_with_buttons(&rig, 1).await;
    // Each match also has a Download button (a resource search, tested in downloads.rs).
    let offered: Vec<_> = buttons(&results)
        .into_iter()
        .filter(|b| b.0.contains("Subscribe"))
        .collect();
    assert_eq!(offered.len(), 2, "{offered:?}");
    assert!(
        offered[0].0.contains("Subscribe Dune (2021)"),
        "{offered:?}"
    );
    assert!(offered[1].0.contains("Dune: Part Two"), "{offered:?}");
    let token: BTreeMap<String, String> = s
        .conn()
        .await
        .hgetall(s.keys.token(token_of(&offered[0].1)))
        .await
        .unwrap();
    assert_eq!(token["args"], "tmdb:438631");
    assert_eq!(token["user_id"], ALICE.to_string());

    let pick = tap(2, ALICE, ALICE, BOT_MESSAGE, &offered[0].1);
    rig.post(&pick).await;
    let job = rig.job_in(2, "succeeded", JOB_DEADLINE).await;
    assert_eq!(job["command"], "subscribe");
    assert_eq!(job["args"], "tmdb:438631");
    assert_eq!(job["mp_outcome"], "created");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1);
    assert_eq!(answer_to(s, &pick).await["text"], "Received: job #2");

    // The other result was offered with it: it is used now.
    let other = tap(3, ALICE, ALICE, BOT_MESSAGE, &offered[1].1);
    rig.post(&other).await;
    assert!(answer_to(s, &other).await["text"].starts_with("Already handled: job #2"),);
    assert_eq!(s.job_ids().await.len(), 2);
    assert_eq!(rig.mp.subscriptions().len(), 1);

    // Typing the same subscription inside its window is the same job, not a second one.
    rig.send(4, "/subscribe tmdb:438631").await;
    let dup = eventually("the duplicate reply", DEADLINE, || async {
        s.replies()
            .await
            .into_iter()
            .find(|r| r["kind"] == "duplicate")
    })
    .await;
    assert_eq!(dup["job_id"], "2");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1);
}

#[tokio::test]
async fn a_series_with_several_seasons_offers_a_season_choice() {
    let rig = Rig::new(Dialect::V3).await;
    let _bot = rig.start(None).await;
    let s = &rig.store;

    rig.send(1, "/subscribe Expanse").await;
    rig.job_in(1, "succeeded", JOB_DEADLINE).await;
    let results = reply_with_buttons(&rig, 1).await;
    let series = button(&results, "1. Subscribe The Expanse");
    rig.post(&tap(2, ALICE, ALICE, BOT_MESSAGE, &series)).await;

    // The tap asks MoviePilot for the seasons (a read-only job) and offers them.
    let job = rig.job_in(2, "succeeded", JOB_DEADLINE).await;
    assert_eq!(job["args"], "tmdb:63639 tv");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 0);
    let seasons = reply_with_buttons(&rig, 2).await;
    assert!(seasons["text"].contains("6 seasons"), "{seasons:?}");
    let labels: Vec<_> = buttons(&seasons).into_iter().map(|(t, _)| t).collect();
    assert_eq!(
        labels,
        [
            "Season 1", "Season 2", "Season 3", "Season 4", "Season 5", "Season 6", "Cancel"
        ]
    );

    let second = tap(
        3,
        ALICE,
        ALICE,
        BOT_MESSAGE + 1,
        &button(&seasons, "Season 2"),
    );
    rig.post(&second).await;
    let job = rig.job_in(3, "succeeded", JOB_DEADLINE).await;
    assert_eq!(job["args"], "tmdb:63639 S2");
    let subs = rig.mp.subscriptions();
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0].tmdb_id, 63639);
    assert_eq!(subs[0].season, Some(2));

    // A series with one season goes straight to it.
    rig.send(4, "/search 三体").await;
    rig.job_in(4, "succeeded", JOB_DEADLINE).await;
    let results = reply_with_buttons(&rig, 4).await;
    let (_, data) = buttons(&results).remove(0);
    let token: BTreeMap<String, String> = s
        .conn()
        .await
        .hgetall(s.keys.token(token_of(&data)))
        .await
        .unwrap();
    assert_eq!(token["args"], "tmdb:108545 S1");
}

#[tokio::test]
async fn review_buttons_in_the_admin_chat_settle_a_job_and_nobody_else_can_use_them() {
    let rig = Rig::with(
        Dialect::V2,
        &[("ONCEBOT__TELEGRAM__ADMIN_CHATS", &GROUP.to_string())],
    )
    .await;
    let sub = rig
        .mp
        .insert_subscription(THREE_BODY, MediaKind::Tv, Some(1))
        .unwrap();
    let _bot = rig.start(None).await;
    let s = &rig.store;
    // A 502 from the search trigger: it may or may not have run, and MoviePilot cannot say.
    rig.mp.fail_next(
        routes::SUBSCRIBE_SEARCH_V2,
        Fault::Status(502, "<html>Bad Gateway</html>".into()),
    );
    rig.send(1, &format!("/searchnow {sub}")).await;
    rig.job_in(1, "needs_review", JOB_DEADLINE).await;

    let notices: Vec<_> = rig
        .replies_for(1)
        .await
        .into_iter()
        .filter(|r| r["kind"] == "review")
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    let notice = &notices[0];
    assert_eq!(notice["chat_id"], GROUP.to_string());
    assert!(
        notice["text"].contains("Job #1 needs a person"),
        "{notice:?}"
    );
    assert!(
        notice["text"].contains(&format!("/searchnow {sub}")),
        "{notice:?}"
    );
    assert!(notice["text"].contains("Attempts: 1"), "{notice:?}");
    assert!(
        notice["text"].contains("502"),
        "what MoviePilot said: {notice:?}"
    );
    let labels: Vec<_> = buttons(notice).into_iter().map(|(t, _)| t).collect();
    assert_eq!(labels, ["Mark succeeded", "Mark failed", "Retry"]);
    let succeeded = button(notice, "Mark succeeded");

    // A stranger in the admin group, and an allowed user outside it, cannot use them.
    for update in [
        tap(2, GROUP, MALLORY, BOT_MESSAGE, &succeeded),
        tap(3, ALICE, ALICE, BOT_MESSAGE, &succeeded),
    ] {
        checked_transitions(s, "tap.lua", rig.post(&update)).await;
        assert_eq!(
            answer_to(s, &update).await["text"],
            "This button is not for you."
        );
        assert_eq!(s.job(1).await["status"], "needs_review");
    }

    let bob = tap(4, GROUP, BOB, BOT_MESSAGE, &succeeded);
    checked_transitions(s, "tap.lua", rig.post(&bob)).await;
    let job = s.job(1).await;
    assert_eq!(job["status"], "succeeded");
    assert_eq!(job["resolved_as"], "succeeded");
    assert!(job["resolution_note"].contains(&BOB.to_string()), "{job:?}");
    assert_eq!(
        answer_to(s, &bob).await["text"],
        "Done: job #1 is now succeeded"
    );
    let resolved: Vec<_> = rig
        .replies_for(1)
        .await
        .into_iter()
        .filter(|r| r["kind"] == "resolved")
        .collect();
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0]["chat_id"], ALICE.to_string());
    let mut conn = s.conn().await;
    let waiting: Vec<String> = conn.smembers(s.keys.review_index()).await.unwrap();
    assert!(waiting.is_empty());

    // A second decision changes nothing.
    let retry = tap(5, GROUP, ALICE, BOT_MESSAGE, &button(notice, "Retry"));
    checked_transitions(s, "tap.lua", rig.post(&retry)).await;
    assert_eq!(
        answer_to(s, &retry).await["text"],
        "Already handled: job #1 succeeded"
    );
    assert_eq!(s.job(1).await["status"], "succeeded");
    // Marking it succeeded records a person's word; it calls MoviePilot for nothing.
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_SEARCH_V2), 1);
}

// --- The scripts through the ledger -----------------------------------------------------------

/// claim.lua's held path (a crash during a side effect that cannot be verified) tells every admin
/// chat, with buttons that share one group: a decision in one chat uses the others' too.
#[tokio::test]
async fn a_job_held_after_a_crash_is_announced_to_every_admin_chat() {
    const ADMINS: &str = "-100777,1001";
    let (redis, ledger, store, _) =
        spawn_ledger(&[("ONCEBOT__TELEGRAM__ADMIN_CHATS", ADMINS)]).await;
    let admitted = ledger
        .admit(&Admission {
            update_id: 1,
            chat_id: BOB,
            user_id: BOB,
            message_id: Some(501),
            thread_id: None,
            requester: None,
            role: oncebot::vocabulary::Role::Admin,
            action: AdmissionAction::Job(Command::SearchNow.job(
                oncebot::commands::Asker::of(BOB, BOB, None),
                "7",
                Duration::ZERO,
            )),
        })
        .await
        .unwrap();
    assert_eq!(admitted, Admitted::New { job_id: 1 });
    let limits = AttemptLimits {
        max_recoveries: 2,
        retention: Duration::from_secs(3600),
        kinds: oncebot::versions::WORKER_KINDS,
    };
    let texts = ClaimTexts {
        held: "job #{job} held".into(),
        failed: "job #{job} failed".into(),
    };
    let entry = deliver(&redis.url(), "a").await;
    let claimed = checked_transitions(
        &store,
        "claim.lua",
        ledger.claim(1, &entry, "a", &limits, &texts),
    )
    .await
    .unwrap();
    assert!(matches!(claimed, Claimed::Run { .. }), "{claimed:?}");
    assert!(
        store.replies().await.is_empty(),
        "a job that runs is announced to nobody"
    );
    assert!(token_keys(&store).await.is_empty());

    // Its worker dies; the next claim holds it.
    hand_over(&redis.url(), &entry, "b").await;
    let held = checked_transitions(
        &store,
        "claim.lua",
        ledger.claim(1, &entry, "b", &limits, &texts),
    )
    .await
    .unwrap();
    assert!(matches!(held, Claimed::Held { .. }), "{held:?}");

    let notices: Vec<_> = store
        .replies()
        .await
        .into_iter()
        .filter(|r| r["kind"] == "review")
        .collect();
    let chats: Vec<_> = notices.iter().map(|n| n["chat_id"].as_str()).collect();
    assert_eq!(chats, ["-100777", "1001"]);
    for n in &notices {
        assert!(n["text"].contains("/searchnow 7"), "{n:?}");
        assert!(n["text"].contains("interrupted while running"), "{n:?}");
        assert_eq!(buttons(n).len(), 3);
    }
    assert_eq!(token_keys(&store).await.len(), 6);

    // The first admin chat decides; the second one's buttons are used with it.
    let decide = |chat: i64, user: i64, update_id: i64, data: &str| Tap {
        update_id,
        callback_query_id: format!("q{update_id}"),
        user_id: user,
        allowed: true,
        chat_id: Some(chat),
        message_id: Some(BOT_MESSAGE),
        thread_id: None,
        role: oncebot::vocabulary::Role::Admin,
        requester: None,
        token: Some(token_of(data).to_string()),
        request: None,
        quota: None,
    };
    // Issue 22: a review button is an admin's; anyone else's tap changes nothing and leaves it.
    let mut not_admin = decide(-100777, BOB, 9, &button(&notices[0], "Retry"));
    not_admin.role = oncebot::vocabulary::Role::User;
    let tapped = checked_transitions(&store, "tap.lua", ledger.tap(&not_admin))
        .await
        .unwrap();
    assert_eq!(tapped, Tapped::Forbidden);
    assert_eq!(store.job(1).await["status"], "needs_review");
    let retry = decide(-100777, ALICE, 10, &button(&notices[0], "Retry"));
    let tapped = checked_transitions(&store, "tap.lua", ledger.tap(&retry))
        .await
        .unwrap();
    assert_eq!(
        tapped,
        Tapped::Resolved {
            job_id: 1,
            state: JobState::Pending
        }
    );
    assert_eq!(store.jobs_on_stream().await, vec![1], "queued again");

    let late = decide(1001, ALICE, 11, &button(&notices[1], "Mark failed"));
    let tapped = checked_transitions(&store, "tap.lua", ledger.tap(&late))
        .await
        .unwrap();
    assert_eq!(
        tapped,
        Tapped::Used {
            job_id: Some(1),
            state: Some(JobState::Pending)
        }
    );
    assert_eq!(store.job(1).await["status"], "pending");
    // That message's buttons go too (it is not the one the decision was made on).
    let cleared: Vec<_> = clears(&store)
        .await
        .into_iter()
        .map(|c| c["chat_id"].clone())
        .collect();
    assert_eq!(cleared, ["-100777", "1001"]);
}

/// A review button for a job someone settled with `oncebot jobs resolve` meanwhile.
#[tokio::test]
async fn a_review_button_for_a_job_settled_meanwhile_changes_nothing() {
    let (redis, ledger, store, _) =
        spawn_ledger(&[("ONCEBOT__TELEGRAM__ADMIN_CHATS", "-100777")]).await;
    ledger
        .admit(&Admission {
            update_id: 1,
            chat_id: BOB,
            user_id: BOB,
            message_id: None,
            thread_id: None,
            requester: None,
            role: oncebot::vocabulary::Role::Admin,
            action: AdmissionAction::Job(Command::SearchNow.job(
                oncebot::commands::Asker::of(BOB, BOB, None),
                "7",
                Duration::ZERO,
            )),
        })
        .await
        .unwrap();
    let limits = AttemptLimits {
        max_recoveries: 2,
        retention: Duration::from_secs(3600),
        kinds: oncebot::versions::WORKER_KINDS,
    };
    let texts = ClaimTexts {
        held: String::new(),
        failed: String::new(),
    };
    let entry = deliver(&redis.url(), "a").await;
    ledger.claim(1, &entry, "a", &limits, &texts).await.unwrap();
    hand_over(&redis.url(), &entry, "b").await;
    ledger.claim(1, &entry, "b", &limits, &texts).await.unwrap();
    let notice = store
        .replies()
        .await
        .into_iter()
        .find(|r| r["kind"] == "review")
        .unwrap();

    let resolved = ledger
        .resolve(
            1,
            oncebot::ledger::Resolution::Failed,
            "cli",
            "",
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    assert!(
        matches!(resolved, oncebot::ledger::Resolved::Settled(_)),
        "{resolved:?}"
    );
    let tap = Tap {
        update_id: 2,
        callback_query_id: "q".into(),
        user_id: ALICE,
        allowed: true,
        chat_id: Some(-100777),
        message_id: Some(BOT_MESSAGE),
        thread_id: None,
        role: oncebot::vocabulary::Role::Admin,
        requester: None,
        token: Some(token_of(&button(&notice, "Mark succeeded")).to_string()),
        request: None,
        quota: None,
    };
    let tapped = checked_transitions(&store, "tap.lua", ledger.tap(&tap))
        .await
        .unwrap();
    assert_eq!(
        tapped,
        Tapped::Settled {
            job_id: 1,
            state: Some(JobState::Failed)
        }
    );
    assert_eq!(store.job(1).await["status"], "failed");
    let answers = callbacks(&store).await;
    assert_eq!(answers.len(), 1);
    assert!(
        answers[0]["text"].contains("already settled (failed)"),
        "{answers:?}"
    );
}

/// A group has no key until a tap uses it, a solo button's as a shared one's: the tokens alone
/// are the open group (about 100 bytes of Redis saved per keyboard). The tap that uses it
/// writes the key, a second longer-lived than the tapped token, so a second tap is told what the
/// first did; a solo button's siblings in the keyboard stay usable.
#[tokio::test]
async fn a_solo_buttons_group_is_written_only_when_it_is_used() {
    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;
    let owner = Owner::User {
        chat_id: ALICE,
        user_id: ALICE,
    };
    let mut group = TokenGroup::new(Duration::from_secs(600));
    let solo = |n: u32| oncebot::ledger::Solo {
        list: None,
        used_label: format!("✓ {n}"),
        page: None,
    };
    let run = |args: &str, n: u32| {
        TokenAction::Run(Command::Subscriptions.button_keyed(
            owner,
            None,
            args,
            Some(&format!("release {n}")),
            Duration::from_secs(60),
        ))
    };
    let first = group.add_solo(owner, "1", run("a", 1), None, solo(1));
    let second = group.add_solo(owner, "2", run("b", 2), None, solo(2));
    let mut conn = store.conn().await;
    store_token_group(&mut conn, &store, &group).await;
    let groups: Vec<String> = conn
        .keys(format!("{}*", store.keys.token_group_prefix()))
        .await
        .unwrap();
    assert!(groups.is_empty(), "no group key before a tap: {groups:?}");

    let tap_with = |update_id: i64, data: &str| Tap {
        update_id,
        callback_query_id: format!("q{update_id}"),
        user_id: ALICE,
        allowed: true,
        chat_id: Some(ALICE),
        message_id: Some(BOT_MESSAGE),
        thread_id: None,
        role: oncebot::vocabulary::Role::Admin,
        requester: None,
        token: Some(token_of(data).to_string()),
        request: None,
        quota: None,
    };
    let tapped = checked_transitions(&store, "tap.lua", ledger.tap(&tap_with(1, &first)))
        .await
        .unwrap();
    assert_eq!(tapped, Tapped::New { job_id: 1 });
    let token: BTreeMap<String, String> = conn
        .hgetall(store.keys.token(token_of(&first)))
        .await
        .unwrap();
    let group_key = store.keys.token_group(&token["group"]);
    let used: BTreeMap<String, String> = conn.hgetall(&group_key).await.unwrap();
    assert_eq!(used["state"], "used", "{used:?}");
    assert_eq!(used["job_id"], "1");
    // The token first, then the group, in one MULTI: time passing between the two reads can
    // only shrink the group's TTL, so a loaded machine cannot push the difference over the
    // second the script adds (reading the group first did, once, under three builds).
    let (token_ttl, group_ttl): (i64, i64) = redis::pipe()
        .atomic()
        .pttl(store.keys.token(token_of(&first)))
        .pttl(&group_key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(
        group_ttl > token_ttl && group_ttl - token_ttl <= 1_000,
        "the group outlives its token by a second: {group_ttl} ms, token {token_ttl} ms"
    );

    let again = checked_transitions(&store, "tap.lua", ledger.tap(&tap_with(2, &first)))
        .await
        .unwrap();
    assert!(
        matches!(
            again,
            Tapped::Used {
                job_id: Some(1),
                ..
            }
        ),
        "a second tap only learns what the first did: {again:?}"
    );
    let sibling = checked_transitions(&store, "tap.lua", ledger.tap(&tap_with(3, &second)))
        .await
        .unwrap();
    assert_eq!(
        sibling,
        Tapped::New { job_id: 2 },
        "a solo sibling still works"
    );
    let groups: Vec<String> = conn
        .keys(format!("{}*", store.keys.token_group_prefix()))
        .await
        .unwrap();
    assert_eq!(groups.len(), 2, "one key per used solo button: {groups:?}");
}
