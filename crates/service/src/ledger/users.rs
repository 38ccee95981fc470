//! MoviePilot's own Telegram mapping in Redis (`users:moviepilot`): one process at a time reads
//! MoviePilot's users (users_turn.lua decides whose turn it is, users.lua writes what it found and
//! ends the turn, unlock.lua ends a turn that failed), and every ingress process reads the HASH
//! back, so a change reaches every process of a split deployment.

use std::collections::BTreeMap;
use std::time::Duration;

use redis::AsyncCommands as _;

use super::scripts::ScriptCall;
use super::{Ledger, LedgerError, scripts};

/// MoviePilot's mapping as the last read stored it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredUsers {
    /// When the last read finished (ms, Redis's clock); `None`: no read ever finished.
    pub refreshed_at: Option<u64>,
    /// `ok`, `not_superuser` (MoviePilot refused the list; no mapping), or empty before any read.
    pub state: String,
    /// The process that made the last read.
    pub by: String,
    /// Each mapped Telegram id and its `<MoviePilot name>:<role>`, by id.
    pub entries: Vec<(i64, String)>,
    /// Each mapped Telegram id and the MoviePilot rights its role was read from
    /// (`MoviePilotRights::stored_value`), by id: fields `permissions:<id>`, which releases
    /// before this one neither write nor read.
    pub rights: Vec<(i64, String)>,
}

/// The prefix of the fields that hold a mapped id's MoviePilot rights (`permissions:<id>`).
pub const RIGHTS_FIELD: &str = "permissions:";

impl StoredUsers {
    /// A HASH's fields as users.lua writes them: numbers are Telegram ids, the rest describe
    /// the mapping.
    pub fn from_fields(fields: impl IntoIterator<Item = (String, String)>) -> StoredUsers {
        let mut out = StoredUsers::default();
        for (field, value) in fields {
            if let Ok(id) = field.parse::<i64>() {
                out.entries.push((id, value));
                continue;
            }
            if let Some(Ok(id)) = field.strip_prefix(RIGHTS_FIELD).map(str::parse::<i64>) {
                out.rights.push((id, value));
                continue;
            }
            match field.as_str() {
                "refreshed_at" => out.refreshed_at = value.parse().ok(),
                "state" => out.state = value,
                "by" => out.by = value,
                _ => {}
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
        let bytes = entries
            .iter()
            .chain(rights)
            .map(|(_, v)| v.len() + 36)
            .sum::<usize>();
        let pairs = entries.len() + rights.len();
        let mut call = ScriptCall::new(&scripts::USERS, 2, 2 + 2 * pairs, 64 + bytes);
        call.key("mapping key", self.keys.users_moviepilot())
            .key("lock key", self.keys.users_refresh_lock())
            .arg("holder", holder)
            .arg("state", state);
        for (id, value) in entries {
            call.args([id.to_string(), value.clone()]);
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
}
