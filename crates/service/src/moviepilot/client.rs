//! The MoviePilot HTTP client: one shared, cloneable [`MoviePilot`] per process.
//!
//! Policy, in the order a call meets it:
//! - **Dialect.** [`MoviePilot::connect`] reads the server's version and speaks v2 or v3 from
//!   then on (paths, bodies, envelopes and methods differ; see `moviepilot-v3.md`). Any other
//!   major version is refused at start-up rather than half-understood.
//! - **Credentials.** The API key goes in `X-API-KEY`; a username and password buy a bearer token
//!   from `POST /api/v1/login/access-token`. There is one token per process. When MoviePilot
//!   refuses it (v2: 401/403; v3: 401, its 403 means "not allowed" and is a permanent error)
//!   exactly one caller logs in again while the others wait for that login (a generation
//!   counter tells them it happened), and every refused call is sent once more. A refused call
//!   did not run, so sending it again is safe even when it has a side effect. While logins are
//!   refused, the next one waits out a backoff (`gate`), deployment-wide when a [`LoginGate`]
//!   is shared ([`MoviePilot::share_logins`]). An account with two-factor login cannot log in
//!   (v3 says so with `X-MFA-Required`): the error says to use the API key.
//! - **Locale.** Every request asks for `zh-CN` (`X-MoviePilot-Locale` and `Accept-Language`):
//!   v3 translates `message` into the request's locale, and the few messages oncebot reads
//!   (未搜索到任何资源) are matched in Chinese.
//! - **Size.** Every body is read through `moviepilot.max_body_bytes`: a resource search's list
//!   is cut there (the results before the cut are kept and the list says it was cut), any other
//!   successful answer over it is a permanent error naming the setting. An error answer over it
//!   is classified by its status, its body cut.
//! - **Envelopes.** `success` is read first: `false` is a refusal with MoviePilot's message
//!   whatever `data` holds (v2.5.6 answers `data: {}` there), and only `success: true` has its
//!   `data` decoded.
//! - **Timeouts.** Every request has one. Media search and detail, which make MoviePilot ask
//!   TMDB, get the longer `search_timeout_secs`.
//! - **Classification** ([`MpError`]): a refusal (4xx, `success:false`) is permanent; a
//!   refused credential (the key, the login, the user's rights) is the operator's to fix, and
//!   the process remembers it until a call gets through ([`MoviePilot::credentials_refused`]);
//!   unreachable, 5xx or a read-only call that timed out is transient; a call with a side effect
//!   whose answer was lost after it was sent (timeout, dropped connection, a proxy's 502/504) is
//!   uncertain, because MoviePilot may have done it.
//! - **Secrets and torrent data.** No error or log line carries the API key, the password, a
//!   token, a URL's userinfo or a response body of a successful call; error text quotes at most
//!   MoviePilot's short `detail`/`message` of a refusal.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use bytes::Bytes;
use reqwest::header::{HeaderValue, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::error::{ListUsersError, MpError, Unreachable};
use super::gate::{LOGIN_BACKOFF_FIRST, LOGIN_BACKOFF_MAX, LoginGate, Turn, login_backoff};
use super::messages::HistoryMessage;
use super::releases::{HistoryRow, RawJson, ReleaseList, SearchAnswer};
use super::types::{
    CreatedId, Dialect, Download, EnvelopeHead, MediaItem, MediaKind, MpUser, NewSubscription,
    Subscription, WireDownload, WireMedia, WireSubscribe, WireToken, WireUser,
};
use crate::config::{MoviePilotSettings, Secret, env_name};

/// The fixed literal `/system/global` wants; it is not a secret (MoviePilot's frontend sends it).
const GLOBAL_TOKEN: &str = "moviepilot";

/// The locale every request asks for: the one oncebot matches MoviePilot's messages in. V3 reads
/// `X-MoviePilot-Locale` first, then `Accept-Language` (its web client sends both).
const LOCALE: &str = "zh-CN";

/// What v3 answers when nothing was found, in [`LOCALE`] (v2 answers it untranslated).
const NOTHING_FOUND: &str = "未搜索到";

/// The matches a media search asks MoviePilot for (its `count`; MoviePilot's own bot asks for
/// 8, one page): six pages of five, all a paged list keeps (`worker::pages`). A title with more
/// matches than that is better typed more precisely than paged through.
pub const MATCHES_ASKED: usize = 30;

/// A connected MoviePilot. Cheap to clone; every clone shares the HTTP pool and the token.
#[derive(Clone)]
pub struct MoviePilot {
    inner: Arc<Inner>,
}

impl fmt::Debug for MoviePilot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MoviePilot")
            .field("url", &self.inner.shown_url)
            .field("dialect", &self.inner.dialect)
            .field("version", &self.inner.version)
            .finish_non_exhaustive()
    }
}

struct Inner {
    http: reqwest::Client,
    /// Scheme, authority and path prefix, without a trailing `/`. May carry userinfo, so it is
    /// only ever used to build requests, never shown.
    base: String,
    /// `base` parsed once, without query or fragment: every call's URL is a clone of it with
    /// the call's path and query set, instead of a string that reqwest parses again (host,
    /// IDNA and all; about 2 % of the worker's instructions in the bench's drain).
    base_url: reqwest::Url,
    /// `base` without userinfo, for messages.
    shown_url: String,
    dialect: Dialect,
    /// As the server reported it, e.g. `v2.5.6`, or a description when it reports none.
    version: String,
    timeout: Duration,
    search_timeout: Duration,
    resource_search_timeout: Duration,
    download_timeout: Duration,
    /// `moviepilot.max_body_bytes`.
    max_body: usize,
    /// The deployment's login gate, once shared (`share_logins`).
    gate: std::sync::OnceLock<Arc<dyn LoginGate>>,
    /// This process's name at the gate.
    holder: String,
    /// How long the gate counts refusals in a row (`moviepilot.auth_wait_secs`, at least a
    /// minute).
    remember_refusals: Duration,
    auth: Auth,
    /// Why MoviePilot refuses oncebot's credentials, from the last call that was refused, until
    /// a call gets through. Text for operators (it may name settings), never for users.
    refused: std::sync::Mutex<Option<String>>,
    /// When a call last found MoviePilot not answering at all (milliseconds since the epoch;
    /// 0: never): how a restart sent before a crash is seen to have happened (`worker::restart`).
    unreachable_at: std::sync::atomic::AtomicU64,
}

struct Auth {
    api_key: Option<Secret>,
    login: Option<Login>,
    state: Mutex<TokenState>,
}

struct Login {
    username: String,
    password: Secret,
}

#[derive(Default)]
struct TokenState {
    /// The bearer token once logged in; until then (or in API-key mode) calls use the API key.
    bearer: Option<Secret>,
    /// Bumped by every successful login, so a caller that saw an older credential knows someone
    /// already renewed it.
    generation: u64,
    /// The last failed login and when it ended: callers that were already waiting for that
    /// login get its error instead of each trying again.
    last_failure: Option<(Instant, MpError)>,
    /// While logins are refused: no login before this instant, and this refusal instead.
    refused_until: Option<(Instant, MpError)>,
    /// Logins refused in a row (this process's count; the gate keeps the deployment's).
    refusals: u32,
}

impl TokenState {
    /// What a caller that saw `seen_generation` and began at `started` gets instead of a login
    /// of its own, at `now`: success when someone logged in meanwhile, the error of a login
    /// that failed since it began, or the refusal whose backoff has not run yet. `None`: it
    /// logs in.
    fn instead_of_login(
        &self,
        seen_generation: u64,
        started: Instant,
        now: Instant,
    ) -> Option<Result<(), MpError>> {
        if self.generation != seen_generation {
            return Some(Ok(()));
        }
        if let Some((at, error)) = &self.last_failure
            && *at >= started
        {
            return Some(Err(error.clone()));
        }
        if let Some((until, error)) = &self.refused_until
            && now < *until
        {
            return Some(Err(error.clone()));
        }
        None
    }

    /// Keeps a login's result: a token starts a new generation and forgets the failures; an
    /// error is what the callers waiting for this login get.
    fn record(&mut self, result: Result<Secret, MpError>, now: Instant) -> Result<(), MpError> {
        match result {
            Ok(token) => {
                self.bearer = Some(token);
                self.generation += 1;
                self.last_failure = None;
                self.refused_until = None;
                self.refusals = 0;
                Ok(())
            }
            Err(error) => {
                self.last_failure = Some((now, error.clone()));
                Err(error)
            }
        }
    }
}

enum Credential {
    None,
    ApiKey(Secret),
    Bearer(Secret),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    ReadOnly,
    /// Changes MoviePilot's state: a lost answer means "maybe done".
    SideEffect,
}

/// `GET /api/v1/subscribe/media/{id}`: a call's route with its ids taken out, so metrics
/// have one series per route, not one per subscription.
fn route_label(call: &Call) -> String {
    // One String, built in one pass: this runs for every MoviePilot call.
    let method = call.method.as_str();
    let mut label = String::with_capacity(method.len() + 1 + call.path.len());
    label.push_str(method);
    label.push(' ');
    let mut after_user = false;
    for (i, seg) in call.path.split('/').enumerate() {
        if i > 0 {
            label.push('/');
        }
        let all_digits = !seg.is_empty() && seg.bytes().all(|c| c.is_ascii_digit());
        if after_user && !seg.is_empty() {
            // `/subscribe/user/{username}`: a series per route, and no name in the metrics.
            label.push_str("{username}");
        } else if all_digits || seg.contains(':') {
            label.push_str("{id}");
        } else {
            label.push_str(seg);
        }
        after_user = seg == "user" && call.path.starts_with("/api/v1/subscribe/");
    }
    label
}

/// One request, described well enough to send it twice and to name it in an error. Built from
/// [`Call::get`] (or its siblings), which is read-only, without a query or a body and within the
/// client's timeout: a call site says only what differs.
struct Call {
    /// What the caller wanted, e.g. `subscribing TMDB 438631 season 1`.
    what: String,
    method: Method,
    /// Under the base URL, e.g. `/api/v1/subscribe/`.
    path: String,
    query: Vec<(&'static str, String)>,
    json: Option<Value>,
    effect: Effect,
    /// `None`: the client's own (`moviepilot.timeout_secs`); see [`Inner::timeout_of`].
    timeout: Option<Duration>,
}

impl Call {
    /// A read-only `method` request for `path`, within the client's timeout.
    fn new(method: Method, what: impl Into<String>, path: impl Into<String>) -> Call {
        Call {
            what: what.into(),
            method,
            path: path.into(),
            query: Vec::new(),
            json: None,
            effect: Effect::ReadOnly,
            timeout: None,
        }
    }

    fn get(what: impl Into<String>, path: impl Into<String>) -> Call {
        Call::new(Method::GET, what, path)
    }

    fn post(what: impl Into<String>, path: impl Into<String>) -> Call {
        Call::new(Method::POST, what, path)
    }

    fn put(what: impl Into<String>, path: impl Into<String>) -> Call {
        Call::new(Method::PUT, what, path)
    }

    fn delete(what: impl Into<String>, path: impl Into<String>) -> Call {
        Call::new(Method::DELETE, what, path)
    }

    /// Adds `name=value` to the query, after the pairs already there (the URL keeps this order).
    fn query(mut self, name: &'static str, value: impl ToString) -> Call {
        self.query.push((name, value.to_string()));
        self
    }

