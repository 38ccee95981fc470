//! The library check's cache: one STRING per media (`library:<kind>:<tmdb id>:<season>`), the
//! check's answer as JSON, expiring after `moviepilot.library_cache_secs`. Shared by every
//! worker and kept over a restart; it carries no job state, so it is written without a script.

use std::time::Duration;

use redis::AsyncCommands as _;

use super::{Ledger, LedgerError};

/// A media as the cache names it: `movie` or `tv`, its TMDB id, its season (`None`: a movie, or
/// every season of a series).
pub type LibraryKey = (&'static str, u64, Option<u32>);

impl Ledger {
    /// The cached answers of `media`, in that order (`None`: not cached or expired), in one
    /// MGET.
    pub async fn cached_library(
        &self,
        media: &[LibraryKey],
    ) -> Result<Vec<Option<String>>, LedgerError> {
        if media.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = media
            .iter()
            .map(|(kind, id, season)| self.keys.library(kind, *id, *season))
            .collect();
        let mut conn = self.conn.clone();
        redis::cmd("MGET")
            .arg(&keys)
            .query_async(&mut conn)
            .await
            .map_err(LedgerError::redis("reading the library cache"))
    }

    /// Keeps `answer` for `media` for `ttl`.
    pub async fn cache_library(
        &self,
        media: LibraryKey,
        answer: &str,
        ttl: Duration,
    ) -> Result<(), LedgerError> {
        let (kind, id, season) = media;
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let mut conn = self.conn.clone();
        conn.pset_ex::<_, _, ()>(self.keys.library(kind, id, season), answer, ms)
            .await
            .map_err(LedgerError::redis("writing the library cache"))
    }
}
