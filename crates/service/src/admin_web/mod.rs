//! The operator's page: `/admin/` (counts by state, the jobs waiting for a person, streams,
//! consumers, recent jobs with a filter) and `/admin/jobs/<id>` (one job's fields and timeline),
//! read from the ledger as `oncebot jobs` reads it. A decision is a plain POST form settled by
//! the same resolve.lua as the CLI and the Telegram review buttons, so the first one wins.
//!
//! Off unless `admin.password` is set (then every `/admin` path is a 404). Every request needs
//! HTTP basic auth, compared in constant time on the headers before any body is read, in the
//! peer's turn (`throttle`: guessing is slowed per peer); every action needs the same origin
//! (Origin, else Referer: scheme, host and port of `admin.public_url`, else `http://` and Host)
//! and a CSRF field only a signed-in page carries; read-only mode offers no action and refuses a
//! posted one. The page never reads a setting's secret or a release
//! list (torrent data with site cookies), so it cannot show one.

mod auth;
mod pages;
mod throttle;

use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Buf, Bytes};
use futures::Stream;
use warp::Filter;
use warp::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use warp::reply::Response;

use crate::config::{Locale, Settings};
use crate::http_server::{BodyError, Peer, read_body};
use crate::i18n::Render;
use crate::ledger::{Job, JobFilter, JobState, Ledger, LedgerError, Resolution, Resolved};
use auth::Credentials;
pub use pages::DECISIONS;
use pages::{Dashboard, FilterForm, Frame};
use throttle::{Throttle, Turn};

/// The newest jobs the counts look at: one HGET each, every few seconds per open page.
const COUNT_WINDOW: usize = 1000;
/// Recent jobs listed under the filter.
const RECENT_SHOWN: usize = 50;
/// Jobs waiting for a person shown at once (the rest wait their turn; the count says how many).
const REVIEW_SHOWN: usize = 100;
/// Largest form body accepted: a decision, a note and the CSRF field.
const MAX_FORM_BYTES: u64 = 16 * 1024;

const CSS: &str = include_str!("assets/admin.css");
const JS: &str = include_str!("assets/admin.js");

/// The page's settings and its door onto the ledger.
#[derive(Clone)]
pub struct AdminWeb {
    ledger: Ledger,
    credentials: Credentials,
    /// Guessing slowed per peer; one table for the page, shared by its clones.
    throttle: Arc<Throttle>,
    /// `admin.public_url` as an origin: the one a decision must come from, when set.
    public_origin: Option<String>,
    read_only: bool,
    locale: Locale,
    job_retention: Duration,
    /// The allowed users and the setting's mappings (`telegram.users`); MoviePilot's side is
    /// read from the ledger at each render, as `oncebot users` reads it.
    users: Arc<crate::users::Directory>,
    /// Whether MoviePilot's own mapping is on (`moviepilot.users_refresh_secs` > 0).
    moviepilot_users: bool,
}

impl AdminWeb {
    /// The page, when `admin.password` is set.
    pub fn from_settings(settings: &Settings, ledger: Ledger) -> Option<AdminWeb> {
        let a = &settings.admin;
        a.enabled().then(|| AdminWeb {
            ledger,
            credentials: Credentials::new(&a.user, a.password.expose()),
            throttle: Arc::default(),
            // Validated at start (`AdminSettings::validate`); a bad one cannot reach here.
            public_origin: a.public_origin().ok().flatten(),
            read_only: a.read_only,
            locale: settings.telegram.locale,
            job_retention: Duration::from_secs(settings.worker.job_retention_secs),
            // Validated at start (`Settings::validate`), like the origin above.
            users: Arc::new(settings.directory().unwrap_or_default()),
            moviepilot_users: settings.moviepilot.users_refresh().is_some(),
        })
    }

    fn frame(&self) -> Frame<'_> {
        Frame {
            user: self.credentials.user(),
            read_only: self.read_only,
        }
    }
}

/// One request under `/admin`, as the handler needs it.
struct Request {
    method: Method,
    /// The whole path, e.g. `/admin/jobs/7`.
    path: String,
    query: String,
    headers: HeaderMap,
    body: Bytes,
}

