//! A text that goes into a MoviePilot URL's path (a MoviePilot user name, today) as exactly one
//! segment, never as a path of its own.
//!
//! Why: the URL parser oncebot's HTTP client uses (WHATWG's, like every browser's) reads `\` as
//! `/` in an `http` URL and resolves `.` and `..` segments, also spelled `%2e`. A MoviePilot user
//! named `..\..\system\restart` made `/api/v1/subscribe/user/<name>` into
//! `/api/v1/system/restart`, called with oncebot's superuser credentials. So the text is encoded
//! as RFC 3986 wants one segment: every byte but the unreserved characters (`A-Z a-z 0-9 - . _
//! ~`) percent-encoded. That leaves `.` and `..`, which stay dot segments however they are
//! written, and the empty text, which is no segment: those are refused, never sent.
//!
//! Pure, a leaf.

use std::fmt::Write as _;

/// A text that cannot be one path segment: `.`, `..` or empty.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} cannot be one segment of a URL path (., .. and an empty name are never sent)")]
pub struct NotASegment(pub String);

/// Whether `text` can be sent as one path segment (see [`encode`]).
pub fn check(text: &str) -> Result<(), NotASegment> {
    match text {
        "" | "." | ".." => Err(NotASegment(text.to_string())),
        _ => Ok(()),
    }
}

/// `text` as one path segment: every byte but RFC 3986's unreserved characters
/// percent-encoded, so no `/`, `\`, `?`, `#` or `%` of it reaches the path as itself.
pub fn encode(text: &str) -> Result<String, NotASegment> {
    check(text)?;
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            // Writing to a String cannot fail.
            let _ = write!(out, "%{b:02X}");
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_but_the_unreserved_characters_is_encoded() {
        assert_eq!(encode("alice").unwrap(), "alice");
        assert_eq!(encode("a.b-c_d~e").unwrap(), "a.b-c_d~e");
        assert_eq!(encode("a/b").unwrap(), "a%2Fb");
        assert_eq!(encode("a\\b").unwrap(), "a%5Cb");
        assert_eq!(encode("a?b").unwrap(), "a%3Fb");
        assert_eq!(encode("a#b").unwrap(), "a%23b");
        assert_eq!(encode("a b").unwrap(), "a%20b");
        assert_eq!(encode("%2e%2e").unwrap(), "%252e%252e");
        assert_eq!(encode("小明").unwrap(), "%E5%B0%8F%E6%98%8E");
        assert_eq!(
            encode("..\\..\\system\\restart").unwrap(),
            "..%5C..%5Csystem%5Crestart"
        );
    }

    #[test]
    fn dot_segments_and_the_empty_name_are_refused() {
        for name in ["", ".", ".."] {
            assert_eq!(encode(name), Err(NotASegment(name.to_string())));
            assert!(check(name).is_err());
        }
        for name in ["...", ".a", "a.", "%2e", "%2e%2e", ". ", " .."] {
            assert!(check(name).is_ok(), "{name:?}");
        }
    }

    /// The encoded segment stays one segment through the URL parser the client uses: the path
    /// keeps its prefix and gains exactly one segment, whatever the name.
    #[test]
    fn an_encoded_name_stays_one_segment_through_the_url_parser() {
        let long = "x".repeat(300);
        for name in [
            "..\\..\\system\\restart",
            "a/b",
            "a\\b",
            "a?b",
            "a#b",
            "%2e%2e",
            "..%2f..",
            ".%2e",
            long.as_str(),
            "名字 with spaces",
        ] {
            let mut url = reqwest::Url::parse("http://127.0.0.1:3001/").unwrap();
            url.set_path(&format!("/api/v1/subscribe/user/{}", encode(name).unwrap()));
            let segments: Vec<&str> = url.path_segments().unwrap().collect();
            assert_eq!(segments.len(), 5, "{name:?} became {}", url.path());
            assert_eq!(
                &segments[..4],
                ["api", "v1", "subscribe", "user"],
                "{name:?}"
            );
            assert_eq!(url.query(), None, "{name:?}");
            assert_eq!(url.fragment(), None, "{name:?}");
            let decoded = percent_decode(segments[4]);
            assert_eq!(decoded, name.as_bytes(), "{name:?}");
        }
    }

    fn percent_decode(s: &str) -> Vec<u8> {
        let b = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        out
    }
}
