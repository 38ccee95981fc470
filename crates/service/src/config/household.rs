//! `[household]`: how the household joins from the chat (issue 43): asking for access, and the
//! limits on it; whether MoviePilot's mapping and the access cards give the `requester` role
//! (issue 44).

use std::time::Duration;

use serde::Deserialize;

use super::{SettingError, env_name};

/// How the household joins from the chat.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HouseholdSettings {
    /// A stranger's message in a private chat is answered with their Telegram id and an Ask
    /// button; the admins decide. Also lets `telegram.allowed_users` be empty: the deployment
    /// then starts with nobody allowed and nobody an admin, so it logs a claim code (`claim`).
    pub access_requests: bool,
    /// A person asks at most once in this long, a request not decided in it expires, and a
    /// declined person is not offered the button again within it.
    pub access_request_window_secs: u64,
    /// Most requests pending at once (requests, not cards); beyond, a stranger is told to try
    /// later and no admin is bothered.
    pub max_pending_access_requests: u32,
    /// Issue 44: a member MoviePilot maps whose MoviePilot `permissions` turn `subscribe` off is
    /// a `requester` instead of a `viewer` (`users::MoviePilotRights::role`), and the access
    /// cards offer Allow as requester. Decides nothing else: the role works wherever it is set.
    pub media_requests: bool,
    /// A media request not decided in this long expires (issue 44); its cards' buttons live
    /// as long.
    pub request_ttl_secs: u64,
    /// Most media requests one person may have pending at once.
    pub max_pending_requests_per_person: u32,
}

/// The longest a media request may wait: its cards are edited from their delivery records,
/// which the dispatcher keeps `dispatcher.reply_retention_secs` (7 days by default).
pub const MAX_REQUEST_TTL_SECS: u64 = 604_800;

/// Most media requests one person may have pending.
pub const MAX_PENDING_REQUESTS_PER_PERSON: u32 = 100;

/// The longest window: a card is edited (decided, expired) from its delivery record, which the
/// dispatcher keeps `dispatcher.reply_retention_secs` (7 days by default).
pub const MAX_ACCESS_REQUEST_WINDOW_SECS: u64 = 604_800;

/// Most requests that may be pending at once.
pub const MAX_PENDING_ACCESS_REQUESTS: u32 = 1000;

impl HouseholdSettings {
    pub fn access_request_window(&self) -> Duration {
        Duration::from_secs(self.access_request_window_secs)
    }

    pub fn request_ttl(&self) -> Duration {
        Duration::from_secs(self.request_ttl_secs)
    }

    pub(super) fn validate(&self) -> Result<(), SettingError> {
        self.validate_requests()?;
        let window = self.access_request_window_secs;
        if !(60..=MAX_ACCESS_REQUEST_WINDOW_SECS).contains(&window) {
            return Err(SettingError::new(
                "household.access_request_window_secs",
                format!("is {window}, outside 60 to {MAX_ACCESS_REQUEST_WINDOW_SECS}"),
                format!(
                    "set {} to 60-{MAX_ACCESS_REQUEST_WINDOW_SECS} (default 86400)",
                    env_name("household.access_request_window_secs")
                ),
            ));
        }
        let cap = self.max_pending_access_requests;
        if !(1..=MAX_PENDING_ACCESS_REQUESTS).contains(&cap) {
            return Err(SettingError::new(
                "household.max_pending_access_requests",
                format!("is {cap}, outside 1 to {MAX_PENDING_ACCESS_REQUESTS}"),
                format!(
                    "set {} to 1-{MAX_PENDING_ACCESS_REQUESTS} (default 20)",
                    env_name("household.max_pending_access_requests")
                ),
            ));
        }
        Ok(())
    }

    fn validate_requests(&self) -> Result<(), SettingError> {
        let ttl = self.request_ttl_secs;
        if !(10..=MAX_REQUEST_TTL_SECS).contains(&ttl) {
            return Err(SettingError::new(
                "household.request_ttl_secs",
                format!("is {ttl}, outside 10 to {MAX_REQUEST_TTL_SECS}"),
                format!(
                    "set {} to 10-{MAX_REQUEST_TTL_SECS} (default 604800, 7 days)",
                    env_name("household.request_ttl_secs")
                ),
            ));
        }
        let most = self.max_pending_requests_per_person;
        if !(1..=MAX_PENDING_REQUESTS_PER_PERSON).contains(&most) {
            return Err(SettingError::new(
                "household.max_pending_requests_per_person",
                format!("is {most}, outside 1 to {MAX_PENDING_REQUESTS_PER_PERSON}"),
                format!(
                    "set {} to 1-{MAX_PENDING_REQUESTS_PER_PERSON} (default 10)",
                    env_name("household.max_pending_requests_per_person")
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::test_env::{ALL, load, serving_env};

    #[test]
    fn the_window_and_the_cap_are_checked_and_an_empty_allow_list_needs_access_requests() {
        for (key, value, says) in [
            (
                "ONCEBOT__HOUSEHOLD__ACCESS_REQUEST_WINDOW_SECS",
                "59",
                "window",
            ),
            (
                "ONCEBOT__HOUSEHOLD__ACCESS_REQUEST_WINDOW_SECS",
                "604801",
                "window",
            ),
            (
                "ONCEBOT__HOUSEHOLD__MAX_PENDING_ACCESS_REQUESTS",
                "0",
                "max_pending",
            ),
            ("ONCEBOT__HOUSEHOLD__REQUEST_TTL_SECS", "9", "request_ttl"),
            (
                "ONCEBOT__HOUSEHOLD__REQUEST_TTL_SECS",
                "604801",
                "request_ttl",
            ),
            (
                "ONCEBOT__HOUSEHOLD__MAX_PENDING_REQUESTS_PER_PERSON",
                "0",
                "max_pending_requests_per_person",
            ),
        ] {
            let mut env = serving_env();
            env.push((key, value));
            let e = load(&env).unwrap().validate(ALL).unwrap_err();
            assert!(e.to_string().contains(says), "{e}");
        }
        let mut env = serving_env();
        env.retain(|(k, _)| *k != "ONCEBOT__TELEGRAM__ALLOWED_USERS");
        let e = load(&env).unwrap().validate(ALL).unwrap_err();
        assert!(e.to_string().contains("ACCESS_REQUESTS=true"), "{e}");
        env.push(("ONCEBOT__HOUSEHOLD__ACCESS_REQUESTS", "true"));
        load(&env).unwrap().validate(ALL).unwrap();
    }
}
