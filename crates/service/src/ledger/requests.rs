//! Media requests (issue 44): a requester's ask, an admin's decision, a withdrawal, expiry, each
//! one request.lua call; and the reads behind `/requests`, `/mine` and `oncebot jobs show`. The
//! layer above decides what the cards and answers say; the script decides what happens.

use std::collections::HashMap;
use std::time::Duration;

use redis::AsyncCommands as _;

use super::scripts::{OrEmpty, ScriptCall};
use super::{Ledger, LedgerError, keys, scripts};

/// One request.lua call, as its mode needs it.
#[derive(Debug, Clone)]
pub enum RequestStep<'a> {
    /// A requester's typed command, looked up by their worker: the request and its cards.
    /// `detail`: include/requests.lua's `q` (fields, cards) as JSON.
    Ask { detail: &'a str },
    /// A tap on an `r:` button (an admin's card, or the requester's Withdraw).
    Tap {
        update_id: i64,
        user_id: i64,
        chat_id: i64,
        message_id: i64,
        callback_query_id: &'a str,
        token: &'a str,
        /// `may_decide`, `who`, `role`, `person_allowed` (lua/request.lua's ARGV[16]).
        detail: &'a str,
    },
    /// Pending requests past their time: expired, told.
    Expire,
}

/// A step's own arguments, as request.lua's ARGV has them (empty where the mode has none).
type StepArgs<'a> = (
    &'static str,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    &'a str,
    &'a str,
    &'a str,
);

impl<'a> RequestStep<'a> {
    fn args(&self) -> StepArgs<'a> {
        match *self {
            RequestStep::Ask { detail } => ("ask", None, None, None, None, "", "", detail),
            RequestStep::Tap {
                update_id,
                user_id,
                chat_id,
                message_id,
                callback_query_id,
                token,
                detail,
            } => (
                "tap",
                Some(update_id),
                Some(user_id),
                Some(chat_id),
                Some(message_id),
                callback_query_id,
                token,
                detail,
            ),
            RequestStep::Expire => ("expire", None, None, None, None, "", "", ""),
        }
    }
}

/// What a call runs under (`household.*`) and its texts (`i18n::Texts::request_texts`).
#[derive(Debug, Clone, Copy)]
pub struct RequestLimits<'a> {
    pub ttl: Duration,
    pub max_pending: u32,
    pub texts: &'a str,
}

/// One stored request, as `/requests`, `/mine` and the operator read it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StoredRequest {
    pub id: u64,
    pub state: String,
    pub user_id: i64,
    pub who: String,
    pub command: String,
    pub args: String,
    pub what: String,
    pub asked_at: i64,
    pub expires_at: i64,
    /// A subscription's: Approve as best version is offered (its `best_idem`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub best: bool,
    /// How it was decided: `approve`, `best`, `decline`, `gone` (declined: the requester had
    /// lost access); empty while pending, and for expired or withdrawn.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub decision: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<i64>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub decided_by_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<u64>,
}

impl StoredRequest {
    fn from_fields(fields: HashMap<String, String>) -> Option<StoredRequest> {
        let get = |k: &str| fields.get(k).cloned().unwrap_or_default();
        let num = |k: &str| fields.get(k).and_then(|v| v.parse::<i64>().ok());
        Some(StoredRequest {
            id: fields.get("id")?.parse().ok()?,
            state: get("state"),
            user_id: num("user_id").unwrap_or_default(),
            who: get("who"),
            command: get("command"),
            args: get("args"),
            what: get("what"),
            asked_at: num("asked_at").unwrap_or_default(),
            expires_at: num("expires_at").unwrap_or_default(),
            best: fields.get("best_idem").is_some_and(|v| !v.is_empty()),
            decision: get("decision"),
            decided_by: num("decided_by"),
            decided_by_name: get("decided_by_name"),
            job_id: fields.get("job_id").and_then(|v| v.parse().ok()),
        })
    }
}

impl Ledger {
    /// request.lua: one step of a media request; its outcome and id (`lua/request.lua`'s
    /// returns).
    pub async fn request(
        &self,
        step: &RequestStep<'_>,
        limits: RequestLimits<'_>,
    ) -> Result<(String, String), LedgerError> {
        let call = self.request_call(step, limits);
        let reply: Vec<redis::Value> = self
            .send_durable(&call, "recording a media request")
            .await?;
        let mut parts = reply
            .into_iter()
            .map(|v| redis::from_redis_value::<String>(v).unwrap_or_default());
        let outcome = parts.next().unwrap_or_default();
        let id = parts.next().unwrap_or_default();
        Ok((outcome, id))
    }

