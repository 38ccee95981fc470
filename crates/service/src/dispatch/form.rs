//! What a reply's text and poster become in Telegram's terms: a text split into messages of
//! at most 4096 characters, a caption cut to 1024, and whether the reply goes as a photo at all
//! (`poster`). Pure functions of the entry, kept apart from the sending (`send`) so they read
//! and are tested on their own.

use crate::ledger::ReplyEntry;

/// Telegram's limit on a message's text, in characters.
pub const MAX_MESSAGE_CHARS: usize = 4096;

/// Telegram's limit on a photo's caption, in characters: Unicode code points, as the Bot API
/// server counts them (tdlib's `utf8_length` in `create_input_message_content`), as for a text.
pub const MAX_CAPTION_CHARS: usize = 1024;

/// The poster to send an entry with as a new photo message, if any: posters on (`on`:
/// `telegram.posters`, and no earlier refusal of this one), an http(s) URL, an entry that edits
/// no message of its own (a keyboard change or an edit keeps its message's form; a job's result
/// after its "working on it" message is a new message), with a text that fits a caption. A
/// longer text goes as text alone: one message per reply, never a photo and then the text.
pub(super) fn poster(reply: &ReplyEntry, on: bool) -> Option<&str> {
    let url = reply.photo.as_deref().filter(|_| on)?;
    if reply.op.is_some() || reply.edit_message_id.is_some() {
        return None;
    }
    if !is_http(url) {
        tracing::warn!(
            poster = %url_for_log(url),
            "a poster that is not an http(s) URL; sending the text alone"
        );
        return None;
    }
    if reply.text.chars().count() > MAX_CAPTION_CHARS {
        tracing::info!(
            "text over {MAX_CAPTION_CHARS} characters, longer than a caption; sending it without its poster"
        );
        return None;
    }
    Some(url)
}

/// A URL for the log: scheme, host and path, without credentials, query or fragment (a signed
/// poster URL's token lives in its query).
pub(super) fn url_for_log(url: &str) -> String {
    let bare = url.split(['?', '#']).next().unwrap_or_default();
    match bare.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit('@').next().unwrap_or_default();
            format!("{scheme}://{host}{path}")
        }
        None => "(not a URL)".to_string(),
    }
}

pub(super) fn is_http(url: &str) -> bool {
    url.starts_with("https://") || url.starts_with("http://")
}

/// A text as a caption: at most [`MAX_CAPTION_CHARS`] characters, a longer one cut with "…"
/// (only an edit of a photo message cuts: a new message with a longer text goes as text).
pub(super) fn caption_of(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().count() <= MAX_CAPTION_CHARS {
        return text.into();
    }
    let mut cut: String = text.chars().take(MAX_CAPTION_CHARS - 1).collect();
    cut.push('…');
    cut.into()
}

/// Splits `text` into pieces of at most 4096 characters, at a line break when there is one in
/// the second half of a piece. An empty text stays one (empty) piece.
pub fn split_message(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= MAX_MESSAGE_CHARS {
        return vec![text.to_string()];
    }
    let mut out = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        let mut end = (start + MAX_MESSAGE_CHARS).min(chars.len());
        if end < chars.len()
            && let Some(nl) = chars[start + MAX_MESSAGE_CHARS / 2..end]
                .iter()
                .rposition(|c| *c == '\n')
        {
            end = start + MAX_MESSAGE_CHARS / 2 + nl + 1;
        }
        out.push(chars[start..end].iter().collect());
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::ledger::MarkupOp;

    use super::*;

    #[test]
    fn a_poster_goes_with_a_new_message_whose_text_fits_a_caption() {
        let reply = |text: String, photo: &str| ReplyEntry {
            text,
            photo: Some(photo.to_string()),
            ..ReplyEntry::default()
        };
        let url = "https://image.tmdb.org/t/p/w500/d.jpg";
        // Counted in characters (code points), not bytes: 1024 CJK characters are 3072 bytes.
        let fits = reply("字".repeat(MAX_CAPTION_CHARS), url);
        assert_eq!(poster(&fits, true), Some(url));
        assert_eq!(poster(&fits, false), None, "telegram.posters = false");
        let edit = ReplyEntry {
            edit_message_id: Some(5),
            ..fits.clone()
        };
        assert_eq!(
            poster(&edit, true),
            None,
            "an edit keeps its message's form"
        );
        let long = reply("字".repeat(MAX_CAPTION_CHARS + 1), url);
        assert_eq!(poster(&long, true), None);
        let not_a_url = reply("hi".into(), "AgACAgQAAxkBAAI");
        assert_eq!(poster(&not_a_url, true), None);
        let markup_op = ReplyEntry {
            op: Some(MarkupOp::Clear),
            ..reply("hi".into(), url)
        };
        assert_eq!(poster(&markup_op, true), None);
        assert_eq!(poster(&ReplyEntry::default(), true), None);
    }

    #[test]
    fn a_caption_edit_is_cut_to_a_captions_length() {
        assert_eq!(caption_of("短"), "短");
        let long = "字".repeat(MAX_CAPTION_CHARS + 5);
        let cut = caption_of(&long);
        assert_eq!(cut.chars().count(), MAX_CAPTION_CHARS);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn a_logged_url_has_no_credentials_query_or_fragment() {
        assert_eq!(
            url_for_log("https://user:pw@img.example.org/p/x.jpg?sig=s3cret#top"),
            "https://img.example.org/p/x.jpg"
        );
        assert_eq!(
            url_for_log("http://127.0.0.1:8080?token=t"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(url_for_log("AgACAgQ?x"), "(not a URL)");
    }

    #[test]
    fn short_messages_are_not_split() {
        assert_eq!(split_message("hi"), vec!["hi".to_string()]);
        assert_eq!(split_message(""), vec![String::new()]);
    }

    #[test]
    fn long_messages_split_at_4096_characters_preferring_line_breaks() {
        let line = "三体".repeat(50) + "\n"; // 101 characters
        let text = line.repeat(100); // 10100 characters
        let parts = split_message(&text);
        assert!(parts.len() >= 3);
        assert!(parts.iter().all(|p| p.chars().count() <= MAX_MESSAGE_CHARS));
        assert!(parts[..parts.len() - 1].iter().all(|p| p.ends_with('\n')));
        assert_eq!(parts.concat(), text);
        let solid = "x".repeat(9000);
        let parts = split_message(&solid);
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            vec![4096, 4096, 808]
        );
    }
}
