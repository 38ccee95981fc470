//! The Bot API's request bodies for a reply and the one thing read from its answer (the sent
//! message's id). Their JSON is Telegram's wire format, pinned by the tests below; it is its
//! own file so the sending (`send`) reads as what it asks, not how the asking is spelled.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// A `sendMessage` / `editMessageText` body, written straight from its fields (fields in the
/// order `json!` gave them before). The markup goes in as the stored JSON text.
#[derive(Serialize)]
pub(super) struct TextBody<'a> {
    pub(super) chat_id: i64,
    /// A new message's forum topic (never on an edit: a message id names it in its chat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) message_thread_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) message_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reply_markup: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reply_parameters: Option<ReplyParameters>,
    /// A notice in its person's quiet hours: no sound (never on an edit, which makes none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) disable_notification: Option<bool>,
    pub(super) text: &'a str,
}

/// A `sendPhoto` body: the poster by URL (Telegram fetches it), the text as its caption.
#[derive(Serialize)]
pub(super) struct PhotoBody<'a> {
    pub(super) chat_id: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) message_thread_id: Option<i64>,
    pub(super) photo: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) caption: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reply_markup: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reply_parameters: Option<ReplyParameters>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) disable_notification: Option<bool>,
}

/// An `editMessageCaption` body.
#[derive(Serialize)]
pub(super) struct CaptionBody<'a> {
    pub(super) chat_id: i64,
    pub(super) message_id: i64,
    pub(super) caption: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reply_markup: Option<&'a RawValue>,
}

/// An `editMessageMedia` body: a new poster by URL with the caption.
#[derive(Serialize)]
pub(super) struct MediaBody<'a> {
    pub(super) chat_id: i64,
    pub(super) message_id: i64,
    pub(super) media: InputMediaPhoto<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reply_markup: Option<&'a RawValue>,
}

#[derive(Serialize)]
pub(super) struct InputMediaPhoto<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) media: &'a str,
    pub(super) caption: &'a str,
}

#[derive(Serialize, Clone, Copy)]
pub(super) struct ReplyParameters {
    pub(super) allow_sending_without_reply: bool,
    pub(super) message_id: i64,
}

/// What the dispatcher reads of a sent or edited message: its id. The rest of the Message is
/// skipped, not built; `true` (an edited inline message) or anything else without an id reads
/// as no id.
#[derive(Debug, Default)]
pub(super) struct SentMessage {
    pub(super) message_id: Option<i64>,
}

impl<'de> Deserialize<'de> for SentMessage {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = SentMessage;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a Message or true")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<SentMessage, A::Error> {
                #[derive(Deserialize)]
                #[serde(field_identifier, rename_all = "snake_case")]
                enum Field {
                    MessageId,
                    #[serde(other)]
                    Other,
                }
                let mut out = SentMessage::default();
                while let Some(key) = map.next_key::<Field>()? {
                    match key {
                        Field::MessageId => out.message_id = map.next_value::<Value>()?.as_i64(),
                        Field::Other => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
            fn visit_bool<E>(self, _: bool) -> Result<SentMessage, E> {
                Ok(SentMessage::default())
            }
            fn visit_unit<E>(self) -> Result<SentMessage, E> {
                Ok(SentMessage::default())
            }
        }
        d.deserialize_any(Visit)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_text_body_is_the_json_the_bot_api_reads() {
        let markup = RawValue::from_string(
            r#"{"inline_keyboard":[[{"callback_data":"t:ab","text":"确认"}]]}"#.into(),
        )
        .unwrap();
        let body = TextBody {
            chat_id: 7,
            message_thread_id: None,
            message_id: None,
            reply_markup: Some(&markup),
            reply_parameters: Some(ReplyParameters {
                allow_sending_without_reply: true,
                message_id: 3,
            }),
            disable_notification: None,
            text: "hi \"there\"",
        };
        let sent: Value = serde_json::from_str(&serde_json::to_string(&body).unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({"chat_id": 7, "text": "hi \"there\"",
                   "reply_markup": {"inline_keyboard": [[{"callback_data": "t:ab", "text": "确认"}]]},
                   "reply_parameters": {"message_id": 3, "allow_sending_without_reply": true}})
        );
        let bare = TextBody {
            chat_id: 7,
            message_thread_id: None,
            message_id: Some(9),
            reply_markup: None,
            reply_parameters: None,
            disable_notification: None,
            text: "x",
        };
        assert_eq!(
            serde_json::to_string(&bare).unwrap(),
            r#"{"chat_id":7,"message_id":9,"text":"x"}"#
        );
        let topic = TextBody {
            chat_id: -7,
            message_thread_id: Some(4),
            message_id: None,
            reply_markup: None,
            reply_parameters: None,
            disable_notification: None,
            text: "x",
        };
        assert_eq!(
            serde_json::to_string(&topic).unwrap(),
            r#"{"chat_id":-7,"message_thread_id":4,"text":"x"}"#
        );
        let quiet = TextBody {
            chat_id: 7,
            message_thread_id: None,
            message_id: None,
            reply_markup: None,
            reply_parameters: None,
            disable_notification: Some(true),
            text: "x",
        };
        assert_eq!(
            serde_json::to_string(&quiet).unwrap(),
            r#"{"chat_id":7,"disable_notification":true,"text":"x"}"#
        );
    }

    #[test]
    fn only_the_id_of_a_sent_message_is_read() {
        let message: SentMessage = serde_json::from_str(
            r#"{"message_id": 42, "from": {"id": 1, "is_bot": true}, "chat": {"id": 7, "type": "private"}, "date": 1, "text": "hi"}"#,
        )
        .unwrap();
        assert_eq!(message.message_id, Some(42));
        let edited_inline: SentMessage = serde_json::from_str("true").unwrap();
        assert_eq!(edited_inline.message_id, None);
    }
}
