//! What every integration test shares: Telegram updates as Telegram sends them, a direct view
//! of the ledger in Redis, waiting for a condition with a deadline, and the job-state transition
//! check the Lua script tests run.
//!
//! Tests look at Redis themselves (`Store`) instead of trusting the code under test to report
//! on itself: "nothing was written" is checked against a dump of every key.

pub mod app;
pub mod child;
pub mod cluster;
pub mod rig;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::Duration;

use oncebot::config::Secret;
use oncebot::ledger::{JobState, Keys};
use oncebot::moviepilot::MoviePilotSettings;
use oncebot_tools::sim::moviepilot::MoviePilotSim;
use redis::AsyncCommands as _;
use redis::aio::MultiplexedConnection;
use serde_json::{Value, json};

/// An allowed user (ONCEBOT__TELEGRAM__ALLOWED_USERS); in a private chat, chat id = user id.
pub const ALICE: i64 = 1001;
/// A second allowed user.
pub const BOB: i64 = 1002;
/// Not on the allow-list.
pub const MALLORY: i64 = 6666;
/// A supergroup (negative ids, as Telegram gives them).
pub const GROUP: i64 = -1001234567890;
/// `telegram.bot_username` in the test settings.
pub const BOT_USERNAME: &str = "OnceTestBot";
/// `telegram.webhook_secret` in the test settings.
pub const SECRET: &str = "test-secret_0123456789";

/// How long a test waits for something that should happen at once.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// A private-chat text message from `user`, shaped as the Bot API sends it.
pub fn private_text(update_id: i64, user: i64, text: &str) -> Value {
    message_update(
        update_id,
        user,
        json!({"id": user, "first_name": "Test", "type": "private"}),
        text,
    )
}

/// A text message from `user` in the supergroup [`GROUP`].
pub fn group_text(update_id: i64, user: i64, text: &str) -> Value {
    message_update(
        update_id,
        user,
        json!({"id": GROUP, "title": "Movie night", "type": "supergroup"}),
        text,
    )
}

fn message_update(update_id: i64, user: i64, chat: Value, text: &str) -> Value {
    let mut message = json!({
        "message_id": message_id(update_id),
        "from": {"id": user, "is_bot": false, "first_name": "Test", "language_code": "en"},
        "chat": chat,
        "date": 1_767_225_600,
        "text": text,
    });
    if let Some(command) = text.strip_prefix('/') {
        // Telegram marks the command; offsets are UTF-16 units, and the command is ASCII.
        let len = 1 + command.find(char::is_whitespace).unwrap_or(command.len());
        message["entities"] = json!([{"offset": 0, "length": len, "type": "bot_command"}]);
    }
    json!({"update_id": update_id, "message": message})
}

/// The message id the update builders give `update_id`'s message (so replies can be matched).
pub fn message_id(update_id: i64) -> i64 {
    update_id + 500
}

/// A user edited an earlier message (here, into a command).
pub fn edited_text(update_id: i64, user: i64, text: &str) -> Value {
    let mut update = private_text(update_id, user, text);
    let message = update["message"].take();
    let mut edited = message;
    edited["edit_date"] = json!(1_767_225_700);
    json!({"update_id": update_id, "edited_message": edited})
}

/// An update kind oncebot does not handle: a poll's new state.
pub fn poll_update(update_id: i64) -> Value {
    json!({
        "update_id": update_id,
        "poll": {
            "id": "5390110011712345678",
            "question": "Which film tonight?",
            "options": [
                {"text": "Dune", "voter_count": 1},
                {"text": "Arrival", "voter_count": 0}
            ],
            "total_voter_count": 1,
            "is_closed": false,
            "is_anonymous": true,
            "type": "regular",
            "allows_multiple_answers": false
        }
    })
}

/// Polls `check` until it gives `Some`, panicking with `what` after `timeout`. This is how tests
/// wait for an event: never a bare sleep. (The rig's [`oncebot_tools::rig::wait`], panicking.)
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    match oncebot_tools::rig::wait(what, timeout).until(check).await {
        Ok(value) => value,
        Err(e) => panic!("{e:#}"),
    }
}

