//! Serves warp routes on a listener within limits, for every listener oncebot opens
//! (`http.listen`, `admin.listen`): a request head must arrive whole within
//! `http.header_read_timeout_secs`, a kept-alive connection with nothing in flight is closed after
//! `http.idle_timeout_secs`, and at most `http.max_connections` connections are served at once.
//!
//! Why not hyper's own `header_read_timeout`: hyper 1 (since hyperium/hyper#3828) starts it as
//! soon as a kept-alive connection goes idle, so it is one timer for "idle" and "slow head" and
//! the two limits could not differ. Here hyper's is off and a watchdog per connection closes it
//! at whichever deadline its phase has: from the connection's start or a request's first byte
//! until the head is parsed (the handler is called), none while a request is in flight, and the
//! idle one from the response until the next byte.
//!
//! The cap is a semaphore permit taken *before* `accept()`: past it oncebot stops accepting, so
//! new connections wait in the kernel's listen backlog and cost the process no file descriptor
//! (accepting and closing would spend one each and tell the client nothing). Shutdown keeps
//! warp's behaviour: stop accepting, let requests in flight finish, close idle connections.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use futures::{Stream, StreamExt};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use warp::Filter;
use warp::reply::Response;

use crate::config::HttpSettings;

/// The limits of one listener (`http.*`, shared by `admin.listen`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
}

impl Limits {
    pub fn from_settings(http: &HttpSettings) -> Limits {
        Limits {
            header_read_timeout: Duration::from_secs(http.header_read_timeout_secs),
            idle_timeout: Duration::from_secs(http.idle_timeout_secs),
            max_connections: http.max_connections as usize,
        }
    }
}

/// The peer's address, in every request's extensions (`warp::ext::optional::<Peer>()`): warp's
/// own `addr::remote` is filled only by warp's server.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// Serves `routes` on `listener` within `limits` until `shutdown` resolves; requests in flight
/// then finish first. `name` says which listener in the log (`http.listen`, `admin.listen`).
pub async fn serve<F>(
    listener: TcpListener,
    routes: F,
    limits: Limits,
    name: &'static str,
    shutdown: impl Future<Output = ()> + Send + 'static,
) where
    F: Filter<Extract = (Response,), Error = Infallible> + Clone + Send + Sync + 'static,
{
    let mut slots = Slots {
        permits: Arc::new(Semaphore::new(limits.max_connections.max(1))),
        max: limits.max_connections,
        name,
        full_since: None,
    };
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let Some(permit) = slots.take(&mut shutdown).await else {
            break;
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    drop(permit);
                    if stopped_after(&e, name, &mut shutdown).await {
                        break;
                    }
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let routes = routes.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let _permit = permit;
            serve_connection(stream, peer, routes, limits, watcher).await;
        });
    }
    // Stop accepting (the backlog's connections are refused), then wait for the connections.
    drop(listener);
    graceful.shutdown().await;
}

/// A listener's connection cap: a permit per connection, taken before `accept()`.
struct Slots {
    permits: Arc<Semaphore>,
    max: usize,
    /// The listener, for the log.
    name: &'static str,
    /// Since when every slot is taken: logged once per saturation, not per connection (past
    /// the cap nothing is accepted, so nothing more is known about who waits).
    full_since: Option<Instant>,
}

impl Slots {
    /// A free slot, waited for while every one is taken; `None` once `shutdown` resolves.
    async fn take<S: Future<Output = ()>>(
        &mut self,
        shutdown: &mut Pin<&mut S>,
    ) -> Option<OwnedSemaphorePermit> {
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                if self.full_since.is_none() {
                    self.full_since = Some(Instant::now());
                    tracing::warn!(
                        listener = self.name,
                        max_connections = self.max,
                        "every connection slot is taken; new connections wait in the listen \
                         backlog until one closes (http.max_connections)"
                    );
                }
                tokio::select! {
                    permit = self.permits.clone().acquire_owned() => permit.ok()?,
                    () = shutdown.as_mut() => return None,
                }
            }
        };
        if let Some(since) = self.full_since.take() {
            tracing::info!(listener = self.name, full_for = ?since.elapsed(), "a connection slot is free again");
        }
        Some(permit)
    }
}

