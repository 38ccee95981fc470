//! The HTTP front door: `POST /telegram/webhook`, `GET /healthz`, `GET /readyz`, `GET
//! /metrics`, the relay's wake-up `POST|GET /moviepilot/notify/<secret>`, and the operator's
//! page under `/admin` when it shares this listener.
//!
//! The order of checks is the contract: secret (401, nothing read), size (413, also for a
//! chunked body), shape (400), then one admission script and an **empty** 200. A 200 body with
//! a `method` field would be executed by Telegram, so no answer ever carries one. When Redis
//! does not take the update the answer is 503 with `Retry-After`, and Telegram delivers again.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use futures::{Stream, StreamExt};
use subtle::ConstantTimeEq;
use warp::Filter;
use warp::http::StatusCode;
use warp::reply::Response;

use super::{Handled, Ingress};
use crate::admin_web::{self, AdminWeb};
use crate::config::Secret;
use crate::http_server;
use crate::ledger::{Ledger, LedgerError};
use crate::metrics::METRICS;
use crate::telegram::types::Update;

/// The header Telegram puts the webhook secret in.
pub const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

/// Seconds Telegram is asked to wait before delivering again when Redis is unavailable.
const RETRY_AFTER_SECS: u64 = 5;

/// What the webhook needs besides the ingress rules.
#[derive(Clone)]
pub struct WebhookConfig {
    pub secret: Secret,
    pub max_body_bytes: u64,
}

