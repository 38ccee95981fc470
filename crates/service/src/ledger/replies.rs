//! The dispatcher's side of the ledger: read reply and callback entries, record each reply's
//! delivery state around the Bot API call, renew leases, and queue progress messages.

use std::time::Duration;

use super::entries::{Lane, LaneEntry, ReplyEntry};
use super::scripts::{OrEmpty, ScriptCall};
use super::{Attempt, Ledger, LedgerError, keys, scripts};
use crate::vocabulary::ReplyKind;

/// The form a message went in: what an edit of it must change (its text or its caption).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// sendPhoto: the text is the photo's caption.
    Photo,
    /// sendMessage (or an edit of a text message).
    Text,
}

impl Form {
    pub fn as_str(self) -> &'static str {
        match self {
            Form::Photo => "photo",
            Form::Text => "text",
        }
    }

    fn parse(text: &str) -> Option<Form> {
        [Form::Photo, Form::Text]
            .into_iter()
            .find(|f| f.as_str() == text)
    }
}

/// What reply_begin.lua said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begin {
    /// Send it; `attempts` counts this one. `progress_message_id`: the job's "working on it"
    /// message, if it has one, which its result replaces. `form`: the form an earlier attempt
    /// settled on (text after a refused poster: reply_form.lua). `photo_message_id`: the job's
    /// reply's message when it went as a photo, whose edit changes the caption.
    Send {
        attempts: u64,
        progress_message_id: Option<i64>,
        form: Option<Form>,
        photo_message_id: Option<i64>,
    },
    /// Already settled (a redelivery after a crash that followed the recording): `sent` or
    /// `failed`, or `gone` when the entry is no longer pending in the group (settled by another
    /// dispatcher, its record in the job HASH).
    Done { state: String },
}

/// How a send ended, as reply_end.lua records it: Telegram's message id and the form the
/// message went in, or why it failed for good.
pub type ReplyEnded = Result<(i64, Form), String>;

impl Ledger {
    pub(super) fn lane_stream(&self, lane: Lane) -> String {
        match lane {
            Lane::Replies => self.keys.replies_stream(),
            Lane::Callbacks => self.keys.callbacks_stream(),
        }
    }

    /// XAUTOCLAIM on a lane: entries whose dispatcher stopped renewing its lease; none while the
    /// group is missing.
    pub async fn reclaim_lane(
        &self,
        lane: Lane,
        consumer: &str,
        min_idle: Duration,
        count: usize,
    ) -> Result<Vec<LaneEntry>, LedgerError> {
        let ids = self
            .autoclaim(
                &self.lane_stream(lane),
                lane.stream().group(),
                consumer,
                min_idle,
                count,
            )
            .await?;
        Ok(ids
            .iter()
            .map(|id| LaneEntry::from_stream(lane, id))
            .collect())
    }

    /// held_elsewhere.lua: the replies before `newest` pending under another consumer than
    /// `consumer`, with their chats (at most `limit` looked at). Empty at once, for one
    /// XPENDING summary, while every pending reply is this consumer's.
    pub async fn replies_held_elsewhere(
        &self,
        consumer: &str,
        newest: &str,
        limit: usize,
    ) -> Result<Vec<(String, i64)>, LedgerError> {
        let call = self.held_elsewhere_find_call(consumer, newest, limit);
        let flat: Vec<String> = self
            .send(&call, "looking for replies pending elsewhere")
            .await?;
        Ok(flat
            .chunks_exact(2)
            .filter_map(|pair| Some((pair[0].clone(), pair[1].parse().ok()?)))
            .collect())
    }

