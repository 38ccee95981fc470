//! The dispatcher's side of the ledger: read reply and callback entries, record each reply's
//! delivery state around the Bot API call, renew leases, and queue progress messages.

use std::collections::HashMap;
use std::time::Duration;

use redis::streams::StreamId;

use super::keys::Stream;
use super::reader::LaneEntry;
use super::scripts::{OrEmpty, ScriptCall};
use super::{Attempt, Ledger, LedgerError, keys, scripts};
use crate::vocabulary::ReplyKind;

/// One outgoing message as the replies stream carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplyEntry {
    pub entry: String,
    pub chat_id: i64,
    pub reply_to: Option<i64>,
    /// `None`: a kind this release does not know (a newer one wrote it); delivered as a plain
    /// message.
    pub kind: Option<ReplyKind>,
    pub job_id: Option<u64>,
    pub text: String,
    /// An InlineKeyboardMarkup as JSON.
    pub markup: Option<String>,
    /// Edit this message instead of sending a new one.
    pub edit_message_id: Option<i64>,
    /// Change the buttons of `edit_message_id` instead of sending text.
    pub op: Option<MarkupOp>,
    /// A poster's http(s) URL: the dispatcher sends it with sendPhoto, `text` as its caption.
    pub photo: Option<String>,
}

/// What a replies-stream entry's `op` asks of the dispatcher (its only values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkupOp {
    /// `clear_markup`: remove the message's buttons (used or cancelled).
    Clear,
    /// `edit_markup`: replace them with the entry's markup (a used `✓ 下载 k` button).
    Edit,
}

impl MarkupOp {
    pub fn as_str(self) -> &'static str {
        match self {
            MarkupOp::Clear => "clear_markup",
            MarkupOp::Edit => "edit_markup",
        }
    }

    fn parse(text: &str) -> Option<MarkupOp> {
        [MarkupOp::Clear, MarkupOp::Edit]
            .into_iter()
            .find(|op| op.as_str() == text)
    }
}

/// One answerCallbackQuery for the fast lane.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallbackEntry {
    pub entry: String,
    pub callback_query_id: String,
    pub text: String,
    pub show_alert: bool,
}

fn fields(id: &StreamId) -> HashMap<String, String> {
    id.map
        .iter()
        .filter_map(|(k, v)| {
            redis::from_redis_value::<String>(v.clone())
                .ok()
                .map(|s| (k.clone(), s))
        })
        .collect()
}

impl ReplyEntry {
    /// `None` for an entry without a usable chat id (it cannot be delivered anywhere), or with
    /// an `op` this release does not know (whatever it asks, sending its text is not it).
    pub fn from_stream(id: &StreamId) -> Option<ReplyEntry> {
        let mut f = fields(id);
        fn num<T: std::str::FromStr>(f: &HashMap<String, String>, k: &str) -> Option<T> {
            f.get(k).and_then(|v| v.parse().ok())
        }
        Some(ReplyEntry {
            entry: id.id.clone(),
            chat_id: num(&f, "chat_id")?,
            reply_to: num(&f, "reply_to"),
            job_id: num(&f, "job_id"),
            edit_message_id: num(&f, "edit_message_id"),
            kind: f.remove("kind").and_then(|k| k.parse().ok()),
            text: f.remove("text").unwrap_or_default(),
            markup: f.remove("markup").filter(|m| !m.is_empty()),
            op: match f.remove("op").filter(|o| !o.is_empty()) {
                None => None,
                Some(op) => Some(MarkupOp::parse(&op)?),
            },
            photo: f.remove("photo").filter(|p| !p.is_empty()),
        })
    }
}

impl CallbackEntry {
    pub fn from_stream(id: &StreamId) -> Option<CallbackEntry> {
        let mut f = fields(id);
        Some(CallbackEntry {
            entry: id.id.clone(),
            callback_query_id: f.remove("callback_query_id")?,
            text: f.remove("text").unwrap_or_default(),
            show_alert: f.get("show_alert").map(String::as_str) == Some("1"),
        })
    }
}

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

/// The streams the dispatcher consumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    Replies,
    Callbacks,
}

impl Lane {
    /// The stream it reads.
    pub fn stream(self) -> keys::Stream {
        match self {
            Lane::Replies => keys::Stream::Replies,
            Lane::Callbacks => keys::Stream::Callbacks,
        }
    }
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
        let mut call = ScriptCall::new(&scripts::REPLY_BEGIN, 3, 7, 256);
        call.key("reply HASH", self.keys.reply(&reply.entry))
            .key("replies stream", self.keys.replies_stream())
            // Any key of the deployment's slot will do when there is no job: the script reads
            // KEYS[3] only for a job's reply.
            .key("job HASH", self.keys.job(reply.job_id.unwrap_or(0)))
            .arg("entry id", &reply.entry)
            .arg("replies consumer group", keys::Stream::Replies.group())
            .arg("consumer name", consumer)
            .arg("retention of the reply HASH", retention.as_secs())
            .arg("chat id", reply.chat_id)
            .arg("job id", OrEmpty(reply.job_id))
            .arg("kind", reply.kind.map_or("", ReplyKind::as_str));
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

/// One stream's backlog, for the metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamStats {
    pub name: &'static str,
    /// Entries not done yet: waiting for a consumer plus pending. For the replies and
    /// callbacks streams that is XLEN (a finished entry is deleted). The jobs stream is trimmed
    /// in order (complete.lua) and may also keep finished entries newer than its oldest
    /// unfinished one, so there it is the group's `lag` plus `pending` (`XINFO GROUPS`, Redis
    /// 7), or XLEN from a Redis that does not report the lag.
    pub length: u64,
    /// Delivered to a consumer and not acknowledged.
    pub pending: u64,
    /// Age of the oldest unacknowledged entry (from its id's timestamp).
    pub oldest_pending: Duration,
}

