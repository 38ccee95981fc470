//! The HTTP servers of a process and what each serves. `http.listen`, on every process: the
//! probes `/healthz`, `/readyz` and `/metrics`; where ingress runs, its doors
//! (`ingress::webhook`: the webhook, the relay's wake-up); and the operator's page (`admin_web`)
//! unless it has an address of its own, `admin.listen`, where it is served alone.
//!
//! The routes are put together here, so `ingress` and `admin_web` do not know each other; each
//! listener is served by `http_server` within the `http.*` limits. The probes need no auth, so
//! they say a failure in fixed words (`LedgerError::public_reason`), never Redis's.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;

use anyhow::Context as _;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use warp::Filter;
use warp::http::StatusCode;
use warp::reply::Response;

use crate::admin_web::{self, AdminWeb};
use crate::config::Settings;
use crate::http_server::{self, Limits, status};
use crate::ingress::Ingress;
use crate::ingress::webhook::{self, WebhookConfig};
use crate::ledger::{Ledger, LedgerError};
use crate::metrics::METRICS;
use crate::redis_health::WriteHealth;
use crate::redis_policy::Watch;

/// The message of the line logged once `http.listen` is bound; its field `addr` is the address
/// actually bound, so with port 0 in the setting it names the port the system chose. Stable, and
/// documented in docs/operations.md: tests, and an operator's scripts, read the address from it.
pub const HTTP_LISTENING: &str = "HTTP listening (/healthz, /readyz, /metrics)";

/// As [`HTTP_LISTENING`], for the operator's page on its own address (`admin.listen`).
pub const ADMIN_LISTENING: &str = "operator page listening (/admin/)";

/// The servers of a started process: where they listen, and their tasks.
pub struct Listening {
    /// The address `http.listen` actually bound (port 0 picks a free one).
    pub http_addr: SocketAddr,
    /// The operator page's own address, when `admin.listen` is set.
    pub admin_addr: Option<SocketAddr>,
    /// One per listener; each ends once `shutdown` is cancelled and its requests are done.
    pub tasks: Vec<JoinHandle<anyhow::Result<()>>>,
}

/// Binds `http.listen` (and `admin.listen` when the page has its own address) and serves them
/// until `shutdown`. `webhook`: the webhook is on (ingress without `--poll`); `admits`: this
/// process runs ingress, so `/readyz` is about admission alone.
pub async fn start(
    settings: &Settings,
    ingress: Ingress,
    webhook: Option<WebhookConfig>,
    admits: bool,
    shutdown: &CancellationToken,
) -> anyhow::Result<Listening> {
    let limits = Limits::from_settings(&settings.http);
    raise_open_files_limit(settings);
    let listen = settings
        .listen_addr()
        .context("http.listen is not an address (ONCEBOT__HTTP__LISTEN)")?;
    let listener = bind(listen).await?;
    let http_addr = listener.local_addr()?;
    let webhook_on = webhook.is_some();
    let mut tasks = Vec::new();
    // The operator's page: on its own address when admin.listen is set, else next to the
    // webhook; nowhere without a password.
    let page = AdminWeb::from_settings(settings, ingress.ledger().clone());
    let admin_listen = settings
        .admin_listen_addr()
        .context("admin.listen is not an address (ONCEBOT__ADMIN__LISTEN)")?;
    let (shared_page, admin_addr) = match (page, admin_listen) {
        (Some(page), Some(addr)) => {
            let (task, addr) = start_admin(page, addr, limits, shutdown).await?;
            tasks.push(task);
            (None, Some(addr))
        }
        (page, _) => (page, None),
    };
    let page_here = shared_page.is_some();
    let routes = routes(ingress, webhook, admits, shared_page);
    let stopped = stopped(shutdown);
    tasks.push(spawn(http_server::serve(
        listener,
        routes,
        limits,
        "http.listen",
        stopped,
    )));
    tracing::info!(
        addr = %http_addr,
        webhook = webhook_on,
        admin_page = page_here,
        "{HTTP_LISTENING}"
    );
    Ok(Listening {
        http_addr,
        admin_addr,
        tasks,
    })
}

