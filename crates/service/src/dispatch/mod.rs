//! The dispatcher: delivers the replies stream to Telegram, and answers callback queries on a
//! fast lane. Delivery is separate from the job: a failed send is retried here and never
//! re-runs the job.
//!
//! Policy, in one place:
//! - **At-least-once.** `sending` is recorded before the Bot API call and the message_id after
//!   it (reply_begin.lua / reply_end.lua). sendMessage has no idempotency key, so a crash
//!   between Telegram accepting a message and reply_end.lua recording it sends it again after
//!   recovery; the reply's `attempts` (a job's `reply_attempts`) shows it.
//! - **Errors, by Telegram's table.** 429: wait exactly `retry_after`, and nothing goes to that
//!   chat meanwhile. 5xx and network errors: back off and retry up to `max_attempts`. 403
//!   (blocked, kicked, deactivated) and 400 (chat not found, ...): recorded as failed, never
//!   retried unchanged. "message is not modified": success. A moved group: resent once to its
//!   new id. 401: the token is wrong; nothing is marked failed, sending pauses.
//! - **Order and rate.** One chat's replies go one after another in stream order (`order`), also
//!   behind earlier ones another dispatcher holds (a dead one's, until taken over), within
//!   Telegram's per-chat and global limits (`limits`). Callback answers bypass both:
//!   Telegram shows a spinner until they arrive and drops the query after about 150 s.
//! - **Progress in place.** A job's result edits its "working on it" message when there was one.
//! - Messages over 4096 characters are split.
//! - **Posters.** An entry with a `photo` (a relayed notification's poster, a job's reply about a
//!   media) and a text of at most 1024 characters goes as one `sendPhoto`, the text its caption;
//!   a longer text goes as text alone (`telegram.posters = false`: always). A poster Telegram
//!   refuses (400) is sent as text at once, the switch recorded first (reply_form.lua), so a
//!   crash between the two sends one message; an uncertain failure is retried as the photo,
//!   never switched to text, which could deliver both forms. A job's result that follows its
//!   text "working on it" message goes as a new photo, and the progress message is deleted
//!   after it (a text message cannot become a photo); a result that stays text edits it.
//! - **Edits know the form.** A text edit of a photo message changes its caption
//!   (`editMessageCaption`, cut to 1024 characters; `editMessageMedia` when the entry brings a
//!   new poster), of a text message its text. The form is the one recorded for the job's reply
//!   (reply_end.lua's `reply_form`); otherwise Telegram's own 400 ("there is no text in the
//!   message to edit", "there is no caption in the message to edit") says it, and the edit is
//!   tried again in the other form.
//! - **Forum topics.** An entry's `thread_id` is a new message's `message_thread_id` (never an
//!   edit's). A topic Telegram refuses ("message thread not found", `TOPIC_CLOSED`) is no
//!   failure: the reply goes again at once without the thread and the reply reference, to the
//!   chat's General topic, logged once an hour per topic (`send::Tries`).

mod ends;
mod form;
mod limits;
mod menus;
mod order;
mod send;
mod wire;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use crate::backoff::{self, Retry};
use crate::config::{DispatcherSettings, Settings};
use crate::consume::{Consumer, read_loop};
use crate::ledger::{
    Begin, CallbackEntry, ConsumerRole, Lane, LaneEntry, Ledger, LedgerError, ReplyEnded,
    ReplyEntry, StreamReader,
};
use crate::liveness::{Liveness, take_over};
use crate::metrics::METRICS;
use crate::redis_health::{AfterFailure, UntilRecorded, WriteHealth};
use crate::shutdown::sleep_or_stop;
use crate::telegram::api::{ApiError, BotApi};
use crate::vocabulary::ReplyKind;
pub use form::{MAX_CAPTION_CHARS, MAX_MESSAGE_CHARS, split_message};
pub use limits::RateLimiter;
use order::{ChatOrder, Place};
use send::{Sent, plan};

