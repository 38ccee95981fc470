//! Stored lists (`lua/list.lua`: pages, and a resource search's releases) and a running
//! attempt's notes (`lua/note.lua`).
//!
//! A release list is what a resource search found, kept server-side for its `下载 k` buttons:
//! each release's torrent_info as MoviePilot sent it (site cookie included) and the media_info
//! they share (once); the list's pages (text and keyboard) are beside it (`Keys::pages`). It
//! expires with its buttons, and a button names the list by its job id, never the data. A `grab` job reads the release it
//! downloads from here and never copies the cookie into the job.

use std::collections::HashMap;
use std::time::Duration;

use redis::AsyncCommands as _;
use serde_json::Value;

use super::scripts::ScriptCall;
use super::{Attempt, Ledger, LedgerError, scripts};

/// A stored release list, as a `grab` job reads it.
#[derive(Clone)]
pub struct StoredList {
    /// The shared media_info, verbatim.
    pub media_info: Value,
    /// torrent_info of each release, in list order (index 0 is `下载 1`).
    pub releases: Vec<Value>,
}

impl std::fmt::Debug for StoredList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Torrent data carries site cookies: never printed.
        f.debug_struct("StoredList")
            .field("releases", &self.releases.len())
            .finish_non_exhaustive()
    }
}

impl Ledger {
    /// Stores the list job `job_id` showed (replacing an earlier one of the same job), expiring
    /// after `ttl`: its pages (text and keyboard of each, page 1 first), and for a resource
    /// search the releases its buttons download (`media_info` and each release's torrent_info).
    pub async fn store_list(
        &self,
        job_id: u64,
        ttl: Duration,
        pages: &[(String, String)],
        releases: Option<(&Value, &[Value])>,
    ) -> Result<(), LedgerError> {
        let call = self.store_list_call(job_id, ttl, pages, releases);
        let _: i64 = self.send(&call, "storing a list").await?;
        Ok(())
    }

    pub(super) fn store_list_call(
        &self,
        job_id: u64,
        ttl: Duration,
        pages: &[(String, String)],
        releases: Option<(&Value, &[Value])>,
    ) -> ScriptCall {
        let count = releases.map_or(0, |(_, r)| r.len());
        let mut call = ScriptCall::new(&scripts::LIST, 2, 4 + 2 * pages.len() + count, 4096);
        call.key("pages HASH", self.keys.pages(job_id))
            .key("releases HASH", self.keys.releases(job_id))
            .arg("lifetime", ttl.as_secs().max(1))
            .arg("N", pages.len())
            .arg("R", count);
        for (text, markup) in pages {
            call.args([text, markup]);
        }
        if let Some((media, list)) = releases.filter(|(_, r)| !r.is_empty()) {
            call.args([media.to_string()]);
            call.args(list.iter().map(Value::to_string));
        }
        call
    }

    /// The list resource-search job `job_id` stored; `None` once it has expired.
    pub async fn releases(&self, job_id: u64) -> Result<Option<StoredList>, LedgerError> {
        let mut conn = self.conn.clone();
        let fields: HashMap<String, String> = conn
            .hgetall(self.keys.releases(job_id))
            .await
            .map_err(LedgerError::redis("reading a release list"))?;
        let corrupt = |what: &str| LedgerError::Corrupt {
            doing: "reading a release list",
            detail: format!("list {job_id}: {what}"),
        };
        let Some(media) = fields.get("media") else {
            return Ok(None);
        };
        let media_info = serde_json::from_str(media).map_err(|_| corrupt("media is not JSON"))?;
        let count: usize = fields
            .get("count")
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| corrupt("no count"))?;
        let releases = (1..=count)
            .map(|i| {
                fields
                    .get(&format!("r{i}"))
                    .and_then(|r| serde_json::from_str(r).ok())
                    .ok_or_else(|| corrupt("a release is missing or not JSON"))
            })
            .collect::<Result<Vec<Value>, _>>()?;
        Ok(Some(StoredList {
            media_info,
            releases,
        }))
    }

    /// note.lua: writes `fields` into the job while `attempt` owns it. `false`: it no longer
    /// does (its lease was taken), and nothing was written.
    pub async fn note(
        &self,
        attempt: &Attempt,
        fields: &[(&str, String)],
    ) -> Result<bool, LedgerError> {
        let call = self.note_call(attempt, fields);
        let written: i64 = self.send(&call, "noting a download's intent").await?;
        Ok(written == 1)
    }

    pub(super) fn note_call(&self, attempt: &Attempt, fields: &[(&str, String)]) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::NOTE, 1, 3 + 2 * fields.len(), 256);
        call.key("job HASH", self.keys.job(attempt.job_id))
            .arg("stream entry id", &attempt.entry)
            .arg("consumer name", &attempt.consumer)
            .arg("attempt number", attempt.attempt);
        for (k, v) in fields {
            call.args([*k, v.as_str()]);
        }
        call
    }
}
