//! The Telegram checks: the token (`getMe`), how updates arrive (`getWebhookInfo`: the webhook
//! as configured, or none while polling) and the admin chats (`getChat` on each). Reads only:
//! never `getUpdates`, `setWebhook` or `deleteWebhook`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::json;

use super::{Check, within};
use crate::config::{Settings, TelegramSettings, env_name};
use crate::telegram::api::{ApiError, BotApi};
use crate::untrusted::clean_line;

const TOKEN: &str = "telegram.token";
const WEBHOOK: &str = "telegram.webhook";
const POLLING: &str = "telegram.polling";
const ADMIN_CHATS: &str = "telegram.admin_chats";

/// A delivery error younger than this fails the webhook check: an older one may be long fixed
/// (Telegram keeps the last error until the next).
const RECENT_ERROR: Duration = Duration::from_secs(3600);

#[derive(Deserialize)]
struct Me {
    id: i64,
    username: Option<String>,
}

#[derive(Deserialize)]
struct WebhookInfo {
    url: String,
    pending_update_count: u64,
    last_error_date: Option<u64>,
    last_error_message: Option<String>,
}

#[derive(Deserialize)]
struct ChatInfo {
    #[serde(rename = "type")]
    kind: String,
    title: Option<String>,
    first_name: Option<String>,
    username: Option<String>,
}

/// The token and the updates' check; then the admin chats' (printed last).
pub(super) async fn checks(
    settings: &Settings,
    poll: bool,
    timeout: Duration,
) -> (Vec<Check>, Vec<Check>) {
    let telegram = &settings.telegram;
    let updates = if poll { POLLING } else { WEBHOOK };
    let chat_names = || -> Vec<String> {
        if telegram.admin_chats.is_empty() {
            vec![ADMIN_CHATS.to_string()]
        } else {
            telegram
                .admin_chats
                .iter()
                .map(|c| chat_name(c.chat))
                .collect()
        }
    };
    let skipped = |first: Check, because: &str| {
        let chats = chat_names()
            .into_iter()
            .map(|name| Check::not_checked(name, because))
            .collect();
        (vec![first, Check::not_checked(updates, because)], chats)
    };
    let api = match BotApi::new(&telegram.api_url, &telegram.token) {
        Ok(api) => api,
        Err(e) => {
            let first = Check::fail(TOKEN, e.to_string(), api_url_fix());
            return skipped(first, "no Bot API client");
        }
    };
    let token = token(&api, telegram, timeout).await;
    if !token.ok {
        return skipped(token, "the token check failed");
    }
    let (updates, chats) = tokio::join!(
        async {
            if poll {
                polling(&api, timeout).await
            } else {
                webhook(&api, telegram, timeout).await
            }
        },
        admin_chats(&api, telegram, timeout),
    );
    (vec![token, updates], chats)
}

/// `telegram.admin_chats:<id>`: one check per admin chat.
fn chat_name(chat: i64) -> String {
    format!("{ADMIN_CHATS}:{chat}")
}

/// Calls `method` within `timeout`; the failure said as a check's detail.
async fn call<T: serde::de::DeserializeOwned>(
    api: &BotApi,
    method: &str,
    body: serde_json::Value,
    timeout: Duration,
) -> Result<T, Failure> {
    // The client's own limit a little later, so a call that runs out of time says so.
    let late = timeout + Duration::from_secs(1);
    match within(timeout, api.call(method, &body, late)).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(Failure::Api(e)),
        Err(late) => Err(Failure::Late(format!("{method}: the Bot API gave {late}"))),
    }
}

enum Failure {
    Api(ApiError),
    Late(String),
}

impl Failure {
    fn detail(&self, method: &str) -> String {
        match self {
            Failure::Api(e) => format!("{method}: {e}"),
            Failure::Late(late) => late.clone(),
        }
    }
}

fn api_url_fix() -> String {
    format!(
        "check the network, and {} (https://api.telegram.org, or your own Bot API server's URL)",
        env_name("telegram.api_url")
    )
}