/// Room for every connection the listeners may hold (`http_server::raise_open_files_limit`).
fn raise_open_files_limit(settings: &Settings) {
    let listeners = if settings.admin.enabled() && !settings.admin.listen.trim().is_empty() {
        2
    } else {
        1
    };
    http_server::raise_open_files_limit(listeners, settings.http.max_connections);
}

/// Serves the operator's page alone on `addr` (`admin.listen`).
async fn start_admin(
    page: AdminWeb,
    addr: SocketAddr,
    limits: Limits,
    shutdown: &CancellationToken,
) -> anyhow::Result<(JoinHandle<anyhow::Result<()>>, SocketAddr)> {
    let listener = bind_for(addr, "ONCEBOT__ADMIN__LISTEN").await?;
    let addr = listener.local_addr()?;
    let routes = admin_web::standalone(page);
    let server = http_server::serve(listener, routes, limits, "admin.listen", stopped(shutdown));
    let task = spawn(server);
    tracing::info!(addr = %addr, "{ADMIN_LISTENING}");
    Ok((task, addr))
}

/// A server as a task of the process (a server ends without an error).
fn spawn(server: impl Future<Output = ()> + Send + 'static) -> JoinHandle<anyhow::Result<()>> {
    tokio::spawn(async move {
        server.await;
        Ok(())
    })
}

/// Resolves once `shutdown` is cancelled: what tells a server to stop accepting.
fn stopped(shutdown: &CancellationToken) -> impl Future<Output = ()> + Send + 'static {
    let stop = shutdown.clone();
    async move { stop.cancelled().await }
}

/// Everything `http.listen` serves: the probes, ingress's doors (the webhook when `webhook` is
/// given: long polling serves only the probes) and the operator's page when `admin` is given
/// (else `/admin` is a 404). Any other path is a 404, a known path with another method a 405,
/// and any other refusal a 400, each without a body.
pub fn routes(
    ingress: Ingress,
    webhook: Option<WebhookConfig>,
    admits: bool,
    admin: Option<AdminWeb>,
) -> impl Filter<Extract = (Response,), Error = Infallible> + Clone {
    let policy = ingress.redis_policy().clone();
    let health = ingress.write_health().clone();
    probes(ingress.ledger().clone(), policy, health, admits)
        .or(webhook::routes(ingress, webhook))
        .unify()
        .or(admin_web::routes(admin))
        .unify()
        .recover(|rejection: warp::Rejection| async move {
            Ok::<_, Infallible>(status(refusal(&rejection), ""))
        })
        .unify()
}

/// The status of a request no route took.
fn refusal(rejection: &warp::Rejection) -> StatusCode {
    if rejection.is_not_found() {
        StatusCode::NOT_FOUND
    } else if rejection.find::<warp::reject::MethodNotAllowed>().is_some() {
        StatusCode::METHOD_NOT_ALLOWED
    } else {
        StatusCode::BAD_REQUEST
    }
}

/// `GET /healthz`, `/readyz` and `/metrics`, on every process.
fn probes(
    ledger: Ledger,
    policy: Watch,
    health: WriteHealth,
    admits: bool,
) -> impl Filter<Extract = (Response,), Error = warp::Rejection> + Clone {
    let healthz = warp::path!("healthz")
        .and(warp::get())
        .map(|| warp::reply::Reply::into_response("ok\n"));
    let ready_ledger = ledger.clone();
    let readyz = warp::path!("readyz").and(warp::get()).then(move || {
        let (ledger, health) = (ready_ledger.clone(), health.clone());
        let policy = policy.clone();
        async move { readiness(&ledger, &policy, &health, admits).await }
    });
    let metrics = warp::path!("metrics").and(warp::get()).then(move || {
        let ledger = ledger.clone();
        async move { metrics(&ledger).await }
    });
    healthz.or(readyz).unify().or(metrics).unify()
}

/// What `/readyz` says while a worker found oncebot's MoviePilot account no superuser on
/// MoviePilot v3 (`mp_account`, read by ready.lua): the workers stopped.
pub const NOT_SUPERUSER_ON_V3: &str = "oncebot's MoviePilot account is not a superuser, which \
    MoviePilot v3 needs (it shows a plain user only their own subscriptions), so the workers \
    stopped: set moviepilot.api_key, or moviepilot.username and moviepilot.password to a \
    superuser (see the worker's log)";

