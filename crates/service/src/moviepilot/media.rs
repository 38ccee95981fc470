//! MoviePilot's `media` area (`app/api/endpoints/media.py`): finding films and series by title
//! and reading one by its TMDB id. Both make MoviePilot ask TMDB, so both have
//! `moviepilot.search_timeout_secs`.
//!
//! Routes: `GET /api/v1/media/search`; `GET /api/v1/media/tmdb:<id>` (v3:
//! `/api/v1/media/<id>?media_source=themoviedb`).

use super::client::{Call, MoviePilot, short};
use super::error::MpError;
use super::types::{MediaItem, MediaKind, WireMedia};

/// The matches a media search asks MoviePilot for (its `count`; MoviePilot's own bot asks for
/// 8, one page): six pages of five, all a paged list keeps (`worker::pages`). A title with more
/// matches than that is better typed more precisely than paged through.
pub const MATCHES_ASKED: usize = 30;

impl MoviePilot {
    /// Media matching `title` (`GET /api/v1/media/search?title=&type=media&page=1&count=`
    /// [`MATCHES_ASKED`]), in MoviePilot's order. Results that are neither movie nor series are
    /// dropped.
    pub async fn search_media(&self, title: &str) -> Result<Vec<MediaItem>, MpError> {
        let what = format!("searching media for {:?}", short(title, 60));
        let call = Call::get(what, "/api/v1/media/search")
            .query("title", title)
            .query("type", "media")
            .query("page", 1)
            .query("count", MATCHES_ASKED)
            .within(self.inner.search_timeout);
        let rows: Vec<WireMedia> = self.inner.fetch_list(&call).await?;
        Ok(rows.into_iter().filter_map(WireMedia::into_item).collect())
    }

    /// One film or series by TMDB id; `None` when MoviePilot does not know it.
    pub async fn media_detail(
        &self,
        tmdb_id: u64,
        kind: MediaKind,
    ) -> Result<Option<MediaItem>, MpError> {
        let what = format!("reading TMDB {tmdb_id} ({})", kind.wire_name());
        let call = self
            .inner
            .get_media(what, "/api/v1/media", tmdb_id)
            .query("type_name", kind.wire_name())
            .within(self.inner.search_timeout);
        let answer = self.inner.call(&call).await?;
        let answer = self.inner.check_status(&call, answer)?;
        let media: Option<WireMedia> = self.inner.decode(&call, &answer)?;
        let Some(mut item) = media.and_then(WireMedia::into_item) else {
            return Ok(None);
        };
        match item.tmdb_id {
            Some(id) if id != tmdb_id => return Ok(None),
            _ => item.tmdb_id = Some(tmdb_id),
        }
        Ok(Some(item))
    }
}