    pub(super) fn request_call(
        &self,
        step: &RequestStep<'_>,
        limits: RequestLimits<'_>,
    ) -> ScriptCall {
        let k = &self.keys;
        let (mode, update_id, user_id, chat_id, message_id, query, token, detail) = step.args();
        let bytes = 768 + limits.texts.len() + detail.len();
        let mut call = ScriptCall::new(&scripts::REQUEST, 20, 16, bytes);
        call.key("updates HASH", k.updates(update_id.unwrap_or(0)))
            .key("request prefix", k.request_prefix())
            .key("request sequence", k.request_seq())
            .key("pending ZSET", k.requests_pending())
            .key("person prefix", k.requests_of_prefix())
            .key("pointer prefix", k.requests_key_prefix())
            .key("token prefix", k.token_prefix())
            .key("token-group pfx", k.token_group_prefix())
            .key("replies stream", k.replies_stream())
            .key("callbacks stream", k.callbacks_stream())
            .key("reply prefix", k.reply(""))
            .key("pages prefix", k.pages_prefix())
            .key("releases prefix", k.releases_prefix())
            .key("command-key pfx", k.command_prefix())
            .key("job id sequence", k.job_seq())
            .key("job key prefix", k.job_prefix())
            .key("jobs stream", k.jobs_stream())
            .key("chat prefix", k.chat_prefix())
            .key("jobs index", k.jobs_index())
            .key("quota prefix", k.quota_prefix())
            .arg("mode", mode)
            .arg("update_id", OrEmpty(update_id))
            .arg("update retention", self.update_retention_secs)
            .arg("the tapper's Telegram id", OrEmpty(user_id))
            .arg("chat id", OrEmpty(chat_id))
            .arg("message id", OrEmpty(message_id))
            .arg("callback_query_id", query)
            .arg("token", token)
            .arg("request ttl", limits.ttl.as_millis() as u64)
            .arg("most pending requests per person", limits.max_pending)
            .arg("jobs consumer group", keys::Stream::Jobs.group())
            .arg("replies consumer group", keys::Stream::Replies.group())
            .arg("callbacks consumer group", keys::Stream::Callbacks.group())
            .arg(
                "chat index length, jobs index length",
                format!("{},{}", self.chat_index_len, self.jobs_index_len),
            )
            .arg("texts", limits.texts)
            .arg("detail", detail);
        call
    }

    /// The token's `person` (a request card's requester), read before the tap's call so ingress
    /// can say whether they may still use the bot; `None` for no such token.
    pub async fn token_person(&self, token: &str) -> Result<Option<i64>, LedgerError> {
        let person: Option<String> = self
            .conn
            .clone()
            .hget(self.keys.token(token), "person")
            .await
            .map_err(LedgerError::redis("reading a request button"))?;
        Ok(person.and_then(|p| p.parse().ok()))
    }

    /// Pending requests, oldest first, at most `most`.
    pub async fn pending_requests(&self, most: usize) -> Result<Vec<StoredRequest>, LedgerError> {
        let ids: Vec<String> = self
            .conn
            .clone()
            .zrange(self.keys.requests_pending(), 0, most as isize - 1)
            .await
            .map_err(LedgerError::redis("listing pending requests"))?;
        self.requests_by_id(&ids).await
    }

    /// One person's requests, newest first, at most `most`.
    pub async fn requests_of(
        &self,
        user_id: i64,
        most: usize,
    ) -> Result<Vec<StoredRequest>, LedgerError> {
        let ids: Vec<String> = self
            .conn
            .clone()
            .zrevrange(self.keys.requests_of(user_id), 0, most as isize - 1)
            .await
            .map_err(LedgerError::redis("listing a person's requests"))?;
        self.requests_by_id(&ids).await
    }

    /// One request, if it is still kept.
    pub async fn stored_request(&self, id: u64) -> Result<Option<StoredRequest>, LedgerError> {
        Ok(self
            .requests_by_id(&[id.to_string()])
            .await?
            .into_iter()
            .next())
    }

    async fn requests_by_id(&self, ids: &[String]) -> Result<Vec<StoredRequest>, LedgerError> {
        // An empty pipeline answers nothing a Vec reads: no request, no round trip.
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in ids.iter().filter_map(|id| id.parse::<u64>().ok()) {
            pipe.hgetall(self.keys.request(id));
        }
        let got: Vec<HashMap<String, String>> = pipe
            .query_async(&mut self.conn.clone())
            .await
            .map_err(LedgerError::redis("reading requests"))?;
        Ok(got
            .into_iter()
            .filter_map(StoredRequest::from_fields)
            .collect())
    }
}
