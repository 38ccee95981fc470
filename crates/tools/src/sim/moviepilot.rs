//! A MoviePilot that answers like the real one, for tests, `demo` and `bench`.
//!
//! It speaks either dialect ([`SimOptions::dialect`]): v2 as a real v2.5.6 answered (bodies in
//! `moviepilot/*.json` are verbatim copies used as templates; bare lists and objects, FastAPI's
//! `{"detail": …}` errors, 403 for a bad JWT, 500 `text/plain` for `GET /subscribe/{missing}`),
//! or v3 (`{success, message, data}` everywhere, `media_source` + `media_id`, POST search
//! trigger (GET only at v3.0.0), 401 for a bad JWT, 404 for deleting a missing subscription,
//! `message` translated into the request's locale (`X-MoviePilot-Locale`, then
//! `Accept-Language`, else [`SimOptions::default_locale`]), 401 with `X-MFA-Required` for a
//! user with two-factor login).
//!
//! State: a media catalogue (built-in titles plus [`MoviePilotSim::add_media`]), subscriptions
//! with MoviePilot's real duplicate check (same TMDB id, and season only when the season is
//! non-zero, type ignored: a duplicate answers the existing id), the tokens it issued, counters
//! per route and queued faults per route.
//!
//! Routes are named `"<METHOD> <path template>"` with v2.5.6's parameter names, e.g.
//! `"POST /api/v1/subscribe/"` or `"DELETE /api/v1/subscribe/{subscribe_id}"` (see [`routes`]),
//! in both dialects. Counters count every request that reached a route, refused or not; a
//! queued [`Fault`] applies to the next request on its route that passed authentication.
//!
//! Deliberate simplifications: tokens are random opaque strings, not JWTs; the v3 subscription
//! row is the v2 row plus `media_source`/`media_id` (v3's exact row is unverified); v3's hidden
//! GET alias of the search trigger is not served, so a client that uses GET on v3 is caught.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use warp::Filter;

use oncebot::moviepilot::{Dialect, MediaKind};

mod follow;
mod library;
mod messages;
mod releases;
pub use follow::SimFiled;
pub use library::MediaServer;
pub use messages::{
    SimMessage, SimNotification, download_added_payload, notice_payload, send_webhook,
};
pub use releases::{SIM_MAGNET_HASH, SimRelease, builtin_releases};

/// A body template the simulator fills in: what a real v2.5.6 answered, kept in the top-level
/// `tests/fixtures/moviepilot-sim/` (its README says which request each came from) because the
/// service's tests read the same files.
macro_rules! template {
    ($file:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/moviepilot-sim/",
            $file
        ))
    };
}

const SUBSCRIBE_ROW: &str = template!("subscribe_row.json");
const SUBSCRIBE_EMPTY: &str = template!("subscribe_empty.json");
const MEDIA_EMPTY: &str = template!("media_empty.json");
const TOKEN: &str = template!("token.json");
const SERVARR_STATUS: &str = template!("servarr_status.json");

/// Route names for [`MoviePilotSim::calls`] and [`MoviePilotSim::fail_next`].
pub mod routes {
    pub const LOGIN: &str = "POST /api/v1/login/access-token";
    pub const GLOBAL: &str = "GET /api/v1/system/global";
    /// v2 only: the Sonarr emulation.
    pub const SERVARR_STATUS: &str = "GET /api/v3/system/status";
    pub const CURRENT_USER: &str = "GET /api/v1/user/current";
    /// Every user (superusers only: `list_users`, `get_current_active_superuser`).
    pub const USERS: &str = "GET /api/v1/user/";
    pub const MEDIA_SEARCH: &str = "GET /api/v1/media/search";
    pub const MEDIA_DETAIL: &str = "GET /api/v1/media/{mediaid}";
    pub const SUBSCRIBE_LIST: &str = "GET /api/v1/subscribe/";
    pub const SUBSCRIBE_LIST_TOKEN: &str = "GET /api/v1/subscribe/list";
    pub const SUBSCRIBE_CREATE: &str = "POST /api/v1/subscribe/";
    /// The update: the whole row it is sent, `username` included.
    pub const SUBSCRIBE_UPDATE: &str = "PUT /api/v1/subscribe/";
    /// The completed subscriptions of one kind (电影, 电视剧).
    pub const SUBSCRIBE_HISTORY: &str = "GET /api/v1/subscribe/history/{mtype}";
    /// "My subscriptions": the rows one user owns.
    pub const SUBSCRIBE_USER: &str = "GET /api/v1/subscribe/user/{username}";
    pub const SUBSCRIBE_BY_MEDIA: &str = "GET /api/v1/subscribe/media/{mediaid}";
    pub const SUBSCRIBE_GET: &str = "GET /api/v1/subscribe/{subscribe_id}";
    pub const SUBSCRIBE_DELETE: &str = "DELETE /api/v1/subscribe/{subscribe_id}";
    /// v2's search trigger.
    pub const SUBSCRIBE_SEARCH_V2: &str = "GET /api/v1/subscribe/search/{subscribe_id}";
    /// v3's search trigger.
    pub const SUBSCRIBE_SEARCH_V3: &str = "POST /api/v1/subscribe/search/{subscribe_id}";
    pub const DOWNLOADS: &str = "GET /api/v1/download/";
    /// A resource (torrent) search for one media.
    pub const RESOURCE_SEARCH: &str = "GET /api/v1/search/media/{mediaid}";
    /// Adding a download (`media_in`, `torrent_in`, `downloader`).
    pub const DOWNLOAD_ADD: &str = "POST /api/v1/download/";
    pub const DOWNLOAD_HISTORY: &str = "GET /api/v1/history/download";
    /// The message history (notifications sent, messages received).
    pub const MESSAGE_WEB: &str = "GET /api/v1/message/web";
    /// Starts a scheduler job and answers when it has run (v2.5.6 `system.py` L538-547).
    pub const RUN_SCHEDULER: &str = "GET /api/v1/system/runscheduler";
    /// The scheduler's jobs with their state (v2.5.6 `dashboard.py` L113-126).
    pub const SCHEDULE: &str = "GET /api/v1/dashboard/schedule";
    /// Restarts MoviePilot (v2.5.6 `system.py` L524-535).
    pub const RESTART: &str = "GET /api/v1/system/restart";
    /// The transfer history, a page (v2.5.6 `history.py` L42-71).
    pub const TRANSFER_HISTORY: &str = "GET /api/v1/history/transfer";
    /// Files again (v2.5.6 `transfer.py` L70-165).
    pub const TRANSFER_MANUAL: &str = "POST /api/v1/transfer/manual";
    /// The enabled media servers (v2.5.6 `mediaserver.py` L150-158).
    pub const MEDIASERVER_CLIENTS: &str = "GET /api/v1/mediaserver/clients";
    /// What the library lacks of a media (v2.5.6 `mediaserver.py` L93-120).
    pub const MEDIASERVER_NOTEXISTS: &str = "POST /api/v1/mediaserver/notexists";
    /// The episodes the library has of a media (v2.5.6 `mediaserver.py` L74-90).
    pub const MEDIASERVER_EXISTS_REMOTE: &str = "POST /api/v1/mediaserver/exists_remote";
}

/// How the simulated server behaves.
#[derive(Debug, Clone)]
pub struct SimOptions {
    pub dialect: Dialect,
    /// The one user that can log in.
    pub username: String,
    pub password: String,
    /// MoviePilot's `API_TOKEN`: `?token=` on `/subscribe/list`, `X-API-KEY`/`?apikey=` on the
    /// Servarr status route and, when the next flag allows, on every JWT route.
    pub api_token: String,
    /// Whether `X-API-KEY` opens the routes that otherwise need a login. False is v2.5.6 (401
    /// "Not authenticated"); true is late v2 and v3.
    pub api_key_accepted_on_jwt_routes: bool,
    /// Reported by `/api/v1/system/global` as `BACKEND_VERSION`, except for versions up to
    /// v2.5.x, which (like the real v2.5.6) answer their settings without that key; and by v2's
    /// `/api/v3/system/status`.
    pub version: String,
    /// v3: the locale of a request that names none (the real server's is `zh-CN`; an operator
    /// may run it in another).
    pub default_locale: String,
    /// The user has two-factor login on: v3 answers the right password 401 with
    /// `X-MFA-Required` (v2.5.6 as for a wrong password), since oncebot sends no code.
    pub two_factor: bool,
    /// The login user is a superuser (MoviePilot's first user, `admin`, is). False: the
    /// superuser-only routes answer it 400 "用户权限不足".
    pub superuser: bool,
}

impl SimOptions {
    /// MoviePilot v2.5.6 as it really answered: the API key does not open subscription routes.
    pub fn v2_5_6() -> Self {
        Self {
            dialect: Dialect::V2,
            username: "admin".into(),
            password: "password".into(),
            api_token: "sim-api-token-0123456789".into(),
            api_key_accepted_on_jwt_routes: false,
            version: "v2.5.6".into(),
            default_locale: "zh-CN".into(),
            two_factor: false,
            superuser: true,
        }
    }

    /// A late v2 (reports `BACKEND_VERSION`, accepts `X-API-KEY` everywhere).
    pub fn late_v2() -> Self {
        Self {
            api_key_accepted_on_jwt_routes: true,
            version: "v2.15.6".into(),
            ..Self::v2_5_6()
        }
    }

    /// MoviePilot v3.
    pub fn v3() -> Self {
        Self {
            dialect: Dialect::V3,
            api_key_accepted_on_jwt_routes: true,
            version: "v3.1.0".into(),
            ..Self::v2_5_6()
        }
    }
}

impl Default for SimOptions {
    fn default() -> Self {
        Self::v2_5_6()
    }
}

/// Something to do to the next authenticated request on a route instead of answering normally.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Answer this status and body (JSON if it parses as JSON, else `text/plain`); no effect.
    Status(u16, String),
    /// Wait this long, then take effect and answer. Longer than the client's timeout, this is
    /// "MoviePilot committed but the answer never arrived": the effect happens even if the
    /// client has gone.
    Delay(Duration),
    /// Close the connection without answering; no effect.
    Drop,
    /// Take effect, then close the connection without answering.
    CommitThenDrop,
}

/// A film or series the simulated TMDB knows.
#[derive(Debug, Clone)]
pub struct SimMedia {
    pub tmdb_id: u64,
    pub kind: MediaKind,
    pub title: String,
    pub original_title: String,
    pub year: String,
    pub overview: String,
    /// `(season number, episode count)`; empty for movies.
    pub seasons: Vec<(u32, u32)>,
}

impl SimMedia {
    pub fn movie(tmdb_id: u64, title: &str, year: &str) -> Self {
        Self {
            tmdb_id,
            kind: MediaKind::Movie,
            title: title.into(),
            original_title: title.into(),
            year: year.into(),
            overview: format!("{title} ({year}), a simulated film."),
            seasons: Vec::new(),
        }
    }

    pub fn tv(tmdb_id: u64, title: &str, year: &str, seasons: &[(u32, u32)]) -> Self {
        Self {
            tmdb_id,
            kind: MediaKind::Tv,
            title: title.into(),
            original_title: title.into(),
            year: year.into(),
            overview: format!("{title} ({year}), a simulated series."),
            seasons: seasons.to_vec(),
        }
    }
}

/// The built-in catalogue.
pub fn builtin_media() -> Vec<SimMedia> {
    vec![
        SimMedia {
            overview: "(offline placeholder overview)".into(),
            ..SimMedia::tv(108545, "三体", "2023", &[(1, 30)])
        },
        SimMedia::movie(438631, "Dune", "2021"),
        SimMedia::movie(693134, "Dune: Part Two", "2024"),
        SimMedia::tv(
            63639,
            "The Expanse",
            "2015",
            &[(1, 10), (2, 13), (3, 13), (4, 10), (5, 10), (6, 6)],
        ),
    ]
}

/// A torrent the simulated downloader is working on.
#[derive(Debug, Clone)]
pub struct SimDownload {
    pub hash: String,
    /// The torrent's title.
    pub title: String,
    /// The recognised media name.
    pub name: String,
    pub year: String,
    pub season_episode: String,
    /// Percent.
    pub progress: f64,
    pub state: String,
}

/// A subscription as the simulator stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimSubscription {
    pub id: u64,
    pub name: String,
    pub year: String,
    pub kind: MediaKind,
    pub tmdb_id: u64,
    /// `None` for movies.
    pub season: Option<u32>,
    pub total_episode: u32,
    pub state: String,
    pub username: String,
    /// Local time, `%Y-%m-%d %H:%M:%S` (UTC here).
    pub date: String,
    /// `best_version` (洗版), as the create's body set it.
    pub best_version: bool,
    /// Episodes still missing (`None`: all of `total_episode`), as MoviePilot's searches
    /// lower it ([`MoviePilotSim::set_subscription_progress`]).
    pub lack_episode: Option<u32>,
    /// The episodes downloaded for it (`note`).
    pub note: Vec<u32>,
}

