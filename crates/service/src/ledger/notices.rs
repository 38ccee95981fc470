//! The admin notices about the whole deployment (`lua/notice.lua`): raised once while a
//! condition lasts (refused credentials), each user told about it once, cleared when it ends.

use std::time::Duration;

use super::scripts::ScriptCall;
use super::{Ledger, LedgerError, keys, scripts};

impl Ledger {
    /// notice.lua: tells the admin chats `text` unless they were told about `condition` within
    /// the last `lasts`; true when this call told them.
    pub async fn raise_notice(
        &self,
        condition: &str,
        text: &str,
        lasts: Duration,
    ) -> Result<bool, LedgerError> {
        let call = self.raise_notice_call(condition, text, lasts);
        let told: i64 = self.send(&call, "telling the admin chats").await?;
        Ok(told == 1)
    }

    pub(super) fn raise_notice_call(
        &self,
        condition: &str,
        text: &str,
        lasts: Duration,
    ) -> ScriptCall {
        let mut call = ScriptCall::new(
            &scripts::NOTICE,
            3,
            4 + self.review.admin_chats.len(),
            64 + text.len(),
        );
        call.key("notice key", self.keys.notice(condition))
            .key("replies stream", self.keys.replies_stream())
            .key("told set", self.keys.notice_told(condition))
            .arg("raise | tell | clear", "raise")
            .arg("replies consumer group", keys::Stream::Replies.group())
            .arg("seconds the notice lasts", lasts.as_secs().max(1))
            .arg("text or user", text)
            .args(self.review.admin_chats.iter().map(ToString::to_string));
        call
    }

    /// notice.lua: whether `user_id` is to be told about `condition` now (true once per user
    /// while it lasts, `lasts` at most): the caller's reply tells them.
    pub async fn tell_user_once(
        &self,
        condition: &str,
        user_id: i64,
        lasts: Duration,
    ) -> Result<bool, LedgerError> {
        let call = self.tell_user_call(condition, user_id, lasts);
        let new: i64 = self.send(&call, "noting a user told").await?;
        Ok(new == 1)
    }

    pub(super) fn tell_user_call(
        &self,
        condition: &str,
        user_id: i64,
        lasts: Duration,
    ) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::NOTICE, 3, 4, 64);
        call.key("notice key", self.keys.notice(condition))
            .key("replies stream", self.keys.replies_stream())
            .key("told set", self.keys.notice_told(condition))
            .arg("raise | tell | clear", "tell")
            .arg("replies consumer group", keys::Stream::Replies.group())
            .arg("seconds the notice lasts", lasts.as_secs().max(1))
            .arg("text or user", user_id);
        call
    }

    /// notice.lua: `condition` is over (and the users told about it forgotten); its next
    /// occurrence is told again. True if it was on.
    pub async fn clear_notice(&self, condition: &str) -> Result<bool, LedgerError> {
        let call = self.clear_notice_call(condition);
        let cleared: i64 = self.send(&call, "ending an admin notice").await?;
        Ok(cleared == 1)
    }

    pub(super) fn clear_notice_call(&self, condition: &str) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::NOTICE, 3, 2, 64);
        call.key("notice key", self.keys.notice(condition))
            .key("replies stream", self.keys.replies_stream())
            .key("told set", self.keys.notice_told(condition))
            .arg("raise | tell | clear", "clear")
            .arg("replies consumer group", keys::Stream::Replies.group());
        call
    }
}