    /// [`Self::query`] when there is a value; nothing otherwise.
    fn query_opt(self, name: &'static str, value: Option<impl ToString>) -> Call {
        match value {
            Some(value) => self.query(name, value),
            None => self,
        }
    }

    /// The JSON body.
    fn json(mut self, body: Value) -> Call {
        self.json = Some(body);
        self
    }

    /// Changes MoviePilot's state (or, like a resource search, costs something outside it): an
    /// answer lost after the request left is "maybe done", never simply retried.
    fn side_effect(mut self) -> Call {
        self.effect = Effect::SideEffect;
        self
    }

    /// Within `timeout` instead of the client's.
    fn within(mut self, timeout: Duration) -> Call {
        self.timeout = Some(timeout);
        self
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MoviePilot {} {} ({})",
            self.method, self.path, self.what
        )
    }
}

struct Answer {
    status: StatusCode,
    retry_after: Option<String>,
    /// At most `moviepilot.max_body_bytes`.
    body: Bytes,
    /// The body was longer than the limit: `body` is its beginning.
    cut: bool,
}

impl Inner {
    /// The client the settings describe, before MoviePilot is asked anything (dialect v2 and
    /// no version until `connect` reads them).
    fn new(settings: &MoviePilotSettings) -> anyhow::Result<Inner> {
        let (base, base_url, shown_url) = base_urls(settings)?;
        let (api_key, login) = credentials(settings)?;
        let timeout = Duration::from_secs(settings.timeout_secs.max(1));
        Ok(Inner {
            http: http_client(timeout)?,
            base,
            base_url,
            shown_url,
            dialect: Dialect::V2,
            version: String::new(),
            timeout,
            search_timeout: Duration::from_secs(settings.search_timeout_secs.max(1)),
            resource_search_timeout: Duration::from_secs(
                settings.resource_search_timeout_secs.max(1),
            ),
            download_timeout: Duration::from_secs(settings.download_timeout_secs.max(1)),
            max_body: usize::try_from(settings.max_body_bytes).unwrap_or(usize::MAX),
            gate: std::sync::OnceLock::new(),
            holder: format!("{}-{:08x}", std::process::id(), rand::random::<u32>()),
            remember_refusals: Duration::from_secs(settings.auth_wait_secs.max(60)),
            auth: Auth {
                api_key,
                login,
                state: Mutex::new(TokenState::default()),
            },
            refused: std::sync::Mutex::new(None),
            unreachable_at: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// How long `call` may take: its own time, or the client's (`moviepilot.timeout_secs`).
    fn timeout_of(&self, call: &Call) -> Duration {
        call.timeout.unwrap_or(self.timeout)
    }

    fn saw_unreachable(&self) {
        self.unreachable_at
            .store(epoch_ms(), std::sync::atomic::Ordering::Relaxed);
    }
}

fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The HTTP client every call goes through: MoviePilot's texts in Chinese (`LOCALE`), and a
/// connection that does not answer within `timeout` (at most 5 s) is given up.
fn http_client(timeout: Duration) -> anyhow::Result<reqwest::Client> {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-moviepilot-locale", HeaderValue::from_static(LOCALE));
    headers.insert(
        reqwest::header::ACCEPT_LANGUAGE,
        HeaderValue::from_static(LOCALE),
    );
    reqwest::Client::builder()
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .default_headers(headers)
        .build()
        .map_err(|e| anyhow!("building the MoviePilot HTTP client: {}", e.without_url()))
}

impl MoviePilot {
    /// Reads the server's version (`GET /api/v1/system/global?token=moviepilot` →
    /// `data.BACKEND_VERSION`; a missing key means v2 before 2.6, refined by
    /// `/api/v3/system/status` when an API key is configured; otherwise the shape of
    /// `GET /api/v1/subscribe/` decides), refuses major versions other than 2 and 3, and checks
    /// that the credentials open the subscription routes. With only an API key, a server that
    /// refuses it there (v2.5.6) gives an error naming ONCEBOT__MOVIEPILOT__USERNAME and
    /// ONCEBOT__MOVIEPILOT__PASSWORD. With both, the API key is tried first and the login is
    /// the fallback.
    /// An error that is [`Unreachable`] may go away by itself (MoviePilot still starting); any
    /// other is a setting to fix.
    pub async fn connect(settings: &MoviePilotSettings) -> anyhow::Result<MoviePilot> {
        let mut inner = Inner::new(settings)?;
        let reported = inner.read_version().await?;
        let by_version = reported
            .as_deref()
            .map(|v| dialect_of_version(v, &inner.shown_url))
            .transpose()?
            .flatten();
        inner.version = reported.unwrap_or_else(|| "unknown".to_string());
        let probe = inner.establish_auth().await?;
        inner.dialect = choose_dialect(&inner, by_version, dialect_of_answer(&probe.body))?;
        let via = match &inner.auth.state.lock().await.bearer {
            Some(_) => "login",
            None => "api key",
        };
        tracing::info!(
            url = %inner.shown_url,
            version = %inner.version,
            dialect = %inner.dialect,
            auth = via,
            "connected to MoviePilot"
        );
        Ok(MoviePilot {
            inner: Arc::new(inner),
        })
    }

    /// The API dialect chosen at start-up.
    pub fn dialect(&self) -> Dialect {
        self.inner.dialect
    }

    /// The version MoviePilot reported (e.g. `v2.5.6`), or a description when it reported none.
    pub fn version(&self) -> &str {
        &self.inner.version
    }

    /// Makes this process's logins go through `gate`, the deployment's: one login at a time
    /// across processes, none while a refusal's backoff runs. Set once; later calls are ignored.
    pub fn share_logins(&self, gate: Arc<dyn LoginGate>) {
        let _ = self.inner.gate.set(gate);
    }

    /// The MoviePilot user oncebot logs in as (`moviepilot.username`), `None` with an API key
    /// alone: whose subscriptions an asker without a MoviePilot name of their own owns.
    pub fn service_username(&self) -> Option<&str> {
        self.inner.auth.login.as_ref().map(|l| l.username.as_str())
    }

    /// Why MoviePilot refuses oncebot's credentials now (operator text, naming the setting to
    /// fix), or `None` when the last call that reached it was let in.
    pub fn credentials_refused(&self) -> Option<String> {
        self.inner.lock_refused().clone()
    }

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

    /// The subscription MoviePilot holds for this media (and season, for TV), if any. MoviePilot
    /// answers an all-null object for "none"; a row for another id or season is treated as none
    /// too. Without a season MoviePilot matches any subscription with that TMDB id (a movie's),
    /// whatever its type, so callers should compare `kind`.
    pub async fn find_subscription(
        &self,
        tmdb_id: u64,
        season: Option<u32>,
    ) -> Result<Option<Subscription>, MpError> {
        let season = season.filter(|s| *s > 0);
        let what = format!(
            "looking up the subscription of {}",
            media_label(tmdb_id, season)
        );
        let call = self
            .inner
            .get_media(what, "/api/v1/subscribe/media", tmdb_id)
            .query_opt("season", season);
        let answer = self.inner.call(&call).await?;
        let answer = self.inner.check_status(&call, answer)?;
        let row: Option<WireSubscribe> = self.inner.decode(&call, &answer)?;
        let Some(sub) = row.and_then(WireSubscribe::into_subscription) else {
            return Ok(None);
        };
        let other_media = sub.tmdb_id.is_some_and(|t| t != tmdb_id);
        let other_season = season.is_some_and(|s| sub.season.is_some_and(|have| have != s));
        if other_media || other_season {
            tracing::warn!(
                subscription = sub.id,
                asked_tmdb = tmdb_id,
                got_tmdb = ?sub.tmdb_id,
                "MoviePilot answered a subscription for other media or season; treating it as none"
            );
            return Ok(None);
        }
        Ok(Some(sub))
    }

    /// Subscribes and returns the subscription id. MoviePilot answers an existing subscription's
    /// id for a duplicate (same TMDB id, and season for TV), so this is safe to repeat, though
    /// v2 re-sends its "subscription added" notification each time.
    pub async fn create_subscription(&self, item: &NewSubscription) -> Result<u64, MpError> {
        let season = match item.kind {
            MediaKind::Tv => item.season.filter(|s| *s > 0),
            MediaKind::Movie => None,
        };
        let body = match self.inner.dialect {
            // What MoviePilot's own web UI sends; season 0 means "none" (movies) or "1" (TV).
            Dialect::V2 => json!({
                "name": item.name,
                "year": item.year,
                "type": item.kind.wire_name(),
                "tmdbid": item.tmdb_id,
                "season": season.unwrap_or(0),
            }),
            Dialect::V3 => {
                let mut body = json!({
                    "name": item.name,
                    "year": item.year,
                    "type": item.kind.wire_name(),
                    "media_source": "themoviedb",
                    "media_id": item.tmdb_id.to_string(),
                });
                if let (Some(s), Some(map)) = (season, body.as_object_mut()) {
                    map.insert("season".into(), json!(s));
                }
                body
            }
        };
        let mut body = body;
        if item.best {
            body["best_version"] = json!(1);
        }
        let what = format!("subscribing {}", media_label(item.tmdb_id, season));
        let call = Call::post(what, "/api/v1/subscribe/")
            .json(body)
            .side_effect();
        let answer = self.inner.call(&call).await?;
        let answer = self.inner.check_status(&call, answer)?;
        let created: Option<CreatedId> = self.inner.accepted(&call, &answer)?;
        match created.and_then(|d| d.id) {
            Some(id) => Ok(id),
            None => Err(MpError::Uncertain(format!(
                "{call}: MoviePilot answered success without a subscription id"
            ))),
        }
    }

    /// Every subscription (`GET /api/v1/subscribe/`).
    pub async fn list_subscriptions(&self) -> Result<Vec<Subscription>, MpError> {
        let call = Call::get("listing subscriptions", "/api/v1/subscribe/");
        let rows: Vec<WireSubscribe> = self.inner.fetch_list(&call).await?;
        Ok(rows
            .into_iter()
            .filter_map(WireSubscribe::into_subscription)
            .collect())
    }

    /// The subscriptions `username` owns (`GET /api/v1/subscribe/user/{username}`: v2.5.6
    /// `app/api/endpoints/subscribe.py` `user_subscribes`, a bare list; the newest line in the
    /// envelope). "My subscriptions" in MoviePilot's own web UI. The name is one path segment
    /// (`path_segment`); one that cannot be (`.`, `..`, empty) is refused, nothing sent.
    pub async fn user_subscriptions(&self, username: &str) -> Result<Vec<Subscription>, MpError> {
        let segment = crate::path_segment::encode(username)
            .map_err(|e| MpError::Permanent(format!("listing a user's subscriptions: {e}")))?;
        let call = Call::get(
            format!("listing {username:?}'s subscriptions"),
            format!("/api/v1/subscribe/user/{segment}"),
        );
        let rows: Vec<WireSubscribe> = self.inner.fetch_list(&call).await?;
        Ok(rows
            .into_iter()
            .filter_map(WireSubscribe::into_subscription)
            .collect())
    }

    /// Makes `username` the owner of subscription `id`; `false` when this MoviePilot cannot
    /// (nothing was sent). MoviePilot's create sets the owner to the calling account whatever
    /// the body says (v2.5.6 `subscribe.py` L79). v2's update (`PUT /api/v1/subscribe/`, v2.5.6
    /// L89-124) writes `username` as sent and every field the body leaves out as the schema's
    /// default (from v2.9.0 a null too), so the row is read (`GET /api/v1/subscribe/{id}`), its
    /// `username` changed and written back whole: every other field keeps MoviePilot's value.
    /// Safe to repeat. v3's update keeps the owner whatever it is sent (`username` is one of
    /// its server-controlled fields, pinned to the stored one), so on v3 this does nothing.
    pub async fn set_subscription_owner(&self, id: u64, username: &str) -> Result<bool, MpError> {
        if self.inner.dialect == Dialect::V3 {
            return Ok(false);
        }
        let read = Call::get(
            format!("reading subscription {id}"),
            format!("/api/v1/subscribe/{id}"),
        );
        let answer = self.inner.call(&read).await?;
        let answer = self.inner.check_status(&read, answer)?;
        let mut row: serde_json::Map<String, Value> = self
            .inner
            .decode(&read, &answer)?
            .ok_or_else(|| self.inner.unexpected_body(&read, &answer))?;
        if row.get("id").and_then(Value::as_u64) != Some(id) {
            return Err(MpError::Permanent(format!(
                "{read}: MoviePilot answered another row or an empty one"
            )));
        }
        row.insert("username".into(), json!(username));
        let what = format!("making {username} the owner of subscription {id}");
        let write = Call::put(what, "/api/v1/subscribe/")
            .json(Value::Object(row))
            .side_effect();
        let answer = self.inner.call(&write).await?;
        let answer = self.inner.check_status(&write, answer)?;
        let _: Option<Value> = self.inner.accepted(&write, &answer)?;
        Ok(true)
    }

    /// Every MoviePilot user (`GET /api/v1/user/`: `list_users` in v2.5.6's
    /// `app/api/endpoints/user.py`, behind `get_current_active_superuser`; the newest line has
    /// the same route and dependency, its answer in the envelope). Only a superuser may list
    /// them: anyone else gets [`ListUsersError::NotSuperuser`].
    pub async fn list_users(&self) -> Result<Vec<MpUser>, ListUsersError> {
        let call = Call::get("listing MoviePilot's users", "/api/v1/user/");
        let answer = self.inner.call(&call).await?;
        if self.inner.refuses_non_superuser(&answer) {
            return Err(ListUsersError::NotSuperuser(format!(
                "{call}: HTTP {}{}: the MoviePilot account oncebot acts as is not a superuser, so \
                 MoviePilot's own mapping (each user's telegram_userid) cannot be read and only \
                 telegram.users maps users; make that account a superuser in MoviePilot, or use \
                 {} (the API key acts as the superuser where MoviePilot accepts it)",
                answer.status.as_u16(),
                detail_suffix(&answer.body),
                env_name("moviepilot.api_key")
            )));
        }
        let rows: Vec<WireUser> = self.inner.rows_of(&call, answer)?.0;
        Ok(rows.into_iter().map(WireUser::into_user).collect())
    }

    /// Deletes a subscription. Idempotent: v2 answers success for any id, and v3's 404 for an
    /// unknown id counts as "already done".
    pub async fn delete_subscription(&self, id: u64) -> Result<(), MpError> {
        let call = Call::delete(
            format!("deleting subscription {id}"),
            format!("/api/v1/subscribe/{id}"),
        )
        .side_effect();
        let answer = self.inner.call(&call).await?;
        if self.inner.dialect == Dialect::V3 && answer.status == StatusCode::NOT_FOUND {
            return Ok(());
        }
        let answer = self.inner.check_status(&call, answer)?;
        let _: Option<Value> = self.inner.accepted(&call, &answer)?;
        Ok(())
    }

    /// Asks MoviePilot to search for a subscription now (v2 and v3.0.0 `GET`, v3.0.1 on `POST
    /// /api/v1/subscribe/search/{id}`; a v3 that answers the POST 405 is asked with GET, since a
    /// 405 did not run). Success only means the job was queued: MoviePilot skips it silently
    /// when a search is already running or the subscription is under a minute old.
    pub async fn search_subscription_now(&self, id: u64) -> Result<(), MpError> {
        let post = self.inner.dialect == Dialect::V3 && !search_trigger_is_get(&self.inner.version);
        let trigger = |method: Method| {
            let what = format!("starting a search for subscription {id}");
            Call::new(method, what, format!("/api/v1/subscribe/search/{id}")).side_effect()
        };
        let mut call = match post {
            true => trigger(Method::POST).json(json!({})),
            false => trigger(Method::GET),
        };
        let mut answer = self.inner.call(&call).await?;
        if post && answer.status == StatusCode::METHOD_NOT_ALLOWED {
            tracing::info!(
                version = %self.inner.version,
                "MoviePilot has no POST search trigger (v3.0.0 has only GET); asking with GET"
            );
            call = trigger(Method::GET);
            answer = self.inner.call(&call).await?;
        }
        let answer = self.inner.check_status(&call, answer)?;
        let _: Option<Value> = self.inner.accepted(&call, &answer)?;
        Ok(())
    }

    /// What the downloader is working on (`GET /api/v1/download/`).
    pub async fn downloading(&self) -> Result<Vec<Download>, MpError> {
        let call = Call::get("listing downloads", "/api/v1/download/");
        let rows: Vec<WireDownload> = self.inner.fetch_list(&call).await?;
        Ok(rows.into_iter().map(WireDownload::into_download).collect())
    }
}

/// What starting one of MoviePilot's scheduler jobs came to (`MoviePilot::run_scheduler`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedulerRun {
    /// MoviePilot answered: it ran the job to its end. (It answers the same when it skipped
    /// the run because the job was already running, or has no such job: its answer cannot tell.)
    Finished,
    /// The request went out and no answer came within the call's time: MoviePilot answers only
    /// when the job ends, which for a search of every subscription takes hours. `detail` says
    /// what happened to the call.
    Started { detail: String },
    /// MoviePilot's scheduler listed the job as running already: nothing was started.
    AlreadyRunning,
}

impl SchedulerRun {
    /// The job's `mp_outcome`.
    pub fn outcome(&self) -> &'static str {
        match self {
            SchedulerRun::Finished => "finished",
            SchedulerRun::Started { .. } => "started",
            SchedulerRun::AlreadyRunning => "already_running",
        }
    }
}

/// A row of `GET /api/v1/dashboard/schedule` (v2.5.6 `app/api/endpoints/dashboard.py`
/// `schedule`, a bare list of `ScheduleInfo`): only what tells a running job.
#[derive(Debug, serde::Deserialize)]
struct WireSchedule {
    #[serde(default)]
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    status: String,
}

/// Rows per page when looking for one transfer record, and the most pages read.
const TRANSFER_PAGE: usize = 50;
const TRANSFER_MAX_PAGES: usize = 20;

/// `data` of `GET /api/v1/history/transfer`.
#[derive(Debug, Default, serde::Deserialize)]
struct WireTransferPage {
    #[serde(default)]
    list: Vec<Value>,
}

/// One transfer history record, as `/redo` names it before asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferRecord {
    pub id: u64,
    /// What was filed (the downloaded file or folder).
    pub src: String,
    /// Where it was filed: what a redo deletes first.
    pub dest: String,
    pub title: String,
    /// Whether the filing succeeded.
    pub succeeded: bool,
}

