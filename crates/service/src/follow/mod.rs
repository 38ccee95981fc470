//! The follower (issue 45): every worker process runs one, and one of them a poll (follow_turn.lua:
//! one per `follow.progress_poll_secs` for the deployment, none while no card is open). A poll
//! reads what the open cards need of MoviePilot, each at most once (the download list, the
//! subscription list, at most `follow.max_pages` transfer-history pages, and the subscription
//! history when a subscription left the list), then steps each card through card.lua, which
//! queues its edit and, at the end, its closing notice. It never sends to Telegram and never
//! runs a job. A read that fails or answers garbage stops no card: the card keeps its state.
//!
//! Every tick it also sums up the notices people's quiet hours held, once the hours ended
//! (quiet_end.lua, `/notify`): workers run in every deployment, cards or not.

mod decide;

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::i18n::Render;
use crate::ledger::{Card, CardStep, Ledger, QuietSummary};
use crate::metrics::METRICS;
use crate::moviepilot::{MediaKind, MoviePilot};
use crate::shutdown::sleep_or_stop;

pub use decide::{GRACE_MS, Observed, next_step};

/// The least time between two progress edits of one card (the "one a minute").
pub const PROGRESS_EVERY: Duration = Duration::from_secs(60);
/// Subscription-history rows read when a subscription left the list.
const HISTORY_ROWS: usize = 50;

/// One worker process's follower.
pub struct Follower {
    ledger: Ledger,
    mp: MoviePilot,
    render: Render,
    holder: String,
    every: Duration,
    max_pages: usize,
    follow_days: u64,
    /// `commands.day_zone`: the clock of each person's quiet hours.
    zone: jiff::tz::TimeZone,
    summary: QuietSummary,
}

impl Follower {
    pub fn new(settings: &Settings, ledger: Ledger, mp: MoviePilot, holder: &str) -> Follower {
        let follow_for = settings
            .follow
            .follow_for(settings.notify.requester_ttl_secs);
        let render = Render::new(settings.telegram.locale);
        Follower {
            ledger,
            mp,
            summary: render.quiet_summary(),
            render,
            zone: settings.commands.zone(),
            holder: holder.to_string(),
            every: settings.follow.poll_every(),
            max_pages: settings.follow.max_pages as usize,
            follow_days: follow_for.as_secs().div_ceil(86_400),
        }
    }

    pub async fn run(self, stop: CancellationToken) {
        loop {
            match self.ledger.quiet_end(now_ms(), &self.summary).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(
                    summaries = n,
                    "quiet hours ended: the notices they held were summed up"
                ),
                Err(e) => {
                    tracing::warn!(error = %e, "summing up the notices quiet hours held failed; trying again at the next tick")
                }
            }
            if let Err(e) = self.poll().await {
                tracing::warn!(error = %e, "following the cards failed; trying again at the next poll");
            }
            if sleep_or_stop(self.every, &stop).await {
                return;
            }
        }
    }

    /// One poll, if it is this process's turn: the number of cards stepped.
    pub async fn poll(&self) -> anyhow::Result<usize> {
        if self.ledger.follow_turn(&self.holder, self.every).await? == 0 {
            return Ok(0);
        }
        let cards = self.ledger.open_cards().await?;
        let cursor = self.ledger.transfer_cursor().await?;
        let (seen, newest) = self.observe(&cards, cursor).await;
        let clock = crate::vocabulary::notice_clock(jiff::Timestamp::now(), &self.zone);
        let mut stepped = 0;
        for card in &cards {
            let step =
                next_step(card, &seen, &self.render, self.follow_days).or_else(|| owed_edit(card));
            let Some(step) = step else { continue };
            let done = match self
                .ledger
                .card_step(card, &step, PROGRESS_EVERY, &clock)
                .await
            {
                Ok(done) => done,
                Err(e) => {
                    METRICS.card_step("failed");
                    return Err(e.into());
                }
            };
            METRICS.card_step(&done.outcome);
            tracing::debug!(card = card.id, outcome = %done.outcome, seq = done.seq, "card stepped");
            stepped += 1;
            crate::crash_point!("follow.after_step");
        }
        // Every card was told of the rows read: the next poll reads after them.
        if let Some(newest) = newest.filter(|n| cursor.is_none_or(|c| *n > c)) {
            self.ledger.set_transfer_cursor(newest).await?;
        }
        Ok(stepped)
    }

    /// What the cards need of MoviePilot, each read once; and the newest transfer row read
    /// (`None`: the history was not read). The very first read takes one page and matches its
    /// rows by hash only: they may be older than any card.
    async fn observe(&self, cards: &[Card], cursor: Option<u64>) -> (Observed, Option<u64>) {
        let wants = |kind: &str| cards.iter().any(|c| c.text("kind") == kind);
        let mut seen = Observed {
            now_ms: now_ms(),
            transfers_by_media: cursor.is_some(),
            ..Observed::default()
        };
        if wants("download") {
            seen.downloads = logged("the download list", self.mp.download_progress().await);
        }
        if wants("subscription") {
            seen.subscriptions =
                logged("the subscription list", self.mp.list_subscriptions().await);
        }
        let after = cursor.unwrap_or(0);
        let pages = if cursor.is_none() { 1 } else { self.max_pages };
        let read = self.mp.transfers_after(after, pages).await;
        let mut newest = None;
        if let Some((rows, reached)) = logged("the transfer history", read) {
            if !reached {
                tracing::warn!(
                    pages,
                    "more transfer rows arrived since the last poll than follow.max_pages reads; \
                     cards may miss the oldest of them"
                );
            }
            newest = Some(rows.iter().map(|r| r.id).max().unwrap_or(after).max(after));
            seen.transfers = rows;
        }
        seen.completed = self.completed(cards, &seen).await;
        (seen, newest)
    }

    /// The subscription history of each kind whose card's subscription left the list.
    async fn completed(
        &self,
        cards: &[Card],
        seen: &Observed,
    ) -> Option<Vec<crate::moviepilot::CompletedSubscription>> {
        let subs = seen.subscriptions.as_ref()?;
        let mut rows = Vec::new();
        for (kind, name) in [(MediaKind::Movie, "movie"), (MediaKind::Tv, "tv")] {
            let gone = cards.iter().any(|c| {
                c.text("kind") == "subscription"
                    && c.text("mtype") == name
                    && !subs
                        .iter()
                        .any(|s| Some(s.id) == c.number::<u64>("subscription_id"))
            });
            if gone {
                let read = self.mp.subscription_history(kind, HISTORY_ROWS).await;
                rows.extend(logged("the subscription history", read)?);
            }
        }
        Some(rows)
    }
}

/// A card whose state changed before its message was known: the step that queues its edit now
/// (card.lua answers "same" and queues what is owed).
fn owed_edit(card: &Card) -> Option<CardStep> {
    let queued: u64 = card.number("queued").unwrap_or(0);
    let known = !card.text("message_id").is_empty() && card.text("gone") != "1";
    (known && queued < card.seq).then(|| CardStep {
        state: Some(card.state),
        text: card.text("text").to_string(),
        ..CardStep::default()
    })
}

fn logged<T>(what: &str, read: Result<T, crate::moviepilot::MpError>) -> Option<T> {
    match read {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(error = %e, "reading {what} for the live cards failed; the cards keep their state");
            None
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
