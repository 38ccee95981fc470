//! A fake Bot API server speaking the real protocol for `getUpdates`: `POST /bot<token>/getUpdates`
//! with a JSON body, the `{"ok":true,"result":[...]}` envelope, Telegram's confirmation rule
//! ("an update is considered confirmed as soon as getUpdates is called with an offset higher
//! than its update_id") and long polling that holds the call for up to `timeout` seconds.
//!
//! It records every call's offset, so a test can tell that an update was delivered again.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;
use warp::Filter;

/// A running fake; stops when dropped.
pub struct FakeBotApi {
    pub addr: SocketAddr,
    state: Arc<State>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

struct State {
    token: String,
    inner: Mutex<Inner>,
    arrived: Notify,
}

#[derive(Default)]
struct Inner {
    /// Updates not yet confirmed, oldest first.
    pending: Vec<Value>,
    /// The `offset` of every getUpdates call, in order.
    offsets: Vec<i64>,
}

impl FakeBotApi {
    pub async fn start(token: &str) -> FakeBotApi {
        let state = Arc::new(State {
            token: token.to_string(),
            inner: Mutex::new(Inner::default()),
            arrived: Notify::new(),
        });
        let shared = state.clone();
        let route = warp::post()
            .and(warp::path!(String / "getUpdates"))
            .and(warp::body::json())
            .then(move |bot: String, body: Value| {
                let state = shared.clone();
                async move { get_updates(&state, &bot, &body).await }
            });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(
            warp::serve(route)
                .incoming(listener)
                .graceful(async move {
                    let _ = stopped.await;
                })
                .run(),
        );
        FakeBotApi {
            addr,
            state,
            _stop: stop,
        }
    }

    /// What oncebot puts in `ONCEBOT__TELEGRAM__API_URL`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A user sends something: the update waits until getUpdates confirms it.
    pub fn push(&self, update: Value) {
        self.state.inner.lock().unwrap().pending.push(update);
        self.state.arrived.notify_waiters();
    }

    /// The offsets getUpdates was called with, in order.
    pub fn offsets(&self) -> Vec<i64> {
        self.state.inner.lock().unwrap().offsets.clone()
    }
}

async fn get_updates(state: &State, bot: &str, body: &Value) -> warp::reply::Response {
    use warp::Reply as _;
    if bot.strip_prefix("bot") != Some(state.token.as_str()) {
        let body = json!({"ok": false, "error_code": 401, "description": "Unauthorized"});
        return warp::reply::with_status(
            warp::reply::json(&body),
            warp::http::StatusCode::UNAUTHORIZED,
        )
        .into_response();
    }
    let offset = body["offset"].as_i64().unwrap_or(0);
    let timeout = Duration::from_secs(body["timeout"].as_u64().unwrap_or(0));
    state.inner.lock().unwrap().offsets.push(offset);
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let arrived = state.arrived.notified();
        let ready: Vec<Value> = {
            let mut inner = state.inner.lock().unwrap();
            inner
                .pending
                .retain(|u| u["update_id"].as_i64().unwrap() >= offset);
            inner.pending.iter().take(100).cloned().collect()
        };
        if !ready.is_empty() || tokio::time::Instant::now() >= deadline {
            return warp::reply::json(&json!({"ok": true, "result": ready})).into_response();
        }
        let _ = tokio::time::timeout_at(deadline, arrived).await;
    }
}
