//! Who owns a subscription where MoviePilot cannot say: on the v3 line its update pins the
//! owner to the account that created it (oncebot's service account), so oncebot keeps the
//! requester of each subscription it created for a named user itself, in one HASH.
//!
//! A field names the subscription with its media (`<id>:<tmdb id>:<season>`), since MoviePilot
//! gives a deleted subscription's id to the next one: a record never speaks for other media.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::AsyncCommands as _;

use super::{Ledger, LedgerError};

/// How long this process trusts "no owner is recorded" before asking Redis again. Every
/// `/subscriptions` asks, so without it each one costs a round trip to Redis; with it, only
/// the first owner ever recorded, by another process, can go unseen, and for at most this long.
const NONE_TRUSTED_FOR: Duration = Duration::from_secs(1);

/// What this process last learned of whether any owner is recorded: once one is, some stays
/// (a lookup of a missing one answers nothing, so "yes" is never wrong to keep).
#[derive(Debug, Default)]
pub(super) struct OwnersSeen {
    any: AtomicBool,
    /// When Redis last said none, in ms since the epoch (0: never asked).
    none_at_ms: AtomicU64,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The field of subscription `id` to `tmdb_id` (and `season`, 0 for none).
fn field(id: u64, tmdb_id: Option<u64>, season: Option<u32>) -> String {
    format!("{id}:{}:{}", tmdb_id.unwrap_or(0), season.unwrap_or(0))
}

impl Ledger {
    /// Records `requester` as the owner of subscription `id` to that media.
    pub async fn record_owner(
        &self,
        id: u64,
        tmdb_id: Option<u64>,
        season: Option<u32>,
        requester: &str,
    ) -> Result<(), LedgerError> {
        let mut conn = self.conn.clone();
        conn.hset::<_, _, _, ()>(self.keys.owners(), field(id, tmdb_id, season), requester)
            .await
            .map_err(LedgerError::redis("recording a subscription's owner"))?;
        self.owners_seen.any.store(true, Ordering::Release);
        Ok(())
    }

    /// The recorded owner of each `(id, tmdb id, season)`, in the order given.
    pub async fn recorded_owners(
        &self,
        subs: &[(u64, Option<u64>, Option<u32>)],
    ) -> Result<Vec<Option<String>>, LedgerError> {
        if subs.is_empty() {
            return Ok(Vec::new());
        }
        let fields: Vec<String> = subs.iter().map(|&(i, t, s)| field(i, t, s)).collect();
        let mut conn = self.conn.clone();
        redis::cmd("HMGET")
            .arg(self.keys.owners())
            .arg(&fields)
            .query_async(&mut conn)
            .await
            .map_err(LedgerError::redis("reading subscriptions' owners"))
    }

    /// Whether any owner is recorded (v2 deployments never record one). Asks Redis at most
    /// once per [`NONE_TRUSTED_FOR`] while the answer is no, and never again once it is yes.
    pub async fn any_recorded_owner(&self) -> Result<bool, LedgerError> {
        let seen = &self.owners_seen;
        if seen.any.load(Ordering::Acquire) {
            return Ok(true);
        }
        let none_at = seen.none_at_ms.load(Ordering::Acquire);
        if none_at != 0 && now_ms().saturating_sub(none_at) < NONE_TRUSTED_FOR.as_millis() as u64 {
            return Ok(false);
        }
        let mut conn = self.conn.clone();
        let n: u64 = conn
            .hlen(self.keys.owners())
            .await
            .map_err(LedgerError::redis("counting subscriptions' owners"))?;
        if n > 0 {
            seen.any.store(true, Ordering::Release);
        } else {
            seen.none_at_ms.store(now_ms(), Ordering::Release);
        }
        Ok(n > 0)
    }

    /// Forgets the owner of a subscription oncebot deleted.
    pub async fn forget_owner(
        &self,
        id: u64,
        tmdb_id: Option<u64>,
        season: Option<u32>,
    ) -> Result<(), LedgerError> {
        let mut conn = self.conn.clone();
        conn.hdel::<_, _, ()>(self.keys.owners(), field(id, tmdb_id, season))
            .await
            .map_err(LedgerError::redis("forgetting a subscription's owner"))
    }
}