/// `getMe`: the token is the bot's, and `telegram.bot_username` (when set) names that bot.
async fn token(api: &BotApi, telegram: &TelegramSettings, timeout: Duration) -> Check {
    let me: Me = match call(api, "getMe", json!({}), timeout).await {
        Ok(me) => me,
        Err(Failure::Api(ApiError::Unauthorized)) => {
            return Check::fail(
                TOKEN,
                "Telegram answers getMe with 401 Unauthorized: the token is wrong or was revoked",
                format!(
                    "set {} to the token @BotFather shows for the bot (/mybots → API Token)",
                    env_name("telegram.token")
                ),
            );
        }
        Err(e) => return Check::fail(TOKEN, e.detail("getMe"), api_url_fix()),
    };
    let username = clean_line(me.username.as_deref().unwrap_or(""));
    let detail = format!("the bot @{username} (id {})", me.id);
    let configured = telegram.bot_username.trim().trim_start_matches('@');
    if !configured.is_empty() && !configured.eq_ignore_ascii_case(&username) {
        return Check::fail(
            TOKEN,
            format!("{detail}, but telegram.bot_username is {configured:?}"),
            format!(
                "set {}={username} (mentions of other names are ignored in groups)",
                env_name("telegram.bot_username")
            ),
        );
    }
    Check::pass(TOKEN, detail)
}

/// `getWebhookInfo` in polling mode: no webhook may be set, or getUpdates answers 409.
async fn polling(api: &BotApi, timeout: Duration) -> Check {
    let info: WebhookInfo = match call(api, "getWebhookInfo", json!({}), timeout).await {
        Ok(info) => info,
        Err(e) => return Check::fail(POLLING, e.detail("getWebhookInfo"), api_url_fix()),
    };
    if info.url.is_empty() {
        return Check::pass(
            POLLING,
            format!(
                "no webhook is set, so getUpdates may take updates ({} waiting at Telegram)",
                info.pending_update_count
            ),
        );
    }
    Check::fail(
        POLLING,
        format!(
            "a webhook is set ({}), and Telegram refuses getUpdates while one is (409 Conflict)",
            clean_line(&info.url)
        ),
        "run `oncebot webhook delete` (with --drop-pending-updates to drop what Telegram holds), \
         or take updates by webhook instead of --poll",
    )
}

/// `getWebhookInfo` in webhook mode: Telegram delivers to `telegram.webhook_url`, and its last
/// delivery did not fail lately.
async fn webhook(api: &BotApi, telegram: &TelegramSettings, timeout: Duration) -> Check {
    let info: WebhookInfo = match call(api, "getWebhookInfo", json!({}), timeout).await {
        Ok(info) => info,
        Err(e) => return Check::fail(WEBHOOK, e.detail("getWebhookInfo"), api_url_fix()),
    };
    let configured = telegram.webhook_url.trim();
    let set = clean_line(&info.url);
    let url_var = env_name("telegram.webhook_url");
    if configured.is_empty() {
        return Check::fail(
            WEBHOOK,
            if set.is_empty() {
                "telegram.webhook_url is empty, and no webhook is set".to_string()
            } else {
                format!("Telegram delivers to {set}, but telegram.webhook_url is empty")
            },
            format!(
                "set {url_var} to the public https:// URL of oncebot's /telegram/webhook and run \
                 `oncebot webhook set`; or take updates by long polling (`oncebot serve --poll`, \
                 checked with `oncebot doctor --poll`)"
            ),
        );
    }
    if set.is_empty() {
        return Check::fail(
            WEBHOOK,
            format!("no webhook is set with Telegram (telegram.webhook_url is {configured})"),
            "run `oncebot webhook set`",
        );
    }
    if set != configured {
        return Check::fail(
            WEBHOOK,
            format!("Telegram delivers to {set}, not to telegram.webhook_url ({configured})"),
            format!(
                "run `oncebot webhook set` to register telegram.webhook_url, or set {url_var} to \
                 the URL Telegram should call"
            ),
        );
    }
    delivery(&info, &set)
}

