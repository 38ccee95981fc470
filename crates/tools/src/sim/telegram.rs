//! A simulated Telegram Bot API server: real paths, real JSON shapes, real error envelopes.
//!
//! It serves `/bot<token>/<method>` (POST or GET; JSON, form-encoded or query parameters;
//! method names in any case, since teloxide writes `/bot<T>/SendMessage`) on 127.0.0.1 with a
//! port picked by the OS. Behaviour follows `shared/reference/telegram-bot-api.md`:
//! - `getUpdates` confirms every update below `offset` and forgets it, long-polls up to
//!   `timeout` (capped at 50 s) until an update is pushed, answers 409 while a webhook is set,
//!   and ends an older poll with 409 when a newer one arrives, as the real server does;
//! - `sendMessage` numbers messages per chat; `editMessageText` / `editMessageReplyMarkup`
//!   answer 400 "message is not modified" for an identical edit;
//! - `sendPhoto` by URL fetches the photo as Telegram does (a GET with a short timeout, outside
//!   the lock): a failed fetch or a status other than 200 answers "failed to get HTTP URL
//!   content", a content type that is not `image/*` "wrong type of the web page content", bytes
//!   that are no JPEG, PNG, GIF or WebP `IMAGE_PROCESS_FAILED`; a caption is at most 1024
//!   characters; the answer is a Message with a `photo` array (two fixed sizes, not read from
//!   the image) and its `caption`. A photo's `file_id` from such an answer can be sent again;
//!   any other string is "wrong file identifier/HTTP URL specified"; `editMessageCaption` edits
//!   a photo's caption (at most 1024 characters; a text message has "no caption in the message
//!   to edit", as `editMessageText` of a photo has "no text"), `editMessageMedia` fetches its new
//!   photo as sendPhoto does (a text message has "no media"), `deleteMessage` removes a message
//!   ("message to delete not found" for one that is not there); `answerCallbackQuery` accepts
//!   each pushed callback query once; `setWebhook` / `deleteWebhook` / `getWebhookInfo`,
//!   `setMyCommands` / `getMyCommands` / `deleteMyCommands` and `getMe` keep their state;
//!   `getWebhookInfo` reports the last delivery error a test set with
//!   [`TelegramSim::webhook_delivery_failed`] (`last_error_date`, `last_error_message`; a new
//!   `setWebhook` or `deleteWebhook` clears it); `getChat` answers a `ChatFullInfo` for any chat
//!   (private for a positive id, a supergroup for a `-100…` id, a group otherwise), and "chat not
//!   found" for one [`TelegramSim::lose_chat`] named, as `sendMessage` to it does;
//! - a wrong token answers 401, an unknown method 404, both in the Bot API's envelope.
//!
//! The test side pushes updates, reads the log of every call (with its time, so rate limits can
//! be checked from it later) and of every sent message, queues faults per method (429 with
//! `retry_after`, a proxy's 5xx HTML page, 403, 400, 409, a delay, a connection closed without
//! an answer), and waits for a condition with [`TelegramSim::wait_for`] instead of sleeping.
//!
//! The token never appears in the log, in an error or in a description: a call is recorded by
//! method and parameters only.
//!
//! Not simulated (yet): rate limits (the call log's timestamps are what a limiter would read;
//! it would answer 429 from `handle`, before the fault queue), `allowed_updates` filtering
//! (recorded, not applied), webhook delivery (the caller posts what
//! [`TelegramSim::webhook_update`] completes), callback-query expiry by time, uploads, and files
//! other than photos by URL or by the sim's file ids.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use bytes::Bytes;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use warp::Filter;
use warp::http::StatusCode;
use warp::reply::Response;

/// The token [`TelegramSim::start`] accepts. It has the shape @BotFather issues, so oncebot's
/// settings validation takes it.
pub const SIM_TOKEN: &str = "123456789:AAsim-token_for_tests-only";

/// The sim bot's `@username` (without the `@`), as `getMe` reports it.
pub const SIM_BOT_USERNAME: &str = "oncebot_sim_bot";

/// `getUpdates` never waits longer than this, whatever `timeout` asks (the real server's cap).
const MAX_POLL_TIMEOUT_SECS: i64 = 50;

/// Descriptions the real Bot API answers with, for faults and for assertions.
pub mod descriptions {
    pub const UNAUTHORIZED: &str = "Unauthorized";
    pub const NOT_FOUND: &str = "Not Found";
    pub const WEBHOOK_ACTIVE: &str = "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first";
    pub const OTHER_POLLER: &str = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running";
    pub const BOT_BLOCKED: &str = "Forbidden: bot was blocked by the user";
    pub const USER_DEACTIVATED: &str = "Forbidden: user is deactivated";
    pub const BOT_KICKED: &str = "Forbidden: bot was kicked from the group chat";
    pub const QUERY_TOO_OLD: &str =
        "Bad Request: query is too old and response timeout expired or query ID is invalid";
    pub const NOT_MODIFIED: &str = "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message";
    pub const MESSAGE_TO_EDIT_NOT_FOUND: &str = "Bad Request: message to edit not found";
    pub const TEXT_EMPTY: &str = "Bad Request: message text is empty";
    pub const TEXT_TOO_LONG: &str = "Bad Request: message is too long";
    pub const CHAT_ID_EMPTY: &str = "Bad Request: chat_id is empty";
    pub const CHAT_NOT_FOUND: &str = "Bad Request: chat not found";
    pub const BOT_COMMAND_INVALID: &str = "Bad Request: BOT_COMMAND_INVALID";
    pub const HTTPS_URL_REQUIRED: &str =
        "Bad Request: bad webhook: An HTTPS URL must be provided for webhook";
    // sendPhoto, as telegram-bot-api's Client.cpp words them (WEBPAGE_CURL_FAILED,
    // WEBPAGE_MEDIA_EMPTY, MEDIA_EMPTY, MEDIA_CAPTION_TOO_LONG through tdlib).
    pub const NO_PHOTO: &str = "Bad Request: there is no photo in the request";
    pub const PHOTO_URL_FAILED: &str = "Bad Request: failed to get HTTP URL content";
    pub const PHOTO_WRONG_TYPE: &str = "Bad Request: wrong type of the web page content";
    pub const WRONG_FILE_ID: &str = "Bad Request: wrong file identifier/HTTP URL specified";
    pub const IMAGE_PROCESS_FAILED: &str = "Bad Request: IMAGE_PROCESS_FAILED";
    pub const CAPTION_TOO_LONG: &str = "Bad Request: message caption is too long";
    pub const NO_TEXT_TO_EDIT: &str = "Bad Request: there is no text in the message to edit";
    // editMessageCaption of a text message, editMessageMedia of one (tdlib's "There is no media
    // in the message to edit"), deleteMessage of a message that is not there.
    pub const NO_CAPTION_TO_EDIT: &str = "Bad Request: there is no caption in the message to edit";
    pub const NO_MEDIA_TO_EDIT: &str = "Bad Request: there is no media in the message to edit";
    pub const MESSAGE_TO_DELETE_NOT_FOUND: &str = "Bad Request: message to delete not found";
    pub const MEDIA_TYPE_INVALID: &str = "Bad Request: can't parse InputMedia: media not found";
    // A `message_thread_id` that names no open forum topic: deleted, never there, the General
    // topic's 1, or a plain supergroup's reply thread (tdlib/telegram-bot-api #447, #798);
    // and a closed topic (tdlib's TOPIC_CLOSED, as the Bot API passes it on).
    pub const THREAD_NOT_FOUND: &str = "Bad Request: message thread not found";
    pub const TOPIC_CLOSED: &str = "Bad Request: TOPIC_CLOSED";
}

/// How long sendPhoto waits for a photo URL's answer (Telegram's own limit is not documented;
/// a poster server slower than this is refused).
const PHOTO_FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest photo Telegram takes by URL ("5 MB max size for photos", Sending Files).
const MAX_PHOTO_URL_BYTES: usize = 5 * 1024 * 1024;

/// The methods the sim knows, in the Bot API's spelling. Lookup ignores case.
const METHODS: &[&str] = &[
    "getMe",
    "getChat",
    "getUpdates",
    "sendMessage",
    "sendPhoto",
    "editMessageText",
    "editMessageReplyMarkup",
    "editMessageCaption",
    "editMessageMedia",
    "deleteMessage",
    "answerCallbackQuery",
    "setMyCommands",
    "getMyCommands",
    "deleteMyCommands",
    "setWebhook",
    "deleteWebhook",
    "getWebhookInfo",
];

fn canonical(method: &str) -> Option<&'static str> {
    METHODS
        .iter()
        .copied()
        .find(|m| m.eq_ignore_ascii_case(method))
}

