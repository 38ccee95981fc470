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

mod ends;
mod limits;
mod menus;
mod order;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use crate::backoff::{self, Retry};
use crate::config::{DispatcherSettings, Settings};
use crate::consume::{Consumer, read_loop};
use crate::ledger::{
    Begin, CallbackEntry, ConsumerRole, Form, Lane, LaneEntry, Ledger, LedgerError, MarkupOp,
    ReplyEnded, ReplyEntry, StreamReader,
};
use crate::liveness::{Liveness, take_over};
use crate::metrics::METRICS;
use crate::shutdown::sleep_or_stop;
use crate::telegram::api::{ApiError, BotApi};
use crate::vocabulary::ReplyKind;
pub use limits::RateLimiter;
use order::{ChatOrder, Place};

/// Telegram's limit on a message's text, in characters.
pub const MAX_MESSAGE_CHARS: usize = 4096;

/// Telegram's limit on a photo's caption, in characters: Unicode code points, as the Bot API
/// server counts them (tdlib's `utf8_length` in `create_input_message_content`), as for a text.
pub const MAX_CAPTION_CHARS: usize = 1024;

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

/// How one send ended.
enum Sent {
    /// Delivered (or already as wanted): the message id, if Telegram gave one, and its form.
    Delivered(Option<i64>, Form),
    /// Will never succeed as it is; the reason is recorded.
    Failed(String),
    /// Shutdown came while waiting to try again: nothing recorded, the reply stays pending and
    /// is sent after the restart.
    Stopped,
}

/// What reply_begin.lua handed over for one reply: the message its text replaces and what
/// is known of the forms.
struct Plan {
    /// The message to edit: the entry's own target, else the job's "working on it" message.
    edit_target: Option<i64>,
    /// The job's "working on it" message, when the entry has no target of its own (always a
    /// text message): deleted after a result sent as a photo.
    progress: Option<i64>,
    /// The message to edit is known to be a photo (the job's reply went as one).
    caption: bool,
    /// An earlier attempt settled on text (its poster was refused).
    text_only: bool,
}

/// Where a reply's tries stand: what an earlier refusal changed for the next try.
struct Tries<'r> {
    chat: i64,
    failures: u32,
    migrated: bool,
    edit_allowed: bool,
    /// The poster of a new photo message; `None`: text.
    photo: Option<&'r str>,
    /// The message to edit is a photo: its caption is edited, not its text.
    caption: bool,
    /// A new poster for the edited photo (editMessageMedia); dropped after a refusal.
    media: Option<&'r str>,
}

impl Tries<'_> {
    /// The form the message stands in once this try succeeds.
    fn form(&self, edit_target: Option<i64>) -> Form {
        if self.photo.is_some() || (edit_target.is_some() && self.caption) {
            Form::Photo
        } else {
            Form::Text
        }
    }
}

/// What to do after a refused try.
enum Next {
    /// Try again at once (something changed: the chat, the form).
    Now,
    /// Telegram refused the poster: record that the reply goes as text, then send it.
    TextInstead,
    /// Try again after this long.
    After(Duration),
    Give(Sent),
}

impl Dispatcher {
    /// A dispatcher sharing its process's liveness (and so its consumer name).
    pub(crate) fn new(
        settings: &Settings,
        ledger: Ledger,
        api: BotApi,
        liveness: Arc<Liveness>,
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
                    .then(|| menus::Menus::new(settings, ledger.clone(), api.clone())),
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
        let sent: ReplyEnded = match &outcome {
            Sent::Delivered(id, form) => {
                METRICS.reply("sent");
                tracing::info!(
                    message_id = id,
                    form = form.as_str(),
                    kind = reply.kind.map_or("", ReplyKind::as_str),
                    "reply sent"
                );
                Ok((id.unwrap_or_default(), *form))
            }
            Sent::Stopped => {
                tracing::info!("stopping; the reply stays pending and is sent after the restart");
                return;
            }
            Sent::Failed(reason) => {
                METRICS.reply("failed");
                tracing::warn!(reason = %reason, kind = reply.kind.map_or("", ReplyKind::as_str), "reply failed for good");
                Err(reason.clone())
            }
        };
        // With the others ended at the same moment: one reply_end.lua call (`ends`).
        let recorded = recorded("the reply's outcome", None, || {
            self.ends.record(&self.ledger, &reply, &sent, retention)
        })
        .await;
        if let Err(e) = recorded {
            tracing::error!(error = %e, "cannot record the reply's outcome; it may be sent again");
        }
    }

