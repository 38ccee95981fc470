//! Whether Redis takes writes now, as this process finds it: `WriteHealth`, and the watcher
//! that keeps it current.
//!
//! Redis may answer every read and refuse every write: `OOM` once `maxmemory` is reached under
//! `noeviction`, `MISCONF` after a failed RDB save or AOF write. Nothing is lost then (every
//! state change is one script, and a script whose first write is refused changes nothing), but
//! nothing moves either, and an operator must act. So each process probes a write every
//! [`PROBE_EVERY`] unless another write of its own went through meanwhile (a heartbeat: an idle
//! process's Redis commands are counted, issue 27), and at once when a ledger call was refused;
//! on each change:
//! - one log line: a warning with the cause when the episode starts, an info line with its
//!   length when it ends (not one a failed call);
//! - `/readyz` says the cause ([`WriteRefusal::public_reason`]), and the gauge
//!   `oncebot_redis_writes_refused` is 1;
//! - the admin chats (`telegram.admin_chats`) are told once, straight through the Bot API (the
//!   ledger cannot take the notice), and once more when it is over. A process without a bot
//!   token only logs.
//!
//! Those who hold something they could not record wait on [`WriteHealth::wait_or_accepted`]:
//! a worker's outcome is recorded the moment this process sees writes taken again, and its
//! liveness key renewed, so that mostly it lands before another worker's heartbeat finds that
//! key expired. When the other is first, it recovers the job by its policy (verify, or hold for
//! a person; never a blind replay) and the held outcome is stale: the effect stays once.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backoff::{self, Backoff, Retry};
use crate::config::Settings;
use crate::i18n::Render;
use crate::ledger::{Ledger, LedgerError, Unrecorded, WriteRefusal};
use crate::shutdown::sleep_or_stop;
use crate::telegram::api::BotApi;
use crate::vocabulary::ChatTarget;

/// Logs a failed ledger call `$e` at `$level` (`warn`, `error`), or at debug when Redis refuses
/// writes: that is said once an episode by this module, and a failed call repeats every beat.
#[macro_export]
macro_rules! log_unless_refused {
    ($e:expr, $level:ident, $($line:tt)+) => {
        if $e.refusal().is_some() {
            tracing::debug!($($line)+)
        } else {
            tracing::$level!($($line)+)
        }
    };
}

/// How often a process probes whether Redis takes writes.
pub const PROBE_EVERY: Duration = Duration::from_secs(2);

/// How often while Redis refuses writes: what waits goes on soon after they are taken again.
const REFUSED_PROBE_EVERY: Duration = Duration::from_millis(500);

/// The least time between two probes, however often failed calls ask for one.
const PROBE_GAP: Duration = Duration::from_millis(200);

/// The probe key's expiry: a few probes, so a stopped process leaves nothing behind.
const PROBE_TTL: Duration = Duration::from_secs(10);

/// How long one admin notice may take to send.
const NOTICE_TIMEOUT: Duration = Duration::from_secs(10);

/// Tries of one admin notice to one chat (Telegram unreachable, or asking to wait).
const NOTICE_TRIES: u32 = 3;

/// This process's view of whether Redis takes writes; cheap to clone, shared by every role.
#[derive(Clone)]
pub struct WriteHealth {
    inner: Arc<Inner>,
}

struct Inner {
    /// `Some` while Redis refuses writes: the cause.
    state: watch::Sender<Option<WriteRefusal>>,
    /// A ledger call was refused: probe now.
    probe_now: Notify,
    /// When a write of this process last went through (`wrote`): a probe sooner after it would
    /// learn nothing.
    last_write: std::sync::Mutex<Option<Instant>>,
}

impl Default for WriteHealth {
    fn default() -> Self {
        Self::new()
    }
}

impl WriteHealth {
    /// Writes taken, until a probe or a refused call says otherwise.
    pub fn new() -> Self {
        WriteHealth {
            inner: Arc::new(Inner {
                state: watch::channel(None).0,
                probe_now: Notify::new(),
                last_write: std::sync::Mutex::new(None),
            }),
        }
    }

    /// Why Redis refuses writes now; `None` while it takes them (or nobody knows otherwise).
    pub fn refusal(&self) -> Option<WriteRefusal> {
        *self.inner.state.borrow()
    }