/// A failure to inject into the next call of one method. Faults queue per method and are
/// consumed in order, one per call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// 429 with `parameters.retry_after` = these seconds and the real description
    /// "Too Many Requests: retry after N".
    RetryAfter(u64),
    /// This 5xx status with an HTML page, as a reverse proxy in front of the Bot API answers:
    /// not the Bot API's JSON.
    ServerError(u16),
    /// 403 with this description, e.g. [`descriptions::BOT_BLOCKED`].
    Forbidden(String),
    /// 400 with this description, taken as given (real ones start with "Bad Request: ").
    BadRequest(String),
    /// 409 with this description, e.g. [`descriptions::OTHER_POLLER`].
    Conflict(String),
    /// Waits this long, then carries the call out and answers as usual.
    Delay(Duration),
    /// Waits until [`TelegramSim::release_held`], then carries the call out and answers as
    /// usual: a test does something while the call is in flight.
    Held,
    /// Closes the connection without an answer; the call has no effect.
    Drop,
    /// Carries the call out, then closes the connection without an answer: the effect happened
    /// (a message was sent) but the caller never learns it.
    DropAfter,
}

/// What became of one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Still being handled (a long poll, or a delay).
    InFlight,
    /// Answered with this HTTP status; `body` is the JSON answered (`None` for an HTML page).
    Answered { status: u16, body: Option<Value> },
    /// The connection was closed without an answer.
    Dropped,
}

/// One request the sim received.
#[derive(Debug, Clone)]
pub struct Call {
    /// The Bot API spelling (`sendMessage`) for known methods; as sent otherwise.
    pub method: String,
    /// Every parameter, from the query string and the body. Never the token.
    pub params: Value,
    /// When the request arrived.
    pub at: Instant,
    pub outcome: Outcome,
}

impl Call {
    /// The HTTP status answered, if any.
    pub fn status(&self) -> Option<u16> {
        match &self.outcome {
            Outcome::Answered { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The `result` of a successful answer.
    pub fn result(&self) -> Option<&Value> {
        match &self.outcome {
            Outcome::Answered {
                status: 200,
                body: Some(body),
            } => body.get("result"),
            _ => None,
        }
    }
}

/// A message the bot sent with `sendMessage`, as the sim accepted it.
#[derive(Debug, Clone, PartialEq)]
pub struct SentMessage {
    pub chat_id: i64,
    pub message_id: i64,
    /// The forum topic it went to (`message_thread_id`); `None`: General, or no forum.
    pub thread: Option<i64>,
    pub text: String,
    pub reply_markup: Option<Value>,
    /// Sent with `disable_notification: true` (no sound on the person's phone).
    pub silent: bool,
    /// When the call arrived (for rate-limit checks).
    pub at: Instant,
}

/// A photo the bot sent with `sendPhoto`, as the sim accepted it.
#[derive(Debug, Clone, PartialEq)]
pub struct SentPhoto {
    pub chat_id: i64,
    pub message_id: i64,
    /// The forum topic it went to (`message_thread_id`); `None`: General, or no forum.
    pub thread: Option<i64>,
    /// The `photo` parameter as sent: the URL the sim fetched, or a file id.
    pub photo: String,
    /// Empty when it had none.
    pub caption: String,
    pub reply_markup: Option<Value>,
    /// Sent with `disable_notification: true`.
    pub silent: bool,
    /// When the call arrived (for rate-limit checks).
    pub at: Instant,
}

/// A bot message as it stands now, after any edits.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    pub chat_id: i64,
    pub message_id: i64,
    /// The text, or a photo's caption.
    pub text: String,
    /// A photo message's `photo` as sent (its URL or file id); `None` for a text message.
    pub photo: Option<String>,
    /// The inline keyboard, if the message has one.
    pub reply_markup: Option<Value>,
    /// How many edits changed it.
    pub edits: u32,
}

/// The webhook set with `setWebhook`.
#[derive(Debug, Clone, PartialEq)]
pub struct Webhook {
    pub url: String,
    pub secret_token: Option<String>,
    pub allowed_updates: Option<Value>,
    pub max_connections: i64,
}

/// How to start a sim.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// The only token accepted; any other gets 401.
    pub token: String,
    /// Where to listen; port 0 lets the OS pick.
    pub bind: SocketAddr,
    /// Keep only what a load test reads: each call's method, time and status, and each sent
    /// message's chat, id and time, without parameters, texts or answer bodies. A benchmark
    /// sends tens of thousands of messages; recording them whole made the simulator's memory
    /// growth (page faults, copies) a visible share of the measured CPU.
    pub lean: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        Self {
            token: SIM_TOKEN.into(),
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            lean: false,
        }
    }
}

/// A running simulated Bot API; it stops when dropped.
pub struct TelegramSim {
    shared: Arc<Shared>,
    addr: SocketAddr,
}

impl fmt::Debug for TelegramSim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TelegramSim")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

struct Shared {
    state: Mutex<State>,
    /// Fetches sendPhoto's URLs.
    http: reqwest::Client,
    /// Woken on every change: pushed updates, calls, answers. Long polls and `wait_for` use it.
    changed: Notify,
    /// Cancelled when the sim is dropped: stops accepting and closes every connection.
    stop: CancellationToken,
    /// Where [`Fault::Held`] calls wait: closed (and replaced) by `release_held`.
    held: Mutex<Arc<tokio::sync::Semaphore>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Default)]
struct ChatState {
    last_message_id: i64,
    messages: BTreeMap<i64, StoredMessage>,
    /// The forum topic of each message sent into one.
    threads: HashMap<i64, i64>,
    /// A forum supergroup's topics (`None`: not a forum): topic id → closed.
    topics: Option<HashMap<i64, bool>>,
}

struct State {
    token: String,
    bot_id: i64,
    updates: VecDeque<Value>,
    next_update_id: i64,
    confirmed_offset: i64,
    /// Bumped by every getUpdates; a waiting poll that sees a newer one answers 409.
    poll_generation: u64,
    polls_waiting: usize,
    webhook: Option<Webhook>,
    chats: HashMap<i64, ChatState>,
    /// Callback query id → answered yet.
    callback_queries: HashMap<String, bool>,
    /// `scope`+`language_code` (as JSON text) → commands.
    commands: HashMap<String, Value>,
    faults: HashMap<&'static str, VecDeque<Fault>>,
    calls: Vec<Call>,
    sent: Vec<SentMessage>,
    photos: Vec<SentPhoto>,
    /// Messages deleted with `deleteMessage`: (chat, message id), oldest first.
    deleted: Vec<(i64, i64)>,
    /// `SimOptions::lean`.
    lean: bool,
    /// Texts sent to a chat that is not an operator's which a user should not read
    /// ([`super::not_for_users`]), with the reason.
    unfit_texts: Vec<String>,
    /// Chats that are the operators' (admin chats), whose notices may name settings.
    operator_chats: HashSet<i64>,
    /// Chats the bot cannot reach (it was never added, or nobody started it there): getChat
    /// and sendMessage answer "chat not found".
    lost_chats: HashSet<i64>,
    /// The last webhook delivery error: Unix time and Telegram's words.
    webhook_error: Option<(i64, String)>,
}

impl State {
    fn new(token: String, lean: bool) -> Self {
        let bot_id = token
            .split_once(':')
            .and_then(|(id, _)| id.parse().ok())
            .unwrap_or(1);
        Self {
            token,
            bot_id,
            updates: VecDeque::new(),
            // Real ids are large and sequential; start somewhere that looks like one.
            next_update_id: 700_000_001,
            confirmed_offset: 0,
            poll_generation: 0,
            polls_waiting: 0,
            webhook: None,
            chats: HashMap::new(),
            callback_queries: HashMap::new(),
            commands: HashMap::new(),
            faults: HashMap::new(),
            calls: Vec::new(),
            sent: Vec::new(),
            photos: Vec::new(),
            deleted: Vec::new(),
            lean,
            unfit_texts: Vec::new(),
            operator_chats: HashSet::new(),
            lost_chats: HashSet::new(),
            webhook_error: None,
        }
    }

    fn next_message_id(&mut self, chat_id: i64) -> i64 {
        let chat = self.chats.entry(chat_id).or_default();
        chat.last_message_id += 1;
        chat.last_message_id
    }