    async fn send_with_retries(&self, reply: &ReplyEntry, plan: &Plan) -> Sent {
        let poster_on = self.posters && !plan.text_only;
        let mut tries = Tries {
            chat: reply.chat_id,
            failures: 0,
            migrated: false,
            edit_allowed: true,
            photo: poster(reply, poster_on),
            caption: plan.caption,
            media: reply
                .photo
                .as_deref()
                .filter(|_| poster_on)
                .filter(|u| is_http(u)),
        };
        loop {
            // A new photo replaces no message: the progress message is deleted after it.
            let edit_target = plan
                .edit_target
                .filter(|_| tries.edit_allowed && tries.photo.is_none());
            let refused = match self.send_once(reply, &tries, edit_target).await {
                Ok(id) => {
                    if let (Some(_), Some(progress)) = (tries.photo, plan.progress) {
                        self.delete_progress(tries.chat, progress).await;
                    }
                    return Sent::Delivered(id, tries.form(edit_target));
                }
                Err(e) => e,
            };
            match self.after_refusal(reply, &mut tries, edit_target, refused) {
                Next::Now => {}
                Next::TextInstead => {
                    if let Err(sent) = self.record_text_instead(reply).await {
                        return sent;
                    }
                    tries.photo = None;
                }
                Next::After(wait) => {
                    if sleep_or_stop(wait, &self.stop).await {
                        return Sent::Stopped;
                    }
                }
                Next::Give(sent) => return sent,
            }
        }
    }

    /// Records that a reply whose poster was refused goes as text (reply_form.lua), before the
    /// text is sent: after a crash here the text goes, once, and the photo is not tried again.
    async fn record_text_instead(&self, reply: &ReplyEntry) -> Result<(), Sent> {
        let recorded = recorded("the reply's form", Some(&self.stop), || {
            self.ledger.reply_form(reply, &self.consumer, Form::Text)
        })
        .await;
        match recorded {
            Ok(true) => {
                crate::crash_point!("dispatch.before_text_fallback");
                Ok(())
            }
            Ok(false) => {
                tracing::warn!("another dispatcher took this reply over; leaving it to that one");
                Err(Sent::Stopped)
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot record the switch to text; the reply stays queued");
                Err(Sent::Stopped)
            }
        }
    }

    /// Deletes a job's "working on it" message after its result went as a photo: a text message
    /// cannot become one. A failure leaves it (it is only a stale notice), logged.
    async fn delete_progress(&self, chat: i64, message_id: i64) {
        self.limiter.acquire(chat).await;
        let body = json!({"chat_id": chat, "message_id": message_id});
        let deleted = self
            .api
            .call::<Value>("deleteMessage", &body, CALL_TIMEOUT)
            .await;
        self.limiter.sent(chat);
        match deleted {
            Ok(_) => {}
            Err(ApiError::Api { description, .. })
                if description.contains("message to delete not found") => {}
            Err(e) => tracing::warn!(
                error = %e,
                message_id,
                "could not delete the \"working on it\" message after its result went as a photo"
            ),
        }
    }