/// Every path under `/admin`; without a page (no password) each is a 404, as if absent. The
/// credentials are checked on the headers before a body is read, so a stranger's form costs no
/// read.
pub fn routes(
    admin: Option<AdminWeb>,
) -> impl Filter<Extract = (Response,), Error = warp::Rejection> + Clone {
    warp::path("admin")
        .and(warp::method())
        .and(warp::path::full())
        .and(warp::query::raw().or(warp::any().map(String::new)).unify())
        .and(warp::header::headers_cloned())
        .and(warp::ext::optional::<Peer>())
        .and(warp::body::stream())
        .then(
            move |method: Method,
                  path: warp::path::FullPath,
                  query: String,
                  headers,
                  peer: Option<Peer>,
                  body| {
                let admin = admin.clone();
                async move {
                    let Some(admin) = admin else {
                        return plain(StatusCode::NOT_FOUND, "");
                    };
                    if let Err(refused) = admin.sign_in(&headers, peer.map(|p| p.0.ip())).await {
                        return secured(refused);
                    }
                    let body = match read_form(body, &method).await {
                        Ok(body) => body,
                        Err(code) => return plain(code, "form too large or broken\n"),
                    };
                    let req = Request {
                        method,
                        path: path.as_str().to_string(),
                        query,
                        headers,
                        body,
                    };
                    secured(admin.handle(req).await)
                }
            },
        )
}

