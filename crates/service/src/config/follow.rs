//! `[follow]`: the live cards (issue 45): how long a download or subscription is followed, and
//! how often MoviePilot is asked where the open cards stand.

use std::time::Duration;

use serde::Deserialize;

use super::{SettingError, env_name};

/// The longest `follow.max_days`.
pub const FOLLOW_MAX_DAYS: u64 = 365;
/// The longest `follow.progress_poll_secs`.
pub const FOLLOW_MAX_POLL_SECS: u64 = 3_600;
/// The most `follow.max_pages`.
pub const FOLLOW_MAX_PAGES: u64 = 100;

/// How the live cards are followed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FollowSettings {
    /// A card not ended in this many days stops being followed (it says so). The shorter of
    /// this and `notify.requester_ttl_secs` applies.
    pub max_days: u64,
    /// Seconds between two polls for all open cards (one download list, one subscription list,
    /// at most `max_pages` transfer pages), for the whole deployment; none while no card is
    /// open. A card's progress is edited at most once a minute whatever this is.
    pub progress_poll_secs: u64,
    /// Pages of 50 transfer-history rows one poll reads at most, back to the last row read.
    pub max_pages: u64,
}

impl FollowSettings {
    /// How long a card is followed: `max_days`, at most `requester_ttl_secs`.
    pub fn follow_for(&self, requester_ttl_secs: u64) -> Duration {
        Duration::from_secs((self.max_days * 86_400).min(requester_ttl_secs))
    }

    pub fn poll_every(&self) -> Duration {
        Duration::from_secs(self.progress_poll_secs)
    }

    pub(super) fn validate(&self) -> Result<(), SettingError> {
        let ranges = [
            ("follow.max_days", self.max_days, 1, FOLLOW_MAX_DAYS, 120),
            (
                "follow.progress_poll_secs",
                self.progress_poll_secs,
                1,
                FOLLOW_MAX_POLL_SECS,
                60,
            ),
            ("follow.max_pages", self.max_pages, 1, FOLLOW_MAX_PAGES, 4),
        ];
        for (name, value, low, high, default) in ranges {
            if !(low..=high).contains(&value) {
                return Err(SettingError::new(
                    name,
                    format!("is {value}, outside {low} to {high}"),
                    format!("set {} to {low}-{high} (default {default})", env_name(name)),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bound_is_named_with_its_variable() {
        let ok = FollowSettings {
            max_days: 120,
            progress_poll_secs: 60,
            max_pages: 4,
        };
        assert!(ok.validate().is_ok());
        assert_eq!(ok.follow_for(90 * 86_400), Duration::from_secs(90 * 86_400));
        assert_eq!(
            ok.follow_for(365 * 86_400),
            Duration::from_secs(120 * 86_400)
        );
        for (bad, name) in [
            (
                FollowSettings {
                    max_days: 0,
                    ..ok.clone()
                },
                "ONCEBOT__FOLLOW__MAX_DAYS",
            ),
            (
                FollowSettings {
                    progress_poll_secs: 0,
                    ..ok.clone()
                },
                "ONCEBOT__FOLLOW__PROGRESS_POLL_SECS",
            ),
            (
                FollowSettings {
                    max_pages: 101,
                    ..ok.clone()
                },
                "ONCEBOT__FOLLOW__MAX_PAGES",
            ),
        ] {
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains(name), "{e}");
        }
    }
}