    /// What a refused try means for the next one.
    fn after_refusal(
        &self,
        reply: &ReplyEntry,
        tries: &mut Tries<'_>,
        edit_target: Option<i64>,
        refused: ApiError,
    ) -> Next {
        if let ApiError::Api {
            code: 400,
            description,
        } = &refused
            && let Some(next) = other_form(tries, edit_target, description)
        {
            return next;
        }
        match refused {
            ApiError::RetryAfter(wait) => {
                METRICS.telegram_429.inc();
                METRICS.reply("retried");
                tracing::warn!(wait = ?wait, "Telegram asked to slow down (429); waiting exactly that long");
                self.limiter.pause_chat(tries.chat, wait);
                Next::Now
            }
            ApiError::Network(reason) => {
                tries.failures += 1;
                if tries.failures >= self.cfg.max_attempts {
                    return Next::Give(Sent::Failed(format!(
                        "gave up after {} attempts: {reason}",
                        tries.failures
                    )));
                }
                METRICS.reply("retried");
                let delay = self.retry_delay(tries.failures);
                tracing::warn!(reason = %reason, retry_in = ?delay, "send failed; retrying");
                Next::After(delay)
            }
            ApiError::Migrated(new_chat) if !tries.migrated => {
                tracing::warn!(new_chat, "the group moved to a supergroup; sending there");
                tries.migrated = true;
                tries.chat = new_chat;
                Next::Now
            }
            // A definite refusal of the poster (it could not be fetched, is no image, ...):
            // nothing was sent, so the text goes now. Only a 400 is definite; a timeout or a
            // 5xx may have delivered the photo and is retried as the photo above.
            ApiError::Api {
                code: 400,
                description,
            } if tries.photo.is_some() => {
                METRICS.reply("poster_refused");
                tracing::warn!(
                    poster = %url_for_log(tries.photo.unwrap_or_default()),
                    reason = %description,
                    "Telegram refused the poster; sending the text alone"
                );
                Next::TextInstead
            }
            ApiError::Api { description, .. } if is_not_modified(&description) => Next::Give(
                Sent::Delivered(reply.edit_message_id, tries.form(edit_target)),
            ),
            ApiError::Api { description, .. }
                if tries.edit_allowed && is_edit_target_gone(&description) =>
            {
                tracing::info!("the message to edit is gone; sending a new one");
                tries.edit_allowed = false;
                Next::Now
            }
            ApiError::Unauthorized => {
                tracing::error!(
                    "Telegram rejects the bot token (401): replies wait until \
                     ONCEBOT__TELEGRAM__TOKEN is fixed and oncebot restarted"
                );
                Next::After(Duration::from_secs(60))
            }
            e => Next::Give(Sent::Failed(e.to_string())),
        }
    }

    fn retry_delay(&self, failures: u32) -> Duration {
        let min = Duration::from_millis(self.cfg.retry_min_delay_ms);
        let max = Duration::from_millis(self.cfg.retry_max_delay_ms);
        backoff::nth(backoff::jittered(min, max), failures)
    }

    /// One delivery attempt: an edit (of the given message, or of the job's progress message),
    /// a photo with the text as its caption, or new messages, split at 4096 characters; each
    /// Bot API call waits for its rate slot.
    async fn send_once(
        &self,
        reply: &ReplyEntry,
        tries: &Tries<'_>,
        edit_target: Option<i64>,
    ) -> Result<Option<i64>, ApiError> {
        let result = self.send_once_unpaced(reply, tries, edit_target).await;
        self.limiter.sent(tries.chat);
        result
    }

    async fn send_once_unpaced(
        &self,
        reply: &ReplyEntry,
        tries: &Tries<'_>,
        edit_target: Option<i64>,
    ) -> Result<Option<i64>, ApiError> {
        let chat = tries.chat;
        // Checked to be JSON and passed on as text: the stored markup is not rebuilt as a
        // `Value` tree and serialised again for every message.
        let markup: Option<Box<RawValue>> = reply
            .markup
            .as_ref()
            .and_then(|m| RawValue::from_string(m.clone()).ok());
        if let Some(op) = reply.op {
            return self.edit_markup(reply, chat, op, markup.as_deref()).await;
        }
        let reply_parameters = reply.reply_to.map(|to| ReplyParameters {
            allow_sending_without_reply: true,
            message_id: to,
        });
        if let (Some(message_id), true) = (edit_target, tries.caption) {
            return self
                .edit_caption(reply, chat, message_id, tries.media, markup.as_deref())
                .await;
        }
        if let Some(photo) = tries.photo {
            // Plain text, as the text of a message: no parse_mode.
            let body = PhotoBody {
                chat_id: chat,
                photo,
                caption: (!reply.text.is_empty()).then_some(reply.text.as_str()),
                reply_markup: markup.as_deref(),
                reply_parameters,
            };
            self.limiter.acquire(chat).await;
            let message: SentMessage = self.api.call("sendPhoto", &body, CALL_TIMEOUT).await?;
            return Ok(message.message_id);
        }
        self.send_text(
            reply,
            chat,
            edit_target,
            markup.as_deref(),
            reply_parameters,
        )
        .await
    }