const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// One dispatcher process.
pub struct Dispatcher {
    ledger: Ledger,
    api: BotApi,
    cfg: DispatcherSettings,
    /// `telegram.posters`: `false` sends every reply as text.
    posters: bool,
    /// `setMyCommands`: everyone's menu, and the admins' kept in step (`menus`).
    menus: Mutex<Option<menus::Menus>>,
    consumer: String,
    limiter: RateLimiter,
    /// Each chat's replies in stream order, one at a time.
    order: ChatOrder,
    /// Entries this process is working on, per lane: the leases it renews.
    in_flight: Mutex<HashSet<(bool, String)>>,
    permits: Arc<Semaphore>,
    tasks: TaskTracker,
    /// This process's liveness key in the `dispatchers` group.
    liveness: Arc<Liveness>,
    /// Cancelled at shutdown: ends the waits between a reply's tries.
    stop: CancellationToken,
    /// The replies' outcomes being recorded together (reply_end.lua's group commit).
    ends: ends::Ends,
    /// Whether a task watches the replies held by other dispatchers (`watch_held`).
    watching_held: AtomicBool,
    /// Whether Redis takes writes: a sent reply's record is made the moment it does again.
    write_health: WriteHealth,
    /// When each refused forum topic was last logged.
    thread_refusals: ThreadRefusals,
}

/// Refused forum topics, logged once an hour each: a closed topic that a route names refuses
/// every notification, and each still arrives (in General), so one line an hour says it.
#[derive(Default)]
struct ThreadRefusals(Mutex<std::collections::HashMap<(i64, i64), std::time::Instant>>);

impl ThreadRefusals {
    const EVERY: Duration = Duration::from_secs(3600);

    /// Whether the refusal of `route` (chat, topic) is the first in the last hour (and so is
    /// logged).
    fn first_in_the_hour(&self, route: (i64, i64)) -> bool {
        let now = std::time::Instant::now();
        // A plain map; a panic elsewhere cannot leave it inconsistent.
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        seen.retain(|_, at| now.duration_since(*at) < Self::EVERY);
        if seen.contains_key(&route) {
            return false;
        }
        seen.insert(route, now);
        true
    }
}

/// How many pending replies one look for those held elsewhere reads at most.
const HELD_LOOKED_AT: usize = 1000;

/// How often the replies held elsewhere are looked at while there are any.
const HELD_CHECK_EVERY: Duration = Duration::from_millis(200);