    /// A ledger call failed: when Redis refused its writes and the watcher does not know yet,
    /// it probes now rather than at its next turn.
    pub fn learn(&self, e: &LedgerError) {
        if e.refusal().is_some() && self.refusal().is_none() {
            self.inner.probe_now.notify_one();
        }
    }

    /// A write of this process went through just now (its heartbeat): Redis takes writes, so
    /// the next probe may wait.
    pub fn wrote(&self) {
        *self.lock_last_write() = Some(Instant::now());
    }

    /// Whether a write went through within `within`, while no refusal is known.
    fn wrote_within(&self, within: Duration) -> bool {
        self.refusal().is_none()
            && self
                .lock_last_write()
                .is_some_and(|at| at.elapsed() < within)
    }

    fn lock_last_write(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.inner
            .last_write
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Sleeps `delay`, or less when Redis refuses writes now and takes them again meanwhile:
    /// a holder of something unrecorded tries again at once.
    pub async fn wait_or_accepted(&self, delay: Duration) {
        let mut state = self.inner.state.subscribe();
        if state.borrow_and_update().is_none() {
            tokio::time::sleep(delay).await;
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = state.wait_for(Option::is_none) => {}
        }
    }

    /// Resolves each time Redis takes writes again after refusing them; never while it takes
    /// them all along. For a heartbeat to renew at once.
    pub async fn accepted_again(&self) {
        let mut state = self.inner.state.subscribe();
        let _ = state.wait_for(Option::is_some).await;
        let _ = state.wait_for(Option::is_none).await;
    }

    /// Starts the watcher: probes with `process`'s probe key until `stop`, keeping this
    /// current, logging and telling the admin chats at each change.
    pub fn watch(
        &self,
        settings: &Settings,
        ledger: Ledger,
        process: String,
        stop: CancellationToken,
    ) -> JoinHandle<()> {
        let notices = Notices::start(settings, stop.clone());
        let watcher = Watcher {
            health: self.clone(),
            ledger,
            process,
            notices,
            episode: None,
        };
        tokio::spawn(watcher.run(stop))
    }
}

/// One process's probe loop.
struct Watcher {
    health: WriteHealth,
    ledger: Ledger,
    process: String,
    /// Where the admin notices go; `None` without a bot token or admin chats.
    notices: Option<Notices>,
    /// Since when Redis refuses writes, while it does.
    episode: Option<Instant>,
}

impl Watcher {
    async fn run(mut self, stop: CancellationToken) {
        // A refused call asked for this probe: a heartbeat that went through before it says
        // nothing about now.
        let mut asked = false;
        loop {
            let probe = if !asked && self.health.wrote_within(PROBE_EVERY) {
                Ok(())
            } else {
                self.ledger.probe_writes(&self.process, PROBE_TTL).await
            };
            match probe {
                Ok(()) => self.found(None),
                Err(e) => match e.refusal() {
                    Some(refusal) => self.found(Some(refusal)),
                    // Redis away is not a refusal: the calls themselves say so.
                    None => tracing::debug!(error = %e, "write probe failed"),
                },
            }
            let every = match self.health.refusal() {
                Some(_) => REFUSED_PROBE_EVERY,
                None => PROBE_EVERY,
            };
            asked = tokio::select! {
                () = tokio::time::sleep(every) => false,
                () = self.health.inner.probe_now.notified() => true,
                () = stop.cancelled() => return,
            };
            if sleep_or_stop(PROBE_GAP, &stop).await {
                return;
            }
        }
    }

