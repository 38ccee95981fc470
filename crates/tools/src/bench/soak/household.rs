//! A busy household's day, in numbers, and the traffic that replays it `speed` times faster:
//! typed commands posted to the ingress's webhook as Telegram posts them, the buttons of the
//! bot's answers tapped as a person taps them (read off the Bot API simulator), and MoviePilot's
//! notifications written to its message history with the Webhook plugin's wake-up call.
//!
//! The day (four people, each in a private chat with the bot):
//!
//! | what | a day | taps each |
//! |---|---|---|
//! | `/search Dune` | 8 | |
//! | `/search Star Trek`, then ▶ (a page turn) | 8 | 1 |
//! | `/subscribe <title>`, then its `1. Subscribe` | 8 | 1 |
//! | `/unsubscribe <id>`, then Confirm (every other time: Cancel) | 4 | 1 |
//! | `/download <title>`, then `1. Download`, then `Download 1` (a grab) | 6 | 2 |
//! | `/subscriptions` | 6 | |
//! | `/downloading` | 6 | |
//! | `/status` | 6 | |
//! | `/jobs` | 2 | |
//! | `/help` | 2 | |
//! | a MoviePilot notification (download started, 入库 done) + a wake-up | 48 | |
//!
//! N = 56 commands, M = 32 taps, K = 48 notifications a day. Busy: each of the four uses the bot
//! a dozen times a day, every other command leads to buttons, and 48 notifications are what a
//! house with a couple of dozen airing series and the odd film sees on a heavy day (a download
//! started and its 入库 for about 24 episodes or films).

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::SeedableRng as _;
use rand::seq::SliceRandom as _;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::scene::{Scene, WEBHOOK_SECRET};
use crate::sim::moviepilot::{SimNotification, notice_payload, send_webhook};
use crate::sim::telegram::{callback_update, text_update};
use oncebot::vocabulary::NotificationType;

/// What a household does, one kind of event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Search,
    SearchPages,
    Subscribe,
    Unsubscribe,
    Download,
    Subscriptions,
    Downloading,
    Status,
    Jobs,
    Help,
    Notification,
}

/// A day: each event and how many times it happens.
const DAY: [(Event, u32); 11] = [
    (Event::Search, 8),
    (Event::SearchPages, 8),
    (Event::Subscribe, 8),
    (Event::Unsubscribe, 4),
    (Event::Download, 6),
    (Event::Subscriptions, 6),
    (Event::Downloading, 6),
    (Event::Status, 6),
    (Event::Jobs, 2),
    (Event::Help, 2),
    (Event::Notification, 48),
];

impl Event {
    fn taps(self) -> u32 {
        match self {
            Event::SearchPages | Event::Subscribe | Event::Unsubscribe => 1,
            Event::Download => 2,
            _ => 0,
        }
    }
}

/// The household's day in numbers (N, M, K).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Day {
    pub commands: u32,
    pub taps: u32,
    pub notifications: u32,
    pub members: usize,
}

pub fn day() -> Day {
    let count = |f: &dyn Fn(Event, u32) -> u32| DAY.iter().map(|&(e, n)| f(e, n)).sum();
    Day {
        commands: count(&|e, n| if e == Event::Notification { 0 } else { n }),
        taps: count(&|e, n| e.taps() * n),
        notifications: count(&|e, n| if e == Event::Notification { n } else { 0 }),
        members: MEMBERS.len(),
    }
}

/// The four people's Telegram ids (and private chats); the first is the admin.
pub const MEMBERS: [i64; 4] = [710_001, 710_002, 710_003, 710_004];

/// How long a person waits for a button before giving up on it (MoviePilot may be away and the
/// job waiting for its retry).
const BUTTON_WAIT: Duration = Duration::from_secs(120);

/// What the traffic did, counted as it went.
#[derive(Debug, Default)]
pub struct Counts {
    pub commands: AtomicU64,
    pub taps: AtomicU64,
    pub taps_missed: AtomicU64,
    /// Taps whose button was still awaited when the run ended.
    pub taps_cut: AtomicU64,
    pub notifications: AtomicU64,
    /// Webhook posts answered with anything but 200 (or not at all: the ingress was being
    /// restarted), each posted again as Telegram does.
    pub redelivered: AtomicU64,
    /// Every update the webhook took, by update_id: when (first taken).
    pub admitted: Mutex<BTreeMap<i64, Instant>>,
}

