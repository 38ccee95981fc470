//! MoviePilot's message history, the relay's source of truth: every notification is stored as
//! a row before MoviePilot routes it (`ChainBase.post_message`), with an id, so a reader can
//! tell which it has forwarded.
//!
//! The route is `GET /api/v1/message/web?page=&count=` in every version read (v2.5.6, v2.14,
//! the newest V3 line), behind `verify_token`: a login token in v2.5.6 (the API key opens it
//! from v2.9.3 and in V3). v2 answers a bare list, V3 the `{success, data}` envelope. It lists
//! sent (`action` 1) and received (`action` 0) messages, newest first page by page; v2.5.6 sorts
//! each page back to oldest first, later versions keep `reg_time, id` descending, so a reader
//! sorts what it read itself. `/api/v1/message/notification` (v2.14, V3) hides rows behind the
//! web UI's "clear" times, so rows not yet forwarded could vanish: not used.
//!
//! This is MoviePilot's `message` area (`app/api/endpoints/message.py`): the rows and
//! [`MoviePilot::message_history`], the one call that reads them.

use serde::Deserialize;

use super::client::{Call, MoviePilot};
use super::error::MpError;

/// One row of the message table, as the route answers it (the fields the relay reads; `note`,
/// JSON in v2 and text in v1, is not).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct HistoryMessage {
    pub id: u64,
    #[serde(default)]
    pub channel: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    /// The notification type's value (资源下载, 整理入库, ...); none for a plain message.
    #[serde(default)]
    pub mtype: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    /// The poster's URL.
    #[serde(default)]
    pub image: Option<String>,
    #[serde(default)]
    pub link: Option<String>,
    #[serde(default)]
    pub userid: Option<String>,
    /// Local time without a zone, `YYYY-MM-DD HH:MM:SS`.
    pub reg_time: String,
    /// 1: sent by MoviePilot (a notification); 0: received from a user.
    #[serde(default)]
    pub action: Option<i64>,
}

impl HistoryMessage {
    /// A notification MoviePilot sent (not a message a user sent it).
    pub fn is_notification(&self) -> bool {
        self.action == Some(1)
    }

    /// `reg_time` as seconds, read as if it were UTC (only differences are used); `None` when
    /// it is not `YYYY-MM-DD HH:MM:SS`.
    pub fn reg_secs(&self) -> Option<i64> {
        parse_local_time(&self.reg_time)
    }
}

/// Rows asked for per page.
pub const MESSAGE_PAGE: usize = 50;

/// `YYYY-MM-DD HH:MM:SS` → seconds since 1970-01-01 00:00:00 of the same clock.
pub fn parse_local_time(text: &str) -> Option<i64> {
    let b = text.trim().as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let n = |from: usize, len: usize| -> Option<i64> {
        std::str::from_utf8(&b[from..from + len]).ok()?.parse().ok()
    };
    let (y, mo, d) = (n(0, 4)?, n(5, 2)?, n(8, 2)?);
    let (h, mi, s) = (n(11, 2)?, n(14, 2)?, n(17, 2)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + s)
}

/// The notification relay's source.
impl MoviePilot {
    /// One page of the message history (`GET /api/v1/message/web?page=&count=`), as answered:
    /// every row that parses, and how many rows the page had (a page shorter than `count` is
    /// the last; a row that does not parse still counts).
    pub async fn message_history(
        &self,
        page: usize,
        count: usize,
    ) -> Result<(Vec<HistoryMessage>, usize), MpError> {
        let what = format!("reading the message history, page {page}");
        let call = Call::get(what, "/api/v1/message/web")
            .query("page", page)
            .query("count", count);
        self.inner.fetch_rows(&call).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_times_read_as_seconds() {
        assert_eq!(parse_local_time("1970-01-01 00:00:00"), Some(0));
        assert_eq!(parse_local_time("2024-03-01 00:00:01"), Some(1_709_251_201));
        assert_eq!(parse_local_time("2024-03-01"), None);
        assert_eq!(parse_local_time("not a time at all!!"), None);
    }

    #[test]
    fn rows_of_every_version_parse() {
        // v2.5.6: note is JSON; v1: note is text; V3 adds nothing the relay reads.
        for body in [
            r#"{"id":3,"channel":"Telegram","source":"tg","mtype":"资源下载","title":"t","text":"x","image":null,"link":null,"userid":null,"reg_time":"2025-06-16 10:00:00","note":{},"action":1}"#,
            r#"{"id":3,"channel":null,"mtype":null,"title":"t","text":null,"image":"","link":"","userid":"","reg_time":"2025-06-16 10:00:00","note":"[]","action":0}"#,
        ] {
            let row: HistoryMessage = serde_json::from_str(body).unwrap();
            assert_eq!(row.id, 3);
        }
    }
}