    /// What a probe found: at a change, one log line, the admin notice, the new state.
    fn found(&mut self, now: Option<WriteRefusal>) {
        let before = self.health.refusal();
        if before == now {
            return;
        }
        match (before, now) {
            (None, Some(refusal)) => {
                self.episode = Some(Instant::now());
                tracing::warn!(
                    cause = refusal.cause(),
                    "Redis refuses writes: the webhook answers 503 (Telegram sends the updates \
                     again), finished jobs keep their outcomes, nothing advances until it takes \
                     writes again"
                );
                self.tell(Notice::Refused(refusal));
            }
            (Some(_), Some(refusal)) => {
                tracing::info!(
                    cause = refusal.cause(),
                    "Redis still refuses writes, now for another cause"
                );
            }
            (Some(_), None) => {
                let lasted = self.episode.take().map(|t| t.elapsed()).unwrap_or_default();
                tracing::info!(
                    lasted_secs = lasted.as_secs(),
                    "Redis takes writes again; what waited goes on"
                );
                self.tell(Notice::Accepted(lasted));
            }
            (None, None) => {}
        }
        crate::metrics::METRICS.redis_writes_refused(now.is_some());
        self.health.inner.state.send_replace(now);
    }

    fn tell(&self, notice: Notice) {
        if let Some(notices) = &self.notices {
            let _ = notices.queue.send(notice);
        }
    }
}

/// What the admin chats are told.
#[derive(Debug, Clone, Copy)]
enum Notice {
    Refused(WriteRefusal),
    /// Over, after this long.
    Accepted(Duration),
}

/// The admin notices of one process, sent in order by one task.
struct Notices {
    queue: mpsc::UnboundedSender<Notice>,
}

impl Notices {
    /// `None` (only logs) without admin chats, or without a usable bot token: a process that
    /// does not need one (a worker alone) is not made to have one.
    fn start(settings: &Settings, stop: CancellationToken) -> Option<Notices> {
        let telegram = &settings.telegram;
        if telegram.admin_chats.is_empty() || !telegram.bot_api_usable() {
            return None;
        }
        let api = BotApi::new(&telegram.api_url, &telegram.token).ok()?;
        let (queue, mut queued) = mpsc::unbounded_channel();
        let chats = telegram.admin_chats.clone();
        let render = Render::new(telegram.locale);
        tokio::spawn(async move {
            while let Some(notice) = tokio::select! {
                n = queued.recv() => n,
                () = stop.cancelled() => None,
            } {
                let text = match notice {
                    Notice::Refused(refusal) => render.writes_refused_notice(refusal),
                    Notice::Accepted(lasted) => render.writes_accepted_notice(lasted),
                };
                for chat in &chats {
                    send(&api, chat, &text).await;
                }
            }
        });
        Some(Notices { queue })
    }
}

/// One notice to one chat, tried a few times; a failure is logged, not retried for ever.
/// A forum topic's notice goes to the topic (`message_thread_id`); a refused topic (deleted,
/// closed) is tried once in the chat's General topic.
async fn send(api: &BotApi, chat: &ChatTarget, text: &str) {
    let mut body = serde_json::json!({ "chat_id": chat.chat, "text": text });
    if let Some(thread) = chat.thread {
        body["message_thread_id"] = thread.into();
    }
    let mut tries = crate::backoff::Retry::new(crate::backoff::REDIS, NOTICE_TRIES);
    loop {
        let Err(error) = api
            .call::<serde_json::Value>("sendMessage", &body, NOTICE_TIMEOUT)
            .await
        else {
            return;
        };
        if error.is_thread_refused() && body.get("message_thread_id").is_some() {
            tracing::warn!(chat = %chat, error = %error, "the admin chat's topic refused the notice; sending it to the chat's General topic");
            body.as_object_mut().map(|b| b.remove("message_thread_id"));
            continue;
        }
        let delay = match &error {
            crate::telegram::api::ApiError::RetryAfter(d) => tries.failed().map(|_| *d),
            crate::telegram::api::ApiError::Network(_) => tries.failed(),
            _ => None,
        };
        let Some(delay) = delay else {
            tracing::warn!(chat = %chat, error = %error, "could not tell an admin chat that Redis refuses writes or takes them again");
            return;
        };
        tries.wait(delay).await;
    }
}

/// The tries of a record that must land once its effect happened (a worker's outcome, a sent
/// reply's end): unrecorded, the effect would be repeated by whoever takes the entry over. While
/// the failure passes (Redis away, or refusing writes) it is tried for as long as that lasts, at
/// once when writes return; any other failure `tries` times in all.
pub struct UntilRecorded {
    others: Retry<'static>,
    waits: Backoff,
    kept_since: Option<std::time::Instant>,
}

/// What follows a failed try of [`UntilRecorded`].
pub enum AfterFailure {
    /// The failure passes; this is its first: the caller says once that it keeps trying.
    KeepsTrying,
    /// The failure passes and was said already.
    StillTrying,
    /// Another failure, with tries left.
    Retrying,
    /// Another failure, and no try left.
    GivenUp,
}

impl UntilRecorded {
    pub fn new(tries: u32) -> UntilRecorded {
        UntilRecorded {
            others: Retry::new(backoff::REDIS, tries),
            waits: Backoff::new(backoff::REDIS),
            kept_since: None,
        }
    }

