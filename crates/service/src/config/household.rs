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
}

/// The longest window: a card is edited (decided, expired) from its delivery record, which the
/// dispatcher keeps `dispatcher.reply_retention_secs` (7 days by default).
pub const MAX_ACCESS_REQUEST_WINDOW_SECS: u64 = 604_800;

/// Most requests that may be pending at once.
pub const MAX_PENDING_ACCESS_REQUESTS: u32 = 1000;

impl HouseholdSettings {
    pub fn access_request_window(&self) -> Duration {
        Duration::from_secs(self.access_request_window_secs)
    }

    pub(super) fn validate(&self) -> Result<(), SettingError> {
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
