//! A history row as the relay records and sends it: its identity, its duplicate digest and the
//! message, from MoviePilot's title, text and link as it wrote them (plain text, with control
//! and bidi characters removed: `untrusted`). Pure.

use sha2::{Digest, Sha256};

use crate::ledger::NotifyRow;
use crate::moviepilot::HistoryMessage;
use crate::untrusted::{clean, clean_line};
use crate::vocabulary::{ChatTarget, NoticeCategory, NotificationType};

/// `row` going to `chats`.
pub(super) fn row(row: &HistoryMessage, chats: Vec<ChatTarget>) -> NotifyRow {
    let title = row.title.as_deref().unwrap_or("");
    let text = row.text.as_deref().unwrap_or("");
    let mtype = row.mtype.as_deref().unwrap_or("");
    NotifyRow {
        identity: format!(
            "{}|{}|{}",
            row.id,
            row.reg_time,
            &digest(&[title, text])[..16]
        ),
        digest: digest(&[mtype, title, text])[..32].to_string(),
        reg_secs: row.reg_secs().unwrap_or(0),
        id: row.id,
        reg_time: row.reg_time.clone(),
        text: message(title, text, row.link.as_deref()),
        photo: poster(row.image.as_deref()),
        chats,
        category: NoticeCategory::of(NotificationType::of_row(row.mtype.as_deref())),
        mine: Vec::new(),
        seen_only: false,
    }
}

/// Title, a blank line, the text, then the link: each part only when there is one.
fn message(title: &str, text: &str, link: Option<&str>) -> String {
    let title = clean_line(title.trim());
    let text = clean(text.trim());
    let link = link.map(|l| clean_line(l.trim())).filter(|l| !l.is_empty());
    let mut out = String::with_capacity(title.len() + text.len() + 64);
    out.push_str(&title);
    if !text.is_empty() {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&text);
    }
    if let Some(link) = link {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&link);
    }
    out
}

/// A poster Telegram can fetch itself: an http(s) URL. MoviePilot sometimes stores a local path
/// or nothing; then the notification goes as text.
fn poster(image: Option<&str>) -> Option<String> {
    let image = image?.trim();
    let ok = (image.starts_with("https://") || image.starts_with("http://"))
        && !image.chars().any(char::is_whitespace);
    ok.then(|| image.to_string())
}

/// Hex SHA-256 of the parts, each followed by a NUL (so "ab","c" and "a","bc" differ).
fn digest(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(id: u64, title: &str, text: &str) -> HistoryMessage {
        serde_json::from_value(serde_json::json!({
            "id": id, "mtype": "资源下载", "title": title, "text": text,
            "image": "https://image.tmdb.org/t/p/w500/p.jpg", "link": null,
            "reg_time": "2025-06-16 10:00:00", "action": 1
        }))
        .unwrap()
    }

    #[test]
    fn the_identity_changes_with_the_content_and_the_digest_ignores_the_id() {
        let a = row(&history(7, "开始下载", "x"), vec![ChatTarget::chat(1)]);
        let b = row(&history(7, "开始下载", "y"), vec![ChatTarget::chat(1)]);
        let c = row(&history(8, "开始下载", "x"), vec![ChatTarget::chat(1)]);
        assert_ne!(
            a.identity, b.identity,
            "a reused id with new content is new"
        );
        assert_ne!(a.identity, c.identity);
        assert_eq!(a.digest, c.digest, "same type, title and text");
        assert_eq!(
            a.photo.as_deref(),
            Some("https://image.tmdb.org/t/p/w500/p.jpg")
        );
    }

    #[test]
    fn control_and_bidi_characters_are_removed() {
        let r = row(
            &history(1, "片\u{202e}名\u{7}", "第一行\n第二行\u{200f}"),
            vec![ChatTarget::chat(1)],
        );
        assert_eq!(r.text, "片名\n\n第一行\n第二行");
        assert_eq!(poster(Some("/config/temp/p.jpg")), None);
    }
}
