//! oncebot's view of MoviePilot's data, and the lenient wire shapes it is read from.
//!
//! The public types hold only what the bot shows or decides on. In particular a [`Download`]
//! never carries the torrent hash, site or cookies that MoviePilot's own objects include, so
//! nothing downstream can leak them into a reply or a log line.
//!
//! The wire shapes accept both dialects: v2 answers `source`, `tmdbid` and bare objects; v3
//! answers `media_source` + `media_id` and wraps everything in `{success, message, data}` (the
//! unwrapping is `client`'s job). Numbers that MoviePilot sometimes sends as strings are read
//! either way.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// Which MoviePilot API oncebot speaks; read from the server at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// v1.9 to v2.x: `tmdb:<id>` media ids, bare JSON bodies, GET for the search trigger.
    V2,
    /// v3.x: `media_source` + `media_id`, `{success, message, data}` everywhere, POST triggers.
    V3,
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dialect::V2 => "v2",
            Dialect::V3 => "v3",
        })
    }
}

/// Movie or TV series. On the wire MoviePilot uses its Chinese enum values (`MediaType`);
/// `movie`/`tv` (accepted by late v2 and v3) are read too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MediaKind {
    #[serde(rename = "电影", alias = "movie")]
    Movie,
    #[serde(rename = "电视剧", alias = "tv")]
    Tv,
}

impl MediaKind {
    /// The value MoviePilot expects in `type` and `type_name`.
    pub fn wire_name(self) -> &'static str {
        match self {
            MediaKind::Movie => "电影",
            MediaKind::Tv => "电视剧",
        }
    }

    /// Reads a `type` value; anything else (`未知`, a person) is `None`.
    pub fn from_wire(value: &str) -> Option<MediaKind> {
        match value.trim() {
            "电影" => Some(MediaKind::Movie),
            "电视剧" => Some(MediaKind::Tv),
            v if v.eq_ignore_ascii_case("movie") => Some(MediaKind::Movie),
            v if v.eq_ignore_ascii_case("tv") => Some(MediaKind::Tv),
            _ => None,
        }
    }
}

/// A film or series as MoviePilot recognised it (search results, detail).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MediaItem {
    pub title: String,
    pub year: Option<String>,
    pub kind: MediaKind,
    /// `None` for results that only another source (Douban, Bangumi) knows; those cannot be
    /// subscribed by TMDB id.
    pub tmdb_id: Option<u64>,
    /// Season numbers MoviePilot knows, ascending; empty for movies.
    pub season_numbers: Vec<u32>,
    pub overview: Option<String>,
    /// The poster's URL as oncebot sends it ([`poster_url`]); `None` without an http(s) one.
    #[serde(default)]
    pub poster: Option<String>,
}

/// One MoviePilot subscription.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subscription {
    pub id: u64,
    pub name: String,
    pub year: Option<String>,
    pub kind: Option<MediaKind>,
    pub tmdb_id: Option<u64>,
    pub season: Option<u32>,
    /// `N` new, `R` running, `P` pending, `S` paused.
    pub state: Option<String>,
    /// Episodes still missing.
    pub lack_episode: Option<i64>,
    /// The MoviePilot user who owns it (`None` when the row names nobody).
    #[serde(default)]
    pub username: Option<String>,
    /// A best-version subscription (洗版: `best_version` 1), which keeps upgrading.
    #[serde(default)]
    pub best_version: bool,
    /// Its poster ([`poster_url`] of the row's `poster`, which MoviePilot stores as w500).
    #[serde(default)]
    pub poster: Option<String>,
    /// The episodes MoviePilot downloaded for it so far (its `note`), in order.
    #[serde(default)]
    pub downloaded: Vec<u32>,
}

/// One torrent MoviePilot's downloader is working on, reduced to what a reply may show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Download {
    /// The recognised media name when MoviePilot has one (the row's `name`, else its
    /// `media.title`), else the torrent's title.
    pub title: String,
    /// The torrent's own title when `title` is the media's: what tells apart several torrents
    /// of one series (the same name and season, other episodes or releases).
    pub torrent: Option<String>,
    /// Percent, 0 to 100.
    pub progress: Option<f64>,
    pub state: Option<String>,
    /// e.g. `S01 E03`.
    pub season_episode: Option<String>,
}