impl Counts {
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

struct Ctx {
    scene: Arc<Scene>,
    http: reqwest::Client,
    counts: Arc<Counts>,
    /// One conversation at a time per chat, as one person taps what they asked for.
    chats: BTreeMap<i64, tokio::sync::Mutex<()>>,
    tapped: Mutex<HashSet<String>>,
    serial: AtomicU64,
    stop: CancellationToken,
}

/// Replays the day `speed` times faster until `stop`, then lets the conversations under way end.
pub async fn run(
    scene: Arc<Scene>,
    speed: f64,
    counts: Arc<Counts>,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let ctx = Arc::new(Ctx {
        scene,
        http: reqwest::Client::new(),
        counts,
        chats: MEMBERS
            .iter()
            .map(|&m| (m, tokio::sync::Mutex::new(())))
            .collect(),
        tapped: Mutex::default(),
        serial: AtomicU64::new(0),
        stop: stop.clone(),
    });
    let mut rng = rand::rngs::StdRng::seed_from_u64(46);
    let mut plan: Vec<Event> = DAY
        .iter()
        .flat_map(|&(e, n)| std::iter::repeat_n(e, n as usize))
        .collect();
    let every = Duration::from_secs_f64(86_400.0 / speed / plan.len() as f64);
    let mut tasks = tokio::task::JoinSet::new();
    let mut next = tokio::time::Instant::now();
    'days: loop {
        plan.shuffle(&mut rng);
        for (i, &event) in plan.iter().enumerate() {
            tokio::select! {
                () = stop.cancelled() => break 'days,
                () = tokio::time::sleep_until(next) => {}
            }
            next += every;
            let chat = MEMBERS[i % MEMBERS.len()];
            let ctx = ctx.clone();
            tasks.spawn(async move { ctx.event(event, chat).await });
        }
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(())
}

impl Ctx {
    async fn event(&self, event: Event, chat: i64) -> anyhow::Result<()> {
        if event == Event::Notification {
            return self.notification().await;
        }
        let _turn = self.chats[&chat].lock().await;
        // Conversations that queued behind this chat's last one do not start after the end.
        if self.stop.is_cancelled() {
            return Ok(());
        }
        let n = self.serial.fetch_add(1, Ordering::Relaxed);
        let titles = [
            "Dune",
            "Dune: Part Two",
            "Star Trek 3",
            "Star Trek 5",
            "Star Trek 7",
        ];
        let title = titles[n as usize % titles.len()];
        match event {
            Event::Search => self.command(chat, "/search Dune").await.map(drop),
            Event::SearchPages => {
                let after = self.command(chat, "/search Star Trek").await?;
                self.tap(chat, after, "▶", |l| l == "▶").await
            }
            Event::Subscribe => {
                let after = self.command(chat, &format!("/subscribe {title}")).await?;
                self.tap(chat, after, "1. Subscribe", |l| {
                    l.starts_with("1. Subscribe")
                })
                .await
            }
            Event::Unsubscribe => self.unsubscribe(chat, n).await,
            Event::Download => {
                let after = self.command(chat, &format!("/download {title}")).await?;
                self.tap(chat, after, "1. Download", |l| l.starts_with("1. Download"))
                    .await?;
                self.tap(chat, after, "Download 1", |l| l == "Download 1")
                    .await
            }
            Event::Subscriptions => self.command(chat, "/subscriptions").await.map(drop),
            Event::Downloading => self.command(chat, "/downloading").await.map(drop),
            Event::Status => self.command(chat, "/status").await.map(drop),
            Event::Jobs => self.command(chat, "/jobs").await.map(drop),
            Event::Help | Event::Notification => self.command(chat, "/help").await.map(drop),
        }
    }

    /// `/unsubscribe` of a subscription MoviePilot has (Confirm, or every other time Cancel);
    /// with none, `/subscriptions`.
    async fn unsubscribe(&self, chat: i64, n: u64) -> anyhow::Result<()> {
        let Some(sub) = self
            .scene
            .mp
            .subscriptions()
            .into_iter()
            .map(|s| s.id)
            .min()
        else {
            return self.command(chat, "/subscriptions").await.map(drop);
        };
        let after = self.command(chat, &format!("/unsubscribe {sub}")).await?;
        let answer = if n.is_multiple_of(2) {
            "Confirm"
        } else {
            "Cancel"
        };
        self.tap(chat, after, answer, |l| l == answer).await
    }

