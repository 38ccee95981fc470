//! What a Telegram user may do, as `telegram.users` spells it, a job's `role` field stores it and
//! tap.lua compares it.

use std::str::FromStr;

/// A user's role, least first: each may do what the one before it may, and more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Reads only: searches, lists, job status, help. No resource search (it asks every
    /// tracker) and no button that acts.
    Viewer,
    /// What a viewer may, and a resource search (`/download`); what they would subscribe or
    /// download is asked of an admin (issue 44). Between viewer and user: a place in the order
    /// is all that compares.
    Requester,
    /// Also subscribes, downloads and cancels subscriptions.
    User,
    /// Everything, including the whole subscription list and the review buttons.
    Admin,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Viewer, Role::Requester, Role::User, Role::Admin];

    /// Every role's name, least first, comma-separated: tap.lua's ARGV[18], from which it
    /// ranks roles (a role added later takes its place in this order, and the script compares
    /// places, never names).
    pub fn ranked() -> String {
        Role::ALL.map(Role::as_str).join(",")
    }

    /// The name in `telegram.users`, in a job's `role` field and in tap.lua's ARGV.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Requester => "requester",
            Role::User => "user",
            Role::Admin => "admin",
        }
    }
}

impl FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| {
                format!("unknown role {s:?} (expected viewer, requester, user or admin)")
            })
    }
}

/// As its name (`jobs show --json` prints a job's role).
impl serde::Serialize for Role {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_roles_are_ordered() {
        for r in Role::ALL {
            assert_eq!(r.as_str().parse::<Role>(), Ok(r));
        }
        assert!(Role::Viewer < Role::Requester);
        assert!(Role::Requester < Role::User && Role::User < Role::Admin);
        // Issue 44: a requester ranks between a viewer and a user.
        assert_eq!(Role::ALL.map(|r| r as usize), [0, 1, 2, 3]);
        assert!("Requester".parse::<Role>().is_err());
        assert!("Admin".parse::<Role>().is_err());
    }

    /// tap.lua ranks roles by their place in ARGV[18] ([`Role::ranked`]), never by a name: it
    /// compares no role with a literal, and the roles its fallback for an earlier release's
    /// tokens names are roles Rust can send.
    #[test]
    fn tap_lua_ranks_roles_and_never_compares_one_with_a_name() {
        assert_eq!(Role::ranked(), "viewer,requester,user,admin");
        let tap = crate::assets::read("lua/tap.lua");
        for cmp in ["role == '", "role ~= '", "role=='", "role~='"] {
            assert!(
                !tap.contains(cmp),
                "tap.lua compares a role with a name: {cmp}"
            );
        }
        let header = tap
            .split("ARGV[16]")
            .nth(1)
            .and_then(|rest| rest.split("ARGV[17]").next())
            .expect("tap.lua's header describes the tapper's role (ARGV[16])");
        for r in Role::ALL {
            assert!(
                header.contains(r.as_str()),
                "tap.lua's header misses {:?}",
                r.as_str()
            );
        }
        let named: Vec<&str> = tap
            .split("needs = '")
            .skip(1)
            .map(|rest| rest.split('\'').next().unwrap())
            .collect();
        assert!(!named.is_empty(), "tap.lua's fallback names no role");
        for name in named {
            assert!(name.parse::<Role>().is_ok(), "tap.lua names {name:?}");
        }
    }
}
