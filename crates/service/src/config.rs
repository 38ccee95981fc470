//! Settings: `config/default.toml` (compiled in), then an operator file, then `ONCEBOT__*`
//! environment variables.
//!
//! Loading never guesses: an unknown key, a value of the wrong type or a setting a role needs but
//! lacks stops start-up with one [`SettingError`] line that names the setting, its environment
//! variable and the fix. Secrets are wrapped in [`Secret`], whose `Debug` never shows them.

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::ledger::{cluster_nodes, is_redis_url};
use crate::vocabulary::NotificationType;

pub use crate::assets::DEFAULT_TOML;

/// Environment variables that override settings start with this, then `__SECTION__KEY`.
pub const ENV_PREFIX: &str = "ONCEBOT";

/// Every setting oncebot reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub redis: RedisSettings,
    pub http: HttpSettings,
    pub admin: AdminSettings,
    pub telegram: TelegramSettings,
    pub ledger: LedgerSettings,
    pub worker: WorkerSettings,
    pub dispatcher: DispatcherSettings,
    pub commands: CommandSettings,
    pub moviepilot: MoviePilotSettings,
    pub notify: NotifySettings,
    pub log: LogSettings,
    pub runtime: RuntimeSettings,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisSettings {
    /// A URL may carry a password, so it is a secret as far as logs are concerned.
    pub url: Secret,
    /// The hash tag all keys share; see `ledger::keys`.
    pub key_prefix: String,
    /// Bounds every non-blocking command, so a hung Redis turns into a 503, not a hung webhook.
    pub command_timeout_ms: u64,
    /// `url` names seed nodes of a Redis Cluster (comma-separated); see `ledger::conn`.
    pub cluster: bool,
    /// How many replicas must confirm an admission or an outcome record (`WAIT`) before it
    /// counts as done; 0 trusts the master alone, as without replicas.
    pub wait_replicas: u32,
    /// How long such a `WAIT` may take before the write counts as not confirmed (503).
    pub wait_timeout_ms: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSettings {
    pub listen: String,
    /// Bodies above this are refused with 413 before they are parsed.
    pub max_body_bytes: u64,
    /// A request's head must arrive whole within this after its first byte (or the connection's
    /// start): a client that sends half a request line is dropped, not waited for.
    pub header_read_timeout_secs: u64,
    /// A kept-alive connection with no request in flight is closed after this.
    pub idle_timeout_secs: u64,
    /// Connections served at once per listener; beyond it new ones wait in the listen backlog.
    pub max_connections: u32,
}

/// The operator's page (`admin_web`): off while `password` is empty.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminSettings {
    pub password: Secret,
    pub user: String,
    /// Show, never act: no action is offered, and a posted one is refused.
    pub read_only: bool,
    /// Its own address; empty serves it on `http.listen`.
    pub listen: String,
    /// The page's address as the browser sees it (e.g. `https://bot.example.org` behind a TLS
    /// proxy): a decision's Origin must name its scheme, host and port. Empty: `http://` and the
    /// request's Host.
    pub public_url: String,
}

impl AdminSettings {
    /// The page is served only when a password is set.
    pub fn enabled(&self) -> bool {
        !self.password.is_empty()
    }

    /// Its own address: `None` when it shares `http.listen`.
    pub fn listen_addr(&self) -> Result<Option<SocketAddr>, std::net::AddrParseError> {
        match self.listen.trim() {
            "" => Ok(None),
            addr => addr.parse().map(Some),
        }
    }

    /// The operator's page, when it is on: a user name basic auth can carry, and its own
    /// address if one is given.
    fn validate(&self) -> Result<(), SettingError> {
        let a = self;
        if !a.enabled() {
            return Ok(());
        }
        if a.user.is_empty() || a.user.contains(':') || a.user.chars().any(char::is_control) {
            return Err(SettingError::new(
                "admin.user",
                format!("is {:?}, which basic auth cannot carry", a.user),
                format!(
                    "set {} to a name without ':' (default admin)",
                    env_name("admin.user")
                ),
            ));
        }
        if a.password.expose().chars().count() < MIN_ADMIN_PASSWORD_CHARS {
            return Err(SettingError::new(
                "admin.password",
                format!(
                    "is shorter than {MIN_ADMIN_PASSWORD_CHARS} characters, short enough to guess \
                     over the network"
                ),
                format!(
                    "set {} to at least {MIN_ADMIN_PASSWORD_CHARS} characters, e.g. the output of \
                     `openssl rand -base64 24`",
                    env_name("admin.password")
                ),
            ));
        }
        if a.password.expose().chars().any(char::is_control) {
            return Err(SettingError::new(
                "admin.password",
                "contains a control character, which a browser cannot send",
                format!("set {} to printable characters", env_name("admin.password")),
            ));
        }
        if self.listen_addr().is_err() {
            return Err(SettingError::new(
                "admin.listen",
                format!("is {:?}, not an address", a.listen),
                format!(
                    "set {} to e.g. 127.0.0.1:8081, or leave it empty to serve the page on http.listen",
                    env_name("admin.listen")
                ),
            ));
        }
        if let Err(why) = self.public_origin() {
            return Err(SettingError::new(
                "admin.public_url",
                format!("is {:?}, {why}", a.public_url),
                format!(
                    "set {} to the page's address as the browser shows it, e.g. \
                     https://bot.example.org (scheme, host and port only), or leave it empty",
                    env_name("admin.public_url")
                ),
            ));
        }
        Ok(())
    }

    /// `admin.public_url` as an origin (`https://bot.example.org`, a port only when it is not
    /// the scheme's default): `None` when empty.
    pub fn public_origin(&self) -> Result<Option<String>, &'static str> {
        let given = self.public_url.trim();
        if given.is_empty() {
            return Ok(None);
        }
        let url = reqwest::Url::parse(given).map_err(|_| "not a URL")?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err("not an http or https URL");
        }
        let Some(host) = url.host_str() else {
            return Err("a URL without a host");
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err("a URL with a user or password, which an origin never has");
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return Err("a URL with a path, query or fragment, which an origin never has");
        }
        Ok(Some(match url.port() {
            Some(port) => format!("{}://{host}:{port}", url.scheme()),
            None => format!("{}://{host}", url.scheme()),
        }))
    }
}

/// The shortest `admin.password` accepted: with the page's throttle (10 guesses a second per
/// peer), 16 random characters are out of reach of online guessing.
pub const MIN_ADMIN_PASSWORD_CHARS: usize = 16;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelegramSettings {
    pub token: Secret,
    pub api_url: String,
    pub webhook_secret: Secret,
    pub webhook_url: String,
    #[serde(deserialize_with = "user_list")]
    pub allowed_users: Vec<i64>,
    /// Who each allowed user is: `<id>=<MoviePilot name>:<role>`, comma-separated (see
    /// `users::parse_users`). Empty maps nobody, so every allowed user keeps every right.
    pub users: String,
    pub bot_username: String,
    pub poll_timeout_secs: u64,
    /// After getUpdates answers 409 (a webhook is set, or another poller), wait this long
    /// before asking again: the conflict needs an operator, so retrying fast only adds noise.
    pub poll_conflict_retry_secs: u64,
    pub locale: Locale,
    /// How long a user's buttons (confirmations, choices) can be used: an old message's button
    /// tapped by mistake a day later must not run anything.
    pub confirm_ttl_secs: u64,
    /// Chats told about jobs that need a person, with buttons to settle them.
    #[serde(deserialize_with = "user_list")]
    pub admin_chats: Vec<i64>,
    /// How long those review buttons can be used; longer than `confirm_ttl_secs`, because a
    /// person may not look at once (and `oncebot jobs resolve` remains after it).
    pub review_ttl_secs: u64,
    /// Posters: a reply that names a media (search results, a release list, a subscription)
    /// and a relayed notification go as a photo with the text as its caption. `false`: text
    /// only, every one of them (the dispatcher drops the poster).
    pub posters: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerSettings {
    /// Telegram keeps undelivered updates for 24 h, so an update_id must be remembered at least
    /// that long (its `updates:` HASH expires this long after its last write).
    pub update_retention_secs: u64,
    pub chat_index_len: u32,
    pub jobs_index_len: u32,
}

/// How workers run jobs; see `worker`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerSettings {
    pub concurrency: usize,
    pub max_attempts: u32,
    pub retry_min_delay_ms: u64,
    pub retry_max_delay_ms: u64,
    /// Lease length: an entry idle this long belongs to a dead worker.
    pub reclaim_idle_ms: u64,
    pub max_recoveries: u32,
    pub read_block_ms: u64,
    pub shutdown_grace_secs: u64,
    pub job_retention_secs: u64,
    /// After this long a running job tells its user it is working on it (0: never).
    pub progress_after_ms: u64,
    pub consumer_name: String,
    /// How often the worker renews its liveness key.
    pub heartbeat_interval_ms: u64,
    /// The liveness key's expiry: a worker that has not renewed it for this long is dead, and
    /// its entries are taken at once.
    pub liveness_ttl_ms: u64,
}

/// How replies reach Telegram; see `dispatch`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DispatcherSettings {
    pub concurrency: usize,
    pub per_chat_interval_ms: u64,
    /// Groups (negative chat ids) allow about 20 messages a minute.
    pub group_interval_ms: u64,
    pub global_per_second: u32,
    pub max_attempts: u32,
    pub retry_min_delay_ms: u64,
    pub retry_max_delay_ms: u64,
    pub reclaim_idle_ms: u64,
    pub read_block_ms: u64,
    pub reply_retention_secs: u64,
    pub set_commands: bool,
    /// As `worker.heartbeat_interval_ms`, for the dispatcher.
    pub heartbeat_interval_ms: u64,
    /// As `worker.liveness_ttl_ms`, for the dispatcher.
    pub liveness_ttl_ms: u64,
}