/// What `create_subscription` asks MoviePilot for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewSubscription {
    pub name: String,
    pub year: Option<String>,
    pub kind: MediaKind,
    pub tmdb_id: u64,
    /// For TV; MoviePilot assumes season 1 when it is missing. Ignored for movies.
    pub season: Option<u32>,
    /// Sent as `best_version: 1` (洗版). A plain one sends nothing: MoviePilot reads a falsy
    /// value as "the admin's default", so 0 would not force a plain subscription either.
    pub best: bool,
}

// ----- wire shapes -----

/// `MediaInfo.to_dict()` (v2) or v3's `MediaInfo`, as far as oncebot reads it.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireMedia {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    year: Option<String>,
    #[serde(default, deserialize_with = "lenient_u64")]
    tmdb_id: Option<u64>,
    /// v2 `source`, v3 `media_source`.
    #[serde(default, alias = "media_source")]
    source: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    media_id: Option<String>,
    #[serde(default)]
    overview: Option<String>,
    #[serde(default)]
    poster_path: Option<String>,
    /// `{ "<season>": [episodes] }`: only the keys are read, so the episode lists are skipped
    /// rather than built (a long series' lists were most of a search answer's parsing).
    #[serde(default)]
    seasons: Option<std::collections::BTreeMap<String, serde::de::IgnoredAny>>,
    #[serde(default)]
    season_info: Option<Vec<WireSeasonInfo>>,
    #[serde(default, deserialize_with = "lenient_u64")]
    number_of_seasons: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct WireSeasonInfo {
    #[serde(default, deserialize_with = "lenient_u64")]
    season_number: Option<u64>,
}

impl WireMedia {
    /// `None` for the empty object MoviePilot answers when it found nothing, and for results
    /// that are neither a movie nor a series.
    pub(crate) fn into_item(self) -> Option<MediaItem> {
        let kind = MediaKind::from_wire(self.kind.as_deref()?)?;
        let title = self.title.filter(|t| !t.trim().is_empty())?;
        let tmdb_id = self.tmdb_id.or_else(|| {
            let themoviedb = matches!(self.source.as_deref(), Some("themoviedb" | "tmdb"));
            themoviedb
                .then(|| self.media_id.as_deref()?.trim().parse().ok())
                .flatten()
        });
        let mut seasons = BTreeSet::new();
        if kind == MediaKind::Tv {
            for key in self.seasons.iter().flat_map(|m| m.keys()) {
                if let Ok(n) = key.trim().parse::<u32>() {
                    seasons.insert(n);
                }
            }
            for info in self.season_info.iter().flatten() {
                if let Some(n) = info.season_number.and_then(|n| u32::try_from(n).ok()) {
                    seasons.insert(n);
                }
            }
            if seasons.is_empty() {
                let n = self.number_of_seasons.unwrap_or(0).min(200) as u32;
                seasons.extend(1..=n);
            }
            // Season 0 holds specials; it cannot be subscribed like a season.
            seasons.remove(&0);
        }
        Some(MediaItem {
            title,
            year: self.year.filter(|y| !y.is_empty()),
            kind,
            tmdb_id,
            season_numbers: seasons.into_iter().collect(),
            overview: self.overview.filter(|o| !o.is_empty()),
            poster: self.poster_path.as_deref().and_then(poster_url),
        })
    }
}

/// TMDB's image host, for a bare path (`/abc.jpg`) where MoviePilot usually gives a full URL.
const TMDB_W500: &str = "https://image.tmdb.org/t/p/w500";