impl AdminWeb {
    /// Basic auth, in the peer's turn: a slowed peer waits for it or gets 429, right password
    /// or not (see `throttle`). A miss is counted and logged with the peer.
    async fn sign_in(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> Result<(), Response> {
        if !auth::has_credentials(headers) {
            return Err(auth::challenge());
        }
        match self.throttle.turn(peer) {
            Turn::Now => {}
            Turn::After(wait) => tokio::time::sleep(wait).await,
            Turn::Refused(retry) => return Err(too_many(retry)),
        }
        match self.credentials.check(headers) {
            auth::Checked::Allowed => Ok(()),
            auth::Checked::Missing => Err(auth::challenge()),
            auth::Checked::Wrong => {
                if let Some(log) = self.throttle.missed(peer) {
                    let peer = peer.map_or_else(|| "unknown".to_string(), |ip| ip.to_string());
                    tracing::warn!(
                        %peer,
                        misses = log.misses,
                        unlogged = log.unlogged,
                        "admin page: wrong user or password refused (misses: this peer's within \
                         10 s; unlogged: since its last line); after 5 its guesses are slowed to \
                         10 a second"
                    );
                }
                Err(auth::challenge())
            }
        }
    }

    async fn handle(&self, req: Request) -> Response {
        let segments: Vec<&str> = req
            .path
            .trim_start_matches("/admin")
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        match (&req.method, segments.as_slice()) {
            (&Method::GET, []) if req.path == "/admin" => redirect("/admin/"),
            (&Method::GET, []) => self.dashboard(&req.query).await,
            (&Method::GET, ["jobs", id]) => match id.parse() {
                Ok(id) => self.job(id, &req.query).await,
                Err(_) => self.message(
                    StatusCode::NOT_FOUND,
                    "No such job",
                    "A job id is a number.",
                ),
            },
            (&Method::POST, ["jobs", id, "resolve"]) => match id.parse() {
                Ok(id) => self.resolve(id, &req).await,
                Err(_) => self.message(
                    StatusCode::NOT_FOUND,
                    "No such job",
                    "A job id is a number.",
                ),
            },
            (&Method::GET, ["assets", "admin.css"]) => asset(CSS, "text/css; charset=utf-8"),
            (&Method::GET, ["assets", "admin.js"]) => asset(JS, "text/javascript; charset=utf-8"),
            (_, ["jobs", _, "resolve"]) => plain(StatusCode::METHOD_NOT_ALLOWED, ""),
            _ => self.message(StatusCode::NOT_FOUND, "Not found", "There is no such page."),
        }
    }

    async fn dashboard(&self, query: &str) -> Response {
        let form: FilterForm = parse_filter(query);
        // A filter that cannot be used shows the recent jobs unfiltered, and says why.
        let (filter, id, filter_error) = match job_filter(&form) {
            Ok((filter, id)) => (filter, id, None),
            Err(e) => (
                JobFilter {
                    limit: RECENT_SHOWN,
                    ..JobFilter::default()
                },
                None,
                Some(e),
            ),
        };
        let l = &self.ledger;
        let read = futures::try_join!(
            l.state_counts(COUNT_WINDOW),
            l.queue_stats(),
            l.consumers(),
            l.jobs_needing_review(REVIEW_SHOWN),
            self.recent(&filter, id),
            l.notify_position(),
            l.stored_directory(self.moviepilot_users),
        );
        let (counts, queues, consumers, review, recent, relay, stored) = match read {
            Ok(all) => all,
            Err(e) => return self.unavailable(&e),
        };
        let users = crate::users_sync::directory_of(&self.users, &stored);
        let users_note = crate::users_sync::describe(stored.moviepilot.as_ref(), &users);
        let users = users.rows();
        let csrf = self.credentials.csrf_token(now_secs());
        let markup = pages::dashboard(
            &self.frame(),
            &Dashboard {
                counts: &counts,
                queues: &queues,
                consumers: &consumers,
                relay: relay.as_ref(),
                review: &review,
                recent: &recent,
                users: &users,
                users_note: &users_note,
                filter: &form,
                filter_error: filter_error.as_deref(),
                csrf: &csrf,
            },
        );
        let code = if filter_error.is_some() {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::OK
        };
        html(code, markup)
    }

    /// The recent jobs the filter asks for; with one id, that job if it also matches the
    /// state and chat asked for.
    async fn recent(&self, filter: &JobFilter, id: Option<u64>) -> Result<Vec<Job>, LedgerError> {
        match id {
            Some(id) => Ok(self
                .ledger
                .job(id)
                .await?
                .into_iter()
                .filter(|j| {
                    filter.status.is_none_or(|s| j.status == s)
                        && filter.chat_id.is_none_or(|c| j.chat_id == c)
                })
                .collect()),
            None => self.ledger.list_jobs(filter).await,
        }
    }

    /// MoviePilot's user mapping as stored, when this deployment reads it.
    async fn job(&self, id: u64, query: &str) -> Response {
        let job = match self.ledger.job(id).await {
            Ok(Some(job)) => job,
            Ok(None) => {
                return self.message(
                    StatusCode::NOT_FOUND,
                    "No such job",
                    &format!("Job {id} is not in the ledger (it never existed, or its retention expired)."),
                );
            }
            Err(e) => return self.unavailable(&e),
        };
        // Only a decision's own name is shown back, never the query's text.
        let resolved = serde_urlencoded::from_str::<Vec<(String, String)>>(query)
            .unwrap_or_default()
            .into_iter()
            .find(|(k, _)| k == "resolved")
            .and_then(|(_, v)| {
                DECISIONS
                    .iter()
                    .find(|(d, _)| d.as_str() == v)
                    .map(|(d, _)| d.as_str())
            });
        let csrf = self.credentials.csrf_token(now_secs());
        html(
            StatusCode::OK,
            pages::job_page(&self.frame(), &job, &csrf, resolved),
        )
    }

    /// A decision from a form: refused in read-only mode, from another origin, without this
    /// page's CSRF field, or for a job no longer waiting for a person (the first decision won).
    async fn resolve(&self, id: u64, req: &Request) -> Response {
        match self.decision(id, req) {
            Ok((decision, note)) => self.settle(id, decision, &note).await,
            Err(refused) => {
                let (code, title, text) = refused.page();
                self.message(code, title, text)
            }
        }
    }

    /// The decision a form asks for and its note, or why it is refused (logged where a person
    /// may not be the one who sent it).
    fn decision(&self, id: u64, req: &Request) -> Result<(Resolution, String), Refused> {
        if self.read_only {
            return Err(Refused::ReadOnly);
        }
        if !auth::same_origin(&req.headers, self.public_origin.as_deref()) {
            tracing::warn!(
                job = id,
                origin = ?auth::source_origin(&req.headers),
                expected = ?auth::expected_origin(&req.headers, self.public_origin.as_deref()),
                "admin page: a decision from another origin refused (behind a TLS proxy, set \
                 ONCEBOT__ADMIN__PUBLIC_URL to the page's https:// address)"
            );
            return Err(Refused::OtherOrigin);
        }
        let form: Vec<(String, String)> =
            serde_urlencoded::from_bytes(&req.body).unwrap_or_default();
        let field = |name: &str| {
            form.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
                .unwrap_or("")
        };
        if !self.credentials.csrf_valid(field("csrf"), now_secs()) {
            tracing::warn!(
                job = id,
                "admin page: a decision without a valid CSRF field refused"
            );
            return Err(Refused::NoCsrf);
        }
        let decision = Resolution::ALL
            .into_iter()
            .find(|d| d.as_str() == field("decision"))
            .ok_or(Refused::NoDecision)?;
        let typed: String = field("note").chars().take(200).collect();
        let note = match typed.trim() {
            "" => format!("admin page ({})", self.credentials.user()),
            why => format!("admin page ({}): {why}", self.credentials.user()),
        };
        Ok((decision, note))
    }

    /// Settles the job through resolve.lua, as `oncebot jobs resolve` does; the first decision
    /// stands.
    async fn settle(&self, id: u64, decision: Resolution, note: &str) -> Response {
        // The user hears about it as from `oncebot jobs resolve`.
        let reply = Render::new(self.locale).resolved(decision);
        match self
            .ledger
            .resolve(id, decision, note, &reply, self.job_retention)
            .await
        {
            Ok(Resolved::Settled(status)) => {
                tracing::info!(job = id, decision = decision.as_str(), %status, "job resolved on the admin page");
                redirect(&format!("/admin/jobs/{id}?resolved={}", decision.as_str()))
            }
            Ok(Resolved::Missing) => self.message(
                StatusCode::NOT_FOUND,
                "No such job",
                &format!("Job {id} is not in the ledger."),
            ),
            Ok(Resolved::NotWaiting(status)) => self.message(
                StatusCode::CONFLICT,
                "Already decided",
                &format!(
                    "Job {id} is {status}, not needs_review: it was settled already (the first decision stands)."
                ),
            ),
            Err(e) => self.unavailable(&e),
        }
    }

    fn message(&self, code: StatusCode, title: &str, text: &str) -> Response {
        html(code, pages::message(&self.frame(), title, text))
    }

    fn unavailable(&self, e: &crate::ledger::LedgerError) -> Response {
        tracing::warn!(error = %e, "admin page: the ledger is unavailable");
        self.message(
            StatusCode::SERVICE_UNAVAILABLE,
            "Redis is unavailable",
            "The ledger could not be read just now; the page tries again by itself.",
        )
    }
}

/// Why a decision's form settles nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    /// `admin.read_only`.
    ReadOnly,
    /// Its Origin (else Referer) is not this page's.
    OtherOrigin,
    /// Its CSRF field is missing, forged or too old.
    NoCsrf,
    /// It names no decision a person may take.
    NoDecision,
}