    /// Sends `text` from `chat`; the newest message id the chat held before (buttons to tap
    /// are on messages after it).
    async fn command(&self, chat: i64, text: &str) -> anyhow::Result<i64> {
        let before = self
            .scene
            .tg
            .observe(|o| o.received(chat).last().map_or(0, |m| m.message_id));
        self.post(text_update(chat, chat, text)).await?;
        self.counts.commands.fetch_add(1, Ordering::Relaxed);
        Ok(before)
    }

    /// Waits for a button whose label `pick` accepts on a message of `chat` after `after`,
    /// not tapped yet, and taps it. A button that does not come is counted, not an error.
    async fn tap(
        &self,
        chat: i64,
        after: i64,
        label: &str,
        pick: impl Fn(&str) -> bool,
    ) -> anyhow::Result<()> {
        let mut found = None;
        let tapped = &self.tapped;
        let waited = self.scene.tg.wait_for(BUTTON_WAIT, |o| {
            let done = tapped.lock().unwrap_or_else(|p| p.into_inner());
            found = o
                .received(chat)
                .into_iter()
                .filter(|m| m.message_id > after)
                .find_map(|m| {
                    buttons(m.reply_markup.as_ref())
                        .into_iter()
                        .find(|(label, data)| pick(label) && !done.contains(data))
                        .map(|(_, data)| (m.message_id, data))
                });
            found.is_some()
        });
        // The run's end cuts a conversation short: its button is not waited for.
        let seen = tokio::select! {
            seen = waited => seen.is_ok(),
            () = self.stop.cancelled() => {
                self.counts.taps_cut.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
        };
        let Some((message_id, data)) = found.filter(|_| seen) else {
            self.counts.taps_missed.fetch_add(1, Ordering::Relaxed);
            let last = self.scene.tg.observe(|o| {
                o.received(chat)
                    .last()
                    .map(|m| m.text.chars().take(120).collect::<String>())
            });
            tracing::warn!(chat, label, ?last, "soak: the button did not come");
            return Ok(());
        };
        self.tapped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(data.clone());
        self.post(callback_update(chat, chat, message_id, &data))
            .await?;
        self.counts.taps.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Posts an update to the webhook until it is taken (200), as Telegram redelivers.
    async fn post(&self, update: Value) -> anyhow::Result<()> {
        let update = self.scene.tg.webhook_update(update);
        let id = update["update_id"].as_i64().unwrap_or_default();
        let url = self.scene.webhook_url();
        let give_up = Instant::now() + Duration::from_secs(120);
        loop {
            let sent = self
                .http
                .post(&url)
                .header("x-telegram-bot-api-secret-token", WEBHOOK_SECRET)
                .json(&update)
                .timeout(Duration::from_secs(10))
                .send()
                .await;
            if matches!(&sent, Ok(r) if r.status() == 200) {
                let mut admitted = self
                    .counts
                    .admitted
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                admitted.entry(id).or_insert_with(Instant::now);
                return Ok(());
            }
            self.counts.redelivered.fetch_add(1, Ordering::Relaxed);
            anyhow::ensure!(
                Instant::now() < give_up,
                "update {id} was not taken for two minutes: {sent:?}"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// A notification in MoviePilot's history, then the Webhook plugin's wake-up (which may
    /// find the ingress restarting: the relay's poll reads the row anyway).
    async fn notification(&self) -> anyhow::Result<()> {
        let n = self.counts.notifications.fetch_add(1, Ordering::Relaxed);
        let (kind, what) = if n.is_multiple_of(2) {
            (NotificationType::Download, "开始下载")
        } else {
            (NotificationType::Organize, "已入库")
        };
        let title = format!("The Expanse (2015) S02E{:02} {what}", n % 13 + 1);
        let id = self.scene.mp.notify(SimNotification::new(
            kind,
            &title,
            &format!("row {n}: 1.2 GB, 12 seeders"),
        ));
        let row = self.scene.mp.messages().into_iter().find(|m| m.id == id);
        if let Some(row) = row {
            let _ = send_webhook(&self.scene.wake_url(), &notice_payload(&row), false).await;
        }
        Ok(())
    }
}

/// `(label, callback_data)` of every button of an inline keyboard.
fn buttons(markup: Option<&Value>) -> Vec<(String, String)> {
    let rows = markup
        .and_then(|m| m["inline_keyboard"].as_array())
        .cloned()
        .unwrap_or_default();
    rows.iter()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .filter_map(|b| {
            Some((
                b["text"].as_str()?.to_string(),
                b["callback_data"].as_str()?.to_string(),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_day_is_56_commands_32_taps_48_notifications() {
        let d = day();
        assert_eq!((d.commands, d.taps, d.notifications), (56, 32, 48));
    }
}