/// An entry's task ending, however it ends: the entry leaves the in-flight set (its lease is no
/// longer renewed) and its send permit is freed.
struct Done {
    dispatcher: Arc<Dispatcher>,
    entry: (bool, String),
    _permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Drop for Done {
    fn drop(&mut self) {
        self.dispatcher.in_flight().remove(&self.entry);
    }
}

impl Dispatcher {
    /// A dispatcher sharing its process's liveness (and so its consumer name).
    pub(crate) fn new(
        settings: &Settings,
        ledger: Ledger,
        api: BotApi,
        liveness: Arc<Liveness>,
        write_health: WriteHealth,
        directory: crate::users::Live,
    ) -> Arc<Self> {
        let cfg = settings.dispatcher.clone();
        let consumer = liveness.consumer().to_string();
        Arc::new(Dispatcher {
            limiter: RateLimiter::new(&cfg),
            permits: Arc::new(Semaphore::new(cfg.concurrency)),
            liveness,
            consumer,
            menus: Mutex::new(
                cfg.set_commands
                    .then(|| menus::Menus::new(settings, directory, api.clone())),
            ),
            ledger,
            api,
            posters: settings.telegram.posters,
            order: ChatOrder::default(),
            in_flight: Mutex::default(),
            tasks: TaskTracker::new(),
            stop: CancellationToken::new(),
            ends: ends::Ends::default(),
            watching_held: AtomicBool::new(false),
            write_health,
            thread_refusals: ThreadRefusals::default(),
            cfg,
        })
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashSet<(bool, String)>> {
        // A plain set; a panic elsewhere cannot leave it inconsistent.
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs until `shutdown`; sends under way finish, the rest stay pending for the next start.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) -> anyhow::Result<()> {
        // Alive before the first read; then what dead predecessors left unsent.
        let Some(taken) = self
            .liveness
            .join(ConsumerRole::Dispatcher, &shutdown)
            .await
        else {
            return Ok(());
        };
        tracing::info!(consumer = %self.consumer, "dispatcher started");
        let stop = self.stop.clone();
        let linked = shutdown.clone();
        tokio::spawn(async move {
            linked.cancelled().await;
            stop.cancel();
        });
        let this = self.clone();
        let heartbeat = take_over(taken, shutdown.clone(), move |reaped| {
            this.clone().take_reaped(reaped)
        })
        .await;
        let menus = self
            .menus
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .map(|m| tokio::spawn(m.run(shutdown.clone())));
        let callbacks = tokio::spawn(self.clone().lane_loop(Lane::Callbacks, shutdown.clone()));
        let housekeeping = tokio::spawn(self.clone().housekeeping(shutdown.clone()));
        self.clone()
            .lane_loop(Lane::Replies, shutdown.clone())
            .await;
        let _ = callbacks.await;
        let _ = housekeeping.await;
        let _ = heartbeat.await;
        if let Some(menus) = menus {
            let _ = menus.await;
        }
        self.tasks.close();
        if tokio::time::timeout(Duration::from_secs(10), self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("sends still under way at shutdown; they are retried after restart");
        }
        self.liveness.retire(ConsumerRole::Dispatcher).await;
        tracing::info!("dispatcher stopped");
        Ok(())
    }

    /// Before the replies of one read take their places: the replies before them that another
    /// dispatcher holds are held here too (`order`), so a chat's newer replies wait for them.
    /// Nothing is held when Redis cannot say (the replies go as before).
    async fn hold_elsewhere(self: Arc<Self>, entries: &[LaneEntry]) {
        let Some(newest) = entries
            .iter()
            .map(LaneEntry::id)
            .reduce(|a, b| if order::later(b, a) { b } else { a })
        else {
            return;
        };
        let held = match self
            .ledger
            .replies_held_elsewhere(&self.consumer, newest, HELD_LOOKED_AT)
            .await
        {
            Ok(held) => held,
            Err(e) => {
                tracing::warn!(error = %e, "cannot tell which replies another dispatcher holds; this read's go without waiting for them");
                return;
            }
        };
        if held.is_empty() {
            return;
        }
        for (entry, chat) in &held {
            self.order.hold(*chat, entry);
        }
        tracing::debug!(
            held = held.len(),
            "replies held by another dispatcher; their chats' newer replies wait for them"
        );
        if !self.watching_held.swap(true, AtomicOrdering::AcqRel) {
            tokio::spawn(self.clone().watch_held());
        }
    }

    /// While entries are held elsewhere: every [`HELD_CHECK_EVERY`], those acknowledged there
    /// are released. (One taken over here takes its own place when it is spawned.)
    async fn watch_held(self: Arc<Self>) {
        loop {
            if sleep_or_stop(HELD_CHECK_EVERY, &self.stop).await {
                return;
            }
            let held = self.order.held();
            if held.is_empty() {
                self.watching_held.store(false, AtomicOrdering::Release);
                // A hold made between the look and the store finds the flag set: look again.
                if self.order.held().is_empty()
                    || self.watching_held.swap(true, AtomicOrdering::AcqRel)
                {
                    return;
                }
                continue;
            }
            match self
                .ledger
                .replies_no_longer_elsewhere(&self.consumer, &held)
                .await
            {
                Ok(gone) => {
                    for entry in gone {
                        self.order.release(&entry);
                    }
                }
                Err(e) => {
                    tracing::debug!(error = %e, "checking the replies held elsewhere failed; trying again")
                }
            }
        }
    }

    /// Sends what was taken from dead dispatchers.
    async fn take_reaped(self: Arc<Self>, reaped: crate::ledger::Reaped) {
        for entry in reaped.lanes {
            tracing::warn!(entry = %entry.id(), lane = ?entry.lane(), "took over an entry from a dispatcher whose liveness expired");
            self.clone().spawn_entry(entry, true).await;
        }
    }

    /// Reads one lane on a connection of its own.
    async fn lane_loop(self: Arc<Self>, lane: Lane, stop: CancellationToken) {
        read_loop(&self.ledger, &stop, &LaneReader(self.clone(), lane)).await;
    }

    /// Spawns `entry`'s task, with a send permit for a reply read now. An entry taken over from
    /// a dispatcher that died (`takeover`) takes none: this one's newer entries of its chat may
    /// hold every permit while they wait behind it (`order`), and the dead one's entries were
    /// bounded by its own permits.
    async fn spawn_entry(self: Arc<Self>, entry: LaneEntry, takeover: bool) {
        let is_reply = entry.lane() == Lane::Replies;
        // Callback answers never wait for a permit: the fast lane.
        let permit = if is_reply && !takeover {
            match self.permits.clone().acquire_owned().await {
                Ok(p) => Some(p),
                Err(_) => return,
            }
        } else {
            None
        };
        let id = entry.id().to_string();
        self.in_flight().insert((is_reply, id.clone()));
        let done = Done {
            dispatcher: self.clone(),
            entry: (is_reply, id.clone()),
            _permit: permit,
        };
        let this = self.clone();
        match entry {
            LaneEntry::Reply(reply) => {
                // Its place in its chat's queue is taken here, in the order entries are read,
                // not in the order their tasks happen to run.
                let place = self.order.enter(reply.chat_id, &id);
                let span = tracing::info_span!("reply", entry = %id, chat_id = reply.chat_id, job_id = reply.job_id);
                self.tasks.spawn(async move {
                    this.deliver(reply, place).instrument(span).await;
                    drop(done);
                });
            }
            LaneEntry::Callback(cb) => {
                self.tasks.spawn(async move {
                    this.answer_callback(cb).await;
                    drop(done);
                });
            }
            LaneEntry::Malformed {
                lane: Lane::Replies,
                ..
            } => {
                self.tasks.spawn(async move {
                    tracing::error!(entry = %id, "reply without a chat id; dropping it");
                    let _ = this.ledger.drop_reply(&id).await;
                    drop(done);
                });
            }
            LaneEntry::Malformed {
                lane: Lane::Callbacks,
                ..
            } => {
                self.tasks.spawn(async move {
                    tracing::error!(entry = %id, "callback entry without an id; dropping it");
                    let _ = this.ledger.callback_done(&id).await;
                    drop(done);
                });
            }
        }
    }

    /// reply_begin.lua, tried again while Redis fails (`recorded`) until shutdown. Nothing was
    /// sent yet, so trying again repeats nothing, and stopping leaves the reply queued.
    async fn begin(&self, reply: &ReplyEntry, retention: Duration) -> Result<Begin, LedgerError> {
        recorded("the send", Some(&self.stop), || {
            self.ledger.reply_begin(reply, &self.consumer, retention)
        })
        .await
    }

    /// One reply: recorded `sending`, sent within the limits, recorded `sent` or `failed`, once
    /// every earlier reply of its chat has been (`place`, held until the end).
    async fn deliver(&self, reply: ReplyEntry, mut place: Place) {
        place.wait().await;
        let retention = Duration::from_secs(self.cfg.reply_retention_secs);
        let plan = match self.begin(&reply, retention).await {
            Ok(Begin::Send {
                attempts,
                progress_message_id,
                form,
                photo_message_id,
            }) => {
                if attempts > 1 {
                    tracing::warn!(
                        attempts,
                        "sending a reply again after an interrupted attempt; Telegram may show it twice"
                    );
                }
                plan(&reply, progress_message_id, form, photo_message_id)
            }
            Ok(Begin::Done { state }) => {
                tracing::debug!(state = %state, "reply already settled");
                return;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot record the send; the reply stays queued");
                return;
            }
        };
        let outcome = self.send_with_retries(&reply, &plan).await;
        crate::crash_point!("dispatch.after_send");
        // Not ended at shutdown: once sent, this record is what keeps the reply from going twice.
        let Some(sent) = ended(&reply, &outcome) else {
            return;
        };
        if let Err(e) = self.record_end(&reply, &sent, retention).await {
            tracing::error!(error = %e, "cannot record the reply's outcome; it may be sent again");
        }
    }

    /// reply_end.lua for a reply that went out, with the others ended at the same moment (one
    /// call, `ends`). While Redis is away or refuses writes it is tried for as long as that
    /// lasts (the shutdown's wait for sends in flight bounds it), at once when writes return:
    /// a reply sent and left unrecorded would be sent again by whoever takes its entry. One
    /// log line for the wait; other errors are tried 8 times.
    async fn record_end(
        &self,
        reply: &ReplyEntry,
        sent: &ReplyEnded,
        retention: Duration,
    ) -> Result<(), String> {
        let mut tries = UntilRecorded::new(8);
        loop {
            let e = match self.ends.record(&self.ledger, reply, sent, retention).await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            match tries.failed(&e, &self.write_health).await {
                AfterFailure::KeepsTrying => {
                    tracing::warn!(error = %e.error, "cannot record the reply's outcome yet; trying until Redis takes it (it is not sent again)");
                }
                AfterFailure::StillTrying => {}
                AfterFailure::Retrying => {
                    tracing::warn!(error = %e.error, "cannot record the reply's outcome yet; trying again");
                }
                AfterFailure::GivenUp => return Err(e.error),
            }
        }
    }

    /// answerCallbackQuery at once, outside the send limits.
    async fn answer_callback(&self, cb: CallbackEntry) {
        let body = json!({
            "callback_query_id": cb.callback_query_id,
            "text": cb.text,
            "show_alert": cb.show_alert,
        });
        let mut tries = Retry::new(backoff::CALLBACK_ANSWER, 3);
        loop {
            let Err(refused) = self
                .api
                .call::<Value>("answerCallbackQuery", &body, Duration::from_secs(10))
                .await
            else {
                break;
            };
            // Telegram's wait counts as a try too; after the last one nothing is tried again.
            match (refused, tries.failed()) {
                (ApiError::RetryAfter(wait), next) if wait < Duration::from_secs(30) => {
                    tries.wait(wait).await;
                    if next.is_none() {
                        break;
                    }
                }
                (ApiError::Network(reason), Some(delay)) => {
                    tracing::warn!(reason = %reason, "answerCallbackQuery failed; retrying");
                    tries.wait(delay).await;
                }
                (e, _) => {
                    // Too old, or unreachable for too long: the query cannot be answered now.
                    tracing::warn!(error = %e, "callback query not answered");
                    break;
                }
            }
        }
        if let Err(e) = self.ledger.callback_done(&cb.entry).await {
            tracing::error!(error = %e, "cannot acknowledge a callback answer");
        }
    }

    /// Renews the leases of entries under way and takes over those of dead dispatchers.
    async fn housekeeping(self: Arc<Self>, stop: CancellationToken) {
        let idle = Duration::from_millis(self.cfg.reclaim_idle_ms);
        let mut last_reclaim = tokio::time::Instant::now();
        loop {
            if sleep_or_stop(idle / 4, &stop).await {
                return;
            }
            for (lane, is_reply) in [(Lane::Replies, true), (Lane::Callbacks, false)] {
                let entries: Vec<String> = self
                    .in_flight()
                    .iter()
                    .filter(|(r, _)| *r == is_reply)
                    .map(|(_, e)| e.clone())
                    .collect();
                if let Err(e) = self.ledger.renew_lane(lane, &self.consumer, &entries).await {
                    tracing::warn!(error = %e, "renewing reply leases failed");
                }
            }
            if last_reclaim.elapsed() >= idle / 2 {
                last_reclaim = tokio::time::Instant::now();
                for lane in [Lane::Replies, Lane::Callbacks] {
                    match self
                        .ledger
                        .reclaim_lane(lane, &self.consumer, idle, 50)
                        .await
                    {
                        Ok(entries) => {
                            for entry in entries {
                                tracing::warn!(entry = %entry.id(), ?lane, "took over an entry from a dispatcher that stopped");
                                self.clone().spawn_entry(entry, true).await;
                            }
                        }
                        Err(e) => tracing::warn!(error = %e, "reclaiming replies failed"),
                    }
                }
            }
        }
    }
}

/// A delivery record (reply_begin.lua, reply_end.lua), tried again while Redis fails, for about
/// 20 s (0.2 s, 0.4 s, ... 6.4 s apart), as a worker tries its outcome again: a failover of a
/// cluster's master, or replicas slow to confirm (`redis.wait_replicas`), would otherwise leave
/// the reply queued until `dispatcher.reclaim_idle_ms`, or send it again.
/// With `stop`, its waits end at shutdown (for a record before the send: nothing is lost then).
async fn recorded<T, E: std::fmt::Display, Fut>(
    what: &str,
    stop: Option<&CancellationToken>,
    call: impl FnMut() -> Fut,
) -> Result<T, E>
where
    Fut: Future<Output = Result<T, E>>,
{
    let tries = Retry::new(backoff::REDIS, 8);
    let tries = match stop {
        Some(stop) => tries.until(stop),
        None => tries,
    };
    backoff::retry(tries, call, |e| {
        tracing::warn!(error = %e, "cannot record {what} yet; trying again");
    })
    .await
}

/// A send's outcome as reply_end.lua records it, counted and logged; `None` when shutdown
/// stopped it (nothing is recorded: the reply stays pending).
fn ended(reply: &ReplyEntry, outcome: &Sent) -> Option<ReplyEnded> {
    match outcome {
        Sent::Delivered(id, form) => {
            METRICS.reply("sent");
            tracing::info!(
                message_id = id,
                form = form.as_str(),
                kind = reply.kind.map_or("", ReplyKind::as_str),
                "reply sent"
            );
            Some(Ok((id.unwrap_or_default(), *form)))
        }
        Sent::Stopped => {
            tracing::info!("stopping; the reply stays pending and is sent after the restart");
            None
        }
        Sent::Failed(reason) => {
            METRICS.reply("failed");
            tracing::warn!(reason = %reason, kind = reply.kind.map_or("", ReplyKind::as_str), "reply failed for good");
            Some(Err(reason.clone()))
        }
    }
}

/// The dispatcher as a consumer of one lane.
struct LaneReader(Arc<Dispatcher>, Lane);

impl Consumer for LaneReader {
    fn what(&self) -> &'static str {
        match self.1 {
            Lane::Replies => "replies",
            Lane::Callbacks => "callbacks",
        }
    }

    type Entry = LaneEntry;

    fn read<'a>(
        &'a self,
        reader: &'a mut StreamReader,
    ) -> impl std::future::Future<Output = Option<Result<Vec<LaneEntry>, LedgerError>>> + Send + 'a
    {
        let d = &self.0;
        async move {
            if !d.liveness.may_claim() {
                tokio::time::sleep(Duration::from_millis(d.cfg.heartbeat_interval_ms)).await;
                return Some(Ok(Vec::new()));
            }
            let count = d.permits.available_permits().max(1);
            let block = Duration::from_millis(d.cfg.read_block_ms);
            Some(reader.lane(self.1, &d.consumer, count, block).await)
        }
    }

    async fn handle(&self, entries: Vec<LaneEntry>) {
        if self.1 == Lane::Replies {
            self.0.clone().hold_elsewhere(&entries).await;
        }
        for entry in entries {
            self.0.clone().spawn_entry(entry, false).await;
        }
    }
}
