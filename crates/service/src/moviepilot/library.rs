//! The library check: what MoviePilot's media server already holds of one media, asked before
//! oncebot spends a tracker search or makes a subscription.
//!
//! Policy:
//! - **Never in the way.** The whole check (every call it makes) has [`LIBRARY_TIMEOUT`]; no
//!   media server configured, a route MoviePilot does not have (404), a refusal, an error or a
//!   slow answer make it [`Library::Unknown`] or [`Library::NotConfigured`], which say nothing
//!   and block nothing. It is read-only, so nothing of it is ever retried.
//! - **"Not configured" is asked, not guessed.** With no media server MoviePilot answers every
//!   media "missing" (no 404, no error: v2.5.6 `media_exists` runs no module), so
//!   `GET /api/v1/mediaserver/clients` comes first and `[]` ends the check.
//! - **What is missing.** `POST /api/v1/mediaserver/notexists` answers a list of seasons that
//!   are not complete (a movie: `[]` present, one entry missing); an entry's empty `episodes`
//!   means the whole season is missing, not none. For a series `[]` is also what MoviePilot
//!   answers when it could not recognise the media, so a series needs positive evidence too:
//!   `POST /api/v1/mediaserver/exists_remote` (the episodes present, by season), asked at the
//!   same time. Season 0 (specials) is never considered.
//!
//! This is MoviePilot's `mediaserver` area (`app/api/endpoints/mediaserver.py`). Routes:
//! `GET /api/v1/mediaserver/clients`, `POST /api/v1/mediaserver/notexists`,
//! `POST /api/v1/mediaserver/exists_remote`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::client::{Call, MoviePilot, media_label};
use super::error::MpError;
use super::types::{Dialect, MediaKind};

/// How long one library check may take in all (the clients list and the one or two library
/// routes together): a slow media server must not hold up a search.
pub const LIBRARY_TIMEOUT: Duration = Duration::from_secs(3);

/// A media as the library check names it to MoviePilot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryMedia {
    pub tmdb_id: u64,
    pub kind: MediaKind,
    /// One season of a series; `None` for a movie or every season of a series.
    pub season: Option<u32>,
    /// MoviePilot's media servers look a title up by its name (Emby, Jellyfin): its title and
    /// year, where oncebot knows them (empty: MoviePilot recognises the TMDB id itself).
    pub title: String,
    pub year: Option<String>,
}

/// What the library holds of one media.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "in", rename_all = "snake_case")]
pub enum Library {
    /// No answer worth repeating (an error, a 404, a timeout, an answer that proves nothing):
    /// says nothing, and is cached only briefly (`NO_ANSWER_TTL` in the worker).
    Unknown,
    /// MoviePilot has no media server enabled: says nothing.
    NotConfigured,
    /// Nothing of it is there.
    Absent,
    /// All of it is there (the season asked, or every season MoviePilot knows).
    Present,
    /// Some of it: the seasons that are not complete.
    Partly { missing: Vec<Gap> },
}

/// A season that is not complete in the library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gap {
    pub season: u32,
    /// The missing episodes, ascending; empty: the whole season is missing.
    pub episodes: Vec<u32>,
    /// The season's episodes in all (0: MoviePilot did not say).
    pub total: u32,
}

impl Library {
    /// Everything asked for is in the library.
    pub fn is_present(&self) -> bool {
        *self == Library::Present
    }

    /// Worth remembering for all of `moviepilot.library_cache_secs`: an answer, not a failure
    /// to get one.
    pub fn cacheable(&self) -> bool {
        *self != Library::Unknown
    }
}

impl MoviePilot {
    /// What the library holds of `media`, within [`LIBRARY_TIMEOUT`]; never an error (see the
    /// module's doc).
    pub async fn library(&self, media: &LibraryMedia) -> Library {
        match tokio::time::timeout(LIBRARY_TIMEOUT, self.ask_library(media)).await {
            Ok(Ok(library)) => library,
            Ok(Err(error)) => {
                tracing::info!(error = %error, tmdb_id = media.tmdb_id, "library check said nothing");
                Library::Unknown
            }
            Err(_) => {
                tracing::info!(
                    tmdb_id = media.tmdb_id,
                    timeout_secs = LIBRARY_TIMEOUT.as_secs(),
                    "library check not answered in time; it says nothing"
                );
                Library::Unknown
            }
        }
    }

