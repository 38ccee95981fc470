//! The steady load of the upgrade test: a household's commands, taps and MoviePilot
//! notifications, sent through whichever ingress Telegram reaches now, each flow waiting for
//! what a person would wait for (the answer with the buttons) before its next step.
//!
//! Every update the webhook answered 200 is recorded ([`Sent`]); the final checks hold each to
//! one job or one reply. An update the webhook did not take (a stopped ingress, a 503) is sent
//! again, as Telegram does.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oncebot::vocabulary::NotificationType;
use oncebot_tools::sim::moviepilot::{SimMedia, SimNotification, SimRelease};
use oncebot_tools::sim::telegram::callback_update;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::support::rig::Rig;
use crate::support::{ALICE, BOB, SECRET, eventually, private_text};

/// How long one step of a flow may take: through a worker being stopped or killed, its entry
/// taken over once its liveness expires.
const STEP: Duration = Duration::from_secs(40);

/// The least time between two rounds of the reads.
const PACE: Duration = Duration::from_millis(250);

/// The films the flows subscribe to and download, one each per round: ids and titles no
/// built-in medium shares, so each business key is used once.
pub const FILMS: std::ops::Range<u64> = 910_001..911_000;

/// What a subscription, a cancellation and a download end as: done, or, when the worker that
/// sent it was killed, found done by the one that took the job over.
pub const SUBSCRIBED: [&str; 2] = ["created", "verified_existing"];
pub const UNSUBSCRIBED: [&str; 2] = ["deleted", "verified_deleted"];
pub const DOWNLOADED: [&str; 2] = ["added", "verified_existing"];

/// The chat MoviePilot's notifications are sent to (`notify.chats`).
pub const NOTIFIED: i64 = ALICE;

/// What an update the webhook answered 200 was.
#[derive(Clone, Debug)]
pub enum Sent {
    /// A message in `chat`'s private chat (the builders reply to `message_id(update_id)`).
    Text { chat: i64, text: String },
    /// A button tap, its callback query `query` (answered with answerCallbackQuery).
    Tap { query: String },
}

/// One accepted update: its id, what it was, and when the webhook took it.
#[derive(Clone, Debug)]
pub struct Admitted {
    pub update_id: i64,
    pub sent: Sent,
    pub at: Instant,
}

/// The load's shared state: where Telegram sends now, and what was taken.
pub struct Load {
    pub rig: Arc<Rig>,
    webhook: Mutex<String>,
    next_update: AtomicI64,
    next_note: AtomicU64,
    admitted: Mutex<Vec<Admitted>>,
    /// Update ids sent a second time (Telegram's redelivery): they must change nothing.
    redelivered: Mutex<Vec<i64>>,
    stopping: AtomicBool,
}

impl Load {
    /// A load on `rig`, sending to `webhook`; adds the films to MoviePilot's catalogue, each
    /// with one release on one site.
    pub fn new(rig: Arc<Rig>, webhook: String) -> Arc<Load> {
        for id in FILMS {
            rig.mp
                .add_media(SimMedia::movie(id, &film_title(id), "2026"));
            rig.mp.add_release(SimRelease::movie(
                id,
                "PTSiteU",
                &format!("{} 2026 1080p", film_title(id)),
                "upgrade test release",
            ));
        }
        Arc::new(Load {
            rig,
            webhook: Mutex::new(webhook),
            next_update: AtomicI64::new(1),
            next_note: AtomicU64::new(1),
            admitted: Mutex::new(Vec::new()),
            redelivered: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
        })
    }

    /// From now on Telegram delivers to `webhook` (a new ingress took over the route).
    pub fn route_to(&self, webhook: String) {
        *self.webhook.lock().unwrap() = webhook;
    }

    /// Every update taken so far.
    pub fn admitted(&self) -> Vec<Admitted> {
        self.admitted.lock().unwrap().clone()
    }

    pub fn redelivered(&self) -> Vec<i64> {
        self.redelivered.lock().unwrap().clone()
    }

    /// How many notifications MoviePilot wrote.
    pub fn notes(&self) -> u64 {
        self.next_note.load(Ordering::SeqCst) - 1
    }

    /// Starts the four flows; [`Load::stop`] ends them after their current round.
    pub fn start(self: &Arc<Load>) -> Vec<tokio::task::JoinHandle<()>> {
        let films: Vec<u64> = FILMS.collect();
        let (subscribed, downloaded) = films.split_at(films.len() / 2);
        vec![
            tokio::spawn(self.clone().reads()),
            tokio::spawn(self.clone().subscriptions(subscribed.to_vec())),
            tokio::spawn(self.clone().downloads(downloaded.to_vec())),
            tokio::spawn(self.clone().notifications()),
        ]
    }

    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    fn running(&self) -> bool {
        !self.stopping.load(Ordering::SeqCst)
    }