/// The webhook is the configured one: its pending count and last error.
fn delivery(info: &WebhookInfo, url: &str) -> Check {
    let pending = info.pending_update_count;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let error = match (info.last_error_date, &info.last_error_message) {
        (Some(date), Some(message)) => Some((now.saturating_sub(date), clean_line(message))),
        _ => None,
    };
    let Some((age, message)) = error else {
        return Check::pass(
            WEBHOOK,
            format!("Telegram delivers to {url}; {pending} update(s) pending, no delivery error"),
        );
    };
    let detail = format!(
        "Telegram delivers to {url}; {pending} update(s) pending; the last delivery failed {} \
         ago: {message}",
        ago(age)
    );
    if age >= RECENT_ERROR.as_secs() {
        return Check::pass(WEBHOOK, detail);
    }
    Check::fail(
        WEBHOOK,
        detail,
        format!(
            "make {url} reach oncebot's /telegram/webhook (the proxy, its TLS certificate, a port \
             of 443, 80, 88 or 8443) and check that oncebot runs; a 401 or 403 means the secrets \
             differ: run `oncebot webhook set` after changing {}",
            env_name("telegram.webhook_secret")
        ),
    )
}

/// `90 s`, `5 min`, `3 h`.
fn ago(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s} s"),
        s if s < 2 * 3600 => format!("{} min", s / 60),
        s => format!("{} h", s / 3600),
    }
}

/// `getChat` on each admin chat, at the same time.
async fn admin_chats(api: &BotApi, telegram: &TelegramSettings, timeout: Duration) -> Vec<Check> {
    if telegram.admin_chats.is_empty() {
        return vec![Check::pass(
            ADMIN_CHATS,
            "none set: jobs that need a person are seen only with `oncebot jobs list --status \
             needs_review` and on the operator page",
        )];
    }
    let each = telegram
        .admin_chats
        .iter()
        .map(|c| admin_chat(api, c.chat, timeout));
    futures::future::join_all(each).await
}

async fn admin_chat(api: &BotApi, chat: i64, timeout: Duration) -> Check {
    let name = chat_name(chat);
    let info: ChatInfo = match call(api, "getChat", json!({ "chat_id": chat }), timeout).await {
        Ok(info) => info,
        Err(e) => {
            let var = env_name("telegram.admin_chats");
            let fix = match &e {
                Failure::Api(ApiError::Api { code: 400, .. }) => format!(
                    "add the bot to that group, or have that person open the bot and press Start; \
                     or correct {var} (a supergroup's id starts with -100)"
                ),
                Failure::Api(ApiError::Api { code: 403, .. }) => format!(
                    "add the bot to that group again, or have that person unblock it; or remove \
                     the chat from {var}"
                ),
                _ => api_url_fix(),
            };
            return Check::fail(name, e.detail("getChat"), fix);
        }
    };
    let title = info.title.or(info.first_name).unwrap_or_default();
    let mut detail = format!("reachable: {} chat {:?}", info.kind, clean_line(&title));
    if let Some(username) = info.username {
        detail.push_str(&format!(" (@{})", clean_line(&username)));
    }
    Check::pass(name, detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(date: Option<u64>, message: Option<&str>) -> WebhookInfo {
        WebhookInfo {
            url: "https://bot.example.org/telegram/webhook".into(),
            pending_update_count: 3,
            last_error_date: date,
            last_error_message: message.map(str::to_string),
        }
    }

    #[test]
    fn only_a_recent_delivery_error_fails_the_webhook() {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let url = "https://bot.example.org/telegram/webhook";
        let clean = delivery(&info(None, None), url);
        assert!(clean.ok, "{clean:?}");
        assert!(clean.detail.contains("3 update(s) pending"), "{clean:?}");
        let failing = delivery(
            &info(
                Some(now - 30),
                Some("Wrong response from the webhook: 502 Bad Gateway"),
            ),
            url,
        );
        assert!(!failing.ok, "{failing:?}");
        assert!(failing.detail.contains("502 Bad Gateway"), "{failing:?}");
        assert!(failing.fix.unwrap().contains("oncebot webhook set"));
        let old = delivery(&info(Some(now - 5 * 3600), Some("Connection refused")), url);
        assert!(old.ok, "{old:?}");
        assert!(old.detail.contains("5 h ago"), "{old:?}");
    }
}