    /// Counts a failed try and waits before the next one (not after the last).
    pub async fn failed(&mut self, e: &Unrecorded, health: &WriteHealth) -> AfterFailure {
        if e.passes {
            let first = self.kept_since.is_none();
            self.kept_since.get_or_insert_with(std::time::Instant::now);
            health.wait_or_accepted(self.waits.next_delay()).await;
            return if first {
                AfterFailure::KeepsTrying
            } else {
                AfterFailure::StillTrying
            };
        }
        match self.others.failed() {
            Some(delay) => {
                self.others.wait(delay).await;
                AfterFailure::Retrying
            }
            None => AfterFailure::GivenUp,
        }
    }

    /// Since when a passing failure has kept the record back, if one did.
    pub fn kept_since(&self) -> Option<std::time::Instant> {
        self.kept_since
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(health: &WriteHealth, now: Option<WriteRefusal>) {
        health.inner.state.send_replace(now);
    }

    #[tokio::test(start_paused = true)]
    async fn a_holder_waits_its_whole_delay_while_writes_are_taken() {
        let health = WriteHealth::new();
        let started = Instant::now();
        health.wait_or_accepted(Duration::from_secs(3)).await;
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_holder_goes_on_the_moment_writes_are_taken_again() {
        let health = WriteHealth::new();
        refused(&health, Some(WriteRefusal::OutOfMemory));
        let later = health.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            refused(&later, None);
        });
        let started = Instant::now();
        health.wait_or_accepted(Duration::from_secs(6)).await;
        assert_eq!(started.elapsed(), Duration::from_millis(500));
    }

    #[tokio::test(start_paused = true)]
    async fn accepted_again_waits_for_a_refusal_and_its_end() {
        let health = WriteHealth::new();
        let waiter = health.clone();
        let ended = tokio::spawn(async move { waiter.accepted_again().await });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!ended.is_finished(), "writes were taken all along");
        refused(&health, Some(WriteRefusal::LastSaveFailed));
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!ended.is_finished(), "still refused");
        refused(&health, None);
        ended.await.unwrap();
    }

    #[test]
    fn redis_error_codes_name_the_refusal_and_readyz_says_it_in_fixed_words() {
        assert_eq!(
            WriteRefusal::of_code(Some("OOM")),
            Some(WriteRefusal::OutOfMemory)
        );
        assert_eq!(
            WriteRefusal::of_code(Some("MISCONF")),
            Some(WriteRefusal::LastSaveFailed)
        );
        assert_eq!(WriteRefusal::of_code(Some("READONLY")), None);
        assert_eq!(WriteRefusal::of_code(None), None);
        assert_eq!(
            WriteRefusal::OutOfMemory.public_reason(),
            "Redis refuses writes: out of memory"
        );
        assert_eq!(
            WriteRefusal::LastSaveFailed.public_reason(),
            "Redis refuses writes: its last save failed"
        );
    }

    #[test]
    fn the_notices_are_plain_in_both_languages() {
        use crate::config::Locale;
        for locale in [Locale::Zh, Locale::En] {
            let r = Render::new(locale);
            for refusal in [WriteRefusal::OutOfMemory, WriteRefusal::LastSaveFailed] {
                let text = r.writes_refused_notice(refusal);
                assert!(text.contains("Redis"), "{text}");
                assert!(!text.contains("OOM") && !text.contains("MISCONF"), "{text}");
            }
            let over = r.writes_accepted_notice(Duration::from_secs(120));
            assert!(
                over.contains("2 minutes") || over.contains("2 分钟"),
                "{over}"
            );
        }
    }
}
