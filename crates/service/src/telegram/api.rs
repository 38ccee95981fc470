//! A thin Bot API client: one `call` that speaks Telegram's envelope and classifies its errors.
//!
//! The token is part of every URL, so no error or log line here ever carries a URL
//! (`reqwest::Error::without_url`), and `BotApi`'s `Debug` hides it.

use std::fmt;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::config::Secret;

/// A Bot API failure, classified by what the caller should do about it.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 429: wait exactly this long before the next call.
    #[error("Telegram asks to wait {0:?} (429 Too Many Requests)")]
    RetryAfter(Duration),
    /// 409 on getUpdates: a webhook is set, or another process polls with this token.
    #[error("Telegram answered 409 Conflict: {0}")]
    Conflict(String),
    /// 400 with `migrate_to_chat_id`: the group became a supergroup with this new id.
    #[error("the chat moved to {0} (group upgraded to a supergroup)")]
    Migrated(i64),
    /// 401: the token is wrong or revoked. Nothing works until it is fixed.
    #[error("Telegram rejected the bot token (401 Unauthorized): check ONCEBOT__TELEGRAM__TOKEN")]
    Unauthorized,
    /// Any other `ok:false` answer.
    #[error("Telegram answered {code}: {description}")]
    Api { code: u16, description: String },
    /// No answer, or one that is not the Bot API's JSON (a proxy's 502 page): try again later.
    #[error("Bot API unreachable: {0}")]
    Network(String),
}

impl ApiError {
    /// Telegram refused the send's `message_thread_id`: the topic is gone or is no topic
    /// ("message thread not found", also a plain supergroup's reply thread), or it is closed
    /// (`TOPIC_CLOSED`). Sent without the thread, the message lands in the chat's General topic.
    pub fn is_thread_refused(&self) -> bool {
        matches!(self, ApiError::Api { code: 400, description }
            if description.contains("message thread not found")
                || description.contains("TOPIC_CLOSED"))
    }
}

#[derive(serde::Deserialize)]
struct Envelope<T> {
    ok: bool,
    result: Option<T>,
    description: Option<String>,
    error_code: Option<u16>,
    parameters: Option<Parameters>,
}

#[derive(serde::Deserialize)]
struct Parameters {
    retry_after: Option<u64>,
    migrate_to_chat_id: Option<i64>,
}

/// A client for one bot.
#[derive(Clone)]
pub struct BotApi {
    http: reqwest::Client,
    /// `<api_url>/bot<token>/`: a secret, like the token inside it.
    base: Secret,
    /// `base` parsed once (`None` if it does not parse: then every call fails as before): a
    /// call's URL is a clone with the method's path, not a string for reqwest to parse again.
    /// As secret as `base`; `Debug` shows neither.
    base_url: Option<reqwest::Url>,
}

impl fmt::Debug for BotApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BotApi { .. }")
    }
}

impl BotApi {
    pub fn new(api_url: &str, token: &Secret) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| anyhow::anyhow!("building the HTTP client: {}", e.without_url()))?;
        let base = Secret::new(format!(
            "{}/bot{}/",
            api_url.trim_end_matches('/'),
            token.expose()
        ));
        let base_url = reqwest::Url::parse(base.expose()).ok();
        Ok(Self {
            http,
            base,
            base_url,
        })
    }

    /// Calls `method` with a JSON body; `timeout` bounds the whole call.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        body: &impl Serialize,
        timeout: Duration,
    ) -> Result<T, ApiError> {
        let request = match &self.base_url {
            Some(base) => {
                let mut url = base.clone();
                let path = format!("{}{method}", url.path());
                url.set_path(&path);
                self.http.post(url)
            }
            None => self.http.post(format!("{}{method}", self.base.expose())),
        };
        let resp = request
            .json(body)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| ApiError::Network(e.without_url().to_string()))?;
        let code = resp.status().as_u16();
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| ApiError::Network(e.without_url().to_string()))?;
        let envelope: Envelope<T> = crate::json_body::parse(&bytes).map_err(|_| {
            ApiError::Network(format!("HTTP {code} with a body that is not Bot API JSON"))
        })?;
        if envelope.ok {
            return envelope
                .result
                .ok_or_else(|| ApiError::Network(format!("HTTP {code}: ok without a result")));
        }
        let description = envelope.description.unwrap_or_default();
        let code = envelope.error_code.unwrap_or(code);
        let retry_after = envelope.parameters.as_ref().and_then(|p| p.retry_after);
        if let Some(chat) = envelope
            .parameters
            .as_ref()
            .and_then(|p| p.migrate_to_chat_id)
        {
            return Err(ApiError::Migrated(chat));
        }
        Err(match code {
            429 => ApiError::RetryAfter(Duration::from_secs(retry_after.unwrap_or(1))),
            409 => ApiError::Conflict(description),
            401 => ApiError::Unauthorized,
            500..=599 => ApiError::Network(format!("HTTP {code}: {description}")),
            _ => ApiError::Api { code, description },
        })
    }
}
