//! The parts of Telegram's `Update` that oncebot reads.
//!
//! Deliberately tolerant: unknown fields and unknown update kinds are accepted (an update the
//! bot does not model must still be acknowledged, or Telegram retries it for a day), while a
//! body without a numeric `update_id` is not an update at all. Ids are `i64`: chat and user ids
//! need up to 52 bits.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub struct Update {
    pub update_id: i64,
    #[serde(default)]
    pub message: Option<Message>,
    #[serde(default)]
    pub edited_message: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub callback_query: Option<CallbackQuery>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    pub message_id: i64,
    #[serde(default)]
    pub from: Option<User>,
    pub chat: Chat,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub message_thread_id: Option<i64>,
    #[serde(default)]
    pub is_topic_message: bool,
}

impl Message {
    /// The forum topic the message is in: its `message_thread_id` only when `is_topic_message`
    /// says it is one. A reply in a plain supergroup (or in a forum's General topic) carries a
    /// `message_thread_id` too, the thread of replies, which a send must not echo (Telegram
    /// refuses it: "message thread not found").
    pub fn topic(&self) -> Option<i64> {
        self.message_thread_id.filter(|_| self.is_topic_message)
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct User {
    pub id: i64,
    #[serde(default)]
    pub is_bot: bool,
    /// What they call themselves (their own choice: shown to admins cleaned and marked so).
    #[serde(default)]
    pub first_name: Option<String>,
    #[serde(default)]
    pub last_name: Option<String>,
    #[serde(default)]
    pub username: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Chat {
    pub id: i64,
    /// "private", "group", "supergroup" or "channel".
    #[serde(rename = "type")]
    pub kind: String,
}

/// A tap on an inline button.
#[derive(Debug, Clone, Deserialize)]
pub struct CallbackQuery {
    pub id: String,
    pub from: User,
    /// The message the button was under. A `MaybeInaccessibleMessage`: when the message is too
    /// old to be shown to the bot its `date` is 0, but `message_id` and `chat` are still there.
    /// Absent for buttons on inline-mode messages, which oncebot never sends.
    #[serde(default)]
    pub message: Option<ButtonMessage>,
    #[serde(default)]
    pub data: Option<String>,
}

/// The fields of a (maybe inaccessible) message that say where a button was.
#[derive(Debug, Clone, Deserialize)]
pub struct ButtonMessage {
    pub message_id: i64,
    pub chat: Chat,
    /// 0 for an inaccessible message.
    #[serde(default)]
    pub date: i64,
    #[serde(default)]
    pub message_thread_id: Option<i64>,
    #[serde(default)]
    pub is_topic_message: bool,
}

impl ButtonMessage {
    /// The forum topic the message is in: its `message_thread_id` only when `is_topic_message`
    /// says it is one. A reply in a plain supergroup (or in a forum's General topic) carries a
    /// `message_thread_id` too, the thread of replies, which a send must not echo (Telegram
    /// refuses it: "message thread not found").
    pub fn topic(&self) -> Option<i64> {
        self.message_thread_id.filter(|_| self.is_topic_message)
    }
}
