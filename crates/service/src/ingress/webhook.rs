//! Ingress's HTTP doors: `POST /telegram/webhook` and the relay's wake-up `POST|GET
//! /moviepilot/notify/<secret>`. `servers` mounts them on `http.listen` beside the probes and
//! the operator's page.
//!
//! The order of checks is the contract: secret (401, nothing read), size (413, also for a
//! chunked body), shape (400), then one admission script and an **empty** 200. A 200 body with
//! a `method` field would be executed by Telegram, so no answer ever carries one. When Redis
//! does not take the update, or may evict it (`redis_policy`), the answer is 503 with
//! `Retry-After`, and Telegram delivers again.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use futures::{Stream, StreamExt};
use subtle::ConstantTimeEq;
use warp::Filter;
use warp::http::StatusCode;
use warp::path::Tail;
use warp::reply::Response;

use super::{Handled, Ingress};
use crate::config::Secret;
use crate::http_server::{BodyError, Peer, read_body, status};
use crate::ledger::Ledger;
use crate::metrics::METRICS;
use crate::refusals::{Reason, RefusalLog};
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

/// The webhook (a 404 without `webhook`: long polling takes the updates) and the relay's
/// wake-up path, whose secret is `Ingress::wake_secret` (none: a 404 like any unknown path).
/// What matches neither is rejected, for the caller to try its other routes.
pub fn routes(
    ingress: Ingress,
    webhook: Option<WebhookConfig>,
) -> impl Filter<Extract = (Response,), Error = warp::Rejection> + Clone {
    hook_route(ingress.clone(), webhook)
        .or(wake_route(ingress))
        .unify()
}

/// `POST /telegram/webhook`.
fn hook_route(
    ingress: Ingress,
    webhook: Option<WebhookConfig>,
) -> impl Filter<Extract = (Response,), Error = warp::Rejection> + Clone {
    let refusals = Arc::new(RefusalLog::new("webhook"));
    warp::path!("telegram" / "webhook")
        .and(warp::post())
        .and(secret_header())
        .and(warp::header::optional::<u64>("content-length"))
        .and(warp::ext::optional::<Peer>())
        .and(warp::body::stream())
        .then(
            move |secret: Option<Bytes>, length: Option<u64>, peer: Option<Peer>, body| {
                let ingress = ingress.clone();
                let webhook = webhook.clone();
                let door = Door {
                    refusals: refusals.clone(),
                    peer: peer.map(|p| p.0.ip()),
                };
                async move {
                    match webhook {
                        Some(cfg) => receive(&ingress, &cfg, &door, secret, length, body).await,
                        None => status(StatusCode::NOT_FOUND, "webhook is off: oncebot polls\n"),
                    }
                }
            },
        )
}

/// `POST|GET /moviepilot/notify/<secret>`. The secret is taken as the path's tail, not through
/// warp's parameter filter, which logs every segment it parses at trace.
fn wake_route(
    ingress: Ingress,
) -> impl Filter<Extract = (Response,), Error = warp::Rejection> + Clone {
    let ledger = ingress.ledger().clone();
    let wake = ingress.wake_secret().cloned();
    let refusals = Arc::new(RefusalLog::new("wake"));
    warp::path("moviepilot")
        .and(warp::path("notify"))
        .and(warp::path::tail())
        .and(warp::post().or(warp::get()).unify())
        .and(warp::ext::optional::<Peer>())
        .and(warp::body::stream())
        .then(move |tail: Tail, peer: Option<Peer>, body| {
            let ledger = ledger.clone();
            let wake = wake.clone();
            let door = Door {
                refusals: refusals.clone(),
                peer: peer.map(|p| p.0.ip()),
            };
            async move {
                // One segment, as the parameter filter matched: `a/b` is no secret.
                let given = tail.as_str();
                if given.is_empty() || given.contains('/') {
                    return status(StatusCode::NOT_FOUND, "");
                }
                wake_up(&ledger, wake.as_ref(), &door, given, body).await
            }
        })
}

/// Where a request came from, and its door's refusals.
struct Door {
    refusals: Arc<RefusalLog>,
    peer: Option<IpAddr>,
}

impl Door {
    /// Counts a refusal; `Some(unlogged)` when it is to be logged now (at most once a second
    /// per peer), with how many of the peer's went unlogged since the last line.
    fn refused(&self, reason: Reason) -> Option<u64> {
        self.refusals.refused(self.peer, reason)
    }

    fn peer(&self) -> String {
        self.peer
            .map_or_else(|| "unknown".to_string(), |ip| ip.to_string())
    }
}