    pub(super) fn held_elsewhere_find_call(
        &self,
        consumer: &str,
        newest: &str,
        limit: usize,
    ) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::HELD_ELSEWHERE, 1, 5, 96);
        call.key("replies stream", self.keys.replies_stream())
            .arg("replies consumer group", keys::Stream::Replies.group())
            .arg("this dispatcher's consumer name", consumer)
            .arg("mode", "find")
            .arg("the newest entry id", newest)
            .arg("at most this many", limit);
        call
    }

    /// held_elsewhere.lua: which of `entries` are no longer pending under another consumer
    /// than `consumer` (acknowledged, or taken over by it).
    pub async fn replies_no_longer_elsewhere(
        &self,
        consumer: &str,
        entries: &[String],
    ) -> Result<Vec<String>, LedgerError> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let call = self.held_elsewhere_gone_call(consumer, entries);
        self.send(&call, "checking replies pending elsewhere").await
    }

    pub(super) fn held_elsewhere_gone_call(
        &self,
        consumer: &str,
        entries: &[String],
    ) -> ScriptCall {
        let mut call = ScriptCall::new(
            &scripts::HELD_ELSEWHERE,
            1,
            3 + entries.len(),
            32 * entries.len(),
        );
        call.key("replies stream", self.keys.replies_stream())
            .arg("replies consumer group", keys::Stream::Replies.group())
            .arg("this dispatcher's consumer name", consumer)
            .arg("mode", "gone")
            .args(entries);
        call
    }

    /// lease.lua on a lane; returns the entries this consumer no longer owns.
    pub async fn renew_lane(
        &self,
        lane: Lane,
        consumer: &str,
        entries: &[String],
    ) -> Result<Vec<String>, LedgerError> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let call = self.renew_lane_call(lane, consumer, entries);
        self.send(&call, "renewing reply leases").await
    }

    pub(super) fn renew_lane_call(
        &self,
        lane: Lane,
        consumer: &str,
        entries: &[String],
    ) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::LEASE, 1, 2 + entries.len(), 32 * entries.len());
        call.key("stream", self.lane_stream(lane))
            .arg("consumer group", lane.stream().group())
            .arg("consumer name", consumer)
            .args(entries);
        call
    }

    /// reply_begin.lua: `sending` is recorded before the Bot API call.
    pub async fn reply_begin(
        &self,
        reply: &ReplyEntry,
        consumer: &str,
        retention: Duration,
    ) -> Result<Begin, LedgerError> {
        let call = self.reply_begin_call(reply, consumer, retention);
        // Durable: a `sending` lost in a failover would send the message again.
        let out: Vec<String> = self.send_durable(&call, "recording a send").await?;
        match out.first().map(String::as_str) {
            Some("send") => Ok(Begin::Send {
                attempts: out.get(1).and_then(|a| a.parse().ok()).unwrap_or(1),
                progress_message_id: out.get(2).and_then(|m| m.parse().ok()),
                form: out.get(3).and_then(|f| Form::parse(f)),
                photo_message_id: out.get(4).and_then(|m| m.parse().ok()),
            }),
            Some("done") => Ok(Begin::Done {
                state: out.get(1).cloned().unwrap_or_default(),
            }),
            _ => Err(LedgerError::Corrupt {
                doing: "recording a send",
                detail: format!("reply_begin answered {out:?}"),
            }),
        }
    }

    pub(super) fn reply_begin_call(
        &self,
        reply: &ReplyEntry,
        consumer: &str,
        retention: Duration,
    ) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::REPLY_BEGIN, 4, 9, 256);
        let (card, card_seq) = reply.card.unzip();
        call.key("reply HASH", self.keys.reply(&reply.entry))
            .key("replies stream", self.keys.replies_stream())
            // Any key of the deployment's slot will do when there is no job: the script reads
            // KEYS[3] only for a job's reply.
            .key("job HASH", self.keys.job(reply.job_id.unwrap_or(0)))
            .key("card HASH", self.keys.card(card.unwrap_or(0)))
            .arg("entry id", &reply.entry)
            .arg("replies consumer group", keys::Stream::Replies.group())
            .arg("consumer name", consumer)
            .arg("retention of the reply HASH", retention.as_secs())
            .arg("chat id", reply.chat_id)
            .arg("job id", OrEmpty(reply.job_id))
            .arg("kind", reply.kind.map_or("", ReplyKind::as_str))
            .arg("a card's edit: its seq", OrEmpty(card_seq))
            .arg("the card's id", OrEmpty(card));
        call
    }

    /// reply_end.lua for one reply: `sent` (with Telegram's message_id and the form it went in)
    /// or `failed` (with the reason), and the entry acknowledged, in one step.
    pub async fn reply_end(
        &self,
        reply: &ReplyEntry,
        sent: Result<(i64, Form), String>,
        retention: Duration,
    ) -> Result<(), LedgerError> {
        self.reply_end_all(&[(reply, &sent)], retention).await
    }

    /// reply_end.lua for every reply a dispatcher ended at once (a group commit): each reply's
    /// outcome recorded and its entry acknowledged, all in one step.
    pub async fn reply_end_all(
        &self,
        ended: &[(&ReplyEntry, &ReplyEnded)],
        retention: Duration,
    ) -> Result<(), LedgerError> {
        if ended.is_empty() {
            return Ok(());
        }
        let call = self.reply_end_call(ended, retention);
        let answers: Vec<Vec<String>> = self
            .send_durable(&call, "recording replies' outcomes")
            .await?;
        if answers.len() != ended.len() {
            return Err(LedgerError::Corrupt {
                doing: "recording replies' outcomes",
                detail: format!("{} answers for {} replies", answers.len(), ended.len()),
            });
        }
        Ok(())
    }

    pub(super) fn reply_end_call(
        &self,
        ended: &[(&ReplyEntry, &ReplyEnded)],
        retention: Duration,
    ) -> ScriptCall {
        let errors: usize = ended
            .iter()
            .map(|(_, s)| s.as_ref().err().map_or(0, String::len))
            .sum();
        let mut call = ScriptCall::new(
            &scripts::REPLY_END,
            2 + ended.len(),
            2 + 7 * ended.len(),
            64 + 160 * ended.len() + errors,
        );
        call.key("replies stream", self.keys.replies_stream())
            .key("job key prefix", self.keys.job_prefix())
            .keys(ended.iter().map(|(reply, _)| self.keys.reply(&reply.entry)))
            .arg("replies consumer group", keys::Stream::Replies.group())
            .arg("retention of a reply HASH", retention.as_secs());
        for (reply, sent) in ended {
            let (state, message_id, error, form) = match sent {
                Ok((id, form)) => ("sent", id.to_string(), "", form.as_str()),
                Err(e) => ("failed", String::new(), e.as_str(), ""),
            };
            // A step edits the progress message, or stands in for it: neither is the job's reply.
            let progress = matches!(reply.kind, Some(ReplyKind::Progress | ReplyKind::Step));
            let job = reply.job_id.map(|j| j.to_string()).unwrap_or_default();
            call.args([
                reply.entry.as_str(),
                state,
                message_id.as_str(),
                error,
                job.as_str(),
                if progress { "progress" } else { "" },
                form,
            ]);
        }
        call
    }

    /// reply_form.lua: this reply goes as text after Telegram refused its poster, recorded
    /// before the text is sent. `false`: the send is no longer this consumer's.
    pub async fn reply_form(
        &self,
        reply: &ReplyEntry,
        consumer: &str,
        form: Form,
    ) -> Result<bool, LedgerError> {
        let call = self.reply_form_call(reply, consumer, form);
        let recorded: i64 = self.send_durable(&call, "recording a reply's form").await?;
        Ok(recorded == 1)
    }

    pub(super) fn reply_form_call(
        &self,
        reply: &ReplyEntry,
        consumer: &str,
        form: Form,
    ) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::REPLY_FORM, 1, 2, 128);
        call.key("reply HASH", self.keys.reply(&reply.entry))
            .arg("consumer name", consumer)
            .arg("form", form.as_str());
        call
    }

    /// Acknowledges and deletes an answered (or unanswerable) callback entry.
    pub async fn callback_done(&self, entry: &str) -> Result<(), LedgerError> {
        let stream = self.keys.callbacks_stream();
        self.ack_and_delete(
            &stream,
            keys::Stream::Callbacks.group(),
            entry,
            "acknowledging a callback answer",
        )
        .await
    }

    /// Acknowledges and deletes a reply entry that cannot be delivered (no chat id).
    pub async fn drop_reply(&self, entry: &str) -> Result<(), LedgerError> {
        let stream = self.keys.replies_stream();
        self.ack_and_delete(
            &stream,
            keys::Stream::Replies.group(),
            entry,
            "dropping a malformed reply",
        )
        .await
    }

    /// progress.lua: queue "working on it" for a job still running under `attempt`.
    pub async fn queue_progress(
        &self,
        job_id: u64,
        attempt: u64,
        text: &str,
    ) -> Result<bool, LedgerError> {
        let call = self.queue_progress_call(job_id, attempt, text);
        let queued: i64 = self.send(&call, "queueing a progress message").await?;
        Ok(queued == 1)
    }

    /// step.lua: "how far the job got" as an edit of its progress message, queued only while
    /// `attempt` owns the job and only if it has a progress message. `false`: not queued.
    pub async fn queue_step(&self, attempt: &Attempt, text: &str) -> Result<bool, LedgerError> {
        let call = self.queue_step_call(attempt, text);
        let queued: i64 = self.send(&call, "queueing a job's step").await?;
        Ok(queued == 1)
    }

    pub(super) fn queue_step_call(&self, attempt: &Attempt, text: &str) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::STEP, 2, 5, 256 + text.len());
        call.key("job HASH", self.keys.job(attempt.job_id))
            .key("replies stream", self.keys.replies_stream())
            .arg("stream entry id", &attempt.entry)
            .arg("consumer name", &attempt.consumer)
            .arg("attempt number", attempt.attempt)
            .arg("text", text)
            .arg("replies consumer group", keys::Stream::Replies.group());
        call
    }

    pub(super) fn queue_progress_call(&self, job_id: u64, attempt: u64, text: &str) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::PROGRESS, 2, 3, 128 + text.len());
        call.key("job HASH", self.keys.job(job_id))
            .key("replies stream", self.keys.replies_stream())
            .arg("attempt number", attempt)
            .arg("text", text)
            .arg("replies consumer group", keys::Stream::Replies.group());
        call
    }
}
