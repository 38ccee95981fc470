//! The per-media lock around a subscription's create (`lua/lock.lua`, `lua/unlock.lua`): one job
//! at a time looks for a media's subscription and creates it, so two jobs cannot both find none.

use std::time::Duration;

use super::scripts::ScriptCall;
use super::{Ledger, LedgerError, scripts};

impl Ledger {
    /// Takes the lock on creating a subscription to this media for `ttl` (lock.lua; the same
    /// owner may take it again); false if another owner holds it.
    pub async fn lock_media(
        &self,
        tmdb_id: u64,
        season: Option<u32>,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, LedgerError> {
        let call = self.lock_media_call(tmdb_id, season, owner, ttl);
        let held: i64 = self.send(&call, "locking a media").await?;
        Ok(held == 1)
    }

    pub(super) fn lock_media_call(
        &self,
        tmdb_id: u64,
        season: Option<u32>,
        owner: &str,
        ttl: Duration,
    ) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::LOCK, 1, 2, 64);
        call.key("lock key", self.keys.media_lock(tmdb_id, season))
            .arg("owner", owner)
            .arg("lease", ttl.as_millis() as u64);
        call
    }

    /// Releases the media lock if `owner` still holds it.
    pub async fn unlock_media(
        &self,
        tmdb_id: u64,
        season: Option<u32>,
        owner: &str,
    ) -> Result<(), LedgerError> {
        let call = self.unlock_media_call(tmdb_id, season, owner);
        let _: i64 = self.send(&call, "unlocking a media").await?;
        Ok(())
    }

    pub(super) fn unlock_media_call(
        &self,
        tmdb_id: u64,
        season: Option<u32>,
        owner: &str,
    ) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::UNLOCK, 1, 1, 64);
        call.key("lock key", self.keys.media_lock(tmdb_id, season))
            .arg("owner", owner);
        call
    }
}