/// A view of a test's Redis, for looking at what the ledger wrote. Every call opens its own
/// connection, so a `Store` outlives a Redis restart (and exists before Redis is up).
#[derive(Clone)]
pub struct Store {
    client: redis::Client,
    pub keys: Keys,
}

impl Store {
    pub fn new(url: &str, prefix: &str) -> Store {
        Store {
            client: redis::Client::open(url).unwrap(),
            keys: Keys::new(prefix),
        }
    }

    pub async fn conn(&self) -> MultiplexedConnection {
        self.client
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// Every key in the database but the processes' write probes (`probe:<process>`, rewritten
    /// every 2 s by every running process and read by nothing): what "nothing was written"
    /// compares.
    pub async fn all_keys(&self) -> BTreeSet<String> {
        let probes = format!("{}probe:", self.keys.base());
        let mut keys = self.every_key().await;
        keys.retain(|k| !k.starts_with(&probes));
        keys
    }

    /// Every key in the database, the write probes included.
    pub async fn every_key(&self) -> BTreeSet<String> {
        let mut conn = self.conn().await;
        let keys: Vec<String> = conn.keys("*").await.unwrap();
        keys.into_iter().collect()
    }

    /// Every key with its DUMP (type, value and stream metadata), to prove nothing changed.
    pub async fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        let mut conn = self.conn().await;
        let mut out = BTreeMap::new();
        for key in self.all_keys().await {
            let dump: Vec<u8> = redis::cmd("DUMP")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap();
            out.insert(key, dump);
        }
        out
    }

    /// Asserts that the database holds only what start-up creates: the three streams with their
    /// consumer groups, all empty, the key layout and the process's registration
    /// (`alive:<id>`, listed in `processes`). No update, command, job or index key exists.
    pub async fn assert_pristine(&self) {
        let expected: BTreeSet<String> = [
            self.keys.jobs_stream(),
            self.keys.replies_stream(),
            self.keys.callbacks_stream(),
        ]
        .into_iter()
        .collect();
        let registry = |k: &String| {
            k.as_str() == self.keys.layout()
                || *k == self.keys.processes()
                || k.starts_with(&self.keys.alive_prefix())
        };
        assert_eq!(
            self.all_keys()
                .await
                .into_iter()
                .filter(|k| !registry(k))
                .collect::<BTreeSet<_>>(),
            expected,
            "keys other than the empty streams"
        );
        assert_eq!(self.stream_len(&self.keys.jobs_stream()).await, 0);
        assert_eq!(self.stream_len(&self.keys.replies_stream()).await, 0);
        assert_eq!(self.stream_len(&self.keys.callbacks_stream()).await, 0);
    }

    pub async fn get(&self, key: &str) -> Option<String> {
        let mut conn = self.conn().await;
        conn.get(key).await.unwrap()
    }

    /// What update `update_id` became (a job id, or `-`), if it is remembered.
    pub async fn update(&self, update_id: i64) -> Option<String> {
        let mut conn = self.conn().await;
        conn.hget(self.keys.updates(update_id), update_id)
            .await
            .unwrap()
    }

    pub async fn stream_len(&self, key: &str) -> usize {
        let mut conn = self.conn().await;
        conn.xlen(key).await.unwrap()
    }

    /// A stream's entries, oldest first, as field maps.
    pub async fn stream(&self, key: &str) -> Vec<BTreeMap<String, String>> {
        let mut conn = self.conn().await;
        let entries: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
            .arg(key)
            .arg("-")
            .arg("+")
            .query_async(&mut conn)
            .await
            .unwrap();
        entries
            .into_iter()
            .map(|(_, fields)| fields.into_iter().collect())
            .collect()
    }

    /// The job ids on the jobs stream, in order.
    pub async fn jobs_on_stream(&self) -> Vec<u64> {
        self.stream(&self.keys.jobs_stream())
            .await
            .into_iter()
            .map(|e| e["job"].parse().unwrap())
            .collect()
    }

