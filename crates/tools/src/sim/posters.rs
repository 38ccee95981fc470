//! A poster server on 127.0.0.1: the images a notification's `photo` URL points at, for the
//! simulated Bot API's `sendPhoto` to fetch as Telegram fetches a URL. Paths:
//! - `/poster/<name>.jpg`: 200 `image/jpeg`, a small JPEG;
//! - `/missing/<name>.jpg`: 404, as an image host answers a poster it no longer has;
//! - `/page/<name>.jpg`: 200 `text/html`, a login or error page where an image was expected;
//! - `/broken/<name>.jpg`: 200 `image/jpeg` with bytes that are no image (a cut-off upload);
//! - `/t/p/w500/<name>.jpg`: as `/poster/`, TMDB's image host at the size MoviePilot's messages
//!   use; `/t/p/original/<name>.jpg`: a 6 MB JPEG, TMDB's original, over Telegram's 5 MB limit
//!   for a photo by URL (the MoviePilot sim's `poster_path`s point here: [`PosterServer::host`]);
//! - anything else: 404.
//!
//! It records every path asked for (query included), so a test can see that Telegram fetched it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::Full;
use tokio_util::sync::CancellationToken;

/// The start of a baseline JPEG (SOI, a JFIF APP0 segment), then EOI: enough for a sniffer.
const JPEG: &[u8] = &[
    0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0x00, 0x01, 0x01, 0x00, 0x00, 0x01,
    0x00, 0x01, 0x00, 0x00, 0xFF, 0xD9,
];

/// A running poster server; it stops when dropped.
pub struct PosterServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<String>>>,
    stop: CancellationToken,
}

impl PosterServer {
    pub async fn start() -> anyhow::Result<PosterServer> {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .context("binding the poster server")?;
        let addr = listener.local_addr()?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = CancellationToken::new();
        tokio::spawn(serve(listener, requests.clone(), stop.clone()));
        Ok(PosterServer {
            addr,
            requests,
            stop,
        })
    }

    /// A poster that loads.
    pub fn poster(&self, name: &str) -> String {
        format!("http://{}/poster/{name}.jpg", self.addr)
    }

    /// The server as an image host (`http://127.0.0.1:<port>`), for the MoviePilot sim's
    /// `set_poster_host`: TMDB's paths under it answer.
    pub fn host(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A poster URL that answers 404.
    pub fn missing(&self, name: &str) -> String {
        format!("http://{}/missing/{name}.jpg", self.addr)
    }

    /// A poster URL that answers an HTML page.
    pub fn page(&self, name: &str) -> String {
        format!("http://{}/page/{name}.jpg", self.addr)
    }

    /// A poster URL that answers `image/jpeg` with bytes that are no image.
    pub fn broken(&self, name: &str) -> String {
        format!("http://{}/broken/{name}.jpg", self.addr)
    }

    /// Every path asked for, oldest first, with its query.
    pub fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for PosterServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn serve(
    listener: tokio::net::TcpListener,
    requests: Arc<Mutex<Vec<String>>>,
    stop: CancellationToken,
) {
    loop {
        let stream = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let requests = requests.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: hyper::Request<_>| {
                let path = req
                    .uri()
                    .path_and_query()
                    .map_or_else(String::new, |p| p.as_str().to_string());
                requests
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(path.clone());
                async move { Ok::<_, Infallible>(answer(req.uri().path())) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::select! {
                _ = conn => {}
                _ = stop.cancelled() => {}
            }
        });
    }
}

fn answer(path: &str) -> hyper::Response<Full<Bytes>> {
    let (status, content_type, body): (u16, &str, Bytes) =
        if path.starts_with("/poster/") || path.starts_with("/t/p/w500/") {
            (200, "image/jpeg", Bytes::from_static(JPEG))
        } else if path.starts_with("/t/p/original/") {
            let mut original = JPEG.to_vec();
            original.resize(6 * 1024 * 1024, 0);
            (200, "image/jpeg", Bytes::from(original))
        } else if path.starts_with("/broken/") {
            (200, "image/jpeg", Bytes::from_static(b"not a picture"))
        } else if path.starts_with("/page/") {
            (
                200,
                "text/html; charset=utf-8",
                Bytes::from_static(b"<html><body>Please log in</body></html>"),
            )
        } else {
            (
                404,
                "text/html",
                Bytes::from_static(b"<h1>404 Not Found</h1>"),
            )
        };
    let mut resp = hyper::Response::new(Full::new(body));
    *resp.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_str(content_type)
            .unwrap_or(hyper::header::HeaderValue::from_static("text/plain")),
    );
    resp
}
