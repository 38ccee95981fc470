//! MoviePilot's own Telegram mapping in Redis (`users:moviepilot`): one process at a time reads
//! MoviePilot's users (users_turn.lua decides whose turn it is, users.lua writes what it found and
//! ends the turn, unlock.lua ends a turn that failed), and every ingress process reads the HASH
//! back, so a change reaches every process of a split deployment.

use std::collections::BTreeMap;
use std::time::Duration;

use redis::AsyncCommands as _;

use super::scripts::ScriptCall;
use super::{Ledger, LedgerError, scripts};
use crate::vocabulary::Role;

/// MoviePilot's mapping as the last read stored it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredUsers {
    /// When the last read finished (ms, Redis's clock); `None`: no read ever finished.
    pub refreshed_at: Option<u64>,
    /// `ok`, `not_superuser` (MoviePilot refused the list; no mapping), or empty before any read.
    pub state: String,
    /// The process that made the last read.
    pub by: String,
    /// Each mapped Telegram id and its `<MoviePilot name>:<role>`, by id: a requester's as
    /// `requester:<id>` holds it ([`REQUESTER_FIELD`]), everyone else's as their `<id>` field.
    pub entries: Vec<(i64, String)>,
    /// Each mapped Telegram id and the MoviePilot rights its role was read from
    /// (`MoviePilotRights::stored_value`), by id: fields `permissions:<id>`, which releases
    /// before this one neither write nor read.
    pub rights: Vec<(i64, String)>,
}

/// The prefix of the fields that hold a mapped id's MoviePilot rights (`permissions:<id>`).
pub const RIGHTS_FIELD: &str = "permissions:";

/// The prefix of the fields that hold a requester's mapping (`requester:<id>`, issue 44).
///
/// A release up to 0.2.0 reads only the `<id>` fields and knows no role `requester`: it skips
/// a `<name>:requester` it cannot parse, and an allowed user nobody maps is a `user` there (an
/// `admin` when nobody else is mapped), so the requester would act as one. So a requester is
/// stored as a viewer in its `<id>` field (`<name>:viewer`, what an older release reads) and as
/// itself in `requester:<id>` (`<name>:requester`), which releases from this one read instead.
/// The older reading is less than the role, never more (docs/releases.md).
pub const REQUESTER_FIELD: &str = "requester:";

/// The fields one mapped id is stored in (`<MoviePilot name>:<role>` as `Mapping::stored_value`
/// writes it): its `<id>` field, and for a requester `<id>` as a viewer plus `requester:<id>`
/// ([`REQUESTER_FIELD`]).
pub fn mapping_fields(id: i64, value: &str) -> Vec<(String, String)> {
    match value.rsplit_once(':') {
        Some((name, role)) if role == Role::Requester.as_str() => vec![
            (id.to_string(), format!("{name}:{}", Role::Viewer.as_str())),
            (format!("{REQUESTER_FIELD}{id}"), value.to_string()),
        ],
        _ => vec![(id.to_string(), value.to_string())],
    }
}

impl StoredUsers {
    /// A HASH's fields as users.lua writes them: numbers are Telegram ids, the rest describe
    /// the mapping.
    pub fn from_fields(fields: impl IntoIterator<Item = (String, String)>) -> StoredUsers {
        let mut out = StoredUsers::default();
        let mut requesters = BTreeMap::new();
        for (field, value) in fields {
            if let Ok(id) = field.parse::<i64>() {
                out.entries.push((id, value));
                continue;
            }
            if let Some(Ok(id)) = field.strip_prefix(RIGHTS_FIELD).map(str::parse::<i64>) {
                out.rights.push((id, value));
                continue;
            }
            if let Some(Ok(id)) = field.strip_prefix(REQUESTER_FIELD).map(str::parse::<i64>) {
                requesters.insert(id, value);
                continue;
            }
            match field.as_str() {
                "refreshed_at" => out.refreshed_at = value.parse().ok(),
                "state" => out.state = value,
                "by" => out.by = value,
                _ => {}
            }
        }
        // A requester's own field counts where its `<id>` field says viewer (as they are
        // written together), never above anything else.
        let viewer = format!(":{}", Role::Viewer.as_str());
        for (id, value) in &mut out.entries {
            if let Some(requester) = requesters.remove(id)
                && value.ends_with(&viewer)
            {
                *value = requester;
            }
        }
        out.entries.sort();
        out.rights.sort();
        out
    }
}