    /// The replies stream's entries, oldest first.
    /// Every entry of the replies stream. Each text for a user (not an admin chat's review or
    /// notice) is held to `not_for_users` here, so every scenario that reads its replies checks
    /// that no user reads a setting name, a URL path or an OS error.
    pub async fn replies(&self) -> Vec<BTreeMap<String, String>> {
        let replies = self.stream(&self.keys.replies_stream()).await;
        for reply in &replies {
            let for_operators = matches!(
                reply.get("kind").map(String::as_str),
                Some("review" | "notice")
            );
            if let (false, Some(text)) = (for_operators, reply.get("text"))
                && let Some(why) = oncebot_tools::sim::not_for_users(text)
            {
                panic!("a user would read {why}: {reply:?}");
            }
        }
        replies
    }

    /// The ids of every job HASH in Redis.
    pub async fn job_ids(&self) -> BTreeSet<u64> {
        let mut conn = self.conn().await;
        let prefix = self.keys.job_prefix();
        let keys: Vec<String> = conn.keys(format!("{prefix}*")).await.unwrap();
        keys.iter()
            .map(|k| k.strip_prefix(&prefix).unwrap().parse().unwrap())
            .collect()
    }

    /// One job's HASH (empty if there is none).
    pub async fn job(&self, id: u64) -> BTreeMap<String, String> {
        let mut conn = self.conn().await;
        conn.hgetall(self.keys.job(id)).await.unwrap()
    }

    /// The business-layer keys (`{p}:v1:cmd:*`) that exist now.
    pub async fn command_keys(&self) -> Vec<String> {
        let mut conn = self.conn().await;
        conn.keys(self.keys.command("*")).await.unwrap()
    }

    /// Every job's `(status, attempts)`, for [`checked_transitions`].
    pub async fn job_states(&self) -> BTreeMap<u64, (String, String)> {
        let mut out = BTreeMap::new();
        for id in self.job_ids().await {
            let job = self.job(id).await;
            let field = |k: &str| job.get(k).cloned().unwrap_or_default();
            out.insert(id, (field("status"), field("attempts")));
        }
        out
    }
}

/// Runs one script call (`call`) and asserts that every job-state change it made is an edge of
/// `JobState::can_transition`: a new job starts from `None`, no job disappears, and a job whose
/// attempt count changed in the same state (a re-claim) must be allowed `s -> s`.
///
/// Every test of a state-changing script goes through this, so a script that writes a state the
/// table does not allow fails here with the script's name and the offending edge.
pub async fn checked_transitions<T>(
    store: &Store,
    script: &str,
    call: impl Future<Output = T>,
) -> T {
    let before = store.job_states().await;
    let out = call.await;
    let after = store.job_states().await;
    for id in before.keys() {
        assert!(after.contains_key(id), "{script} removed job {id}");
    }
    for (id, (status, attempts)) in &after {
        let to: JobState = status
            .parse()
            .unwrap_or_else(|e| panic!("{script} left job {id} in {status:?}: {e}"));
        let from = match before.get(id) {
            None => None,
            Some((old, old_attempts)) => {
                if old == status && old_attempts == attempts {
                    continue;
                }
                Some(old.parse::<JobState>().unwrap())
            }
        };
        assert!(
            JobState::can_transition(from, to),
            "{script} moved job {id} {} -> {to}, which JobState::can_transition forbids",
            from.map_or("(new)".to_string(), |s| s.to_string()),
        );
    }
    out
}

/// XREADGROUP as `consumer` on the jobs stream: the id of the next new entry, as a worker's
/// read would deliver it.
pub async fn deliver(url: &str, consumer: &str) -> String {
    let mut conn = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let reply: redis::streams::StreamReadReply = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg(oncebot::ledger::keys::Stream::Jobs.group())
        .arg(consumer)
        .arg("COUNT")
        .arg(1)
        .arg("STREAMS")
        .arg(Keys::new("oncebot").jobs_stream())
        .arg(">")
        .query_async(&mut conn)
        .await
        .unwrap();
    reply.keys[0].ids[0].id.clone()
}

/// What XAUTOCLAIM does for a dead consumer's entry: hand it to `consumer`.
pub async fn hand_over(url: &str, entry: &str, consumer: &str) {
    let mut conn = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let _: redis::Value = redis::cmd("XCLAIM")
        .arg(Keys::new("oncebot").jobs_stream())
        .arg(oncebot::ledger::keys::Stream::Jobs.group())
        .arg(consumer)
        .arg(0)
        .arg(entry)
        .query_async(&mut conn)
        .await
        .unwrap();
}