    /// Fills in what Telegram sets on an update it delivers and makes its callback query
    /// answerable (once; a redelivered update keeps its query's state); returns its update_id.
    fn complete(&mut self, update: &mut Value) -> i64 {
        let id = match update.get("update_id").and_then(Value::as_i64) {
            Some(id) => id,
            None => self.next_update_id,
        };
        self.next_update_id = self.next_update_id.max(id + 1);
        let Some(obj) = update.as_object_mut() else {
            return id;
        };
        obj.insert("update_id".into(), json!(id));
        for kind in ["message", "edited_message", "channel_post"] {
            let Some(message) = obj.get_mut(kind).and_then(Value::as_object_mut) else {
                continue;
            };
            if !message.contains_key("message_id") {
                let chat_id = message
                    .get("chat")
                    .and_then(|c| c.get("id"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                message.insert("message_id".into(), json!(self.next_message_id(chat_id)));
            }
            message.entry("date").or_insert_with(|| json!(unix_now()));
        }
        if let Some(query_id) = obj
            .get("callback_query")
            .and_then(|q| q.get("id"))
            .and_then(Value::as_str)
        {
            self.callback_queries
                .entry(query_id.to_string())
                .or_insert(false);
        }
        id
    }

    fn bot_user(&self) -> Value {
        json!({
            "id": self.bot_id,
            "is_bot": true,
            "first_name": "oncebot sim",
            "username": SIM_BOT_USERNAME,
        })
    }

    /// Forgets what `offset` confirms, as getUpdates does before answering.
    fn confirm(&mut self, offset: i64) {
        if offset > 0 {
            self.updates.retain(|u| update_id(u) >= offset);
            self.confirmed_offset = self.confirmed_offset.max(offset);
        } else if offset < 0 {
            // "-N": keep the last N; everything before is forgotten.
            let keep = usize::try_from(offset.unsigned_abs()).unwrap_or(usize::MAX);
            while self.updates.len() > keep {
                self.updates.pop_front();
            }
        }
    }
}

fn update_id(u: &Value) -> i64 {
    u.get("update_id").and_then(Value::as_i64).unwrap_or(0)
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A read-only view of the sim's state, for [`TelegramSim::wait_for`] and
/// [`TelegramSim::observe`].
pub struct Observed<'a>(&'a State);

impl Observed<'_> {
    /// Every call received, oldest first (unauthorized ones too, answered 401).
    pub fn calls(&self) -> &[Call] {
        &self.0.calls
    }

    /// Calls of `method` (any case) that carried the right token.
    pub fn count(&self, method: &str) -> usize {
        self.0
            .calls
            .iter()
            .filter(|c| c.method.eq_ignore_ascii_case(method) && c.status() != Some(401))
            .count()
    }

    /// Calls of `method` that got an answer (200 or an error), not counting ones in flight.
    pub fn answered(&self, method: &str) -> usize {
        self.0
            .calls
            .iter()
            .filter(|c| c.method.eq_ignore_ascii_case(method) && c.status().is_some())
            .count()
    }

    /// Calls refused with 401 (a wrong token).
    pub fn unauthorized(&self) -> usize {
        self.0
            .calls
            .iter()
            .filter(|c| c.status() == Some(401))
            .count()
    }

    /// Messages sent with `sendMessage`, oldest first.
    pub fn sent(&self) -> &[SentMessage] {
        &self.0.sent
    }

    /// Photos sent with `sendPhoto`, oldest first.
    pub fn photos(&self) -> &[SentPhoto] {
        &self.0.photos
    }

    /// Messages deleted with `deleteMessage`, (chat, message id), oldest first.
    pub fn deleted(&self) -> &[(i64, i64)] {
        &self.0.deleted
    }

    /// What `chat_id` holds from the bot, texts and photos, in message order, as each stands
    /// now (after edits and deletions): what its user reads.
    pub fn received(&self, chat_id: i64) -> Vec<&StoredMessage> {
        self.0
            .chats
            .get(&chat_id)
            .map(|c| c.messages.values().collect())
            .unwrap_or_default()
    }

    /// The highest offset a getUpdates call has confirmed (0: none yet).
    pub fn confirmed_offset(&self) -> i64 {
        self.0.confirmed_offset
    }

    /// Updates not confirmed yet.
    pub fn pending_updates(&self) -> usize {
        self.0.updates.len()
    }

    /// How many getUpdates answers carried the update `update_id`.
    pub fn deliveries(&self, update_id: i64) -> usize {
        self.0
            .calls
            .iter()
            .filter(|c| c.method == "getUpdates")
            .filter_map(|c| c.result().and_then(Value::as_array))
            .filter(|batch| batch.iter().any(|u| self::update_id(u) == update_id))
            .count()
    }

    /// getUpdates calls waiting for an update right now.
    pub fn polls_waiting(&self) -> usize {
        self.0.polls_waiting
    }

    pub fn webhook(&self) -> Option<&Webhook> {
        self.0.webhook.as_ref()
    }

    /// A bot message as it stands now.
    pub fn message(&self, chat_id: i64, message_id: i64) -> Option<&StoredMessage> {
        self.0.chats.get(&chat_id)?.messages.get(&message_id)
    }

    /// The forum topic the bot's message is in (`None`: General, or no forum).
    pub fn thread_of(&self, chat_id: i64, message_id: i64) -> Option<i64> {
        self.0
            .chats
            .get(&chat_id)?
            .threads
            .get(&message_id)
            .copied()
    }

    /// The commands set for the default scope and language, if any.
    pub fn commands(&self) -> Option<&Value> {
        self.0.commands.get(&commands_key(&Map::new()))
    }

    /// The commands set for one chat (scope `chat`), in the default language, if any.
    pub fn chat_commands(&self, chat_id: i64) -> Option<&Value> {
        let mut params = Map::new();
        params.insert("scope".into(), json!({"type": "chat", "chat_id": chat_id}));
        self.0.commands.get(&commands_key(&params))
    }

    /// One line per method: how many calls, for a test failure message.
    pub fn summary(&self) -> String {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for c in &self.0.calls {
            *counts.entry(c.method.as_str()).or_default() += 1;
        }
        if counts.is_empty() {
            return "no calls".into();
        }
        counts
            .iter()
            .map(|(m, n)| format!("{m}×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// [`TelegramSim::wait_for`] gave up.
#[derive(Debug, thiserror::Error)]
#[error("the simulated Bot API did not reach the condition within {deadline:?} (calls: {calls})")]
pub struct WaitTimeout {
    pub deadline: Duration,
    pub calls: String,
}

impl TelegramSim {
    /// Starts a sim on 127.0.0.1 (free port) that accepts [`SIM_TOKEN`].
    pub async fn start() -> anyhow::Result<TelegramSim> {
        Self::start_with(SimOptions::default()).await
    }

    pub async fn start_with(opts: SimOptions) -> anyhow::Result<TelegramSim> {
        let listener = tokio::net::TcpListener::bind(opts.bind)
            .await
            .with_context(|| format!("binding the simulated Bot API on {}", opts.bind))?;
        let addr = listener.local_addr()?;
        let http = reqwest::Client::builder()
            .timeout(PHOTO_FETCH_TIMEOUT)
            .build()
            .context("building the simulated Bot API's photo fetcher")?;
        let shared = Arc::new(Shared {
            http,
            state: Mutex::new(State::new(opts.token, opts.lean)),
            changed: Notify::new(),
            stop: CancellationToken::new(),
            held: Mutex::new(Arc::new(tokio::sync::Semaphore::new(0))),
        });
        tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(TelegramSim { shared, addr })
    }

    /// `http://127.0.0.1:<port>`: the value for `ONCEBOT__TELEGRAM__API_URL`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The token the sim accepts (the test's own secret; the sim never logs it).
    pub fn token(&self) -> String {
        self.shared.lock().token.clone()
    }

    /// Queues an update for getUpdates and returns its `update_id`. Missing parts are filled in
    /// as Telegram would: `update_id` (next in sequence), and a message's `message_id` (next in
    /// its chat) and `date`. A callback query's id becomes answerable once.
    pub fn push_update(&self, mut update: Value) -> i64 {
        let id = {
            let mut st = self.shared.lock();
            let id = st.complete(&mut update);
            st.updates.push_back(update);
            id
        };
        self.shared.changed.notify_waiters();
        id
    }

    /// An update Telegram is about to POST to a webhook, completed as [`push_update`] completes
    /// one (`update_id`, a message's `message_id` and `date`, where missing), and known to the
    /// sim as Telegram knows what it delivers: its callback query can be answered once. It is
    /// not queued for getUpdates; the caller posts the returned update. Completing the same
    /// update again (a redelivery) keeps its query's state.
    ///
    /// [`push_update`]: TelegramSim::push_update
    pub fn webhook_update(&self, mut update: Value) -> Value {
        self.shared.lock().complete(&mut update);
        self.shared.changed.notify_waiters();
        update
    }

    /// Lets the calls waiting on [`Fault::Held`] go on.
    pub fn release_held(&self) {
        let fresh = Arc::new(tokio::sync::Semaphore::new(0));
        let mut held = self.shared.held.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::replace(&mut *held, fresh).close();
    }

    /// Makes the next call of `method` (any case) fail with `fault`; faults queue in order.
    ///
    /// # Panics
    /// If the sim does not implement `method`: a fault on it could never fire.
    pub fn fail_next(&self, method: &str, fault: Fault) {
        let Some(method) = canonical(method) else {
            panic!("the simulated Bot API has no method {method:?}; known: {METHODS:?}");
        };
        self.shared
            .lock()
            .faults
            .entry(method)
            .or_default()
            .push_back(fault);
    }

    /// Sets a webhook as `setWebhook` would (getUpdates then answers 409).
    pub fn set_webhook(&self, url: &str) {
        let mut st = self.shared.lock();
        st.webhook = Some(Webhook {
            url: url.into(),
            secret_token: None,
            allowed_updates: None,
            max_connections: 40,
        });
        st.webhook_error = None;
        drop(st);
        self.shared.changed.notify_waiters();
    }

    /// Removes the webhook as `deleteWebhook` would.
    pub fn delete_webhook(&self) {
        let mut st = self.shared.lock();
        st.webhook = None;
        st.webhook_error = None;
        drop(st);
        self.shared.changed.notify_waiters();
    }

    /// Records that delivering to the webhook failed just now, as Telegram words it (e.g.
    /// `Wrong response from the webhook: 401 Unauthorized`): getWebhookInfo then reports it as
    /// `last_error_date` and `last_error_message` until the webhook is set or deleted again.
    pub fn webhook_delivery_failed(&self, message: &str) {
        self.shared.lock().webhook_error = Some((unix_now(), message.into()));
    }

    /// Makes `chat` a forum supergroup with the topic `topic` open (General, 1, always is).
    pub fn forum_topic(&self, chat: i64, topic: i64) {
        self.set_topic(chat, topic, false);
    }

    /// Closes `topic` of forum `chat`: sends into it answer "TOPIC_CLOSED".
    pub fn close_topic(&self, chat: i64, topic: i64) {
        self.set_topic(chat, topic, true);
    }

    /// `topic` of forum `chat` exists, closed or open.
    fn set_topic(&self, chat: i64, topic: i64, closed: bool) {
        let mut st = self.shared.lock();
        let state = st.chats.entry(chat).or_default();
        state
            .topics
            .get_or_insert_with(HashMap::new)
            .insert(topic, closed);
    }

    /// Deletes `topic` of forum `chat`: sends into it answer "message thread not found".
    pub fn delete_topic(&self, chat: i64, topic: i64) {
        let mut st = self.shared.lock();
        if let Some(topics) = st.chats.entry(chat).or_default().topics.as_mut() {
            topics.remove(&topic);
        }
    }

    /// Makes `chat` one the bot cannot reach: getChat and sendMessage answer 400 "chat not
    /// found", as Telegram does for a group the bot is not in or a person who never started it.
    pub fn lose_chat(&self, chat: i64) {
        self.shared.lock().lost_chats.insert(chat);
    }

    /// The person deletes the bot's message `message_id` in `chat` from their client: an edit
    /// of it is answered "message to edit not found" from now on. False: no such message.
    pub fn user_deletes(&self, chat: i64, message_id: i64) -> bool {
        let mut st = self.shared.lock();
        st.chats
            .get_mut(&chat)
            .and_then(|c| c.messages.remove(&message_id))
            .is_some()
    }

    /// Reads the state with `f`.
    pub fn observe<T>(&self, f: impl FnOnce(&Observed<'_>) -> T) -> T {
        let st = self.shared.lock();
        f(&Observed(&st))
    }

    pub fn calls(&self) -> Vec<Call> {
        self.observe(|o| o.calls().to_vec())
    }

    pub fn sent(&self) -> Vec<SentMessage> {
        self.observe(|o| o.sent().to_vec())
    }

    pub fn photos(&self) -> Vec<SentPhoto> {
        self.observe(|o| o.photos().to_vec())
    }

    /// Messages deleted with `deleteMessage` (see [`Observed::deleted`]).
    pub fn deleted(&self) -> Vec<(i64, i64)> {
        self.observe(|o| o.deleted().to_vec())
    }

    /// What `chat_id` holds from the bot, texts and photos, in message order (see
    /// [`Observed::received`]).
    pub fn received(&self, chat_id: i64) -> Vec<StoredMessage> {
        self.observe(|o| o.received(chat_id).into_iter().cloned().collect())
    }

    /// Texts sent to users that a user should not read (see [`super::not_for_users`]), each
    /// with what it gave away. Tests hold it empty.
    pub fn unfit_texts(&self) -> Vec<String> {
        self.shared.lock().unfit_texts.clone()
    }

    /// Marks `chat` an operator's (an admin chat): its notices may name settings.
    pub fn operator_chat(&self, chat: i64) {
        self.shared.lock().operator_chats.insert(chat);
    }

    /// Calls of `method` (any case) with the right token.
    pub fn count(&self, method: &str) -> usize {
        self.observe(|o| o.count(method))
    }

    pub fn confirmed_offset(&self) -> i64 {
        self.observe(|o| o.confirmed_offset())
    }

    /// Waits until `condition` holds, re-checking after every change in the sim; gives up after
    /// `deadline`.
    pub async fn wait_for(
        &self,
        deadline: Duration,
        mut condition: impl FnMut(&Observed<'_>) -> bool,
    ) -> Result<(), WaitTimeout> {
        let until = tokio::time::Instant::now() + deadline;
        loop {
            let changed = self.shared.changed.notified();
            tokio::pin!(changed);
            // Registered before the check, so a change between the check and the wait is seen.
            changed.as_mut().enable();
            if self.observe(&mut condition) {
                return Ok(());
            }
            if tokio::time::timeout_at(until, changed).await.is_err() {
                if self.observe(&mut condition) {
                    return Ok(());
                }
                return Err(WaitTimeout {
                    deadline,
                    calls: self.observe(|o| o.summary()),
                });
            }
        }
    }

    /// Waits until `method` has been called at least `n` times.
    pub async fn wait_for_calls(
        &self,
        method: &str,
        n: usize,
        deadline: Duration,
    ) -> Result<(), WaitTimeout> {
        self.wait_for(deadline, |o| o.count(method) >= n).await
    }
}

impl Drop for TelegramSim {
    fn drop(&mut self) {
        self.shared.stop.cancel();
    }
}

/// A text message update from `user_id` in `chat_id` (a private chat when positive, a
/// supergroup when negative), without `update_id` and `message_id`: [`TelegramSim::push_update`]
/// fills them in.
pub fn text_update(chat_id: i64, user_id: i64, text: &str) -> Value {
    json!({
        "message": {
            "from": user(user_id),
            "chat": chat(chat_id),
            "text": text,
        }
    })
}

/// A text message from `user_id` in forum topic `topic` of supergroup `chat_id`, as Telegram
/// delivers one: `message_thread_id` and `is_topic_message`.
pub fn topic_update(chat_id: i64, user_id: i64, topic: i64, text: &str) -> Value {
    let mut update = text_update(chat_id, user_id, text);
    update["message"]["message_thread_id"] = json!(topic);
    update["message"]["is_topic_message"] = json!(true);
    update["message"]["chat"]["is_forum"] = json!(true);
    update
}

/// A text message from `user_id` in plain supergroup `chat_id` that replies to the message
/// `thread`: Telegram gives it a `message_thread_id` (the thread of replies) but no
/// `is_topic_message`, and refuses that id in a send ("message thread not found").
pub fn reply_thread_update(chat_id: i64, user_id: i64, thread: i64, text: &str) -> Value {
    let mut update = text_update(chat_id, user_id, text);
    update["message"]["message_thread_id"] = json!(thread);
    update["message"]["reply_to_message"] = json!({
        "message_id": thread,
        "chat": chat(chat_id),
        "date": unix_now(),
        "text": "…",
    });
    update
}

/// A tap on a button under the bot's message `message_id` in forum topic `topic` of
/// `chat_id`: the message says its topic as Telegram's does.
pub fn topic_callback_update(
    chat_id: i64,
    user_id: i64,
    message_id: i64,
    topic: i64,
    data: &str,
) -> Value {
    let mut update = callback_update(chat_id, user_id, message_id, data);
    update["callback_query"]["message"]["message_thread_id"] = json!(topic);
    update["callback_query"]["message"]["is_topic_message"] = json!(true);
    update
}

/// A callback query update: `user_id` pressed a button with `data` under the bot's message
/// `message_id` in `chat_id`. Its id is unique in this process; read it from
/// `update["callback_query"]["id"]`.
pub fn callback_update(chat_id: i64, user_id: i64, message_id: i64, data: &str) -> Value {
    static NEXT: AtomicU64 = AtomicU64::new(4_000_000_000_000_000_001);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    json!({
        "callback_query": {
            "id": id.to_string(),
            "from": user(user_id),
            "chat_instance": format!("-{}", chat_id.unsigned_abs()),
            "message": {
                "message_id": message_id,
                "chat": chat(chat_id),
                "date": unix_now(),
            },
            "data": data,
        }
    })
}

fn user(id: i64) -> Value {
    json!({"id": id, "is_bot": false, "first_name": format!("User {id}"), "language_code": "en"})
}

fn chat(id: i64) -> Value {
    if id > 0 {
        json!({"id": id, "type": "private", "first_name": format!("User {id}")})
    } else {
        json!({"id": id, "type": "supergroup", "title": format!("Group {id}")})
    }
}

// ---------------------------------------------------------------------------------------------
// Serving

/// Accepts connections until the sim is dropped. Each connection is served on its own task
/// that a [`Fault::Drop`] can end without an answer.
async fn accept_loop(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    loop {
        let stream = tokio::select! {
            _ = shared.stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "simulated Bot API: accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let hang_up = CancellationToken::new();
            let service = hyper_util::service::TowerToHyperService::new(warp::service(routes(
                shared.clone(),
                hang_up.clone(),
            )));
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            // Dropping the connection future closes the socket at once, answer or not.
            tokio::select! {
                _ = conn => {}
                _ = hang_up.cancelled() => {}
                _ = shared.stop.cancelled() => {}
            }
        });
    }
}

/// One parsed request.
struct Request {
    path: String,
    query: Vec<(String, String)>,
    content_type: Option<String>,
    body: Bytes,
}

fn routes(
    shared: Arc<Shared>,
    hang_up: CancellationToken,
) -> impl Filter<Extract = (Response,), Error = Infallible> + Clone {
    warp::path::full()
        .and(warp::query::<Vec<(String, String)>>())
        .and(warp::header::optional::<String>("content-type"))
        .and(warp::body::bytes())
        .then(
            move |path: warp::path::FullPath, query, content_type, body| {
                let shared = shared.clone();
                let hang_up = hang_up.clone();
                let req = Request {
                    path: path.as_str().to_string(),
                    query,
                    content_type,
                    body,
                };
                async move { handle(shared, hang_up, req).await }
            },
        )
        .recover(|_: warp::Rejection| async {
            Ok::<_, Infallible>(api_error(&Failure::bad_request(
                "Bad Request: invalid request",
            )))
        })
        .unify()
}

/// An `ok:false` answer.
#[derive(Debug, Clone)]
struct Failure {
    code: u16,
    description: String,
    retry_after: Option<u64>,
}

impl Failure {
    fn new(code: u16, description: impl Into<String>) -> Self {
        Self {
            code,
            description: description.into(),
            retry_after: None,
        }
    }
    fn bad_request(description: impl Into<String>) -> Self {
        Self::new(400, description)
    }
}

/// A successful answer: `result`, and the optional `description` some methods add.
struct Success {
    result: Value,
    description: Option<&'static str>,
}

impl From<Value> for Success {
    fn from(result: Value) -> Self {
        Success {
            result,
            description: None,
        }
    }
}

type Answer = Result<Success, Failure>;

async fn handle(shared: Arc<Shared>, hang_up: CancellationToken, req: Request) -> Response {
    let Some((token, method)) = req
        .path
        .strip_prefix("/bot")
        .and_then(|rest| rest.split_once('/'))
    else {
        return api_error(&Failure::new(404, descriptions::NOT_FOUND));
    };
    let params = match parse_params(&req) {
        Ok(p) => p,
        Err(f) => return api_error(&f),
    };
    let known = canonical(method);
    let (call, authorized, fault) = record_call(&shared, token, method, known, &params);
    if !authorized {
        return call.respond(&shared, &Err(Failure::new(401, descriptions::UNAUTHORIZED)));
    }
    let Some(method) = known else {
        return call.respond(&shared, &Err(Failure::new(404, descriptions::NOT_FOUND)));
    };
    let drop_after = match apply_fault(&shared, &call, fault, &hang_up).await {
        AfterFault::Run { drop_after } => drop_after,
        AfterFault::Answered(resp) => return resp,
    };
    let result = run_method(&shared, method, &params).await;
    if drop_after {
        return hang_up_now(&shared, call.index, &hang_up).await;
    }
    call.respond(&shared, &result)
}

/// A call recorded in [`State::calls`], whose outcome its answer fills in.
struct RecordedCall {
    index: usize,
    /// Lean mode: the answer's body is not kept.
    lean: bool,
}

impl RecordedCall {
    fn answer(&self, shared: &Shared, status: u16, body: Option<Value>) {
        shared.lock().calls[self.index].outcome = Outcome::Answered { status, body };
        shared.changed.notify_waiters();
    }

    fn respond(&self, shared: &Shared, result: &Answer) -> Response {
        let (status, body) = envelope(result);
        self.answer(shared, status, (!self.lean).then(|| body.clone()));
        json_response(status, &body)
    }
}

/// Records the call in flight: whether its token is the bot's, and the fault queued for its
/// method (taken only for an authorized call of a known method).
fn record_call(
    shared: &Shared,
    token: &str,
    method: &str,
    known: Option<&'static str>,
    params: &Map<String, Value>,
) -> (RecordedCall, bool, Option<Fault>) {
    let name = known.map_or_else(|| method.to_string(), str::to_string);
    let recorded = {
        let mut st = shared.lock();
        let authorized = token == st.token;
        let fault = match known {
            Some(m) if authorized => st.faults.get_mut(m).and_then(VecDeque::pop_front),
            _ => None,
        };
        let kept = if st.lean {
            Value::Null
        } else {
            Value::Object(params.clone())
        };
        st.calls.push(Call {
            method: name,
            params: kept,
            at: Instant::now(),
            outcome: Outcome::InFlight,
        });
        let call = RecordedCall {
            index: st.calls.len() - 1,
            lean: st.lean,
        };
        (call, authorized, fault)
    };
    shared.changed.notify_waiters();
    recorded
}

/// What is left to do once a queued fault is applied.
enum AfterFault {
    /// Run the method, then drop the connection without answering when `drop_after`.
    Run { drop_after: bool },
    /// This answers instead of the method (or never does: the connection is closed).
    Answered(Response),
}

/// Applies a queued fault before the method runs.
async fn apply_fault(
    shared: &Shared,
    call: &RecordedCall,
    fault: Option<Fault>,
    hang_up: &CancellationToken,
) -> AfterFault {
    let refuse = |failure: Failure| AfterFault::Answered(call.respond(shared, &Err(failure)));
    match fault {
        None => AfterFault::Run { drop_after: false },
        Some(Fault::RetryAfter(secs)) => refuse(Failure {
            code: 429,
            description: format!("Too Many Requests: retry after {secs}"),
            retry_after: Some(secs),
        }),
        Some(Fault::ServerError(status)) => {
            call.answer(shared, status, None);
            AfterFault::Answered(proxy_error_page(status))
        }
        Some(Fault::Forbidden(d)) => refuse(Failure::new(403, d)),
        Some(Fault::BadRequest(d)) => refuse(Failure::new(400, d)),
        Some(Fault::Conflict(d)) => refuse(Failure::new(409, d)),
        Some(Fault::Delay(d)) => {
            tokio::time::sleep(d).await;
            AfterFault::Run { drop_after: false }
        }
        Some(Fault::Held) => {
            let gate = shared
                .held
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            let _ = gate.acquire().await;
            AfterFault::Run { drop_after: false }
        }
        Some(Fault::Drop) => AfterFault::Answered(hang_up_now(shared, call.index, hang_up).await),
        Some(Fault::DropAfter) => AfterFault::Run { drop_after: true },
    }
}

/// Runs a known method: getUpdates may wait for updates, the photo methods fetch their photo,
/// every other method runs under the lock.
async fn run_method(shared: &Shared, method: &str, params: &Map<String, Value>) -> Answer {
    if method == "getUpdates" {
        return get_updates(shared, params).await;
    }
    let result = if method == "sendPhoto" {
        send_photo(shared, params).await
    } else if method == "editMessageMedia" {
        edit_media(shared, params).await
    } else {
        let mut st = shared.lock();
        call_method(&mut st, method, params)
    };
    shared.changed.notify_waiters();
    result
}

/// Marks the call dropped, closes its connection and never answers.
async fn hang_up_now(shared: &Shared, index: usize, hang_up: &CancellationToken) -> Response {
    shared.lock().calls[index].outcome = Outcome::Dropped;
    shared.changed.notify_waiters();
    hang_up.cancel();
    // The connection task drops this future together with the connection.
    std::future::pending().await
}

fn envelope(answer: &Answer) -> (u16, Value) {
    match answer {
        Ok(Success {
            result,
            description,
        }) => {
            let mut body = json!({"ok": true, "result": result});
            if let Some(d) = description {
                body["description"] = json!(d);
            }
            (200, body)
        }
        Err(f) => {
            let mut body = json!({
                "ok": false,
                "error_code": f.code,
                "description": f.description,
            });
            if let Some(secs) = f.retry_after {
                body["parameters"] = json!({"retry_after": secs});
            }
            (f.code, body)
        }
    }
}

fn api_error(f: &Failure) -> Response {
    let (status, body) = envelope(&Err(f.clone()));
    json_response(status, &body)
}

fn json_response(status: u16, body: &Value) -> Response {
    let mut resp = Response::new(body.to_string().into());
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        warp::http::header::CONTENT_TYPE,
        warp::http::HeaderValue::from_static("application/json"),
    );
    resp
}

/// What nginx in front of a Bot API server answers when the server behind it fails.
fn proxy_error_page(status: u16) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    let title = format!(
        "{} {}",
        code.as_u16(),
        code.canonical_reason().unwrap_or("Error")
    );
    let page = format!(
        "<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n<center><h1>{title}</h1></center>\r\n\
         <hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
    );
    let mut resp = Response::new(page.into());
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        warp::http::header::CONTENT_TYPE,
        warp::http::HeaderValue::from_static("text/html"),
    );
    resp
}

/// Query parameters, then the body's (JSON object or form-encoded); the body wins.
fn parse_params(req: &Request) -> Result<Map<String, Value>, Failure> {
    let mut params: Map<String, Value> = req
        .query
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    if req.body.is_empty() {
        return Ok(params);
    }
    let content_type = req.content_type.as_deref().unwrap_or("");
    if content_type.starts_with("application/x-www-form-urlencoded") {
        let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(&req.body)
            .map_err(|_| Failure::bad_request("Bad Request: can't parse form data"))?;
        params.extend(pairs.into_iter().map(|(k, v)| (k, Value::String(v))));
    } else {
        match serde_json::from_slice::<Value>(&req.body) {
            Ok(Value::Object(body)) => params.extend(body),
            _ => return Err(Failure::bad_request("Bad Request: can't parse JSON object")),
        }
    }
    Ok(params)
}

/// A number, or a string holding one (form-encoded and query parameters are strings).
fn int(p: &Map<String, Value>, key: &str) -> Option<i64> {
    match p.get(key)? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn text(p: &Map<String, Value>, key: &str) -> Option<String> {
    match p.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn flag(p: &Map<String, Value>, key: &str) -> bool {
    match p.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s == "true" || s == "1",
        _ => false,
    }
}

/// An object or array parameter; form-encoded calls send them as JSON text.
fn structured(p: &Map<String, Value>, key: &str) -> Option<Value> {
    match p.get(key)? {
        Value::Null => None,
        Value::String(s) => serde_json::from_str(s).ok(),
        v => Some(v.clone()),
    }
}

fn chat_id(p: &Map<String, Value>) -> Result<i64, Failure> {
    match p.get("chat_id") {
        None | Some(Value::Null) => Err(Failure::bad_request(descriptions::CHAT_ID_EMPTY)),
        Some(Value::String(s)) if s.is_empty() => {
            Err(Failure::bad_request(descriptions::CHAT_ID_EMPTY))
        }
        // `@channelusername` and anything else that is not a known numeric id.
        _ => int(p, "chat_id").ok_or_else(|| Failure::bad_request(descriptions::CHAT_NOT_FOUND)),
    }
}

/// The inline keyboard a message keeps: `None` for no markup or an empty keyboard (both
/// remove it), and for reply keyboards, which a message does not show as its own markup.
fn inline_markup(p: &Map<String, Value>) -> Option<Value> {
    let markup = structured(p, "reply_markup")?;
    let rows = markup.get("inline_keyboard")?.as_array()?;
    (!rows.is_empty()).then_some(markup)
}

fn message_json(st: &State, m: &StoredMessage, edited: bool) -> Value {
    let mut v = json!({
        "message_id": m.message_id,
        "from": st.bot_user(),
        "chat": chat(m.chat_id),
        "date": unix_now(),
    });
    if let Some(thread) = st
        .chats
        .get(&m.chat_id)
        .and_then(|c| c.threads.get(&m.message_id))
    {
        v["message_thread_id"] = json!(thread);
        v["is_topic_message"] = json!(true);
    }
    if m.photo.is_some() {
        v["photo"] = photo_sizes(m.chat_id, m.message_id);
        if !m.text.is_empty() {
            v["caption"] = json!(m.text);
        }
    } else {
        v["text"] = json!(m.text);
    }
    if edited {
        v["edit_date"] = json!(unix_now());
    }
    if let Some(markup) = &m.reply_markup {
        v["reply_markup"] = markup.clone();
    }
    v
}

fn commands_key(p: &Map<String, Value>) -> String {
    let scope = structured(p, "scope").unwrap_or_else(|| json!({"type": "default"}));
    let language = text(p, "language_code").unwrap_or_default();
    format!("{scope}|{language}")
}

/// Records a text a user would read that [`super::not_for_users`] refuses.
fn check_user_text(st: &mut State, p: &Map<String, Value>) {
    let chat = p.get("chat_id").and_then(|c| {
        c.as_i64()
            .or_else(|| c.as_str().and_then(|s| s.parse().ok()))
    });
    if chat.is_some_and(|c| st.operator_chats.contains(&c)) {
        return;
    }
    for key in ["text", "caption"] {
        if let Some(body) = text(p, key)
            && let Some(why) = super::not_for_users(&body)
        {
            st.unfit_texts.push(format!("{why}: {body:?}"));
        }
    }
}

/// Every method but getUpdates: quick, under the lock.
fn call_method(st: &mut State, method: &str, p: &Map<String, Value>) -> Answer {
    if matches!(
        method,
        "sendMessage" | "editMessageText" | "editMessageCaption" | "answerCallbackQuery"
    ) {
        check_user_text(st, p);
    }
    match method {
        "getMe" => Ok(get_me(st).into()),
        "getChat" => get_chat(st, p),
        "sendMessage" => send_message(st, p),
        "editMessageText" | "editMessageReplyMarkup" => edit_message(st, method, p),
        "editMessageCaption" => edit_caption(st, p, None),
        "deleteMessage" => delete_message(st, p),
        "answerCallbackQuery" => answer_callback_query(st, p),
        "setMyCommands" => set_my_commands(st, p),
        "getMyCommands" => Ok(st
            .commands
            .get(&commands_key(p))
            .cloned()
            .unwrap_or_else(|| json!([]))
            .into()),
        "deleteMyCommands" => {
            st.commands.remove(&commands_key(p));
            Ok(json!(true).into())
        }
        "setWebhook" => set_webhook(st, p),
        "deleteWebhook" => {
            if flag(p, "drop_pending_updates") {
                st.updates.clear();
            }
            st.webhook_error = None;
            Ok(webhook_deleted(st.webhook.take().is_some()))
        }
        "getWebhookInfo" => Ok(webhook_info(st).into()),
        other => Err(Failure::new(
            501,
            format!("the simulated Bot API does not implement {other}"),
        )),
    }
}

fn get_me(st: &State) -> Value {
    json!({
        "id": st.bot_id,
        "is_bot": true,
        "first_name": "oncebot sim",
        "username": SIM_BOT_USERNAME,
        "can_join_groups": true,
        "can_read_all_group_messages": false,
        "supports_inline_queries": false,
        // Documented as optional ("returned only in getMe"), and the real getMe always has them.
        "can_connect_to_business": false,
        "has_main_web_app": false,
    })
}

/// getChat: a `ChatFullInfo` (the fields Bot API 9 always sends: `accent_color_id`,
/// `max_reaction_count`, `accepted_gift_types`), its kind read from the id as Telegram numbers
/// chats; "chat not found" for a chat the bot cannot reach.
fn get_chat(st: &State, p: &Map<String, Value>) -> Answer {
    let id = chat_id(p)?;
    if st.lost_chats.contains(&id) {
        return Err(Failure::bad_request(descriptions::CHAT_NOT_FOUND));
    }
    let mut chat = json!({
        "id": id,
        "accent_color_id": 0,
        "max_reaction_count": 11,
        "accepted_gift_types": {
            "unlimited_gifts": true,
            "limited_gifts": true,
            "unique_gifts": true,
            "premium_subscription": true,
        },
    });
    if id > 0 {
        chat["type"] = json!("private");
        chat["first_name"] = json!(format!("User {id}"));
    } else if id <= -1_000_000_000_000 {
        chat["type"] = json!("supergroup");
        chat["title"] = json!(format!("Group {id}"));
    } else {
        chat["type"] = json!("group");
        chat["title"] = json!(format!("Group {id}"));
    }
    Ok(chat.into())
}

/// A callback query is answered once; a second answer, or an unknown id, is too old.
fn answer_callback_query(st: &mut State, p: &Map<String, Value>) -> Answer {
    let id = text(p, "callback_query_id").unwrap_or_default();
    match st.callback_queries.get_mut(&id) {
        Some(answered @ false) => {
            *answered = true;
            Ok(json!(true).into())
        }
        _ => Err(Failure::bad_request(descriptions::QUERY_TOO_OLD)),
    }
}

fn set_my_commands(st: &mut State, p: &Map<String, Value>) -> Answer {
    let commands = structured(p, "commands").unwrap_or(Value::Null);
    let Some(list) = commands.as_array() else {
        return Err(Failure::bad_request(
            "Bad Request: parameter \"commands\" is required",
        ));
    };
    let valid = |c: &Value| {
        let name = c.get("command").and_then(Value::as_str).unwrap_or("");
        (1..=32).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    if !list.iter().all(valid) {
        return Err(Failure::bad_request(descriptions::BOT_COMMAND_INVALID));
    }
    st.commands.insert(commands_key(p), commands.clone());
    Ok(json!(true).into())
}

/// setWebhook: an empty URL deletes the webhook; `allowed_updates` left out keeps the previous.
fn set_webhook(st: &mut State, p: &Map<String, Value>) -> Answer {
    let url = text(p, "url").unwrap_or_default();
    if flag(p, "drop_pending_updates") {
        st.updates.clear();
    }
    if url.is_empty() {
        return Ok(webhook_deleted(st.webhook.take().is_some()));
    }
    if !url.starts_with("https://") {
        return Err(Failure::bad_request(descriptions::HTTPS_URL_REQUIRED));
    }
    let previous = st.webhook.take();
    st.webhook_error = None;
    let hook = Webhook {
        url,
        secret_token: text(p, "secret_token"),
        allowed_updates: structured(p, "allowed_updates")
            .or_else(|| previous.as_ref().and_then(|w| w.allowed_updates.clone())),
        max_connections: int(p, "max_connections").unwrap_or(40).clamp(1, 100),
    };
    let unchanged = previous.as_ref() == Some(&hook);
    st.webhook = Some(hook);
    Ok(Success {
        result: json!(true),
        description: Some(if unchanged {
            "Webhook is already set"
        } else {
            "Webhook was set"
        }),
    })
}

/// The answer to removing the webhook, which says whether there was one.
fn webhook_deleted(was_set: bool) -> Success {
    Success {
        result: json!(true),
        description: Some(if was_set {
            "Webhook was deleted"
        } else {
            "Webhook is already deleted"
        }),
    }
}

fn webhook_info(st: &State) -> Value {
    let mut info = json!({
        "url": "",
        "has_custom_certificate": false,
        "pending_update_count": st.updates.len(),
    });
    if let Some(w) = &st.webhook {
        info["url"] = json!(w.url);
        info["max_connections"] = json!(w.max_connections);
        if let Some(allowed) = &w.allowed_updates {
            info["allowed_updates"] = allowed.clone();
        }
        if let Some((date, message)) = &st.webhook_error {
            info["last_error_date"] = json!(date);
            info["last_error_message"] = json!(message);
        }
    }
    info
}

/// A send's `message_thread_id`, checked as Telegram does: an open topic of a forum, else
/// "message thread not found" (a plain supergroup, General's 1, a deleted topic) or
/// "TOPIC_CLOSED".
fn send_thread(st: &State, chat_id: i64, p: &Map<String, Value>) -> Result<Option<i64>, Failure> {
    let Some(thread) = int(p, "message_thread_id") else {
        return Ok(None);
    };
    let topics = st.chats.get(&chat_id).and_then(|c| c.topics.as_ref());
    match topics.and_then(|t| t.get(&thread)) {
        Some(false) if thread != 1 => Ok(Some(thread)),
        Some(true) => Err(Failure::bad_request(descriptions::TOPIC_CLOSED)),
        _ => Err(Failure::bad_request(descriptions::THREAD_NOT_FOUND)),
    }
}

fn send_message(st: &mut State, p: &Map<String, Value>) -> Answer {
    let chat_id = chat_id(p)?;
    if st.lost_chats.contains(&chat_id) {
        return Err(Failure::bad_request(descriptions::CHAT_NOT_FOUND));
    }
    let thread = send_thread(st, chat_id, p)?;
    let text = text(p, "text").unwrap_or_default();
    if text.trim().is_empty() {
        return Err(Failure::bad_request(descriptions::TEXT_EMPTY));
    }
    if text.chars().count() > 4096 {
        return Err(Failure::bad_request(descriptions::TEXT_TOO_LONG));
    }
    let message_id = st.next_message_id(chat_id);
    let (sent_text, sent_markup) = if st.lean {
        (String::new(), None)
    } else {
        (text.clone(), structured(p, "reply_markup"))
    };
    let stored = StoredMessage {
        chat_id,
        message_id,
        text,
        photo: None,
        reply_markup: inline_markup(p),
        edits: 0,
    };
    if let Some(thread) = thread {
        st.chats
            .entry(chat_id)
            .or_default()
            .threads
            .insert(message_id, thread);
    }
    st.sent.push(SentMessage {
        chat_id,
        message_id,
        thread,
        text: sent_text,
        reply_markup: sent_markup,
        silent: silent(p),
        at: Instant::now(),
    });
    let result = message_json(st, &stored, false);
    st.chats
        .entry(chat_id)
        .or_default()
        .messages
        .insert(message_id, stored);
    Ok(result.into())
}

/// `disable_notification` as the Bot API reads it: a Boolean.
fn silent(p: &Map<String, Value>) -> bool {
    p.get("disable_notification").and_then(Value::as_bool) == Some(true)
}

fn edit_message(st: &mut State, method: &str, p: &Map<String, Value>) -> Answer {
    if p.contains_key("inline_message_id") {
        // Messages sent via inline mode are not the bot's to show; the API answers `true`.
        return Ok(json!(true).into());
    }
    let chat_id = chat_id(p)?;
    let Some(message_id) = int(p, "message_id") else {
        return Err(Failure::bad_request(
            descriptions::MESSAGE_TO_EDIT_NOT_FOUND,
        ));
    };
    let new_text = if method == "editMessageText" {
        let t = text(p, "text").unwrap_or_default();
        if t.trim().is_empty() {
            return Err(Failure::bad_request(descriptions::TEXT_EMPTY));
        }
        if t.chars().count() > 4096 {
            return Err(Failure::bad_request(descriptions::TEXT_TOO_LONG));
        }
        Some(t)
    } else {
        None
    };
    // Both methods replace the keyboard: omitting reply_markup removes it.
    let new_markup = inline_markup(p);
    let Some(message) = st
        .chats
        .get_mut(&chat_id)
        .and_then(|c| c.messages.get_mut(&message_id))
    else {
        return Err(Failure::bad_request(
            descriptions::MESSAGE_TO_EDIT_NOT_FOUND,
        ));
    };
    if new_text.is_some() && message.photo.is_some() {
        return Err(Failure::bad_request(descriptions::NO_TEXT_TO_EDIT));
    }
    let text_same = new_text.as_ref().is_none_or(|t| *t == message.text);
    if text_same && new_markup == message.reply_markup {
        return Err(Failure::bad_request(descriptions::NOT_MODIFIED));
    }
    if let Some(t) = new_text {
        message.text = t;
    }
    message.reply_markup = new_markup;
    message.edits += 1;
    let message = message.clone();
    Ok(message_json(st, &message, true).into())
}

/// editMessageCaption (and the caption part of editMessageMedia, with the new `photo`): a photo
/// message's caption and keyboard; a text message has no caption to edit.
fn edit_caption(st: &mut State, p: &Map<String, Value>, photo: Option<String>) -> Answer {
    let chat_id = chat_id(p)?;
    let Some(message_id) = int(p, "message_id") else {
        return Err(Failure::bad_request(
            descriptions::MESSAGE_TO_EDIT_NOT_FOUND,
        ));
    };
    let caption = match &photo {
        Some(_) => structured(p, "media")
            .and_then(|m| m.get("caption").and_then(Value::as_str).map(str::to_string)),
        None => text(p, "caption"),
    }
    .unwrap_or_default();
    if caption.chars().count() > 1024 {
        return Err(Failure::bad_request(descriptions::CAPTION_TOO_LONG));
    }
    let new_markup = inline_markup(p);
    let Some(message) = st
        .chats
        .get_mut(&chat_id)
        .and_then(|c| c.messages.get_mut(&message_id))
    else {
        return Err(Failure::bad_request(
            descriptions::MESSAGE_TO_EDIT_NOT_FOUND,
        ));
    };
    if message.photo.is_none() {
        return Err(Failure::bad_request(if photo.is_some() {
            descriptions::NO_MEDIA_TO_EDIT
        } else {
            descriptions::NO_CAPTION_TO_EDIT
        }));
    }
    let same_photo = photo
        .as_ref()
        .is_none_or(|p| Some(p) == message.photo.as_ref());
    if same_photo && caption == message.text && new_markup == message.reply_markup {
        return Err(Failure::bad_request(descriptions::NOT_MODIFIED));
    }
    message.text = caption;
    message.reply_markup = new_markup;
    if photo.is_some() {
        message.photo = photo;
    }
    message.edits += 1;
    let message = message.clone();
    Ok(message_json(st, &message, true).into())
}

/// editMessageMedia with a photo by URL: fetched as sendPhoto fetches (without the lock held),
/// then the message's photo, caption and keyboard replaced.
async fn edit_media(shared: &Shared, p: &Map<String, Value>) -> Answer {
    let media = structured(p, "media").unwrap_or(Value::Null);
    let url = match (
        media.get("type").and_then(Value::as_str),
        media.get("media").and_then(Value::as_str),
    ) {
        (Some("photo"), Some(url)) if !url.is_empty() => url.to_string(),
        _ => return Err(Failure::bad_request(descriptions::MEDIA_TYPE_INVALID)),
    };
    if url.starts_with("http://") || url.starts_with("https://") {
        fetch_photo(&shared.http, &url).await?;
    } else if !known_photo(&shared.lock(), &url) {
        return Err(Failure::bad_request(descriptions::WRONG_FILE_ID));
    }
    let mut st = shared.lock();
    if let Some(caption) = media.get("caption").and_then(Value::as_str)
        && let Some(why) = super::not_for_users(caption)
    {
        st.unfit_texts.push(format!("{why}: {caption:?}"));
    }
    edit_caption(&mut st, p, Some(url))
}

/// deleteMessage: the message is gone from the chat; one that is not there is refused.
fn delete_message(st: &mut State, p: &Map<String, Value>) -> Answer {
    let chat_id = chat_id(p)?;
    let message_id = int(p, "message_id").unwrap_or(0);
    let removed = st
        .chats
        .get_mut(&chat_id)
        .and_then(|c| c.messages.remove(&message_id));
    match removed {
        Some(_) => {
            st.deleted.push((chat_id, message_id));
            Ok(json!(true).into())
        }
        None => Err(Failure::bad_request(
            descriptions::MESSAGE_TO_DELETE_NOT_FOUND,
        )),
    }
}

/// The `photo` array of a photo message: two sizes, as the real API lists the sizes it made.
/// Their ids name the message, so the sim can take them back as a `file_id`.
fn photo_sizes(chat_id: i64, message_id: i64) -> Value {
    let size = |tag: &str, width: u32, height: u32| {
        json!({
            "file_id": format!("{PHOTO_FILE_PREFIX}{chat_id}_{message_id}_{tag}"),
            "file_unique_id": format!("simU{chat_id}_{message_id}_{tag}"),
            "width": width,
            "height": height,
        })
    };
    json!([size("m", 213, 320), size("x", 533, 800)])
}

const PHOTO_FILE_PREFIX: &str = "simPhoto";

/// Whether `file_id` names a photo message the sim holds.
fn known_photo(st: &State, file_id: &str) -> bool {
    let Some(rest) = file_id.strip_prefix(PHOTO_FILE_PREFIX) else {
        return false;
    };
    let mut parts = rest.split('_');
    let (Some(chat), Some(message)) = (
        parts.next().and_then(|c| c.parse::<i64>().ok()),
        parts.next().and_then(|m| m.parse::<i64>().ok()),
    ) else {
        return false;
    };
    st.chats
        .get(&chat)
        .and_then(|c| c.messages.get(&message))
        .is_some_and(|m| m.photo.is_some())
}

/// sendPhoto: checks the call, fetches a URL (without the lock held), then records the photo.
async fn send_photo(shared: &Shared, p: &Map<String, Value>) -> Answer {
    let chat_id = chat_id(p)?;
    let photo = text(p, "photo")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Failure::bad_request(descriptions::NO_PHOTO))?;
    let caption = text(p, "caption").unwrap_or_default();
    if caption.chars().count() > 1024 {
        return Err(Failure::bad_request(descriptions::CAPTION_TOO_LONG));
    }
    if photo.starts_with("http://") || photo.starts_with("https://") {
        fetch_photo(&shared.http, &photo).await?;
    } else if !known_photo(&shared.lock(), &photo) {
        return Err(Failure::bad_request(descriptions::WRONG_FILE_ID));
    }
    let mut st = shared.lock();
    let thread = send_thread(&st, chat_id, p)?;
    check_user_text(&mut st, p);
    let message_id = st.next_message_id(chat_id);
    if let Some(thread) = thread {
        st.chats
            .entry(chat_id)
            .or_default()
            .threads
            .insert(message_id, thread);
    }
    let stored = StoredMessage {
        chat_id,
        message_id,
        text: caption.clone(),
        photo: Some(photo.clone()),
        reply_markup: inline_markup(p),
        edits: 0,
    };
    let sent = if st.lean {
        SentPhoto {
            chat_id,
            message_id,
            thread,
            photo: String::new(),
            caption: String::new(),
            reply_markup: None,
            silent: silent(p),
            at: Instant::now(),
        }
    } else {
        SentPhoto {
            chat_id,
            message_id,
            thread,
            photo,
            caption,
            reply_markup: structured(p, "reply_markup"),
            silent: silent(p),
            at: Instant::now(),
        }
    };
    st.photos.push(sent);
    let result = message_json(&st, &stored, false);
    st.chats
        .entry(chat_id)
        .or_default()
        .messages
        .insert(message_id, stored);
    Ok(result.into())
}

/// Gets a photo by URL as Telegram does before sending it, with its refusals.
async fn fetch_photo(http: &reqwest::Client, url: &str) -> Result<(), Failure> {
    let failed = || Failure::bad_request(descriptions::PHOTO_URL_FAILED);
    let resp = http.get(url).send().await.map_err(|_| failed())?;
    if resp.status() != reqwest::StatusCode::OK {
        return Err(failed());
    }
    let is_image = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|t| t.to_str().ok())
        .is_some_and(|t| t.trim().to_ascii_lowercase().starts_with("image/"));
    if !is_image {
        return Err(Failure::bad_request(descriptions::PHOTO_WRONG_TYPE));
    }
    if resp
        .content_length()
        .is_some_and(|n| n > MAX_PHOTO_URL_BYTES as u64)
    {
        return Err(failed());
    }
    let body = resp.bytes().await.map_err(|_| failed())?;
    if body.len() > MAX_PHOTO_URL_BYTES {
        return Err(failed());
    }
    if !is_image_file(&body) {
        return Err(Failure::bad_request(descriptions::IMAGE_PROCESS_FAILED));
    }
    Ok(())
}

/// JPEG, PNG, GIF or WebP by their first bytes: what Telegram can make a photo of.
fn is_image_file(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0xFF, 0xD8, 0xFF])
        || bytes.starts_with(b"\x89PNG\r\n\x1a\n")
        || bytes.starts_with(b"GIF87a")
        || bytes.starts_with(b"GIF89a")
        || (bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP")
}

/// Counts a waiting poll for as long as it waits, even if its connection goes away.
struct PollWaiting<'a>(&'a Shared);

impl<'a> PollWaiting<'a> {
    fn new(shared: &'a Shared) -> Self {
        shared.lock().polls_waiting += 1;
        shared.changed.notify_waiters();
        Self(shared)
    }
}

impl Drop for PollWaiting<'_> {
    fn drop(&mut self) {
        {
            let mut st = self.0.lock();
            st.polls_waiting = st.polls_waiting.saturating_sub(1);
        }
        self.0.changed.notify_waiters();
    }
}

