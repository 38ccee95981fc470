//! Claiming the bot: the deployment's one claim code while the directory gives nobody `admin`
//! (`claim:code`, only its digest, created with SET NX so one code serves every process), and a
//! `/claim <code>` decided in one step (bot_claim.lua: the grant, the code spent, the sender's
//! wrong tries counted, the answer queued).

use std::time::Duration;

use super::scripts::ScriptCall;
use super::{Ledger, LedgerError, keys, scripts};

/// At most this many `/claim`s that did not claim the bot per Telegram id and [`TRIES_WINDOW`].
pub const MOST_TRIES: u32 = 5;
/// The window those tries are counted in.
pub const TRIES_WINDOW: Duration = Duration::from_secs(3600);

/// One `/claim` as ingress read it.
#[derive(Debug, Clone)]
pub struct ClaimTry<'a> {
    pub update_id: i64,
    pub chat_id: i64,
    pub user_id: i64,
    pub message_id: i64,
    /// SHA-256 of the code typed, hex; empty when none was typed.
    pub digest: &'a str,
    /// The directory gives someone `admin` already.
    pub claimed: bool,
    /// The answers (JSON: `claimed`, `already`, `wrong`, `none`, `too_many`).
    pub texts: &'a str,
}

/// What bot_claim.lua made of a `/claim`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The sender is an admin now; the code is spent.
    Claimed,
    /// The bot has an admin: told so.
    Already,
    /// No code is waiting: told so.
    NoCode,
    /// Not the code: told so, counted.
    Wrong,
    /// Out of tries: told so once.
    Throttled,
    /// Out of tries, told already: nothing queued.
    Silent,
    /// Telegram delivered this update before: nothing written.
    DuplicateUpdate,
}

impl ClaimOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimOutcome::Claimed => "claimed",
            ClaimOutcome::Already => "already",
            ClaimOutcome::NoCode => "no_code",
            ClaimOutcome::Wrong => "wrong",
            ClaimOutcome::Throttled => "throttled",
            ClaimOutcome::Silent => "silent",
            ClaimOutcome::DuplicateUpdate => "duplicate_update",
        }
    }
}

impl Ledger {
    /// Sets the claim code's digest for `ttl` unless one is waiting (SET NX PX): true when this
    /// call created it, so the caller (and only it) logs the code.
    pub async fn offer_claim_code(&self, digest: &str, ttl: Duration) -> Result<bool, LedgerError> {
        let set: Option<String> = redis::cmd("SET")
            .arg(self.keys.claim_code())
            .arg(digest)
            .arg("NX")
            .arg("PX")
            .arg(ttl.as_millis() as u64)
            .query_async(&mut self.durable())
            .await
            .map_err(LedgerError::redis("offering a claim code"))?;
        Ok(set.is_some())
    }

    /// bot_claim.lua: one `/claim`, decided and answered in one step.
    pub async fn claim_bot(&self, t: &ClaimTry<'_>) -> Result<ClaimOutcome, LedgerError> {
        let call = self.claim_bot_call(t);
        let (outcome,): (String,) = self.send_durable(&call, "claiming the bot").await?;
        Ok(match outcome.as_str() {
            "claimed" => ClaimOutcome::Claimed,
            "already" => ClaimOutcome::Already,
            "no_code" => ClaimOutcome::NoCode,
            "wrong" => ClaimOutcome::Wrong,
            "throttled" => ClaimOutcome::Throttled,
            "silent" => ClaimOutcome::Silent,
            _ => ClaimOutcome::DuplicateUpdate,
        })
    }

    pub(super) fn claim_bot_call(&self, t: &ClaimTry<'_>) -> ScriptCall {
        let k = &self.keys;
        let mut call = ScriptCall::new(&scripts::BOT_CLAIM, 5, 11, 256 + t.texts.len());
        call.key("updates HASH", k.updates(t.update_id))
            .key("code key", k.claim_code())
            .key(
                "tries key",
                format!("{}{}", k.claim_tries_prefix(), t.user_id),
            )
            .key("grants key", k.users_granted())
            .key("replies stream", k.replies_stream())
            .arg("update_id", t.update_id)
            .arg("update retention", self.update_retention_secs)
            .arg("chat id", t.chat_id)
            .arg("user id", t.user_id)
            .arg("message id", t.message_id)
            .arg("digest", t.digest)
            .arg("most answers", MOST_TRIES)
            .arg("that window", TRIES_WINDOW.as_secs())
            .arg("\"1\" when", if t.claimed { "1" } else { "0" })
            .arg("replies consumer group", keys::Stream::Replies.group())
            .arg("texts", t.texts);
        call
    }
}
