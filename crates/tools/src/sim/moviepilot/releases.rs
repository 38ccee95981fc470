//! The simulator's resource search, download add and download history, as MoviePilot answers
//! them over qBittorrent (`moviepilot-download-flow.md` §1-3).
//!
//! - **Search** (`GET /api/v1/search/media/{mediaid}`): `schemas.Response` in both dialects,
//!   a list of `Context` dicts (`meta_info`, `torrent_info` with the site's cookie,
//!   `media_info`), after a configurable delay (MoviePilot answers only after every site has).
//!   `mtype` must be `电影` or `电视剧` in v2 (anything else: 500), v3 also takes `movie`/`tv`.
//!   Refusals are HTTP 200 `success:false` with each version's texts and `data`: v2.5.6
//!   (`search.py` at the tag) `data: {}` and 未搜索到任何资源 / 未识别到TMDB媒体信息 / 未知的媒体ID;
//!   v3 (`search.py` @e5e25585) `data: null` and 未搜索到任何资源 (unknown media too: its chain
//!   finds nothing) / 媒体ID格式无效.
//! - **Add** (`POST /api/v1/download/`): after a configurable delay (3 to 27 s for real), the
//!   effect happens even if the caller has gone. A `.torrent` added again answers success with
//!   the same hash and writes a second history row (qBittorrent's name and size match); a
//!   magnet added again answers `success:false` (MoviePilot cannot read a magnet as a file).
//! - **History** (`GET /api/v1/history/download?page=&count=`): oldest first up to v2.14, as
//!   v2.5.6 and v2.14 have no ORDER BY; newest first in later v2 and v3.

use std::collections::HashMap;
use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{
    Data, Req, Resp, SimDownload, SimMedia, State, error_resp, json_resp, media_id, ok_payload,
    text_resp,
};
use oncebot::moviepilot::{Dialect, MediaKind, magnet_hash};

/// One release a simulated indexer site lists.
#[derive(Debug, Clone)]
pub struct SimRelease {
    pub tmdb_id: u64,
    /// `None` for a movie's releases.
    pub season: Option<u32>,
    pub site_id: u64,
    pub site_name: String,
    pub title: String,
    pub description: String,
    pub size: f64,
    pub seeders: i64,
    pub volume_factor: String,
    /// A site download URL or a `magnet:` link.
    pub enclosure: String,
    /// The site's login cookie, which MoviePilot puts in every result.
    pub site_cookie: String,
    pub site_downloader: String,
}

impl SimRelease {
    /// A `.torrent` release of a movie on `site`.
    pub fn movie(tmdb_id: u64, site: &str, title: &str, description: &str) -> SimRelease {
        let n = title.len() as u64 + site.len() as u64;
        SimRelease {
            tmdb_id,
            season: None,
            site_id: n % 7 + 1,
            site_name: site.into(),
            title: title.into(),
            description: description.into(),
            size: 4.2e9 + (n as f64) * 1.0e8,
            seeders: (n % 40) as i64 + 3,
            volume_factor: "免费".into(),
            enclosure: format!(
                "https://{}.example/download.php?id={}",
                site.to_lowercase(),
                n * 1009
            ),
            site_cookie: format!("uid=10{n}; pass=sim-cookie-{}", site.to_lowercase()),
            site_downloader: "qbittorrent".into(),
        }
    }
}

/// A hash of the catalogue's magnet release, for tests.
pub const SIM_MAGNET_HASH: &str = "c12fe1c06bba254a9dc9f519b335aa7c1367a88a";

/// The built-in releases: three of Dune (one a magnet), two of 三体 season 1.
pub fn builtin_releases() -> Vec<SimRelease> {
    vec![
        SimRelease {
            site_downloader: "qb-movies".into(),
            ..SimRelease::movie(
                438631,
                "PTSiteA",
                "Dune 2021 2160p UHD BluRay x265-SIM",
                "沙丘 | 4K 原盘压制",
            )
        },
        SimRelease {
            volume_factor: "50%".into(),
            ..SimRelease::movie(
                438631,
                "PTSiteB",
                "Dune 2021 1080p WEB-DL H264-SIM",
                "沙丘 | 中英字幕",
            )
        },
        SimRelease {
            enclosure: format!(
                "magnet:?xt=urn:btih:{}&dn=Dune.2021",
                SIM_MAGNET_HASH.to_uppercase()
            ),
            volume_factor: "普通".into(),
            ..SimRelease::movie(438631, "PTSiteC", "Dune.2021.720p.BluRay.x264", "")
        },
        SimRelease {
            season: Some(1),
            ..SimRelease::movie(
                108545,
                "PTSiteA",
                "Three Body S01 2023 2160p WEB-DL H265-SIM",
                "三体 第一季 全30集",
            )
        },
        SimRelease {
            season: Some(1),
            volume_factor: "2X免费".into(),
            ..SimRelease::movie(108545, "PTSiteB", "Three.Body.S01.1080p.WEB-DL", "三体 S01")
        },
    ]
}