/// A poster as oncebot sends it, from MoviePilot's `poster_path` (already a full URL: TMDB's
/// `.../t/p/original/<file>`, Douban's or Bangumi's), or from a media dict's. TMDB's `original`
/// becomes `w500`, as MoviePilot's own messages do (`get_poster_image`): an original can pass
/// Telegram's 5 MB limit for a photo by URL. A bare TMDB file path (`/abc.jpg`) gets TMDB's
/// host; anything else that is not http(s) (a local file MoviePilot keeps) is no poster.
pub fn poster_url(path: &str) -> Option<String> {
    let path = path.trim();
    if let Some(file) = path.strip_prefix('/') {
        // TMDB's file path is one segment; a longer one is a local file (`/config/...`).
        return (!file.is_empty() && !file.contains('/')).then(|| format!("{TMDB_W500}{path}"));
    }
    if !(path.starts_with("https://") || path.starts_with("http://")) {
        return None;
    }
    Some(path.replacen("/t/p/original/", "/t/p/w500/", 1))
}

/// `schemas.Subscribe`: v2 has `tmdbid`, v3 identifies media by `media_source` + `media_id`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireSubscribe {
    #[serde(default, deserialize_with = "lenient_u64")]
    pub(crate) id: Option<u64>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    year: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default, deserialize_with = "lenient_u64")]
    tmdbid: Option<u64>,
    #[serde(default)]
    media_source: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    media_id: Option<String>,
    #[serde(default, deserialize_with = "lenient_u64")]
    season: Option<u64>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default, deserialize_with = "lenient_i64")]
    lack_episode: Option<i64>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default, deserialize_with = "lenient_flag")]
    best_version: bool,
    #[serde(default)]
    poster: Option<String>,
    /// The episodes downloaded so far, as MoviePilot keeps them (a JSON list, or its text).
    #[serde(default)]
    note: Option<serde_json::Value>,
}

/// A whole number MoviePilot wrote as a number or as its text (`"42"`); `None` otherwise.
pub(crate) fn wire_u64(value: Option<&serde_json::Value>) -> Option<u64> {
    match value? {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The episode numbers in a subscription's `note` (a list of numbers, or that list as text);
/// anything else is none.
fn note_episodes(note: Option<&serde_json::Value>) -> Vec<u32> {
    use serde_json::Value;
    let parsed;
    let list = match note {
        Some(Value::Array(list)) => list,
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(list)) => {
                parsed = list;
                &parsed
            }
            _ => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    let mut episodes: Vec<u32> = list
        .iter()
        .filter_map(|v| wire_u64(Some(v)).and_then(|n| u32::try_from(n).ok()))
        .collect();
    episodes.sort_unstable();
    episodes.dedup();
    episodes
}

impl WireSubscribe {
    /// `None` for MoviePilot's "not found": a Subscribe whose every field is null.
    pub(crate) fn into_subscription(self) -> Option<Subscription> {
        let id = self.id?;
        let tmdb_id = self.tmdbid.or_else(|| {
            let themoviedb = matches!(self.media_source.as_deref(), Some("themoviedb" | "tmdb"));
            themoviedb
                .then(|| self.media_id.as_deref()?.trim().parse().ok())
                .flatten()
        });
        Some(Subscription {
            id,
            name: self.name.unwrap_or_default(),
            year: self.year.filter(|y| !y.is_empty()),
            kind: self.kind.as_deref().and_then(MediaKind::from_wire),
            tmdb_id,
            season: self
                .season
                .filter(|s| *s > 0)
                .and_then(|s| u32::try_from(s).ok()),
            state: self.state,
            lack_episode: self.lack_episode,
            username: self.username.filter(|u| !u.trim().is_empty()),
            best_version: self.best_version,
            poster: self.poster.as_deref().and_then(poster_url),
            downloaded: note_episodes(self.note.as_ref()),
        })
    }
}

/// `DownloadingTorrent` (v2) / `DownloaderTorrent` (v3). The hash and everything else are
/// deliberately not read.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireDownload {
    /// The torrent's title, as the downloader names it.
    #[serde(default)]
    title: Option<String>,
    /// The media MoviePilot recognised in it.
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    media: Option<WireDownloadMedia>,
    #[serde(default, deserialize_with = "lenient_string")]
    year: Option<String>,
    #[serde(default)]
    season_episode: Option<String>,
    #[serde(default, deserialize_with = "lenient_f64")]
    progress: Option<f64>,
    #[serde(default)]
    state: Option<String>,
}

/// `DownloadingTorrent.media`: the recognised media, of which only the title is read.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireDownloadMedia {
    #[serde(default)]
    title: Option<String>,
}

