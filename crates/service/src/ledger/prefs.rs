//! Each person's own notices (issue 45, `/notify`): their settings, read and written whole
//! fields at a time (a setting is one HSET or HDEL: no job state, no script needed), and the
//! summary of what quiet hours held (quiet_end.lua). What a notice becomes under the settings is
//! decided inside notify.lua and card.lua (include/prefs.lua), where it is queued.

use std::collections::HashMap;

use redis::AsyncCommands as _;

use super::keys::Stream;
use super::scripts::ScriptCall;
use super::{Ledger, LedgerError, scripts};
use crate::vocabulary::{NoticeCategory, NoticeMode, NoticePrefs, QuietHours};

/// People whose held notices one quiet_end.lua call sums up at most (the rest: the next call).
const SUMMARIES_PER_CALL: u64 = 100;

/// The words of the summary after quiet hours (`i18n::Texts::quiet_summary`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuietSummary {
    /// "{n}": how many were held; "{types}": the counts per category.
    pub text: String,
    /// One label per category, in `NoticeCategory::ALL`'s order.
    pub labels: [String; 5],
    pub separator: String,
}

impl Ledger {
    /// A person's settings (all defaults when they never chose).
    pub async fn notice_prefs(&self, user_id: i64) -> Result<NoticePrefs, LedgerError> {
        let fields: HashMap<String, String> = self
            .conn
            .clone()
            .hgetall(self.keys.notice_prefs(user_id))
            .await
            .map_err(LedgerError::redis("reading a person's notice settings"))?;
        Ok(NoticePrefs::from_fields(
            fields.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        ))
    }

    /// What a person's private chat gets of `category` (all: the field removed).
    pub async fn set_notice_mode(
        &self,
        user_id: i64,
        category: NoticeCategory,
        mode: NoticeMode,
    ) -> Result<(), LedgerError> {
        let value = (mode != NoticeMode::All).then_some(mode.as_str().to_string());
        self.set_notice_field(user_id, category.as_str(), value)
            .await
    }

    /// A person's quiet hours (`None`: none, the field removed).
    pub async fn set_quiet_hours(
        &self,
        user_id: i64,
        quiet: Option<QuietHours>,
    ) -> Result<(), LedgerError> {
        let value = quiet.map(|q| q.to_string());
        self.set_notice_field(user_id, QuietHours::FIELD, value)
            .await
    }

    /// One field of a person's settings: written, or removed for its default (`None`).
    async fn set_notice_field(
        &self,
        user_id: i64,
        field: &str,
        value: Option<String>,
    ) -> Result<(), LedgerError> {
        let key = self.keys.notice_prefs(user_id);
        let mut conn = self.conn.clone();
        let done = match value {
            None => conn.hdel::<_, _, ()>(key, field).await,
            Some(v) => conn.hset::<_, _, _, ()>(key, field, v).await,
        };
        done.map_err(LedgerError::redis("writing a person's notice settings"))
    }

    /// quiet_end.lua: one summary for each person whose quiet hours ended by `now_ms` with
    /// notices held; the number queued.
    pub async fn quiet_end(&self, now_ms: u64, words: &QuietSummary) -> Result<u64, LedgerError> {
        let call = self.quiet_end_call(now_ms, words);
        self.send_durable(&call, "summing up the notices held in quiet hours")
            .await
    }

    pub(super) fn quiet_end_call(&self, now_ms: u64, words: &QuietSummary) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::QUIET_END, 2, 10, 256);
        call.key("notices prefix", self.keys.notice_prefix())
            .key("replies stream", self.keys.replies_stream())
            .arg("replies consumer group", Stream::Replies.group())
            .arg("now", now_ms)
            .arg("the summary's text", &words.text)
            .arg("the separator", &words.separator)
            .arg("the most people", SUMMARIES_PER_CALL)
            .args(words.labels.iter().map(String::as_str));
        call
    }
}
