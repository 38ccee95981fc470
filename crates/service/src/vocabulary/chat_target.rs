//! Where a message goes: a chat, and in a forum supergroup one of its topics. The settings
//! (`notify.routes`, `notify.chats`, `telegram.admin_chats`) spell it `chat` or `chat/topic`,
//! and so do the lists of chats Rust hands the scripts (`lua/include/common.lua`'s
//! `queue_reply` splits it into a replies entry's `chat_id` and `thread_id`).
//!
//! The General topic has no thread here: Telegram numbers it 1 but refuses
//! `message_thread_id=1` ("message thread not found"); a message without a thread lands in it.
//! So `chat/1` and a bare `chat` are the same target.

use std::fmt;

/// A chat, and the forum topic in it (`None`: the General topic, or a chat without topics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChatTarget {
    pub chat: i64,
    pub thread: Option<i64>,
}

/// Telegram's General topic: its id, which a send must not name.
const GENERAL_TOPIC: i64 = 1;

impl ChatTarget {
    /// A chat's General topic (or the chat itself, without topics).
    pub fn chat(chat: i64) -> ChatTarget {
        ChatTarget { chat, thread: None }
    }

    /// `chat` in `thread`; the General topic (1) and anything not a topic id is no thread.
    pub fn in_thread(chat: i64, thread: Option<i64>) -> ChatTarget {
        ChatTarget {
            chat,
            thread: thread.filter(|&t| t > GENERAL_TOPIC),
        }
    }

    /// The thread as a script's argument or a stream field: its id, or "" for none.
    pub fn thread_arg(&self) -> String {
        self.thread.map(|t| t.to_string()).unwrap_or_default()
    }

    /// `chat` or `chat/topic`, each a number (a topic a positive one). The error says what is
    /// wrong with `text`, for the setting's message.
    pub fn parse(text: &str) -> Result<ChatTarget, String> {
        let text = text.trim();
        let (chat, topic) = match text.split_once('/') {
            Some((chat, topic)) => (chat.trim(), Some(topic.trim())),
            None => (text, None),
        };
        let chat = chat
            .parse::<i64>()
            .map_err(|_| format!("{text:?} is not a chat id (a number, or chat/topic)"))?;
        let thread = match topic {
            None => None,
            Some(topic) => match topic.parse::<i64>() {
                Ok(t) if t > 0 => Some(t),
                _ => {
                    return Err(format!(
                        "{text:?} has {topic:?} after '/', not a topic id (a positive number)"
                    ));
                }
            },
        };
        Ok(ChatTarget::in_thread(chat, thread))
    }
}

/// `chat` or `chat/topic`: the settings' spelling, and what the scripts split.
impl fmt::Display for ChatTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.thread {
            Some(thread) => write!(f, "{}/{thread}", self.chat),
            None => write!(f, "{}", self.chat),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ChatTarget;

    #[test]
    fn a_topic_is_written_after_the_chat_and_general_is_no_thread() {
        let topic = ChatTarget::parse("-100123/7").unwrap();
        assert_eq!((topic.chat, topic.thread), (-100123, Some(7)));
        assert_eq!(topic.to_string(), "-100123/7");
        for general in ["-100123/1", "-100123", " -100123 "] {
            assert_eq!(
                ChatTarget::parse(general).unwrap(),
                ChatTarget::chat(-100123),
                "{general}"
            );
        }
        assert_eq!(ChatTarget::chat(5).to_string(), "5");
        for bad in ["abc", "-100/x", "-100/0", "-100/-3", "/7", ""] {
            assert!(ChatTarget::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(ChatTarget::in_thread(-1, Some(1)).thread, None);
    }
}