/// What the release routes keep.
#[derive(Default)]
pub(super) struct ReleaseData {
    pub catalogue: Vec<SimRelease>,
    pub search_delay: Duration,
    pub add_delay: Duration,
    /// Every add body received, in order (for tests: `downloader`, `torrent_in`).
    pub adds: Vec<Value>,
    /// qBittorrent's torrents: hash -> name.
    pub torrents: HashMap<String, String>,
    /// The download history in insertion order; ids from 1.
    pub history: Vec<Value>,
    pub searches_run: u64,
}

/// Whether this version lists the history newest first (later v2 and v3).
fn newest_first(state: &State) -> bool {
    let opts = &state.opts;
    if opts.dialect == Dialect::V3 {
        return true;
    }
    let mut parts = opts
        .version
        .trim()
        .trim_start_matches(['v', 'V'])
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    let major = parts.next().flatten().unwrap_or(2);
    let minor = parts.next().flatten().unwrap_or(0);
    major > 2 || minor > 14
}

/// How long a route waits before it answers (and takes effect), if it does.
pub(super) fn delay(data: &Data, key: &str) -> Duration {
    match key {
        super::routes::RESOURCE_SEARCH => data.releases.search_delay,
        super::routes::DOWNLOAD_ADD => data.releases.add_delay,
        _ => Duration::ZERO,
    }
}