impl WireDownload {
    pub(crate) fn into_download(self) -> Download {
        let nonblank = |t: Option<String>| t.filter(|t| !t.trim().is_empty());
        let name = nonblank(self.name).or_else(|| nonblank(self.media.and_then(|m| m.title)));
        let torrent = nonblank(self.title);
        let (title, torrent) = match (name, self.year.filter(|y| !y.is_empty())) {
            (Some(name), year) => {
                let torrent = torrent.filter(|t| t.trim() != name.trim());
                match year {
                    Some(year) => (format!("{name} ({year})"), torrent),
                    None => (name, torrent),
                }
            }
            (None, _) => (torrent.unwrap_or_default(), None),
        };
        Download {
            title,
            torrent,
            progress: self.progress,
            state: self.state,
            season_episode: self.season_episode.filter(|s| !s.is_empty()),
        }
    }
}

/// A MoviePilot user as oncebot's mapping needs it (`GET /api/v1/user/`, `schemas.User`): never
/// their email, avatar or any other setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpUser {
    pub name: String,
    /// `is_active`; absent means MoviePilot's default (`True`), `null` an inactive user (MoviePilot
    /// refuses them as `用户未激活`).
    pub is_active: bool,
    pub is_superuser: bool,
    /// `permissions`, read as MoviePilot's web UI reads them ([`MpPermissions::read`]).
    pub permissions: MpPermissions,
    /// `settings.telegram_userid`, the Telegram id MoviePilot itself maps to this user, read as
    /// MoviePilot compares it (`UserOper.get_name`: the setting equal to `str(id)`): a text that
    /// is exactly a positive id's decimal form. Missing, empty or anything else: `None`.
    pub telegram_userid: Option<i64>,
}

/// A MoviePilot user's `permissions` (a JSON object on the user's row, v2.5.6 and v2.14.0
/// `app/db/models/user.py`: `Column(JSON, default=dict)`), as MoviePilot's own web UI reads
/// them: MoviePilot-Frontend `src/utils/permission.ts` merges `DEFAULT_PERMISSIONS`
/// (`discovery`, `search`, `subscribe` on, `manage` off) under what the row holds
/// (`normalizeUserPermissions`: `permissions.subscribe ?? DEFAULT_PERMISSIONS.subscribe`), and a
/// permission is on only when it is exactly `true` (`hasPermission`: `=== true`). So `{}`, a
/// missing or `null` field, or a missing or `null` key take the defaults: rows an older web UI,
/// the API or MoviePilot's first start wrote hold `{}`; v2.5.6's migration `3df653756eec_2_1_6`
/// wrote all four keys for plain users. The newest line's schema (`app/schemas/user.py`:
/// `UserPermissions`, a `TypedDict` with `total=False`) keeps the same keys, any of them left
/// out, plus `admin` and `features` (per-page switches), which oncebot does not read. The
/// backends of v2.5.6 and v2.14.0 enforce none of it (only the web UI reads it); oncebot does
/// ([`crate::users::MoviePilotRights`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpPermissions {
    pub discovery: bool,
    pub search: bool,
    pub subscribe: bool,
    pub manage: bool,
}

impl MpPermissions {
    /// MoviePilot's defaults (`DEFAULT_PERMISSIONS`), for every key a row leaves out.
    pub const DEFAULT: MpPermissions = MpPermissions {
        discovery: true,
        search: true,
        subscribe: true,
        manage: false,
    };