    /// A text edit of a photo message: its caption (cut to a caption's length), with a new
    /// image (editMessageMedia) when the entry brings one.
    async fn edit_caption(
        &self,
        reply: &ReplyEntry,
        chat: i64,
        message_id: i64,
        media: Option<&str>,
        markup: Option<&RawValue>,
    ) -> Result<Option<i64>, ApiError> {
        let caption = caption_of(&reply.text);
        self.limiter.acquire(chat).await;
        let message: SentMessage = match media {
            Some(url) => {
                let body = MediaBody {
                    chat_id: chat,
                    message_id,
                    media: InputMediaPhoto {
                        kind: "photo",
                        media: url,
                        caption: &caption,
                    },
                    reply_markup: markup,
                };
                self.api
                    .call("editMessageMedia", &body, CALL_TIMEOUT)
                    .await?
            }
            None => {
                let body = CaptionBody {
                    chat_id: chat,
                    message_id,
                    caption: &caption,
                    reply_markup: markup,
                };
                self.api
                    .call("editMessageCaption", &body, CALL_TIMEOUT)
                    .await?
            }
        };
        Ok(message.message_id.or(Some(message_id)))
    }

    /// clear_markup removes a message's buttons; edit_markup replaces them (a release list
    /// with a used `✓ 下载 k` button).
    async fn edit_markup(
        &self,
        reply: &ReplyEntry,
        chat: i64,
        op: MarkupOp,
        markup: Option<&RawValue>,
    ) -> Result<Option<i64>, ApiError> {
        let Some(message_id) = reply.edit_message_id else {
            return Ok(None);
        };
        self.limiter.acquire(chat).await;
        let keyboard: Value = match (op, markup) {
            (MarkupOp::Edit, Some(m)) => serde_json::from_str(m.get()).unwrap_or_default(),
            _ => json!({"inline_keyboard": []}),
        };
        let body = json!({"chat_id": chat, "message_id": message_id,
                          "reply_markup": keyboard});
        self.api
            .call::<Value>("editMessageReplyMarkup", &body, CALL_TIMEOUT)
            .await?;
        Ok(Some(message_id))
    }

    /// The text as new messages, split at 4096 characters (the first answering the user's
    /// message), or its first part as an edit of `edit_target`; the buttons go under the last.
    async fn send_text(
        &self,
        reply: &ReplyEntry,
        chat: i64,
        edit_target: Option<i64>,
        markup: Option<&RawValue>,
        reply_parameters: Option<ReplyParameters>,
    ) -> Result<Option<i64>, ApiError> {
        let chunks = split_message(&reply.text);
        let mut first_id = None;
        for (i, chunk) in chunks.iter().enumerate() {
            let last = i + 1 == chunks.len();
            let mut body = TextBody {
                chat_id: chat,
                message_id: None,
                reply_markup: if last { markup } else { None },
                reply_parameters: None,
                text: chunk,
            };
            self.limiter.acquire(chat).await;
            let message: SentMessage = match (i, edit_target) {
                (0, Some(message_id)) => {
                    body.message_id = Some(message_id);
                    self.api
                        .call("editMessageText", &body, CALL_TIMEOUT)
                        .await?
                }
                _ => {
                    if i == 0 {
                        body.reply_parameters = reply_parameters;
                    }
                    self.api.call("sendMessage", &body, CALL_TIMEOUT).await?
                }
            };
            self.limiter.sent(chat);
            let id = message.message_id;
            first_id = first_id.or(id).or(edit_target);
        }
        Ok(first_id)
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

/// What reply_begin.lua's answer means for one reply's sends.
fn plan(
    reply: &ReplyEntry,
    progress: Option<i64>,
    form: Option<Form>,
    photo_message_id: Option<i64>,
) -> Plan {
    // A job's result replaces its "working on it" message (reply_begin reads that message only
    // for a reply that has a job); an entry with a target of its own edits that one.
    let progress = progress
        .filter(|_| reply.edit_message_id.is_none())
        .filter(|_| reply.kind.is_some_and(ReplyKind::reports_on_job));
    let edit_target = reply.edit_message_id.or(progress);
    Plan {
        edit_target,
        progress,
        caption: reply.edit_message_id.is_some() && reply.edit_message_id == photo_message_id,
        text_only: form == Some(Form::Text),
    }
}

/// Telegram's answer to an edit in the wrong form: the message is a photo ("there is no text
/// in the message to edit") or a text ("there is no caption ..."); the edit is tried again in
/// the other form. A new poster Telegram refused for a photo's edit is left out (its caption is
/// edited alone). `None`: the refusal is not about the form.
fn other_form(tries: &mut Tries<'_>, edit_target: Option<i64>, description: &str) -> Option<Next> {
    edit_target?;
    if description.contains("there is no text in the message to edit") && !tries.caption {
        tracing::info!("the message to edit is a photo; editing its caption");
        tries.caption = true;
        return Some(Next::Now);
    }
    // editMessageMedia of a text message says "no media".
    let text_message = description.contains("there is no caption in the message to edit")
        || description.contains("there is no media in the message to edit");
    if text_message && tries.caption {
        tracing::info!("the message to edit is a text; editing its text");
        tries.caption = false;
        return Some(Next::Now);
    }
    if tries.caption && tries.media.is_some() && !is_not_modified(description) {
        tracing::warn!(reason = %description, "Telegram refused the new poster; editing the caption alone");
        tries.media = None;
        return Some(Next::Now);
    }
    None
}

fn is_http(url: &str) -> bool {
    url.starts_with("https://") || url.starts_with("http://")
}

/// A text as a caption: at most [`MAX_CAPTION_CHARS`] characters, a longer one cut with "…"
/// (only an edit of a photo message cuts: a new message with a longer text goes as text).
fn caption_of(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().count() <= MAX_CAPTION_CHARS {
        return text.into();
    }
    let mut cut: String = text.chars().take(MAX_CAPTION_CHARS - 1).collect();
    cut.push('…');
    cut.into()
}

fn is_not_modified(description: &str) -> bool {
    description.contains("message is not modified")
}

fn is_edit_target_gone(description: &str) -> bool {
    description.contains("message to edit not found")
        || description.contains("message can't be edited")
}

/// A `sendMessage` / `editMessageText` body, written straight from its fields (fields in the
/// order `json!` gave them before). The markup goes in as the stored JSON text.
#[derive(Serialize)]
struct TextBody<'a> {
    chat_id: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    message_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply_markup: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply_parameters: Option<ReplyParameters>,
    text: &'a str,
}

/// A `sendPhoto` body: the poster by URL (Telegram fetches it), the text as its caption.
#[derive(Serialize)]
struct PhotoBody<'a> {
    chat_id: i64,
    photo: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    caption: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply_markup: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply_parameters: Option<ReplyParameters>,
}