/// Duplicate windows of the side-effecting commands (see `commands::policy`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSettings {
    pub subscribe_window_secs: u64,
    /// `/best` (洗版): a command of its own, so a plain `/subscribe` of the same media is not
    /// its repeat.
    pub best_window_secs: u64,
    pub unsubscribe_window_secs: u64,
    pub searchnow_window_secs: u64,
    /// Releases one resource search keeps, paged five at a time (one `下载 k` button each),
    /// within the stored list's memory bound.
    pub resources_shown: usize,
    /// A resource search's duplicate window, and how long its list and buttons live.
    pub resources_window_secs: u64,
    /// The same release from the same chat and user inside this window is one download.
    pub download_window_secs: u64,
    /// The house commands' windows (one start per window for everyone, issue 23).
    pub subscribe_search_window_secs: u64,
    pub subscribe_refresh_window_secs: u64,
    pub transfer_window_secs: u64,
    pub mediaserver_sync_window_secs: u64,
    pub cookiecloud_window_secs: u64,
    /// `/restart`'s window: one restart for the house inside it.
    pub restart_window_secs: u64,
    /// `/redo`'s window, per transfer record: one redo of a record for the house inside it.
    pub redo_window_secs: u64,
    /// How long a restart is watched for MoviePilot to go and come back before a person is
    /// asked to look.
    pub restart_watch_secs: u64,
    /// The time zone whose calendar day is `/site_signin`'s window (an IANA name), and in which
    /// a repeat is told when the first started.
    pub day_zone: String,
    /// The scheduler job `/site_signin` starts: the AutoSignIn plugin's sign-in of every site
    /// it is set to sign in to (`<plugin id>_<service id>`).
    pub site_signin_job: String,
}

/// Where MoviePilot is and how to authenticate (see `moviepilot`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoviePilotSettings {
    /// The base URL, e.g. `http://moviepilot:3001` (the API) or `http://moviepilot:3000` (the web
    /// UI, which proxies `/api`). Required by the worker.
    pub url: String,
    /// MoviePilot's `API_TOKEN`, sent as `X-API-KEY`. v3 (and probably late v2) accept it
    /// everywhere; v2.5.6 does not, and needs `username` + `password`.
    pub api_key: Secret,
    /// A MoviePilot user oncebot logs in as (form login, bearer token).
    pub username: String,
    pub password: Secret,
    /// Bounds every call that does not wait for TMDB.
    pub timeout_secs: u64,
    /// Bounds the calls that make MoviePilot ask TMDB (media search and detail), which are slower.
    pub search_timeout_secs: u64,
    /// How long a job waits (in `retry_wait`, its attempts unspent) while MoviePilot refuses
    /// oncebot's credentials, before it fails: the operator's problem, not the user's.
    pub auth_wait_secs: u64,
    /// Bounds a resource search, which answers only after every indexer site has.
    pub resource_search_timeout_secs: u64,
    /// Bounds an add (`POST /api/v1/download/`): over qBittorrent MoviePilot takes 3 to 27 s.
    pub download_timeout_secs: u64,
    /// After an interrupted add, how long from that attempt's start to wait for MoviePilot to
    /// finish the request (and write its history row) before the add is sent again.
    pub download_settle_secs: u64,
    /// The most bytes of one MoviePilot answer oncebot reads: a release list is cut there, any
    /// other answer over it fails (the process's memory stays bounded, whatever the server
    /// sends).
    pub max_body_bytes: u64,
    /// How often MoviePilot's own Telegram mapping (each user's `telegram_userid`) is read
    /// again; 0 turns that mapping off (`telegram.users` alone maps users). See
    /// [`MoviePilotSettings::users_refresh`].
    pub users_refresh_secs: u64,
    /// How long the library check's answer for one media is kept in Redis (shared by every
    /// worker, kept over a restart); 0 asks MoviePilot every time. See
    /// [`MoviePilotSettings::library_cache`].
    pub library_cache_secs: u64,
}

/// The longest `moviepilot.library_cache_secs` (a day): a library answer older than that would
/// keep calling something "in your library" long after it was deleted, or the reverse.
pub const MAX_LIBRARY_CACHE_SECS: u64 = 86_400;

/// The longest `moviepilot.users_refresh_secs` (a day): a mapping older than that would keep a
/// removed MoviePilot user's role for too long.
pub const MAX_USERS_REFRESH_SECS: u64 = 86_400;

/// The relay of MoviePilot's notifications (see `notify`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifySettings {
    pub enabled: bool,
    /// Chats for every type without a route; empty: `telegram.admin_chats`.
    #[serde(deserialize_with = "user_list")]
    pub chats: Vec<i64>,
    /// `type=chat[,chat];...`, kept as written and read by [`NotifySettings::parsed_routes`], so
    /// a mistake is reported with the key, its variable and the fix.
    pub routes: String,
    pub poll_interval_secs: u64,
    /// The least time between two reads, however many wake-up calls arrive.
    pub min_poll_gap_ms: u64,
    pub max_pages: u32,
    pub backfill: u32,
    pub duplicate_window_secs: u64,
    /// In the wake-up path; a secret because anyone who knows it can make the relay poll.
    pub webhook_secret: Secret,
    /// How often the polling process renews its lease.
    pub heartbeat_interval_ms: u64,
    /// The lease's expiry: how soon another process takes over when the poller dies.
    pub liveness_ttl_ms: u64,
    /// A notification about media someone asked for through oncebot also goes to the chat they
    /// asked in.
    pub to_requester: bool,
    /// How long oncebot remembers who asked for a media (a subscription may complete months
    /// later).
    pub requester_ttl_secs: u64,
}

/// The longest `notify.requester_ttl_secs`: a year.
pub const NOTIFY_REQUESTER_TTL_MAX: u64 = 31_536_000;

/// Most pages one poll may read (`notify.max_pages`).
pub const NOTIFY_MAX_PAGES: u32 = 200;

