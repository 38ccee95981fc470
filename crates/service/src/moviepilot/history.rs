//! MoviePilot's `history` area (`app/api/endpoints/history.py`): the download history (what
//! was added, to tell whether a download happened) and the transfer history (what was filed
//! where, for `/redo`), both read page by page; and filing a transfer record again, which is
//! MoviePilot's `transfer` area (`app/api/endpoints/transfer.py`) but acts on a record read
//! here.
//!
//! Routes: `GET /api/v1/history/download`, `GET /api/v1/history/transfer`,
//! `POST /api/v1/transfer/manual`.

use serde_json::{Value, json};

use super::client::{Call, MoviePilot, short};
use super::error::MpError;
use super::releases::HistoryRow;
use super::types::wire_u64;

/// Rows asked for per page of the download history; a shorter page is the last.
const HISTORY_PAGE: usize = 100;
/// The most history pages read in one look (50,000 rows): a bound, not an expectation.
const HISTORY_MAX_PAGES: usize = 500;

/// Rows per page when looking for one transfer record, and the most pages read.
const TRANSFER_PAGE: usize = 50;
const TRANSFER_MAX_PAGES: usize = 20;

/// `data` of `GET /api/v1/history/transfer`.
#[derive(Debug, Default, serde::Deserialize)]
struct WireTransferPage {
    #[serde(default)]
    list: Vec<Value>,
}

/// One transfer history record, as `/redo` names it before asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferRecord {
    pub id: u64,
    /// What was filed (the downloaded file or folder).
    pub src: String,
    /// Where it was filed: what a redo deletes first.
    pub dest: String,
    pub title: String,
    /// Whether the filing succeeded.
    pub succeeded: bool,
}

impl TransferRecord {
    /// Row `row` if it is record `id` (`TransferHistory`: id, src, dest, title, status).
    fn from_wire(row: &Value, id: u64) -> Option<TransferRecord> {
        let row_id = wire_u64(row.get("id"))?;
        if row_id != id {
            return None;
        }
        let text = |name: &str| {
            let raw = row.get(name).and_then(Value::as_str).unwrap_or("");
            short(&crate::untrusted::clean_line(raw), 300)
        };
        Some(TransferRecord {
            id,
            src: text("src"),
            dest: text("dest"),
            title: text("title"),
            succeeded: row.get("status").and_then(Value::as_bool).unwrap_or(true),
        })
    }
}

/// Rows per page of the transfer history when following cards.
pub const TRANSFER_FOLLOW_PAGE: usize = 50;

/// One transfer-history row as a live card reads it (issue 45): one file filed, or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferRow {
    pub id: u64,
    /// The torrent the file came from, lower case (`download_hash`).
    pub hash: Option<String>,
    pub tmdb_id: Option<u64>,
    /// `seasons` ("S01"): the first season named.
    pub season: Option<u32>,
    /// `episodes` ("E05", "E05-E06"): every episode named.
    pub episodes: Vec<u32>,
    /// `status`: filed.
    pub succeeded: bool,
    /// `errmsg`, cleaned and bounded.
    pub error: Option<String>,
    /// `dest`: where it was filed, cleaned and bounded.
    pub dest: Option<String>,
}

impl TransferRow {
    fn from_wire(row: &Value) -> Option<TransferRow> {
        let id = wire_u64(row.get("id"))?;
        let text = |name: &str| {
            row.get(name)
                .and_then(Value::as_str)
                .map(|raw| short(&crate::untrusted::clean_line(raw), 300))
                .filter(|t| !t.trim().is_empty())
        };
        Some(TransferRow {
            id,
            hash: text("download_hash").map(|h| h.trim().to_ascii_lowercase()),
            tmdb_id: wire_u64(row.get("tmdbid")),
            season: text("seasons").and_then(|s| numbers_after('S', &s).first().copied()),
            episodes: text("episodes").map_or_else(Vec::new, |e| numbers_after('E', &e)),
            succeeded: row.get("status").and_then(Value::as_bool).unwrap_or(false),
            error: text("errmsg"),
            dest: text("dest"),
        })
    }
}

