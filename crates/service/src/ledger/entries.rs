//! The streams' entries as the worker and the dispatcher use them, read from the wire here
//! once: the reader hands them out, the dispatcher's side of the ledger and the attempts take
//! them back. A leaf of `ledger`, so those three need not know each other to share them.

use std::collections::HashMap;

use redis::streams::StreamId;

use super::keys;
use crate::vocabulary::ReplyKind;

/// A jobs-stream entry: its id, and the job it names (`None`: written by hand, or damaged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEntry {
    pub entry: String,
    pub job_id: Option<u64>,
}

impl JobEntry {
    pub(super) fn from_stream(id: StreamId) -> JobEntry {
        let job_id = id
            .map
            .get("job")
            .and_then(|v| redis::from_redis_value_ref(v).ok());
        JobEntry {
            entry: id.id,
            job_id,
        }
    }
}

/// A replies- or callbacks-stream entry: what it asks the dispatcher to deliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaneEntry {
    Reply(ReplyEntry),
    Callback(CallbackEntry),
    /// Nothing can be delivered (a reply without a chat id, a callback without its query id).
    Malformed {
        lane: Lane,
        entry: String,
    },
}

impl LaneEntry {
    pub(super) fn from_stream(lane: Lane, id: &StreamId) -> LaneEntry {
        let parsed = match lane {
            Lane::Replies => ReplyEntry::from_stream(id).map(LaneEntry::Reply),
            Lane::Callbacks => CallbackEntry::from_stream(id).map(LaneEntry::Callback),
        };
        parsed.unwrap_or_else(|| LaneEntry::Malformed {
            lane,
            entry: id.id.clone(),
        })
    }

    /// The stream entry's id.
    pub fn id(&self) -> &str {
        match self {
            LaneEntry::Reply(r) => &r.entry,
            LaneEntry::Callback(c) => &c.entry,
            LaneEntry::Malformed { entry, .. } => entry,
        }
    }

    pub fn lane(&self) -> Lane {
        match self {
            LaneEntry::Reply(_) => Lane::Replies,
            LaneEntry::Callback(_) => Lane::Callbacks,
            LaneEntry::Malformed { lane, .. } => *lane,
        }
    }
}

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
    /// A live card's edit: the card's id and the seq of its step (card.lua), checked against
    /// the card's newest when it is sent.
    pub card: Option<(u64, u64)>,
    /// The forum topic a new message goes to (`message_thread_id`); `None`: the chat's General
    /// topic, or a chat without topics (entries from before forum topics have none).
    pub thread_id: Option<i64>,
    /// A notice in its person's quiet hours (`/notify`): sent with `disable_notification`.
    pub silent: bool,
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
            card: num(&f, "card").zip(num(&f, "card_seq")),
            // 1 is the General topic, which a send must not name (Telegram refuses it).
            thread_id: num::<i64>(&f, "thread_id").filter(|&t| t > 1),
            silent: f.get("silent").is_some_and(|v| v == "1"),
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
        assert_eq!(known.thread_id, None, "an entry without a thread: General");
        let topic = ReplyEntry::from_stream(&entry(&[("chat_id", "-5"), ("thread_id", "7")]));
        assert_eq!(topic.unwrap().thread_id, Some(7));
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