async fn get_updates(shared: &Shared, p: &Map<String, Value>) -> Answer {
    let offset = int(p, "offset").unwrap_or(0);
    let limit = usize::try_from(int(p, "limit").unwrap_or(100).clamp(1, 100)).unwrap_or(100);
    let timeout = int(p, "timeout")
        .unwrap_or(0)
        .clamp(0, MAX_POLL_TIMEOUT_SECS);
    let generation = {
        let mut st = shared.lock();
        if st.webhook.is_some() {
            return Err(Failure::new(409, descriptions::WEBHOOK_ACTIVE));
        }
        st.confirm(offset);
        st.poll_generation += 1;
        st.poll_generation
    };
    // Wakes an older poll still waiting, which now answers 409.
    shared.changed.notify_waiters();
    let until = tokio::time::Instant::now() + Duration::from_secs(timeout.unsigned_abs());
    let mut waiting = None;
    loop {
        let changed = shared.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        {
            let st = shared.lock();
            if st.poll_generation != generation {
                return Err(Failure::new(409, descriptions::OTHER_POLLER));
            }
            if st.webhook.is_some() {
                return Err(Failure::new(409, descriptions::WEBHOOK_ACTIVE));
            }
            let batch: Vec<Value> = st
                .updates
                .iter()
                .filter(|u| update_id(u) >= offset)
                .take(limit)
                .cloned()
                .collect();
            if !batch.is_empty() || tokio::time::Instant::now() >= until {
                drop(st);
                drop(waiting);
                return Ok(Value::Array(batch).into());
            }
        }
        if waiting.is_none() {
            waiting = Some(PollWaiting::new(shared));
        }
        tokio::select! {
            _ = &mut changed => {}
            _ = tokio::time::sleep_until(until) => {}
        }
    }
}
