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
    /// Weekly quotas (issue 44), per role and per person: `requester=5,user=30,111111111=10`;
    /// empty: nobody is limited. Admins never are. Read with [`HouseholdSettings::quotas`].
    pub quotas: String,
}

/// `household.quotas` read: how many effects (a subscription made, a download added) each
/// role and each person may have in a rolling 7 days.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Quotas {
    by_role: Vec<(crate::vocabulary::Role, u32)>,
    by_person: Vec<(i64, u32)>,
}

/// The most a quota may be.
pub const MAX_QUOTA: u32 = 10_000;

impl Quotas {
    /// `user_id`'s weekly quota with `role`: their own entry, else their role's; `None`: not
    /// limited (an admin never is).
    pub fn limit(&self, user_id: i64, role: crate::vocabulary::Role) -> Option<u32> {
        if role == crate::vocabulary::Role::Admin {
            return None;
        }
        let own = self.by_person.iter().find(|(id, _)| *id == user_id);
        let of_role = self.by_role.iter().find(|(r, _)| *r == role);
        own.map(|(_, n)| *n).or(of_role.map(|(_, n)| *n))
    }

    /// Whether anyone is limited.
    pub fn any(&self) -> bool {
        !self.by_role.is_empty() || !self.by_person.is_empty()
    }

    /// Reads `requester=5,user=30,111111111=10`: a role's name or a Telegram id, `=`, a count.
    pub fn parse(text: &str) -> Result<Quotas, String> {
        let mut q = Quotas::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (who, n) = part
                .split_once('=')
                .ok_or_else(|| format!("{part:?} is not <role or id>=<count>"))?;
            let n: u32 = n
                .trim()
                .parse()
                .ok()
                .filter(|n| *n <= MAX_QUOTA)
                .ok_or_else(|| format!("{part:?}: the count must be 0 to {MAX_QUOTA}"))?;
            let who = who.trim();
            if let Ok(id) = who.parse::<i64>() {
                q.by_person.retain(|(i, _)| *i != id);
                q.by_person.push((id, n));
            } else {
                let role: crate::vocabulary::Role = who.parse()?;
                q.by_role.retain(|(r, _)| *r != role);
                q.by_role.push((role, n));
            }
        }
        Ok(q)
    }
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

    /// `household.quotas` read (checked at start, so empty if it cannot be read).
    pub fn quotas(&self) -> Quotas {
        Quotas::parse(&self.quotas).unwrap_or_default()
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
        if let Err(e) = Quotas::parse(&self.quotas) {
            return Err(SettingError::new(
                "household.quotas",
                e,
                format!(
                    "set {} to comma-separated <role or Telegram id>=<count>, e.g. requester=5,user=30,111111111=10 (empty: no quotas)",
                    env_name("household.quotas")
                ),
            ));
        }
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
    use super::Quotas;
    use crate::config::test_env::{ALL, load, serving_env};
    use crate::vocabulary::Role;

    /// A person's own entry wins over their role's; admins are never limited; a later entry for
    /// the same key replaces an earlier one.
    #[test]
    fn quotas_read_per_role_and_per_person() {
        let q = Quotas::parse("requester=5, user=30,111111111=10,user=20").unwrap();
        assert_eq!(q.limit(1, Role::Requester), Some(5));
        assert_eq!(q.limit(1, Role::User), Some(20));
        assert_eq!(q.limit(111111111, Role::User), Some(10));
        assert_eq!(q.limit(111111111, Role::Admin), None);
        assert_eq!(q.limit(1, Role::Viewer), None);
        assert!(q.any());
        assert!(!Quotas::parse("").unwrap().any());
        assert!(Quotas::parse("requester=10001").is_err());
    }

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
            ("ONCEBOT__HOUSEHOLD__QUOTAS", "requester=five", "quotas"),
            ("ONCEBOT__HOUSEHOLD__QUOTAS", "owner=5", "quotas"),
            ("ONCEBOT__HOUSEHOLD__QUOTAS", "user", "quotas"),
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