/// A running simulated MoviePilot. Dropping it stops the server.
pub struct MoviePilotSim {
    state: Arc<State>,
    addr: SocketAddr,
    stop: CancellationToken,
    /// Stops the current listener (and its connections) alone, for a restart; a child of `stop`.
    listening: Arc<Mutex<CancellationToken>>,
}

impl Drop for MoviePilotSim {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

struct State {
    opts: SimOptions,
    data: Mutex<Data>,
}

/// A search as the simulator caches its answer: (v2?, needle, page, count).
type SearchKey = (bool, String, usize, usize);

#[derive(Default)]
struct Data {
    media: Vec<SimMedia>,
    subs: BTreeMap<u64, SimSubscription>,
    downloads: Vec<SimDownload>,
    tokens: HashSet<String>,
    /// The `API_TOKEN` in force: `SimOptions::api_token` until [`MoviePilotSim::rotate_api_token`].
    api_token: String,
    /// The user's password in force: `SimOptions::password` until [`MoviePilotSim::set_password`].
    password: String,
    /// `SimOptions::two_factor` until [`MoviePilotSim::set_two_factor`].
    two_factor: bool,
    /// v3's search trigger is GET only, as at v3.0.0 (from the version, or
    /// [`MoviePilotSim::set_get_search_trigger`]).
    get_search_trigger: bool,
    calls: HashMap<String, u64>,
    /// Every request's method and path as it arrived (still percent-encoded), in order: what a
    /// real MoviePilot's access log would show.
    paths: Vec<String>,
    /// The requests whose path is no route of MoviePilot's (answered 404).
    unrouted: Vec<String>,
    /// MoviePilot's Webhook plugin: where it posts each notification, during the request that
    /// makes it ([`MoviePilotSim::set_webhook_plugin`]).
    webhook_plugin: Option<String>,
    logins: u64,
    faults: HashMap<String, VecDeque<Fault>>,
    /// Routes whose requests wait before they run ([`MoviePilotSim::hold`]): closed to release.
    held: HashMap<String, Arc<tokio::sync::Semaphore>>,
    search_no_op: bool,
    searches: HashMap<u64, u64>,
    /// Search answers already rendered, by (v2?, needle, page, count), with the catalogue size
    /// they were rendered from (the catalogue only grows): building the real server's fat media
    /// bodies anew for every call was most of the simulator's CPU in the bench.
    search_answers: HashMap<SearchKey, (usize, Bytes)>,
    /// The resource search, the downloader and the download history.
    releases: releases::ReleaseData,
    /// The message table.
    messages: Vec<SimMessage>,
    /// The user table, in MoviePilot's order (by id): the login user first.
    users: Vec<SimUser>,
    /// Where media and subscription posters point ([`MoviePilotSim::set_poster_host`]); none:
    /// no poster, as the recorded offline answer has (`poster_path: null`).
    poster_host: Option<String>,
    /// The scheduler: the jobs it knows, which are running, and every run it made.
    scheduler: SchedulerData,
    /// What `GET /api/v1/system/restart` does, and the restarts it made.
    restart: RestartData,
    /// The transfer history, by record id, and the files in the library.
    transfers: TransferData,
    /// The media server and what its library holds.
    library: library::LibraryData,
    /// The subscription history (completed subscriptions).
    sub_history: follow::SubHistory,
}

#[derive(Debug, Default)]
struct TransferData {
    records: BTreeMap<u64, SimTransfer>,
    next_id: u64,
    /// Redos made: each deleted its record's destination and filed the source again.
    redos: u64,
    /// Destinations deleted by redos, in order.
    deleted: Vec<String>,
}

/// One transfer history record (`TransferHistory`).
#[derive(Debug, Clone, Default)]
struct SimTransfer {
    src: String,
    dest: String,
    title: String,
    /// The rest of the row, for a file filed from a download ([`follow::SimFiled`]).
    filed: Option<follow::SimFiled>,
}

/// What the simulated MoviePilot does when asked to restart.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RestartMode {
    /// Answers, then stops answering anything for `downtime` (every connection closed
    /// unanswered, logins forgotten), then answers again: a restart in Docker.
    #[default]
    Restarts,
    /// Answers `success: false` with this message and does nothing (v2.5.6 outside Docker:
    /// 当前运行环境不支持重启操作！).
    Refuses(String),
    /// Answers success and goes on answering: the restart never happens (#2495).
    Ignores,
}

#[derive(Debug)]
struct RestartData {
    mode: RestartMode,
    downtime: Duration,
    restarts: u64,
    /// While a restart is under way: from when to when nothing answers.
    down: Option<(tokio::time::Instant, tokio::time::Instant)>,
}

impl Default for RestartData {
    fn default() -> Self {
        Self {
            mode: RestartMode::Restarts,
            downtime: Duration::from_secs(3),
            restarts: 0,
            down: None,
        }
    }
}

/// MoviePilot's scheduler as `runscheduler` and `dashboard/schedule` see it.
#[derive(Debug, Default)]
struct SchedulerData {
    /// Runs started, by job id (a skipped or unknown start is no run).
    runs: HashMap<String, u64>,
    /// Starts skipped because the job was running already, by job id.
    skips: HashMap<String, u64>,
    running: HashSet<String>,
    /// How long a run takes; the answer comes when it ends (0: at once).
    run_time: Duration,
}

/// The scheduler jobs the simulated MoviePilot has: the built-in ones oncebot starts and the
/// AutoSignIn plugin's (`<plugin id>_<service id>`), as v2.5.6 names them (`app/scheduler.py`).
pub const SCHEDULER_JOBS: [&str; 6] = [
    "subscribe_search",
    "subscribe_refresh",
    "transfer",
    "mediaserver_sync",
    "cookiecloud",
    "AutoSignIn_AutoSignIn",
];

/// One row of MoviePilot's user table, as `schemas.User` shows it (v2.5.6 and v2.14.0
/// `app/schemas/user.py`: `id, name, email, is_active, is_superuser, avatar, is_otp,
/// permissions, settings`; v3 the same row in its envelope).
#[derive(Debug, Clone)]
struct SimUser {
    id: u64,
    name: String,
    is_active: bool,
    is_superuser: bool,
    /// `permissions` as the row stores it (a JSON column, `default=dict`): `{}` for the
    /// superuser MoviePilot creates at its first start and for a user created through the API
    /// or an older web UI; the four keys (`discovery`, `search`, `subscribe`, `manage`) for a
    /// plain user that v2.5.6's migration `3df653756eec_2_1_6` filled in (all on but `manage`)
    /// or that a newer web UI saved; `null` for a row written with no value. See
    /// [`MoviePilotSim::set_user_permissions`].
    permissions: Value,
    /// `settings`, where a user's notification ids live (`telegram_userid`, as text).
    settings: serde_json::Map<String, Value>,
}

impl SimUser {
    fn to_json(&self) -> Value {
        json!({
            "id": self.id, "name": self.name, "email": null, "is_active": self.is_active,
            "is_superuser": self.is_superuser, "avatar": null, "is_otp": false,
            "permissions": self.permissions, "settings": self.settings,
        })
    }
}

/// `permissions` as v2.5.6's migration `3df653756eec_2_1_6` wrote it for every plain user
/// whose permissions were empty, and as MoviePilot's web UI saves a new user with its switches
/// untouched: all on but `manage`.
pub fn migrated_permissions() -> Value {
    json!({"discovery": true, "search": true, "subscribe": true, "manage": false})
}

