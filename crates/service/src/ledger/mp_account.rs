//! oncebot's own MoviePilot account as a worker found it when it reached MoviePilot
//! (`mp_account`): whether it is a superuser, on which MoviePilot. One HASH, rewritten whole by
//! every worker that connects, so the newest finding stands; `/readyz` of every process reads
//! it (`lua/ready.lua`), since on MoviePilot v3 a plain account stops the workers.

use redis::AsyncCommands as _;

use super::{Ledger, LedgerError};

/// The `state` of an account MoviePilot treats as a superuser (the API key, or such a login).
pub const ACCOUNT_SUPERUSER: &str = "superuser";
/// The `state` of a login that is not a superuser.
pub const ACCOUNT_NOT_SUPERUSER: &str = "not_superuser";
/// The `state` when neither the login's answer nor `GET /api/v1/user/current` said.
pub const ACCOUNT_UNKNOWN: &str = "unknown";

/// What a worker found of oncebot's MoviePilot account when it reached MoviePilot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountFinding {
    /// [`ACCOUNT_SUPERUSER`], [`ACCOUNT_NOT_SUPERUSER`] or [`ACCOUNT_UNKNOWN`].
    pub state: &'static str,
    /// `v2` or `v3`.
    pub dialect: String,
    /// MoviePilot's version as it reported it.
    pub version: String,
    /// `api_key` or `login`.
    pub via: &'static str,
    /// The login's username; empty with the API key.
    pub user: String,
    /// The worker process that found it.
    pub by: String,
}

impl Ledger {
    /// Writes the finding over the last one (every field, one HSET): the newest worker's stands.
    pub async fn record_mp_account(&self, f: &AccountFinding) -> Result<(), LedgerError> {
        let mut conn = self.conn.clone();
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
            .to_string();
        let fields = [
            ("state", f.state),
            ("dialect", f.dialect.as_str()),
            ("version", f.version.as_str()),
            ("via", f.via),
            ("user", f.user.as_str()),
            ("by", f.by.as_str()),
            ("at", at.as_str()),
        ];
        let _: () = conn
            .hset_multiple(self.keys.mp_account(), &fields)
            .await
            .map_err(LedgerError::redis("recording oncebot's MoviePilot account"))?;
        Ok(())
    }

    /// The last finding's fields, as stored (empty when no worker reached MoviePilot yet).
    pub async fn mp_account(&self) -> Result<Vec<(String, String)>, LedgerError> {
        let mut conn = self.conn.clone();
        conn.hgetall(self.keys.mp_account())
            .await
            .map_err(LedgerError::redis("reading oncebot's MoviePilot account"))
    }
}
