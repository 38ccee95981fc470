//! Inline keyboards and the callback data of oncebot's buttons. Pure: no I/O.
//!
//! A button carries `t:<token>` and nothing else: the token names a HASH in the ledger that says
//! what the button does and whom it is for (Telegram allows 1-64 bytes of callback data, and
//! anything a user's client sends back must be treated as untrusted input). A token is 128
//! random bits from the operating system's CSPRNG-seeded generator, as 32 hex characters, so a
//! button cannot be guessed or forged; `t:` plus 32 characters is 34 bytes.

/// The prefix of every callback data oncebot makes.
const PREFIX: &str = "t:";
/// Hex characters in a token (128 bits).
const TOKEN_LEN: usize = 32;

/// A fresh id for a group of sibling buttons: 64 random bits, 16 hex characters. Unlike a
/// token it never leaves Redis (no button carries it; a token names its group), so it needs to
/// be unique among the groups alive at once, not unguessable, and it is written into every
/// token HASH of its group and its group's key name.
pub fn new_group_id() -> String {
    hex::encode(rand::random::<[u8; 8]>())
}

/// A fresh unguessable token.
pub fn new_token() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

/// The callback data of a button that carries `token`.
pub fn callback_data(token: &str) -> String {
    format!("{PREFIX}{token}")
}

/// The token in a button's callback data, if the data is one of ours.
pub fn token_of(data: &str) -> Option<&str> {
    valid(data.strip_prefix(PREFIX)?)
}

/// The prefix of the buttons an access request uses (Ask, and the admins' Allow / Decline):
/// ingress sends their taps to access.lua instead of tap.lua.
const ACCESS_PREFIX: &str = "a:";

/// An access button's callback data, for the callback data `callback_data` made for its token.
pub fn as_access(callback_data: &str) -> String {
    format!(
        "{ACCESS_PREFIX}{}",
        callback_data.strip_prefix(PREFIX).unwrap_or(callback_data)
    )
}

/// The token in an access button's callback data (`a:<token>`).
pub fn access_token_of(data: &str) -> Option<&str> {
    valid(data.strip_prefix(ACCESS_PREFIX)?)
}

/// The prefix of a media request's buttons (an admin's Approve / Decline, the requester's
/// Withdraw): ingress sends their taps to request.lua instead of tap.lua.
const REQUEST_PREFIX: &str = "r:";

/// A request button's callback data, for the callback data `callback_data` made for its token.
pub fn as_request(callback_data: &str) -> String {
    format!(
        "{REQUEST_PREFIX}{}",
        callback_data.strip_prefix(PREFIX).unwrap_or(callback_data)
    )
}

/// The token in a request button's callback data (`r:<token>`).
pub fn request_token_of(data: &str) -> Option<&str> {
    valid(data.strip_prefix(REQUEST_PREFIX)?)
}

fn valid(token: &str) -> Option<&str> {
    (token.len() == TOKEN_LEN
        && token
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
    .then_some(token)
}

/// An `InlineKeyboardMarkup` being built, row by row.
#[derive(Debug, Clone, Default)]
pub struct Keyboard {
    rows: Vec<Vec<(String, String)>>,
}

impl Keyboard {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a row of `(text, callback data)` buttons.
    pub fn row(mut self, buttons: Vec<(String, String)>) -> Self {
        if !buttons.is_empty() {
            self.rows.push(buttons);
        }
        self
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The markup as Telegram's JSON, e.g. `{"inline_keyboard":[[{"text":"确认",
    /// "callback_data":"t:…"}]]}`: what the replies stream's `markup` field carries.
    /// Written straight from the rows (no `serde_json::Value` maps): every reply with buttons
    /// builds one.
    pub fn to_json(&self) -> String {
        #[derive(serde::Serialize)]
        // The fields in the order serde_json's maps gave them before (sorted), so the
        // stored markup did not change.
        struct Button<'a> {
            callback_data: &'a str,
            text: &'a str,
        }
        #[derive(serde::Serialize)]
        struct Markup<'a> {
            inline_keyboard: Vec<Vec<Button<'a>>>,
        }
        let markup = Markup {
            inline_keyboard: self
                .rows
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|(text, data)| Button {
                            callback_data: data,
                            text,
                        })
                        .collect()
                })
                .collect(),
        };
        // Serialising strings into a Vec cannot fail.
        serde_json::to_string(&markup).unwrap_or_default()
    }
}

/// A button's text, cut to a length that fits a phone's row.
pub fn button_text(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let mut t: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    t.push('…');
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_ids_are_64_bits_of_hex() {
        let a = new_group_id();
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, new_group_id());
    }

    #[test]
    fn tokens_are_128_bits_of_hex_and_fit_telegrams_64_bytes() {
        let a = new_token();
        let b = new_token();
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        let data = callback_data(&a);
        assert!(data.len() <= 64);
        assert_eq!(token_of(&data), Some(a.as_str()));
    }

    /// Issue 43: an access button carries `a:<token>`, which `token_of` does not take (tap.lua
    /// never sees it) and `access_token_of` does.
    #[test]
    fn an_access_button_is_told_apart_by_its_prefix() {
        let token = new_token();
        let data = as_access(&callback_data(&token));
        assert_eq!(data, format!("a:{token}"));
        assert_eq!(access_token_of(&data), Some(token.as_str()));
        assert_eq!(token_of(&data), None);
        assert_eq!(access_token_of(&callback_data(&token)), None);
        assert_eq!(access_token_of("a:xyz"), None);
    }

    #[test]
    fn data_that_is_not_ours_has_no_token() {
        for data in [
            "",
            "t:",
            "confirm:abc",
            "t:0123",
            "t:0123456789ABCDEF0123456789abcdef",
            "t:0123456789abcdef0123456789abcdef0",
        ] {
            assert_eq!(token_of(data), None, "{data:?}");
        }
    }

    #[test]
    fn the_markup_is_telegrams_inline_keyboard() {
        let json = Keyboard::new()
            .row(vec![
                ("确认".into(), "t:1".into()),
                ("取消".into(), "t:2".into()),
            ])
            .to_json();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["inline_keyboard"][0][1]["text"], "取消");
        assert_eq!(v["inline_keyboard"][0][0]["callback_data"], "t:1");
    }
}
