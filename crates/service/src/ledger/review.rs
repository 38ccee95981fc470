//! A person's decision on a job held for review (`lua/resolve.lua`, the CLI's and the operator
//! page's way; the review buttons go through tap.lua).

use std::time::Duration;

use super::scripts::ScriptCall;
use super::{Ledger, LedgerError, keys, scripts};
use crate::vocabulary::{JobState, Resolution, Resolved};

impl Ledger {
    /// resolve.lua: settles a `needs_review` job, or says why it did not.
    pub async fn resolve(
        &self,
        job_id: u64,
        decision: Resolution,
        note: &str,
        reply: &str,
        retention: Duration,
    ) -> Result<Resolved, LedgerError> {
        let call = self.resolve_call(job_id, decision, note, reply, retention);
        let out: Vec<String> = self.send_durable(&call, "resolving a job").await?;
        let state = out.get(1).and_then(|s| s.parse::<JobState>().ok());
        match (
            out.first().map(String::as_str),
            out.get(1).map(String::as_str),
            state,
        ) {
            (Some("refused"), Some("missing"), _) => Ok(Resolved::Missing),
            (Some("ok"), _, Some(state)) => Ok(Resolved::Settled(state)),
            (Some("refused"), _, Some(state)) => Ok(Resolved::NotWaiting(state)),
            _ => Err(LedgerError::Corrupt {
                doing: "resolving a job",
                detail: format!("resolve answered {out:?}"),
            }),
        }
    }

    pub(super) fn resolve_call(
        &self,
        job_id: u64,
        decision: Resolution,
        note: &str,
        reply: &str,
        retention: Duration,
    ) -> ScriptCall {
        let k = &self.keys;
        let mut call = ScriptCall::new(&scripts::RESOLVE, 4, 6, 256 + note.len() + reply.len());
        call.key("job HASH", k.job(job_id))
            .key("jobs stream", k.jobs_stream())
            .key("replies stream", k.replies_stream())
            .key("review index", k.review_index())
            .arg("decision", decision.as_str())
            .arg("note", note)
            .arg("reply text", reply)
            .arg("retention", retention.as_secs())
            .arg("jobs consumer group", keys::Stream::Jobs.group())
            .arg("replies consumer group", keys::Stream::Replies.group());
        call
    }
}