    /// The library routes as `oncebot doctor` checks them, within `within`: how many media
    /// servers MoviePilot has enabled and, with one, that `notexists` answers (asked about
    /// one well-known movie; read-only). An error is what the library check would meet: it
    /// would then say nothing.
    pub async fn library_routes(&self, within: Duration) -> Result<usize, MpError> {
        let servers = self.media_servers(within).await?;
        if servers > 0 {
            let probe = LibraryMedia {
                tmdb_id: 603,
                kind: MediaKind::Movie,
                season: None,
                title: "The Matrix".into(),
                year: Some("1999".into()),
            };
            self.library_route("notexists", &probe, within).await?;
        }
        Ok(servers)
    }

    async fn ask_library(&self, media: &LibraryMedia) -> Result<Library, MpError> {
        if self.media_servers(LIBRARY_TIMEOUT).await? == 0 {
            return Ok(Library::NotConfigured);
        }
        match media.kind {
            MediaKind::Movie => {
                let missing = self
                    .library_route("notexists", media, LIBRARY_TIMEOUT)
                    .await?;
                Ok(classify(media, &missing, &Value::Null))
            }
            MediaKind::Tv => {
                let (missing, present) = tokio::try_join!(
                    self.library_route("notexists", media, LIBRARY_TIMEOUT),
                    self.library_route("exists_remote", media, LIBRARY_TIMEOUT),
                )?;
                Ok(classify(media, &missing, &present))
            }
        }
    }

    /// How many media servers MoviePilot has enabled (`GET /api/v1/mediaserver/clients`): none
    /// means its library answers say nothing (everything "missing"). Within `within`.
    async fn media_servers(&self, within: Duration) -> Result<usize, MpError> {
        let call =
            Call::get("listing the media servers", "/api/v1/mediaserver/clients").within(within);
        let rows: Vec<Value> = self.inner.fetch_list(&call).await?;
        Ok(rows.len())
    }

    /// `POST /api/v1/mediaserver/<route>` (`notexists`, `exists_remote`) with the media as
    /// MoviePilot's `MediaInfo` names it (v3 also by `media_source` + `media_id`); the answer's
    /// payload, bare (v2) or from its envelope (v3). Within `within`.
    async fn library_route(
        &self,
        route: &str,
        media: &LibraryMedia,
        within: Duration,
    ) -> Result<Value, MpError> {
        let mut body = json!({
            "type": media.kind.wire_name(),
            "tmdb_id": media.tmdb_id,
            "title": media.title,
            "year": media.year,
        });
        if let Some(season) = media.season {
            body["season"] = json!(season);
        }
        if self.inner.dialect == Dialect::V3 {
            body["media_source"] = json!("themoviedb");
            body["media_id"] = json!(media.tmdb_id.to_string());
        }
        let what = format!(
            "asking the library ({route}) about {}",
            media_label(media.tmdb_id, media.season)
        );
        let call = Call::post(what, format!("/api/v1/mediaserver/{route}"))
            .json(body)
            .within(within);
        let answer = self.inner.call(&call).await?;
        let answer = self.inner.check_status(&call, answer)?;
        Ok(self.inner.decode(&call, &answer)?.unwrap_or(Value::Null))
    }
}

/// The library's state from `/notexists`' answer (`missing`) and, for a series,
/// `/exists_remote`'s (`present`: `{season: [episodes]}`; v2.5.6 answers `[]` for none).
pub fn classify(media: &LibraryMedia, missing: &Value, present: &Value) -> Library {
    let Some(rows) = missing.as_array() else {
        return Library::Unknown;
    };
    if media.kind == MediaKind::Movie {
        return if rows.is_empty() {
            Library::Present
        } else {
            Library::Absent
        };
    }
    let asked = |season: u32| season > 0 && media.season.is_none_or(|s| s == season);
    let mut gaps: Vec<Gap> = rows
        .iter()
        .filter_map(gap)
        .filter(|g| asked(g.season))
        .collect();
    gaps.sort_by_key(|g| g.season);
    let any_present = present_episodes(present)
        .into_iter()
        .any(|(season, episodes)| asked(season) && !episodes.is_empty());
    match (gaps.is_empty(), any_present) {
        // `[]` and nothing present: MoviePilot could not tell (recognition failed).
        (true, false) => Library::Unknown,
        (true, true) => Library::Present,
        (false, false) if gaps.iter().all(|g| g.episodes.is_empty()) => Library::Absent,
        (false, _) => Library::Partly { missing: gaps },
    }
}