/// The routes: the webhook, when `webhook` is given (long polling serves only the probes), the
/// health probes, and the operator's page when `admin` is given (else `/admin` is a 404).
/// `admits`: this process runs ingress (webhook or polling), so `/readyz`'s status is about
/// admission alone. The wake-up path's secret is `Ingress::wake_secret` (none: a 404 like any
/// unknown path).
pub fn routes(
    ingress: Ingress,
    webhook: Option<WebhookConfig>,
    admits: bool,
    admin: Option<AdminWeb>,
) -> impl Filter<Extract = (Response,), Error = Infallible> + Clone {
    let wake_ledger = ingress.ledger().clone();
    let wake = ingress.wake_secret().cloned();
    let notify = warp::path!("moviepilot" / "notify" / String)
        .and(warp::post().or(warp::get()).unify())
        .and(warp::body::stream())
        .then(move |given: String, body| {
            let ledger = wake_ledger.clone();
            let wake = wake.clone();
            async move { wake_up(&ledger, wake.as_ref(), &given, body).await }
        });
    let healthz = warp::path!("healthz")
        .and(warp::get())
        .map(|| warp::reply::Reply::into_response("ok\n"));
    let ready_ingress = ingress.clone();
    let readyz = warp::path!("readyz").and(warp::get()).then(move || {
        let ingress = ready_ingress.clone();
        async move { readiness(&ingress, admits).await }
    });
    let metrics_ingress = ingress.clone();
    let metrics = warp::path!("metrics").and(warp::get()).then(move || {
        let ingress = metrics_ingress.clone();
        async move {
            match metrics_text(ingress.ledger()).await {
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
    });
    let hook = warp::path!("telegram" / "webhook")
        .and(warp::post())
        .and(secret_header())
        .and(warp::header::optional::<u64>("content-length"))
        .and(warp::body::stream())
        .then(move |secret: Option<Bytes>, length: Option<u64>, body| {
            let ingress = ingress.clone();
            let webhook = webhook.clone();
            async move {
                match webhook {
                    Some(cfg) => receive(&ingress, &cfg, secret, length, body).await,
                    None => status(StatusCode::NOT_FOUND, "webhook is off: oncebot polls\n"),
                }
            }
        });
    healthz
        .or(readyz)
        .unify()
        .or(metrics)
        .unify()
        .or(hook)
        .unify()
        .or(notify)
        .unify()
        .or(admin_web::routes(admin))
        .unify()
        .recover(|rejection: warp::Rejection| async move {
            let code = if rejection.is_not_found() {
                StatusCode::NOT_FOUND
            } else if rejection.find::<warp::reject::MethodNotAllowed>().is_some() {
                StatusCode::METHOD_NOT_ALLOWED
            } else {
                StatusCode::BAD_REQUEST
            };
            Ok::<_, Infallible>(status(code, ""))
        })
        .unify()
}

/// The secret header's raw bytes. Read as a `String`, a header with non-ASCII bytes would be
/// rejected (400) before the comparison, hiding a wrong secret from the log and the 401.
fn secret_header() -> impl Filter<Extract = (Option<Bytes>,), Error = Infallible> + Clone {
    warp::header::value(SECRET_HEADER)
        .map(|v: warp::http::HeaderValue| Some(Bytes::copy_from_slice(v.as_bytes())))
        .or(warp::any().map(|| None))
        .unify()
}

/// Serves `routes` on `listener` within `limits` until `shutdown` resolves; in-flight
/// requests finish first.
pub async fn serve(
    listener: tokio::net::TcpListener,
    ingress: Ingress,
    webhook: Option<WebhookConfig>,
    admits: bool,
    admin: Option<AdminWeb>,
    limits: http_server::Limits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let routes = routes(ingress, webhook, admits, admin);
    http_server::serve(listener, routes, limits, "http.listen", shutdown).await;
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

async fn receive<S, B>(
    ingress: &Ingress,
    cfg: &WebhookConfig,
    secret: Option<Bytes>,
    length: Option<u64>,
    body: S,
) -> Response
where
    S: Stream<Item = Result<B, warp::Error>> + Unpin,
    B: Buf,
{
    let given = secret.unwrap_or_default();
    let expected = cfg.secret.expose().as_bytes();
    // Constant time over the expected length; a length mismatch fails without a timing hint
    // beyond the length itself.
    if !bool::from(given.as_ref().ct_eq(expected)) {
        tracing::warn!("webhook call with a missing or wrong secret token refused");
        METRICS.update("rejected");
        return status(StatusCode::UNAUTHORIZED, "");
    }
    if length.is_some_and(|l| l > cfg.max_body_bytes) {
        return too_large(cfg.max_body_bytes);
    }
    let body = match read_limited(body, cfg.max_body_bytes).await {
        Ok(body) => body,
        Err(BodyError::TooLarge) => return too_large(cfg.max_body_bytes),
        Err(BodyError::Broken) => {
            METRICS.update("bad_request");
            return status(StatusCode::BAD_REQUEST, "");
        }
    };
    let update: Update = match serde_json::from_slice(&body) {
        Ok(u) => u,
        Err(e) => {
            tracing::warn!(error = %e, "webhook body is not a Telegram Update");
            METRICS.update("bad_request");
            return status(StatusCode::BAD_REQUEST, "");
        }
    };
    match ingress.handle(&update).await {
        Ok(Handled::Admitted(_) | Handled::Tapped(_) | Handled::Ignored(_)) => {
            status(StatusCode::OK, "")
        }
        Err(e) => {
            tracing::error!(
                update_id = update.update_id,
                error = %e,
                "update not recorded; asking Telegram to deliver it again"
            );
            let mut resp = status(StatusCode::SERVICE_UNAVAILABLE, "");
            resp.headers_mut().insert(
                warp::http::header::RETRY_AFTER,
                warp::http::HeaderValue::from(RETRY_AFTER_SECS),
            );
            resp
        }
    }
}

/// Most of a wake-up call's body that is read (and dropped unparsed).
const WAKE_BODY_LIMIT: u64 = 64 * 1024;

/// `/moviepilot/notify/<given>`: with the right secret (constant time), 204 and the relay polls
/// now, whatever the body; otherwise 404 with nothing read. The body, the path and the query
/// can hold a site's login cookie (the Webhook plugin sends every event, `download.added` with
/// `torrent_info.site_cookie`, and its GET puts the event in the query string), so none of them
/// is stored, logged or echoed: the only trace is a log line without them.
async fn wake_up<S, B>(ledger: &Ledger, secret: Option<&Secret>, given: &str, body: S) -> Response
where
    S: Stream<Item = Result<B, warp::Error>> + Unpin,
    B: Buf,
{
    let Some(secret) = secret else {
        return status(StatusCode::NOT_FOUND, "");
    };
    if !bool::from(given.as_bytes().ct_eq(secret.expose().as_bytes())) {
        tracing::warn!("wake-up call for the notification relay with a wrong secret refused (404)");
        return status(StatusCode::NOT_FOUND, "");
    }
    drain(body, WAKE_BODY_LIMIT).await;
    match ledger.notify_wake().await {
        Ok(()) => tracing::debug!("wake-up call: the notification relay polls now"),
        // The relay polls on its interval anyway; the caller (which never retries) is not told.
        Err(e) => {
            tracing::warn!(error = %e, "could not wake the notification relay; it polls on its interval")
        }
    }
    status(StatusCode::NO_CONTENT, "")
}

/// Reads and drops at most `limit` bytes of `body` (within a few seconds).
async fn drain<S, B>(mut body: S, limit: u64)
where
    S: Stream<Item = Result<B, warp::Error>> + Unpin,
    B: Buf,
{
    let read = async {
        let mut seen = 0u64;
        while seen < limit {
            match body.next().await {
                Some(Ok(chunk)) => seen += chunk.remaining() as u64,
                _ => return,
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), read).await;
}

enum BodyError {
    TooLarge,
    Broken,
}

/// Reads the body, giving up as soon as it exceeds `limit` (a chunked body has no length to
/// check up front).
async fn read_limited<S, B>(mut body: S, limit: u64) -> Result<BytesMut, BodyError>
where
    S: Stream<Item = Result<B, warp::Error>> + Unpin,
    B: Buf,
{
    let mut buf = BytesMut::new();
    let read = async {
        while let Some(chunk) = body.next().await {
            let mut chunk = chunk.map_err(|_| BodyError::Broken)?;
            if (buf.len() + chunk.remaining()) as u64 > limit {
                return Err(BodyError::TooLarge);
            }
            while chunk.has_remaining() {
                let part = chunk.chunk();
                buf.extend_from_slice(part);
                let n = part.len();
                chunk.advance(n);
            }
        }
        Ok(())
    };
    // A client that trickles its body must not hold a connection for ever.
    match tokio::time::timeout(Duration::from_secs(30), read).await {
        Ok(Ok(())) => Ok(buf),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(BodyError::Broken),
    }
}

/// 200 when Redis answers with the scripts loaded; else 503 with a fixed reason (the route
/// needs no auth, so Redis's own words stay in the log). MoviePilot refusing the credentials
/// (seen by this process, or by any worker of the deployment: the shared notice) is said in the
/// body; it makes a process 503 only when it does not admit updates (a worker alone), since the
/// webhook keeps recording them meanwhile.
async fn readiness(ingress: &Ingress, admits: bool) -> Response {
    match ingress.ledger().ready().await {
        Ok(ready) => {
            let refused = ready.credentials_refused || METRICS.credentials_are_refused();
            let why = if refused {
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
                // Admission works whatever MoviePilot does: a 503 would make Telegram retry
                // updates that are safe already, and a container orchestrator restart oncebot.
                Some(why) if admits => {
                    status(StatusCode::OK, &format!("ready\nmoviepilot: {why}\n"))
                }
                Some(why) => status(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &format!("not ready: {why}\n"),
                ),
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "not ready");
            status(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("not ready: {}\n", e.public_reason()),
            )
        }
    }
}

fn too_large(limit: u64) -> Response {
    METRICS.update("rejected");
    tracing::warn!(limit, "webhook body over the size limit refused");
    status(StatusCode::PAYLOAD_TOO_LARGE, "")
}

fn status(code: StatusCode, body: &str) -> Response {
    let mut resp = Response::new(body.to_string().into());
    *resp.status_mut() = code;
    resp
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
