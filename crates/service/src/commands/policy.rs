//! The one table that says how each command may be repeated and recovered.
//!
//! Ingress reads `window` (business-layer duplicates); workers read `recovery` when they find a
//! job whose owner died mid-run. Nothing else decides these questions.

use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::Command;
use crate::config::CommandSettings;
pub use crate::vocabulary::Recovery;
use crate::vocabulary::Role;

/// How one command behaves under repetition.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub command: Command,
    /// Changes something outside oncebot (MoviePilot's state, its search queue).
    pub side_effect: bool,
    /// Asks before it runs: the typed command is a read-only lookup (no duplicate window, so
    /// each ask sees MoviePilot as it is now) whose answer names the target and carries
    /// Confirm / Cancel; Confirm makes the job that has the side effect and the window.
    pub needs_confirmation: bool,
    /// The duplicate window, read from the settings; `None` for commands that never have one.
    pub window: Option<fn(&CommandSettings) -> u64>,
    pub recovery: Recovery,
    /// The least role that may run it (`users`): reads are a viewer's, anything that acts at
    /// MoviePilot or asks the trackers a user's. `/subscriptions all` needs an admin
    /// ([`Command::least_role`]).
    pub least_role: Role,
    /// One per window for the whole house, whoever asks (`commands::Asker::House`): what it
    /// starts at MoviePilot is the same for everyone. A repeat is answered with when the first
    /// started and a button that runs it again anyway (an admin's, once).
    pub house_wide: bool,
    /// The window is the calendar day in `commands.day_zone` instead of `window` seconds: the
    /// business key holds the day, so it ends at midnight there, whenever the first request came.
    pub calendar_day: bool,
}

