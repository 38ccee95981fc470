//! The simulator's media server, as MoviePilot's library routes show it
//! (`docs/research/moviepilot-library-paging-posters.md` §1).
//!
//! - **Clients** (`GET /api/v1/mediaserver/clients`): the enabled media servers, `[]` without
//!   one (bare in v2, enveloped in v3).
//! - **Missing** (`POST /api/v1/mediaserver/notexists`, a `MediaInfo` body): a bare list
//!   (enveloped in v3) of `NotExistMediaInfo` per season that is not complete. A movie: `[]`
//!   when in the library, else one entry with `season: null`. A series: one entry per
//!   incomplete season, its missing `episodes` in no particular order (MoviePilot builds them
//!   from a set difference), empty for a season missing whole. Media the catalogue does not
//!   know (recognition fails) answers `[]`; so does a v3 series without `media_source` +
//!   `media_id`. v2 answers a `type` other than `电影`/`电视剧` with a 500.
//! - **Present** (`POST /api/v1/mediaserver/exists_remote`): `{season: [episodes]}`; v2.5.6
//!   answers `[]` when nothing is there, v3 `{}` (and, for a season asked, that season with
//!   `[]`).
//! - **No media server** ([`MediaServer::None`], the default): no 404 and no error, as v2.5.6
//!   answers without one: `clients` is `[]`, `notexists` calls everything missing and
//!   `exists_remote` nothing present.
//! - **Faults:** [`MediaServer::Missing`] answers the three routes 404 (a MoviePilot without
//!   them); [`MediaServer::Slow`] answers as configured after a delay.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};

use super::{
    Data, Early, Req, Resp, SimMedia, State, early, error_resp, json_object, ok_payload, text_resp,
};
use oncebot::moviepilot::{Dialect, MediaKind};

/// The simulated MoviePilot's media server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MediaServer {
    /// None configured (what a fresh MoviePilot has).
    #[default]
    None,
    /// One (an Emby), holding what [`super::MoviePilotSim::library_add`] put in.
    Configured,
    /// The library routes answer 404.
    Missing,
    /// Configured, every library route answering after this long.
    Slow(Duration),
}

/// The media server and what its library holds.
#[derive(Debug, Default)]
pub(super) struct LibraryData {
    pub server: MediaServer,
    /// By TMDB id: the episodes present per season (a movie: season 0, episode 1).
    pub held: HashMap<u64, BTreeMap<u32, BTreeSet<u32>>>,
}

/// How long a library route waits before it answers.
pub(super) fn delay(data: &Data, key: &str) -> Duration {
    match (data.library.server, is_library_route(key)) {
        (MediaServer::Slow(d), true) => d,
        _ => Duration::ZERO,
    }
}

fn is_library_route(key: &str) -> bool {
    use super::routes::{MEDIASERVER_CLIENTS, MEDIASERVER_EXISTS_REMOTE, MEDIASERVER_NOTEXISTS};
    matches!(
        key,
        MEDIASERVER_CLIENTS | MEDIASERVER_NOTEXISTS | MEDIASERVER_EXISTS_REMOTE
    )
}

/// `GET /api/v1/mediaserver/clients`.
pub(super) fn clients(state: &State) -> Resp {
    let dialect = state.opts.dialect;
    match state.data().library.server {
        MediaServer::Missing => not_found(dialect),
        MediaServer::None => ok_payload(dialect, json!([])),
        MediaServer::Configured | MediaServer::Slow(_) => {
            ok_payload(dialect, json!([{"name": "Emby", "type": "emby"}]))
        }
    }
}

fn not_found(dialect: Dialect) -> Resp {
    error_resp(dialect, StatusCode::NOT_FOUND, "Not Found")
}

/// What a `MediaInfo` body asks about: the media (from the catalogue) and the season.
struct Asked {
    media: Option<SimMedia>,
    kind: MediaKind,
    season: Option<u32>,
    /// v3: `media_source` + `media_id` were both sent.
    identified: bool,
}

