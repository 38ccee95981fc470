//! What MoviePilot lets one of its users do, as oncebot read it, and the role that gives them:
//! rights from MoviePilot, never above them.
//!
//! - A superuser is an `admin` (MoviePilot keeps its restart and scheduler routes to
//!   superusers, and its own `admin` permission is decided by `is_superuser`).
//! - Anyone else is a `user` when MoviePilot lets them subscribe (`subscribe`), else a `viewer`;
//!   with `household.media_requests` (issue 44) a `requester` instead of that `viewer`: they may
//!   ask for what MoviePilot would not let them subscribe to, and an admin decides.
//!   `manage` and `admin` give no admin rights in oncebot; `discovery` and `search` are shown,
//!   and take nobody below `viewer`.
//!
//! The keys as MoviePilot's own web UI reads them (a missing key takes MoviePilot's default)
//! are read by `moviepilot::types`; this file holds what was read. Pure.

use crate::vocabulary::Role;

/// A MoviePilot user's rights: `is_superuser` and their `permissions` with MoviePilot's
/// defaults applied. Stored beside the mapping (`users:moviepilot`, field `permissions:<id>`,
/// as this JSON) and shown by `oncebot users --json` and the operator's page, never as a
/// metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MoviePilotRights {
    pub superuser: bool,
    pub discovery: bool,
    pub search: bool,
    pub subscribe: bool,
    pub manage: bool,
}

impl MoviePilotRights {
    /// The role MoviePilot's rights give: `admin` for a superuser, else `user` with
    /// `subscribe`, else `requester` when `media_requests` (`household.media_requests`), else
    /// `viewer`.
    pub fn role(&self, media_requests: bool) -> Role {
        if self.superuser {
            Role::Admin
        } else if self.subscribe {
            Role::User
        } else if media_requests {
            Role::Requester
        } else {
            Role::Viewer
        }
    }

    /// How the rights are stored (`permissions:<id>` in `users:moviepilot`): compact JSON.
    pub fn stored_value(&self) -> String {
        // A struct of booleans always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A stored value read back; `None` for anything no release wrote.
    pub fn from_stored(value: &str) -> Option<MoviePilotRights> {
        serde_json::from_str(value).ok()
    }

    /// One short cell for a table: `superuser`, or each permission with `+` (on) or `-` (off).
    pub fn summary(&self) -> String {
        if self.superuser {
            return "superuser".into();
        }
        [
            ("discovery", self.discovery),
            ("search", self.search),
            ("subscribe", self.subscribe),
            ("manage", self.manage),
        ]
        .iter()
        .map(|(name, on)| format!("{}{name}", if *on { '+' } else { '-' }))
        .collect::<Vec<_>>()
        .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rights(superuser: bool, subscribe: bool, manage: bool) -> MoviePilotRights {
        MoviePilotRights {
            superuser,
            discovery: true,
            search: true,
            subscribe,
            manage,
        }
    }

    #[test]
    fn a_superuser_is_an_admin_subscribe_makes_a_user_and_nothing_else_does() {
        for media_requests in [false, true] {
            let role = |r: MoviePilotRights| r.role(media_requests);
            assert_eq!(role(rights(true, false, false)), Role::Admin);
            assert_eq!(role(rights(true, true, false)), Role::Admin);
            assert_eq!(role(rights(false, true, false)), Role::User);
            assert_eq!(role(rights(false, true, true)), Role::User);
        }
        assert_eq!(rights(false, false, false).role(false), Role::Viewer);
        // `manage` gives no admin rights, nor subscriptions.
        assert_eq!(rights(false, false, true).role(false), Role::Viewer);
    }

    /// Issue 44: with `household.media_requests`, `subscribe` off makes a requester instead of
    /// a viewer; a superuser stays an admin and `subscribe` on a user.
    #[test]
    fn with_media_requests_subscribe_off_is_a_requester() {
        assert_eq!(rights(false, false, false).role(true), Role::Requester);
        assert_eq!(rights(false, false, true).role(true), Role::Requester);
        assert_eq!(rights(true, false, false).role(true), Role::Admin);
        assert_eq!(rights(false, true, false).role(true), Role::User);
    }

    #[test]
    fn the_stored_value_reads_back_and_anything_else_is_none() {
        let r = rights(false, false, true);
        assert_eq!(
            r.stored_value(),
            r#"{"superuser":false,"discovery":true,"search":true,"subscribe":false,"manage":true}"#
        );
        assert_eq!(MoviePilotRights::from_stored(&r.stored_value()), Some(r));
        assert_eq!(MoviePilotRights::from_stored("user"), None);
        assert_eq!(MoviePilotRights::from_stored("{}"), None);
    }

    #[test]
    fn the_summary_names_each_permission_or_the_superuser() {
        assert_eq!(rights(true, false, false).summary(), "superuser");
        assert_eq!(
            rights(false, false, false).summary(),
            "+discovery +search -subscribe -manage"
        );
    }
}