    /// POSTs `update` until the webhook takes it (200), to whichever ingress Telegram reaches
    /// then: a refused connection or a 503 is delivered again, as Telegram does.
    async fn deliver(&self, update: &Value) {
        let until = Instant::now() + STEP;
        loop {
            let url = self.webhook.lock().unwrap().clone();
            let answer = self
                .rig
                .http
                .post(&url)
                .header("x-telegram-bot-api-secret-token", SECRET)
                .json(update)
                .send()
                .await;
            match answer {
                Ok(r) if r.status() == 200 => return,
                other => {
                    let why = other.map(|r| r.status().to_string());
                    assert!(
                        Instant::now() < until,
                        "no ingress took update {} within {STEP:?}: {why:?}",
                        update["update_id"]
                    );
                    // Telegram's redelivery comes later; an ingress that stopped is replaced
                    // by then.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    /// Sends `text` from `user` (a private chat); returns its update id.
    pub async fn say(&self, user: i64, text: &str) -> i64 {
        let id = self.next_update.fetch_add(1, Ordering::SeqCst);
        self.deliver(&private_text(id, user, text)).await;
        self.record(
            id,
            Sent::Text {
                chat: user,
                text: text.into(),
            },
        );
        id
    }

    /// `user` taps the button `data` under Telegram's message `message`; returns the update id.
    async fn tap(&self, user: i64, message: i64, data: &str) -> i64 {
        let id = self.next_update.fetch_add(1, Ordering::SeqCst);
        let mut update = callback_update(user, user, message, data);
        update["update_id"] = json!(id);
        // Known to the Bot API as delivered, so its callback query can be answered (once).
        let update = self.rig.tg.webhook_update(update);
        let query = update["callback_query"]["id"].as_str().unwrap().to_string();
        self.deliver(&update).await;
        self.record(id, Sent::Tap { query });
        id
    }

    fn record(&self, update_id: i64, sent: Sent) {
        self.admitted.lock().unwrap().push(Admitted {
            update_id,
            sent,
            at: Instant::now(),
        });
    }

    /// Telegram delivers update `id` (a text from `user`) again: the webhook must take it and
    /// change nothing.
    async fn redeliver(&self, id: i64, user: i64, text: &str) {
        self.deliver(&private_text(id, user, text)).await;
        self.redelivered.lock().unwrap().push(id);
    }

    /// Reads a user sends (each a job, no window) and `/version`, the command the old release
    /// does not know; one update of each round delivered twice.
    async fn reads(self: Arc<Load>) {
        // A household's pace, not a flood: a round at most every PACE.
        let mut pace = tokio::time::interval(PACE);
        while self.running() {
            pace.tick().await;
            let mut ids = Vec::new();
            for text in ["/search Dune", "/subscriptions", "/version", "/downloading"] {
                ids.push(self.say(BOB, text).await);
            }
            self.redeliver(ids[0], BOB, "/search Dune").await;
            for id in ids {
                self.settled(id).await;
            }
        }
    }

    /// A film subscribed through the match list's Subscribe button, then cancelled through
    /// `/unsubscribe`'s Confirm.
    async fn subscriptions(self: Arc<Load>, films: Vec<u64>) {
        for film in films {
            if !self.running() {
                return;
            }
            let asked = self
                .say(ALICE, &format!("/subscribe {}", film_title(film)))
                .await;
            let (list, message) = self.answer_with_buttons(asked).await;
            let subscribe = button(&list, "Subscribe");
            let tapped = self.tap(ALICE, message, &subscribe).await;
            let job = self.settled(tapped).await;
            assert!(SUBSCRIBED.contains(&job["mp_outcome"].as_str()), "{job:?}");
            let sub = &job["mp_subscription_id"];

            let asked = self.say(ALICE, &format!("/unsubscribe {sub}")).await;
            let (question, message) = self.answer_with_buttons(asked).await;
            let tapped = self
                .tap(ALICE, message, &button(&question, "Confirm"))
                .await;
            let job = self.settled(tapped).await;
            assert!(
                UNSUBSCRIBED.contains(&job["mp_outcome"].as_str()),
                "{job:?}"
            );
        }
    }

    /// A film's resource search, then its first release downloaded with `Download 1`.
    async fn downloads(self: Arc<Load>, films: Vec<u64>) {
        for film in films {
            if !self.running() {
                return;
            }
            let asked = self.say(BOB, &format!("/download tmdb:{film}")).await;
            let (list, message) = self.answer_with_buttons(asked).await;
            let tapped = self.tap(BOB, message, &button(&list, "Download 1")).await;
            let job = self.settled(tapped).await;
            assert_eq!(job["command"], "grab", "{job:?}");
            assert!(DOWNLOADED.contains(&job["mp_outcome"].as_str()), "{job:?}");
        }
    }

    /// MoviePilot's notifications, each awaited in the chat it goes to.
    async fn notifications(self: Arc<Load>) {
        while self.running() {
            let n = self.next_note.fetch_add(1, Ordering::SeqCst);
            self.rig.mp.notify(SimNotification::new(
                NotificationType::Organize,
                &note_title(n),
                "来自 MoviePilot",
            ));
            let rig = &self.rig;
            eventually(
                &format!("notification {n} delivered"),
                STEP,
                || async move { (delivered(rig, NOTIFIED, &note_title(n)) > 0).then_some(()) },
            )
            .await;
        }
    }

    /// Waits until update `id` is settled: its reply written (no job), or its job ended.
    /// Returns the job's HASH (empty for a reply).
    pub async fn settled(&self, id: i64) -> BTreeMap<String, String> {
        let store = &self.rig.store;
        eventually(&format!("update {id} settled"), STEP, || async move {
            match store.update(id).await?.as_str() {
                "-" => Some(BTreeMap::new()),
                job => {
                    let job = store.job(job.parse().unwrap()).await;
                    let status = job.get("status").map(String::as_str);
                    matches!(status, Some("succeeded" | "failed")).then_some(job)
                }
            }
        })
        .await
    }

    /// The message with buttons that answers update `id` (its job's reply, as Telegram shows it
    /// now), and that message's id: what a person taps under.
    async fn answer_with_buttons(&self, id: i64) -> (Value, i64) {
        let rig = &self.rig;
        let what = format!("buttons answering update {id}");
        let found = oncebot_tools::rig::wait(&what, STEP)
            .until_seen(|| async move {
                let record = rig.store.update(id).await;
                let job = match record.as_deref() {
                    Some(job) if job != "-" => rig.store.job(job.parse().unwrap()).await,
                    _ => return Ok(ControlFlow::Continue(format!("record {record:?}"))),
                };
                let chat: i64 = job["chat_id"].parse().unwrap();
                let shown = job
                    .get("reply_message_id")
                    .and_then(|m| m.parse().ok())
                    .and_then(|m| rig.tg.observe(|o| o.message(chat, m).cloned()));
                Ok(match shown {
                    Some(m) if m.reply_markup.is_some() => {
                        ControlFlow::Break((m.reply_markup.unwrap(), m.message_id))
                    }
                    other => ControlFlow::Continue(format!("job {job:?}, at Telegram {other:?}")),
                })
            })
            .await;
        found.unwrap_or_else(|e| panic!("{e:#}"))
    }
}

/// A film of [`FILMS`]: five digits after the word, so no title contains another.
pub fn film_title(id: u64) -> String {
    format!("Upgradefilm {}", id - 900_000)
}

/// The title of notification `n`.
pub fn note_title(n: u64) -> String {
    format!("升级测试 {n} 已入库")
}

/// The callback data of the button whose text contains `text`, in an inline keyboard.
fn button(markup: &Value, text: &str) -> String {
    markup["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().into_iter().flatten())
        .find(|b| b["text"].as_str().is_some_and(|t| t.contains(text)))
        .and_then(|b| b["callback_data"].as_str())
        .unwrap_or_else(|| panic!("no button {text:?} in {markup}"))
        .to_string()
}

/// The text a Bot API call shows: a message's text or a photo's caption.
pub fn shown_text(params: &Value) -> Option<&str> {
    params
        .get("text")
        .or_else(|| params.get("caption"))
        .and_then(Value::as_str)
}

/// How many messages Telegram accepted for `chat` whose text contains `needle`.
pub fn delivered(rig: &Rig, chat: i64, needle: &str) -> usize {
    rig.tg
        .calls()
        .iter()
        .filter(|c| {
            matches!(c.method.as_str(), "sendMessage" | "sendPhoto")
                && c.status() == Some(200)
                && c.params["chat_id"].as_i64() == Some(chat)
                && shown_text(&c.params).is_some_and(|t| t.contains(needle))
        })
        .count()
}