impl TransferRecord {
    /// Row `row` if it is record `id` (`TransferHistory`: id, src, dest, title, status).
    fn from_wire(row: &Value, id: u64) -> Option<TransferRecord> {
        let row_id = match row.get("id")? {
            Value::Number(n) => n.as_u64()?,
            Value::String(s) => s.trim().parse().ok()?,
            _ => return None,
        };
        if row_id != id {
            return None;
        }
        let text = |name: &str| {
            let raw = row.get(name).and_then(Value::as_str).unwrap_or("");
            short(&crate::untrusted::clean_line(raw), 300)
        };
        Some(TransferRecord {
            id,
            src: text("src"),
            dest: text("dest"),
            title: text("title"),
            succeeded: row.get("status").and_then(Value::as_bool).unwrap_or(true),
        })
    }
}

/// The house commands (issue 23): MoviePilot's scheduler jobs, started once.
impl MoviePilot {
    /// Starts scheduler job `job_id` (`GET /api/v1/system/runscheduler?jobid=`, a superuser's;
    /// v2.5.6 `app/api/endpoints/system.py` L538-547, the same route in the newest v2 and in
    /// v3). Looks first whether the scheduler lists it as running (`GET
    /// /api/v1/dashboard/schedule`, status 正在运行): then nothing is sent. MoviePilot runs the
    /// job inside the request, so a call that goes out and gets no answer in time is a job
    /// under way, not a failure; one that never left (refused, unreachable) is transient.
    pub async fn run_scheduler(&self, job_id: &str) -> Result<SchedulerRun, MpError> {
        if self.scheduler_running(job_id).await {
            return Ok(SchedulerRun::AlreadyRunning);
        }
        let what = format!("starting MoviePilot's scheduler job {job_id}");
        let call = Call::get(what, "/api/v1/system/runscheduler")
            .query("jobid", job_id)
            .side_effect();
        let answer = match self.inner.call(&call).await {
            Ok(answer) => answer,
            Err(MpError::Uncertain(detail)) => return Ok(SchedulerRun::Started { detail }),
            Err(e) => return Err(e),
        };
        let answer = match self.inner.check_status(&call, answer) {
            Ok(answer) => answer,
            // A proxy's 502/504 while MoviePilot works on the request: under way as well.
            Err(MpError::Uncertain(detail)) => return Ok(SchedulerRun::Started { detail }),
            Err(e) => return Err(e),
        };
        let _: Option<Value> = self.inner.accepted(&call, &answer)?;
        Ok(SchedulerRun::Finished)
    }

    /// Restarts MoviePilot (`GET /api/v1/system/restart`, a superuser's; v2.5.6
    /// `app/api/endpoints/system.py` L524-535, the same route in the newest v2 and v3). It
    /// refuses with `success: false` and a reason where it cannot restart itself (not in Docker:
    /// 当前运行环境不支持重启操作！ / 非Docker环境，无法重启！): that is `Declined`, with its words.
    /// An answer lost on the way is `Uncertain`: MoviePilot may be going down already.
    pub async fn restart(&self) -> Result<(), MpError> {
        let call = Call::get("restarting MoviePilot", "/api/v1/system/restart").side_effect();
        let answer = self.inner.call(&call).await?;
        // MoviePilot stops its own work before it restarts: an error after that is no proof
        // that nothing happened, so the restart is watched, not sent again.
        self.inner.uncertain_on_server_error(
            &call,
            &answer,
            "MoviePilot may be restarting already",
        )?;
        let answer = self.inner.check_status(&call, answer)?;
        self.inner.done_or_declined(&call, &answer)
    }

    /// When this process last found MoviePilot not answering at all (a refused connection, a
    /// failed probe, or [`Self::saw_unreachable_at`] from before it connected); `None`: never.
    pub fn last_unreachable(&self) -> Option<std::time::SystemTime> {
        let ms = self
            .inner
            .unreachable_at
            .load(std::sync::atomic::Ordering::Relaxed);
        (ms > 0).then(|| std::time::UNIX_EPOCH + Duration::from_millis(ms))
    }