/// The table. One row per command, in `Command::ALL` order.
pub const POLICIES: [Policy; 23] = [
    Policy {
        command: Command::Search,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::Rerun,
        least_role: Role::Viewer,
        house_wide: false,
        calendar_day: false,
    },
    Policy {
        command: Command::Subscribe,
        side_effect: true,
        needs_confirmation: false,
        window: Some(|s| s.subscribe_window_secs),
        recovery: Recovery::VerifyThenRetry,
        least_role: Role::User,
        house_wide: false,
        calendar_day: false,
    },
    Policy {
        command: Command::Best,
        side_effect: true,
        needs_confirmation: false,
        window: Some(|s| s.best_window_secs),
        // As /subscribe's: the look for an existing subscription is the verification.
        recovery: Recovery::VerifyThenRetry,
        least_role: Role::User,
        house_wide: false,
        calendar_day: false,
    },
    Policy {
        command: Command::Download,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::Rerun,
        least_role: Role::User,
        house_wide: false,
        calendar_day: false,
    },
    Policy {
        command: Command::Subscriptions,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::Rerun,
        least_role: Role::Viewer,
        house_wide: false,
        calendar_day: false,
    },
    Policy {
        command: Command::Unsubscribe,
        side_effect: true,
        needs_confirmation: true,
        window: Some(|s| s.unsubscribe_window_secs),
        // The delete looks the subscription up first (its id must still name its media), and
        // "gone" is what a crashed delete is verified by.
        recovery: Recovery::VerifyThenRetry,
        least_role: Role::User,
        house_wide: false,
        calendar_day: false,
    },
    Policy {
        command: Command::SearchNow,
        side_effect: true,
        needs_confirmation: false,
        window: Some(|s| s.searchnow_window_secs),
        recovery: Recovery::HoldForReview,
        least_role: Role::User,
        house_wide: false,
        calendar_day: false,
    },
    Policy {
        command: Command::Downloading,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::Rerun,
        least_role: Role::Viewer,
        house_wide: false,
        calendar_day: false,
    },
    Policy {
        command: Command::Status,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::Rerun,
        least_role: Role::Viewer,
        house_wide: false,
        calendar_day: false,
    },
    Policy {
        command: Command::Jobs,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::Rerun,
        least_role: Role::Viewer,
        house_wide: false,
        calendar_day: false,
    },
    Policy {
        command: Command::Help,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::NoJob,
        least_role: Role::Viewer,
        house_wide: false,
        calendar_day: false,
    },
    Policy {
        command: Command::Start,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::NoJob,
        least_role: Role::Viewer,
        house_wide: false,
        calendar_day: false,
    },
    // The search hits every indexer site the user belongs to (rate limits), so it has a window
    // like a side effect, and is rerun at most once after a crash.
    Policy {
        command: Command::Releases,
        side_effect: true,
        needs_confirmation: false,
        window: Some(|s| s.resources_window_secs),
        recovery: Recovery::RerunOnce,
        least_role: Role::User,
        house_wide: false,
        calendar_day: false,
    },
    // MoviePilot cannot look a download up, but its history can be read: verify, then retry.
    Policy {
        command: Command::Grab,
        side_effect: true,
        needs_confirmation: false,
        window: Some(|s| s.download_window_secs),
        recovery: Recovery::VerifyThenRetry,
        least_role: Role::User,
        house_wide: false,
        calendar_day: false,
    },
    // The ⚡ Auto button: a download and a subscription, each verified as its own command's
    // (the download in MoviePilot's history from the notes, the subscription by looking), so a
    // crash anywhere re-runs nothing blindly. One per list in the download window.
    Policy {
        command: Command::Auto,
        side_effect: true,
        needs_confirmation: false,
        window: Some(|s| s.download_window_secs),
        recovery: Recovery::VerifyThenRetry,
        least_role: Role::User,
        house_wide: false,
        calendar_day: false,
    },
    // The house's costly jobs (issue 23): each starts one of MoviePilot's scheduler jobs, whose
    // repeat costs the whole house (every site searched or signed in to again, MoviePilot's own
    // runs skipped without a word). MoviePilot answers "success" whether the job ran, was already
    // running or was skipped, so a crashed start cannot be verified: the recovery says per job
    // whether running it again is harmless.
    Policy {
        command: Command::SubscribeSearch,
        side_effect: true,
        needs_confirmation: false,
        window: Some(|s| s.subscribe_search_window_secs),
        recovery: Recovery::HoldForReview,
        least_role: Role::Admin,
        house_wide: true,
        calendar_day: false,
    },
    Policy {
        command: Command::SubscribeRefresh,
        side_effect: true,
        needs_confirmation: false,
        window: Some(|s| s.subscribe_refresh_window_secs),
        recovery: Recovery::HoldForReview,
        least_role: Role::Admin,
        house_wide: true,
        calendar_day: false,
    },
    // Once a calendar day: a sign-in counts per day at the sites. The plugin keeps no history a
    // route can read (it is in its own data, shown only as a page), so a crash is held.
    Policy {
        command: Command::SiteSignin,
        side_effect: true,
        needs_confirmation: false,
        window: Some(|_| 0),
        recovery: Recovery::HoldForReview,
        least_role: Role::Admin,
        house_wide: true,
        calendar_day: true,
    },
    // Files only what is not filed yet: running it again is harmless.
    Policy {
        command: Command::Transfer,
        side_effect: true,
        needs_confirmation: false,
        window: Some(|s| s.transfer_window_secs),
        recovery: Recovery::Rerun,
        least_role: Role::Admin,
        house_wide: true,
        calendar_day: false,
    },
    // Reads the whole library of the media server: harmless but long, so once more at most.
    Policy {
        command: Command::MediaserverSync,
        side_effect: true,
        needs_confirmation: false,
        window: Some(|s| s.mediaserver_sync_window_secs),
        recovery: Recovery::RerunOnce,
        least_role: Role::Admin,
        house_wide: true,
        calendar_day: false,
    },
    // Fetches cookies from CookieCloud: harmless to repeat.
    Policy {
        command: Command::Cookiecloud,
        side_effect: true,
        needs_confirmation: false,
        window: Some(|s| s.cookiecloud_window_secs),
        recovery: Recovery::Rerun,
        least_role: Role::Admin,
        house_wide: true,
        calendar_day: false,
    },
    // Asks first, naming what is cut off. After a crash it is verified, never sent again: the
    // job notes that the call is going out, and a later attempt only watches MoviePilot go and
    // come back (worker::restart).
    Policy {
        command: Command::Restart,
        side_effect: true,
        needs_confirmation: true,
        window: Some(|s| s.restart_window_secs),
        recovery: Recovery::VerifyThenRetry,
        least_role: Role::Admin,
        house_wide: true,
        calendar_day: false,
    },
    // Deletes what the record filed before it files it again: twice would delete the first
    // redo's file. Once per record for the house in its window; after a crash a person decides,
    // seeing which file (the job notes it before the call).
    Policy {
        command: Command::Redo,
        side_effect: true,
        needs_confirmation: true,
        window: Some(|s| s.redo_window_secs),
        recovery: Recovery::HoldForReview,
        least_role: Role::Admin,
        house_wide: true,
        calendar_day: false,
    },
];