/// 200 when Redis answers with the scripts loaded; else 503 with a fixed reason (the route
/// needs no auth, so Redis's own words stay in the log). MoviePilot refusing the credentials
/// (seen by this process, or by any worker of the deployment: the shared notice), or oncebot's
/// account found no superuser on MoviePilot v3 (any worker's finding, `mp_account`), is said in
/// the body; it makes a process 503 only when it does not admit updates (a worker alone), since
/// the webhook keeps recording them meanwhile. A Redis that may evict oncebot's keys (the live
/// check's finding, `redis_policy`) makes every process 503, saying which policy to change;
/// Redis refusing writes (`redis_health`) too, with its cause: nothing is admitted or recorded.
async fn readiness(
    ledger: &Ledger,
    policy: &Watch,
    health: &WriteHealth,
    admits: bool,
) -> Response {
    if let Some(refusal) = health.refusal() {
        return status(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("not ready: {}\n", refusal.public_reason()),
        );
    }
    let ready = match ledger.ready().await {
        Ok(ready) => ready,
        Err(e) => {
            tracing::warn!(error = %e, "not ready");
            return status(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("not ready: {}\n", e.public_reason()),
            );
        }
    };
    if let Some(evicting) = policy.evicting() {
        return status(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("not ready: {}\n", evicting.public_reason()),
        );
    }
    let refused = ready.credentials_refused || METRICS.credentials_are_refused();
    let why = if ready.account_not_superuser {
        Some(NOT_SUPERUSER_ON_V3)
    } else if refused {
        Some("MoviePilot refuses oncebot's credentials; jobs wait (see the log)")
    } else if METRICS.moviepilot_is_unreachable() {
        Some(
            "MoviePilot is not reachable at moviepilot.url yet; jobs wait until it is (see the log)",
        )
    } else {
        None
    };
    match why {
        None => status(StatusCode::OK, "ready\n"),
        // Admission works whatever MoviePilot does: a 503 would make Telegram retry updates
        // that are safe already, and a container orchestrator restart oncebot.
        Some(why) if admits => status(StatusCode::OK, &format!("ready\nmoviepilot: {why}\n")),
        Some(why) => status(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("not ready: {why}\n"),
        ),
    }
}

/// Every metric as OpenMetrics text; 503 with a fixed reason when the gauges cannot be read.
async fn metrics(ledger: &Ledger) -> Response {
    match metrics_text(ledger).await {
        Ok(text) => {
            let mut resp = Response::new(text.into());
            resp.headers_mut().insert(
                warp::http::header::CONTENT_TYPE,
                warp::http::HeaderValue::from_static(
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                ),
            );
            resp
        }
        Err(e) => {
            tracing::warn!(error = %e, "metrics unavailable");
            status(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("metrics unavailable: {}\n", e.public_reason()),
            )
        }
    }
}

/// The queue gauges read from Redis now, and every metric as OpenMetrics text.
async fn metrics_text(ledger: &Ledger) -> Result<String, LedgerError> {
    let stats = ledger.queue_stats().await?;
    for s in &stats.streams {
        METRICS.set_stream(s.name, s.length, s.pending, s.oldest_pending);
    }
    METRICS.set_waiting(stats.needs_review, stats.retry_scheduled);
    if let Some(polled_at) = ledger.notify_position().await?.and_then(|p| p.polled_at) {
        METRICS.set_notify_lag(crate::notify::lag(polled_at));
    }
    Ok(METRICS.render())
}

/// Binds `addr`, saying which setting to change when it is taken.
pub async fn bind(addr: SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    bind_for(addr, "ONCEBOT__HTTP__LISTEN").await
}

/// Binds `addr` for the setting named by its variable `var`.
pub async fn bind_for(addr: SocketAddr, var: &str) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e} (set {var} to a free address)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/operations.md shows operators (and their scripts) the lines that say where each
    /// listener is bound; they must be the lines logged.
    #[test]
    fn the_listening_lines_are_the_documented_ones() {
        let doc = crate::assets::read("docs/operations.md");
        for message in [HTTP_LISTENING, ADMIN_LISTENING] {
            assert!(
                doc.contains(&format!("`{message} addr=")),
                "docs/operations.md does not show {message:?} with its addr"
            );
        }
    }
}
