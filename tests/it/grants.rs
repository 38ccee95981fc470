//! Issue 43, "Manage from the chat": grants in Redis (`users:granted`) as an identity of their
//! own, given or taken back from the chat (`/users`' Revoke) or the CLI (`oncebot users grant |
//! revoke`), followed by every ingress within 2 s without a restart, and `/whoami`.

use std::time::{Duration, Instant};

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::telegram::{StoredMessage, callback_update};
use serde_json::{Value, json};

use crate::support::app::run_oncebot;
use crate::support::child::Oncebot;
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, MALLORY, SECRET, eventually, private_text};

/// How long a grant or a revocation may take to reach an ingress: its follower reads every
/// 2 s (`users_sync::FOLLOW_EVERY`); the rest is the HTTP round trips of the check itself.
const FOLLOWED_WITHIN: Duration = Duration::from_millis(2_500);

/// `oncebot <args>` against the rig's Redis and settings; it must succeed. Its stdout.
pub async fn cli(rig: &Rig, args: &[&str]) -> String {
    let env: Vec<(&str, &str)> = rig
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let out = run_oncebot(args, &env).await;
    assert_eq!(out.status.code(), Some(0), "oncebot {args:?}: {out:?}");
    out.stdout
}

/// `oncebot users --json`: (role, source) by Telegram id.
pub async fn listed(rig: &Rig) -> Vec<(i64, String, String)> {
    let rows: Vec<Value> = serde_json::from_str(&cli(rig, &["users", "--json"]).await).unwrap();
    rows.iter()
        .map(|r| {
            (
                r["user_id"].as_i64().unwrap(),
                r["role"].as_str().unwrap().to_string(),
                r["source"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Posts `update` to the webhook of the process at `url`.
pub async fn post_to(rig: &Rig, url: &str, update: &Value) {
    let resp = rig
        .http
        .post(format!("{url}/telegram/webhook"))
        .header("x-telegram-bot-api-secret-token", SECRET)
        .json(update)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

/// The newest message `chat` received whose text contains `text`, once there is one.
pub async fn message_in(rig: &Rig, chat: i64, text: &str) -> StoredMessage {
    eventually(
        &format!("a message to {chat} saying {text:?}"),
        RECOVERY_DEADLINE,
        || {
            let found = rig
                .tg
                .received(chat)
                .into_iter()
                .rev()
                .find(|m| m.text.contains(text));
            async move { found }
        },
    )
    .await
}

/// Waits until the bot said `text` to `chat`, sent or as an edit (a message edited again since,
/// as a request's answer is by its job's result, still counts).
pub async fn told(rig: &Rig, chat: i64, text: &str) {
    let said = |o: &oncebot_tools::sim::telegram::Observed<'_>| {
        o.calls().iter().any(|c| {
            c.status() == Some(200)
                && c.params["chat_id"].to_string().trim_matches('"') == chat.to_string()
                && ["text", "caption"]
                    .iter()
                    .any(|f| c.params[*f].as_str().is_some_and(|t| t.contains(text)))
        })
    };
    let found = rig.tg.wait_for(RECOVERY_DEADLINE, said).await;
    assert!(found.is_ok(), "{chat} was never told {text:?}: {found:?}");
}

/// The callback data of the button whose text starts with `label` under `message`.
pub fn button(message: &StoredMessage, label: &str) -> String {
    let markup = message.reply_markup.as_ref().expect("a keyboard");
    markup["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter())
        .find(|b| b["text"].as_str().unwrap().starts_with(label))
        .unwrap_or_else(|| panic!("no button {label:?} in {markup}"))["callback_data"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `user` taps the button with `data` under `message`.
pub fn tap(update_id: i64, user: i64, message: &StoredMessage, data: &str) -> Value {
    let mut update = callback_update(message.chat_id, user, message.message_id, data);
    update["update_id"] = json!(update_id);
    update
}

/// `oncebot_updates_total{outcome="unauthorised"}` of the process at `url`.
async fn refused_at(rig: &Rig, url: &str) -> f64 {
    let text = rig
        .http
        .get(format!("{url}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("oncebot_updates_total{outcome=\"unauthorised\"} "))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

/// Mallory writes to the ingress at `url` until it refuses her (`update_id`s from `first`),
/// within [`FOLLOWED_WITHIN`] of `since`.
async fn refused_within(rig: &Rig, url: &str, first: i64, since: Instant) {
    let before = refused_at(rig, url).await;
    let mut update_id = first;
    loop {
        post_to(rig, url, &private_text(update_id, MALLORY, "/whoami")).await;
        update_id += 1;
        if refused_at(rig, url).await > before {
            break;
        }
        assert!(
            since.elapsed() < FOLLOWED_WITHIN,
            "the ingress at {url} still admits Mallory {:?} after the revocation",
            since.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Mallory's `/whoami` admitted at the ingress at `url` (a job made of it), writing with
/// `update_id`s from `first` until it is.
async fn admitted_at(rig: &Rig, url: &str, first: i64) {
    let next = std::sync::atomic::AtomicI64::new(first);
    eventually(
        "Mallory to be admitted",
        Duration::from_secs(10),
        || async {
            let update_id = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            post_to(rig, url, &private_text(update_id, MALLORY, "/whoami")).await;
            let became = rig.store.update(update_id).await?;
            (became != "-").then_some(())
        },
    )
    .await;
}

/// The jobs of `command` in the ledger.
async fn jobs_of(rig: &Rig, command: &str) -> usize {
    let mut n = 0;
    for id in rig.store.job_ids().await {
        if rig.store.job(id).await.get("command").map(String::as_str) == Some(command) {
            n += 1;
        }
    }
    n
}

/// A second ingress-only process, its base URL.
async fn second_ingress(rig: &Rig) -> (Oncebot, String) {
    let child = Oncebot::spawn(&["serve", "--role", "ingress"], &rig.env);
    let url = format!("http://{}", child.http_addr().await);
    (child, url)
}

/// A grant in a deployment that maps nobody: the granted person is what the grant says, and
/// every allowed user stays an admin (a grant is no mapping). `/whoami` says so to each.
#[tokio::test]
async fn a_grant_where_nobody_is_mapped_leaves_the_allowed_users_admins() {
    let rig = Rig::new(Dialect::V2).await;
    let _bot = rig.start_pipeline().await;
    rig.post(&private_text(1, MALLORY, "/whoami")).await;
    message_in(&rig, MALLORY, "not allowed").await;

    let out = cli(&rig, &["users", "grant", &MALLORY.to_string(), "user"]).await;
    assert!(out.contains("6666: granted, now user (granted)"), "{out}");
    let url = rig.url("");
    admitted_at(&rig, url.trim_end_matches('/'), 10).await;
    let who = message_in(&rig, MALLORY, "Your Telegram id").await;
    assert!(who.text.contains("Role: user"), "{}", who.text);
    assert!(
        who.text.contains("a grant given in the chat"),
        "{}",
        who.text
    );
    assert!(who.text.contains("消息账号绑定"), "{}", who.text);

    rig.send(100, "/whoami").await;
    let alice = message_in(&rig, ALICE, "Your Telegram id: 1001").await;
    assert!(alice.text.contains("Role: admin"), "{}", alice.text);
    // An admin's command still runs for both allowed users.
    rig.send(101, "/subscriptions all").await;
    rig.post(&private_text(102, BOB, "/version")).await;
    message_in(&rig, BOB, "Running processes").await;
    assert_eq!(
        listed(&rig).await,
        vec![
            (ALICE, "admin".into(), "nobody_mapped".into()),
            (BOB, "admin".into(), "nobody_mapped".into()),
            (MALLORY, "user".into(), "granted".into()),
        ]
    );
}

/// A grant taken back from the chat (`/users`' Revoke, once) and from the CLI: each is seen by a
/// second ingress process within 2 s, which then refuses the person; a second tap of the same
/// Revoke button changes nothing.
#[tokio::test]
async fn a_revocation_from_the_chat_and_the_cli_reaches_a_second_ingress_within_2_s() {
    let rig = Rig::new(Dialect::V2).await;
    let _bot = rig.start_pipeline().await;
    let (_ingress, second) = second_ingress(&rig).await;
    cli(&rig, &["users", "grant", &MALLORY.to_string(), "viewer"]).await;
    admitted_at(&rig, &second, 1).await;

    rig.send(100, "/users").await;
    let list = message_in(&rig, ALICE, "Everyone who may use the bot (3)").await;
    assert!(list.text.contains("6666 · viewer"), "{}", list.text);
    assert!(list.text.contains("1001 · admin"), "{}", list.text);
    // Only the grant has a Revoke button: the allow-list is changed where the bot runs.
    let revoke = button(&list, "Revoke 6666");
    let markup = list.reply_markup.as_ref().unwrap().to_string();
    assert_eq!(markup.matches("Revoke").count(), 1, "{markup}");
    rig.post(&tap(101, ALICE, &list, &revoke)).await;
    message_in(&rig, ALICE, "Revoked the grant of 6666").await;
    refused_within(&rig, &second, 200, Instant::now()).await;
    // The same button again: used, nothing more.
    rig.post(&tap(102, ALICE, &list, &revoke)).await;
    assert_eq!(
        rig.store.update(102).await.as_deref(),
        Some("-"),
        "no second revoke job"
    );
    assert_eq!(jobs_of(&rig, "revoke").await, 1);

    cli(&rig, &["users", "grant", &MALLORY.to_string(), "user"]).await;
    admitted_at(&rig, &second, 300).await;
    let out = cli(&rig, &["users", "revoke", &MALLORY.to_string()]).await;
    let revoked_at = Instant::now();
    assert!(
        out.contains("6666: grant revoked, now not allowed"),
        "{out}"
    );
    refused_within(&rig, &second, 400, revoked_at).await;
    let again = cli(&rig, &["users", "revoke", &MALLORY.to_string(), "--json"]).await;
    let again: Value = serde_json::from_str(&again).unwrap();
    assert_eq!(again["outcome"], "no_grant", "{again}");
}
