//! Asking for access from the chat (`household.access_requests`): a stranger's answer with the
//! Ask button, the request and its cards, the first admin's decision, expiry, each one
//! access.lua call. Ingress decides what to send; the script decides what happens, atomically.

use std::time::Duration;

use super::scripts::{OrEmpty, ScriptCall};
use super::{Ledger, LedgerError, keys, scripts};

/// One access.lua call, as its mode needs it.
#[derive(Debug, Clone)]
pub enum AccessStep<'a> {
    /// A stranger's message in a private chat: answered with their id, and the Ask button
    /// (`tokens`, `markup`) unless they are waiting or declined.
    Offer {
        update_id: i64,
        user_id: i64,
        chat_id: i64,
        message_id: i64,
        /// The detail JSON (`once`, `once_ms`, `tokens`, `markup`).
        detail: &'a str,
    },
    /// A tap on an `a:` button (Ask, or an admin's card).
    Tap {
        update_id: i64,
        user_id: i64,
        chat_id: i64,
        message_id: i64,
        callback_query_id: &'a str,
        token: &'a str,
        /// The detail JSON (`allowed`, `may_decide`, `who`, `card`, `name`, `username`,
        /// `tokens`, `messages`).
        detail: &'a str,
    },
    /// Requests whose window passed: their cards told.
    Expire,
}

/// The limits a call runs under (`household.*`) and its texts (`i18n::Texts::access_texts`).
#[derive(Debug, Clone, Copy)]
pub struct AccessLimits<'a> {
    pub window: Duration,
    pub cap: u32,
    pub texts: &'a str,
}

impl Ledger {
    /// access.lua: one step of asking for access; its outcome (`lua/access.lua`'s returns).
    pub async fn access(
        &self,
        step: &AccessStep<'_>,
        limits: AccessLimits<'_>,
    ) -> Result<String, LedgerError> {
        let call = self.access_call(step, limits);
        let reply: Vec<redis::Value> = self.send_durable(&call, "asking for access").await?;
        let outcome = reply
            .into_iter()
            .next()
            .and_then(|v| redis::from_redis_value::<String>(v).ok())
            .unwrap_or_default();
        Ok(outcome)
    }

    pub(super) fn access_call(
        &self,
        step: &AccessStep<'_>,
        limits: AccessLimits<'_>,
    ) -> ScriptCall {
        let k = &self.keys;
        let s = StepArgs::of(step);
        let bytes = 512 + limits.texts.len() + s.detail.len();
        let mut call = ScriptCall::new(&scripts::ACCESS, 10, 14, bytes);
        call.key("updates HASH", k.updates(s.update_id.unwrap_or(0)))
            .key("access prefix", k.access_prefix())
            .key("pending ZSET", k.access_pending())
            .key("token prefix", k.token_prefix())
            .key("token-group pfx", k.token_group_prefix())
            .key("grants key", k.users_granted())
            .key("replies stream", k.replies_stream())
            .key("callbacks stream", k.callbacks_stream())
            .key("command-key pfx", k.command_prefix())
            .key("reply prefix", k.reply(""))
            .arg("mode", s.mode)
            .arg("update_id", OrEmpty(s.update_id))
            .arg("update retention", self.update_retention_secs)
            .arg("user id", s.user_id)
            .arg("chat id", s.chat_id)
            .arg("message id", s.message_id)
            .arg("callback_query_id", s.query)
            .arg("token", s.token)
            .arg("window", limits.window.as_millis() as u64)
            .arg("cap", limits.cap)
            .arg("replies consumer group", keys::Stream::Replies.group())
            .arg("callbacks consumer group", keys::Stream::Callbacks.group())
            .arg("texts", limits.texts)
            .arg("detail", s.detail);
        call
    }
}

/// A step's own arguments, as access.lua's ARGV has them (empty where the mode has none).
struct StepArgs<'a> {
    mode: &'static str,
    update_id: Option<i64>,
    user_id: i64,
    chat_id: i64,
    message_id: i64,
    query: &'a str,
    token: &'a str,
    detail: &'a str,
}

impl<'a> StepArgs<'a> {
    fn of(step: &AccessStep<'a>) -> StepArgs<'a> {
        let none = StepArgs {
            mode: "expire",
            update_id: None,
            user_id: 0,
            chat_id: 0,
            message_id: 0,
            query: "",
            token: "",
            detail: "",
        };
        match *step {
            AccessStep::Offer {
                update_id,
                user_id,
                chat_id,
                message_id,
                detail,
            } => StepArgs {
                mode: "offer",
                update_id: Some(update_id),
                user_id,
                chat_id,
                message_id,
                detail,
                ..none
            },
            AccessStep::Tap {
                update_id,
                user_id,
                chat_id,
                message_id,
                callback_query_id,
                token,
                detail,
            } => StepArgs {
                mode: "tap",
                update_id: Some(update_id),
                user_id,
                chat_id,
                message_id,
                query: callback_query_id,
                token,
                detail,
            },
            AccessStep::Expire => none,
        }
    }
}