impl Refused {
    /// The page that says so: status, title and text.
    fn page(self) -> (StatusCode, &'static str, &'static str) {
        match self {
            Refused::ReadOnly => (
                StatusCode::FORBIDDEN,
                "Read-only",
                "This page is read-only (ONCEBOT__ADMIN__READ_ONLY): it settles no job.",
            ),
            Refused::OtherOrigin => (
                StatusCode::FORBIDDEN,
                "Refused",
                "The form did not come from this page (its Origin or Referer is another site's, or missing).",
            ),
            Refused::NoCsrf => (
                StatusCode::FORBIDDEN,
                "Refused",
                "The form's security field is missing or too old: reload the page and decide again.",
            ),
            Refused::NoDecision => (
                StatusCode::BAD_REQUEST,
                "No decision",
                "Choose Mark succeeded, Mark failed or Retry.",
            ),
        }
    }
}

fn parse_filter(query: &str) -> FilterForm {
    let mut form = FilterForm::default();
    for (k, v) in serde_urlencoded::from_str::<Vec<(String, String)>>(query).unwrap_or_default() {
        let v = v.trim().to_string();
        match k.as_str() {
            "state" => form.state = v,
            "chat" => form.chat = v,
            "id" => form.id = v,
            _ => {}
        }
    }
    form
}