/// The queues at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueStats {
    pub streams: Vec<StreamStats>,
    pub needs_review: u64,
    pub retry_scheduled: u64,
}

impl Ledger {
    /// XLEN and XPENDING of every stream, and the sizes of the review and retry sets.
    pub async fn queue_stats(&self) -> Result<QueueStats, LedgerError> {
        let streams = Stream::ALL.map(|s| (s.name(), s.key(&self.keys), s.group()));
        let mut pipe = redis::pipe();
        for (_, key, group) in &streams {
            pipe.cmd("XLEN").arg(key);
            pipe.cmd("XPENDING").arg(key).arg(*group);
        }
        pipe.cmd("SCARD").arg(self.keys.review_index());
        pipe.cmd("ZCARD").arg(self.keys.retry_schedule());
        let mut conn = self.conn.clone();
        let values: Vec<redis::Value> = pipe
            .ignore_errors()
            .query_async(&mut conn)
            .await
            .map_err(LedgerError::redis("reading queue sizes"))?;
        // XPENDING on a stream without its group (Redis lost its data) counts nothing pending;
        // any other refusal is an error.
        for value in &values {
            if let redis::Value::ServerError(e) = value
                && !super::is_missing_group_reply(e)
            {
                return Err(LedgerError::redis("reading queue sizes")(e.clone().into()));
            }
        }
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        let int = |v: Option<&redis::Value>| match v {
            Some(redis::Value::Int(n)) => *n as u64,
            _ => 0,
        };
        let mut out = Vec::new();
        for (i, (name, key, group)) in streams.iter().enumerate() {
            let mut length = int(values.get(2 * i));
            let (pending, oldest) = match values.get(2 * i + 1) {
                Some(redis::Value::Array(summary)) => {
                    let pending = int(summary.first());
                    let min_id: Option<String> = summary
                        .get(1)
                        .and_then(|v| redis::from_redis_value(v.clone()).ok());
                    let oldest_ms = min_id
                        .and_then(|id| id.split('-').next().and_then(|ms| ms.parse::<u64>().ok()))
                        .map(|ms| now_ms.saturating_sub(ms))
                        .unwrap_or(0);
                    (pending, Duration::from_millis(oldest_ms))
                }
                _ => (0, Duration::ZERO),
            };
            if *name == "jobs" && length > 0 {
                // Only for a stream that exists: XINFO of a missing key is an error.
                if let Some(lag) = self.group_lag(key, group).await? {
                    length = lag + pending;
                }
            }
            out.push(StreamStats {
                name,
                length,
                pending,
                oldest_pending: oldest,
            });
        }
        Ok(QueueStats {
            streams: out,
            needs_review: int(values.get(6)),
            retry_scheduled: int(values.get(7)),
        })
    }

    /// `lag` of `group` on `stream` (`XINFO GROUPS`): entries not yet delivered to it. `None`
    /// when Redis does not say (before 7.0, or when it cannot tell after deletions).
    async fn group_lag(&self, stream: &str, group: &str) -> Result<Option<u64>, LedgerError> {
        let mut conn = self.conn.clone();
        let groups: Vec<HashMap<String, redis::Value>> = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(stream)
            .query_async(&mut conn)
            .await
            .map_err(LedgerError::redis("reading the jobs group's lag"))?;
        Ok(groups
            .iter()
            .find(|g| {
                g.get("name")
                    .and_then(|n| redis::from_redis_value::<String>(n.clone()).ok())
                    .is_some_and(|n| n == group)
            })
            .and_then(|g| match g.get("lag") {
                Some(redis::Value::Int(n)) => u64::try_from(*n).ok(),
                _ => None,
            }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(fields: &[(&str, &str)]) -> StreamId {
        StreamId {
            id: "1-0".into(),
            map: fields
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        redis::Value::BulkString(v.as_bytes().to_vec()),
                    )
                })
                .collect(),
            ..StreamId::default()
        }
    }

    #[test]
    fn kind_and_op_are_read_into_their_types_at_the_edge() {
        let known = ReplyEntry::from_stream(&entry(&[
            ("chat_id", "5"),
            ("kind", "edit_markup"),
            ("op", "edit_markup"),
            ("edit_message_id", "9"),
        ]))
        .unwrap();
        assert_eq!(known.kind, Some(ReplyKind::EditMarkup));
        assert_eq!(known.op, Some(MarkupOp::Edit));
        // A kind a newer release wrote is still delivered, as a plain message.
        let newer = ReplyEntry::from_stream(&entry(&[("chat_id", "5"), ("kind", "later")]));
        assert_eq!(newer.unwrap().kind, None);
        // An op this release does not know is not sent as text.
        let odd = ReplyEntry::from_stream(&entry(&[("chat_id", "5"), ("op", "pin")]));
        assert_eq!(odd, None);
        for op in [MarkupOp::Clear, MarkupOp::Edit] {
            assert_eq!(MarkupOp::parse(op.as_str()), Some(op));
        }
    }
}