impl NotifySettings {
    /// `notify.routes` as (type, chats) pairs, in the order written; a type named twice takes
    /// the chats of both.
    pub fn parsed_routes(&self) -> Result<Vec<(NotificationType, Vec<i64>)>, SettingError> {
        let bad = |problem: String| {
            SettingError::new(
                "notify.routes",
                problem,
                format!(
                    "set {} to type=chat[,chat];... with a type such as 整理入库 or Organize, e.g. \
                     \"整理入库=-1001234567890;SiteMessage=123\"",
                    env_name("notify.routes")
                ),
            )
        };
        let mut routes: Vec<(NotificationType, Vec<i64>)> = Vec::new();
        for part in self
            .routes
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let Some((kind, chats)) = part.split_once('=') else {
                return Err(bad(format!("has {part:?} without '='")));
            };
            let Some(kind) = NotificationType::parse(kind) else {
                return Err(bad(format!(
                    "names {:?}, which is not a MoviePilot notification type",
                    kind.trim()
                )));
            };
            let mut ids = Vec::new();
            for chat in chats.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                let id = chat.parse::<i64>().map_err(|_| {
                    bad(format!(
                        "has {chat:?} for {}, not a chat id (a number)",
                        kind.value()
                    ))
                })?;
                ids.push(id);
            }
            if ids.is_empty() {
                return Err(bad(format!("routes {} to no chat", kind.value())));
            }
            match routes.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, known)) => known.extend(ids),
                None => routes.push((kind, ids)),
            }
        }
        Ok(routes)
    }

    /// When the relay runs: routes that parse, a poll interval, a page limit, a lease that one
    /// slow heartbeat cannot outlive, a wake-up secret Telegram-style.
    fn validate(&self, command_timeout_ms: u64) -> Result<(), SettingError> {
        self.parsed_routes()?;
        nonzero(
            &[("notify.poll_interval_secs", self.poll_interval_secs)],
            ", which would ask MoviePilot without pause",
            "at least 1 (default 15)",
        )?;
        self.validate_max_pages()?;
        self.validate_poll_gap()?;
        self.validate_wake_secret()?;
        self.validate_heartbeat()?;
        self.validate_requester_ttl()?;
        self.validate_lease(command_timeout_ms)
    }

    /// One poll reads 1 to `NOTIFY_MAX_PAGES` pages.
    fn validate_max_pages(&self) -> Result<(), SettingError> {
        if !(1..=NOTIFY_MAX_PAGES).contains(&self.max_pages) {
            return Err(SettingError::new(
                "notify.max_pages",
                format!("is {}, not 1 to {NOTIFY_MAX_PAGES}", self.max_pages),
                format!(
                    "set {} to how many pages of 50 rows one poll may read (default 10)",
                    env_name("notify.max_pages")
                ),
            ));
        }
        Ok(())
    }

    /// A gap between reads no longer than the interval between them.
    fn validate_poll_gap(&self) -> Result<(), SettingError> {
        let most = self.poll_interval_secs.saturating_mul(1000);
        if self.min_poll_gap_ms > most {
            return Err(SettingError::new(
                "notify.min_poll_gap_ms",
                format!(
                    "is {}, longer than notify.poll_interval_secs ({} ms)",
                    self.min_poll_gap_ms, most
                ),
                format!(
                    "set {} to at most {most} (default 1000)",
                    env_name("notify.min_poll_gap_ms")
                ),
            ));
        }
        Ok(())
    }

    /// The wake-up path's secret: empty (no wake-up path), or a secret as the webhook's.
    fn validate_wake_secret(&self) -> Result<(), SettingError> {
        let secret = self.webhook_secret.expose();
        if secret.is_empty() {
            return Ok(());
        }
        match secret_problem(secret) {
            None => Ok(()),
            Some(problem) => Err(SettingError::new(
                "notify.webhook_secret",
                problem,
                format!(
                    "set {} to a random string such as the output of `openssl rand -hex 32`, or \
                     leave it empty to turn the wake-up endpoint off",
                    env_name("notify.webhook_secret")
                ),
            )),
        }
    }

    /// The lease is renewed no more often than Redis should be asked.
    fn validate_heartbeat(&self) -> Result<(), SettingError> {
        if self.heartbeat_interval_ms < 50 {
            return Err(SettingError::new(
                "notify.heartbeat_interval_ms",
                format!(
                    "is {}, more often than Redis should be asked",
                    self.heartbeat_interval_ms
                ),
                format!(
                    "set {} to at least 50 (default 1000)",
                    env_name("notify.heartbeat_interval_ms")
                ),
            ));
        }
        Ok(())
    }

    /// Who asked for a media is remembered between a minute and a year.
    fn validate_requester_ttl(&self) -> Result<(), SettingError> {
        if !(60..=NOTIFY_REQUESTER_TTL_MAX).contains(&self.requester_ttl_secs) {
            return Err(SettingError::new(
                "notify.requester_ttl_secs",
                format!(
                    "is {}, not 60 to {NOTIFY_REQUESTER_TTL_MAX}",
                    self.requester_ttl_secs
                ),
                format!(
                    "set {} to how many seconds oncebot remembers who asked for a media (default 7776000, 90 days)",
                    env_name("notify.requester_ttl_secs")
                ),
            ));
        }
        Ok(())
    }

    /// The lease outlives one slow renewal, so a second relay never polls beside a live one.
    fn validate_lease(&self, command_timeout_ms: u64) -> Result<(), SettingError> {
        let least = self.heartbeat_interval_ms + command_timeout_ms;
        if self.liveness_ttl_ms <= least {
            return Err(SettingError::new(
                "notify.liveness_ttl_ms",
                format!(
                    "is {}, not more than notify.heartbeat_interval_ms + \
                     redis.command_timeout_ms ({least}), so one slow renewal would hand the \
                     poll to a second process",
                    self.liveness_ttl_ms
                ),
                format!(
                    "set {} above {least} (default 3500)",
                    env_name("notify.liveness_ttl_ms")
                ),
            ));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSettings {
    pub format: LogFormat,
    pub level: String,
}

/// How the process runs its tasks.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeSettings {
    /// Threads of the async runtime; 0: one per CPU core. See `Settings::runtime_threads`.
    pub worker_threads: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// The language replies are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Locale {
    Zh,
    En,
}

/// The fewest characters a secret that guards a door may have (`telegram.webhook_secret`,
/// `notify.webhook_secret`): one character was found in 37 tries.
pub const MIN_SECRET_CHARS: usize = 16;

/// What is wrong with a non-empty secret that guards a door, if anything: Telegram's own rules
/// for `secret_token` (1-256 characters of A-Z a-z 0-9 _ -, also safe in a URL path) and at
/// least [`MIN_SECRET_CHARS`].
fn secret_problem(secret: &str) -> Option<String> {
    let charset_ok = secret
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !charset_ok || secret.len() > 256 {
        return Some(format!(
            "is not {MIN_SECRET_CHARS}-256 characters of A-Z a-z 0-9 _ -"
        ));
    }
    if secret.len() < MIN_SECRET_CHARS {
        return Some(format!(
            "has {} characters, fewer than the {MIN_SECRET_CHARS} a secret needs (a short one \
             is guessed in a few tries)",
            secret.len()
        ));
    }
    None
}

/// A string that must never reach a log line: `Debug` and `Display` print `[redacted]`.
#[derive(Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    /// The value itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// One bad or missing setting, said in one line an operator can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} {problem}: {fix}")]
pub struct SettingError {
    /// The setting, as `section.key`.
    pub key: &'static str,
    pub problem: String,
    pub fix: String,
}

impl SettingError {
    fn new(key: &'static str, problem: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            key,
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}

/// The first of `settings` that is 0: "`key` is 0`because`: set VAR to `fix`".
fn nonzero(settings: &[(&'static str, u64)], because: &str, fix: &str) -> Result<(), SettingError> {
    match settings.iter().find(|(_, value)| *value == 0) {
        Some((key, _)) => Err(SettingError::new(
            key,
            format!("is 0{because}"),
            format!("set {} to {fix}", env_name(key)),
        )),
        None => Ok(()),
    }
}

impl RedisSettings {
    fn validate(&self) -> Result<(), SettingError> {
        self.validate_key_prefix()?;
        self.validate_url()?;
        if self.wait_replicas > 0 && self.wait_timeout_ms == 0 {
            return Err(SettingError::new(
                "redis.wait_timeout_ms",
                "is 0 while redis.wait_replicas is not (WAIT 0 would block for ever)",
                format!("set {} to e.g. 500", env_name("redis.wait_timeout_ms")),
            ));
        }
        nonzero(
            &[("redis.command_timeout_ms", self.command_timeout_ms)],
            "",
            "e.g. 2000",
        )
    }

    /// Every key starts with the prefix and its hash tag: letters, digits, `_`, `-` and `.`.
    fn validate_key_prefix(&self) -> Result<(), SettingError> {
        let prefix = &self.key_prefix;
        if prefix.is_empty()
            || !prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(SettingError::new(
                "redis.key_prefix",
                format!("is {prefix:?}, which is not a valid prefix"),
                format!(
                    "set {} to letters, digits, '_', '-' or '.' (e.g. oncebot)",
                    env_name("redis.key_prefix")
                ),
            ));
        }
        Ok(())
    }

    /// One Redis URL, or with `redis.cluster` a comma-separated list of its nodes.
    fn validate_url(&self) -> Result<(), SettingError> {
        if self.cluster {
            let nodes = cluster_nodes(self.url.expose());
            if nodes.is_empty() || !nodes.iter().all(|n| is_redis_url(n)) {
                return Err(SettingError::new(
                    "redis.url",
                    "is not a comma-separated list of Redis URLs (redis.cluster is on)",
                    format!(
                        "set {} to e.g. redis://10.0.0.1:7000,redis://10.0.0.2:7000",
                        env_name("redis.url")
                    ),
                ));
            }
        } else if !is_redis_url(self.url.expose()) {
            let hint = if self.url.expose().contains(',') {
                format!(
                    " (several nodes of a Redis Cluster need {}=true)",
                    env_name("redis.cluster")
                )
            } else {
                String::new()
            };
            return Err(SettingError::new(
                "redis.url",
                "is not a valid Redis URL",
                format!(
                    "set {} to e.g. redis://127.0.0.1:6379 or redis+unix:///run/redis.sock{hint}",
                    env_name("redis.url")
                ),
            ));
        }
        Ok(())
    }
}

impl LedgerSettings {
    fn validate(&self) -> Result<(), SettingError> {
        if self.update_retention_secs < 86_400 {
            return Err(SettingError::new(
                "ledger.update_retention_secs",
                format!(
                    "is {}, shorter than the 24 hours Telegram keeps an update",
                    self.update_retention_secs
                ),
                format!(
                    "set {} to at least 86400",
                    env_name("ledger.update_retention_secs")
                ),
            ));
        }
        nonzero(
            &[
                ("ledger.chat_index_len", self.chat_index_len.into()),
                ("ledger.jobs_index_len", self.jobs_index_len.into()),
            ],
            "",
            "a positive number",
        )
    }
}

impl WorkerSettings {
    fn validate(&self) -> Result<(), SettingError> {
        nonzero(
            &[
                ("worker.concurrency", self.concurrency as u64),
                ("worker.max_attempts", self.max_attempts as u64),
                ("worker.reclaim_idle_ms", self.reclaim_idle_ms),
                ("worker.read_block_ms", self.read_block_ms),
                ("worker.job_retention_secs", self.job_retention_secs),
            ],
            "",
            "a positive number",
        )?;
        if self.retry_max_delay_ms < self.retry_min_delay_ms {
            return Err(SettingError::new(
                "worker.retry_max_delay_ms",
                "is below worker.retry_min_delay_ms",
                format!(
                    "set {} to at least {}",
                    env_name("worker.retry_max_delay_ms"),
                    self.retry_min_delay_ms
                ),
            ));
        }
        if self.reclaim_idle_ms < 4 * 50 {
            return Err(SettingError::new(
                "worker.reclaim_idle_ms",
                format!(
                    "is {}, too short to renew leases in time",
                    self.reclaim_idle_ms
                ),
                format!(
                    "set {} to at least 200 (default 60000)",
                    env_name("worker.reclaim_idle_ms")
                ),
            ));
        }
        Ok(())
    }
}

impl DispatcherSettings {
    fn validate(&self) -> Result<(), SettingError> {
        nonzero(
            &[
                ("dispatcher.concurrency", self.concurrency as u64),
                (
                    "dispatcher.global_per_second",
                    self.global_per_second as u64,
                ),
                ("dispatcher.max_attempts", self.max_attempts as u64),
                ("dispatcher.reclaim_idle_ms", self.reclaim_idle_ms),
                ("dispatcher.read_block_ms", self.read_block_ms),
                ("dispatcher.reply_retention_secs", self.reply_retention_secs),
            ],
            "",
            "a positive number",
        )
    }
}

impl TelegramSettings {
    /// For roles that call the Bot API.
    fn validate_bot_api(&self) -> Result<(), SettingError> {
        let token = self.token.expose();
        let fix = || {
            format!(
                "set {} to the token @BotFather gave you",
                env_name("telegram.token")
            )
        };
        if token.is_empty() {
            return Err(SettingError::new("telegram.token", "is not set", fix()));
        }
        if !token_looks_valid(token) {
            return Err(SettingError::new(
                "telegram.token",
                "does not look like a bot token (expected <digits>:<letters, digits, _ and ->)",
                fix(),
            ));
        }
        if reqwest::Url::parse(&self.api_url).is_err() {
            return Err(SettingError::new(
                "telegram.api_url",
                format!("is {:?}, not a URL", self.api_url),
                format!(
                    "set {} to https://api.telegram.org or your Bot API server's URL",
                    env_name("telegram.api_url")
                ),
            ));
        }
        Ok(())
    }

    /// For the webhook: Telegram's own rules for `secret_token`, and at least
    /// [`MIN_SECRET_CHARS`].
    fn validate_webhook_secret(&self) -> Result<(), SettingError> {
        let secret = self.webhook_secret.expose();
        let problem = if secret.is_empty() {
            Some("is not set".to_string())
        } else {
            secret_problem(secret)
        };
        match problem {
            None => Ok(()),
            Some(problem) => Err(SettingError::new(
                "telegram.webhook_secret",
                problem,
                format!(
                    "set {} to a random string of {MIN_SECRET_CHARS}-256 characters of A-Z a-z \
                     0-9 _ - (e.g. `openssl rand -hex 32`); use --poll if you have no webhook",
                    env_name("telegram.webhook_secret")
                ),
            )),
        }
    }

    fn validate_button_lifetimes(&self) -> Result<(), SettingError> {
        nonzero(
            &[
                ("telegram.confirm_ttl_secs", self.confirm_ttl_secs),
                ("telegram.review_ttl_secs", self.review_ttl_secs),
            ],
            ", so every button would have expired before it is shown",
            "a number of seconds, e.g. 600",
        )
    }

    /// For the roles that take updates (webhook or polling).
    fn validate_updates(&self) -> Result<(), SettingError> {
        if self.allowed_users.is_empty() {
            return Err(SettingError::new(
                "telegram.allowed_users",
                "is empty, so nobody could use the bot",
                format!(
                    "set {} to your Telegram user ids, comma-separated (e.g. 123456789,987654321)",
                    env_name("telegram.allowed_users")
                ),
            ));
        }
        if self.poll_timeout_secs > 50 {
            return Err(SettingError::new(
                "telegram.poll_timeout_secs",
                format!("is {}, above Telegram's 50", self.poll_timeout_secs),
                format!("set {} to 0-50", env_name("telegram.poll_timeout_secs")),
            ));
        }
        nonzero(
            &[(
                "telegram.poll_conflict_retry_secs",
                self.poll_conflict_retry_secs,
            )],
            ", which would ask Telegram again without pause",
            "e.g. 30",
        )
    }
}

impl HttpSettings {
    /// The parsed `http.listen`.
    pub fn listen_addr(&self) -> Result<SocketAddr, std::net::AddrParseError> {
        self.listen.parse()
    }

    /// For the roles that take updates: the listener.
    fn validate(&self) -> Result<(), SettingError> {
        if self.listen_addr().is_err() {
            return Err(SettingError::new(
                "http.listen",
                format!("is {:?}, not an address", self.listen),
                format!("set {} to e.g. 0.0.0.0:8080", env_name("http.listen")),
            ));
        }
        if self.max_body_bytes < 1024 {
            return Err(SettingError::new(
                "http.max_body_bytes",
                format!("is {}, too small for any update", self.max_body_bytes),
                format!("set {} to e.g. 1048576", env_name("http.max_body_bytes")),
            ));
        }
        Ok(())
    }

    /// For every process (each serves `http.listen`, and `admin.listen` takes the same limits):
    /// no limit may be 0, which would close every connection or accept none.
    fn validate_limits(&self) -> Result<(), SettingError> {
        nonzero(
            &[
                (
                    "http.header_read_timeout_secs",
                    self.header_read_timeout_secs,
                ),
                ("http.idle_timeout_secs", self.idle_timeout_secs),
                ("http.max_connections", u64::from(self.max_connections)),
            ],
            ", which would leave no connection served",
            "a positive number (defaults: 10, 60 and 1024)",
        )
    }
}

impl CommandSettings {
    fn validate(&self) -> Result<(), SettingError> {
        let shown = self.resources_shown;
        if !(1..=100).contains(&shown) {
            return Err(SettingError::new(
                "commands.resources_shown",
                format!("is {shown}, not 1 to 100"),
                format!(
                    "set {} to how many releases a list keeps for paging, e.g. 30",
                    env_name("commands.resources_shown")
                ),
            ));
        }
        if self.day_zone().is_err() {
            return Err(SettingError::new(
                "commands.day_zone",
                format!("is {:?}, not a time zone name", self.day_zone),
                format!(
                    "set {} to an IANA zone name, e.g. Asia/Shanghai or Europe/Berlin",
                    env_name("commands.day_zone")
                ),
            ));
        }
        let job = self.site_signin_job.as_str();
        if job.is_empty() || job.len() > 100 || !job.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(SettingError::new(
                "commands.site_signin_job",
                format!("is {job:?}, not a scheduler job id"),
                format!(
                    "set {} to the AutoSignIn plugin's job id, AutoSignIn_AutoSignIn unless \
                     MoviePilot's scheduler page lists another",
                    env_name("commands.site_signin_job")
                ),
            ));
        }
        nonzero(
            &[("commands.restart_watch_secs", self.restart_watch_secs)],
            ", so no restart could ever be seen",
            "a number of seconds, e.g. 180",
        )?;
        nonzero(
            &[("commands.resources_window_secs", self.resources_window_secs)],
            ", so every button would have expired before it is shown",
            "a number of seconds, e.g. 600",
        )
    }

    /// `day_zone`, looked up in the bundled zone database.
    pub fn day_zone(&self) -> Result<jiff::tz::TimeZone, jiff::Error> {
        jiff::tz::TimeZone::get(&self.day_zone)
    }
}

impl MoviePilotSettings {
    /// How often MoviePilot's own mapping is read, `None` when it is off (0).
    pub fn users_refresh(&self) -> Option<Duration> {
        (self.users_refresh_secs > 0).then(|| Duration::from_secs(self.users_refresh_secs))
    }

    /// How long a library check's answer is kept, `None` when the cache is off (0).
    pub fn library_cache(&self) -> Option<Duration> {
        (self.library_cache_secs > 0).then(|| Duration::from_secs(self.library_cache_secs))
    }

    /// `library_cache_secs`: at most a day.
    fn validate_library_cache(&self) -> Result<(), SettingError> {
        if self.library_cache_secs > MAX_LIBRARY_CACHE_SECS {
            return Err(SettingError::new(
                "moviepilot.library_cache_secs",
                format!(
                    "is {}, more than {MAX_LIBRARY_CACHE_SECS} (a day): what is in the library \
                     would be told from an answer that old",
                    self.library_cache_secs
                ),
                format!(
                    "set {} to a number of seconds from 1 to {MAX_LIBRARY_CACHE_SECS} (default \
                     600), or 0 to ask MoviePilot every time",
                    env_name("moviepilot.library_cache_secs")
                ),
            ));
        }
        Ok(())
    }

    /// `users_refresh_secs`: every role reads it (workers refresh, ingress follows).
    fn validate_users_refresh(&self) -> Result<(), SettingError> {
        if self.users_refresh_secs > MAX_USERS_REFRESH_SECS {
            return Err(SettingError::new(
                "moviepilot.users_refresh_secs",
                format!(
                    "is {}, more than {MAX_USERS_REFRESH_SECS} (a day): a MoviePilot user removed \
                     meanwhile would keep their role that long",
                    self.users_refresh_secs
                ),
                format!(
                    "set {} to a number of seconds from 1 to {MAX_USERS_REFRESH_SECS} (default \
                     600), or 0 to map users by telegram.users alone",
                    env_name("moviepilot.users_refresh_secs")
                ),
            ));
        }
        Ok(())
    }

    /// For the worker: where MoviePilot is and how to sign in.
    fn validate(&self) -> Result<(), SettingError> {
        self.validate_url()?;
        self.validate_credentials()?;
        nonzero(
            &[
                ("moviepilot.timeout_secs", self.timeout_secs),
                ("moviepilot.search_timeout_secs", self.search_timeout_secs),
                (
                    "moviepilot.resource_search_timeout_secs",
                    self.resource_search_timeout_secs,
                ),
                (
                    "moviepilot.download_timeout_secs",
                    self.download_timeout_secs,
                ),
            ],
            ", so every call would time out at once",
            "a number of seconds, e.g. 15",
        )?;
        if self.max_body_bytes < MIN_MP_BODY_BYTES {
            return Err(SettingError::new(
                "moviepilot.max_body_bytes",
                format!(
                    "is {}, less than {MIN_MP_BODY_BYTES} bytes (a single release can be larger)",
                    self.max_body_bytes
                ),
                format!(
                    "set {} to a number of bytes, e.g. 8388608 (8 MiB, the default)",
                    env_name("moviepilot.max_body_bytes")
                ),
            ));
        }
        Ok(())
    }

    /// An http(s) URL with a host.
    fn validate_url(&self) -> Result<(), SettingError> {
        if self.url.trim().is_empty() {
            return Err(SettingError::new(
                "moviepilot.url",
                "is not set",
                format!(
                    "set {} to MoviePilot's address, e.g. http://moviepilot:3001",
                    env_name("moviepilot.url")
                ),
            ));
        }
        let parsed = reqwest::Url::parse(&self.url);
        if !matches!(&parsed, Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host()) {
            return Err(SettingError::new(
                "moviepilot.url",
                format!("is {:?}, not an http(s) URL", self.url),
                format!(
                    "set {} to MoviePilot's address, e.g. http://moviepilot:3001",
                    env_name("moviepilot.url")
                ),
            ));
        }
        Ok(())
    }

    /// An API key, or a username with its password (both or neither).
    fn validate_credentials(&self) -> Result<(), SettingError> {
        let has_login = !self.username.is_empty() && !self.password.is_empty();
        if !self.username.is_empty() && self.password.is_empty() {
            return Err(SettingError::new(
                "moviepilot.password",
                "is not set, but moviepilot.username is",
                format!(
                    "set {} to the password of MoviePilot user {:?}",
                    env_name("moviepilot.password"),
                    self.username
                ),
            ));
        }
        if self.username.is_empty() && !self.password.is_empty() {
            return Err(SettingError::new(
                "moviepilot.username",
                "is not set, but moviepilot.password is",
                format!(
                    "set {} to the MoviePilot user the password belongs to",
                    env_name("moviepilot.username")
                ),
            ));
        }
        if self.api_key.is_empty() && !has_login {
            return Err(SettingError::new(
                "moviepilot.api_key",
                "is not set, and neither are moviepilot.username and moviepilot.password",
                format!(
                    "set {} to MoviePilot's API_TOKEN (v3, late v2), or {} and {} to a \
                     MoviePilot user (needed for v2.5.6)",
                    env_name("moviepilot.api_key"),
                    env_name("moviepilot.username"),
                    env_name("moviepilot.password")
                ),
            ));
        }
        Ok(())
    }
}

/// The least `moviepilot.max_body_bytes` may be: one release with its media info is a few KiB.
const MIN_MP_BODY_BYTES: u64 = 64 * 1024;

/// The cores this process may use (affinity and cgroup quota included): what "one thread per
/// core" counts.
pub fn cpu_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The environment variable that sets `section.key`.
pub fn env_name(key: &str) -> String {
    format!("{ENV_PREFIX}__{}", key.replace('.', "__").to_uppercase())
}

/// Which parts of the settings a command needs; validation checks only those.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// Receives updates (webhook or polling): needs the allow-list and the HTTP listener.
    pub ingress: bool,
    /// Ingress by webhook: needs the webhook secret.
    pub webhook: bool,
    /// Talks to the Bot API: needs the token.
    pub bot_api: bool,
    /// Talks to MoviePilot (the worker): needs its URL and credentials.
    pub moviepilot: bool,
    /// Sends replies (the dispatcher): its liveness must outlast a slow Redis call.
    pub dispatcher: bool,
    /// Relays MoviePilot's notifications: needs MoviePilot and the `notify` settings.
    pub notify: bool,
}

impl Settings {
    /// Every secret of the configuration, for the log's last line of defence
    /// (`telemetry::init`): the bot token, both webhook secrets, MoviePilot's API key and
    /// password, the operator page's password and a password in a Redis URL.
    pub fn secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = [
            &self.telegram.token,
            &self.telegram.webhook_secret,
            &self.notify.webhook_secret,
            &self.moviepilot.api_key,
            &self.moviepilot.password,
            &self.admin.password,
        ]
        .iter()
        .map(|s| s.expose().to_string())
        .collect();
        for url in self.redis.url.expose().split(',') {
            if let Ok(parsed) = reqwest::Url::parse(url.trim())
                && let Some(password) = parsed.password()
            {
                out.push(password.to_string());
            }
        }
        out.retain(|s| !s.is_empty());
        out
    }

    /// Most threads `runtime.worker_threads` may ask for.
    pub const MAX_RUNTIME_THREADS: usize = 256;

    /// `runtime.worker_threads` as the runtime needs it: `None` for one thread per core
    /// ([`cpu_cores`]). Checked before anything starts, because every command runs on that
    /// runtime.
    pub fn runtime_threads(&self) -> Result<Option<usize>, SettingError> {
        match self.runtime.worker_threads {
            0 => Ok(None),
            n if n <= Self::MAX_RUNTIME_THREADS => Ok(Some(n)),
            n => Err(SettingError::new(
                "runtime.worker_threads",
                format!("is {n}, more than {}", Self::MAX_RUNTIME_THREADS),
                format!(
                    "set {} to 0 (one per CPU core) or a number of threads from 1 to {}",
                    env_name("runtime.worker_threads"),
                    Self::MAX_RUNTIME_THREADS
                ),
            )),
        }
    }

    /// Defaults, then `file` (if any), then `ONCEBOT__*` variables from the process environment.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Self> {
        Self::load_from(file, std::env::vars())
    }

    /// Like [`Settings::load`] with an explicit environment, so tests need not touch the process's.
    pub fn load_from(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let mut builder = config::Config::builder().add_source(config::File::from_str(
            DEFAULT_TOML,
            config::FileFormat::Toml,
        ));
        if let Some(path) = file {
            if !path.exists() {
                anyhow::bail!(
                    "config file {} does not exist: check the path given to --config",
                    path.display()
                );
            }
            builder = builder.add_source(
                config::File::from(path)
                    .format(config::FileFormat::Toml)
                    .required(true),
            );
        }
        let env: config::Map<String, String> = env
            .into_iter()
            .filter(|(k, _)| k.starts_with(&format!("{ENV_PREFIX}__")))
            .collect();
        builder = builder.add_source(
            config::Environment::with_prefix(ENV_PREFIX)
                .separator("__")
                .source(Some(env)),
        );
        let built = builder.build().context(
            "reading settings (config/default.toml, --config file, ONCEBOT__* variables)",
        )?;
        let settings: Settings = built.try_deserialize().map_err(|e| {
            anyhow::anyhow!(
                "invalid settings: {e} (every setting is listed with its meaning in config/default.toml; \
                 environment variables are ONCEBOT__SECTION__KEY)"
            )
        })?;
        Ok(settings)
    }

    /// The allowed users and who each is (`telegram.users`), or the entry that is wrong.
    pub fn directory(&self) -> Result<crate::users::Directory, SettingError> {
        let fix = || {
            format!(
                "set {} to <telegram id>=<MoviePilot name>:<viewer|user|admin>, comma-separated \
                 (e.g. 111111111=alice:admin,222222222=:user), each id also in {}",
                env_name("telegram.users"),
                env_name("telegram.allowed_users")
            )
        };
        let mappings = crate::users::parse_users(&self.telegram.users)
            .map_err(|e| SettingError::new("telegram.users", e.to_string(), fix()))?;
        crate::users::Directory::new(&self.telegram.allowed_users, mappings)
            .map_err(|e| SettingError::new("telegram.users", e.to_string(), fix()))
    }

    /// Checks what every command needs, plus what `needs` asks for.
    pub fn validate(&self, needs: Needs) -> Result<(), SettingError> {
        self.redis.validate()?;
        self.directory()?;
        self.moviepilot.validate_users_refresh()?;
        self.moviepilot.validate_library_cache()?;
        self.http.validate_limits()?;
        self.ledger.validate()?;
        self.worker.validate()?;
        self.dispatcher.validate()?;
        if needs.bot_api {
            self.telegram.validate_bot_api()?;
        }
        if needs.webhook {
            self.telegram.validate_webhook_secret()?;
        }
        self.commands.validate()?;
        self.telegram.validate_button_lifetimes()?;
        if needs.ingress {
            self.telegram.validate_updates()?;
            self.http.validate()?;
            // Every ingress serves the relay's wake-up path while the relay is on.
            if self.notify.enabled {
                self.notify.validate_wake_secret()?;
            }
        }
        if needs.moviepilot || needs.notify {
            self.moviepilot.validate()?;
        }
        if needs.notify {
            self.notify.validate(self.redis.command_timeout_ms)?;
            self.validate_notify_targets()?;
        }
        self.admin.validate()?;
        self.validate_liveness(needs)
    }

    /// The relay must have somewhere to send: a default, the admin chats, or a route.
    fn validate_notify_targets(&self) -> Result<(), SettingError> {
        let n = &self.notify;
        if n.chats.is_empty() && self.telegram.admin_chats.is_empty() && n.routes.trim().is_empty()
        {
            return Err(SettingError::new(
                "notify.chats",
                "is empty, and so are telegram.admin_chats and notify.routes: every notification \
                 would go nowhere",
                format!(
                    "set {} (or {}) to the chats that get MoviePilot's notifications, e.g. 123456789",
                    env_name("notify.chats"),
                    env_name("telegram.admin_chats")
                ),
            ));
        }
        Ok(())
    }

    /// The liveness of the consumer roles that run: an expiry that one slow heartbeat could
    /// outlive would let a live process look dead.
    fn validate_liveness(&self, needs: Needs) -> Result<(), SettingError> {
        let (w, d) = (&self.worker, &self.dispatcher);
        for (runs, interval_key, interval, ttl_key, ttl) in [
            (
                needs.moviepilot,
                "worker.heartbeat_interval_ms",
                w.heartbeat_interval_ms,
                "worker.liveness_ttl_ms",
                w.liveness_ttl_ms,
            ),
            (
                needs.dispatcher,
                "dispatcher.heartbeat_interval_ms",
                d.heartbeat_interval_ms,
                "dispatcher.liveness_ttl_ms",
                d.liveness_ttl_ms,
            ),
        ] {
            if !runs {
                continue;
            }
            if interval < 50 {
                return Err(SettingError::new(
                    interval_key,
                    format!("is {interval}, more often than Redis should be asked"),
                    format!(
                        "set {} to at least 50 (default 1000)",
                        env_name(interval_key)
                    ),
                ));
            }
            // One slow heartbeat (up to a whole command timeout late) must not let a live
            // process look dead.
            let least = interval + self.redis.command_timeout_ms;
            if ttl <= least {
                return Err(SettingError::new(
                    ttl_key,
                    format!(
                        "is {ttl}, not more than {interval_key} + redis.command_timeout_ms \
                         ({least}), so one slow heartbeat would make a live process look dead"
                    ),
                    format!("set {} above {least} (default 3500)", env_name(ttl_key)),
                ));
            }
        }
        Ok(())
    }

    /// The parsed `http.listen`.
    pub fn listen_addr(&self) -> Result<SocketAddr, std::net::AddrParseError> {
        self.http.listen_addr()
    }

    /// The operator page's own address: `None` when it shares `http.listen`.
    pub fn admin_listen_addr(&self) -> Result<Option<SocketAddr>, std::net::AddrParseError> {
        self.admin.listen_addr()
    }
}