/// The numbers after `mark` in `text`, a range spread out: "E05-E07" → 5, 6, 7; "S01" → 1.
fn numbers_after(mark: char, text: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for part in text.split(|c: char| c == ',' || c.is_whitespace()) {
        let mut ends = part.splitn(2, '-').map(|p| {
            p.trim()
                .trim_start_matches(mark)
                .parse::<u32>()
                .ok()
                .filter(|_| p.trim().starts_with(mark))
        });
        match (ends.next().flatten(), ends.next().flatten()) {
            (Some(a), Some(b)) if a <= b && b - a < 1000 => found.extend(a..=b),
            (Some(a), _) => found.push(a),
            _ => {}
        }
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// The histories: what was downloaded (how a download is verified) and what was filed where
/// (`/redo`).
impl MoviePilot {
    /// The whole download history (`GET /api/v1/history/download?page=&count=`), page by page
    /// until a short page. Its order differs by version (oldest first in v2.5.6 and v2.14,
    /// newest first later), so callers must not rely on it.
    pub async fn download_history(&self) -> Result<Vec<HistoryRow>, MpError> {
        let mut rows = Vec::new();
        for page in 1..=HISTORY_MAX_PAGES {
            let what = format!("reading the download history, page {page}");
            let call = Call::get(what, "/api/v1/history/download")
                .query("page", page)
                .query("count", HISTORY_PAGE);
            let got: Vec<Value> = self.inner.fetch_list(&call).await?;
            let short_page = got.len() < HISTORY_PAGE;
            rows.extend(got.iter().filter_map(HistoryRow::from_wire));
            if short_page {
                return Ok(rows);
            }
        }
        Err(MpError::Transient(format!(
            "the download history has more than {} rows; oncebot stops reading there",
            HISTORY_PAGE * HISTORY_MAX_PAGES
        )))
    }

    /// Transfer history record `id` (`GET /api/v1/history/transfer?page=&count=`, v2.5.6
    /// `app/api/endpoints/history.py` L42-71, `{data: {list, total}}`, newest first): MoviePilot
    /// has no route for one record, so pages are read until it is found or the history ends
    /// (at most `TRANSFER_MAX_PAGES` pages). `None`: no such record.
    pub async fn transfer_record(&self, id: u64) -> Result<Option<TransferRecord>, MpError> {
        for page in 1..=TRANSFER_MAX_PAGES {
            let what = format!("reading the transfer history, page {page}");
            let call = Call::get(what, "/api/v1/history/transfer")
                .query("page", page)
                .query("count", TRANSFER_PAGE);
            let answer = self.inner.call(&call).await?;
            let answer = self.inner.check_status(&call, answer)?;
            let list: WireTransferPage = self.inner.accepted(&call, &answer)?.unwrap_or_default();
            if let Some(found) = list
                .list
                .iter()
                .find_map(|row| TransferRecord::from_wire(row, id))
            {
                return Ok(Some(found));
            }
            if list.list.len() < TRANSFER_PAGE {
                return Ok(None);
            }
        }
        Ok(None)
    }

    /// The transfer-history rows newer than row `after`, newest first: pages of
    /// [`TRANSFER_FOLLOW_PAGE`] until a row at or below `after`, a short page, or `max_pages`
    /// pages. The flag says whether the reading reached `after` (or the history's end); false:
    /// rows between may be unread, so the caller keeps its place rather than skip them.
    pub async fn transfers_after(
        &self,
        after: u64,
        max_pages: usize,
    ) -> Result<(Vec<TransferRow>, bool), MpError> {
        let mut rows = Vec::new();
        for page in 1..=max_pages {
            let what = format!("reading the transfer history, page {page}");
            let call = Call::get(what, "/api/v1/history/transfer")
                .query("page", page)
                .query("count", TRANSFER_FOLLOW_PAGE);
            let answer = self.inner.call(&call).await?;
            let answer = self.inner.check_status(&call, answer)?;
            let list: WireTransferPage = self.inner.accepted(&call, &answer)?.unwrap_or_default();
            let short_page = list.list.len() < TRANSFER_FOLLOW_PAGE;
            let mut reached = short_page;
            for row in list.list.iter().filter_map(TransferRow::from_wire) {
                if row.id <= after {
                    reached = true;
                } else {
                    rows.push(row);
                }
            }
            if reached {
                return Ok((rows, true));
            }
        }
        Ok((rows, false))
    }

    /// Files transfer record `id` again (`POST /api/v1/transfer/manual` with `{"logid": id,
    /// "from_history": true}`, a superuser's; v2.5.6 `app/api/endpoints/transfer.py` L70-165):
    /// MoviePilot deletes what the record filed (unless it was moved), then files the source
    /// again, and answers when done. It refuses in words (整理记录不存在: the record is gone,
    /// also because a redo replaced it with a new one): `Declined`.
    pub async fn redo_transfer(&self, id: u64) -> Result<(), MpError> {
        let call = Call::post(
            format!("filing transfer record {id} again"),
            "/api/v1/transfer/manual",
        )
        .json(json!({"logid": id, "from_history": true}))
        .side_effect()
        .within(self.inner.download_timeout);
        let answer = self.inner.call(&call).await?;
        // The delete may have happened before the error: never a retry, a person's call.
        self.inner.uncertain_on_server_error(
            &call,
            &answer,
            "MoviePilot may have deleted the earlier file already",
        )?;
        let answer = self.inner.check_status(&call, answer)?;
        self.inner.done_or_declined(&call, &answer)
    }
}