impl State {
    fn data(&self) -> MutexGuard<'_, Data> {
        // A panic while holding the lock cannot leave the data half-changed in a way that
        // matters to a simulator; keep serving.
        self.data.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl MoviePilotSim {
    /// Starts on 127.0.0.1 with a free port.
    ///
    /// # Panics
    /// If no port on 127.0.0.1 can be bound; use [`MoviePilotSim::try_start`] to handle that.
    pub async fn start(opts: SimOptions) -> MoviePilotSim {
        match Self::try_start(opts).await {
            Ok(sim) => sim,
            Err(e) => panic!("starting the MoviePilot simulator: {e:#}"),
        }
    }

    /// Starts on 127.0.0.1 with a free port.
    pub async fn try_start(opts: SimOptions) -> anyhow::Result<MoviePilotSim> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding 127.0.0.1:0 for the MoviePilot simulator")?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            data: Mutex::new(Data {
                media: builtin_media(),
                api_token: opts.api_token.clone(),
                password: opts.password.clone(),
                two_factor: opts.two_factor,
                get_search_trigger: opts.dialect == Dialect::V3 && opts.version.trim() == "v3.0.0",
                users: vec![SimUser {
                    id: 1,
                    name: opts.username.clone(),
                    is_active: true,
                    is_superuser: opts.superuser,
                    permissions: json!({}),
                    settings: serde_json::Map::new(),
                }],
                releases: releases::ReleaseData {
                    catalogue: builtin_releases(),
                    ..Default::default()
                },
                ..Data::default()
            }),
            opts,
        });
        let stop = CancellationToken::new();
        let listening = stop.child_token();
        tokio::spawn(serve(listener, state.clone(), listening.clone()));
        Ok(MoviePilotSim {
            state,
            addr,
            stop,
            listening: Arc::new(Mutex::new(listening)),
        })
    }

    /// Which media server MoviePilot has (none at start), and how its library routes answer.
    pub fn set_media_server(&self, server: MediaServer) {
        self.state.data().library.server = server;
    }

    /// Puts a movie into the media server's library.
    pub fn library_add_movie(&self, tmdb_id: u64) {
        self.library_add_episodes(tmdb_id, 0, [1]);
    }

    /// Puts these episodes of a season of a series into the media server's library.
    pub fn library_add_episodes(
        &self,
        tmdb_id: u64,
        season: u32,
        episodes: impl IntoIterator<Item = u32>,
    ) {
        self.state
            .data()
            .library
            .held
            .entry(tmdb_id)
            .or_default()
            .entry(season)
            .or_default()
            .extend(episodes);
    }

    /// `http://127.0.0.1:<port>`, the value for `moviepilot.url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn options(&self) -> &SimOptions {
        &self.state.opts
    }

    /// Adds (or replaces, by TMDB id and kind) a catalogue entry.
    pub fn add_media(&self, media: SimMedia) {
        let mut data = self.state.data();
        data.media
            .retain(|m| !(m.tmdb_id == media.tmdb_id && m.kind == media.kind));
        data.media.push(media);
    }

    pub fn add_download(&self, download: SimDownload) {
        self.state.data().downloads.push(download);
    }

    /// Every subscription, by id.
    pub fn subscriptions(&self) -> Vec<SimSubscription> {
        self.state.data().subs.values().cloned().collect()
    }

    /// What MoviePilot's duplicate check would find for this media and season.
    pub fn find_subscription(&self, tmdb_id: u64, season: Option<u32>) -> Option<SimSubscription> {
        exists(&self.state.data(), tmdb_id, season).cloned()
    }

    /// Adds a subscription directly, as if made in MoviePilot's web UI; returns its id.
    pub fn insert_subscription(
        &self,
        media_tmdb_id: u64,
        kind: MediaKind,
        season: Option<u32>,
    ) -> Option<u64> {
        let username = self.state.opts.username.clone();
        self.insert_subscription_for(media_tmdb_id, kind, season, &username)
    }

    /// [`Self::insert_subscription`] owned by `username`, as if that MoviePilot user had made it.
    pub fn insert_subscription_for(
        &self,
        media_tmdb_id: u64,
        kind: MediaKind,
        season: Option<u32>,
        username: &str,
    ) -> Option<u64> {
        let mut data = self.state.data();
        let media = data
            .media
            .iter()
            .find(|m| m.tmdb_id == media_tmdb_id && m.kind == kind)?
            .clone();
        Some(insert(&mut data, &media, season, username, false))
    }

    /// Makes subscription `id` a best-version one (洗版), or a plain one, as MoviePilot's web UI
    /// would.
    pub fn set_best_version(&self, id: u64, on: bool) {
        if let Some(sub) = self.state.data().subs.get_mut(&id) {
            sub.best_version = on;
        }
    }

    /// Requests that reached `route` (see [`routes`]), including refused ones.
    pub fn calls(&self, route: &str) -> u64 {
        self.state.data().calls.get(route).copied().unwrap_or(0)
    }

    /// Every request's method and path as it arrived (still percent-encoded), unknown paths
    /// too, in order (the newest [`PATHS_KEPT`]): what MoviePilot's own access log would show.
    pub fn paths(&self) -> Vec<String> {
        self.state.data().paths.clone()
    }

    /// The requests whose path is no route MoviePilot has (answered 404), method and path.
    pub fn unrouted(&self) -> Vec<String> {
        self.state.data().unrouted.clone()
    }

    /// Requests that reached any route, including refused ones.
    pub fn requests(&self) -> u64 {
        self.state.data().calls.values().sum()
    }

    /// Successful logins (tokens issued).
    pub fn logins(&self) -> u64 {
        self.state.data().logins
    }

    /// Searches that actually ran for subscription `id` (a no-op search does not count).
    pub fn searches(&self, id: u64) -> u64 {
        self.state.data().searches.get(&id).copied().unwrap_or(0)
    }

    /// Requests on `route` wait (counted in [`MoviePilotSim::calls`] as they arrive, run
    /// nothing) until [`MoviePilotSim::release`]: a test does something while a call is in
    /// flight, then lets it take effect and answer.
    pub fn hold(&self, route: &str) {
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        self.state.data().held.insert(route.to_string(), gate);
    }

    /// Lets every request held on `route` run, and the later ones through at once.
    pub fn release(&self, route: &str) {
        if let Some(gate) = self.state.data().held.remove(route) {
            gate.close();
        }
    }

    /// Queues `fault` for the next authenticated request on `route` (see [`routes`]).
    pub fn fail_next(&self, route: &str, fault: Fault) {
        self.state
            .data()
            .faults
            .entry(route.to_string())
            .or_default()
            .push_back(fault);
    }

    /// Posters at `host` (a `PosterServer::host`): media answer `poster_path`
    /// `<host>/t/p/original/sim-<tmdb id>.jpg`, as MoviePilot builds a TMDB URL, and
    /// subscriptions `poster` `<host>/t/p/w500/sim-<tmdb id>.jpg`, as it stores one. `None` (the
    /// default): no posters.
    pub fn set_poster_host(&self, host: Option<&str>) {
        let mut data = self.state.data();
        data.poster_host = host.map(str::to_string);
        data.search_answers.clear();
    }

    /// When on, the search trigger answers success but searches nothing (MoviePilot's
    /// scheduler skips a job that is already running).
    pub fn set_search_no_op(&self, on: bool) {
        self.state.data().search_no_op = on;
    }

    /// Forgets every issued token: they now answer 403 (v2) or 401 (v3), as after a restart of
    /// a MoviePilot without a fixed SECRET_KEY.
    pub fn invalidate_tokens(&self) {
        self.state.data().tokens.clear();
    }

    /// The operator changed the user's password in MoviePilot (and MoviePilot forgot its
    /// tokens, as after the restart that usually follows): logins with the old one are refused.
    pub fn set_password(&self, password: &str) {
        let mut data = self.state.data();
        data.password = password.to_string();
        data.tokens.clear();
    }

    /// The user turned two-factor login on (or off) in MoviePilot; its tokens die with the
    /// change, as after a restart.
    pub fn set_two_factor(&self, on: bool) {
        let mut data = self.state.data();
        data.two_factor = on;
        data.tokens.clear();
    }

    /// Adds a MoviePilot user (after the others, as MoviePilot numbers them) with their
    /// `telegram_userid` notification setting as MoviePilot stores it (text), if any, and
    /// `permissions: {}`, as `POST /api/v1/user/` stores a user an older web UI or a script
    /// created (MoviePilot's defaults then apply: all on but `manage`).
    pub fn add_user(&self, name: &str, superuser: bool, telegram_userid: Option<&str>) {
        let mut data = self.state.data();
        let id = data.users.iter().map(|u| u.id).max().unwrap_or(0) + 1;
        let mut settings = serde_json::Map::new();
        if let Some(t) = telegram_userid {
            settings.insert("telegram_userid".into(), json!(t));
        }
        data.users.push(SimUser {
            id,
            name: name.to_string(),
            is_active: true,
            is_superuser: superuser,
            permissions: json!({}),
            settings,
        });
    }

    /// A user's `permissions` saved as MoviePilot's user form or `PUT /api/v1/user/` saves
    /// them: stored and answered as given (`{}`, any of the keys, `null`), never filled in.
    pub fn set_user_permissions(&self, name: &str, permissions: Value) {
        let mut data = self.state.data();
        if let Some(u) = data.users.iter_mut().find(|u| u.name == name) {
            u.permissions = permissions;
        }
    }

    /// Deletes a MoviePilot user (as `DELETE /api/v1/user/{name}` does).
    pub fn remove_user(&self, name: &str) {
        self.state.data().users.retain(|u| u.name != name);
    }

    /// A user changed their `telegram_userid` (`None`: cleared, as MoviePilot's form saves an
    /// empty field: `""`).
    pub fn set_telegram_userid(&self, name: &str, telegram_userid: Option<&str>) {
        let mut data = self.state.data();
        if let Some(u) = data.users.iter_mut().find(|u| u.name == name) {
            u.settings.insert(
                "telegram_userid".into(),
                json!(telegram_userid.unwrap_or("")),
            );
        }
    }

    /// A user enabled or disabled in MoviePilot (`is_active`).
    pub fn set_user_active(&self, name: &str, active: bool) {
        let mut data = self.state.data();
        if let Some(u) = data.users.iter_mut().find(|u| u.name == name) {
            u.is_active = active;
        }
    }

    /// Installs MoviePilot's Webhook plugin, posting to `url` (`None`: uninstalled). Then a
    /// subscription's create writes MoviePilot's "<title_year>[ S0n] 已添加订阅" notification and
    /// the plugin posts it *inside the create request*, before MoviePilot answers, as the real
    /// v2.5.6 and v2.14.0 do (`app/chain/subscribe.py` sends the notice during `add`).
    pub fn set_webhook_plugin(&self, url: Option<&str>) {
        self.state.data().webhook_plugin = url.map(str::to_string);
    }

    /// A user made a superuser, or no longer one (`is_superuser`), as MoviePilot's user form
    /// does.
    pub fn set_superuser(&self, name: &str, superuser: bool) {
        let mut data = self.state.data();
        if let Some(u) = data.users.iter_mut().find(|u| u.name == name) {
            u.is_superuser = superuser;
        }
    }

    /// Serve v3's search trigger as GET only, as v3.0.0 did, whatever version is reported (a
    /// build whose version does not say it, such as one built from source).
    pub fn set_get_search_trigger(&self, on: bool) {
        self.state.data().get_search_trigger = on;
    }

    /// Adds a transfer history record and returns its id.
    pub fn insert_transfer(&self, src: &str, dest: &str, title: &str) -> u64 {
        let mut data = self.state.data();
        let t = &mut data.transfers;
        t.next_id += 1;
        t.records.insert(
            t.next_id,
            SimTransfer {
                src: src.into(),
                dest: dest.into(),
                title: title.into(),
                filed: None,
            },
        );
        t.next_id
    }

    /// Redos made, and the destinations they deleted, in order.
    pub fn redos(&self) -> (u64, Vec<String>) {
        let data = self.state.data();
        (data.transfers.redos, data.transfers.deleted.clone())
    }

    /// What a restart request does from now on, and how long a restart takes.
    pub fn set_restart(&self, mode: RestartMode, downtime: Duration) {
        let mut data = self.state.data();
        data.restart.mode = mode;
        data.restart.downtime = downtime;
    }

    /// Restarts MoviePilot made (a refused or ignored request is none).
    pub fn restarts(&self) -> u64 {
        self.state.data().restart.restarts
    }

    /// Runs of scheduler job `job` MoviePilot made (a skipped start is none).
    pub fn scheduler_runs(&self, job: &str) -> u64 {
        self.state
            .data()
            .scheduler
            .runs
            .get(job)
            .copied()
            .unwrap_or(0)
    }

    /// Starts of `job` skipped because it was running already.
    pub fn scheduler_skips(&self, job: &str) -> u64 {
        self.state
            .data()
            .scheduler
            .skips
            .get(job)
            .copied()
            .unwrap_or(0)
    }

    /// How long each scheduler run takes before `runscheduler` answers.
    pub fn set_scheduler_run_time(&self, run_time: Duration) {
        self.state.data().scheduler.run_time = run_time;
    }

    /// Whether the scheduler is running `job` now.
    pub fn scheduler_running(&self, job: &str) -> bool {
        self.state.data().scheduler.running.contains(job)
    }

    /// A MoviePilot restart: tokens die, the database (subscriptions) survives.
    pub fn restart(&self) {
        self.invalidate_tokens();
    }

    /// The operator changed MoviePilot's `API_TOKEN` (its settings page): the old key is
    /// refused from now on, as the real server refuses it (401 "API_KEY 校验不通过").
    pub fn rotate_api_token(&self, new_token: &str) {
        self.state.data().api_token = new_token.to_string();
    }

    /// A MoviePilot restart as v2.14.0 really goes: for `down` nothing listens on the port
    /// (connections are refused, 20 to 27 s on a real host), then it listens again on the same
    /// port with every token forgotten and the database kept. Returns at once; the server comes
    /// back by itself. Connections already open are closed.
    pub fn restart_refusing_connections_for(&self, down: Duration) {
        self.invalidate_tokens();
        let old = std::mem::replace(&mut *self.lock_listening(), CancellationToken::new());
        old.cancel();
        let (state, addr, stop) = (self.state.clone(), self.addr, self.stop.clone());
        let listening = self.listening.clone();
        tokio::spawn(async move {
            tokio::time::sleep(down).await;
            // The port was ours a moment ago; a few tries cover the kernel's slow release.
            for _ in 0..50 {
                if let Ok(listener) = TcpListener::bind(addr).await {
                    let token = stop.child_token();
                    *listening.lock().unwrap_or_else(|p| p.into_inner()) = token.clone();
                    tokio::spawn(serve(listener, state, token));
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tracing::error!(%addr, "the MoviePilot simulator could not listen again after its restart");
        });
    }

    /// Writes a notification as MoviePilot stores one before routing it; returns its id (the
    /// highest + 1). The same notice written twice is two rows, as MoviePilot's repeats are.
    pub fn notify(&self, n: SimNotification) -> u64 {
        messages::notify(&mut self.state.data(), n)
    }

    /// A message a user sent MoviePilot (`action` 0), which the history lists too.
    pub fn user_message(&self, text: &str) -> u64 {
        messages::user_message(&mut self.state.data(), text)
    }

    /// Deletes the `n` newest rows of the message history; their ids are given again.
    pub fn purge_newest_messages(&self, n: usize) {
        messages::purge_newest(&mut self.state.data(), n);
    }

    /// The message history, oldest first.
    pub fn messages(&self) -> Vec<SimMessage> {
        let mut all = self.state.data().messages.clone();
        all.sort_by_key(|m| m.id);
        all
    }

    fn lock_listening(&self) -> MutexGuard<'_, CancellationToken> {
        self.listening.lock().unwrap_or_else(|p| p.into_inner())
    }
}

// ----- the server -----

/// Per-connection handle a handler uses to close its connection without answering.
#[derive(Clone)]
struct ConnKill(CancellationToken);

async fn serve(listener: TcpListener, state: Arc<State>, stop: CancellationToken) {
    let filter = requests(state);
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            // Out of file descriptors or similar: back off briefly rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(warp::service(filter.clone()));
        let kill = CancellationToken::new();
        let stop = stop.clone();
        tokio::spawn(async move {
            let handle_kill = kill.clone();
            let service =
                hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(ConnKill(handle_kill.clone()));
                    hyper::service::Service::call(&service, req)
                });
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::select! {
                _ = conn => {}
                _ = kill.cancelled() => {}
                _ = stop.cancelled() => {}
            }
        });
    }
}

/// Every request, whatever its method and path, as a [`Req`] for [`handle`].
fn requests(
    state: Arc<State>,
) -> impl Filter<Extract = (Resp,), Error = warp::Rejection> + Clone + Send + Sync + 'static {
    warp::method()
        .and(warp::path::full())
        .and(
            warp::query::<Vec<(String, String)>>()
                .or(warp::any().map(Vec::new))
                .unify(),
        )
        .and(warp::header::headers_cloned())
        .and(warp::body::bytes())
        .and(warp::ext::optional::<ConnKill>())
        .then(
            move |method: Method,
                  path: warp::path::FullPath,
                  query: Vec<(String, String)>,
                  headers: HeaderMap,
                  body: Bytes,
                  kill: Option<ConnKill>| {
                let state = state.clone();
                async move {
                    let req = Req {
                        method,
                        path: path.as_str().to_string(),
                        query,
                        headers,
                        body,
                    };
                    handle(state, req, kill).await
                }
            },
        )
}

/// How many request paths [`MoviePilotSim::paths`] keeps (the newest).
const PATHS_KEPT: usize = 100_000;

struct Req {
    method: Method,
    path: String,
    query: Vec<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
}

impl Req {
    fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// A numeric query parameter (`page`, `count`): `default` when missing or empty, `Err` when
    /// not a number (FastAPI's 422, where a route checks it).
    fn number(&self, name: &str, default: usize) -> Result<usize, ()> {
        match self.param(name) {
            None | Some("") => Ok(default),
            Some(v) => v.parse().map_err(|_| ()),
        }
    }
}