impl Ledger {
    /// MoviePilot's mapping as stored (one HGETALL: the old mapping or the new one, whole).
    pub async fn moviepilot_users(&self) -> Result<StoredUsers, LedgerError> {
        let mut conn = self.conn.clone();
        let h: BTreeMap<String, String> = conn
            .hgetall(self.keys.users_moviepilot())
            .await
            .map_err(LedgerError::redis("reading MoviePilot's user mapping"))?;
        Ok(StoredUsers::from_fields(h))
    }

    /// users_turn.lua: true when `holder` is to read MoviePilot's users now (for at most
    /// `lease`), the last read being `interval` old (`retry` old when it did not finish).
    pub async fn users_turn(
        &self,
        holder: &str,
        interval: Duration,
        retry: Duration,
        lease: Duration,
    ) -> Result<bool, LedgerError> {
        let call = self.users_turn_call(holder, interval, retry, lease);
        let got: i64 = self
            .send(&call, "asking whose turn it is to read MoviePilot's users")
            .await?;
        Ok(got == 1)
    }

    pub(super) fn users_turn_call(
        &self,
        holder: &str,
        interval: Duration,
        retry: Duration,
        lease: Duration,
    ) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::USERS_TURN, 2, 4, 96);
        call.key("mapping key", self.keys.users_moviepilot())
            .key("lock key", self.keys.users_refresh_lock())
            .arg("holder", holder)
            .arg("interval", interval.as_millis() as u64)
            .arg("retry", retry.as_millis() as u64)
            .arg("lease", lease.as_millis() as u64);
        call
    }

    /// users.lua: the mapping `holder`'s read found (`state` `ok` or `not_superuser`) and the
    /// MoviePilot rights behind it, in one step; the mapping it replaced, or `None` when the turn
    /// was no longer `holder`'s.
    pub async fn store_moviepilot_users(
        &self,
        holder: &str,
        state: &str,
        entries: &[(i64, String)],
        rights: &[(i64, String)],
    ) -> Result<Option<StoredUsers>, LedgerError> {
        let call = self.users_call(holder, state, entries, rights);
        let reply: Vec<redis::Value> = self
            .send(&call, "storing MoviePilot's user mapping")
            .await?;
        let mut items = reply.into_iter();
        if !matches!(items.next(), Some(redis::Value::Int(1))) {
            return Ok(None);
        }
        let text = |v: redis::Value| redis::from_redis_value::<String>(v).unwrap_or_default();
        let mut fields = Vec::new();
        while let (Some(f), Some(v)) = (items.next(), items.next()) {
            fields.push((text(f), text(v)));
        }
        Ok(Some(StoredUsers::from_fields(fields)))
    }

    pub(super) fn users_call(
        &self,
        holder: &str,
        state: &str,
        entries: &[(i64, String)],
        rights: &[(i64, String)],
    ) -> ScriptCall {
        let entries: Vec<(String, String)> = entries
            .iter()
            .flat_map(|(id, value)| mapping_fields(*id, value))
            .collect();
        let bytes = entries
            .iter()
            .map(|(_, v)| v.len() + 36)
            .chain(rights.iter().map(|(_, v)| v.len() + 36))
            .sum::<usize>();
        let pairs = entries.len() + rights.len();
        let mut call = ScriptCall::new(&scripts::USERS, 2, 2 + 2 * pairs, 64 + bytes);
        call.key("mapping key", self.keys.users_moviepilot())
            .key("lock key", self.keys.users_refresh_lock())
            .arg("holder", holder)
            .arg("state", state);
        for (field, value) in entries {
            call.args([field, value]);
        }
        for (id, value) in rights {
            call.args([format!("{RIGHTS_FIELD}{id}"), value.clone()]);
        }
        call
    }

    /// unlock.lua: a read that failed ends its turn, so another try need not wait out the lease.
    pub async fn users_turn_end(&self, holder: &str) -> Result<(), LedgerError> {
        let call = self.users_turn_end_call(holder);
        let _: i64 = self
            .send(&call, "ending a read of MoviePilot's users")
            .await?;
        Ok(())
    }

    pub(super) fn users_turn_end_call(&self, holder: &str) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::UNLOCK, 1, 1, 64);
        call.key("lock key", self.keys.users_refresh_lock())
            .arg("owner", holder);
        call
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_fields_are_ids_the_rest_describe_the_mapping() {
        let s = StoredUsers::from_fields([
            ("state".to_string(), "ok".to_string()),
            ("refreshed_at".into(), "1700000000000".into()),
            ("attempted_at".into(), "1700000000000".into()),
            ("by".into(), "host-1".into()),
            ("222".into(), "bob:user".into()),
            ("111".into(), "alice:admin".into()),
            ("permissions:222".into(), "{}".into()),
            ("permissions:x".into(), "{}".into()),
        ]);
        assert_eq!(s.state, "ok");
        assert_eq!(s.refreshed_at, Some(1_700_000_000_000));
        assert_eq!(
            s.entries,
            vec![(111, "alice:admin".into()), (222, "bob:user".into())]
        );
        assert_eq!(s.rights, vec![(222, "{}".into())]);
        assert_eq!(StoredUsers::from_fields([]).refreshed_at, None);
    }

    /// How 0.2.0 (the release before this one) reads `users:moviepilot`, copied from its
    /// `StoredUsers::from_fields`, `Mapping::from_stored` and `Role`'s parse (`git show
    /// v0.2.0:crates/service/src/users/mod.rs`): the numeric fields are ids, each value
    /// `<name>:<role>` with a role it knows, anything else skipped.
    fn read_as_0_2_0(fields: &[(String, String)]) -> Vec<(i64, String, &'static str)> {
        fields
            .iter()
            .filter_map(|(field, value)| {
                let id = field.parse::<i64>().ok()?;
                let (name, role) = value.rsplit_once(':')?;
                let role = ["viewer", "user", "admin"]
                    .into_iter()
                    .find(|r| *r == role)?;
                Some((id, name.to_string(), role))
            })
            .collect()
    }

    /// Issue 44: a requester is stored so that 0.2.0 reads a viewer (were it skipped, 0.2.0
    /// would make them an unmapped `user`, or everyone an `admin` if nobody else is mapped), and
    /// this release reads the requester back; every other role is stored as before.
    #[test]
    fn a_requester_reads_as_a_viewer_in_0_2_0_and_as_a_requester_here() {
        let entries = [
            (111, "alice:admin".to_string()),
            (222, "bob:user".to_string()),
            (333, "carol:requester".to_string()),
            (444, "dave:viewer".to_string()),
        ];
        let fields: Vec<(String, String)> = entries
            .iter()
            .flat_map(|(id, value)| mapping_fields(*id, value))
            .collect();
        assert_eq!(
            read_as_0_2_0(&fields),
            vec![
                (111, "alice".into(), "admin"),
                (222, "bob".into(), "user"),
                (333, "carol".into(), "viewer"),
                (444, "dave".into(), "viewer"),
            ]
        );
        // Why: the plain form would be skipped by 0.2.0.
        assert_eq!(
            read_as_0_2_0(&[("333".into(), "carol:requester".into())]),
            vec![]
        );
        assert!(fields.contains(&("requester:333".into(), "carol:requester".into())));

        let mut all = fields.clone();
        all.push(("state".into(), "ok".into()));
        let back = StoredUsers::from_fields(all);
        assert_eq!(back.entries, entries.to_vec());
        let mappings: Vec<_> = back
            .entries
            .iter()
            .filter_map(|(id, v)| crate::users::Mapping::from_stored(*id, v))
            .map(|m| (m.user_id, m.role))
            .collect();
        assert_eq!(mappings[2], (333, Role::Requester));
    }

    /// A `requester:<id>` field counts only beside a viewer's `<id>` field (they are written
    /// together): alone, or beside another role, it raises nobody.
    #[test]
    fn a_requester_field_never_raises_another_role_or_maps_alone() {
        let s = StoredUsers::from_fields([
            ("1".to_string(), "a:user".to_string()),
            ("requester:1".into(), "a:requester".into()),
            ("requester:2".into(), "b:requester".into()),
            ("3".into(), "c:viewer".into()),
            ("requester:x".into(), "c:requester".into()),
        ]);
        assert_eq!(
            s.entries,
            vec![(1, "a:user".into()), (3, "c:viewer".into())]
        );
    }
}