/// `GET /api/v1/search/media/{mediaid}`.
pub(super) fn search(state: &State, segment: &str, req: &Req) -> Resp {
    let dialect = state.opts.dialect;
    let refuse = |message: &str| search_refused(dialect, message);
    let Some(kind) = search_kind(dialect, req) else {
        // v2.5.6 calls MediaType(mtype) on it: anything else is an exception, a plain 500.
        return text_resp(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error");
    };
    let tmdb_id = match media_id(dialect, segment, req) {
        Ok(Some(id)) => id,
        Ok(None) if dialect == Dialect::V3 => return refuse("媒体ID格式无效"),
        Ok(None) => return refuse("未知的媒体ID"),
        Err(resp) => return *resp,
    };
    let season = match req.param("season").filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => match s.parse::<u32>() {
            Ok(n) => Some(n),
            Err(_) => return text_resp(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error"),
        },
    };
    let mut data = state.data();
    let Some(media) = data
        .media
        .iter()
        .find(|m| m.tmdb_id == tmdb_id && m.kind == kind)
        .cloned()
    else {
        return refuse(match dialect {
            Dialect::V2 => "未识别到TMDB媒体信息",
            Dialect::V3 => "未搜索到任何资源",
        });
    };
    data.releases.searches_run += 1;
    let found = found_releases(&data, dialect, &media, season);
    if found.is_empty() {
        return refuse("未搜索到任何资源");
    }
    json_resp(
        StatusCode::OK,
        &json!({"success": true, "message": null, "data": found}),
    )
}

/// A search MoviePilot answers with 200 and `success: false`.
fn search_refused(dialect: Dialect, message: &str) -> Resp {
    let data = match dialect {
        Dialect::V2 => json!({}),
        Dialect::V3 => Value::Null,
    };
    json_resp(
        StatusCode::OK,
        &json!({"success": false, "message": message, "data": data}),
    )
}

/// The search's `mtype`: the Chinese names, and in v3 the English ones too.
fn search_kind(dialect: Dialect, req: &Req) -> Option<MediaKind> {
    match (dialect, req.param("mtype")) {
        (_, Some("电影")) => Some(MediaKind::Movie),
        (_, Some("电视剧")) => Some(MediaKind::Tv),
        (Dialect::V3, Some(v)) if MediaKind::from_wire(v).is_some() => {
            Some(MediaKind::from_wire(v).unwrap_or(MediaKind::Movie))
        }
        _ => None,
    }
}

/// The catalogue's releases of `media` (of `season`, when given), each with its medium.
fn found_releases(
    data: &Data,
    dialect: Dialect,
    media: &SimMedia,
    season: Option<u32>,
) -> Vec<Value> {
    let mut media_info = super::media_json(Dialect::V2, media, data.poster_host.as_deref());
    if dialect == Dialect::V3 {
        super::to_v3_media(&mut media_info);
    }
    data.releases
        .catalogue
        .iter()
        .filter(|r| r.tmdb_id == media.tmdb_id && (season.is_none() || r.season == season))
        .map(|r| {
            json!({
                "meta_info": meta_info(r),
                "torrent_info": torrent_info(r),
                "media_info": media_info,
            })
        })
        .collect()
}

fn meta_info(r: &SimRelease) -> Value {
    json!({
        "isfile": false, "title": r.title, "org_string": r.title, "subtitle": r.description,
        "type": if r.season.is_some() { "电视剧" } else { "电影" },
        "name": r.title, "cn_name": null, "en_name": r.title, "year": null,
        "total_season": u8::from(r.season.is_some()), "begin_season": r.season,
        "end_season": null, "total_episode": 0, "begin_episode": null, "end_episode": null,
        "season_episode": r.season.map(|s| format!("S{s:02}")).unwrap_or_default(),
        "episode_list": [], "part": null, "resource_type": "BluRay",
        "resource_effect": null, "resource_pix": "2160p", "resource_team": "SIM",
        "customization": null, "video_encode": "x265", "audio_encode": null,
        "apply_words": [], "edition": "BluRay", "resource_term": "BluRay 2160p",
        "video_term": "x265", "audio_term": "", "release_group": "SIM", "episode": "",
        "season": r.season.map(|s| format!("S{s:02}")).unwrap_or_default(),
    })
}

/// `vars(TorrentInfo)` plus `volume_factor` and `freedate_diff`, site cookie included.
fn torrent_info(r: &SimRelease) -> Value {
    json!({
        "site": r.site_id, "site_name": r.site_name, "site_cookie": r.site_cookie,
        "site_ua": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0 Safari/537.36",
        "site_proxy": false, "site_order": r.site_id, "site_downloader": r.site_downloader,
        "title": r.title, "description": r.description, "imdbid": "tt1160419",
        "enclosure": r.enclosure,
        "page_url": format!("https://{}.example/details.php?id={}", r.site_name.to_lowercase(), r.site_id * 1009),
        "size": r.size, "seeders": r.seeders, "peers": 2, "grabs": 310,
        "pubdate": "2026-11-02 20:41:07", "date_elapsed": "3 周", "freedate": null,
        "uploadvolumefactor": 1.0,
        "downloadvolumefactor": if r.volume_factor.contains("免费") { 0.0 } else { 1.0 },
        "hit_and_run": false, "labels": [], "pri_order": 0, "category": "电影",
        "volume_factor": r.volume_factor, "freedate_diff": "",
    })
}

/// `POST /api/v1/download/`.
pub(super) fn add(state: &State, req: &Req, user: &str) -> Resp {
    let dialect = state.opts.dialect;
    let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
        return error_resp(
            dialect,
            StatusCode::UNPROCESSABLE_ENTITY,
            "body is not JSON",
        );
    };
    let (Some(media), Some(torrent)) = (body.get("media_in"), body.get("torrent_in")) else {
        return super::missing_param(dialect, "body", "media_in");
    };
    // `_media.type.value` is dereferenced: a missing or odd type is an exception.
    let kind = media.get("type").and_then(Value::as_str);
    if !matches!(kind, Some("电影" | "电视剧")) {
        return text_resp(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error");
    }
    let enclosure = text(torrent, "enclosure");
    if enclosure.is_empty() {
        return add_failed();
    }
    let mut data = state.data();
    data.releases.adds.push(body.clone());
    let (hash, magnet) = torrent_hash(&enclosure);
    let title = text(torrent, "title");
    if data.releases.torrents.contains_key(&hash) {
        if magnet {
            // 添加种子任务失败：无法读取种子文件 — and no history row.
            return add_failed();
        }
        // 下载任务已存在: success with the same hash, and a second history row.
    } else {
        data.releases.torrents.insert(hash.clone(), title.clone());
        data.downloads.push(SimDownload {
            hash: hash.clone(),
            title: title.clone(),
            name: text(media, "title"),
            year: text(media, "year"),
            season_episode: String::new(),
            progress: 0.0,
            state: "downloading".into(),
        });
    }
    let id = data.releases.history.len() as u64 + 1;
    let row = history_row(id, media, torrent, &hash, user);
    data.releases.history.push(row);
    json_resp(
        StatusCode::OK,
        &json!({"success": true, "message": null, "data": {"download_id": hash}}),
    )
}

/// An add MoviePilot answers with 200 and `success: false`.
fn add_failed() -> Resp {
    json_resp(
        StatusCode::OK,
        &json!({"success": false, "message": "任务添加失败", "data": {}}),
    )
}

/// A string field of a JSON object, empty when it is missing or not a string.
fn text(v: &Value, name: &str) -> String {
    v.get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A torrent's hash: a magnet's own, else the first 20 bytes of its URL's SHA-256; and whether
/// it was a magnet.
fn torrent_hash(enclosure: &str) -> (String, bool) {
    match magnet_hash(enclosure) {
        Some(h) => (h, true),
        None => {
            let digest = Sha256::digest(enclosure.as_bytes());
            (hex::encode(&digest[..20]), false)
        }
    }
}

/// The download history's row for an add, as `DownloadHistory` stores it.
fn history_row(id: u64, media: &Value, torrent: &Value, hash: &str, user: &str) -> Value {
    let kind = media.get("type").and_then(Value::as_str);
    let season = torrent
        .get("season")
        .and_then(Value::as_u64)
        .map(|s| format!("S{s:02}"));
    json!({
        "id": id, "path": "/downloads/电影", "type": kind, "title": text(media, "title"),
        "year": text(media, "year"), "tmdbid": media.get("tmdb_id").cloned().unwrap_or(Value::Null),
        "imdbid": null, "tvdbid": null, "doubanid": null, "seasons": season.unwrap_or_default(),
        "episodes": "", "image": null, "download_hash": hash, "torrent_name": text(torrent, "title"),
        "torrent_description": text(torrent, "description"),
        "torrent_site": text(torrent, "site_name"), "userid": null, "username": user,
        "channel": null, "date": super::local_time_now(),
        "note": {"source": "Manual"}, "media_category": "", "episode_group": null,
    })
}

/// `GET /api/v1/history/download?page=&count=`.
pub(super) fn history(state: &State, req: &Req) -> Resp {
    let dialect = state.opts.dialect;
    let (Ok(page), Ok(count)) = (req.number("page", 1), req.number("count", 30)) else {
        return super::bad_int(dialect, "query", "page");
    };
    let data = state.data();
    let mut rows: Vec<&Value> = data.releases.history.iter().collect();
    if newest_first(state) {
        rows.reverse();
    }
    let start = page.saturating_sub(1).saturating_mul(count);
    let page: Vec<Value> = rows.into_iter().skip(start).take(count).cloned().collect();
    ok_payload(dialect, Value::Array(page))
}

impl super::MoviePilotSim {
    /// Adds a release to the catalogue the resource search reads.
    pub fn add_release(&self, release: SimRelease) {
        self.state.data().releases.catalogue.push(release);
    }

    /// Adds many releases at once (a site that lists thousands).
    pub fn add_releases(&self, releases: impl IntoIterator<Item = SimRelease>) {
        self.state.data().releases.catalogue.extend(releases);
    }

    /// How long a resource search takes before it answers.
    pub fn set_search_delay(&self, delay: Duration) {
        self.state.data().releases.search_delay = delay;
    }

    /// How long an add takes before it answers (it takes effect then, even if the caller left).
    pub fn set_add_delay(&self, delay: Duration) {
        self.state.data().releases.add_delay = delay;
    }

    /// Resource searches that ran (refused ones, e.g. a bad `mtype`, do not count).
    pub fn resource_searches(&self) -> u64 {
        self.state.data().releases.searches_run
    }

    /// Every add body received, in order.
    pub fn download_adds(&self) -> Vec<Value> {
        self.state.data().releases.adds.clone()
    }

    /// The download history, in insertion order.
    pub fn download_history(&self) -> Vec<Value> {
        self.state.data().releases.history.clone()
    }

    /// Torrents in the simulated qBittorrent.
    pub fn torrents(&self) -> usize {
        self.state.data().releases.torrents.len()
    }

    /// Adds a history row as if someone had downloaded this release before (in the web UI).
    pub fn insert_history(&self, site: &str, title: &str, description: &str, hash: &str) {
        let mut data = self.state.data();
        let id = data.releases.history.len() as u64 + 1;
        data.releases.history.push(json!({
            "id": id, "torrent_site": site, "torrent_name": title,
            "torrent_description": description, "download_hash": hash,
            "note": {"source": "Manual"}, "date": "2026-01-01 08:00:00", "username": "admin",
        }));
    }
}