/// Bodies are `Bytes`, so a cached answer is shared, not copied, per request.
type Resp = http::Response<Bytes>;

/// An answer that ends a request before its route runs (boxed: a response is large).
type Early = Box<Resp>;

fn early(resp: Resp) -> Early {
    Box::new(resp)
}

#[derive(Debug, Clone)]
enum Route {
    Login,
    Global,
    ServarrStatus,
    CurrentUser,
    Users,
    MediaSearch,
    MediaDetail(String),
    SubList,
    SubListToken,
    SubCreate,
    SubUpdate,
    SubUser(String),
    SubHistory(String),
    SubByMedia(String),
    SubGet(String),
    SubDelete(String),
    SubSearch(String),
    Downloads,
    ResourceSearch(String),
    DownloadAdd,
    DownloadHistory,
    MessageWeb,
    RunScheduler,
    Schedule,
    Restart,
    TransferHistory,
    TransferManual,
    MediaServerClients,
    MediaServerNotExists,
    MediaServerExistsRemote,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Open,
    /// `?apikey=` or `X-API-KEY` (the Servarr emulation).
    ApiKey,
    /// `?token=` (`/subscribe/list`).
    ApiToken,
    /// A login token (or, when allowed, the API key).
    Jwt,
}

async fn handle(state: Arc<State>, req: Req, kill: Option<ConnKill>) -> Resp {
    let dialect = state.opts.dialect;
    let locale = request_locale(&state.opts, &req);
    let resp = answer(state, req, kill).await;
    match dialect {
        Dialect::V3 => localized(resp, &locale),
        Dialect::V2 => resp,
    }
}

/// The request's locale as v3 reads it: `X-MoviePilot-Locale`, then `Accept-Language`'s first
/// tag, else the server's default.
fn request_locale(opts: &SimOptions, req: &Req) -> String {
    req.header("x-moviepilot-locale")
        .or_else(|| {
            req.header("accept-language")
                .and_then(|v| v.split([',', ';']).next())
        })
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .unwrap_or(&opts.default_locale)
        .to_string()
}

/// MoviePilot's English for the messages the simulator answers (the en-US texts are the
/// simulator's own wording: the real table was not read). A message without a translation
/// stays as it is, as on the real server.
const EN_US: &[(&str, &str)] = &[
    ("未搜索到任何资源", "No resources found"),
    ("媒体ID格式无效", "Invalid media ID format"),
    ("订阅不存在", "Subscription does not exist"),
    ("无权删除该订阅", "Not allowed to delete this subscription"),
    ("用户名或密码错误", "Incorrect username or password"),
    ("需要二次验证", "Two-factor verification required"),
    ("任务添加失败", "Failed to add the task"),
    ("未识别到媒体信息", "No media information recognized"),
    ("用户权限不足", "Insufficient user permissions"),
];

/// v3 translates the top-level `message` of its JSON answers into the request's locale (small
/// answers only: a list of results has no message worth reading).
fn localized(mut resp: Resp, locale: &str) -> Resp {
    if !locale.to_ascii_lowercase().starts_with("en") || resp.body().len() > 64 * 1024 {
        return resp;
    }
    let Ok(Value::Object(mut body)) = serde_json::from_slice::<Value>(resp.body()) else {
        return resp;
    };
    let Some(english) = body
        .get("message")
        .and_then(Value::as_str)
        .and_then(|m| EN_US.iter().find(|(zh, _)| *zh == m))
        .map(|(_, en)| *en)
    else {
        return resp;
    };
    body.insert("message".into(), json!(english));
    *resp.body_mut() = Bytes::from(serde_json::to_vec(&body).unwrap_or_default());
    resp
}

async fn answer(state: Arc<State>, req: Req, kill: Option<ConnKill>) -> Resp {
    // Restarting: nothing answers, every connection is closed unanswered.
    let now = tokio::time::Instant::now();
    if matches!(state.data().restart.down, Some((from, until)) if from <= now && now < until) {
        return drop_connection(kill).await;
    }
    let get_search_trigger = note_path(&state, &req);
    let (route, key, access) = match route_of(&state, get_search_trigger, &req) {
        Ok(found) => found,
        Err(resp) => return *resp,
    };
    state
        .data()
        .calls
        .entry(key.to_string())
        .and_modify(|n| *n += 1)
        .or_insert(1);
    let user = match authorize(&state, access, &req) {
        Ok(user) => user,
        Err(resp) => return *resp,
    };
    let gate = state.data().held.get(key).cloned();
    if let Some(gate) = gate {
        // Released (closed) by the test: then it runs as it arrived.
        let _ = gate.acquire().await;
    }
    let fault = state
        .data()
        .faults
        .get_mut(key)
        .and_then(VecDeque::pop_front);
    match fault {
        None => answer_route(state, route, key, req, user).await,
        Some(fault) => answer_fault(state, route, req, user, fault, kill).await,
    }
}

/// Records the request's path (the newest [`PATHS_KEPT`]); returns whether the subscription
/// search is triggered with a GET.
fn note_path(state: &State, req: &Req) -> bool {
    let mut data = state.data();
    // Bounded for the bench's long runs: a test reads far fewer.
    if data.paths.len() >= PATHS_KEPT {
        data.paths.drain(..PATHS_KEPT / 2);
    }
    data.paths.push(format!("{} {}", req.method, req.path));
    data.get_search_trigger
}

/// The route a request is for, or MoviePilot's answer when there is none (an unknown path is
/// also recorded in `unrouted`).
fn route_of(
    state: &State,
    get_search_trigger: bool,
    req: &Req,
) -> Result<(Route, &'static str, Access), Early> {
    resolve(
        state.opts.dialect,
        get_search_trigger,
        &req.method,
        &req.path,
    )
    .inspect_err(|resp| {
        if resp.status() == StatusCode::NOT_FOUND {
            state
                .data()
                .unrouted
                .push(format!("{} {}", req.method, req.path));
        }
    })
}

/// Runs a route no fault is queued for.
async fn answer_route(
    state: Arc<State>,
    route: Route,
    key: &'static str,
    req: Req,
    user: String,
) -> Resp {
    let slow = {
        let data = state.data();
        releases::delay(&data, key).max(library::delay(&data, key))
    };
    if slow.is_zero() && matches!(key, routes::RESOURCE_SEARCH | routes::DOWNLOADS) {
        // The answers that can be tens of MB (a site listing thousands of releases, a
        // downloader with thousands of torrents) are built off the runtime, so a test's own
        // tasks (its Redis connection) are not starved meanwhile.
        joined(tokio::task::spawn_blocking(move || {
            execute(&state, &route, &req, &user)
        }))
        .await
    } else if matches!(route, Route::RunScheduler) {
        // A scheduler job runs inside the request, as MoviePilot's does.
        run_scheduler(state, req, user).await
    } else if slow.is_zero() && matches!(route, Route::SubCreate) {
        // With the Webhook plugin, the create's notice is posted before the answer.
        let notice = subscription_notice(&req);
        let resp = execute(&state, &route, &req, &user);
        if resp.status().is_success() {
            plugin_posts(&state, notice).await;
        }
        resp
    } else if slow.is_zero() {
        execute(&state, &route, &req, &user)
    } else {
        // A slow route (a resource search, an add) as a late answer: the effect happens even
        // when the client gives up meanwhile, as a request MoviePilot received runs to its end.
        late(state, route, req, user, slow).await
    }
}

/// Answers as the queued fault says.
async fn answer_fault(
    state: Arc<State>,
    route: Route,
    req: Req,
    user: String,
    fault: Fault,
    kill: Option<ConnKill>,
) -> Resp {
    match fault {
        Fault::Status(code, body) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            match serde_json::from_str::<Value>(&body) {
                Ok(v) => json_resp(status, &v),
                Err(_) => text_resp(status, &body),
            }
        }
        Fault::Drop => drop_connection(kill).await,
        Fault::CommitThenDrop => {
            let _ = execute(&state, &route, &req, &user);
            drop_connection(kill).await
        }
        Fault::Delay(delay) => late(state, route, req, user, delay).await,
    }
}

/// The route run after `delay` in a task of its own, so its effect happens even when the
/// client gives up and hyper drops the handler meanwhile.
async fn late(state: Arc<State>, route: Route, req: Req, user: String, delay: Duration) -> Resp {
    joined(tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        execute(&state, &route, &req, &user)
    }))
    .await
}

