//! The one table that says how each command may be repeated and recovered.
//!
//! Ingress reads `window` (business-layer duplicates); workers read `recovery` when they find a
//! job whose owner died mid-run. Nothing else decides these questions.

use std::time::Duration;

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
}

/// The table. One row per command, in `Command::ALL` order.
pub const POLICIES: [Policy; 13] = [
    Policy {
        command: Command::Search,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::Rerun,
        least_role: Role::Viewer,
    },
    Policy {
        command: Command::Subscribe,
        side_effect: true,
        needs_confirmation: false,
        window: Some(|s| s.subscribe_window_secs),
        recovery: Recovery::VerifyThenRetry,
        least_role: Role::User,
    },
    Policy {
        command: Command::Subscriptions,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::Rerun,
        least_role: Role::Viewer,
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
    },
    Policy {
        command: Command::SearchNow,
        side_effect: true,
        needs_confirmation: false,
        window: Some(|s| s.searchnow_window_secs),
        recovery: Recovery::HoldForReview,
        least_role: Role::User,
    },
    Policy {
        command: Command::Downloading,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::Rerun,
        least_role: Role::Viewer,
    },
    Policy {
        command: Command::Status,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::Rerun,
        least_role: Role::Viewer,
    },
    Policy {
        command: Command::Jobs,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::Rerun,
        least_role: Role::Viewer,
    },
    Policy {
        command: Command::Help,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::NoJob,
        least_role: Role::Viewer,
    },
    Policy {
        command: Command::Start,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::NoJob,
        least_role: Role::Viewer,
    },
    Policy {
        command: Command::Download,
        side_effect: false,
        needs_confirmation: false,
        window: None,
        recovery: Recovery::Rerun,
        least_role: Role::User,
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
    },
    // MoviePilot cannot look a download up, but its history can be read: verify, then retry.
    Policy {
        command: Command::Grab,
        side_effect: true,
        needs_confirmation: false,
        window: Some(|s| s.download_window_secs),
        recovery: Recovery::VerifyThenRetry,
        least_role: Role::User,
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

    /// The duplicate window under these settings (zero: no business-layer check).
    pub fn window(self, settings: &CommandSettings) -> Duration {
        self.policy()
            .window
            .map_or(Duration::ZERO, |f| Duration::from_secs(f(settings)))
    }
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
    /// every tracker) needs a user, and everyone's subscriptions an admin.
    #[test]
    fn viewers_only_read_and_the_whole_list_is_an_admins() {
        for p in POLICIES {
            let want = if p.side_effect || matches!(p.command, Command::Download) {
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
}