/// An `editMessageCaption` body.
#[derive(Serialize)]
struct CaptionBody<'a> {
    chat_id: i64,
    message_id: i64,
    caption: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply_markup: Option<&'a RawValue>,
}

/// An `editMessageMedia` body: a new poster by URL with the caption.
#[derive(Serialize)]
struct MediaBody<'a> {
    chat_id: i64,
    message_id: i64,
    media: InputMediaPhoto<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply_markup: Option<&'a RawValue>,
}

#[derive(Serialize)]
struct InputMediaPhoto<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media: &'a str,
    caption: &'a str,
}

/// The poster to send an entry with as a new photo message, if any: posters on (`on`:
/// `telegram.posters`, and no earlier refusal of this one), an http(s) URL, an entry that edits
/// no message of its own (a keyboard change or an edit keeps its message's form; a job's result
/// after its "working on it" message is a new message), with a text that fits a caption. A
/// longer text goes as text alone: one message per reply, never a photo and then the text.
fn poster(reply: &ReplyEntry, on: bool) -> Option<&str> {
    let url = reply.photo.as_deref().filter(|_| on)?;
    if reply.op.is_some() || reply.edit_message_id.is_some() {
        return None;
    }
    if !is_http(url) {
        tracing::warn!(
            poster = %url_for_log(url),
            "a poster that is not an http(s) URL; sending the text alone"
        );
        return None;
    }
    if reply.text.chars().count() > MAX_CAPTION_CHARS {
        tracing::info!(
            "text over {MAX_CAPTION_CHARS} characters, longer than a caption; sending it without its poster"
        );
        return None;
    }
    Some(url)
}

/// A URL for the log: scheme, host and path, without credentials, query or fragment (a signed
/// poster URL's token lives in its query).
fn url_for_log(url: &str) -> String {
    let bare = url.split(['?', '#']).next().unwrap_or_default();
    match bare.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit('@').next().unwrap_or_default();
            format!("{scheme}://{host}{path}")
        }
        None => "(not a URL)".to_string(),
    }
}

#[derive(Serialize, Clone, Copy)]
struct ReplyParameters {
    allow_sending_without_reply: bool,
    message_id: i64,
}