/// The filter as the ledger takes it, or what is wrong with a field, said plainly.
fn job_filter(form: &FilterForm) -> Result<(JobFilter, Option<u64>), String> {
    let status = match form.state.as_str() {
        "" => None,
        s => Some(s.parse::<JobState>().map_err(|_| {
            let names: Vec<&str> = JobState::ALL.iter().map(|s| s.as_str()).collect();
            format!(
                "state {s:?} is not a job state; use one of {}.",
                names.join(", ")
            )
        })?),
    };
    let chat_id = match form.chat.as_str() {
        "" => None,
        c => Some(c.parse::<i64>().map_err(|_| {
            format!("chat {c:?} is not a chat id (a number; groups are negative).")
        })?),
    };
    let id = match form.id.as_str() {
        "" => None,
        i => Some(
            i.trim_start_matches('#')
                .parse::<u64>()
                .map_err(|_| format!("id {i:?} is not a job id (a number)."))?,
        ),
    };
    Ok((
        JobFilter {
            status,
            chat_id,
            limit: RECENT_SHOWN,
        },
        id,
    ))
}

/// A form body, at most [`MAX_FORM_BYTES`]; other methods' bodies are not read.
async fn read_form<S, B>(body: S, method: &Method) -> Result<Bytes, StatusCode>
where
    S: Stream<Item = Result<B, warp::Error>> + Unpin,
    B: Buf,
{
    if method != Method::POST {
        return Ok(Bytes::new());
    }
    read_body(body, MAX_FORM_BYTES).await.map_err(|e| match e {
        BodyError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        BodyError::Broken => StatusCode::BAD_REQUEST,
        BodyError::Slow => StatusCode::REQUEST_TIMEOUT,
    })
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

fn html(code: StatusCode, markup: maud::Markup) -> Response {
    let mut resp = Response::new(markup.into_string().into());
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    resp
}

fn plain(code: StatusCode, body: &'static str) -> Response {
    let mut resp = Response::new(body.into());
    *resp.status_mut() = code;
    resp
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut resp = Response::new(body.into());
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// 429 with `Retry-After` in whole seconds (rounded up).
fn too_many(retry: Duration) -> Response {
    let mut resp = plain(
        StatusCode::TOO_MANY_REQUESTS,
        "too many sign-in attempts from this address; wait and try again\n",
    );
    let secs = retry.as_secs() + u64::from(retry.subsec_nanos() > 0);
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
    resp
}

/// 303 See Other: after a POST the browser GETs the result, so a reload does not post again.
fn redirect(to: &str) -> Response {
    let mut resp = plain(StatusCode::SEE_OTHER, "");
    if let Ok(v) = HeaderValue::from_str(to) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

/// Headers every answer under `/admin` carries: nothing cached (a page holds job data and a
/// CSRF field), no framing, scripts and styles from this server only.
fn secured(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
             img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    resp
}

/// For `Infallible` callers that serve the page alone (`admin.listen`): everything outside
/// `/admin` is a 404.
pub fn standalone(
    admin: AdminWeb,
) -> impl Filter<Extract = (Response,), Error = Infallible> + Clone {
    routes(Some(admin))
        .recover(|_| async { Ok::<_, Infallible>(plain(StatusCode::NOT_FOUND, "")) })
        .unify()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_decision_is_forbidden_unless_it_names_no_decision() {
        for refused in [Refused::ReadOnly, Refused::OtherOrigin, Refused::NoCsrf] {
            assert_eq!(refused.page().0, StatusCode::FORBIDDEN, "{refused:?}");
        }
        assert_eq!(Refused::NoDecision.page().0, StatusCode::BAD_REQUEST);
        // Every decision the page offers is one the form's check accepts.
        for (decision, _) in DECISIONS {
            assert!(Resolution::ALL.contains(&decision), "{decision:?}");
        }
    }
}
