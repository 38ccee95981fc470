//! Release lists (`lua/releases.lua`) and a running attempt's notes (`lua/note.lua`).
//!
//! A release list is what a resource search found, kept server-side for its `下载 k` buttons:
//! each release's torrent_info as MoviePilot sent it (site cookie included), the media_info
//! they share (once), and the list's text and keyboard. It expires with its buttons, and a
//! button names the list by its job id, never the data. A `grab` job reads the release it
//! downloads from here and never copies the cookie into the job.

use std::collections::HashMap;
use std::time::Duration;

use redis::AsyncCommands as _;
use serde_json::Value;

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
    /// Stores the list resource-search job `job_id` found (replacing an earlier one of the same
    /// job), expiring after `ttl`. `text` and `markup` are the reply that shows it.
    pub async fn store_releases(
        &self,
        job_id: u64,
        ttl: Duration,
        text: &str,
        markup: &str,
        media_info: &Value,
        releases: &[Value],
    ) -> Result<(), LedgerError> {
        let mut inv = scripts::RELEASES.prepare_invoke();
        inv.key(self.keys.releases(job_id))
            .arg(ttl.as_secs().max(1))
            .arg("job_id")
            .arg(job_id)
            .arg("text")
            .arg(text)
            .arg("markup")
            .arg(markup)
            .arg("media")
            .arg(media_info.to_string())
            .arg("count")
            .arg(releases.len());
        for (i, r) in releases.iter().enumerate() {
            inv.arg(format!("r{}", i + 1)).arg(r.to_string());
        }
        let mut conn = self.conn.clone();
        let _: i64 = inv
            .invoke_async(&mut conn)
            .await
            .map_err(LedgerError::redis("storing a release list"))?;
        Ok(())
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
        let mut inv = scripts::NOTE.prepare_invoke();
        inv.key(self.keys.job(attempt.job_id))
            .arg(&attempt.entry)
            .arg(&attempt.consumer)
            .arg(attempt.attempt);
        for (k, v) in fields {
            inv.arg(*k).arg(v);
        }
        let mut conn = self.conn.clone();
        let written: i64 = inv
            .invoke_async(&mut conn)
            .await
            .map_err(LedgerError::redis("noting a download's intent"))?;
        Ok(written == 1)
    }
}