/// The body read as MoviePilot reads it, or its answer to a body it refuses.
fn asked(state: &State, req: &Req) -> Result<Asked, Early> {
    let dialect = state.opts.dialect;
    let body = json_object(dialect, req)?;
    let type_name = body.get("type").and_then(Value::as_str).unwrap_or("");
    let kind = match (type_name, dialect) {
        ("电影", _) => MediaKind::Movie,
        ("电视剧", _) => MediaKind::Tv,
        ("movie", Dialect::V3) => MediaKind::Movie,
        ("tv", Dialect::V3) => MediaKind::Tv,
        // `MediaType(...)` raises: v2.5.6 answers an unhandled 500.
        _ => {
            return Err(early(text_resp(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal Server Error",
            )));
        }
    };
    let tmdb_id = body.get("tmdb_id").and_then(super::lenient_u64);
    let season = body
        .get("season")
        .and_then(Value::as_u64)
        .and_then(|s| u32::try_from(s).ok());
    let identified = body.get("media_source").and_then(Value::as_str) == Some("themoviedb")
        && body.get("media_id").is_some_and(|v| !v.is_null());
    let media = tmdb_id.and_then(|id| {
        state
            .data()
            .media
            .iter()
            .find(|m| m.tmdb_id == id && m.kind == kind)
            .cloned()
    });
    Ok(Asked {
        media,
        kind,
        season,
        identified,
    })
}

/// `POST /api/v1/mediaserver/notexists`.
pub(super) fn not_exists(state: &State, req: &Req) -> Resp {
    let dialect = state.opts.dialect;
    let server = state.data().library.server;
    if server == MediaServer::Missing {
        return not_found(dialect);
    }
    let asked = match asked(state, req) {
        Ok(a) => a,
        Err(resp) => return *resp,
    };
    let held = match server {
        MediaServer::None => BTreeMap::new(),
        _ => held(state, &asked),
    };
    let Some(media) = asked.media.as_ref() else {
        return ok_payload(dialect, json!([]));
    };
    if asked.kind == MediaKind::Movie {
        let missing = if held.is_empty() {
            json!([{"season": null, "episodes": [], "total_episode": 0, "start_episode": 0}])
        } else {
            json!([])
        };
        return ok_payload(dialect, missing);
    }
    if dialect == Dialect::V3 && !asked.identified {
        // "电视剧缺集检查需要有效的 media_source 和 media_id": v3 answers as if complete.
        return ok_payload(dialect, json!([]));
    }
    let rows: Vec<Value> = media
        .seasons
        .iter()
        .filter(|(n, _)| asked.season.is_none_or(|s| s == *n))
        .filter_map(|(n, total)| {
            let have = held.get(n).cloned().unwrap_or_default();
            // A set difference: MoviePilot's order is no order; the simulator answers backwards.
            let missing: Vec<u32> = (1..=*total).rev().filter(|e| !have.contains(e)).collect();
            let start = missing.iter().min().copied()?;
            let episodes = if have.is_empty() { Vec::new() } else { missing };
            Some(
                json!({"season": n, "episodes": episodes, "total_episode": total,
                        "start_episode": start}),
            )
        })
        .collect();
    ok_payload(dialect, Value::Array(rows))
}

/// `POST /api/v1/mediaserver/exists_remote`.
pub(super) fn exists_remote(state: &State, req: &Req) -> Resp {
    let dialect = state.opts.dialect;
    let server = state.data().library.server;
    if server == MediaServer::Missing {
        return not_found(dialect);
    }
    let asked = match asked(state, req) {
        Ok(a) => a,
        Err(resp) => return *resp,
    };
    let held = match server {
        MediaServer::None => BTreeMap::new(),
        _ => held(state, &asked),
    };
    let seasons: serde_json::Map<String, Value> = held
        .iter()
        .filter(|(n, _)| **n > 0 && asked.season.is_none_or(|s| s == **n))
        .map(|(n, eps)| (n.to_string(), json!(eps)))
        .collect();
    match (dialect, seasons.is_empty(), asked.season) {
        (Dialect::V2, true, _) => ok_payload(dialect, json!([])),
        (Dialect::V3, true, Some(s)) => ok_payload(dialect, json!({ s.to_string(): [] })),
        _ => ok_payload(dialect, Value::Object(seasons)),
    }
}

/// What the library holds of the asked media (empty for media the catalogue does not know).
fn held(state: &State, asked: &Asked) -> BTreeMap<u32, BTreeSet<u32>> {
    let Some(media) = &asked.media else {
        return BTreeMap::new();
    };
    state
        .data()
        .library
        .held
        .get(&media.tmdb_id)
        .cloned()
        .unwrap_or_default()
}