/// The secret header's raw bytes. Read as a `String`, a header with non-ASCII bytes would be
/// rejected (400) before the comparison, hiding a wrong secret from the log and the 401.
fn secret_header()
-> impl Filter<Extract = (Option<Bytes>,), Error = std::convert::Infallible> + Clone {
    warp::header::value(SECRET_HEADER)
        .map(|v: warp::http::HeaderValue| Some(Bytes::copy_from_slice(v.as_bytes())))
        .or(warp::any().map(|| None))
        .unify()
}

async fn receive<S, B>(
    ingress: &Ingress,
    cfg: &WebhookConfig,
    door: &Door,
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
        return wrong_secret(door);
    }
    if length.is_some_and(|l| l > cfg.max_body_bytes) {
        return too_large(door, cfg.max_body_bytes);
    }
    let body = match read_body(body, cfg.max_body_bytes).await {
        Ok(body) => body,
        Err(BodyError::TooLarge) => return too_large(door, cfg.max_body_bytes),
        Err(BodyError::Broken | BodyError::Slow) => {
            door.refused(Reason::BadRequest);
            METRICS.update("bad_request");
            return status(StatusCode::BAD_REQUEST, "");
        }
    };
    let update: Update = match crate::json_body::parse(&body) {
        Ok(u) => u,
        Err(e) => {
            if let Some(unlogged) = door.refused(Reason::BadRequest) {
                tracing::warn!(peer = %door.peer(), unlogged, error = %e, "webhook body is not a Telegram Update");
            }
            METRICS.update("bad_request");
            return status(StatusCode::BAD_REQUEST, "");
        }
    };
    // Redis may evict what admission would write (`redis_policy`): Telegram keeps the update
    // until it is fixed. Said once in the log when found, not per update.
    if ingress.redis_policy().evicting().is_some() {
        METRICS.update("redis_evicting");
        return deliver_again();
    }
    match ingress.handle(&update).await {
        Ok(Handled::Admitted(_) | Handled::Tapped(_) | Handled::Ignored(_)) => {
            status(StatusCode::OK, "")
        }
        Err(e) => {
            ingress.not_recorded(update.update_id, &e, "asking Telegram to deliver it again");
            deliver_again()
        }
    }
}

/// 503 with `Retry-After`: nothing was written, and Telegram delivers the update again.
fn deliver_again() -> Response {
    let mut resp = status(StatusCode::SERVICE_UNAVAILABLE, "");
    resp.headers_mut().insert(
        warp::http::header::RETRY_AFTER,
        warp::http::HeaderValue::from(RETRY_AFTER_SECS),
    );
    resp
}

/// A webhook call with a missing or wrong secret: 401, counted, logged within the door's limit.
fn wrong_secret(door: &Door) -> Response {
    if let Some(unlogged) = door.refused(Reason::Secret) {
        tracing::warn!(
            peer = %door.peer(),
            unlogged,
            "webhook call with a missing or wrong secret token refused (unlogged: this peer's \
             refusals since the last line)"
        );
    }
    METRICS.update("rejected");
    status(StatusCode::UNAUTHORIZED, "")
}

/// Most of a wake-up call's body that is read (and dropped unparsed).
const WAKE_BODY_LIMIT: u64 = 64 * 1024;

/// `/moviepilot/notify/<given>`: with the right secret (constant time), 204 and the relay polls
/// now, whatever the body; otherwise 404 with nothing read. The body, the path and the query
/// can hold a site's login cookie (the Webhook plugin sends every event, `download.added` with
/// `torrent_info.site_cookie`, and its GET puts the event in the query string), so none of them
/// is stored, logged or echoed: the only trace is a log line without them.
async fn wake_up<S, B>(
    ledger: &Ledger,
    secret: Option<&Secret>,
    door: &Door,
    given: &str,
    body: S,
) -> Response
where
    S: Stream<Item = Result<B, warp::Error>> + Unpin,
    B: Buf,
{
    let Some(secret) = secret else {
        return status(StatusCode::NOT_FOUND, "");
    };
    if !bool::from(given.as_bytes().ct_eq(secret.expose().as_bytes())) {
        if let Some(unlogged) = door.refused(Reason::Secret) {
            tracing::warn!(
                peer = %door.peer(),
                unlogged,
                "wake-up call for the notification relay with a wrong secret refused (404; \
                 unlogged: this peer's refusals since the last line)"
            );
        }
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

fn too_large(door: &Door, limit: u64) -> Response {
    METRICS.update("rejected");
    if let Some(unlogged) = door.refused(Reason::TooLarge) {
        tracing::warn!(peer = %door.peer(), unlogged, limit, "webhook body over the size limit refused");
    }
    status(StatusCode::PAYLOAD_TOO_LARGE, "")
}
