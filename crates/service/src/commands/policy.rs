//! The one table that says how each command may be repeated and recovered.
//!
//! Ingress reads `window` (business-layer duplicates); workers read `recovery` when they find a
//! job whose owner died mid-run. Nothing else decides these questions.

use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::{Command, POLICIES};
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
    /// The least role that may run it (`users`): reads are a viewer's, the resource search a
    /// requester's, anything else that acts at MoviePilot a user's. `/subscriptions all` needs
    /// an admin ([`Command::least_role`]).
    pub least_role: Role,
    /// One per window for the whole house, whoever asks (`commands::Asker::House`): what it
    /// starts at MoviePilot is the same for everyone. A repeat is answered with when the first
    /// started and a button that runs it again anyway (an admin's, once).
    pub house_wide: bool,
    /// The window is the calendar day in `commands.day_zone` instead of `window` seconds: the
    /// business key holds the day, so it ends at midnight there, whenever the first request came.
    pub calendar_day: bool,
}

/// A row of `POLICIES`, its columns in the table's order.
#[allow(clippy::too_many_arguments)]
pub(super) const fn row(
    command: Command,
    side_effect: bool,
    needs_confirmation: bool,
    window: Option<fn(&CommandSettings) -> u64>,
    recovery: Recovery,
    least_role: Role,
    house_wide: bool,
    calendar_day: bool,
) -> Policy {
    Policy {
        command,
        side_effect,
        needs_confirmation,
        window,
        recovery,
        least_role,
        house_wide,
        calendar_day,
    }
}

/// The table's columns, named so that a row reads as a sentence: a command that only reads, or
/// has an effect outside oncebot;
pub(super) const READ: bool = false;
pub(super) const EFFECT: bool = true;
/// runs at once, or asks first (Confirm / Cancel);
pub(super) const AT_ONCE: bool = false;
pub(super) const ASKS: bool = true;
/// one per asker, or one for the whole house;
pub(super) const OWN: bool = false;
pub(super) const HOUSE: bool = true;
/// its window a length of time, or the calendar day.
pub(super) const SPAN: bool = false;
pub(super) const DAY: bool = true;

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
        // A series' season choice (`tmdb:<id> tv`) only looks: a requester may see it, and
        // each season's button then asks an admin (issue 44).
        if matches!(self, Command::Subscribe | Command::Best) && super::parse_series(args).is_some()
        {
            return Role::Requester;
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

    /// Issue 22: a viewer may only read; anything with a side effect needs a user, and
    /// everyone's subscriptions an admin. Issue 23: the house commands are an admin's, and
    /// `/version` (what runs where is the operator's business); issue 43: `/users` and its
    /// Revoke button (who may use the bot is the admins' business). Issue 44: the resource
    /// search (`/download` and its job, which asks every tracker) is a requester's: they pick
    /// from its results what to ask an admin for; every other effect stays a user's; the
    /// pending requests (`/requests`) are the admins' to decide, one's own (`/mine`) anyone's.
    #[test]
    fn viewers_only_read_and_the_whole_list_is_an_admins() {
        for p in POLICIES {
            let admins = [
                Command::Version,
                Command::Users,
                Command::Revoke,
                Command::Requests,
            ];
            let resource_search = [Command::Download, Command::Releases];
            let want = if p.house_wide || admins.contains(&p.command) {
                Role::Admin
            } else if resource_search.contains(&p.command) {
                Role::Requester
            } else if p.side_effect {
                Role::User
            } else {
                Role::Viewer
            };
            assert_eq!(p.least_role, want, "{:?}", p.command);
        }
        assert_eq!(Command::Subscriptions.least_role(""), Role::Viewer);
        assert_eq!(Command::Subscriptions.least_role("all"), Role::Admin);
        assert_eq!(
            Command::Subscribe.least_role("tmdb:1399 tv"),
            Role::Requester
        );
        assert_eq!(Command::Subscribe.least_role("tmdb:1399 S1"), Role::User);
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