    /// `permissions` as the web UI reads it: each key missing or `null` takes its default, any
    /// other value is on only when it is `true`; a field that is missing, `null` or no object
    /// gives the defaults.
    pub fn read(value: Option<&serde_json::Value>) -> MpPermissions {
        let object = value.and_then(serde_json::Value::as_object);
        let key = |name: &str, default: bool| match object.and_then(|o| o.get(name)) {
            None | Some(serde_json::Value::Null) => default,
            Some(v) => *v == serde_json::Value::Bool(true),
        };
        let d = Self::DEFAULT;
        MpPermissions {
            discovery: key("discovery", d.discovery),
            search: key("search", d.search),
            subscribe: key("subscribe", d.subscribe),
            manage: key("manage", d.manage),
        }
    }
}

/// One row of `GET /api/v1/user/`, read leniently: a row without a name is skipped, any other
/// field may be missing or odd.
#[derive(Debug, Deserialize)]
pub(crate) struct WireUser {
    name: String,
    #[serde(default = "wire_true")]
    is_active: Option<bool>,
    #[serde(default)]
    is_superuser: Option<bool>,
    #[serde(default)]
    permissions: Option<serde_json::Value>,
    #[serde(default)]
    settings: Option<serde_json::Value>,
}

fn wire_true() -> Option<bool> {
    Some(true)
}

impl WireUser {
    pub(crate) fn into_user(self) -> MpUser {
        let telegram_userid = self
            .settings
            .as_ref()
            .and_then(|s| s.get("telegram_userid"))
            .and_then(serde_json::Value::as_str)
            .and_then(telegram_id_as_moviepilot_matches);
        MpUser {
            name: self.name,
            is_active: self.is_active == Some(true),
            is_superuser: self.is_superuser == Some(true),
            permissions: MpPermissions::read(self.permissions.as_ref()),
            telegram_userid,
        }
    }
}

/// `text` as the Telegram id MoviePilot would match it to: `str(id) == text`, so no blanks, sign
/// or leading zeros; Telegram user ids are positive.
fn telegram_id_as_moviepilot_matches(text: &str) -> Option<i64> {
    let id: i64 = text.parse().ok()?;
    (id > 0 && id.to_string() == text).then_some(id)
}

/// `schemas.Response`: `{success, message, data}`, with `data` left unread until `success`
/// says it is one (a refusal's `data` is `{}` in v2.5.6, `null` in v3).
#[derive(Debug, Deserialize)]
pub(crate) struct EnvelopeHead<'a> {
    pub(crate) success: bool,
    #[serde(default)]
    pub(crate) message: Option<String>,
    #[serde(default, borrow)]
    pub(crate) data: Option<&'a serde_json::value::RawValue>,
}

/// `data` of a create answer: `{"id": 12}` or `{"id": null}`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct CreatedId {
    #[serde(default, deserialize_with = "lenient_u64")]
    pub(crate) id: Option<u64>,
}

/// The login answer (`schemas.Token`): the token, and whether its user is a superuser.
#[derive(Deserialize)]
pub(crate) struct WireToken {
    pub(crate) access_token: String,
    /// Whether the user who logged in is a superuser (`Token.super_user`).
    #[serde(default)]
    pub(crate) super_user: Option<bool>,
}

// ----- lenient scalars -----

/// One JSON value as a lenient field reads it.
enum Scalar {
    Int(i64),
    Uint(u64),
    Float(f64),
    Text(String),
    Bool(bool),
}

/// Reads a [`Scalar`] straight off the parser: no `Value` in between (a row has several
/// lenient fields, and every `/subscriptions` parses each row). `null` is `None`; an object
/// or a list is skipped and treated as absent rather than failing the whole row.
struct ScalarVisitor;

