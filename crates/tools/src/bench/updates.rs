//! Telegram updates as the bench sends them: realistic private-chat messages from allowed users.
//!
//! Every body is a read-only search (`/search <title>` or plain text, which a private chat reads
//! as a search), so the business-layer window never merges two of them: each new update_id is
//! one new job, and the bench measures admission, not deduplication. Bodies are rendered from
//! pre-split templates, so the load generator spends a few hundred nanoseconds per request on
//! them and leaves the CPU to the server it measures.

use std::fmt::Write as _;

use bytes::{BufMut, Bytes, BytesMut};

/// Users the bench writes as; the ingress must allow them all.
pub const USERS: usize = 64;
/// The first user id (a private chat's id is its user's id).
const FIRST_USER: i64 = 7_100_000_001;

/// What the users search for (a mix of scripts, as MoviePilot's users write).
const TITLES: [&str; 16] = [
    "流浪地球2",
    "The Wandering Earth 2",
    "沙丘 第二部",
    "Oppenheimer",
    "三体",
    "Breaking Bad S05",
    "狂飙",
    "The Last of Us",
    "封神第一部：朝歌风云",
    "Spirited Away",
    "漫长的季节",
    "Dune Part Two",
    "繁花",
    "Shogun 2024",
    "满江红",
    "Arrival",
];

/// One message with its variable parts cut out: `head` + update_id + `middle` + message_id +
/// `tail`.
struct Template {
    head: &'static str,
    middle: &'static str,
    tail: String,
}

/// Renders update bodies by number: body `n` is always the same bytes, for a given `update_id`.
pub struct UpdateMaker {
    templates: Vec<Template>,
}

impl Default for UpdateMaker {
    fn default() -> Self {
        Self::new()
    }
}

impl UpdateMaker {
    pub fn new() -> Self {
        let mut templates = Vec::with_capacity(USERS * TITLES.len());
        for (t, title) in TITLES.iter().enumerate() {
            for u in 0..USERS {
                let user = FIRST_USER + u as i64;
                // Half the users type the command, half just the title.
                let (text, entities) = if (u + t) % 2 == 0 {
                    (
                        format!("/search {title}"),
                        r#","entities":[{"offset":0,"length":7,"type":"bot_command"}]"#,
                    )
                } else {
                    (title.to_string(), "")
                };
                let person = format!(
                    r#""first_name":{},"last_name":{},"username":"bench_user_{u:02}""#,
                    json_string("小明"),
                    json_string(&format!("张 · 测试用户 {u:02}")),
                );
                let text = json_string(&text);
                let tail = format!(
                    r#","from":{{"id":{user},"is_bot":false,{person},"language_code":"zh-hans"}},"chat":{{"id":{user},{person},"type":"private"}},"date":{date},"text":{text}{entities}}}}}"#,
                    date = 1_767_225_600 + (t * USERS + u) as i64,
                );
                templates.push(Template {
                    head: r#"{"update_id":"#,
                    middle: r#","message":{"message_id":"#,
                    tail,
                });
            }
        }
        Self { templates }
    }

    /// The allowed users, for `ONCEBOT__TELEGRAM__ALLOWED_USERS`.
    pub fn user_ids(&self) -> Vec<i64> {
        (0..USERS as i64).map(|u| FIRST_USER + u).collect()
    }

    /// How many different messages there are (update ids aside).
    pub fn variants(&self) -> usize {
        self.templates.len()
    }

    /// The JSON body of update `update_id`, carrying message variant `n % variants()`.
    pub fn body(&self, n: u64, update_id: i64) -> Bytes {
        let t = &self.templates[(n % self.templates.len() as u64) as usize];
        let message_id = 1 + n / self.templates.len() as u64;
        let mut buf = BytesMut::with_capacity(t.head.len() + t.middle.len() + t.tail.len() + 40);
        buf.put_slice(t.head.as_bytes());
        // Writing integers into a BytesMut cannot fail.
        let _ = write!(buf, "{update_id}");
        buf.put_slice(t.middle.as_bytes());
        let _ = write!(buf, "{message_id}");
        buf.put_slice(t.tail.as_bytes());
        buf.freeze()
    }
}

/// A JSON string as the Bot API writes it: non-ASCII characters as `\uXXXX` escapes (so the
/// server parses escapes, as it must for real updates).
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2 + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || !c.is_ascii() => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use oncebot::telegram::types::Update;

    #[test]
    fn strings_are_escaped_like_the_bot_api_does() {
        assert_eq!(json_string("a\"b\\"), r#""a\"b\\""#);
        assert_eq!(json_string("流"), r#""\u6d41""#);
        let back: String = serde_json::from_str(&json_string("封神 🎬")).unwrap();
        assert_eq!(back, "封神 🎬");
    }

    #[test]
    fn bodies_are_telegram_updates_of_realistic_size_from_allowed_users() {
        let maker = UpdateMaker::new();
        let users = maker.user_ids();
        for n in 0..maker.variants() as u64 * 2 {
            let body = maker.body(n, 1_000 + n as i64);
            assert!(
                (400..=620).contains(&body.len()),
                "body {n} is {} bytes",
                body.len()
            );
            let update: Update = serde_json::from_slice(&body).unwrap();
            assert_eq!(update.update_id, 1_000 + n as i64);
            let message = update.message.unwrap();
            assert_eq!(message.chat.kind, "private");
            assert!(
                !body.iter().any(|b| !b.is_ascii()),
                "Telegram escapes non-ASCII"
            );
            assert!(users.contains(&message.from.unwrap().id));
            assert!(!message.text.unwrap().is_empty());
        }
    }
}
