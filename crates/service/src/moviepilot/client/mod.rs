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
//!
//! The core every area of MoviePilot's API is called through; the areas' methods are in the
//! files beside this directory (`subscriptions`, `media`, `downloads`, `history`, `system`,
//! `users`, `library`, `messages`), each an `impl MoviePilot` that builds its [`Call`]s and
//! reads their answers with what this module offers, and none of which this module knows.
//! Here: the handle and its shared state, and the one call path (`Inner::call`: credential,
//! send, renew once on a refusal, metrics). Its steps, one file each:
//! - `call`: [`Call`] (its builder) and `Answer`, what goes out and what came back.
//! - `http`: the HTTP client, sending one call with one credential, reading a body within the
//!   size limit, transport errors.
//! - `auth`: the credentials and the one login (its gate, backoff and refusals).
//! - `answers`: status and body checks, envelopes, lists, and their error kinds.
//! - `connect`: start-up (version, dialect, which credential opens the API).
//! - `text`: the short texts errors are made of.

mod answers;
mod auth;
mod call;
mod connect;
mod http;
mod text;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use self::auth::{Auth, TokenState, credentials};
use self::call::{Answer, route_label};
use self::http::{base_urls, http_client};
use self::text::with_context;
use super::error::MpError;
use super::gate::LoginGate;
use super::types::Dialect;
use crate::config::{MoviePilotSettings, env_name};

pub(super) use self::call::Call;
pub use self::connect::Announced;
pub(super) use self::http::Credential;
pub(super) use self::text::{detail_suffix, media_label, short};

/// The fixed literal `/system/global` wants; it is not a secret (MoviePilot's frontend sends it).
pub(super) const GLOBAL_TOKEN: &str = "moviepilot";

/// A connected MoviePilot. Cheap to clone; every clone shares the HTTP pool and the token.
#[derive(Clone)]
pub struct MoviePilot {
    pub(super) inner: Arc<Inner>,
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

pub(super) struct Inner {
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
    pub(super) dialect: Dialect,
    /// As the server reported it, e.g. `v2.5.6`, or a description when it reports none.
    pub(super) version: String,
    timeout: Duration,
    pub(super) search_timeout: Duration,
    pub(super) resource_search_timeout: Duration,
    pub(super) download_timeout: Duration,
    /// `moviepilot.max_body_bytes`.
    pub(super) max_body: usize,
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

    pub(super) fn saw_unreachable(&self) {
        self.unreachable_at
            .store(epoch_ms(), std::sync::atomic::Ordering::Relaxed);
    }
}

fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl MoviePilot {
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
}

/// The one call path: every request of every area goes through [`Inner::call`].
impl Inner {
    /// [`Self::call_once_renewed`], timed and counted in the metrics by route; remembers
    /// whether MoviePilot let oncebot's credentials in.
    pub(super) async fn call(&self, call: &Call) -> Result<Answer, MpError> {
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
}