/// One `NotExistMediaInfo` row as a [`Gap`]; a row naming every episode is the whole season.
fn gap(row: &Value) -> Option<Gap> {
    let number = |key: &str| row.get(key).and_then(Value::as_u64);
    let season = u32::try_from(number("season")?).ok()?;
    let total = number("total_episode")
        .and_then(|t| u32::try_from(t).ok())
        .unwrap_or(0);
    let mut episodes: Vec<u32> = row
        .get("episodes")
        .and_then(Value::as_array)
        .map(|eps| {
            eps.iter()
                .filter_map(Value::as_u64)
                .filter_map(|e| u32::try_from(e).ok())
                .collect()
        })
        .unwrap_or_default();
    episodes.sort_unstable();
    episodes.dedup();
    if total > 0 && episodes.len() >= total as usize {
        episodes.clear();
    }
    Some(Gap {
        season,
        episodes,
        total,
    })
}

/// `{ "1": [1, 2, 3] }` as season → episodes; anything else (v2.5.6's `[]`) as none.
fn present_episodes(present: &Value) -> BTreeMap<u32, Vec<u64>> {
    let Some(map) = present.as_object() else {
        return BTreeMap::new();
    };
    map.iter()
        .filter_map(|(season, eps)| {
            let season = season.trim().parse::<u32>().ok()?;
            let eps = eps.as_array()?.iter().filter_map(Value::as_u64).collect();
            Some((season, eps))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn media(kind: MediaKind, season: Option<u32>) -> LibraryMedia {
        LibraryMedia {
            tmdb_id: 1,
            kind,
            season,
            title: "x".into(),
            year: None,
        }
    }

    #[test]
    fn a_movie_is_present_when_nothing_is_missing() {
        let movie = media(MediaKind::Movie, None);
        assert_eq!(classify(&movie, &json!([]), &Value::Null), Library::Present);
        let missing =
            json!([{"season": null, "episodes": [], "total_episode": 0, "start_episode": 0}]);
        assert_eq!(classify(&movie, &missing, &Value::Null), Library::Absent);
        assert_eq!(classify(&movie, &json!({}), &Value::Null), Library::Unknown);
    }

    #[test]
    fn a_season_with_missing_episodes_is_partly_there_in_order() {
        let tv = media(MediaKind::Tv, Some(1));
        let missing = json!([{"season": 1, "episodes": [8, 5, 6, 7], "total_episode": 10, "start_episode": 5}]);
        let present = json!({"1": [1, 2, 3, 4, 9, 10]});
        assert_eq!(
            classify(&tv, &missing, &present),
            Library::Partly {
                missing: vec![Gap {
                    season: 1,
                    episodes: vec![5, 6, 7, 8],
                    total: 10
                }]
            }
        );
    }

    #[test]
    fn an_empty_episode_list_is_the_whole_season_missing() {
        let tv = media(MediaKind::Tv, Some(2));
        let missing =
            json!([{"season": 2, "episodes": [], "total_episode": 13, "start_episode": 1}]);
        assert_eq!(classify(&tv, &missing, &json!([])), Library::Absent);
        assert_eq!(classify(&tv, &missing, &json!({"2": []})), Library::Absent);
    }

    #[test]
    fn an_empty_answer_for_a_series_needs_episodes_present_to_mean_complete() {
        let tv = media(MediaKind::Tv, Some(1));
        assert_eq!(classify(&tv, &json!([]), &json!([])), Library::Unknown);
        assert_eq!(
            classify(&tv, &json!([]), &json!({"1": [1, 2]})),
            Library::Present
        );
    }

    #[test]
    fn every_season_of_a_series_lists_each_incomplete_one() {
        let tv = media(MediaKind::Tv, None);
        let missing = json!([
            {"season": 2, "episodes": [], "total_episode": 13, "start_episode": 1},
            {"season": 0, "episodes": [], "total_episode": 3, "start_episode": 1},
        ]);
        let present = json!({"1": [1, 2, 3]});
        assert_eq!(
            classify(&tv, &missing, &present),
            Library::Partly {
                missing: vec![Gap {
                    season: 2,
                    episodes: vec![],
                    total: 13
                }]
            }
        );
    }

    #[test]
    fn only_answers_are_cached() {
        assert!(!Library::Unknown.cacheable());
        assert!(Library::NotConfigured.cacheable());
        let text = serde_json::to_string(&Library::Partly {
            missing: vec![Gap {
                season: 1,
                episodes: vec![5],
                total: 8,
            }],
        })
        .unwrap();
        assert_eq!(
            serde_json::from_str::<Library>(&text).unwrap(),
            Library::Partly {
                missing: vec![Gap {
                    season: 1,
                    episodes: vec![5],
                    total: 8
                }]
            }
        );
    }
}