/// `<digits>:<35ish characters of A-Z a-z 0-9 _ ->`, as @BotFather issues them.
fn token_looks_valid(token: &str) -> bool {
    let Some((id, rest)) = token.split_once(':') else {
        return false;
    };
    !id.is_empty()
        && id.chars().all(|c| c.is_ascii_digit())
        && !rest.is_empty()
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A list of Telegram ids (`telegram.allowed_users`, `telegram.admin_chats`).
/// Accepts `"1,2,3"` (what an environment variable gives), a TOML array of numbers or strings,
/// or a single number.
fn user_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Number(i64),
        List(Vec<Item>),
    }
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Item {
        Number(i64),
        Text(String),
    }
    fn parse(s: &str) -> Result<i64, String> {
        s.trim()
            .parse::<i64>()
            .map_err(|_| format!("{s:?} is not a Telegram user or chat id (a number)"))
    }
    let ids = match Raw::deserialize(d)? {
        Raw::Number(n) => vec![n],
        Raw::Text(s) => s
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(parse)
            .collect::<Result<_, _>>()
            .map_err(serde::de::Error::custom)?,
        Raw::List(items) => items
            .into_iter()
            .map(|i| match i {
                Item::Number(n) => Ok(n),
                Item::Text(s) => parse(&s),
            })
            .collect::<Result<_, _>>()
            .map_err(serde::de::Error::custom)?,
    };
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(env: &[(&str, &str)]) -> anyhow::Result<Settings> {
        Settings::load_from(
            None,
            env.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        )
    }

    fn serving_env() -> Vec<(&'static str, &'static str)> {
        vec![
            ("ONCEBOT__TELEGRAM__TOKEN", "123:abc-DEF_ghi"),
            ("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", "s3cret_-0123456789"),
            ("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1, 2,3"),
        ]
    }

    #[test]
    fn runtime_threads_default_to_one_per_core_and_are_bounded() {
        assert_eq!(load(&[]).unwrap().runtime_threads(), Ok(None));
        let one = load(&[("ONCEBOT__RUNTIME__WORKER_THREADS", "1")]).unwrap();
        assert_eq!(one.runtime_threads(), Ok(Some(1)));
        let many = load(&[("ONCEBOT__RUNTIME__WORKER_THREADS", "300")]).unwrap();
        let e = many.runtime_threads().unwrap_err();
        assert_eq!(e.key, "runtime.worker_threads");
        assert!(
            e.to_string().contains("ONCEBOT__RUNTIME__WORKER_THREADS"),
            "{e}"
        );
    }

    const ALL: Needs = Needs {
        ingress: true,
        webhook: true,
        bot_api: true,
        moviepilot: false,
        dispatcher: true,
        notify: false,
    };

    const WORKER: Needs = Needs {
        ingress: false,
        webhook: false,
        bot_api: false,
        moviepilot: true,
        dispatcher: false,
        notify: false,
    };

    const NOTIFY: Needs = Needs {
        ingress: false,
        webhook: false,
        bot_api: false,
        moviepilot: false,
        dispatcher: false,
        notify: true,
    };

    fn notify_env() -> Vec<(&'static str, &'static str)> {
        vec![
            ("ONCEBOT__MOVIEPILOT__URL", "http://127.0.0.1:3001"),
            ("ONCEBOT__MOVIEPILOT__API_KEY", "k"),
            ("ONCEBOT__NOTIFY__ENABLED", "true"),
            ("ONCEBOT__TELEGRAM__ADMIN_CHATS", "42"),
        ]
    }

    /// `telegram.users` is checked in every role (a worker records roles too), and a bad entry
    /// is named with why.
    #[test]
    fn telegram_users_is_checked_in_every_role_naming_the_entry() {
        let mut env = serving_env();
        env.push(("ONCEBOT__TELEGRAM__USERS", "1=alice:admin,2=:user"));
        let s = load(&env).unwrap();
        s.validate(ALL).unwrap();
        assert_eq!(s.directory().unwrap().rows().len(), 3);
        for (users, says) in [
            (
                "1=alice:admin,2=bob:boss",
                "\"2=bob:boss\" has an unknown role \"boss\"",
            ),
            (
                "1=alice:admin,9=x:user",
                "maps 9, who is not in telegram.allowed_users",
            ),
            ("1=alice:admin,1=bob:user", "maps 1 again"),
        ] {
            let mut env = serving_env();
            env.push(("ONCEBOT__TELEGRAM__USERS", users));
            for needs in [ALL, WORKER, NOTIFY, Needs::default()] {
                let e = load(&env).unwrap().validate(needs).unwrap_err();
                assert_eq!(e.key, "telegram.users");
                let text = e.to_string();
                assert!(text.contains(says), "{text}");
                assert!(text.contains("ONCEBOT__TELEGRAM__USERS"), "{text}");
            }
        }
    }

    #[test]
    fn notify_defaults_are_the_issues() {
        let s = load(&[]).unwrap();
        assert!(!s.notify.enabled);
        assert_eq!(s.notify.poll_interval_secs, 15);
        assert_eq!(s.notify.max_pages, 10);
        assert_eq!(s.notify.backfill, 0);
        assert_eq!(s.notify.duplicate_window_secs, 120);
        assert!(s.notify.chats.is_empty());
        load(&notify_env()).unwrap().validate(NOTIFY).unwrap();
    }

    #[test]
    fn notify_routes_take_both_spellings_and_name_their_variable_when_wrong() {
        let mut env = notify_env();
        env.push((
            "ONCEBOT__NOTIFY__ROUTES",
            "整理入库=-1001, 7; SiteMessage=7;organize=8",
        ));
        let s = load(&env).unwrap();
        s.validate(NOTIFY).unwrap();
        assert_eq!(
            s.notify.parsed_routes().unwrap(),
            vec![
                (NotificationType::Organize, vec![-1001, 7, 8]),
                (NotificationType::SiteMessage, vec![7]),
            ]
        );
        for bad in ["下载=1", "Organize", "Organize=abc", "Organize="] {
            let mut env = notify_env();
            env.push(("ONCEBOT__NOTIFY__ROUTES", bad));
            let e = load(&env).unwrap().validate(NOTIFY).unwrap_err();
            assert_eq!(e.key, "notify.routes", "{bad}");
            assert!(e.to_string().contains("ONCEBOT__NOTIFY__ROUTES"), "{e}");
        }
    }

    #[test]
    fn notify_settings_are_checked_only_when_the_relay_runs() {
        for (var, value, key) in [
            (
                "ONCEBOT__NOTIFY__POLL_INTERVAL_SECS",
                "0",
                "notify.poll_interval_secs",
            ),
            ("ONCEBOT__NOTIFY__MAX_PAGES", "0", "notify.max_pages"),
            (
                "ONCEBOT__NOTIFY__WEBHOOK_SECRET",
                "has space",
                "notify.webhook_secret",
            ),
            (
                "ONCEBOT__NOTIFY__LIVENESS_TTL_MS",
                "2000",
                "notify.liveness_ttl_ms",
            ),
            ("ONCEBOT__TELEGRAM__ADMIN_CHATS", "", "notify.chats"),
        ] {
            let mut env = notify_env();
            env.retain(|(k, _)| *k != var);
            env.push((var, value));
            let s = load(&env).unwrap();
            let e = s.validate(NOTIFY).unwrap_err();
            assert_eq!(e.key, key);
            assert!(
                e.fix.contains("ONCEBOT__NOTIFY__") || e.fix.contains("ONCEBOT__TELEGRAM__"),
                "{e}"
            );
            s.validate(Needs::default()).unwrap();
        }
        let mut env = notify_env();
        env.push(("ONCEBOT__NOTIFY__WEBHOOK_SECRET", "s3cret-value"));
        let s = load(&env).unwrap();
        assert!(!format!("{s:?}").contains("s3cret-value"));
    }

    #[test]
    fn a_liveness_expiry_one_slow_heartbeat_could_outlive_is_refused() {
        let worker = [
            ("ONCEBOT__MOVIEPILOT__URL", "http://127.0.0.1:3001"),
            ("ONCEBOT__MOVIEPILOT__API_KEY", "k"),
        ];
        load(&worker).unwrap().validate(WORKER).unwrap();
        let mut short = worker.to_vec();
        short.push(("ONCEBOT__WORKER__LIVENESS_TTL_MS", "3000"));
        let e = load(&short).unwrap().validate(WORKER).unwrap_err();
        assert_eq!(e.key, "worker.liveness_ttl_ms");
        assert!(
            e.to_string().contains("ONCEBOT__WORKER__LIVENESS_TTL_MS"),
            "{e}"
        );
        // Only for the roles that run: an ingress alone has no liveness.
        load(&[("ONCEBOT__REDIS__COMMAND_TIMEOUT_MS", "10000")])
            .unwrap()
            .validate(Needs::default())
            .unwrap();
        let mut often = serving_env();
        often.push(("ONCEBOT__DISPATCHER__HEARTBEAT_INTERVAL_MS", "10"));
        let e = load(&often).unwrap().validate(ALL).unwrap_err();
        assert_eq!(e.key, "dispatcher.heartbeat_interval_ms");
    }

    #[test]
    fn cluster_urls_and_replica_waits_are_checked() {
        let one = load(&[]).unwrap();
        assert!(!one.redis.cluster, "standalone is the default");
        assert_eq!(one.redis.wait_replicas, 0, "no WAIT by default");
        let seeds = "redis://10.0.0.1:7000, redis://10.0.0.2:7000";
        load(&[
            ("ONCEBOT__REDIS__URL", seeds),
            ("ONCEBOT__REDIS__CLUSTER", "true"),
        ])
        .unwrap()
        .validate(Needs::default())
        .unwrap();
        // Several nodes without the setting: the fix names it.
        let e = load(&[("ONCEBOT__REDIS__URL", seeds)])
            .unwrap()
            .validate(Needs::default())
            .unwrap_err();
        assert_eq!(e.key, "redis.url");
        assert!(
            e.to_string().contains("ONCEBOT__REDIS__CLUSTER=true"),
            "{e}"
        );
        let e = load(&[
            ("ONCEBOT__REDIS__URL", "redis://a:1,nowhere"),
            ("ONCEBOT__REDIS__CLUSTER", "true"),
        ])
        .unwrap()
        .validate(Needs::default())
        .unwrap_err();
        assert_eq!(e.key, "redis.url");
        let e = load(&[
            ("ONCEBOT__REDIS__WAIT_REPLICAS", "1"),
            ("ONCEBOT__REDIS__WAIT_TIMEOUT_MS", "0"),
        ])
        .unwrap()
        .validate(Needs::default())
        .unwrap_err();
        assert_eq!(e.key, "redis.wait_timeout_ms");
    }

    #[test]
    fn the_admin_page_is_off_by_default_and_its_settings_are_checked_when_on() {
        let off = load(&[]).unwrap();
        assert!(!off.admin.enabled());
        assert_eq!(off.admin.user, "admin");
        assert!(!off.admin.read_only);
        assert_eq!(off.admin_listen_addr(), Ok(None));
        // A bad address is no error while the page is off.
        load(&[("ONCEBOT__ADMIN__LISTEN", "nowhere")])
            .unwrap()
            .validate(Needs::default())
            .unwrap();
        let on = [
            ("ONCEBOT__ADMIN__PASSWORD", LONG_PW),
            ("ONCEBOT__ADMIN__LISTEN", "nowhere"),
        ];
        let e = load(&on).unwrap().validate(Needs::default()).unwrap_err();
        assert_eq!(e.key, "admin.listen");
        assert!(e.to_string().contains("ONCEBOT__ADMIN__LISTEN"), "{e}");
        let colon = [
            ("ONCEBOT__ADMIN__PASSWORD", LONG_PW),
            ("ONCEBOT__ADMIN__USER", "a:b"),
        ];
        let e = load(&colon)
            .unwrap()
            .validate(Needs::default())
            .unwrap_err();
        assert_eq!(e.key, "admin.user");
        let own = load(&[
            ("ONCEBOT__ADMIN__PASSWORD", LONG_PW),
            ("ONCEBOT__ADMIN__LISTEN", "127.0.0.1:8081"),
            ("ONCEBOT__ADMIN__READ_ONLY", "true"),
        ])
        .unwrap();
        own.validate(Needs::default()).unwrap();
        assert!(own.admin.read_only);
        assert_eq!(
            own.admin_listen_addr(),
            Ok(Some(([127, 0, 0, 1], 8081).into()))
        );
        assert_eq!(format!("{:?}", own.admin.password), "[redacted]");
    }

    const LONG_PW: &str = "sixteen-chars-ok";

    #[test]
    fn an_admin_password_shorter_than_16_characters_is_refused_with_how_to_make_one() {
        let e = load(&[("ONCEBOT__ADMIN__PASSWORD", "fifteen-chars-x")])
            .unwrap()
            .validate(Needs::default())
            .unwrap_err();
        assert_eq!(e.key, "admin.password");
        let said = e.to_string();
        assert!(said.contains("16 characters"), "{said}");
        assert!(said.contains("openssl rand -base64 24"), "{said}");
        assert!(said.contains("ONCEBOT__ADMIN__PASSWORD"), "{said}");
        assert!(
            !said.contains("fifteen-chars-x"),
            "the password is not repeated: {said}"
        );
        // Characters, not bytes: 16 Chinese characters are 16.
        load(&[(
            "ONCEBOT__ADMIN__PASSWORD",
            "一二三四五六七八九十甲乙丙丁戊己",
        )])
        .unwrap()
        .validate(Needs::default())
        .unwrap();
        load(&[("ONCEBOT__ADMIN__PASSWORD", LONG_PW)])
            .unwrap()
            .validate(Needs::default())
            .unwrap();
    }

    #[test]
    fn a_library_cache_longer_than_a_day_is_refused_and_0_turns_it_off() {
        let with = |secs: &str| load(&[("ONCEBOT__MOVIEPILOT__LIBRARY_CACHE_SECS", secs)]).unwrap();
        let defaults = load(&[]).unwrap();
        assert_eq!(
            defaults.moviepilot.library_cache(),
            Some(Duration::from_secs(600))
        );
        assert_eq!(with("0").moviepilot.library_cache(), None);
        with("0").validate(Needs::default()).unwrap();
        with("86400").validate(Needs::default()).unwrap();
        let e = with("86401").validate(Needs::default()).unwrap_err();
        assert_eq!(e.key, "moviepilot.library_cache_secs");
        let said = e.to_string();
        assert!(
            said.contains("ONCEBOT__MOVIEPILOT__LIBRARY_CACHE_SECS"),
            "{said}"
        );
        assert!(!said.contains('\n'), "one line: {said}");
    }

    #[test]
    fn admin_public_url_is_an_origin_or_empty() {
        let with = |url: &str| {
            load(&[
                ("ONCEBOT__ADMIN__PASSWORD", LONG_PW),
                ("ONCEBOT__ADMIN__PUBLIC_URL", url),
            ])
            .unwrap()
        };
        assert_eq!(with("").admin.public_origin(), Ok(None));
        for (given, origin) in [
            ("https://bot.example.org", "https://bot.example.org"),
            ("https://bot.example.org/", "https://bot.example.org"),
            ("https://bot.example.org:443", "https://bot.example.org"),
            (
                "https://Bot.Example.org:8443",
                "https://bot.example.org:8443",
            ),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ] {
            let s = with(given);
            s.validate(Needs::default()).unwrap();
            assert_eq!(
                s.admin.public_origin(),
                Ok(Some(origin.to_string())),
                "{given}"
            );
        }
        for bad in [
            "bot.example.org",
            "ftp://bot.example.org",
            "https://bot.example.org/admin/",
            "https://u:p@bot.example.org",
            "https://bot.example.org/?a=1",
        ] {
            let e = with(bad).validate(Needs::default()).unwrap_err();
            assert_eq!(e.key, "admin.public_url", "{bad}");
            assert!(e.to_string().contains("ONCEBOT__ADMIN__PUBLIC_URL"), "{e}");
        }
    }

    #[test]
    fn http_limits_default_to_10_60_1024_and_0_is_refused_by_name() {
        let s = load(&[]).unwrap();
        assert_eq!(s.http.header_read_timeout_secs, 10);
        assert_eq!(s.http.idle_timeout_secs, 60);
        assert_eq!(s.http.max_connections, 1024);
        for key in [
            "http.header_read_timeout_secs",
            "http.idle_timeout_secs",
            "http.max_connections",
        ] {
            let var = env_name(key);
            // Every process serves http.listen, so every role's check refuses it.
            let e = load(&[(var.as_str(), "0")])
                .unwrap()
                .validate(Needs::default())
                .unwrap_err();
            assert_eq!(e.key, key);
            assert!(e.to_string().contains(&var), "{e}");
        }
    }

    #[test]
    fn defaults_load_and_are_safe() {
        let s = load(&[]).unwrap();
        assert_eq!(s.redis.url.expose(), "redis://127.0.0.1:6379");
        assert_eq!(s.redis.key_prefix, "oncebot");
        assert_eq!(s.http.listen, "0.0.0.0:8080");
        assert_eq!(s.telegram.api_url, "https://api.telegram.org");
        assert!(s.validate(Needs::default()).is_ok());
        assert_eq!(s.validate(ALL).unwrap_err().key, "telegram.token");
    }

    #[test]
    fn environment_overrides_with_double_underscores() {
        let mut env = serving_env();
        env.push(("ONCEBOT__REDIS__URL", "redis://10.0.0.1:6380"));
        env.push(("ONCEBOT__REDIS__KEY_PREFIX", "bot2"));
        env.push(("ONCEBOT__HTTP__LISTEN", "127.0.0.1:9000"));
        let s = load(&env).unwrap();
        assert_eq!(s.redis.url.expose(), "redis://10.0.0.1:6380");
        assert_eq!(s.redis.key_prefix, "bot2");
        assert_eq!(s.telegram.allowed_users, vec![1, 2, 3]);
        s.validate(ALL).unwrap();
    }

    #[test]
    fn a_missing_webhook_secret_names_its_variable() {
        let env: Vec<_> = serving_env()
            .into_iter()
            .filter(|(k, _)| !k.contains("SECRET"))
            .collect();
        let err = load(&env).unwrap().validate(ALL).unwrap_err();
        assert_eq!(err.key, "telegram.webhook_secret");
        assert!(
            err.to_string()
                .contains("ONCEBOT__TELEGRAM__WEBHOOK_SECRET")
        );
    }

    #[test]
    fn a_webhook_secret_with_forbidden_characters_is_rejected() {
        let mut env = serving_env();
        env.retain(|(k, _)| !k.contains("SECRET"));
        env.push(("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", "has space"));
        let err = load(&env).unwrap().validate(ALL).unwrap_err();
        assert_eq!(err.key, "telegram.webhook_secret");
    }

    /// Issue 41, item 3: a secret that guards a door has at least 16 characters; the error
    /// names the setting and how to make one.
    #[test]
    fn a_secret_shorter_than_16_characters_is_refused_naming_the_setting_and_the_fix() {
        for (var, key) in [
            (
                "ONCEBOT__TELEGRAM__WEBHOOK_SECRET",
                "telegram.webhook_secret",
            ),
            ("ONCEBOT__NOTIFY__WEBHOOK_SECRET", "notify.webhook_secret"),
        ] {
            for (value, ok) in [
                ("a", false),
                ("abcdefghij12345", false),
                ("abcdefghij123456", true),
            ] {
                let mut env = serving_env();
                env.extend(notify_env());
                env.retain(|(k, _)| *k != var);
                env.push((var, value));
                let got = load(&env).unwrap().validate(ALL);
                if ok {
                    assert!(got.is_ok(), "{var}={value}: {got:?}");
                    continue;
                }
                let err = got.unwrap_err();
                assert_eq!(err.key, key, "{var}={value}");
                let line = err.to_string();
                assert!(line.contains(var), "{line}");
                assert!(line.contains("fewer than the 16"), "{line}");
                assert!(line.contains("openssl rand -hex 32"), "{line}");
            }
        }
    }

    #[test]
    fn a_non_numeric_user_id_is_rejected_with_its_value() {
        let mut env = serving_env();
        env.retain(|(k, _)| !k.contains("ALLOWED"));
        env.push(("ONCEBOT__TELEGRAM__ALLOWED_USERS", "12,alice"));
        let err = load(&env).unwrap_err().to_string();
        assert!(err.contains("alice"), "{err}");
    }

    #[test]
    fn an_unknown_setting_is_an_error() {
        let err = load(&[("ONCEBOT__REDIS__URLL", "x")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("urll"), "{err}");
    }

    #[test]
    fn short_update_retention_is_rejected() {
        let s = load(&[("ONCEBOT__LEDGER__UPDATE_RETENTION_SECS", "3600")]).unwrap();
        assert_eq!(
            s.validate(Needs::default()).unwrap_err().key,
            "ledger.update_retention_secs"
        );
    }

    #[test]
    fn a_zero_poll_conflict_pause_is_rejected() {
        let mut env = serving_env();
        env.push(("ONCEBOT__TELEGRAM__POLL_CONFLICT_RETRY_SECS", "0"));
        let err = load(&env).unwrap().validate(ALL).unwrap_err();
        assert_eq!(err.key, "telegram.poll_conflict_retry_secs");
    }

    #[test]
    fn admin_chats_take_user_and_group_ids_and_default_to_none() {
        assert!(load(&[]).unwrap().telegram.admin_chats.is_empty());
        let s = load(&[("ONCEBOT__TELEGRAM__ADMIN_CHATS", "1001, -1001234567890")]).unwrap();
        assert_eq!(s.telegram.admin_chats, vec![1001, -1001234567890]);
        assert_eq!(s.telegram.confirm_ttl_secs, 600);
    }

    #[test]
    fn a_zero_button_lifetime_is_rejected() {
        let s = load(&[("ONCEBOT__TELEGRAM__CONFIRM_TTL_SECS", "0")]).unwrap();
        assert_eq!(
            s.validate(Needs::default()).unwrap_err().key,
            "telegram.confirm_ttl_secs"
        );
    }

    #[test]
    fn secrets_never_show_in_debug_output() {
        let s = load(&serving_env()).unwrap();
        let shown = format!("{s:?}");
        assert!(!shown.contains("abc-DEF_ghi"));
        assert!(!shown.contains("s3cret_-"));
    }

    #[test]
    fn moviepilot_defaults_need_a_url_for_the_worker() {
        let s = load(&[]).unwrap();
        assert_eq!(s.moviepilot.timeout_secs, 15);
        assert!(s.validate(Needs::default()).is_ok());
        let err = s.validate(WORKER).unwrap_err();
        assert_eq!(err.key, "moviepilot.url");
        assert!(
            err.to_string().contains("ONCEBOT__MOVIEPILOT__URL"),
            "{err}"
        );
    }

    #[test]
    fn moviepilot_url_must_be_http() {
        let s = load(&[
            ("ONCEBOT__MOVIEPILOT__URL", "moviepilot:3001"),
            ("ONCEBOT__MOVIEPILOT__API_KEY", "k"),
        ])
        .unwrap();
        assert_eq!(s.validate(WORKER).unwrap_err().key, "moviepilot.url");
    }

    #[test]
    fn a_moviepilot_body_limit_too_small_for_one_release_is_rejected() {
        let worker = |limit: &'static str| {
            load(&[
                ("ONCEBOT__MOVIEPILOT__URL", "http://127.0.0.1:3001"),
                ("ONCEBOT__MOVIEPILOT__API_KEY", "k"),
                ("ONCEBOT__MOVIEPILOT__MAX_BODY_BYTES", limit),
            ])
            .unwrap()
            .validate(WORKER)
        };
        let err = worker("1000").unwrap_err();
        assert_eq!(err.key, "moviepilot.max_body_bytes");
        assert!(
            err.to_string()
                .contains("ONCEBOT__MOVIEPILOT__MAX_BODY_BYTES"),
            "{err}"
        );
        worker("65536").unwrap();
        let defaults = load(&[]).unwrap();
        assert_eq!(defaults.moviepilot.max_body_bytes, 8 * 1024 * 1024);
    }

    #[test]
    fn moviepilot_needs_an_api_key_or_a_login() {
        let url = ("ONCEBOT__MOVIEPILOT__URL", "http://127.0.0.1:3001");
        let err = load(&[url]).unwrap().validate(WORKER).unwrap_err();
        assert_eq!(err.key, "moviepilot.api_key");
        let text = err.to_string();
        assert!(text.contains("ONCEBOT__MOVIEPILOT__API_KEY"), "{text}");
        assert!(text.contains("ONCEBOT__MOVIEPILOT__USERNAME"), "{text}");
        assert!(text.contains("ONCEBOT__MOVIEPILOT__PASSWORD"), "{text}");

        let half = load(&[url, ("ONCEBOT__MOVIEPILOT__USERNAME", "admin")]).unwrap();
        assert_eq!(
            half.validate(WORKER).unwrap_err().key,
            "moviepilot.password"
        );

        for env in [
            vec![url, ("ONCEBOT__MOVIEPILOT__API_KEY", "k")],
            vec![
                url,
                ("ONCEBOT__MOVIEPILOT__USERNAME", "admin"),
                ("ONCEBOT__MOVIEPILOT__PASSWORD", "pw"),
            ],
        ] {
            load(&env).unwrap().validate(WORKER).unwrap();
        }
    }

    #[test]
    fn moviepilot_secrets_never_show_in_debug_output() {
        let s = load(&[
            ("ONCEBOT__MOVIEPILOT__API_KEY", "key-1234567890abcdef"),
            ("ONCEBOT__MOVIEPILOT__PASSWORD", "pass-word-xyz"),
        ])
        .unwrap();
        let shown = format!("{s:?}");
        assert!(!shown.contains("key-1234567890abcdef"));
        assert!(!shown.contains("pass-word-xyz"));
    }

    #[test]
    fn env_names_follow_the_documented_pattern() {
        assert_eq!(env_name("redis.key_prefix"), "ONCEBOT__REDIS__KEY_PREFIX");
    }

    #[test]
    fn the_example_operator_file_loads_and_validates() {
        let path = crate::assets::path("config/example.toml");
        let s = Settings::load_from(Some(&path), std::iter::empty()).unwrap();
        assert_eq!(s.telegram.allowed_users, vec![123456789, 987654321]);
        assert_eq!(s.telegram.locale, Locale::En);
        // The token and the webhook secret come from the environment, never from the file.
        s.validate(Needs {
            ingress: true,
            ..Needs::default()
        })
        .unwrap();
        let with_secrets = Settings::load_from(
            Some(&path),
            serving_env()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string())),
        )
        .unwrap();
        with_secrets.validate(ALL).unwrap();
    }

    /// docs/settings.md's table is the operator's reference; it must not miss a key. Each key
    /// has its own row, which opens with the key and then its variable.
    #[test]
    fn the_settings_doc_has_a_row_for_every_setting_with_its_variable() {
        let doc = crate::assets::read("docs/settings.md");
        let mut section = String::new();
        let mut missing = Vec::new();
        for line in DEFAULT_TOML.lines().map(str::trim) {
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = name.to_string();
            } else if let Some((key, _)) = line.split_once('=')
                && !line.starts_with('#')
            {
                let setting = format!("{section}.{}", key.trim());
                let var = env_name(&setting);
                let row = format!("| `{setting}` | `{var}` |");
                if !doc.lines().any(|l| l.starts_with(&row)) {
                    missing.push(row);
                }
            }
        }
        assert!(
            missing.is_empty(),
            "docs/settings.md has no row {missing:?}"
        );
    }
}