    /// Records that MoviePilot did not answer at `at` (the connections tried at start-up,
    /// before this client existed).
    pub fn saw_unreachable_at(&self, at: std::time::SystemTime) {
        let ms = at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        self.inner
            .unreachable_at
            .fetch_max(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether MoviePilot answers at all now (`GET /api/v1/system/global`, no credentials: a
    /// login does not survive a restart), within `within`. What a restart is watched with.
    pub async fn is_answering(&self, within: Duration) -> bool {
        let call = Call::get("asking whether MoviePilot answers", "/api/v1/system/global")
            .query("token", GLOBAL_TOKEN)
            .within(within);
        let up = matches!(self.inner.send(&call, &Credential::None).await, Ok(a) if a.status.is_success());
        if !up {
            self.inner.saw_unreachable();
        }
        up
    }

    /// The scheduler jobs MoviePilot is running now, by name (best effort: empty when the
    /// scheduler cannot be read). What a restart would cut off.
    pub async fn running_scheduler_jobs(&self) -> Vec<String> {
        match self.schedule().await {
            Ok(rows) => rows
                .into_iter()
                .filter(|r| r.status == "正在运行")
                .map(|r| {
                    let name = if r.name.is_empty() { r.id } else { r.name };
                    short(&crate::untrusted::clean_line(&name), 60)
                })
                .collect(),
            Err(e) => {
                tracing::info!(error = %e, "could not read MoviePilot's scheduler");
                Vec::new()
            }
        }
    }

    /// Transfer history record `id` (`GET /api/v1/history/transfer?page=&count=`, v2.5.6
    /// `app/api/endpoints/history.py` L42-71, `{data: {list, total}}`, newest first): MoviePilot
    /// has no route for one record, so pages are read until it is found or the history ends
    /// (at most `TRANSFER_MAX_PAGES` pages). `None`: no such record.
    pub async fn transfer_record(&self, id: u64) -> Result<Option<TransferRecord>, MpError> {
        for page in 1..=TRANSFER_MAX_PAGES {
            let what = format!("reading the transfer history, page {page}");
            let call = Call::get(what, "/api/v1/history/transfer")
                .query("page", page)
                .query("count", TRANSFER_PAGE);
            let answer = self.inner.call(&call).await?;
            let answer = self.inner.check_status(&call, answer)?;
            let list: WireTransferPage = self.inner.accepted(&call, &answer)?.unwrap_or_default();
            if let Some(found) = list
                .list
                .iter()
                .find_map(|row| TransferRecord::from_wire(row, id))
            {
                return Ok(Some(found));
            }
            if list.list.len() < TRANSFER_PAGE {
                return Ok(None);
            }
        }
        Ok(None)
    }

    /// Files transfer record `id` again (`POST /api/v1/transfer/manual` with `{"logid": id,
    /// "from_history": true}`, a superuser's; v2.5.6 `app/api/endpoints/transfer.py` L70-165):
    /// MoviePilot deletes what the record filed (unless it was moved), then files the source
    /// again, and answers when done. It refuses in words (整理记录不存在: the record is gone,
    /// also because a redo replaced it with a new one): `Declined`.
    pub async fn redo_transfer(&self, id: u64) -> Result<(), MpError> {
        let call = Call::post(
            format!("filing transfer record {id} again"),
            "/api/v1/transfer/manual",
        )
        .json(json!({"logid": id, "from_history": true}))
        .side_effect()
        .within(self.inner.download_timeout);
        let answer = self.inner.call(&call).await?;
        // The delete may have happened before the error: never a retry, a person's call.
        self.inner.uncertain_on_server_error(
            &call,
            &answer,
            "MoviePilot may have deleted the earlier file already",
        )?;
        let answer = self.inner.check_status(&call, answer)?;
        self.inner.done_or_declined(&call, &answer)
    }

    /// The scheduler's jobs with their state (`GET /api/v1/dashboard/schedule`).
    async fn schedule(&self) -> Result<Vec<WireSchedule>, MpError> {
        let call = Call::get(
            "reading MoviePilot's scheduler",
            "/api/v1/dashboard/schedule",
        );
        self.inner.fetch_list(&call).await
    }

    /// Whether the scheduler lists `job_id` as running now. Best effort: a MoviePilot that
    /// does not list it (v2.5.6 lists only jobs with a timer) or cannot be asked reads as "not
    /// running", and the start goes ahead (MoviePilot itself skips a job already running).
    async fn scheduler_running(&self, job_id: &str) -> bool {
        match self.schedule().await {
            Ok(rows) => rows
                .iter()
                .any(|r| r.id == job_id && r.status == "正在运行"),
            Err(e) => {
                tracing::info!(error = %e, "could not read MoviePilot's scheduler; starting the job anyway");
                false
            }
        }
    }
}

/// The notification relay's source (see `messages`).
impl MoviePilot {
    /// One page of the message history (`GET /api/v1/message/web?page=&count=`), as answered:
    /// every row that parses, and how many rows the page had (a page shorter than `count` is
    /// the last; a row that does not parse still counts).
    pub async fn message_history(
        &self,
        page: usize,
        count: usize,
    ) -> Result<(Vec<HistoryMessage>, usize), MpError> {
        let what = format!("reading the message history, page {page}");
        let call = Call::get(what, "/api/v1/message/web")
            .query("page", page)
            .query("count", count);
        self.inner.fetch_rows(&call).await
    }
}

/// The error a login's answer is, before its token is read: two-factor login on (oncebot cannot
/// answer it: the API key is the way), the username or password refused, or another failure
/// (transient for a 5xx or 429). `None` for a success.
fn login_refusal(
    what: &str,
    username: &str,
    status: StatusCode,
    two_factor: bool,
    body: &[u8],
) -> Option<MpError> {
    if two_factor {
        return Some(MpError::CredentialsRefused(format!(
            "{what}: MoviePilot user {:?} has two-factor login on (HTTP {} with X-MFA-Required), \
             which oncebot cannot answer: set {} to MoviePilot's API_TOKEN (its settings \
             page; v3 takes it on every route) and leave {} and {} empty, or turn two-factor \
             login off for that user",
            username,
            status.as_u16(),
            env_name("moviepilot.api_key"),
            env_name("moviepilot.username"),
            env_name("moviepilot.password")
        )));
    }
    if matches!(status.as_u16(), 401 | 403) {
        return Some(MpError::CredentialsRefused(format!(
            "{what}: MoviePilot refused the username or password (HTTP {}{}): check {} and {}",
            status.as_u16(),
            detail_suffix(body),
            env_name("moviepilot.username"),
            env_name("moviepilot.password")
        )));
    }
    if status.is_success() {
        return None;
    }
    let why = format!("HTTP {}{}", status.as_u16(), detail_suffix(body));
    Some(if status.is_server_error() || status.as_u16() == 429 {
        MpError::Transient(format!("{what}: {why}"))
    } else {
        MpError::Permanent(format!("{what}: {why}"))
    })
}

/// What a resource search's answer amounts to, from its envelope and whether its body was
/// cut at `moviepilot.max_body_bytes`.
#[derive(Debug, PartialEq, Eq)]
enum SearchVerdict {
    /// A list of releases (or the beginning of one, when cut).
    Listed,
    /// MoviePilot's "nothing found" (`success:false`, 未搜索到任何资源): an empty list.
    NothingFound,
    /// Any other `success:false`, with MoviePilot's message.
    Refused(String),
    /// Cut before it could be read as a list: over the limit.
    TooLarge,
    /// Neither a list nor a refusal.
    Unexpected,
}

/// `success` decides before `data` is looked at; a cut body that had begun a list of results
/// counts as one.
fn search_verdict(read: &SearchAnswer, cut: bool) -> SearchVerdict {
    let listed = match read.success {
        Some(true) => true,
        // Cut before `success` (the real server puts it first, serde_json's maps last):
        // a list of results is a success.
        None if cut && read.data_is_list => true,
        Some(false) => {
            let message = read.message.clone().unwrap_or_default();
            return match message.contains(NOTHING_FOUND) {
                true => SearchVerdict::NothingFound,
                false => SearchVerdict::Refused(message),
            };
        }
        None => false,
    };
    // A whole body must also be whole JSON; a cut one is broken by being cut.
    if listed && (cut || !read.broken) {
        SearchVerdict::Listed
    } else if cut {
        SearchVerdict::TooLarge
    } else {
        SearchVerdict::Unexpected
    }
}

/// Rows asked for per page of the download history; a shorter page is the last.
const HISTORY_PAGE: usize = 100;
/// The most history pages read in one look (50,000 rows): a bound, not an expectation.
const HISTORY_MAX_PAGES: usize = 500;

/// Release search and downloads (`moviepilot-download-flow.md` §1-3).
impl MoviePilot {
    /// A resource search for one media (`GET /api/v1/search/media/tmdb:<id>?mtype=&season=`,
    /// v3 `/<id>?media_source=themoviedb`). Synchronous at MoviePilot: it answers after every
    /// indexer site has, so it has its own long timeout. Keeps the first `keep` releases and
    /// counts the rest; an answer over `moviepilot.max_body_bytes` is cut there (the list says
    /// so). `success` decides before `data` is looked at: MoviePilot's "nothing found"
    /// (`success:false`, 未搜索到任何资源) is an empty list, any other refusal (未识别到TMDB媒体信息,
    /// 未知的媒体ID, 媒体ID格式无效) a permanent error with MoviePilot's message.
    pub async fn search_releases(
        &self,
        tmdb_id: u64,
        kind: MediaKind,
        season: Option<u32>,
        keep: usize,
    ) -> Result<ReleaseList, MpError> {
        let call = self.search_call(tmdb_id, kind, season);
        let answer = self.inner.call(&call).await?;
        // A list cut at the limit is still a list: the size check is this route's own.
        let answer = self.inner.check_code(&call, answer)?;
        let read = SearchAnswer::read(&answer.body, keep);
        match search_verdict(&read, answer.cut) {
            SearchVerdict::Listed => {}
            SearchVerdict::NothingFound => return Ok(ReleaseList::empty()),
            SearchVerdict::Refused(message) => {
                return Err(self.inner.refused(&call, Some(&message)));
            }
            SearchVerdict::TooLarge => return Err(self.inner.too_large(&call)),
            SearchVerdict::Unexpected => return Err(self.inner.unexpected_body(&call, &answer)),
        }
        if answer.cut {
            tracing::warn!(
                read = read.total,
                limit = self.inner.max_body,
                "{call}: the answer is larger than {}; kept the results before the cut",
                env_name("moviepilot.max_body_bytes")
            );
        }
        Ok(ReleaseList {
            media_info: RawJson(read.media_info.unwrap_or(Value::Null)),
            releases: read.releases,
            total: read.total,
            cut: answer.cut,
        })
    }

    /// The resource search's call: the media's path in this dialect, its kind and season.
    fn search_call(&self, tmdb_id: u64, kind: MediaKind, season: Option<u32>) -> Call {
        let what = format!("searching releases of {}", media_label(tmdb_id, season));
        self.inner
            .get_media(what, "/api/v1/search/media", tmdb_id)
            .query("mtype", kind.wire_name())
            .query_opt("season", season)
            // Read-only at MoviePilot, but it asks every indexer site: an answer lost after the
            // request left is uncertain (the sites were hit), so it is not retried blindly.
            .side_effect()
            .within(self.inner.resource_search_timeout)
    }

    /// Adds a download (`POST /api/v1/download/` with `media_in`, `torrent_in` and `downloader`
    /// as the web UI sends them) and returns its info-hash (`download_id`). MoviePilot has no
    /// idempotency: a lost answer is uncertain and must be verified in the history.
    pub async fn add_download(
        &self,
        media_info: &Value,
        torrent_info: &Value,
        downloader: Option<&str>,
    ) -> Result<String, MpError> {
        let mut body = json!({"media_in": media_info, "torrent_in": torrent_info});
        if let Some(d) = downloader.filter(|d| !d.is_empty()) {
            body["downloader"] = json!(d);
        }
        let call = Call::post("adding a download", "/api/v1/download/")
            .json(body)
            .side_effect()
            .within(self.inner.download_timeout);
        let answer = self.inner.call(&call).await?;
        let answer = self.inner.check_status(&call, answer)?;
        let data: Option<Value> = self.inner.accepted(&call, &answer)?;
        match data
            .as_ref()
            .and_then(|d| d.get("download_id"))
            .and_then(Value::as_str)
        {
            Some(hash) if !hash.is_empty() => Ok(hash.to_ascii_lowercase()),
            _ => Err(MpError::Uncertain(format!(
                "{call}: MoviePilot answered success without a download id"
            ))),
        }
    }

    /// The whole download history (`GET /api/v1/history/download?page=&count=`), page by page
    /// until a short page. Its order differs by version (oldest first in v2.5.6 and v2.14,
    /// newest first later), so callers must not rely on it.
    pub async fn download_history(&self) -> Result<Vec<HistoryRow>, MpError> {
        let mut rows = Vec::new();
        for page in 1..=HISTORY_MAX_PAGES {
            let what = format!("reading the download history, page {page}");
            let call = Call::get(what, "/api/v1/history/download")
                .query("page", page)
                .query("count", HISTORY_PAGE);
            let got: Vec<Value> = self.inner.fetch_list(&call).await?;
            let short_page = got.len() < HISTORY_PAGE;
            rows.extend(got.iter().filter_map(HistoryRow::from_wire));
            if short_page {
                return Ok(rows);
            }
        }
        Err(MpError::Transient(format!(
            "the download history has more than {} rows; oncebot stops reading there",
            HISTORY_PAGE * HISTORY_MAX_PAGES
        )))
    }

    /// The info-hashes of what the downloader is downloading (`GET /api/v1/download/`),
    /// lower case: where a magnet added moments ago shows up.
    pub async fn downloading_hashes(&self) -> Result<Vec<String>, MpError> {
        let call = Call::get("listing downloads", "/api/v1/download/");
        let rows: Vec<Value> = self.inner.fetch_list(&call).await?;
        Ok(rows
            .iter()
            .filter_map(|r| r.get("hash").and_then(Value::as_str))
            .map(str::to_ascii_lowercase)
            .collect())
    }

    /// How many media servers MoviePilot has enabled (`GET /api/v1/mediaserver/clients`): none
    /// means its library answers say nothing (everything "missing"). Within `within`.
    pub(super) async fn media_servers(&self, within: Duration) -> Result<usize, MpError> {
        let call =
            Call::get("listing the media servers", "/api/v1/mediaserver/clients").within(within);
        let rows: Vec<Value> = self.inner.fetch_list(&call).await?;
        Ok(rows.len())
    }

    /// `POST /api/v1/mediaserver/<route>` (`notexists`, `exists_remote`) with the media as
    /// MoviePilot's `MediaInfo` names it (v3 also by `media_source` + `media_id`); the answer's
    /// payload, bare (v2) or from its envelope (v3). Within `within`.
    pub(super) async fn library_route(
        &self,
        route: &str,
        media: &super::library::LibraryMedia,
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

impl Inner {
    /// A `GET` of TMDB media under `prefix`, the path and query naming it as this dialect does:
    /// v2 `prefix/tmdb:<id>`, v3 `prefix/<id>?media_source=themoviedb` (further query pairs
    /// follow that one).
    fn get_media(&self, what: String, prefix: &str, tmdb_id: u64) -> Call {
        match self.dialect {
            Dialect::V2 => Call::get(what, format!("{prefix}/tmdb:{tmdb_id}")),
            Dialect::V3 => {
                Call::get(what, format!("{prefix}/{tmdb_id}")).query("media_source", "themoviedb")
            }
        }
    }

    /// [`Self::call_once_renewed`], timed and counted in the metrics by route; remembers
    /// whether MoviePilot let oncebot's credentials in.
    async fn call(&self, call: &Call) -> Result<Answer, MpError> {
        let started = Instant::now();
        let result = self.call_once_renewed(call).await;
        crate::metrics::METRICS.moviepilot_call(
            &route_label(call),
            started.elapsed(),
            result.as_ref().err().map(MpError::kind),
        );
        match &result {
            Ok(_) => self.set_refused(None),
            Err(MpError::CredentialsRefused(why)) => self.set_refused(Some(why)),
            // Unreachable, or lost on the way: says nothing about the credentials.
            Err(_) => {}
        }
        result
    }

    fn lock_refused(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        // A poisoned lock only means a panic while replacing a String; the value is fine.
        self.refused.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_refused(&self, why: Option<&String>) {
        let mut refused = self.lock_refused();
        match (refused.is_some(), why) {
            (false, Some(why)) => {
                tracing::error!(reason = %why, "MoviePilot refuses oncebot's credentials; jobs wait until it accepts them");
                crate::metrics::METRICS.moviepilot_credentials_refused(true);
            }
            (true, None) => {
                tracing::info!("MoviePilot accepts oncebot's credentials again");
                crate::metrics::METRICS.moviepilot_credentials_refused(false);
            }
            _ => {}
        }
        if refused.as_ref() != why {
            *refused = why.cloned();
        }
    }

    /// Sends `call` with the current credential; after a 401/403, renews the token once (shared
    /// with every other caller that saw the same token) and sends it once more.
    async fn call_once_renewed(&self, call: &Call) -> Result<Answer, MpError> {
        let started = Instant::now();
        let (mut credential, generation) = self.auth.credential().await;
        if matches!(credential, Credential::None) && self.auth.login.is_some() {
            // No token (the last login was refused): log in first (after the backoff) instead
            // of sending a call MoviePilot can only refuse.
            self.renew(generation, started)
                .await
                .map_err(|e| with_context(e, &format!("{call}: logging in failed")))?;
            credential = self.auth.credential().await.0;
        }
        let answer = self.send(call, &credential).await?;
        if !self.refuses_credentials(answer.status) {
            return Ok(answer);
        }
        if self.auth.login.is_none() {
            return Err(MpError::CredentialsRefused(format!(
                "{call}: MoviePilot refused the API key (HTTP {}{}): set {} to MoviePilot's \
                 current API_TOKEN, or set {} and {}",
                answer.status.as_u16(),
                detail_suffix(&answer.body),
                env_name("moviepilot.api_key"),
                env_name("moviepilot.username"),
                env_name("moviepilot.password")
            )));
        }
        tracing::debug!(
            status = answer.status.as_u16(),
            "MoviePilot refused oncebot's credential; renewing it"
        );
        self.renew(generation, started)
            .await
            .map_err(|e| with_context(e, &format!("{call}: logging in again failed")))?;
        let (credential, _) = self.auth.credential().await;
        let answer = self.send(call, &credential).await?;
        if self.refuses_credentials(answer.status) {
            return Err(MpError::CredentialsRefused(format!(
                "{call}: MoviePilot refused a fresh login (HTTP {}{}): check that user {:?} may do this",
                answer.status.as_u16(),
                detail_suffix(&answer.body),
                self.auth.login.as_ref().map_or("", |l| l.username.as_str())
            )));
        }
        Ok(answer)
    }

    /// Logs in unless someone already did since `seen_generation`; one login at a time in the
    /// process, and (with a shared gate) in the deployment. While logins are refused, none is
    /// tried before the backoff has run: callers get the last refusal instead.
    async fn renew(&self, seen_generation: u64, started: Instant) -> Result<(), MpError> {
        let Some(login) = &self.auth.login else {
            return Err(MpError::Permanent(
                "no MoviePilot username and password to log in with".into(),
            ));
        };
        let mut state = self.auth.state.lock().await;
        if let Some(instead) = state.instead_of_login(seen_generation, started, Instant::now()) {
            return instead;
        }
        let gate = self.gate.get().map(|g| g.as_ref());
        if let Some(gate) = gate {
            self.wait_for_turn(gate, &mut state).await?;
        }
        if state.bearer.is_some() {
            tracing::info!("MoviePilot no longer accepts oncebot's token; logging in again");
        }
        let result = self.login(login).await;
        match &result {
            Ok(_) => self.tell_accepted(gate).await,
            Err(MpError::CredentialsRefused(why)) => {
                self.refused_login(gate, &mut state, why).await
            }
            Err(_) => self.release_turn(gate).await,
        }
        state.record(result, Instant::now())
    }

    /// After a login that worked: the other processes may log in again at once.
    async fn tell_accepted(&self, gate: Option<&dyn LoginGate>) {
        if let Some(gate) = gate
            && let Err(e) = gate.accepted().await
        {
            tracing::warn!(error = %e, "could not tell the other processes that the MoviePilot login works again");
        }
    }

    /// After a login that failed without a refusal (MoviePilot away): the turn is given back.
    async fn release_turn(&self, gate: Option<&dyn LoginGate>) {
        if let Some(gate) = gate
            && let Err(e) = gate.release(&self.holder).await
        {
            tracing::warn!(error = %e, "could not release the MoviePilot login lease");
        }
    }

    /// A refused login: no other before its backoff (the deployment's, when the gate shares
    /// it) has run, and the token that brought the caller here is dropped.
    async fn refused_login(&self, gate: Option<&dyn LoginGate>, state: &mut TokenState, why: &str) {
        state.refusals += 1;
        let mut backoff = login_backoff(state.refusals);
        if let Some(gate) = gate {
            let told = gate.refused(
                &self.holder,
                why,
                LOGIN_BACKOFF_FIRST,
                LOGIN_BACKOFF_MAX,
                self.remember_refusals,
            );
            match told.await {
                Ok(shared) => backoff = shared,
                Err(e) => {
                    tracing::warn!(error = %e, "could not tell the other processes that the MoviePilot login was refused")
                }
            }
        }
        tracing::warn!(
            next_login_in = ?backoff,
            "MoviePilot refused the login; no login before the backoff has run"
        );
        state.refused_until = Some((
            Instant::now() + backoff,
            MpError::CredentialsRefused(why.to_string()),
        ));
        // The token that brought this caller here was refused: it is dead, and until a login
        // works calls wait for one instead of being refused one by one.
        state.bearer = None;
    }

    /// Waits until the deployment's gate lets this process log in: a refusal elsewhere is
    /// returned (and remembered until its backoff has run), another process's login is waited
    /// for (at most about the login's own timeout). A gate that cannot be asked (Redis away) is
    /// logged and passed: the process's own backoff still holds.
    async fn wait_for_turn(
        &self,
        gate: &dyn LoginGate,
        state: &mut TokenState,
    ) -> Result<(), MpError> {
        let lease = self.timeout + Duration::from_secs(5);
        let give_up = Instant::now() + lease;
        loop {
            match gate.begin(&self.holder, lease).await {
                Ok(Turn::Go) => return Ok(()),
                Ok(Turn::Refused { wait, reason }) => {
                    // The token that brought this caller here was refused: it is dead.
                    state.bearer = None;
                    let error = MpError::CredentialsRefused(if reason.is_empty() {
                        "MoviePilot refused oncebot's login (another oncebot process tried it)"
                            .to_string()
                    } else {
                        reason
                    });
                    state.refused_until = Some((Instant::now() + wait, error.clone()));
                    return Err(error);
                }
                Ok(Turn::Busy { wait }) => {
                    if Instant::now() >= give_up {
                        return Err(MpError::Transient(
                            "another oncebot process is logging in to MoviePilot; trying again later"
                                .into(),
                        ));
                    }
                    tokio::time::sleep(
                        wait.clamp(Duration::from_millis(50), Duration::from_millis(500)),
                    )
                    .await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not ask the other processes whether a MoviePilot login may be tried; trying it");
                    return Ok(());
                }
            }
        }
    }

    /// `POST /api/v1/login/access-token` with the form MoviePilot's OAuth2 form expects.
    async fn login(&self, login: &Login) -> Result<Secret, MpError> {
        let what = format!("MoviePilot login as {:?}", login.username);
        let form = [
            ("username", login.username.as_str()),
            ("password", login.password.expose()),
        ];
        let response = self
            .http
            .post(format!("{}/api/v1/login/access-token", self.base))
            .form(&form)
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|e| {
                MpError::Transient(format!("{what}: {}", transport_text(e, self.timeout)))
            })?;
        let status = response.status();
        let two_factor = response.headers().contains_key("x-mfa-required");
        let (body, _) = read_body(response, self.max_body).await.map_err(|e| {
            MpError::Transient(format!("{what}: {}", transport_text(e, self.timeout)))
        })?;
        if let Some(error) = login_refusal(&what, &login.username, status, two_factor, &body) {
            return Err(error);
        }
        // The body holds the token: it is parsed, never quoted.
        let token: WireToken = crate::json_body::parse(&body).map_err(|_| {
            MpError::Permanent(format!(
                "{what}: HTTP {} without a token in the answer (is {} MoviePilot?)",
                status.as_u16(),
                env_name("moviepilot.url")
            ))
        })?;
        tracing::info!(user = %login.username, "logged in to MoviePilot");
        Ok(Secret::new(token.access_token))
    }

    async fn send(&self, call: &Call, credential: &Credential) -> Result<Answer, MpError> {
        let mut url = self.base_url.clone();
        let path = format!("{}{}", url.path().trim_end_matches('/'), call.path);
        url.set_path(&path);
        if !call.query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(call.query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        let mut request = self
            .http
            .request(call.method.clone(), url)
            .timeout(self.timeout_of(call));
        if let Some(body) = &call.json {
            request = request.json(body);
        }
        request = match credential {
            Credential::None => request,
            Credential::Bearer(token) => request.bearer_auth(token.expose()),
            Credential::ApiKey(key) => match HeaderValue::from_str(key.expose()) {
                Ok(mut value) => {
                    value.set_sensitive(true);
                    request.header("X-API-KEY", value)
                }
                Err(_) => {
                    return Err(MpError::CredentialsRefused(format!(
                        "{call}: {} contains characters that cannot go in an HTTP header",
                        env_name("moviepilot.api_key")
                    )));
                }
            },
        };
        let response = request
            .send()
            .await
            .map_err(|e| self.transport_error(call, e))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(|v| short(v, 20));
        let (body, cut) = read_body(response, self.max_body)
            .await
            .map_err(|e| self.transport_error(call, e))?;
        Ok(Answer {
            status,
            retry_after,
            body,
            cut,
        })
    }

    /// Whether `status` means MoviePilot refused oncebot's credential: 401 in both dialects,
    /// and 403 in v2 (its answer to a bad JWT). V3 answers 403 only for "not allowed" (无权删除该
    /// 订阅), a permanent refusal of that call, not of the credential.
    fn refuses_credentials(&self, status: StatusCode) -> bool {
        match self.dialect {
            Dialect::V2 => matches!(status.as_u16(), 401 | 403),
            Dialect::V3 => status == StatusCode::UNAUTHORIZED,
        }
    }

    /// Whether `answer` is MoviePilot refusing a superuser-only route to a plain user:
    /// `get_current_active_superuser` raises 400 "用户权限不足" in both lines (v3 wraps it in its
    /// envelope); v3's other permission refusals are 403.
    fn refuses_non_superuser(&self, answer: &Answer) -> bool {
        match answer.status.as_u16() {
            400 => detail_suffix(&answer.body).contains("权限不足"),
            403 => self.dialect == Dialect::V3,
            _ => false,
        }
    }

    /// Connection refused means the request never left: transient. Anything after that (a
    /// timeout, a dropped connection) is uncertain for a call with a side effect.
    fn transport_error(&self, call: &Call, error: reqwest::Error) -> MpError {
        let not_sent = error.is_connect() || error.is_builder();
        if error.is_connect() {
            self.saw_unreachable();
        }
        let text = transport_text(error, self.timeout_of(call));
        match (not_sent, call.effect) {
            (true, _) | (false, Effect::ReadOnly) => MpError::Transient(format!("{call}: {text}")),
            (false, Effect::SideEffect) => MpError::Uncertain(format!(
                "{call}: {text}; MoviePilot may or may not have done it"
            )),
        }
    }

    /// Passes 2xx answers read whole; turns the rest (and a 2xx over `moviepilot.max_body_bytes`)
    /// into an error of the right kind.
    fn check_status(&self, call: &Call, answer: Answer) -> Result<Answer, MpError> {
        let answer = self.check_code(call, answer)?;
        if answer.cut {
            return Err(self.too_large(call));
        }
        Ok(answer)
    }

    /// A successful answer longer than `moviepilot.max_body_bytes`: permanent, naming the setting.
    fn too_large(&self, call: &Call) -> MpError {
        let error = MpError::Permanent(format!(
            "{call}: MoviePilot's answer is larger than moviepilot.max_body_bytes ({} bytes), so \
             it was not read; if such answers are expected, raise {}",
            self.max_body,
            env_name("moviepilot.max_body_bytes")
        ));
        crate::metrics::METRICS.moviepilot_error(&route_label(call), error.kind());
        error
    }

    /// `success: false`: a permanent refusal with MoviePilot's message.
    fn refused(&self, call: &Call, message: Option<&str>) -> MpError {
        let error = MpError::Permanent(format!(
            "{call}: MoviePilot refused: {}",
            refusal_text(message)
        ));
        crate::metrics::METRICS.moviepilot_error(&route_label(call), error.kind());
        error
    }

    /// Passes 2xx answers (cut or not); turns the rest into an error of the right kind.
    fn check_code(&self, call: &Call, answer: Answer) -> Result<Answer, MpError> {
        let status = answer.status;
        if status.is_success() {
            return Ok(answer);
        }
        let mut why = format!("HTTP {}{}", status.as_u16(), detail_suffix(&answer.body));
        if let Some(after) = &answer.retry_after {
            why.push_str(&format!(" (retry after {after})"));
        }
        let error = match status.as_u16() {
            408 | 425 | 429 => MpError::Transient(format!("{call}: {why}")),
            403 if self.dialect == Dialect::V3 => MpError::Permanent(format!(
                "{call}: MoviePilot does not allow it ({why}): the MoviePilot user oncebot acts \
                 as lacks the right (the API key acts as the superuser)"
            )),
            502 | 504 if call.effect == Effect::SideEffect => MpError::Uncertain(format!(
                "{call}: {why}: a proxy gave up waiting; MoviePilot may or may not have done it"
            )),
            500..=599 => MpError::Transient(format!("{call}: {why}")),
            _ => MpError::Permanent(format!("{call}: {why}")),
        };
        // `call` counted this answer as a call that worked (MoviePilot did answer); its status
        // is the error, so it is counted here, once.
        crate::metrics::METRICS.moviepilot_error(&route_label(call), error.kind());
        Err(error)
    }

    /// The payload of a bare (v2) or enveloped (v3) answer. `None`: v3 answered `data: null`.
    fn decode<T: DeserializeOwned>(
        &self,
        call: &Call,
        answer: &Answer,
    ) -> Result<Option<T>, MpError> {
        match self.dialect {
            Dialect::V2 => crate::json_body::parse::<T>(&answer.body)
                .map(Some)
                .map_err(|_| self.unexpected_body(call, answer)),
            Dialect::V3 => self.accepted(call, answer),
        }
    }

    /// The `data` of a `{success: true, ...}` envelope; `success: false` is a permanent refusal
    /// with MoviePilot's message. `success` is read before `data` is decoded: a refusal's `data`
    /// is whatever the server put there (`{}`, `null`, a partial object).
    fn accepted<T: DeserializeOwned>(
        &self,
        call: &Call,
        answer: &Answer,
    ) -> Result<Option<T>, MpError> {
        let head: EnvelopeHead<'_> = crate::json_body::parse(&answer.body)
            .map_err(|_| self.unexpected_body(call, answer))?;
        if !head.success {
            return Err(self.refused(call, head.message.as_deref()));
        }
        match head.data {
            None => Ok(None),
            Some(raw) => serde_json::from_str(raw.get())
                .map(Some)
                .map_err(|_| self.unexpected_body(call, answer)),
        }
    }

    /// A 5xx to a call that must never be sent twice (a restart, a redo) is `Uncertain`, not the
    /// `Transient` that [`Self::check_status`] makes of it for calls a retry verifies first: the
    /// request arrived, and part of it may have run. `maybe` says what.
    fn uncertain_on_server_error(
        &self,
        call: &Call,
        answer: &Answer,
        maybe: &str,
    ) -> Result<(), MpError> {
        if answer.status.is_server_error() {
            return Err(MpError::Uncertain(format!(
                "{call}: HTTP {}; {maybe}",
                answer.status.as_u16()
            )));
        }
        Ok(())
    }

    /// `success: true`, or MoviePilot's refusal in its own words as `Declined` (the operator
    /// commands show it to the admin who asked: 整理记录不存在, 当前运行环境不支持重启操作！).
    fn done_or_declined(&self, call: &Call, answer: &Answer) -> Result<(), MpError> {
        let head: EnvelopeHead<'_> = crate::json_body::parse(&answer.body)
            .map_err(|_| self.unexpected_body(call, answer))?;
        if head.success {
            return Ok(());
        }
        let why = crate::untrusted::clean_line(head.message.as_deref().unwrap_or("").trim());
        Err(MpError::Declined(short(&why, 200)))
    }

    /// A list, each row read on its own so one odd row does not hide the others.
    async fn fetch_list<T: DeserializeOwned>(&self, call: &Call) -> Result<Vec<T>, MpError> {
        Ok(self.fetch_rows(call).await?.0)
    }

    /// [`Self::fetch_list`], with how many rows the answer had (a row that does not parse still
    /// counts: a page shorter than asked is the last one only by the server's count).
    async fn fetch_rows<T: DeserializeOwned>(
        &self,
        call: &Call,
    ) -> Result<(Vec<T>, usize), MpError> {
        let answer = self.call(call).await?;
        self.rows_of(call, answer)
    }

    /// The rows of `answer` to `call`, as [`Self::fetch_rows`] reads them.
    fn rows_of<T: DeserializeOwned>(
        &self,
        call: &Call,
        answer: Answer,
    ) -> Result<(Vec<T>, usize), MpError> {
        let answer = self.check_status(call, answer)?;
        // The usual answer parses whole, in one pass. Only one with a row out of shape is read
        // again, row by row, so that the other rows still count.
        if let Ok(Some(rows)) = self.decode::<Vec<T>>(call, &answer) {
            let total = rows.len();
            return Ok((rows, total));
        }
        // Each row as its text, parsed on its own: a `Value` tree per row (maps of every field
        // MoviePilot sends) was about a twelfth of the worker's instructions in the bench.
        let rows: Vec<Box<serde_json::value::RawValue>> =
            self.decode(call, &answer)?.unwrap_or_default();
        let total = rows.len();
        let parsed: Vec<T> = rows
            .iter()
            .filter_map(|row| serde_json::from_str(row.get()).ok())
            .collect();
        if parsed.len() != total {
            tracing::warn!(
                skipped = total - parsed.len(),
                "{call}: some rows were not in the expected shape"
            );
        }
        Ok((parsed, total))
    }

    /// A 2xx whose body is not what this call answers. The body is not quoted: it may hold
    /// torrent data.
    fn unexpected_body(&self, call: &Call, answer: &Answer) -> MpError {
        let why = format!(
            "HTTP {} with an answer that is not MoviePilot {} JSON for this call (is {} MoviePilot's address?)",
            answer.status.as_u16(),
            self.dialect,
            env_name("moviepilot.url")
        );
        match call.effect {
            Effect::ReadOnly => MpError::Permanent(format!("{call}: {why}")),
            Effect::SideEffect => MpError::Uncertain(format!(
                "{call}: {why}; MoviePilot may or may not have done it"
            )),
        }
    }

    /// `data.BACKEND_VERSION` from `/system/global` (late v2, v3); for older v2 the Servarr
    /// emulation's version when an API key is configured. `None` when neither says.
    async fn read_version(&self) -> anyhow::Result<Option<String>> {
        let call =
            Call::get("reading the version", "/api/v1/system/global").query("token", GLOBAL_TOKEN);
        let answer = self.send(&call, &Credential::None).await.map_err(|e| {
            anyhow::Error::new(Unreachable(format!(
                "cannot reach MoviePilot at {}: {e} (check {} and that MoviePilot is running)",
                self.shown_url,
                env_name("moviepilot.url")
            )))
        })?;
        let mut old_v2 = false;
        if answer.status.is_success()
            && let Ok(Value::Object(body)) = crate::json_body::parse::<Value>(&answer.body)
            && let Some(Value::Object(data)) = body.get("data")
        {
            match data.get("BACKEND_VERSION").and_then(Value::as_str) {
                Some(version) if !version.trim().is_empty() => {
                    let version = crate::untrusted::clean_line(version.trim());
                    return Ok(Some(short(&version, 40)));
                }
                _ => old_v2 = true,
            }
        }
        let servarr = self.servarr_version().await;
        Ok(match (servarr, old_v2) {
            (Some(version), _) => Some(version),
            // v2.5.6 up to v2.8 answer the settings without the version key.
            (None, true) => Some(OLD_V2_LABEL.into()),
            (None, false) => None,
        })
    }

    /// `GET /api/v3/system/status` (v2's Sonarr emulation) with the API key: `version`.
    async fn servarr_version(&self) -> Option<String> {
        let key = self.auth.api_key.clone()?;
        let call = Call::get("reading the version", "/api/v3/system/status");
        let answer = self.send(&call, &Credential::ApiKey(key)).await.ok()?;
        if !answer.status.is_success() {
            return None;
        }
        let body: Value = crate::json_body::parse(&answer.body).ok()?;
        let version = crate::untrusted::clean_line(body.get("version")?.as_str()?.trim());
        (!version.is_empty()).then(|| short(&version, 40))
    }

    /// Makes sure some credential opens `GET /api/v1/subscribe/`, trying the API key first, and
    /// returns that answer (its shape tells v2 from v3).
    async fn establish_auth(&self) -> anyhow::Result<Answer> {
        let probe = Call::get("checking the credentials", "/api/v1/subscribe/")
            // Ignored by v2; keeps v3's answer small.
            .query("page", 1)
            .query("count", 1);
        if let Some(key) = self.auth.api_key.clone() {
            let answer = self.send(&probe, &Credential::ApiKey(key)).await?;
            if answer.status.is_success() {
                return Ok(answer);
            }
            if !self.refuses_credentials(answer.status) {
                return Err(anyhow!(
                    self.check_status(&probe, answer)
                        .err()
                        .map_or_else(|| "unexpected answer".to_string(), |e| e.to_string())
                ));
            }
            if self.auth.login.is_none() {
                bail!(
                    "MoviePilot {} at {} refused the API key in {} on GET /api/v1/subscribe/ \
                     (HTTP {}{}): {}",
                    self.version,
                    self.shown_url,
                    env_name("moviepilot.api_key"),
                    answer.status.as_u16(),
                    detail_suffix(&answer.body),
                    api_key_advice(&self.version)
                );
            }
            tracing::info!(
                status = answer.status.as_u16(),
                "MoviePilot refused the API key on the subscription routes; logging in instead"
            );
        }
        self.renew(0, Instant::now()).await?;
        let (credential, _) = self.auth.credential().await;
        let answer = self.send(&probe, &credential).await?;
        if answer.status.is_success() {
            return Ok(answer);
        }
        bail!(
            "MoviePilot refused GET /api/v1/subscribe/ to user {:?} right after logging in \
             (HTTP {}{}): give that user access to subscriptions",
            self.auth.login.as_ref().map_or("", |l| l.username.as_str()),
            answer.status.as_u16(),
            detail_suffix(&answer.body)
        )
    }
}

impl Auth {
    /// The credential to send now, and the generation it belongs to.
    async fn credential(&self) -> (Credential, u64) {
        let state = self.state.lock().await;
        let credential = match (&state.bearer, &self.api_key) {
            (Some(token), _) => Credential::Bearer(token.clone()),
            (None, Some(key)) => Credential::ApiKey(key.clone()),
            (None, None) => Credential::None,
        };
        (credential, state.generation)
    }
}

/// The version label of a v2 that reports no `BACKEND_VERSION` (v2.5.6 to v2.8).
const OLD_V2_LABEL: &str = "v2 (before v2.9: no BACKEND_VERSION)";

/// What to do about a refused API key, by version: MoviePilot takes the key on its login-only
/// routes since v2.9.3 (upstream commit feb03435); before that only a login opens them.
fn api_key_advice(version: &str) -> String {
    let key = env_name("moviepilot.api_key");
    let login = format!(
        "{} and {}",
        env_name("moviepilot.username"),
        env_name("moviepilot.password")
    );
    match takes_api_key(version) {
        Some(true) => format!(
            "the key is wrong or was changed: set {key} to MoviePilot's current API_TOKEN \
             (its settings page), or set {login} to a MoviePilot user instead"
        ),
        Some(false) => format!(
            "MoviePilot before v2.9.3 accepts only a login on these routes: set {login} to a \
             MoviePilot user"
        ),
        None => format!(
            "either the key is not MoviePilot's current API_TOKEN (set {key} to it), or this \
             MoviePilot is older than v2.9.3, which accepts only a login here (set {login})"
        ),
    }
}

/// Whether MoviePilot `version` accepts `X-API-KEY` on the routes that otherwise need a login
/// (v2.9.3 and later, v3); `None` when the version does not say.
fn takes_api_key(version: &str) -> Option<bool> {
    if version == OLD_V2_LABEL {
        return Some(false);
    }
    let mut parts = version
        .trim()
        .trim_start_matches(['v', 'V'])
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    let major = parts.next().flatten()?;
    let minor = parts.next().flatten().unwrap_or(0);
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch) >= (2, 9, 3))
}

/// Whether MoviePilot `version` has only `GET /subscribe/search/{id}` (v3.0.0; POST from
/// v3.0.1, MoviePilot-TV PR #40).
fn search_trigger_is_get(version: &str) -> bool {
    let mut parts = version
        .trim()
        .trim_start_matches(['v', 'V'])
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    let (major, minor, patch) = (
        parts.next().flatten(),
        parts.next().flatten(),
        parts.next().flatten(),
    );
    (major, minor, patch) == (Some(3), Some(0), Some(0))
}

/// At most `limit` bytes of `response`'s body, and whether there was more: the rest is never
/// read (dropping the response closes its connection), so an answer of any size costs at most
/// `limit` bytes of memory.
async fn read_body(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<(Bytes, bool), reqwest::Error> {
    // Sized once when the length is known (MoviePilot's answers carry it): growing by doubling
    // would copy and, at its peak, hold about three times the limit.
    let expected = response.content_length().map_or(16 * 1024, |n| n as usize);
    let mut body = bytes::BytesMut::with_capacity(expected.min(limit));
    while let Some(chunk) = response.chunk().await? {
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body.freeze(), true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body.freeze(), false))
}

/// `2`, `3`, … from `v2.5.6`, `3.0.1-1`, `V3.1`.
fn major_version(version: &str) -> Option<u32> {
    let digits: String = version
        .trim()
        .trim_start_matches(['v', 'V'])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn media_label(tmdb_id: u64, season: Option<u32>) -> String {
    match season {
        Some(s) => format!("TMDB {tmdb_id} season {s}"),
        None => format!("TMDB {tmdb_id}"),
    }
}

/// MoviePilot's message of a refusal, short and without control characters (it reaches logs,
/// the ledger and the admin chats).
fn refusal_text(message: Option<&str>) -> String {
    match message.map(str::trim) {
        Some(m) if !m.is_empty() => short(&crate::untrusted::clean_line(m), 200),
        _ => "no reason given".into(),
    }
}

/// `: <detail>` from an error body: v2's `{"detail": "..."}` (or its 422 list), v3's
/// `{"message": "..."}`, or a short plain text such as `Internal Server Error`. Empty for
/// anything else (an HTML page, a long body).
fn detail_suffix(body: &[u8]) -> String {
    let text = match crate::json_body::parse::<Value>(body) {
        Ok(Value::Object(map)) => match (map.get("detail"), map.get("message")) {
            (Some(Value::String(d)), _) => d.clone(),
            (Some(Value::Array(items)), _) => items
                .first()
                .map(|item| {
                    let place = item
                        .get("loc")
                        .and_then(Value::as_array)
                        .map(|loc| {
                            loc.iter()
                                .map(|p| match p {
                                    Value::String(s) => s.clone(),
                                    other => other.to_string(),
                                })
                                .collect::<Vec<_>>()
                                .join(".")
                        })
                        .unwrap_or_default();
                    let msg = item.get("msg").and_then(Value::as_str).unwrap_or("invalid");
                    format!("{place}: {msg}")
                })
                .unwrap_or_default(),
            (_, Some(Value::String(m))) => m.clone(),
            _ => String::new(),
        },
        Ok(_) => String::new(),
        Err(_) => match std::str::from_utf8(body) {
            Ok(t) if t.len() <= 200 && !t.trim_start().starts_with('<') => t.trim().to_string(),
            _ => String::new(),
        },
    };
    let text = crate::untrusted::clean_line(text.trim());
    if text.is_empty() {
        String::new()
    } else {
        format!(" {}", short(&text, 200))
    }
}

fn transport_text(error: reqwest::Error, timeout: Duration) -> String {
    if error.is_timeout() {
        return format!("no answer within {} s", timeout.as_secs());
    }
    let error = error.without_url();
    let mut text = if error.is_connect() {
        "cannot connect".to_string()
    } else {
        "connection lost".to_string()
    };
    let mut source = std::error::Error::source(&error);
    let mut depth = 0;
    while let Some(cause) = source
        && depth < 4
    {
        text.push_str(": ");
        text.push_str(&short(&cause.to_string(), 120));
        source = cause.source();
        depth += 1;
    }
    text
}

/// Keeps the kind, puts `context` in front.
fn with_context(error: MpError, context: &str) -> MpError {
    match error {
        MpError::Permanent(m) => MpError::Permanent(format!("{context}: {m}")),
        MpError::Declined(m) => MpError::Declined(m),
        MpError::CredentialsRefused(m) => MpError::CredentialsRefused(format!("{context}: {m}")),
        MpError::Transient(m) => MpError::Transient(format!("{context}: {m}")),
        MpError::Uncertain(m) => MpError::Uncertain(format!("{context}: {m}")),
    }
}

/// At most `max` characters, cut on a character boundary.
fn short(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// `moviepilot.url` as the calls' base (as text, and parsed once for every call's URL to be
/// built from), and as logs may show it (without any userinfo).
fn base_urls(settings: &MoviePilotSettings) -> anyhow::Result<(String, reqwest::Url, String)> {
    let parsed = reqwest::Url::parse(settings.url.trim())
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
        .with_context(|| {
            format!(
                "moviepilot.url {:?} is not an http(s) URL: set {} to e.g. http://moviepilot:3001",
                settings.url,
                env_name("moviepilot.url")
            )
        })?;
    let base = parsed.as_str().trim_end_matches('/').to_string();
    let mut base_url = parsed.clone();
    base_url.set_query(None);
    base_url.set_fragment(None);
    let mut shown = parsed;
    // Both only fail for URLs that cannot carry userinfo, which then has none to hide.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    Ok((
        base,
        base_url,
        shown.as_str().trim_end_matches('/').to_string(),
    ))
}

/// The API key and the login the settings give; at least one of them.
fn credentials(settings: &MoviePilotSettings) -> anyhow::Result<(Option<Secret>, Option<Login>)> {
    let api_key = (!settings.api_key.is_empty()).then(|| settings.api_key.clone());
    let login = (!settings.username.is_empty() && !settings.password.is_empty()).then(|| Login {
        username: settings.username.clone(),
        password: settings.password.clone(),
    });
    if api_key.is_none() && login.is_none() {
        bail!(
            "no MoviePilot credentials: set {} or {} and {}",
            env_name("moviepilot.api_key"),
            env_name("moviepilot.username"),
            env_name("moviepilot.password")
        );
    }
    Ok((api_key, login))
}

/// The dialect a reported version implies (`None`: a version without a major number); a major
/// version oncebot does not speak is an error.
fn dialect_of_version(version: &str, shown_url: &str) -> anyhow::Result<Option<Dialect>> {
    Ok(match major_version(version) {
        Some(2) => Some(Dialect::V2),
        Some(3) => Some(Dialect::V3),
        Some(other) => bail!(
            "MoviePilot at {shown_url} reports version {version} (major {other}); oncebot speaks \
             MoviePilot v2 and v3 only: run a v2 or v3 MoviePilot, or an oncebot that supports \
             v{other}"
        ),
        None => None,
    })
}

/// The dialect the subscription list's shape implies: v2 answers a bare list, v3 an envelope.
fn dialect_of_answer(body: &[u8]) -> Option<Dialect> {
    match crate::json_body::parse::<Value>(body) {
        Ok(Value::Array(_)) => Some(Dialect::V2),
        Ok(Value::Object(o)) if o.contains_key("success") => Some(Dialect::V3),
        _ => None,
    }
}

/// The version decides when both speak and disagree (said in the log); one of them must speak.
fn choose_dialect(
    inner: &Inner,
    by_version: Option<Dialect>,
    by_answer: Option<Dialect>,
) -> anyhow::Result<Dialect> {
    match (by_version, by_answer) {
        (Some(v), Some(s)) if v != s => {
            tracing::warn!(
                version = %inner.version,
                by_version = %v,
                by_shape = %s,
                "MoviePilot's version and its answers disagree; going by the version"
            );
            Ok(v)
        }
        (Some(v), _) | (None, Some(v)) => Ok(v),
        (None, None) => bail!(
            "could not tell which MoviePilot API {} speaks (no version reported, and \
             GET /api/v1/subscribe/ answered neither a list nor an envelope): check {}",
            inner.shown_url,
            env_name("moviepilot.url")
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn route_labels_take_ids_out_of_paths() {
        let label = |method: super::Method, path: &str| {
            super::route_label(&super::Call::new(method, "", path))
        };
        for (method, path, want) in [
            (
                super::Method::GET,
                "/api/v1/media/search",
                "GET /api/v1/media/search",
            ),
            (
                super::Method::GET,
                "/api/v1/subscribe/media/tmdb:438631",
                "GET /api/v1/subscribe/media/{id}",
            ),
            (
                super::Method::DELETE,
                "/api/v1/subscribe/42",
                "DELETE /api/v1/subscribe/{id}",
            ),
            (
                super::Method::POST,
                "/api/v1/subscribe/",
                "POST /api/v1/subscribe/",
            ),
            (
                super::Method::GET,
                "/api/v1/subscribe/user/alice",
                "GET /api/v1/subscribe/user/{username}",
            ),
            (super::Method::GET, "/api/v1/user/", "GET /api/v1/user/"),
        ] {
            assert_eq!(label(method, path), want);
        }
    }

    use super::*;

    #[test]
    fn only_v3_0_0_searches_now_with_get() {
        assert!(search_trigger_is_get("v3.0.0"));
        assert!(search_trigger_is_get("3.0.0-1"));
        assert!(!search_trigger_is_get("v3.0.1"));
        assert!(!search_trigger_is_get("v3.1.0"));
        assert!(!search_trigger_is_get("unknown"));
    }

    #[test]
    fn the_api_key_is_taken_from_v2_9_3_on() {
        assert_eq!(takes_api_key("v2.5.6"), Some(false));
        assert_eq!(takes_api_key(OLD_V2_LABEL), Some(false));
        assert_eq!(takes_api_key("v2.9.2"), Some(false));
        assert_eq!(takes_api_key("v2.9.3"), Some(true));
        assert_eq!(takes_api_key("v2.14.0"), Some(true));
        assert_eq!(takes_api_key("v3.1.0"), Some(true));
        assert_eq!(takes_api_key("unknown"), None);
        assert!(api_key_advice("v2.14.0").contains("API_TOKEN"));
        assert!(!api_key_advice("v2.14.0").contains("before v2.9.3"));
        assert!(api_key_advice("v2.5.6").contains("before v2.9.3"));
    }

    #[test]
    fn major_versions_are_read_from_moviepilots_spellings() {
        assert_eq!(major_version("v2.5.6"), Some(2));
        assert_eq!(major_version("3.0.1-1"), Some(3));
        assert_eq!(major_version("V4.0"), Some(4));
        assert_eq!(major_version("dev"), None);
    }

    #[test]
    fn error_details_are_short_and_never_html() {
        assert_eq!(
            detail_suffix(br#"{"detail":"token\u6821\u9a8c\u4e0d\u901a\u8fc7"}"#),
            " token校验不通过"
        );
        assert_eq!(
            detail_suffix(
                br#"{"detail":[{"loc":["body","password"],"msg":"field required","type":"value_error.missing"}]}"#
            ),
            " body.password: field required"
        );
        assert_eq!(
            detail_suffix(r#"{"success":false,"message":"订阅不存在","data":null}"#.as_bytes()),
            " 订阅不存在"
        );
        assert_eq!(
            detail_suffix(b"Internal Server Error"),
            " Internal Server Error"
        );
        assert_eq!(detail_suffix(b"<html><body>502</body></html>"), "");
    }

    #[test]
    fn short_cuts_on_character_boundaries() {
        assert_eq!(short("未识别到媒体信息", 3), "未识别…");
        assert_eq!(short("abc", 3), "abc");
    }

    #[test]
    fn a_caller_logs_in_only_when_nobody_did_nothing_failed_since_it_began_and_no_refusal_holds() {
        use super::{MpError, TokenState};
        use std::time::{Duration, Instant};
        let began = Instant::now();
        let now = began + Duration::from_secs(1);
        let mut state = TokenState::default();
        assert_eq!(state.instead_of_login(0, began, now), None);
        // A failure before this caller began is not its answer; one after it is.
        let failed = MpError::Transient("away".into());
        assert!(state.record(Err(failed.clone()), began).is_err());
        assert_eq!(state.instead_of_login(0, now, now), None);
        assert_eq!(state.instead_of_login(0, began, now), Some(Err(failed)));
        // A refusal holds until its backoff has run.
        let refused = MpError::CredentialsRefused("no".into());
        state.last_failure = None;
        state.refused_until = Some((now + Duration::from_secs(5), refused.clone()));
        assert_eq!(state.instead_of_login(0, began, now), Some(Err(refused)));
        let after = now + Duration::from_secs(5);
        assert_eq!(state.instead_of_login(0, began, after), None);
        // A login that worked: a new generation, every failure forgotten, so a caller that saw
        // the old one is done.
        state.refusals = 3;
        let token = crate::config::Secret::new("t".to_string());
        assert_eq!(state.record(Ok(token), after), Ok(()));
        assert_eq!((state.generation, state.refusals), (1, 0));
        assert!(state.last_failure.is_none() && state.refused_until.is_none());
        assert!(state.bearer.is_some());
        assert_eq!(state.instead_of_login(0, began, after), Some(Ok(())));
        assert_eq!(state.instead_of_login(1, after, after), None);
    }

    #[test]
    fn a_search_answer_is_read_by_success_first_and_a_cut_list_is_a_list() {
        use super::{SearchAnswer, SearchVerdict, search_verdict};
        let answer =
            |success: Option<bool>, message: &str, data_is_list: bool, broken: bool| SearchAnswer {
                success,
                message: (!message.is_empty()).then(|| message.to_string()),
                data_is_list,
                broken,
                ..SearchAnswer::default()
            };
        let cases = [
            (
                answer(Some(true), "", true, false),
                false,
                SearchVerdict::Listed,
            ),
            (
                answer(Some(true), "", true, true),
                false,
                SearchVerdict::Unexpected,
            ),
            (
                answer(Some(true), "", true, true),
                true,
                SearchVerdict::Listed,
            ),
            (answer(None, "", true, true), true, SearchVerdict::Listed),
            (answer(None, "", false, true), true, SearchVerdict::TooLarge),
            (
                answer(None, "", true, false),
                false,
                SearchVerdict::Unexpected,
            ),
            (
                answer(Some(false), "未搜索到任何资源", false, false),
                false,
                SearchVerdict::NothingFound,
            ),
            (
                answer(Some(false), "未识别到TMDB媒体信息", false, false),
                false,
                SearchVerdict::Refused("未识别到TMDB媒体信息".into()),
            ),
            (
                answer(Some(false), "", false, false),
                false,
                SearchVerdict::Refused(String::new()),
            ),
        ];
        for (read, cut, want) in cases {
            assert_eq!(
                search_verdict(&read, cut),
                want,
                "{:?} cut {cut}",
                read.success
            );
        }
    }

    #[test]
    fn a_logins_answer_is_classified_before_its_token_is_read() {
        use super::{MpError, StatusCode, login_refusal};
        let kind = |status: u16, two_factor: bool| {
            let status = StatusCode::from_u16(status).unwrap();
            match login_refusal("login", "bot", status, two_factor, b"") {
                None => "token",
                Some(MpError::CredentialsRefused(_)) => "refused",
                Some(MpError::Transient(_)) => "transient",
                Some(MpError::Permanent(_)) => "permanent",
                Some(e) => panic!("{e:?}"),
            }
        };
        assert_eq!(kind(200, false), "token");
        assert_eq!(kind(200, true), "refused");
        assert_eq!(kind(401, false), "refused");
        assert_eq!(kind(403, false), "refused");
        assert_eq!(kind(429, false), "transient");
        assert_eq!(kind(502, false), "transient");
        assert_eq!(kind(422, false), "permanent");
    }
}
