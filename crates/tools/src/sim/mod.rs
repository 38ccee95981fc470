//! Simulated outside services, started in-process on 127.0.0.1: the tests drive them, and so
//! will `oncebot demo` and `oncebot bench`.
//!
//! A simulator speaks the real service's wire protocol (paths, JSON shapes, error bodies), not a
//! trait of ours, so whatever talks to it crosses the same boundary it crosses in production.
//! Each one records what it was asked, lets a test inject faults, and lets a test wait for an
//! event instead of sleeping.
//!
//! - `telegram`: the Bot API (getUpdates, sendMessage, sendPhoto, edits, callbacks, webhooks,
//!   faults).
//! - `moviepilot`: MoviePilot in its v2 (as v2.5.6 really answered) or v3 dialect.
//! - `posters`: an image host for notification posters (one that loads, one that 404s, one that
//!   answers a page, one that is no image), which `sendPhoto` fetches.

pub mod moviepilot;
pub mod posters;
pub mod telegram;

/// Why `text` is not fit for a Telegram user to read, or `None` when it is: it names a setting
/// (`ONCEBOT__…`, `moviepilot.api_key`), a URL or API path, or an OS or transport error. Those
/// belong in the log and `oncebot jobs show`; a user reads a plain sentence. The simulators and
/// the tests hold every user-facing text to this (admin notices may name settings).
pub fn not_for_users(text: &str) -> Option<&'static str> {
    const SIGNS: [(&str, &str); 12] = [
        ("ONCEBOT__", "a setting's variable"),
        ("moviepilot.", "a setting's name"),
        ("telegram.", "a setting's name"),
        ("worker.", "a setting's name"),
        ("/api/", "a URL path"),
        ("http://", "a URL"),
        ("https://", "a URL"),
        ("os error", "an OS error"),
        ("tcp connect", "a transport error"),
        ("Connection refused", "a transport error"),
        ("error sending request", "a transport error"),
        ("HTTP 5", "an HTTP status"),
    ];
    SIGNS
        .iter()
        .find(|(sign, _)| text.contains(sign))
        .map(|(_, what)| *what)
}

#[cfg(test)]
mod tests {
    use super::not_for_users;

    #[test]
    fn internals_are_not_for_users() {
        // What a retry message said before plain sentences.
        let old = "Job #1 failed for now (MoviePilot GET /api/v1/subscribe/ (listing subscriptions): cannot connect: tcp connect error: Connection refused (os error 111)); retrying in 2 s";
        assert!(not_for_users(old).is_some());
        assert!(not_for_users("check ONCEBOT__MOVIEPILOT__API_KEY").is_some());
        assert!(not_for_users("set moviepilot.api_key").is_some());
        assert!(not_for_users("MoviePilot cannot be reached or had a problem for now.").is_none());
        assert!(not_for_users("已取消订阅 #1「三体」 第 1 季。").is_none());
    }
}