impl Command {
    pub fn policy(self) -> &'static Policy {
        // The table is in `Command::ALL` order; a unit test holds it to that.
        &POLICIES[self as usize]
    }

    /// The least role that may run it with these arguments: the table's, except that the
    /// whole subscription list (`/subscriptions all`) is an admin's.
    pub fn least_role(self, args: &str) -> Role {
        if self == Command::Subscriptions && args == "all" {
            return Role::Admin;
        }
        self.policy().least_role
    }

    /// The window admission applies at `now`: `window`'s, or for a calendar-day command the
    /// rest of the day in `zone` with the day in the business key.
    pub fn window_at(self, settings: &CommandSettings, zone: &TimeZone, now: Timestamp) -> Window {
        if self.policy().calendar_day {
            let (day, length) = calendar_day(now, zone);
            return Window {
                length,
                day: Some(day),
            };
        }
        Window {
            length: self.window(settings),
            day: None,
        }
    }

    /// The duplicate window under these settings (zero: no business-layer check; a
    /// calendar-day command's is [`Self::window_at`]'s).
    pub fn window(self, settings: &CommandSettings) -> Duration {
        self.policy()
            .window
            .map_or(Duration::ZERO, |f| Duration::from_secs(f(settings)))
    }
}

/// A duplicate window as admission applies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub length: Duration,
    /// For a calendar-day window, the day ("2026-12-03"), which the business key digests with
    /// the arguments: a new day is a new key, whatever the old one's expiry.
    pub day: Option<String>,
}