/// A task's answer, or a bare 500 if it panicked.
async fn joined(task: tokio::task::JoinHandle<Resp>) -> Resp {
    match task.await {
        Ok(resp) => resp,
        Err(_) => text_resp(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error"),
    }
}

/// MoviePilot's notice of a new subscription, from the create's body: "<name> (<year>)[ S0n]
/// 已添加订阅" (`MediaInfo.title_year`, then the season), as its subscribe chain writes it.
fn subscription_notice(req: &Req) -> Option<messages::SimNotification> {
    let body: Value = serde_json::from_slice(&req.body).ok()?;
    let name = body.get("name")?.as_str()?;
    let year = body.get("year").and_then(Value::as_str).unwrap_or_default();
    let mut title = if year.is_empty() {
        name.to_string()
    } else {
        format!("{name} ({year})")
    };
    if let Some(season) = body
        .get("season")
        .and_then(Value::as_u64)
        .filter(|s| *s > 0)
    {
        title.push_str(&format!(" S{season:02}"));
    }
    title.push_str(" 已添加订阅");
    Some(messages::SimNotification::new(
        oncebot::vocabulary::NotificationType::Subscribe,
        &title,
        "来自用户：oncebot",
    ))
}

/// With the Webhook plugin installed, `notice` is written to the message history and posted to
/// the plugin's URL (its answer awaited), as one event of the request under way.
async fn plugin_posts(state: &State, notice: Option<messages::SimNotification>) {
    let (Some(url), Some(notice)) = (state.data().webhook_plugin.clone(), notice) else {
        return;
    };
    let payload = {
        let mut data = state.data();
        let id = messages::notify(&mut data, notice);
        let m = data.messages.iter().find(|m| m.id == id).cloned();
        m.map(|m| messages::notice_payload(&m))
    };
    if let Some(payload) = payload
        && let Err(e) = messages::send_webhook(&url, &payload, false).await
    {
        tracing::warn!(error = %e, "the Webhook plugin could not post");
    }
}

async fn drop_connection(kill: Option<ConnKill>) -> Resp {
    match kill {
        Some(ConnKill(token)) => {
            token.cancel();
            // The connection task drops this future; nothing is ever answered.
            std::future::pending::<Resp>().await
        }
        // Only reachable when the filter is served without the simulator's accept loop.
        None => text_resp(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error"),
    }
}

/// Which route a request is for, FastAPI-style: unknown path 404, known path with another
/// method 405, `/api/v1/subscribe` without the slash 307.
fn resolve(
    dialect: Dialect,
    get_search_trigger: bool,
    method: &Method,
    path: &str,
) -> Result<(Route, &'static str, Access), Early> {
    let found = match path.strip_prefix("/api/v1") {
        Some("/subscribe") => return Err(Box::new(subscribe_redirect())),
        Some(rest) => fixed_route(method, rest)
            .or_else(|| segment_route(dialect, get_search_trigger, method, rest)),
        None if dialect == Dialect::V2 && path == "/api/v3/system/status" => Some((
            *method == Method::GET,
            Route::ServarrStatus,
            routes::SERVARR_STATUS,
            Access::ApiKey,
        )),
        None => None,
    };
    match found {
        Some((true, route, key, access)) => Ok((route, key, access)),
        Some((false, ..)) => Err(early(error_resp(
            dialect,
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed",
        ))),
        None => Err(early(error_resp(
            dialect,
            StatusCode::NOT_FOUND,
            "Not Found",
        ))),
    }
}

/// A route found for a path: whether the method is the route's, the route, its key, its access.
type Found = (bool, Route, &'static str, Access);

/// The routes at fixed paths under `/api/v1`: path, method, route, key, access. A path listed
/// for several methods routes by its method; with any other method it is 405.
static FIXED_ROUTES: &[(&str, Method, Route, &str, Access)] = &[
    (
        "/login/access-token",
        Method::POST,
        Route::Login,
        routes::LOGIN,
        Access::Open,
    ),
    (
        "/system/global",
        Method::GET,
        Route::Global,
        routes::GLOBAL,
        Access::Open,
    ),
    (
        "/user/current",
        Method::GET,
        Route::CurrentUser,
        routes::CURRENT_USER,
        Access::Jwt,
    ),
    (
        "/user/",
        Method::GET,
        Route::Users,
        routes::USERS,
        Access::Jwt,
    ),
    (
        "/media/search",
        Method::GET,
        Route::MediaSearch,
        routes::MEDIA_SEARCH,
        Access::Jwt,
    ),
    (
        "/download/",
        Method::POST,
        Route::DownloadAdd,
        routes::DOWNLOAD_ADD,
        Access::Jwt,
    ),
    (
        "/download/",
        Method::GET,
        Route::Downloads,
        routes::DOWNLOADS,
        Access::Jwt,
    ),
    (
        "/history/download",
        Method::GET,
        Route::DownloadHistory,
        routes::DOWNLOAD_HISTORY,
        Access::Jwt,
    ),
    (
        "/message/web",
        Method::GET,
        Route::MessageWeb,
        routes::MESSAGE_WEB,
        Access::Jwt,
    ),
    (
        "/system/runscheduler",
        Method::GET,
        Route::RunScheduler,
        routes::RUN_SCHEDULER,
        Access::Jwt,
    ),
    (
        "/dashboard/schedule",
        Method::GET,
        Route::Schedule,
        routes::SCHEDULE,
        Access::Jwt,
    ),
    (
        "/system/restart",
        Method::GET,
        Route::Restart,
        routes::RESTART,
        Access::Jwt,
    ),
    (
        "/history/transfer",
        Method::GET,
        Route::TransferHistory,
        routes::TRANSFER_HISTORY,
        Access::Jwt,
    ),
    (
        "/transfer/manual",
        Method::POST,
        Route::TransferManual,
        routes::TRANSFER_MANUAL,
        Access::Jwt,
    ),
    (
        "/mediaserver/clients",
        Method::GET,
        Route::MediaServerClients,
        routes::MEDIASERVER_CLIENTS,
        Access::Jwt,
    ),
    (
        "/mediaserver/notexists",
        Method::POST,
        Route::MediaServerNotExists,
        routes::MEDIASERVER_NOTEXISTS,
        Access::Jwt,
    ),
    (
        "/mediaserver/exists_remote",
        Method::POST,
        Route::MediaServerExistsRemote,
        routes::MEDIASERVER_EXISTS_REMOTE,
        Access::Jwt,
    ),
    (
        "/subscribe/",
        Method::POST,
        Route::SubCreate,
        routes::SUBSCRIBE_CREATE,
        Access::Jwt,
    ),
    (
        "/subscribe/",
        Method::PUT,
        Route::SubUpdate,
        routes::SUBSCRIBE_UPDATE,
        Access::Jwt,
    ),
    (
        "/subscribe/",
        Method::GET,
        Route::SubList,
        routes::SUBSCRIBE_LIST,
        Access::Jwt,
    ),
    (
        "/subscribe/list",
        Method::GET,
        Route::SubListToken,
        routes::SUBSCRIBE_LIST_TOKEN,
        Access::ApiToken,
    ),
];

/// The route at a fixed path (`rest` after `/api/v1`), if it is one.
fn fixed_route(method: &Method, rest: &str) -> Option<Found> {
    let listed: Vec<_> = FIXED_ROUTES.iter().filter(|r| r.0 == rest).collect();
    let (_, route_method, route, key, access) = listed
        .iter()
        .find(|r| r.1 == *method)
        .or_else(|| listed.last())?;
    Some((route_method == method, route.clone(), key, *access))
}

/// The route of a path ending in an id or a name (`rest` after `/api/v1`), if it is one.
fn segment_route(
    dialect: Dialect,
    get_search_trigger: bool,
    method: &Method,
    rest: &str,
) -> Option<Found> {
    use Access::Jwt;
    let get = *method == Method::GET;
    let post = *method == Method::POST;
    if let Some(id) = single_segment(rest, "/search/media/") {
        Some((get, Route::ResourceSearch(id), routes::RESOURCE_SEARCH, Jwt))
    } else if let Some(id) = single_segment(rest, "/media/") {
        Some((get, Route::MediaDetail(id), routes::MEDIA_DETAIL, Jwt))
    } else if let Some(mtype) = single_segment(rest, "/subscribe/history/") {
        Some((
            get,
            Route::SubHistory(mtype),
            routes::SUBSCRIBE_HISTORY,
            Jwt,
        ))
    } else if let Some(name) = single_segment(rest, "/subscribe/user/") {
        Some((get, Route::SubUser(name), routes::SUBSCRIBE_USER, Jwt))
    } else if let Some(id) = single_segment(rest, "/subscribe/media/") {
        Some((get, Route::SubByMedia(id), routes::SUBSCRIBE_BY_MEDIA, Jwt))
    } else if let Some(id) = single_segment(rest, "/subscribe/search/") {
        match dialect {
            // v3.0.0 (71147c1d) still had only GET, answering `{success: true}`.
            Dialect::V2 => Some((get, Route::SubSearch(id), routes::SUBSCRIBE_SEARCH_V2, Jwt)),
            Dialect::V3 if get_search_trigger => {
                Some((get, Route::SubSearch(id), routes::SUBSCRIBE_SEARCH_V2, Jwt))
            }
            Dialect::V3 => Some((post, Route::SubSearch(id), routes::SUBSCRIBE_SEARCH_V3, Jwt)),
        }
    } else if let Some(id) = single_segment(rest, "/subscribe/") {
        if *method == Method::DELETE {
            Some((true, Route::SubDelete(id), routes::SUBSCRIBE_DELETE, Jwt))
        } else {
            Some((get, Route::SubGet(id), routes::SUBSCRIBE_GET, Jwt))
        }
    } else {
        None
    }
}

/// `/api/v1/subscribe` without its slash: FastAPI's 307 to the path with it, without a body.
fn subscribe_redirect() -> Resp {
    let mut resp = json_resp(StatusCode::TEMPORARY_REDIRECT, &Value::Null);
    *resp.body_mut() = Bytes::new();
    if let Ok(location) = http::HeaderValue::from_str("/api/v1/subscribe/") {
        resp.headers_mut().insert(http::header::LOCATION, location);
    }
    resp
}

/// `rest` = `<prefix><one non-empty segment>`: the segment, percent-decoded.
fn single_segment(rest: &str, prefix: &str) -> Option<String> {
    let segment = rest.strip_prefix(prefix)?;
    (!segment.is_empty() && !segment.contains('/')).then(|| percent_decode(segment))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex_value(bytes[i + 1]), hex_value(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// The user a request acts as, or the refusal MoviePilot would answer.
fn authorize(state: &State, access: Access, req: &Req) -> Result<String, Early> {
    let opts = &state.opts;
    let dialect = opts.dialect;
    let api_key = req.header("x-api-key").or_else(|| req.param("apikey"));
    let api_token = state.data().api_token.clone();
    match access {
        Access::Open => Ok(String::new()),
        Access::ApiKey => match api_key {
            Some(k) if k == api_token => Ok(opts.username.clone()),
            _ => Err(early(error_resp(
                dialect,
                StatusCode::UNAUTHORIZED,
                "API_KEY 校验不通过",
            ))),
        },
        Access::ApiToken => match req.param("token") {
            Some(t) if t == api_token => Ok(opts.username.clone()),
            _ => Err(early(error_resp(
                dialect,
                StatusCode::UNAUTHORIZED,
                "API_TOKEN 校验不通过",
            ))),
        },
        Access::Jwt => authorize_jwt(state, req, api_key, &api_token),
    }
}

/// A login token; where the options allow it, the API key (and in v3 `?token=`) too; without
/// any, FastAPI's "Not authenticated".
fn authorize_jwt(
    state: &State,
    req: &Req,
    api_key: Option<&str>,
    api_token: &str,
) -> Result<String, Early> {
    let opts = &state.opts;
    let dialect = opts.dialect;
    let bearer = req.header("authorization").and_then(|h| {
        let (scheme, token) = h.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
    });
    if let Some(token) = bearer {
        if state.data().tokens.contains(token) {
            return Ok(opts.username.clone());
        }
        let status = match dialect {
            Dialect::V2 => StatusCode::FORBIDDEN,
            Dialect::V3 => StatusCode::UNAUTHORIZED,
        };
        return Err(early(error_resp(dialect, status, "token校验不通过")));
    }
    if opts.api_key_accepted_on_jwt_routes {
        if let Some(key) = api_key {
            if key == api_token {
                return Ok(opts.username.clone());
            }
            let message = match dialect {
                Dialect::V2 => "API_KEY 校验不通过",
                Dialect::V3 => "apikey 校验不通过",
            };
            return Err(early(error_resp(
                dialect,
                StatusCode::UNAUTHORIZED,
                message,
            )));
        }
        if dialect == Dialect::V3
            && let Some(token) = req.param("token")
        {
            if token == api_token {
                return Ok(opts.username.clone());
            }
            return Err(early(error_resp(
                dialect,
                StatusCode::UNAUTHORIZED,
                "token 校验不通过",
            )));
        }
    }
    let mut resp = error_resp(dialect, StatusCode::UNAUTHORIZED, "Not authenticated");
    resp.headers_mut().insert(
        http::header::WWW_AUTHENTICATE,
        http::HeaderValue::from_static("Bearer"),
    );
    Err(Box::new(resp))
}

/// Runs a route against the state. Synchronous: the whole effect happens under one lock.
fn execute(state: &State, route: &Route, req: &Req, user: &str) -> Resp {
    let opts = &state.opts;
    let dialect = opts.dialect;
    match route {
        Route::Login => login(state, req),
        Route::Global => global(state, req),
        Route::ServarrStatus => {
            let mut body = template(SERVARR_STATUS);
            body["version"] = json!(opts.version);
            json_resp(StatusCode::OK, &body)
        }
        Route::CurrentUser => {
            let data = state.data();
            match data.users.iter().find(|u| u.name == user) {
                Some(u) => ok_payload(dialect, u.to_json()),
                None => error_resp(dialect, StatusCode::FORBIDDEN, "用户不存在"),
            }
        }
        Route::Users => list_users(state, user),
        Route::MediaSearch => media_search(state, req),
        Route::MediaDetail(mediaid) => media_detail(state, mediaid, req),
        Route::SubList | Route::SubListToken => sub_list(state, req),
        Route::SubCreate => create(state, req, user),
        Route::SubUpdate => sub_update(state, req),
        Route::SubUser(name) => sub_user(state, name),
        Route::SubHistory(mtype) => follow::subscribe_history(state, mtype, req),
        Route::SubByMedia(mediaid) => sub_by_media(state, mediaid, req),
        Route::SubGet(id) => sub_get(state, id),
        Route::SubDelete(id) => sub_delete(state, id),
        Route::SubSearch(id) => sub_search(state, id),
        Route::ResourceSearch(segment) => releases::search(state, segment, req),
        Route::DownloadAdd => releases::add(state, req, user),
        Route::DownloadHistory => releases::history(state, req),
        Route::Downloads => downloads(state),
        Route::MessageWeb => messages::history(&state.data(), dialect, &opts.version, req),
        Route::RunScheduler => match start_scheduler_job(state, req, user) {
            Ok(started) => {
                if let Some(job) = started {
                    state.data().scheduler.running.remove(&job);
                }
                scheduler_answer()
            }
            Err(resp) => *resp,
        },
        Route::Schedule => schedule(state),
        Route::Restart => restart(state, user),
        Route::TransferHistory => transfer_history(state, req),
        Route::TransferManual => transfer_manual(state, req, user),
        Route::MediaServerClients => library::clients(state),
        Route::MediaServerNotExists => library::not_exists(state, req),
        Route::MediaServerExistsRemote => library::exists_remote(state, req),
    }
}

/// `GET /api/v1/history/transfer?page=&count=`: `{success, data: {list, total}}`, newest first.
fn transfer_history(state: &State, req: &Req) -> Resp {
    let data = state.data();
    let page = req.number("page", 1).unwrap_or(1).max(1);
    let count = req.number("count", 30).unwrap_or(30).max(1);
    let rows: Vec<Value> = data
        .transfers
        .records
        .iter()
        .rev()
        .skip((page - 1) * count)
        .take(count)
        .map(|(id, t)| {
            let mut row = json!({"id": id, "src": t.src, "dest": t.dest, "title": t.title,
                   "status": true, "mode": "copy", "type": "电影", "date": "2026-12-01 20:00:00",
                   "download_hash": null, "tmdbid": null, "seasons": null, "episodes": null,
                   "errmsg": null});
            if let Some(filed) = &t.filed {
                filed.fill(&mut row);
            }
            row
        })
        .collect();
    json_resp(
        StatusCode::OK,
        &json!({"success": true, "message": null,
                "data": {"list": rows, "total": data.transfers.records.len()}}),
    )
}

/// `POST /api/v1/transfer/manual` with `{"logid", "from_history"}`: a superuser's. The record's
/// destination is deleted, the source filed again under a new record (`add_force` replaces the
/// old one), so the old id is gone afterwards.
fn transfer_manual(state: &State, req: &Req, user: &str) -> Resp {
    let dialect = state.opts.dialect;
    let body = match json_object(dialect, req) {
        Ok(body) => body,
        Err(resp) => return *resp,
    };
    let mut data = state.data();
    if !data.users.iter().any(|u| u.name == user && u.is_superuser) {
        return error_resp(dialect, StatusCode::BAD_REQUEST, "用户权限不足");
    }
    let refuse = |message: String| {
        json_resp(
            StatusCode::OK,
            &json!({"success": false, "message": message, "data": {}}),
        )
    };
    let Some(id) = body.get("logid").and_then(Value::as_u64) else {
        return refuse("缺少参数".into());
    };
    let transfers = &mut data.transfers;
    let Some(record) = transfers.records.remove(&id) else {
        return refuse(format!("整理记录不存在，ID：{id}"));
    };
    transfers.redos += 1;
    transfers.deleted.push(record.dest.clone());
    transfers.next_id += 1;
    let new_id = transfers.next_id;
    transfers.records.insert(new_id, record);
    json_resp(
        StatusCode::OK,
        &json!({"success": true, "message": null, "data": {}}),
    )
}

/// `GET /api/v1/system/restart`: a superuser's. In Docker it answers, stops (logins die with
/// the process), and comes back after the downtime; elsewhere it refuses in words.
fn restart(state: &State, user: &str) -> Resp {
    let dialect = state.opts.dialect;
    let mut data = state.data();
    if !data.users.iter().any(|u| u.name == user && u.is_superuser) {
        return error_resp(dialect, StatusCode::BAD_REQUEST, "用户权限不足");
    }
    let ok = || {
        json_resp(
            StatusCode::OK,
            &json!({"success": true, "message": "", "data": {}}),
        )
    };
    match data.restart.mode.clone() {
        RestartMode::Refuses(message) => json_resp(
            StatusCode::OK,
            &json!({"success": false, "message": message, "data": {}}),
        ),
        RestartMode::Ignores => ok(),
        RestartMode::Restarts => {
            data.restart.restarts += 1;
            // The answer goes out first; the process stops a moment later.
            let from = tokio::time::Instant::now() + Duration::from_millis(200);
            data.restart.down = Some((from, from + data.restart.downtime));
            data.tokens.clear();
            ok()
        }
    }
}

/// `GET /api/v1/system/runscheduler?jobid=`: a superuser's; an empty id is refused, anything
/// else answers success once the job has run, also when it was running already (skipped, as
/// `Scheduler.start` does) or does not exist (v2.5.6 `system.py` L538-547, `scheduler.py`
/// L382-421).
async fn run_scheduler(state: Arc<State>, req: Req, user: String) -> Resp {
    let job = match start_scheduler_job(&state, &req, &user) {
        Ok(Some(job)) => job,
        Ok(None) => return scheduler_answer(),
        Err(resp) => return *resp,
    };
    let run_time = state.data().scheduler.run_time;
    // The run goes on when the client gives up, as a request MoviePilot received does.
    let task = tokio::spawn(async move {
        tokio::time::sleep(run_time).await;
        state.data().scheduler.running.remove(&job);
    });
    let _ = task.await;
    scheduler_answer()
}

/// The start itself: `Some(job id)` for a run now under way, `None` for a skipped or unknown one.
fn start_scheduler_job(state: &State, req: &Req, user: &str) -> Result<Option<String>, Box<Resp>> {
    let dialect = state.opts.dialect;
    let mut data = state.data();
    if !data.users.iter().any(|u| u.name == user && u.is_superuser) {
        return Err(Box::new(error_resp(
            dialect,
            StatusCode::BAD_REQUEST,
            "用户权限不足",
        )));
    }
    let Some(job) = req.param("jobid") else {
        return Err(Box::new(missing_param(dialect, "query", "jobid")));
    };
    if job.is_empty() {
        return Err(Box::new(json_resp(
            StatusCode::OK,
            &json!({"success": false, "message": "命令不能为空！", "data": {}}),
        )));
    }
    let scheduler = &mut data.scheduler;
    if !SCHEDULER_JOBS.contains(&job) {
        return Ok(None);
    }
    if !scheduler.running.insert(job.to_string()) {
        *scheduler.skips.entry(job.to_string()).or_insert(0) += 1;
        return Ok(None);
    }
    *scheduler.runs.entry(job.to_string()).or_insert(0) += 1;
    Ok(Some(job.to_string()))
}

fn scheduler_answer() -> Resp {
    json_resp(
        StatusCode::OK,
        &json!({"success": true, "message": null, "data": {}}),
    )
}

/// `GET /api/v1/dashboard/schedule`: every job with its state, a bare list in v2.
fn schedule(state: &State) -> Resp {
    let data = state.data();
    let rows: Vec<Value> = SCHEDULER_JOBS
        .iter()
        .map(|id| {
            let running = data.scheduler.running.contains(*id);
            json!({"id": id, "name": id, "provider": "MoviePilot",
                   "status": if running { "正在运行" } else { "等待" }, "next_run": ""})
        })
        .collect();
    ok_payload(state.opts.dialect, Value::Array(rows))
}

/// `GET /api/v1/user/`: every user, to a superuser (v2.5.6 `list_users` behind
/// `get_current_active_superuser`, whose refusal is 400 "用户权限不足" in both lines; v3 wraps
/// the list in its envelope). The caller is looked up by name, as the token's subject.
fn list_users(state: &State, user: &str) -> Resp {
    let dialect = state.opts.dialect;
    let data = state.data();
    let Some(caller) = data.users.iter().find(|u| u.name == user) else {
        return error_resp(dialect, StatusCode::FORBIDDEN, "用户不存在");
    };
    if !caller.is_superuser {
        return error_resp(dialect, StatusCode::BAD_REQUEST, "用户权限不足");
    }
    let rows: Vec<Value> = data.users.iter().map(SimUser::to_json).collect();
    ok_payload(dialect, Value::Array(rows))
}

/// `GET /api/v1/system/global`: v2.9+ report their version here; v2.5.6 answers settings only.
fn global(state: &State, req: &Req) -> Resp {
    let opts = &state.opts;
    let dialect = opts.dialect;
    match req.param("token") {
        None => return missing_param(dialect, "query", "token"),
        Some("moviepilot") => {}
        Some(_) => return error_resp(dialect, StatusCode::FORBIDDEN, "Forbidden"),
    }
    let mut data = json!({
        "TMDB_IMAGE_DOMAIN": "image.tmdb.org",
        "GLOBAL_IMAGE_CACHE": false,
        "ADVANCED_MODE": true,
    });
    if reports_backend_version(&opts.version) {
        data["FRONTEND_VERSION"] = json!(opts.version);
        data["BACKEND_VERSION"] = json!(opts.version);
    } else {
        // v2.5.6 answers (non-sensitive) settings, and no version.
        data["RECOGNIZE_SOURCE"] = json!("themoviedb");
        data["SEARCH_SOURCE"] = json!("themoviedb");
        data["WALLPAPER"] = json!("tmdb");
        data["SUBSCRIBE_MODE"] = json!("spider");
    }
    json_resp(
        StatusCode::OK,
        &json!({"success": true, "message": null, "data": data}),
    )
}

/// `GET /api/v1/media/search`: the catalogue filtered by title, paged (answers are cached per query while the catalogue is unchanged).
fn media_search(state: &State, req: &Req) -> Resp {
    let dialect = state.opts.dialect;
    let Some(title) = req.param("title") else {
        return missing_param(dialect, "query", "title");
    };
    let kind = req.param("type").unwrap_or("media");
    let page = number_param(req, "page", 1).max(1);
    let count = number_param(req, "count", 8);
    let needle = title.trim().to_lowercase();
    let mut data = state.data();
    let key = (dialect == Dialect::V2, needle.clone(), page, count);
    let catalogue = data.media.len();
    if kind == "media"
        && let Some((size, body)) = data.search_answers.get(&key)
        && *size == catalogue
    {
        return bytes_resp(StatusCode::OK, body.clone());
    }
    let hits: Vec<Value> = if kind != "media" || needle.is_empty() {
        Vec::new()
    } else {
        data.media
            .iter()
            .filter(|m| {
                m.title.to_lowercase().contains(&needle)
                    || m.original_title.to_lowercase().contains(&needle)
            })
            .skip((page - 1) * count)
            .take(count)
            .map(|m| media_json(dialect, m, data.poster_host.as_deref()))
            .collect()
    };
    let resp = ok_payload(dialect, Value::Array(hits));
    if kind == "media" {
        data.search_answers
            .insert(key, (catalogue, resp.body().clone()));
    }
    resp
}

/// `GET /api/v1/media/{mediaid}`: one media, or the empty shape MoviePilot answers for none.
fn media_detail(state: &State, mediaid: &str, req: &Req) -> Resp {
    let dialect = state.opts.dialect;
    let tmdb_id = match media_id(dialect, mediaid, req) {
        Ok(id) => id,
        Err(resp) => return *resp,
    };
    let Some(type_name) = req.param("type_name") else {
        return missing_param(dialect, "query", "type_name");
    };
    let Some(kind) = parse_type(dialect, type_name) else {
        return bad_type(dialect, "query", "type_name");
    };
    let data = state.data();
    let found = tmdb_id.and_then(|id| {
        data.media
            .iter()
            .find(|m| m.tmdb_id == id && m.kind == kind)
    });
    ok_payload(
        dialect,
        found.map_or_else(
            || empty_media(dialect),
            |m| media_json(dialect, m, data.poster_host.as_deref()),
        ),
    )
}

/// `GET /api/v1/subscribe/` (and `/subscribe/list` with the API token): every subscription;
/// v3 pages when asked.
fn sub_list(state: &State, req: &Req) -> Resp {
    let dialect = state.opts.dialect;
    let data = state.data();
    let host = data.poster_host.as_deref();
    let mut rows: Vec<Value> = data
        .subs
        .values()
        .map(|s| sub_json(dialect, s, host))
        .collect();
    let total = rows.len();
    let paged =
        dialect == Dialect::V3 && (req.param("page").is_some() || req.param("count").is_some());
    if paged {
        let page = number_param(req, "page", 1).max(1);
        let count = number_param(req, "count", 50).clamp(1, 200);
        rows = rows
            .into_iter()
            .skip((page - 1) * count)
            .take(count)
            .collect();
    }
    let result_count = rows.len();
    let mut resp = ok_payload(dialect, Value::Array(rows));
    if paged {
        for (name, value) in [("x-total-count", total), ("x-result-count", result_count)] {
            resp.headers_mut()
                .insert(name, http::HeaderValue::from(value as u64));
        }
    }
    resp
}

/// `GET /api/v1/subscribe/user/{username}`: the rows `username` owns, a bare list in v2.5.6
/// (`user_subscribes`), the envelope in v3.
fn sub_user(state: &State, username: &str) -> Resp {
    let dialect = state.opts.dialect;
    let data = state.data();
    let rows: Vec<Value> = data
        .subs
        .values()
        .filter(|s| s.username == username)
        .map(|s| sub_json(dialect, s, data.poster_host.as_deref()))
        .collect();
    ok_payload(dialect, Value::Array(rows))
}

/// `PUT /api/v1/subscribe/`. v2 (v2.5.6 `update_subscribe`, L89-124): the row named by the
/// body's `id` is written from the body as `Base.update` writes the schema's dict: a field sent
/// as null or left out whose default is null keeps its value, one left out whose default is
/// not (`total_episode`, 0) is written as that default, and `username` is written as sent.
/// v3: only the fields sent, never the server-controlled ones (`username`, `state`, `date`,
/// ...): the owner stays. A missing id is `success: false` "订阅不存在" in both.
fn sub_update(state: &State, req: &Req) -> Resp {
    let dialect = state.opts.dialect;
    let body = match json_object(dialect, req) {
        Ok(body) => body,
        Err(resp) => return *resp,
    };
    let mut data = state.data();
    let Some(sub) = body
        .get("id")
        .and_then(lenient_u64)
        .and_then(|id| data.subs.get_mut(&id))
    else {
        return json_resp(
            StatusCode::OK,
            &json!({"success": false, "message": "订阅不存在", "data": {}}),
        );
    };
    let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_string);
    let number = |key: &str| body.get(key).and_then(lenient_u64);
    if let Some(name) = text("name") {
        sub.name = name;
    }
    if let Some(year) = text("year") {
        sub.year = year;
    }
    if sub.kind == MediaKind::Tv
        && let Some(season) = number("season")
    {
        sub.season = Some(season as u32);
    }
    match dialect {
        Dialect::V2 => {
            sub.total_episode = number("total_episode").unwrap_or(0) as u32;
            for (key, field) in [
                ("state", &mut sub.state),
                ("username", &mut sub.username),
                ("date", &mut sub.date),
            ] {
                if let Some(value) = text(key) {
                    *field = value;
                }
            }
        }
        Dialect::V3 => {
            if let Some(total) = number("total_episode") {
                sub.total_episode = total as u32;
            }
        }
    }
    json_resp(
        StatusCode::OK,
        &json!({"success": true, "message": null, "data": {}}),
    )
}

/// `GET /api/v1/subscribe/media/{mediaid}`: the subscription to that media (and season), or the empty shape.
fn sub_by_media(state: &State, mediaid: &str, req: &Req) -> Resp {
    let dialect = state.opts.dialect;
    let tmdb_id = match media_id(dialect, mediaid, req) {
        Ok(id) => id,
        Err(resp) => return *resp,
    };
    let season = match req.param("season") {
        None | Some("") => None,
        Some(s) => match s.parse::<u32>() {
            Ok(n) => Some(n),
            Err(_) => return bad_int(dialect, "query", "season"),
        },
    };
    let data = state.data();
    let found = tmdb_id.and_then(|id| exists(&data, id, season));
    ok_payload(
        dialect,
        found.map_or_else(
            || empty_sub(dialect),
            |s| sub_json(dialect, s, data.poster_host.as_deref()),
        ),
    )
}

/// `GET /api/v1/subscribe/{id}`: v2 answers a missing id with a 500, as the real server does.
fn sub_get(state: &State, id: &str) -> Resp {
    let dialect = state.opts.dialect;
    let id = match subscribe_id(dialect, id) {
        Ok(id) => id,
        Err(resp) => return *resp,
    };
    let data = state.data();
    match (data.subs.get(&id), dialect) {
        (Some(sub), _) => ok_payload(dialect, sub_json(dialect, sub, data.poster_host.as_deref())),
        // A MoviePilot bug, faithfully reproduced.
        (None, Dialect::V2) => {
            text_resp(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
        }
        (None, Dialect::V3) => error_resp(dialect, StatusCode::NOT_FOUND, "订阅不存在"),
    }
}

/// `DELETE /api/v1/subscribe/{id}`.
fn sub_delete(state: &State, id: &str) -> Resp {
    let dialect = state.opts.dialect;
    let id = match subscribe_id(dialect, id) {
        Ok(id) => id,
        Err(resp) => return *resp,
    };
    let removed = state.data().subs.remove(&id).is_some();
    match (dialect, removed) {
        (Dialect::V2, _) => json_resp(
            StatusCode::OK,
            &json!({"success": true, "message": null, "data": {}}),
        ),
        (Dialect::V3, true) => json_resp(
            StatusCode::OK,
            &json!({"success": true, "message": null, "data": {"status": "deleted"}}),
        ),
        (Dialect::V3, false) => error_resp(dialect, StatusCode::NOT_FOUND, "订阅不存在"),
    }
}

/// `/api/v1/subscribe/search/{id}` (GET in v2, POST in v3): counts the search a subscription
/// asks for.
fn sub_search(state: &State, id: &str) -> Resp {
    let dialect = state.opts.dialect;
    let id = match subscribe_id(dialect, id) {
        Ok(id) => id,
        Err(resp) => return *resp,
    };
    let mut data = state.data();
    let known = data.subs.contains_key(&id);
    let runs = known && !data.search_no_op;
    if runs {
        *data.searches.entry(id).or_insert(0) += 1;
    }
    match dialect {
        Dialect::V2 => json_resp(
            StatusCode::OK,
            &json!({"success": true, "message": null, "data": {}}),
        ),
        Dialect::V3 if !known => error_resp(dialect, StatusCode::NOT_FOUND, "订阅不存在"),
        Dialect::V3 => {
            let batch = format!("sim-{:016x}", rand::random::<u64>());
            json_resp(
                StatusCode::OK,
                &json!({"success": true, "message": null, "data": {
                    "batch_id": batch, "batch_ids": [batch], "target_count": 1,
                    "queued_count": u8::from(runs), "ongoing_count": u8::from(!runs),
                    "single": true
                }}),
            )
        }
    }
}

/// `GET /api/v1/download/`: the downloads the client is running.
fn downloads(state: &State) -> Resp {
    let dialect = state.opts.dialect;
    let data = state.data();
    let rows: Vec<Value> = data
        .downloads
        .iter()
        .map(|d| download_json(dialect, d))
        .collect();
    ok_payload(dialect, Value::Array(rows))
}

fn login(state: &State, req: &Req) -> Resp {
    let opts = &state.opts;
    let dialect = opts.dialect;
    let fields = form_fields(req);
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let missing: Vec<&str> = ["username", "password"]
        .into_iter()
        .filter(|f| field(f).is_none())
        .collect();
    if !missing.is_empty() {
        return missing_fields(dialect, &missing);
    }
    let (password, two_factor) = {
        let data = state.data();
        (data.password.clone(), data.two_factor)
    };
    let right = field("username") == Some(opts.username.as_str())
        && field("password") == Some(password.as_str());
    let code = field("otp_password").filter(|c| !c.is_empty());
    if !right || (two_factor && code.is_none() && dialect == Dialect::V2) {
        // v2.5.6 says the same for a wrong password and a missing second factor.
        let message = match dialect {
            Dialect::V2 => "用户名或密码或二次校验码不正确",
            Dialect::V3 => "用户名或密码错误",
        };
        return error_resp(dialect, StatusCode::UNAUTHORIZED, message);
    }
    if two_factor && code.is_none() {
        // v3 (login.py @1d806f88): only once the password is right does it say a second factor
        // is needed, and which.
        return second_factor_required();
    }
    issue_token(state)
}

/// A form-encoded body's fields (none for any other body).
fn form_fields(req: &Req) -> Vec<(String, String)> {
    let is_form = req
        .header("content-type")
        .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"));
    if is_form {
        serde_urlencoded::from_bytes(&req.body).unwrap_or_default()
    } else {
        Vec::new()
    }
}

/// FastAPI's 422 for required body fields left out.
fn missing_fields(dialect: Dialect, missing: &[&str]) -> Resp {
    validation_error(
        dialect,
        missing
            .iter()
            .map(|f| {
                (
                    "body",
                    f.to_string(),
                    "field required",
                    "value_error.missing",
                )
            })
            .collect(),
    )
}

fn second_factor_required() -> Resp {
    let mut resp = json_resp(
        StatusCode::UNAUTHORIZED,
        &json!({"success": false, "message": "需要二次验证", "data": {"mfa_methods": ["otp"]}}),
    );
    resp.headers_mut()
        .insert("x-mfa-required", http::HeaderValue::from_static("true"));
    resp
}

/// A new login token, counted among the logins.
fn issue_token(state: &State) -> Resp {
    let token = format!("eyJsim.{:032x}", rand::random::<u128>());
    {
        let mut data = state.data();
        data.tokens.insert(token.clone());
        data.logins += 1;
    }
    let mut body = template(TOKEN);
    body["access_token"] = json!(token);
    body["user_name"] = json!(state.opts.username);
    // The rest of the answer is the login user's row as it is now (v2.5.6 `login.py`
    // L44-48: `super_user=user.is_superuser`, `permissions=user.permissions or {}`).
    let data = state.data();
    if let Some(u) = data.users.iter().find(|u| u.name == state.opts.username) {
        body["super_user"] = json!(u.is_superuser);
        body["user_id"] = json!(u.id);
        body["permissions"] = match &u.permissions {
            Value::Null => json!({}),
            p => p.clone(),
        };
    }
    // The login answer keeps its OAuth2 shape in v3 too.
    json_resp(StatusCode::OK, &body)
}

fn create(state: &State, req: &Req, user: &str) -> Resp {
    let dialect = state.opts.dialect;
    let body = match json_object(dialect, req) {
        Ok(body) => body,
        Err(resp) => return *resp,
    };
    let kind = match body
        .get("type")
        .and_then(Value::as_str)
        .map(|t| parse_type(dialect, t))
    {
        Some(Some(kind)) => kind,
        // v2.5.6: `MediaType(value)` raises, nobody catches it.
        _ if dialect == Dialect::V2 => {
            return text_resp(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error");
        }
        _ => return bad_type(dialect, "body", "type"),
    };
    let tmdb_id = match created_tmdb_id(dialect, &body) {
        Ok(id) => id,
        Err(resp) => return *resp,
    };
    let mut data = state.data();
    let Some(media) = tmdb_id
        .and_then(|id| {
            data.media
                .iter()
                .find(|m| m.tmdb_id == id && m.kind == kind)
        })
        .cloned()
    else {
        return create_refused("未识别到媒体信息");
    };
    let season = match created_season(&body, &media) {
        Ok(season) => season,
        Err(resp) => return *resp,
    };
    // `best_version` is not part of MoviePilot's duplicate check: an existing row's id is
    // answered and the row is left as it is (v2.5.6 `SubscribeOper.add`).
    let best = body
        .get("best_version")
        .and_then(lenient_u64)
        .is_some_and(|b| b != 0);
    let (id, created) = match exists(&data, media.tmdb_id, season) {
        Some(existing) => (existing.id, false),
        None => (insert(&mut data, &media, season, user, best), true),
    };
    let message = match (dialect, created) {
        // v2's chain drops the oper's message.
        (Dialect::V2, _) => "",
        (Dialect::V3, true) => "新增订阅成功",
        (Dialect::V3, false) => "订阅已存在",
    };
    json_resp(
        StatusCode::OK,
        &json!({"success": true, "message": message, "data": {"id": id}}),
    )
}

/// A create MoviePilot refuses with 200 and `success: false`.
fn create_refused(message: &str) -> Resp {
    json_resp(
        StatusCode::OK,
        &json!({"success": false, "message": message, "data": {"id": null}}),
    )
}

/// The TMDB id a create names: v2's `tmdbid`; v3's `media_id` with `media_source` (both or
/// neither, and the source TMDB).
fn created_tmdb_id(dialect: Dialect, body: &Value) -> Result<Option<u64>, Early> {
    match dialect {
        Dialect::V2 => Ok(body.get("tmdbid").and_then(lenient_u64)),
        Dialect::V3 => {
            let source = body
                .get("media_source")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty());
            let id = body.get("media_id").filter(|v| !v.is_null());
            match (source, id) {
                (Some(source), Some(id)) => {
                    if !matches!(source, "themoviedb" | "tmdb") {
                        return Err(early(create_refused("未识别到媒体信息")));
                    }
                    Ok(lenient_u64(id))
                }
                (None, None) => Ok(None),
                _ => Err(early(create_refused(
                    "新增订阅时必须同时提供有效的 media_source 和 media_id",
                ))),
            }
        }
    }
}

/// The season a create subscribes: none for a film, the first when a series' is 0 or left out;
/// one the series does not have is refused.
fn created_season(body: &Value, media: &SimMedia) -> Result<Option<u32>, Early> {
    match media.kind {
        MediaKind::Movie => Ok(None),
        MediaKind::Tv => {
            let asked = body.get("season").and_then(lenient_u64).unwrap_or(0);
            let season = if asked == 0 { 1 } else { asked as u32 };
            if !media.seasons.iter().any(|(n, _)| *n == season) {
                return Err(early(create_refused(&format!(
                    "未获取到第 {season} 季的总集数"
                ))));
            }
            Ok(Some(season))
        }
    }
}

/// A request body that is a JSON object, or FastAPI's 422 for one that is not.
fn json_object(dialect: Dialect, req: &Req) -> Result<Value, Early> {
    match serde_json::from_slice(&req.body) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) | Err(_) => Err(early(validation_error(
            dialect,
            vec![(
                "body",
                "0".into(),
                "Expecting value",
                "value_error.jsondecode",
            )],
        ))),
    }
}

/// MoviePilot's `Subscribe.exists`: same TMDB id, and the same season only when a season is
/// given and non-zero; the type is not compared.
fn exists(data: &Data, tmdb_id: u64, season: Option<u32>) -> Option<&SimSubscription> {
    let season = season.filter(|s| *s > 0);
    data.subs
        .values()
        .find(|s| s.tmdb_id == tmdb_id && season.is_none_or(|n| s.season == Some(n)))
}

/// A new row's id is one more than the largest in the table, as SQLite gives a table without
/// AUTOINCREMENT (MoviePilot's): after the newest subscription is deleted, the next one gets
/// its id again.
fn insert(data: &mut Data, media: &SimMedia, season: Option<u32>, user: &str, best: bool) -> u64 {
    let id = data.subs.keys().next_back().map_or(1, |last| last + 1);
    let total_episode = season
        .and_then(|n| media.seasons.iter().find(|(s, _)| *s == n))
        .map_or(0, |(_, e)| *e);
    data.subs.insert(
        id,
        SimSubscription {
            id,
            name: media.title.clone(),
            year: media.year.clone(),
            kind: media.kind,
            tmdb_id: media.tmdb_id,
            season,
            total_episode,
            state: "N".into(),
            username: user.to_string(),
            date: local_time_now(),
            best_version: best,
            lack_episode: None,
            note: Vec::new(),
        },
    );
    id
}

// ----- bodies -----

fn template(text: &str) -> Value {
    // The templates are compiled-in copies of real answers; a unit test parses each one.
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// A subscription row; its `poster` under `posters` (MoviePilot stores the w500 URL).
fn sub_json(dialect: Dialect, sub: &SimSubscription, posters: Option<&str>) -> Value {
    let mut row = template(SUBSCRIBE_ROW);
    let fields = [
        ("id", json!(sub.id)),
        ("name", json!(sub.name)),
        ("year", json!(sub.year)),
        ("type", json!(sub.kind.wire_name())),
        ("tmdbid", json!(sub.tmdb_id)),
        ("season", json!(sub.season)),
        (
            "poster",
            json!(posters.map(|host| format!("{host}/t/p/w500/sim-{}.jpg", sub.tmdb_id))),
        ),
        (
            "backdrop",
            json!(format!(
                "https://image.tmdb.org/t/p/w500/sim-{}-bg.jpg",
                sub.tmdb_id
            )),
        ),
        ("description", json!(format!("{} ({})", sub.name, sub.year))),
        ("total_episode", json!(sub.total_episode)),
        ("start_episode", json!(0)),
        (
            "lack_episode",
            json!(sub.lack_episode.unwrap_or(sub.total_episode)),
        ),
        (
            "note",
            if sub.note.is_empty() {
                Value::Null
            } else {
                json!(sub.note)
            },
        ),
        ("state", json!(sub.state)),
        ("username", json!(sub.username)),
        ("date", json!(sub.date)),
        ("best_version", json!(u8::from(sub.best_version))),
    ];
    for (key, value) in fields {
        row[key] = value;
    }
    if dialect == Dialect::V3 {
        row["media_source"] = json!("themoviedb");
        row["media_id"] = json!(sub.tmdb_id.to_string());
    }
    row
}

fn empty_sub(dialect: Dialect) -> Value {
    let mut row = template(SUBSCRIBE_EMPTY);
    if dialect == Dialect::V3 {
        row["media_source"] = Value::Null;
        row["media_id"] = Value::Null;
    }
    row
}

/// A media dict; its `poster_path` under `posters`, as MoviePilot builds it (TMDB's
/// `original` size, a full URL).
fn media_json(dialect: Dialect, m: &SimMedia, posters: Option<&str>) -> Value {
    let mut v = template(MEDIA_EMPTY);
    let tv = m.kind == MediaKind::Tv;
    let section = if tv { "tv" } else { "movie" };
    let (seasons, season_info) = season_json(m);
    let fields = [
        ("source", json!("themoviedb")),
        ("type", json!(m.kind.wire_name())),
        ("title", json!(m.title)),
        ("en_title", json!(m.original_title)),
        ("year", json!(m.year)),
        ("title_year", json!(format!("{} ({})", m.title, m.year))),
        ("tmdb_id", json!(m.tmdb_id)),
        ("mediaid_prefix", json!("tmdb")),
        ("media_id", json!(m.tmdb_id.to_string())),
        ("original_title", json!(m.original_title)),
        (
            "poster_path",
            json!(posters.map(|host| format!("{host}/t/p/original/sim-{}.jpg", m.tmdb_id))),
        ),
        (
            "backdrop_path",
            json!(format!(
                "https://image.tmdb.org/t/p/w500/sim-{}-bg.jpg",
                m.tmdb_id
            )),
        ),
        ("vote_average", json!(7.5)),
        ("overview", json!(m.overview)),
        ("seasons", seasons),
        ("season_info", season_info),
        ("names", json!([m.title])),
        (
            "detail_link",
            json!(format!(
                "https://www.themoviedb.org/{section}/{}",
                m.tmdb_id
            )),
        ),
        ("number_of_seasons", json!(m.seasons.len())),
        (
            "number_of_episodes",
            json!(m.seasons.iter().map(|(_, e)| e).sum::<u32>()),
        ),
    ];
    for (key, value) in fields {
        v[key] = value;
    }
    if tv {
        v["first_air_date"] = json!(format!("{}-01-01", m.year));
        v["original_name"] = json!(m.original_title);
    } else {
        v["release_date"] = json!(format!("{}-01-01", m.year));
    }
    if dialect == Dialect::V3 {
        to_v3_media(&mut v);
    }
    v
}

/// A medium's `seasons` (each season's episode numbers) and `season_info` (one row a season).
fn season_json(m: &SimMedia) -> (Value, Value) {
    let seasons: Map<String, Value> = m
        .seasons
        .iter()
        .map(|(n, eps)| (n.to_string(), json!((1..=*eps).collect::<Vec<_>>())))
        .collect();
    let season_info: Vec<Value> = m
        .seasons
        .iter()
        .map(|(n, eps)| {
            json!({"season_number": n, "episode_count": eps, "name": format!("第 {n} 季"),
                   "air_date": null, "overview": "", "poster_path": null})
        })
        .collect();
    (Value::Object(seasons), Value::Array(season_info))
}

fn empty_media(dialect: Dialect) -> Value {
    let mut v = template(MEDIA_EMPTY);
    if dialect == Dialect::V3 {
        to_v3_media(&mut v);
    }
    v
}

/// v3 renamed `source` to `media_source` and dropped `mediaid_prefix`.
fn to_v3_media(v: &mut Value) {
    if let Some(map) = v.as_object_mut() {
        let source = map.remove("source").unwrap_or(Value::Null);
        map.insert("media_source".into(), source);
        map.remove("mediaid_prefix");
    }
}

fn download_json(dialect: Dialect, d: &SimDownload) -> Value {
    let mut v = json!({
        "downloader": "qbittorrent",
        "hash": d.hash,
        "title": d.title,
        "name": d.name,
        "year": d.year,
        "season_episode": d.season_episode,
        "size": 4.2e9,
        "progress": d.progress,
        "state": d.state,
        "upspeed": "0.0B",
        "dlspeed": "1.2M",
        "media": {"tmdbid": null, "type": null, "title": d.name, "season": null, "episode": null, "image": null},
        "userid": null,
        "username": null,
        "left_time": follow::left_time(d.progress),
    });
    if dialect == Dialect::V3 {
        v["site_name"] = json!("SimSite");
        v["save_path"] = json!("/downloads");
    }
    v
}

/// A 200 with `payload` bare (v2) or enveloped (v3).
fn ok_payload(dialect: Dialect, payload: Value) -> Resp {
    match dialect {
        Dialect::V2 => json_resp(StatusCode::OK, &payload),
        Dialect::V3 => json_resp(
            StatusCode::OK,
            &json!({"success": true, "message": null, "data": payload}),
        ),
    }
}

/// FastAPI's `{"detail": …}` (v2) or v3's `{success:false, message, data:null}`.
fn error_resp(dialect: Dialect, status: StatusCode, message: &str) -> Resp {
    match dialect {
        Dialect::V2 => json_resp(status, &json!({"detail": message})),
        Dialect::V3 => json_resp(
            status,
            &json!({"success": false, "message": message, "data": null}),
        ),
    }
}

/// 422 in each dialect's shape; each entry is `(location, field, msg, type)`.
fn validation_error(dialect: Dialect, problems: Vec<(&str, String, &str, &str)>) -> Resp {
    let body = match dialect {
        Dialect::V2 => json!({"detail": problems.iter().map(|(loc, field, msg, kind)| {
            let field = field.parse::<u64>().map_or_else(|_| json!(field), |n| json!(n));
            json!({"loc": [loc, field], "msg": msg, "type": kind})
        }).collect::<Vec<_>>()}),
        Dialect::V3 => json!({
            "success": false,
            "message": "请求参数不正确",
            "data": problems.iter().map(|(loc, field, msg, kind)| json!({
                "location": format!("{loc}.{field}"), "message": msg,
                "error_type": kind.rsplit('.').next().unwrap_or(kind)
            })).collect::<Vec<_>>()
        }),
    };
    json_resp(StatusCode::UNPROCESSABLE_ENTITY, &body)
}

fn missing_param(dialect: Dialect, location: &str, field: &str) -> Resp {
    validation_error(
        dialect,
        vec![(
            location,
            field.into(),
            "field required",
            "value_error.missing",
        )],
    )
}

/// The `subscribe_id` of a path, or the validation error MoviePilot answers for one that is not
/// a number.
fn subscribe_id(dialect: Dialect, id: &str) -> Result<u64, Early> {
    id.parse::<u64>()
        .map_err(|_| Box::new(bad_int(dialect, "path", "subscribe_id")))
}

/// A numeric query parameter; `default` when it is missing or not a number (as MoviePilot's
/// paging falls back to its defaults).
fn number_param(req: &Req, name: &str, default: usize) -> usize {
    req.param(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn bad_int(dialect: Dialect, location: &str, field: &str) -> Resp {
    validation_error(
        dialect,
        vec![(
            location,
            field.into(),
            "value is not a valid integer",
            "type_error.integer",
        )],
    )
}

/// A type MoviePilot cannot read: v2.5.6 fails with an unhandled 500, v3 validates (422).
fn bad_type(dialect: Dialect, location: &str, field: &str) -> Resp {
    match dialect {
        Dialect::V2 => text_resp(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error"),
        Dialect::V3 => validation_error(
            dialect,
            vec![(
                location,
                field.into(),
                "Input should be '电影' or '电视剧'",
                "enum",
            )],
        ),
    }
}

/// v2.5.6 knows only the Chinese values; v3 also takes `movie`/`tv`.
fn parse_type(dialect: Dialect, value: &str) -> Option<MediaKind> {
    match (dialect, value) {
        (_, "电影") => Some(MediaKind::Movie),
        (_, "电视剧") => Some(MediaKind::Tv),
        (Dialect::V3, v) => MediaKind::from_wire(v),
        (Dialect::V2, _) => None,
    }
}

/// The TMDB id a media path names: v2 `tmdb:<id>`, v3 `<id>` plus the required
/// `media_source=themoviedb`. `Ok(None)`: another source, which this TMDB-only catalogue lacks.
fn media_id(dialect: Dialect, segment: &str, req: &Req) -> Result<Option<u64>, Early> {
    match dialect {
        Dialect::V2 => Ok(segment
            .strip_prefix("tmdb:")
            .and_then(|id| id.trim().parse().ok())),
        Dialect::V3 => match req.param("media_source") {
            None => Err(early(missing_param(dialect, "query", "media_source"))),
            Some("themoviedb" | "tmdb") => Ok(segment.trim().parse().ok()),
            Some(_) => Ok(None),
        },
    }
}

fn lenient_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Versions before v2.9 (v2.5.6 as measured, and v2.6 to v2.8 as seen on real servers) answer
/// `/system/global` without `BACKEND_VERSION`.
fn reports_backend_version(version: &str) -> bool {
    let mut parts = version
        .trim()
        .trim_start_matches(['v', 'V'])
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    let major = parts.next().flatten();
    let minor = parts.next().flatten().unwrap_or(0);
    match major {
        Some(m) if m < 2 => false,
        Some(2) => minor >= 9,
        _ => true,
    }
}

fn json_resp(status: StatusCode, body: &Value) -> Resp {
    bytes_resp(status, serde_json::to_vec(body).unwrap_or_default())
}

/// A JSON answer already serialised.
fn bytes_resp(status: StatusCode, body: impl Into<Bytes>) -> Resp {
    let mut resp = http::Response::new(body.into());
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

fn text_resp(status: StatusCode, body: &str) -> Resp {
    let mut resp = http::Response::new(Bytes::copy_from_slice(body.as_bytes()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// `%Y-%m-%d %H:%M:%S`, as MoviePilot writes `date` (its local time; UTC here).
fn local_time_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_the_real_shapes() {
        for text in [
            SUBSCRIBE_ROW,
            SUBSCRIBE_EMPTY,
            MEDIA_EMPTY,
            TOKEN,
            SERVARR_STATUS,
        ] {
            assert!(template(text).is_object());
        }
        let empty = template(SUBSCRIBE_EMPTY);
        assert!(empty.as_object().unwrap().values().all(Value::is_null));
        assert_eq!(
            template(SUBSCRIBE_ROW).as_object().unwrap().len(),
            empty.as_object().unwrap().len()
        );
    }

    #[test]
    fn only_versions_from_2_9_report_backend_version() {
        assert!(!reports_backend_version("v2.5.6"));
        assert!(!reports_backend_version("v1.9.19"));
        assert!(!reports_backend_version("v2.8.9"));
        assert!(reports_backend_version("v2.9.0"));
        assert!(reports_backend_version("v2.14.0"));
        assert!(reports_backend_version("v3.1.0"));
        assert!(reports_backend_version("v4.0.0"));
    }

    #[test]
    fn media_ids_are_percent_decoded() {
        assert_eq!(percent_decode("tmdb%3A108545"), "tmdb:108545");
        assert_eq!(percent_decode("100%"), "100%");
    }

    #[test]
    fn dates_look_like_moviepilots() {
        let date = local_time_now();
        assert_eq!(date.len(), 19, "{date}");
        assert_eq!(&date[4..5], "-");
        assert_eq!(&date[10..11], " ");
    }
}