impl<'de> serde::de::Visitor<'de> for ScalarVisitor {
    type Value = Option<Scalar>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Self::Value, E> {
        Ok(Some(Scalar::Bool(b)))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Self::Value, E> {
        Ok(Some(Scalar::Int(n)))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Self::Value, E> {
        Ok(Some(match i64::try_from(n) {
            Ok(n) => Scalar::Int(n),
            Err(_) => Scalar::Uint(n),
        }))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Self::Value, E> {
        Ok(Some(Scalar::Float(f)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Some(Scalar::Text(s.to_owned())))
    }
    fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
        Ok(Some(Scalar::Text(s)))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(None)
    }
}

fn scalar<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Scalar>, D::Error> {
    d.deserialize_any(ScalarVisitor)
}

fn lenient_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match scalar(d)? {
        Some(Scalar::Int(n)) => u64::try_from(n).ok(),
        Some(Scalar::Uint(n)) => Some(n),
        Some(Scalar::Float(f)) if f >= 0.0 && f.fract() == 0.0 && f < 1e18 => Some(f as u64),
        Some(Scalar::Text(s)) => s.trim().parse().ok(),
        _ => None,
    })
}

/// `1`, `true` or `"1"` (MoviePilot's Integer column as each version writes it); anything
/// else, `null` included, is false.
fn lenient_flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(match scalar(d)? {
        Some(Scalar::Bool(b)) => b,
        Some(Scalar::Int(n)) => n != 0,
        Some(Scalar::Uint(n)) => n != 0,
        Some(Scalar::Float(f)) => f != 0.0,
        Some(Scalar::Text(s)) => matches!(s.trim(), "1" | "true"),
        None => false,
    })
}

fn lenient_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(match scalar(d)? {
        Some(Scalar::Int(n)) => Some(n),
        Some(Scalar::Uint(n)) => i64::try_from(n).ok(),
        Some(Scalar::Float(f)) if f.fract() == 0.0 && f.abs() < 1e18 => Some(f as i64),
        Some(Scalar::Text(s)) => s.trim().parse().ok(),
        _ => None,
    })
}

fn lenient_f64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(match scalar(d)? {
        Some(Scalar::Int(n)) => Some(n as f64),
        Some(Scalar::Uint(n)) => Some(n as f64),
        Some(Scalar::Float(f)) => Some(f),
        Some(Scalar::Text(s)) => s.trim().trim_end_matches('%').parse().ok(),
        _ => None,
    })
}

fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match scalar(d)? {
        Some(Scalar::Int(n)) => Some(n.to_string()),
        Some(Scalar::Uint(n)) => Some(n.to_string()),
        Some(Scalar::Float(f)) => Some(f.to_string()),
        Some(Scalar::Text(s)) => Some(s),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body a real v2.5.6 answered, as the simulator's template (`tests/fixtures/moviepilot-sim/`).
    fn template(file: &str) -> String {
        crate::assets::read(&format!("tests/fixtures/moviepilot-sim/{file}"))
    }

    #[test]
    fn lenient_fields_take_numbers_as_text_and_skip_what_is_no_scalar() {
        let row = |json: &str| serde_json::from_str::<WireSubscribe>(json).unwrap();
        let r = row(r#"{"id":"12","tmdbid":7.0,"year":2023,"season":{"a":[1]},
            "lack_episode":-3,"best_version":"1","name":"A"}"#);
        assert_eq!(
            (r.id, r.tmdbid, r.year.as_deref()),
            (Some(12), Some(7), Some("2023"))
        );
        assert_eq!(
            (r.season, r.lack_episode, r.best_version),
            (None, Some(-3), true)
        );
        let r = row(r#"{"id":null,"tmdbid":[1],"year":null,"lack_episode":"x",
            "best_version":0,"season":18446744073709551615}"#);
        assert_eq!(
            (r.id, r.tmdbid, r.year, r.lack_episode),
            (None, None, None, None)
        );
        assert_eq!((r.best_version, r.season), (false, Some(u64::MAX)));
        assert!(row(r#"{"best_version":true}"#).best_version);
        assert!(!row(r#"{"best_version":null}"#).best_version);
        assert!(row(r#"{"best_version":1}"#).best_version);
    }

    #[test]
    fn a_poster_is_tmdbs_w500_and_only_ever_http() {
        assert_eq!(
            poster_url("https://image.tmdb.org/t/p/original/abc.jpg").as_deref(),
            Some("https://image.tmdb.org/t/p/w500/abc.jpg")
        );
        assert_eq!(
            poster_url("/abc.jpg").as_deref(),
            Some("https://image.tmdb.org/t/p/w500/abc.jpg")
        );
        let douban = "https://img9.doubanio.com/view/photo/m_ratio_poster/public/p1.jpg";
        assert_eq!(poster_url(douban).as_deref(), Some(douban));
        assert_eq!(poster_url("/config/temp/p.jpg"), None);
        assert_eq!(poster_url("file:///tmp/p.jpg"), None);
        assert_eq!(poster_url("//cdn.example/p.jpg"), None);
        assert_eq!(poster_url(""), None);
    }

    #[test]
    fn the_all_null_subscribe_means_not_found() {
        let wire: WireSubscribe = serde_json::from_str(&template("subscribe_empty.json")).unwrap();
        assert_eq!(wire.into_subscription(), None);
    }

    #[test]
    fn a_real_v2_subscribe_row_is_read() {
        let wire: WireSubscribe = serde_json::from_str(&template("subscribe_row.json")).unwrap();
        let sub = wire.into_subscription().unwrap();
        assert_eq!(sub.id, 1);
        assert_eq!(sub.name, "三体");
        assert_eq!(sub.year.as_deref(), Some("2023"));
        assert_eq!(sub.kind, Some(MediaKind::Tv));
        assert_eq!(sub.tmdb_id, Some(108545));
        assert_eq!(sub.season, Some(1));
        assert_eq!(sub.state.as_deref(), Some("N"));
        assert_eq!(sub.lack_episode, Some(30));
    }

    #[test]
    fn a_v3_subscribe_row_gives_the_tmdb_id_from_media_id() {
        let wire: WireSubscribe = serde_json::from_str(
            r#"{"id":4,"name":"Dune","type":"电影","media_source":"themoviedb","media_id":"438631","season":null}"#,
        )
        .unwrap();
        let sub = wire.into_subscription().unwrap();
        assert_eq!(sub.tmdb_id, Some(438631));
        assert_eq!(sub.season, None);
        assert_eq!(sub.kind, Some(MediaKind::Movie));
    }

    #[test]
    fn the_empty_media_info_means_not_found() {
        let wire: WireMedia = serde_json::from_str(&template("media_empty.json")).unwrap();
        assert_eq!(wire.into_item(), None);
    }

    #[test]
    fn seasons_come_from_the_season_map_without_specials() {
        let wire: WireMedia = serde_json::from_str(
            r#"{"type":"电视剧","title":"The Expanse","year":"2015","tmdb_id":63639,
                "seasons":{"0":[1],"1":[1,2],"2":[1]},"overview":""}"#,
        )
        .unwrap();
        let item = wire.into_item().unwrap();
        assert_eq!(item.season_numbers, vec![1, 2]);
        assert_eq!(item.overview, None);
    }

    #[test]
    fn media_kind_uses_moviepilots_chinese_values() {
        assert_eq!(serde_json::to_string(&MediaKind::Tv).unwrap(), "\"电视剧\"");
        assert_eq!(
            serde_json::from_str::<MediaKind>("\"movie\"").unwrap(),
            MediaKind::Movie
        );
        assert_eq!(MediaKind::from_wire("未知"), None);
    }

    #[test]
    fn a_download_never_shows_more_than_its_name() {
        let wire: WireDownload = serde_json::from_str(
            r#"{"downloader":"qb","hash":"abcdef","title":"Dune.2021.2160p.WEB-DL","name":"Dune",
                "year":"2021","season_episode":"","progress":42.5,"state":"downloading"}"#,
        )
        .unwrap();
        let d = wire.into_download();
        assert_eq!(d.title, "Dune (2021)");
        assert_eq!(d.torrent.as_deref(), Some("Dune.2021.2160p.WEB-DL"));
        assert_eq!(d.progress, Some(42.5));
        assert_eq!(d.season_episode, None);
        assert!(!format!("{d:?}").contains("abcdef"));
    }

    fn user(json: &str) -> MpUser {
        serde_json::from_str::<WireUser>(json).unwrap().into_user()
    }

    #[test]
    fn a_v2_5_6_user_row_gives_name_rights_and_telegram_id() {
        // `schemas.User` as `GET /api/v1/user/` answers it (app/schemas/user.py).
        let u = user(
            r#"{"id":2,"name":"bob","email":null,"is_active":true,"is_superuser":false,
                "avatar":null,"is_otp":false,"permissions":{},
                "settings":{"telegram_userid":"222222222","wechat_userid":"x"}}"#,
        );
        assert_eq!(
            u,
            MpUser {
                name: "bob".into(),
                is_active: true,
                is_superuser: false,
                permissions: MpPermissions::DEFAULT,
                telegram_userid: Some(222222222),
            }
        );
    }

    /// Issue 43: `permissions` as MoviePilot's web UI reads it, in the rows v2.5.6 and v2.14.0
    /// hold: `{}` (the first superuser, users an older UI or the API created), the four keys
    /// (the 2.1.6 migration, a newer UI's form), a key left out or `null`, a field missing or
    /// `null`, and values that are not `true`.
    #[test]
    fn permissions_are_read_as_moviepilots_web_ui_reads_them() {
        let read = |permissions: &str| {
            user(&format!(r#"{{"name":"x","permissions":{permissions}}}"#)).permissions
        };
        let p = |discovery, search, subscribe, manage| MpPermissions {
            discovery,
            search,
            subscribe,
            manage,
        };
        for defaults in [
            "{}",
            "null",
            "[]",
            r#""subscribe""#,
            r#"{"subscribe":null}"#,
        ] {
            assert_eq!(read(defaults), MpPermissions::DEFAULT, "{defaults}");
        }
        assert_eq!(user(r#"{"name":"x"}"#).permissions, MpPermissions::DEFAULT);
        assert_eq!(
            read(r#"{"discovery":true,"search":true,"subscribe":true,"manage":false}"#),
            MpPermissions::DEFAULT
        );
        assert_eq!(read(r#"{"subscribe":false}"#), p(true, true, false, false));
        assert_eq!(read(r#"{"manage":true}"#), p(true, true, true, true));
        // The newest schema's per-page switches change no key.
        assert_eq!(
            read(r#"{"subscribe":true,"features":{"subscribe.movie":false}}"#),
            MpPermissions::DEFAULT
        );
        assert_eq!(
            read(
                r#"{"discovery":false,"search":false,"subscribe":false,"manage":false,"admin":true}"#
            ),
            p(false, false, false, false)
        );
        // Only `true` is on (`=== true`): a number or a text is off.
        assert_eq!(
            read(r#"{"subscribe":1,"search":"true"}"#),
            p(true, false, false, false)
        );
    }

    #[test]
    fn a_telegram_userid_moviepilot_would_not_match_maps_nobody() {
        for settings in [
            r#"null"#,
            r#"{}"#,
            r#"{"telegram_userid":""}"#,
            r#"{"telegram_userid":null}"#,
            r#"{"telegram_userid":"abc"}"#,
            r#"{"telegram_userid":" 222"}"#,
            r#"{"telegram_userid":"0222"}"#,
            r#"{"telegram_userid":"-5"}"#,
            r#"{"telegram_userid":"0"}"#,
            // MoviePilot compares with str(id): a number in the settings never matches.
            r#"{"telegram_userid":222}"#,
            r#""not an object""#,
        ] {
            let u = user(&format!(r#"{{"name":"x","settings":{settings}}}"#));
            assert_eq!(u.telegram_userid, None, "{settings}");
        }
    }

    #[test]
    fn missing_rights_are_moviepilots_defaults_and_null_is_inactive() {
        let u = user(r#"{"name":"x"}"#);
        assert!(u.is_active && !u.is_superuser);
        let u = user(r#"{"name":"x","is_active":null,"is_superuser":true}"#);
        assert!(!u.is_active && u.is_superuser);
        assert!(serde_json::from_str::<WireUser>(r#"{"id":3}"#).is_err());
    }
}