/// What the dispatcher reads of a sent or edited message: its id. The rest of the Message is
/// skipped, not built; `true` (an edited inline message) or anything else without an id reads
/// as no id.
#[derive(Debug, Default)]
struct SentMessage {
    message_id: Option<i64>,
}

impl<'de> Deserialize<'de> for SentMessage {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = SentMessage;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a Message or true")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<SentMessage, A::Error> {
                #[derive(Deserialize)]
                #[serde(field_identifier, rename_all = "snake_case")]
                enum Field {
                    MessageId,
                    #[serde(other)]
                    Other,
                }
                let mut out = SentMessage::default();
                while let Some(key) = map.next_key::<Field>()? {
                    match key {
                        Field::MessageId => out.message_id = map.next_value::<Value>()?.as_i64(),
                        Field::Other => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
            fn visit_bool<E>(self, _: bool) -> Result<SentMessage, E> {
                Ok(SentMessage::default())
            }
            fn visit_unit<E>(self) -> Result<SentMessage, E> {
                Ok(SentMessage::default())
            }
        }
        d.deserialize_any(Visit)
    }
}

/// Splits `text` into pieces of at most 4096 characters, at a line break when there is one in
/// the second half of a piece. An empty text stays one (empty) piece.
pub fn split_message(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= MAX_MESSAGE_CHARS {
        return vec![text.to_string()];
    }
    let mut out = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        let mut end = (start + MAX_MESSAGE_CHARS).min(chars.len());
        if end < chars.len()
            && let Some(nl) = chars[start + MAX_MESSAGE_CHARS / 2..end]
                .iter()
                .rposition(|c| *c == '\n')
        {
            end = start + MAX_MESSAGE_CHARS / 2 + nl + 1;
        }
        out.push(chars[start..end].iter().collect());
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_body_is_the_json_the_bot_api_reads() {
        let markup = RawValue::from_string(
            r#"{"inline_keyboard":[[{"callback_data":"t:ab","text":"确认"}]]}"#.into(),
        )
        .unwrap();
        let body = TextBody {
            chat_id: 7,
            message_id: None,
            reply_markup: Some(&markup),
            reply_parameters: Some(ReplyParameters {
                allow_sending_without_reply: true,
                message_id: 3,
            }),
            text: "hi \"there\"",
        };
        let sent: Value = serde_json::from_str(&serde_json::to_string(&body).unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({"chat_id": 7, "text": "hi \"there\"",
                   "reply_markup": {"inline_keyboard": [[{"callback_data": "t:ab", "text": "确认"}]]},
                   "reply_parameters": {"message_id": 3, "allow_sending_without_reply": true}})
        );
        let bare = TextBody {
            chat_id: 7,
            message_id: Some(9),
            reply_markup: None,
            reply_parameters: None,
            text: "x",
        };
        assert_eq!(
            serde_json::to_string(&bare).unwrap(),
            r#"{"chat_id":7,"message_id":9,"text":"x"}"#
        );
    }

    #[test]
    fn only_the_id_of_a_sent_message_is_read() {
        let message: SentMessage = serde_json::from_str(
            r#"{"message_id": 42, "from": {"id": 1, "is_bot": true}, "chat": {"id": 7, "type": "private"}, "date": 1, "text": "hi"}"#,
        )
        .unwrap();
        assert_eq!(message.message_id, Some(42));
        let edited_inline: SentMessage = serde_json::from_str("true").unwrap();
        assert_eq!(edited_inline.message_id, None);
    }

    #[test]
    fn a_poster_goes_with_a_new_message_whose_text_fits_a_caption() {
        let reply = |text: String, photo: &str| ReplyEntry {
            text,
            photo: Some(photo.to_string()),
            ..ReplyEntry::default()
        };
        let url = "https://image.tmdb.org/t/p/w500/d.jpg";
        // Counted in characters (code points), not bytes: 1024 CJK characters are 3072 bytes.
        let fits = reply("字".repeat(MAX_CAPTION_CHARS), url);
        assert_eq!(poster(&fits, true), Some(url));
        assert_eq!(poster(&fits, false), None, "telegram.posters = false");
        let edit = ReplyEntry {
            edit_message_id: Some(5),
            ..fits.clone()
        };
        assert_eq!(
            poster(&edit, true),
            None,
            "an edit keeps its message's form"
        );
        let long = reply("字".repeat(MAX_CAPTION_CHARS + 1), url);
        assert_eq!(poster(&long, true), None);
        let not_a_url = reply("hi".into(), "AgACAgQAAxkBAAI");
        assert_eq!(poster(&not_a_url, true), None);
        let markup_op = ReplyEntry {
            op: Some(MarkupOp::Clear),
            ..reply("hi".into(), url)
        };
        assert_eq!(poster(&markup_op, true), None);
        assert_eq!(poster(&ReplyEntry::default(), true), None);
    }

    #[test]
    fn telegrams_answer_to_an_edit_in_the_wrong_form_switches_the_form() {
        let mut tries = Tries {
            chat: 1,
            failures: 0,
            migrated: false,
            edit_allowed: true,
            photo: None,
            caption: false,
            media: Some("https://image.tmdb.org/t/p/w500/d.jpg"),
        };
        let no_text = "Bad Request: there is no text in the message to edit";
        assert!(
            other_form(&mut tries, None, no_text).is_none(),
            "no edit, no form"
        );
        assert!(matches!(
            other_form(&mut tries, Some(5), no_text),
            Some(Next::Now)
        ));
        assert!(tries.caption, "a photo: its caption");
        let refused = "Bad Request: failed to get HTTP URL content";
        assert!(matches!(
            other_form(&mut tries, Some(5), refused),
            Some(Next::Now)
        ));
        assert_eq!(
            tries.media, None,
            "the new poster refused: the caption alone"
        );
        assert!(other_form(&mut tries, Some(5), refused).is_none());
        let no_caption = "Bad Request: there is no caption in the message to edit";
        assert!(matches!(
            other_form(&mut tries, Some(5), no_caption),
            Some(Next::Now)
        ));
        assert!(!tries.caption, "a text: its text");
        assert!(
            other_form(&mut tries, Some(5), no_caption).is_none(),
            "asked once"
        );
    }

    #[test]
    fn a_caption_edit_is_cut_to_a_captions_length() {
        assert_eq!(caption_of("短"), "短");
        let long = "字".repeat(MAX_CAPTION_CHARS + 5);
        let cut = caption_of(&long);
        assert_eq!(cut.chars().count(), MAX_CAPTION_CHARS);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn an_edit_of_the_jobs_photo_reply_edits_its_caption() {
        let edit = ReplyEntry {
            edit_message_id: Some(7),
            kind: Some(ReplyKind::Result),
            ..ReplyEntry::default()
        };
        let p = plan(&edit, Some(3), None, Some(7));
        assert_eq!(
            (p.edit_target, p.progress, p.caption),
            (Some(7), None, true)
        );
        let other = plan(&edit, None, None, Some(8));
        assert!(!other.caption, "another message's form is not known");
        let result = ReplyEntry {
            kind: Some(ReplyKind::Result),
            ..ReplyEntry::default()
        };
        let p = plan(&result, Some(3), Some(Form::Text), None);
        assert_eq!((p.edit_target, p.progress), (Some(3), Some(3)));
        assert!(p.text_only && !p.caption);
    }

    #[test]
    fn a_logged_url_has_no_credentials_query_or_fragment() {
        assert_eq!(
            url_for_log("https://user:pw@img.example.org/p/x.jpg?sig=s3cret#top"),
            "https://img.example.org/p/x.jpg"
        );
        assert_eq!(
            url_for_log("http://127.0.0.1:8080?token=t"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(url_for_log("AgACAgQ?x"), "(not a URL)");
    }

    #[test]
    fn short_messages_are_not_split() {
        assert_eq!(split_message("hi"), vec!["hi".to_string()]);
        assert_eq!(split_message(""), vec![String::new()]);
    }

    #[test]
    fn long_messages_split_at_4096_characters_preferring_line_breaks() {
        let line = "三体".repeat(50) + "\n"; // 101 characters
        let text = line.repeat(100); // 10100 characters
        let parts = split_message(&text);
        assert!(parts.len() >= 3);
        assert!(parts.iter().all(|p| p.chars().count() <= MAX_MESSAGE_CHARS));
        assert!(parts[..parts.len() - 1].iter().all(|p| p.ends_with('\n')));
        assert_eq!(parts.concat(), text);
        let solid = "x".repeat(9000);
        let parts = split_message(&solid);
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            vec![4096, 4096, 808]
        );
    }
}
