//! The grants (`users:granted`): roles given from the chat or the CLI, read with MoviePilot's
//! mapping in one round trip (what every ingress follows), and changed only by grants.lua (or,
//! from the chat, by the scripts that include `lua/include/grants.lua`).

use std::collections::BTreeMap;

use super::scripts::ScriptCall;
use super::{Ledger, LedgerError, StoredUsers, scripts};
use crate::users::Grant;
use crate::vocabulary::Role;

/// What Redis holds of the directory: MoviePilot's mapping (when it is followed) and the grants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredDirectory {
    /// `users:moviepilot`; `None` when it was not read (MoviePilot's mapping is off).
    pub moviepilot: Option<StoredUsers>,
    /// `users:granted`, by Telegram id (values no release wrote left out).
    pub granted: Vec<Grant>,
}

/// A change of one grant, as grants.lua makes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantChange {
    Grant {
        user_id: i64,
        role: Role,
        by: String,
    },
    Revoke {
        user_id: i64,
    },
}

/// What grants.lua did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantChanged {
    /// Written; the grant it replaced, if any.
    Granted { previous: Option<Grant> },
    /// Removed; what it was.
    Revoked { previous: Option<Grant> },
    /// A revoke of an id that had no grant: nothing changed.
    NoGrant,
}

impl Ledger {
    /// The grants, and with `moviepilot` MoviePilot's mapping too, in one round trip (a
    /// pipeline of HGETALLs on one slot): each as a whole, never half a change.
    pub async fn stored_directory(&self, moviepilot: bool) -> Result<StoredDirectory, LedgerError> {
        let mut pipe = redis::pipe();
        pipe.hgetall(self.keys.users_granted());
        if moviepilot {
            pipe.hgetall(self.keys.users_moviepilot());
        }
        let mut got: Vec<BTreeMap<String, String>> = pipe
            .query_async(&mut self.conn.clone())
            .await
            .map_err(LedgerError::redis(
                "reading the grants and MoviePilot's mapping",
            ))?;
        let stored = moviepilot.then(|| StoredUsers::from_fields(got.pop().unwrap_or_default()));
        let granted = got
            .pop()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(id, value)| Grant::from_stored(id.parse().ok()?, &value))
            .collect();
        Ok(StoredDirectory {
            moviepilot: stored,
            granted,
        })
    }

    /// grants.lua: one grant given or taken back.
    pub async fn change_grant(&self, change: &GrantChange) -> Result<GrantChanged, LedgerError> {
        let call = self.grants_call(change);
        let (outcome, previous): (String, String) =
            self.send_durable(&call, "changing a grant").await?;
        let (GrantChange::Grant { user_id, .. } | GrantChange::Revoke { user_id }) = *change;
        let previous = Grant::from_stored(user_id, &previous);
        Ok(match outcome.as_str() {
            "granted" => GrantChanged::Granted { previous },
            "revoked" => GrantChanged::Revoked { previous },
            _ => GrantChanged::NoGrant,
        })
    }

    pub(super) fn grants_call(&self, change: &GrantChange) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::GRANTS, 1, 4, 64);
        call.key("grants key", self.keys.users_granted());
        match change {
            GrantChange::Grant { user_id, role, by } => call
                .arg("mode", "grant")
                .arg("telegram id", user_id)
                .arg("role", role.as_str())
                .arg("by", by.as_str()),
            GrantChange::Revoke { user_id } => call
                .arg("mode", "revoke")
                .arg("telegram id", user_id)
                .arg("role", "")
                .arg("by", ""),
        };
        call
    }
}
