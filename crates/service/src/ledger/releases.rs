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

    /// step_key.lua "take": the business key `digest` (a step's command's, e.g. `grab` of a
    /// release) for the job `attempt` runs, in a window of `window`, unless a job that has not
    /// failed holds it; the holder is recorded in the job's `field`.
    pub async fn take_step_key(
        &self,
        attempt: &Attempt,
        digest: &str,
        window: Duration,
        field: &str,
    ) -> Result<StepKey, LedgerError> {
        let call = self.step_key_call(attempt, digest, Some((window, field)));
        let answer: Vec<String> = self
            .send_durable(&call, "taking a step's business key")
            .await?;
        match answer.as_slice() {
            [outcome, id, _] if outcome == "taken" => Ok(StepKey::Taken(parse_id(id)?)),
            [outcome, id, state] if outcome == "held" => {
                Ok(StepKey::Held(parse_id(id)?, state.clone()))
            }
            [outcome, ..] if outcome == "stale" => Ok(StepKey::Stale),
            other => Err(LedgerError::Corrupt {
                doing: "taking a step's business key",
                detail: format!("step_key.lua answered {other:?}"),
            }),
        }
    }

    /// step_key.lua "release": the key `digest` deleted if it names the job `attempt` runs.
    /// `false`: this attempt no longer owns the job.
    pub async fn release_step_key(
        &self,
        attempt: &Attempt,
        digest: &str,
    ) -> Result<bool, LedgerError> {
        let call = self.step_key_call(attempt, digest, None);
        let answer: Vec<String> = self
            .send(&call, "giving back a step's business key")
            .await?;
        Ok(answer.first().map(String::as_str) == Some("released"))
    }

    pub(super) fn step_key_call(
        &self,
        attempt: &Attempt,
        digest: &str,
        take: Option<(Duration, &str)>,
    ) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::STEP_KEY, 3, 6, 256);
        call.key("job HASH", self.keys.job(attempt.job_id))
            .key("command key", self.keys.command(digest))
            .key("job key prefix", self.keys.job_prefix())
            .arg("stream entry id", &attempt.entry)
            .arg("consumer name", &attempt.consumer)
            .arg("attempt number", attempt.attempt);
        match take {
            Some((window, field)) => call
                .arg("mode", "take")
                .arg("window", window.as_millis().max(1) as u64)
                .arg("the job field", field),
            None => call
                .arg("mode", "release")
                .arg("window", 0)
                .arg("the job field", ""),
        };
        call
    }
}

/// What step_key.lua's "take" found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepKey {
    /// The key names this job (taken now, or by an earlier attempt of it).
    Taken(u64),
    /// Job id holds it and has not failed (its state): the step is that job's.
    Held(u64, String),
    /// This attempt no longer owns the job.
    Stale,
}

fn parse_id(id: &str) -> Result<u64, LedgerError> {
    id.parse().map_err(|_| LedgerError::Corrupt {
        doing: "taking a step's business key",
        detail: format!("step_key.lua named job {id:?}"),
    })
}