/// The calendar day `now` falls on in `zone`, and how long until it ends there (at the next
/// day's first instant, which a DST change may move off midnight). At least a millisecond.
pub fn calendar_day(now: Timestamp, zone: &TimeZone) -> (String, Duration) {
    let date = now.to_zoned_datetime(zone.clone()).date();
    let next = date
        .tomorrow()
        .and_then(|d| d.to_zoned_datetime(zone.clone()))
        .map_or(now.as_millisecond() + 86_400_000, |z| {
            z.timestamp().as_millisecond()
        });
    let left = (next - now.as_millisecond()).max(1);
    (date.to_string(), Duration::from_millis(left as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_command_order() {
        for (i, c) in Command::ALL.into_iter().enumerate() {
            assert_eq!(POLICIES[i].command, c);
            assert_eq!(c.policy().command, c);
        }
    }

    /// Issue 22: a viewer may only read; anything with a side effect (a resource search asks
    /// every tracker) needs a user, and everyone's subscriptions an admin. Issue 23: the house
    /// commands are an admin's.
    #[test]
    fn viewers_only_read_and_the_whole_list_is_an_admins() {
        for p in POLICIES {
            let want = if p.house_wide {
                Role::Admin
            } else if p.side_effect || matches!(p.command, Command::Download) {
                Role::User
            } else {
                Role::Viewer
            };
            assert_eq!(p.least_role, want, "{:?}", p.command);
        }
        assert_eq!(Command::Subscriptions.least_role(""), Role::Viewer);
        assert_eq!(Command::Subscriptions.least_role("all"), Role::Admin);
    }

    #[test]
    fn only_side_effects_have_windows_and_read_only_commands_rerun() {
        for p in POLICIES {
            assert_eq!(p.window.is_some(), p.side_effect, "{:?}", p.command);
            if !p.side_effect {
                assert!(matches!(p.recovery, Recovery::Rerun | Recovery::NoJob));
            }
        }
    }

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    /// /site_signin's window is the day in the zone: it ends at midnight there, not a day
    /// after the first sign-in, and the next day is a new key. (The clock is the argument.)
    #[test]
    fn a_calendar_day_rolls_over_at_midnight_in_its_zone() {
        let shanghai = TimeZone::get("Asia/Shanghai").unwrap();
        // 23:59:30 in Shanghai (15:59:30 UTC): half a minute left of 2026-12-03.
        let (day, left) = calendar_day(at("2026-12-03T15:59:30Z"), &shanghai);
        assert_eq!(day, "2026-12-03");
        assert_eq!(left, Duration::from_secs(30));
        // A minute later it is the 4th there, with a whole day ahead.
        let (day, left) = calendar_day(at("2026-12-03T16:00:30Z"), &shanghai);
        assert_eq!(day, "2026-12-04");
        assert_eq!(left, Duration::from_secs(86_400 - 30));
        // The same instant is still the 3rd in Berlin.
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        assert_eq!(
            calendar_day(at("2026-12-03T16:00:30Z"), &berlin).0,
            "2026-12-03"
        );
        // A day with a DST change is 23 hours long, and its window says so.
        let (day, left) = calendar_day(at("2026-03-29T00:00:00+01:00"), &berlin);
        assert_eq!(
            (day.as_str(), left),
            ("2026-03-29", Duration::from_secs(23 * 3600))
        );
        let w = Command::SiteSignin.window_at(
            &crate::config::Settings::load_from(None, Vec::new())
                .unwrap()
                .commands,
            &shanghai,
            at("2026-12-03T15:59:30Z"),
        );
        assert_eq!(w.day.as_deref(), Some("2026-12-03"));
        assert_eq!(w.length, Duration::from_secs(30));
        let w = Command::Transfer.window_at(
            &crate::config::Settings::load_from(None, Vec::new())
                .unwrap()
                .commands,
            &shanghai,
            at("2026-12-03T15:59:30Z"),
        );
        assert_eq!((w.length, w.day), (Duration::from_secs(300), None));
    }

    /// Issue 23's table: what each house command does after a crash, and that each starts a
    /// MoviePilot job and is one per window for the house.
    #[test]
    fn the_house_commands_recover_as_the_table_says() {
        use Recovery::*;
        for (command, recovery) in [
            (Command::SubscribeSearch, HoldForReview),
            (Command::SubscribeRefresh, HoldForReview),
            (Command::SiteSignin, HoldForReview),
            (Command::Transfer, Rerun),
            (Command::MediaserverSync, RerunOnce),
            (Command::Cookiecloud, Rerun),
        ] {
            let p = command.policy();
            assert_eq!(p.recovery, recovery, "{command:?}");
            assert!(
                p.house_wide && command.scheduler_job().is_some(),
                "{command:?}"
            );
            assert_eq!(p.calendar_day, command == Command::SiteSignin);
        }
        for p in POLICIES {
            // /restart and /redo are the house's too (one for everyone), but no scheduler job.
            let house = p.command.scheduler_job().is_some()
                || matches!(p.command, Command::Restart | Command::Redo);
            assert_eq!(p.house_wide, house, "{:?}", p.command);
        }
    }
}