/// The `(text, callback_data)` of every button in a reply's `markup`, row by row.
pub fn buttons(reply: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let markup: Value = serde_json::from_str(
        reply
            .get("markup")
            .unwrap_or_else(|| panic!("no markup in {reply:?}")),
    )
    .unwrap();
    markup["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter())
        .map(|b| {
            (
                b["text"].as_str().unwrap().to_string(),
                b["callback_data"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Client settings for `sim` with no credentials (tests add the ones they need).
pub fn bare_settings(sim: &MoviePilotSim) -> MoviePilotSettings {
    MoviePilotSettings {
        url: sim.url(),
        api_key: Secret::new(""),
        username: String::new(),
        password: Secret::new(""),
        timeout_secs: 5,
        search_timeout_secs: 5,
        auth_wait_secs: 3600,
        resource_search_timeout_secs: 5,
        download_timeout_secs: 5,
        download_settle_secs: 2,
        max_body_bytes: 8 * 1024 * 1024,
        users_refresh_secs: 600,
        library_cache_secs: 600,
    }
}

/// [`bare_settings`] logging in as the simulator's user.
pub fn login_settings(sim: &MoviePilotSim) -> MoviePilotSettings {
    MoviePilotSettings {
        username: sim.options().username.clone(),
        password: Secret::new(sim.options().password.clone()),
        ..bare_settings(sim)
    }
}

/// A `/search <title>` admission from user and chat 42, as ingress makes it.
pub fn search_admission(update_id: i64, title: &str) -> oncebot::ledger::Admission {
    oncebot::ledger::Admission {
        update_id,
        chat_id: 42,
        user_id: 42,
        message_id: Some(update_id),
        thread_id: None,
        requester: None,
        role: oncebot::vocabulary::Role::Admin,
        action: oncebot::ledger::AdmissionAction::Job(oncebot::commands::Command::Search.job(
            oncebot::commands::Asker::of(42, 42, None),
            title.to_string(),
            Duration::ZERO,
        )),
    }
}

/// A ledger on a fresh private Redis, its scripts loaded and groups made (keep the server).
pub async fn fresh_ledger() -> (
    oncebot_tools::redis_server::RedisServer,
    oncebot::ledger::Ledger,
) {
    use oncebot_tools::redis_server::{Persistence, RedisServer};
    let redis = RedisServer::start(Persistence::None).unwrap();
    let settings = oncebot::config::Settings::load_from(
        None,
        [("ONCEBOT__REDIS__URL".to_string(), redis.url())],
    )
    .unwrap();
    let ledger = oncebot::ledger::Ledger::connect(
        &settings,
        oncebot::i18n::Texts::new(settings.telegram.locale).for_ledger(),
    )
    .unwrap();
    ledger.prepare().await.unwrap();
    (redis, ledger)
}

/// The text of the answer to a tap (answerCallbackQuery's `text`), once the dispatcher sent it.
pub async fn tap_answer(rig: &rig::Rig, update: &Value) -> String {
    let query = update["callback_query"]["id"].clone();
    eventually("the tap's answer", rig::RECOVERY_DEADLINE, || {
        let calls = rig.tg.calls();
        let query = query.clone();
        async move {
            calls.iter().find_map(|c| {
                (c.method == "answerCallbackQuery" && c.params["callback_query_id"] == query)
                    .then(|| c.params["text"].as_str().unwrap_or_default().to_string())
            })
        }
    })
    .await
}

/// Posts a tap and returns its answer.
pub async fn tapped(rig: &rig::Rig, update: Value) -> String {
    rig.post(&update).await;
    tap_answer(rig, &update).await
}

/// The labels of a message's buttons, row by row (none without a keyboard).
pub fn button_labels(message: &oncebot_tools::sim::telegram::StoredMessage) -> Vec<String> {
    let Some(markup) = message.reply_markup.as_ref() else {
        return Vec::new();
    };
    markup["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter())
        .map(|b| b["text"].as_str().unwrap().to_string())
        .collect()
}