/// After a failed `accept()`: an error about the process (EMFILE, ENFILE, ENOBUFS) is logged
/// and waited out for a second; true when `shutdown` resolved meanwhile.
async fn stopped_after<S: Future<Output = ()>>(
    e: &std::io::Error,
    name: &'static str,
    shutdown: &mut Pin<&mut S>,
) -> bool {
    if !accept_error_is_fatal_for_now(e) {
        return false;
    }
    tracing::error!(
        listener = name,
        error = %e,
        "cannot accept a connection (too many open files?): retrying in 1 s; \
         lower http.max_connections or raise the open-files limit (LimitNOFILE=, \
         ulimit -n)"
    );
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs(1)) => false,
        () = shutdown.as_mut() => true,
    }
}

/// A plain answer: `code` with `body` as text (empty where the route says nothing).
pub fn status(code: warp::http::StatusCode, body: &str) -> Response {
    let mut resp = Response::new(body.to_string().into());
    *resp.status_mut() = code;
    resp
}

/// Why a request body was not read whole (`read_body`); each route answers its own way.
pub(crate) enum BodyError {
    /// More than the route's limit (a chunked body too: it is counted as it arrives).
    TooLarge,
    /// The body stream failed.
    Broken,
    /// Not all there within [`BODY_READ_TIMEOUT`].
    Slow,
}

/// How long a client may take to send a body: one that trickles it must not hold a connection
/// for ever.
const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Reads `body` whole, giving up as soon as it exceeds `limit` bytes (a chunked body has no
/// length to check up front) or takes longer than [`BODY_READ_TIMEOUT`].
pub(crate) async fn read_body<S, B>(mut body: S, limit: u64) -> Result<Bytes, BodyError>
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
    match tokio::time::timeout(BODY_READ_TIMEOUT, read).await {
        Ok(Ok(())) => Ok(buf.freeze()),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(BodyError::Slow),
    }
}

/// Errors that say nothing about the listener (a connection reset before it was taken) are
/// skipped at once; others (EMFILE, ENFILE, ENOBUFS) are waited out.
fn accept_error_is_fatal_for_now(e: &std::io::Error) -> bool {
    !matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

async fn serve_connection<F>(
    stream: TcpStream,
    peer: SocketAddr,
    routes: F,
    limits: Limits,
    watcher: hyper_util::server::graceful::Watcher,
) where
    F: Filter<Extract = (Response,), Error = Infallible> + Clone + Send + Sync + 'static,
{
    let activity = Arc::new(Activity::new(limits));
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: activity.clone(),
    });
    let service = warp::service(routes);
    let on_request = activity.clone();
    let handler =
        hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(Peer(peer));
            let in_flight = InFlight::begin(on_request.clone());
            let mut service = service.clone();
            let answer = tower_service::Service::call(&mut service, req);
            async move {
                let resp = answer.await;
                drop(in_flight);
                resp
            }
        });
    let conn = hyper::server::conn::http1::Builder::new()
        // Off: the watchdog below keeps both deadlines (see the module's doc).
        .header_read_timeout(None)
        .keep_alive(true)
        .serve_connection(io, handler);
    let conn = watcher.watch(conn);
    tokio::select! {
        result = conn => {
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        }
        why = activity.expired() => {
            tracing::debug!(%peer, why, "connection closed by its deadline");
        }
    }
}

/// Where a connection is in its life, and the deadline that phase has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for (the rest of) a request head; the deadline runs from the connection's start
    /// or the request's first byte.
    Head(Instant),
    /// This many requests are being handled: no deadline (bodies have their own).
    Busy(usize),
    /// Every response is out; the idle deadline runs until the next byte.
    Idle(Instant),
}

struct Activity {
    limits: Limits,
    phase: Mutex<Phase>,
    changed: Notify,
}

impl Activity {
    fn new(limits: Limits) -> Activity {
        Activity {
            limits,
            phase: Mutex::new(Phase::Head(Instant::now() + limits.header_read_timeout)),
            changed: Notify::new(),
        }
    }

