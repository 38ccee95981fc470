//! The short texts MoviePilot errors and calls are made of: a media's label, MoviePilot's own
//! words of a refusal (cut, without control characters), a prefix that keeps an error's kind,
//! and cutting on a character boundary. Pure; the client's files and the areas use them.

use serde_json::Value;

use crate::moviepilot::error::MpError;

/// `TMDB <id>` or `TMDB <id> season <s>`: how a call's `what` names a media.
pub(in crate::moviepilot) fn media_label(tmdb_id: u64, season: Option<u32>) -> String {
    match season {
        Some(s) => format!("TMDB {tmdb_id} season {s}"),
        None => format!("TMDB {tmdb_id}"),
    }
}

/// MoviePilot's message of a refusal, short and without control characters (it reaches logs,
/// the ledger and the admin chats).
pub(super) fn refusal_text(message: Option<&str>) -> String {
    match message.map(str::trim) {
        Some(m) if !m.is_empty() => short(&crate::untrusted::clean_line(m), 200),
        _ => "no reason given".into(),
    }
}

/// `: <detail>` from an error body: v2's `{"detail": "..."}` (or its 422 list), v3's
/// `{"message": "..."}`, or a short plain text such as `Internal Server Error`. Empty for
/// anything else (an HTML page, a long body).
pub(in crate::moviepilot) fn detail_suffix(body: &[u8]) -> String {
    let text = match crate::json_body::parse::<Value>(body) {
        Ok(Value::Object(map)) => match (map.get("detail"), map.get("message")) {
            (Some(Value::String(d)), _) => d.clone(),
            (Some(Value::Array(items)), _) => items
                .first()
                .map(|item| {
                    let place = item
                        .get("loc")
                        .and_then(Value::as_array)
                        .map(|loc| {
                            loc.iter()
                                .map(|p| match p {
                                    Value::String(s) => s.clone(),
                                    other => other.to_string(),
                                })
                                .collect::<Vec<_>>()
                                .join(".")
                        })
                        .unwrap_or_default();
                    let msg = item.get("msg").and_then(Value::as_str).unwrap_or("invalid");
                    format!("{place}: {msg}")
                })
                .unwrap_or_default(),
            (_, Some(Value::String(m))) => m.clone(),
            _ => String::new(),
        },
        Ok(_) => String::new(),
        Err(_) => match std::str::from_utf8(body) {
            Ok(t) if t.len() <= 200 && !t.trim_start().starts_with('<') => t.trim().to_string(),
            _ => String::new(),
        },
    };
    let text = crate::untrusted::clean_line(text.trim());
    if text.is_empty() {
        String::new()
    } else {
        format!(" {}", short(&text, 200))
    }
}

/// Keeps the kind, puts `context` in front.
pub(super) fn with_context(error: MpError, context: &str) -> MpError {
    match error {
        MpError::Permanent(m) => MpError::Permanent(format!("{context}: {m}")),
        MpError::Declined(m) => MpError::Declined(m),
        MpError::CredentialsRefused(m) => MpError::CredentialsRefused(format!("{context}: {m}")),
        MpError::Transient(m) => MpError::Transient(format!("{context}: {m}")),
        MpError::Uncertain(m) => MpError::Uncertain(format!("{context}: {m}")),
    }
}

/// At most `max` characters, cut on a character boundary.
pub(in crate::moviepilot) fn short(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_details_are_short_and_never_html() {
        assert_eq!(
            detail_suffix(br#"{"detail":"token\u6821\u9a8c\u4e0d\u901a\u8fc7"}"#),
            " token校验不通过"
        );
        assert_eq!(
            detail_suffix(
                br#"{"detail":[{"loc":["body","password"],"msg":"field required","type":"value_error.missing"}]}"#
            ),
            " body.password: field required"
        );
        assert_eq!(
            detail_suffix(r#"{"success":false,"message":"订阅不存在","data":null}"#.as_bytes()),
            " 订阅不存在"
        );
        assert_eq!(
            detail_suffix(b"Internal Server Error"),
            " Internal Server Error"
        );
        assert_eq!(detail_suffix(b"<html><body>502</body></html>"), "");
    }

    #[test]
    fn short_cuts_on_character_boundaries() {
        assert_eq!(short("未识别到媒体信息", 3), "未识别…");
        assert_eq!(short("abc", 3), "abc");
    }
}