    fn phase(&self) -> MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self, next: Phase) {
        *self.phase() = next;
        self.changed.notify_one();
    }

    /// Bytes arrived: on an idle connection they begin a request head.
    fn read_some(&self) {
        let mut phase = self.phase();
        if let Phase::Idle(_) = *phase {
            *phase = Phase::Head(Instant::now() + self.limits.header_read_timeout);
            drop(phase);
            self.changed.notify_one();
        }
    }

    /// Resolves when the current phase's deadline passes, saying which one.
    async fn expired(&self) -> &'static str {
        loop {
            let changed = self.changed.notified();
            let phase = *self.phase();
            let (deadline, why) = match phase {
                Phase::Head(at) => (
                    at,
                    "request head not complete in http.header_read_timeout_secs",
                ),
                Phase::Idle(at) => (at, "idle for http.idle_timeout_secs"),
                Phase::Busy(_) => {
                    changed.await;
                    continue;
                }
            };
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {
                    if *self.phase() == phase {
                        return why;
                    }
                }
                () = changed => {}
            }
        }
    }
}

/// One request being handled; when the last ends, the connection is idle.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn begin(activity: Arc<Activity>) -> InFlight {
        let next = match *activity.phase() {
            Phase::Busy(n) => Phase::Busy(n + 1),
            Phase::Head(_) | Phase::Idle(_) => Phase::Busy(1),
        };
        activity.set(next);
        InFlight(activity)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let idle = Instant::now() + self.0.limits.idle_timeout;
        let next = match *self.0.phase() {
            Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
            _ => Phase::Idle(idle),
        };
        self.0.set(next);
    }
}

/// The connection's stream, telling its [`Activity`] when bytes arrive.
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.read_some();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Raises the soft open-files limit to the hard one, so the connection cap, not the limit a
/// service manager or container runtime happens to give (often 1024), bounds the sockets; logs
/// both, and warns when the cap cannot fit under them.
pub fn raise_open_files_limit(listeners: usize, max_connections: u32) {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let before = getrlimit(Resource::Nofile);
    let shown = |v: Option<u64>| v.map_or_else(|| "unlimited".to_string(), |n| n.to_string());
    let mut now = before;
    if before.current != before.maximum {
        let mut raised = before;
        raised.current = before.maximum;
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => now = raised,
            Err(e) => tracing::warn!(
                soft = %shown(before.current),
                hard = %shown(before.maximum),
                error = %e,
                "could not raise the open-files limit to its hard limit"
            ),
        }
    }
    tracing::info!(
        soft_before = %shown(before.current),
        soft = %shown(now.current),
        hard = %shown(now.maximum),
        "open-files limit (RLIMIT_NOFILE)"
    );
    // Connections of every listener, plus Redis, MoviePilot, Telegram and the process's own.
    let wanted = listeners as u64 * u64::from(max_connections) + 64;
    if let Some(soft) = now.current
        && soft < wanted
    {
        tracing::warn!(
            soft,
            max_connections,
            listeners,
            "the open-files limit is below what http.max_connections allows on every listener: \
             under load, new connections and Redis calls may fail with \"Too many open files\"; \
             lower ONCEBOT__HTTP__MAX_CONNECTIONS or raise the hard limit (LimitNOFILE=, ulimit -Hn)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 4,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_connection_has_the_head_deadline_and_an_idle_one_the_idle_deadline() {
        let a = Arc::new(Activity::new(limits()));
        let started = Instant::now();
        assert_eq!(
            a.expired().await,
            "request head not complete in http.header_read_timeout_secs"
        );
        assert_eq!(started.elapsed(), Duration::from_secs(10));

        let a = Arc::new(Activity::new(limits()));
        drop(InFlight::begin(a.clone()));
        let idle = Instant::now();
        assert_eq!(a.expired().await, "idle for http.idle_timeout_secs");
        assert_eq!(idle.elapsed(), Duration::from_secs(60));
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_in_flight_has_no_deadline_and_a_byte_on_an_idle_connection_starts_a_head() {
        let a = Arc::new(Activity::new(limits()));
        let busy = InFlight::begin(a.clone());
        let waited = tokio::time::timeout(Duration::from_secs(3600), a.expired()).await;
        assert!(waited.is_err(), "no deadline while a request is handled");
        drop(busy);
        tokio::time::advance(Duration::from_secs(30)).await;
        a.read_some();
        let head = Instant::now();
        assert_eq!(
            a.expired().await,
            "request head not complete in http.header_read_timeout_secs"
        );
        assert_eq!(head.elapsed(), Duration::from_secs(10));
    }
}
