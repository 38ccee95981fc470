//! The relay of MoviePilot's notifications (`--role notify`): it reads MoviePilot's message
//! history and forwards every notification to Telegram once, through the replies stream the
//! dispatcher already delivers once.
//!
//! Policy:
//! - **Source of truth.** The history (`MoviePilot::message_history`), newest first, paged back
//!   until a row at or before the relay's position, at most `notify.max_pages`. After a longer
//!   outage what was read is forwarded and the rest is counted and announced (notify.lua, in the
//!   same step as the first batch), never skipped silently.
//! - **Once.** Each batch, oldest first, is one notify.lua call: seen-set, collapsing, one
//!   replies-stream entry per chat and the position, together. A crash before it reads the rows
//!   again; after it, they are known.
//! - **One poller.** A lease in Redis (`notify:lease`, lock.lua) renewed every
//!   `notify.heartbeat_interval_ms`; a process that cannot vouch for it does not record. When
//!   the holder dies another takes over within `notify.liveness_ttl_ms`.
//! - **Wake-up.** The poller waits on `notify:wake` (BLPOP) for at most the poll interval, so a
//!   call of `/moviepilot/notify/<secret>` on any process makes it poll at once, but never sooner
//!   than `notify.min_poll_gap_ms` after the last read began: the calls that arrive within the
//!   gap are served by one read at its end (14,164 wake-ups once made 88 reads back to back).
//! - **MoviePilot down or refusing.** The poll fails, is counted, and the relay tries again with
//!   backoff; nothing advances, so it catches up. Refused credentials raise the deployment's
//!   credentials notice (the one the worker raises).

mod render;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::asked::{AskedMedia, Seasons};
use crate::backoff::{self, Backoff};
use crate::config::{NotifySettings, Settings};
use crate::i18n::Render;
use crate::i18n::Texts;
use crate::ledger::{Ledger, LedgerError, NotifyMode, NotifyPosition, NotifyRow, Skipped};
use crate::metrics::METRICS;
use crate::moviepilot::{HistoryMessage, MESSAGE_PAGE, MoviePilot, MpError};
use crate::shutdown::sleep_or_stop;
use crate::vocabulary::ChatTarget;
use crate::vocabulary::NotificationType;

/// Rows one notify.lua call records at most: a burst goes in several short steps, so no
/// script holds Redis long.
const BATCH: usize = 50;

/// Seconds since `polled_at` (ms, Redis's clock): the relay's lag (`oncebot_notify_lag_seconds`).
pub fn lag(polled_at: u64) -> Duration {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    Duration::from_millis(now.saturating_sub(polled_at))
}

/// Where each notification type goes.
#[derive(Debug, Clone)]
pub struct Routing {
    routes: HashMap<NotificationType, Vec<ChatTarget>>,
    defaults: Vec<ChatTarget>,
}

impl Routing {
    /// From `notify.routes`, `notify.chats` and, when that is empty, `telegram.admin_chats`.
    pub fn from_settings(settings: &Settings) -> anyhow::Result<Routing> {
        let n = &settings.notify;
        let routes = n.parsed_routes()?.into_iter().collect();
        let defaults = if n.chats.is_empty() {
            settings.telegram.admin_chats.clone()
        } else {
            n.chats.clone()
        };
        Ok(Routing { routes, defaults })
    }

    /// The chats a row of `mtype` goes to, each once, in the order configured. A type MoviePilot
    /// added after this release goes to the defaults.
    pub fn targets(&self, mtype: Option<&str>) -> Vec<ChatTarget> {
        let chats = NotificationType::of_row(mtype)
            .and_then(|t| self.routes.get(&t))
            .unwrap_or(&self.defaults);
        let mut once = Vec::with_capacity(chats.len());
        for chat in chats {
            if !once.contains(chat) {
                once.push(*chat);
            }
        }
        once
    }
}

/// Why a poll did not finish.
#[derive(Debug, thiserror::Error)]
enum PollError {
    #[error(transparent)]
    MoviePilot(#[from] MpError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("the relay's lease was lost before recording; another process polls")]
    LostLease,
}

/// What one poll did.
#[derive(Debug, Default, Clone, Copy)]
struct Polled {
    forwarded: u64,
    collapsed: u64,
    unrouted: u64,
    skipped: u64,
}

/// The lease as this process knows it: when the last renewal Redis took was sent.
struct Lease {
    ledger: Ledger,
    holder: String,
    ttl: Duration,
    interval: Duration,
    command_timeout: Duration,
    renewed: Mutex<Option<Instant>>,
}

impl Lease {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        // A poisoned lock only means a panic while storing an Instant.
        self.renewed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether this process may record now: its lease lives at least as long as a script sent
    /// now can take to land.
    fn holds(&self) -> bool {
        self.lock()
            .is_some_and(|sent| sent.elapsed() + self.command_timeout < self.ttl)
    }

    /// Takes or renews the lease once.
    async fn renew(&self) {
        let sent = Instant::now();
        let held = match self.ledger.notify_lease(&self.holder, self.ttl).await {
            Ok(held) => held,
            Err(e) => {
                crate::log_unless_refused!(e, warn, error = %e, "renewing the relay's lease failed; polling pauses until it works");
                false
            }
        };
        let mut renewed = self.lock();
        let was = renewed.is_some();
        *renewed = held.then_some(sent);
        if held && !was {
            tracing::info!(holder = %self.holder, "this process now polls MoviePilot's message history");
        }
    }

    async fn run(self: Arc<Self>, stop: CancellationToken) {
        loop {
            self.renew().await;
            if sleep_or_stop(self.interval, &stop).await {
                return;
            }
        }
    }
}

/// What the relay keeps from one poll to the next.
struct Standing {
    /// Between failed polls; reset by one that gets through.
    failures: Backoff,
    /// Whether this relay raised the credentials notice, to end it when a poll gets through.
    told_refused: bool,
}

/// The relay of one process.
pub struct Relay {
    ledger: Ledger,
    mp: MoviePilot,
    cfg: NotifySettings,
    routing: Routing,
    texts: Texts,
    render: Render,
    auth_wait: Duration,
    lease: Arc<Lease>,
    /// `telegram.allowed_users`: a row MoviePilot wrote for one of them also goes to them.
    allowed: Vec<i64>,
    /// `commands.day_zone`: the clock of each person's quiet hours.
    zone: jiff::tz::TimeZone,
}

impl Relay {
    pub fn new(settings: &Settings, ledger: Ledger, mp: MoviePilot) -> anyhow::Result<Relay> {
        let cfg = settings.notify.clone();
        let lease = Arc::new(Lease {
            ledger: ledger.clone(),
            holder: crate::liveness::default_consumer_name(),
            ttl: Duration::from_millis(cfg.liveness_ttl_ms),
            interval: Duration::from_millis(cfg.heartbeat_interval_ms),
            command_timeout: Duration::from_millis(settings.redis.command_timeout_ms),
            renewed: Mutex::new(None),
        });
        Ok(Relay {
            routing: Routing::from_settings(settings)?,
            texts: Texts::new(settings.telegram.locale),
            render: Render::new(settings.telegram.locale),
            auth_wait: Duration::from_secs(settings.moviepilot.auth_wait_secs.max(60)),
            allowed: settings.telegram.allowed_user_ids(),
            zone: settings.commands.zone(),
            ledger,
            mp,
            cfg,
            lease,
        })
    }

    /// Polls while it holds the lease, until `stop`; then hands the lease on.
    pub async fn run(self, stop: CancellationToken) -> anyhow::Result<()> {
        let heartbeat = tokio::spawn(self.lease.clone().run(stop.clone()));
        let interval = Duration::from_secs(self.cfg.poll_interval_secs.max(1));
        let mut standing = Standing {
            failures: Backoff::new(backoff::MOVIEPILOT_CONNECT),
            told_refused: false,
        };
        let mut wake: Option<crate::ledger::Conn> = None;
        let gap = Duration::from_millis(self.cfg.min_poll_gap_ms);
        // When the last read began; a wake-up sooner than `gap` after it waits for the rest.
        let mut last_poll: Option<Instant> = None;
        tracing::info!(
            interval_secs = interval.as_secs(),
            max_pages = self.cfg.max_pages,
            "notification relay started"
        );
        while !stop.is_cancelled() {
            if !self.lease.holds() {
                if sleep_or_stop(self.lease.interval / 2, &stop).await {
                    break;
                }
                continue;
            }
            let rest = last_poll.map_or(Duration::ZERO, |at| gap.saturating_sub(at.elapsed()));
            if !rest.is_zero() {
                if sleep_or_stop(rest, &stop).await {
                    break;
                }
                // The wake-up calls that came during the gap are served by this read.
                if let Err(e) = self.ledger.notify_wake_clear().await {
                    tracing::debug!(error = %e, "could not clear the wake-up calls served by this read");
                }
            }
            last_poll = Some(Instant::now());
            match self.poll().await {
                Ok(polled) => self.polled(&polled, &mut standing).await,
                Err(PollError::LostLease) => continue,
                Err(e) => {
                    let wait = self.failed(&e, &mut standing, interval).await;
                    if sleep_or_stop(wait, &stop).await {
                        break;
                    }
                    continue;
                }
            }
            if self.wait_for_wake(&mut wake, interval, &stop).await {
                break;
            }
        }
        heartbeat.abort();
        if self.lease.holds()
            && let Err(e) = self.ledger.notify_release(&self.lease.holder).await
        {
            tracing::warn!(error = %e, "could not release the relay's lease; it expires by itself");
        }
        tracing::info!("notification relay stopped");
        Ok(())
    }

    /// After a poll that got through: the failures are forgotten (and the credentials notice
    /// this relay raised ended), and what was relayed is logged.
    async fn polled(&self, p: &Polled, standing: &mut Standing) {
        standing.failures = Backoff::new(backoff::MOVIEPILOT_CONNECT);
        if std::mem::take(&mut standing.told_refused)
            && let Err(e) = self
                .ledger
                .clear_notice(crate::ledger::CREDENTIALS_NOTICE)
                .await
        {
            tracing::warn!(error = %e, "could not end the admin notice about refused credentials");
        }
        if p.forwarded + p.collapsed + p.unrouted + p.skipped > 0 {
            tracing::info!(
                forwarded = p.forwarded,
                collapsed = p.collapsed,
                unrouted = p.unrouted,
                skipped = p.skipped,
                "relayed MoviePilot notifications"
            );
        }
    }

    /// After a failed poll: counted by kind, the admins told of refused credentials, and the
    /// wait before the next try (the failures' backoff, at most `interval`).
    async fn failed(&self, e: &PollError, standing: &mut Standing, interval: Duration) -> Duration {
        let kind = match e {
            PollError::MoviePilot(mp) => Some(mp.kind()),
            _ => None,
        };
        METRICS.notify_poll_error(kind);
        if let PollError::MoviePilot(MpError::CredentialsRefused(why)) = e {
            self.tell_refused(why).await;
            standing.told_refused = true;
        }
        let wait = standing.failures.next_delay().min(interval);
        tracing::warn!(
            error = %e,
            retry_in = ?wait,
            "reading MoviePilot's message history failed; nothing is skipped, the relay catches up when it answers"
        );
        wait
    }

    /// Waits for a wake-up call or `interval`; true if stopped.
    async fn wait_for_wake(
        &self,
        wake: &mut Option<crate::ledger::Conn>,
        interval: Duration,
        stop: &CancellationToken,
    ) -> bool {
        if wake.is_none() {
            match self.ledger.notify_wait_connection().await {
                Ok(conn) => *wake = Some(conn),
                Err(e) => {
                    tracing::warn!(error = %e, "no wake-up connection; polling on the interval alone");
                    return sleep_or_stop(interval, stop).await;
                }
            }
        }
        let Some(conn) = wake.as_mut() else {
            return sleep_or_stop(interval, stop).await;
        };
        tokio::select! {
            _ = stop.cancelled() => true,
            woke = self.ledger.notify_wait(conn, interval) => {
                match woke {
                    Ok(true) => tracing::debug!("woken up: polling once notify.min_poll_gap_ms has passed"),
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "waiting for a wake-up call failed");
                        *wake = None;
                        return sleep_or_stop(interval, stop).await;
                    }
                }
                false
            }
        }
    }

    async fn tell_refused(&self, why: &str) {
        let notice = self
            .render
            .credentials_notice(why, self.auth_wait.as_secs());
        if let Err(e) = self
            .ledger
            .raise_notice(crate::ledger::CREDENTIALS_NOTICE, &notice, self.auth_wait)
            .await
        {
            tracing::warn!(error = %e, "could not tell the admin chats about the refused credentials");
        }
    }

    /// One poll: read back to the position, record oldest first.
    async fn poll(&self) -> Result<Polled, PollError> {
        let position = self.ledger.notify_position().await?;
        let pages = match &position {
            // First start: enough pages for the backfill and the newest row.
            None => {
                (self.cfg.backfill as usize / MESSAGE_PAGE + 1).min(self.cfg.max_pages as usize)
            }
            Some(_) => self.cfg.max_pages as usize,
        };
        let mut read: Vec<HistoryMessage> = Vec::new();
        let mut met = position.is_none();
        let mut exhausted = false;
        for page in 1..=pages {
            let (rows, answered) = self.mp.message_history(page, MESSAGE_PAGE).await?;
            let page_met = position
                .as_ref()
                .is_some_and(|p| rows.iter().any(|r| !is_after(r, p)));
            read.extend(rows);
            if answered < MESSAGE_PAGE {
                exhausted = true;
                break;
            }
            if page_met {
                met = true;
                break;
            }
        }
        crate::crash_point!("notify.after_read");
        // Paging over a list that grows between reads can show a row twice.
        read.sort_by(|a, b| (&a.reg_time, a.id).cmp(&(&b.reg_time, b.id)));
        read.dedup_by(|a, b| a.id == b.id && a.reg_time == b.reg_time);
        match position {
            None => self.start(&read).await,
            Some(p) => {
                let skipped = (!met && !exhausted).then(|| skipped_estimate(&read, &p));
                let rows: Vec<&HistoryMessage> = read
                    .iter()
                    .filter(|r| r.is_notification() && r.reg_time >= p.reg_time)
                    .collect();
                let rows = self.rows_for(&rows).await?;
                self.record(NotifyMode::Rows, &rows, skipped).await
            }
        }
    }

    /// The first poll: the position becomes the newest row (any row: a user's message too), and
    /// at most `notify.backfill` of the newest notifications are forwarded.
    async fn start(&self, read: &[HistoryMessage]) -> Result<Polled, PollError> {
        let newest = match read.last() {
            Some(row) => self.row(row),
            // An empty history: a position before everything, so the first row is forwarded.
            None => NotifyRow {
                identity: String::new(),
                digest: String::new(),
                reg_secs: 0,
                id: 0,
                reg_time: String::new(),
                text: String::new(),
                photo: None,
                chats: Vec::new(),
                category: crate::vocabulary::NoticeCategory::Other,
                mine: Vec::new(),
                seen_only: false,
            },
        };
        let notes: Vec<&HistoryMessage> = read.iter().filter(|r| r.is_notification()).collect();
        let from = notes.len().saturating_sub(self.cfg.backfill as usize);
        // Rows of the newest row's second that are not backfilled are recorded as seen: later
        // polls look at that whole second again (ids alone cannot say what is new there).
        let mut rows: Vec<NotifyRow> = notes[..from]
            .iter()
            .filter(|r| r.reg_time == newest.reg_time)
            .map(|r| NotifyRow {
                seen_only: true,
                ..self.row(r)
            })
            .collect();
        rows.extend(self.rows_for(&notes[from..]).await?);
        if !self.lease.holds() {
            return Err(PollError::LostLease);
        }
        let recorded = self
            .ledger
            .notify_record(
                NotifyMode::Start { newest: &newest },
                &rows,
                None,
                self.window(),
                &self.clock(),
            )
            .await?;
        crate::crash_point!("notify.after_record");
        if recorded.position_existed {
            // Another process started first: this is an ordinary poll next time.
            return Ok(Polled::default());
        }
        tracing::info!(
            id = newest.id,
            reg_time = %newest.reg_time,
            backfilled = recorded.forwarded,
            "the relay starts at MoviePilot's newest message"
        );
        Ok(self.count(Polled::default(), recorded, 0))
    }

    /// notify.lua over `rows` in batches; the first batch carries what was skipped.
    async fn record(
        &self,
        mode: NotifyMode<'_>,
        rows: &[NotifyRow],
        skipped: Option<u64>,
    ) -> Result<Polled, PollError> {
        let notice = skipped.map(|n| self.texts.notify_skipped(n, self.cfg.max_pages));
        let mut polled = Polled::default();
        let mut chunks: Vec<&[NotifyRow]> = rows.chunks(BATCH).collect();
        if chunks.is_empty() {
            // Nothing new: one call records the poll (polled_at, the lag) and any skip.
            chunks.push(&[]);
        }
        for (i, chunk) in chunks.into_iter().enumerate() {
            let skip = match (i, skipped, &notice) {
                (0, Some(count), Some(notice)) => Some(Skipped { count, notice }),
                _ => None,
            };
            if !self.lease.holds() {
                return Err(PollError::LostLease);
            }
            let recorded = self
                .ledger
                .notify_record(mode, chunk, skip, self.window(), &self.clock())
                .await?;
            crate::crash_point!("notify.after_record");
            polled = self.count(polled, recorded, skip.map_or(0, |s| s.count));
            if let Some(s) = skip {
                tracing::warn!(
                    skipped = s.count,
                    max_pages = self.cfg.max_pages,
                    "MoviePilot's history went back further than notify.max_pages; the older rows were skipped and the admin chats told"
                );
            }
        }
        Ok(polled)
    }

    fn count(&self, mut polled: Polled, r: crate::ledger::NotifyRecorded, skipped: u64) -> Polled {
        METRICS.notify_forwarded.inc_by(r.forwarded);
        METRICS.notify_collapsed.inc_by(r.collapsed);
        METRICS.notify_unrouted.inc_by(r.unrouted);
        METRICS.notify_skipped.inc_by(skipped);
        METRICS.set_notify_lag(Duration::ZERO);
        polled.forwarded += r.forwarded;
        polled.collapsed += r.collapsed;
        polled.unrouted += r.unrouted;
        polled.skipped += skipped;
        polled
    }

    fn clock(&self) -> String {
        crate::vocabulary::notice_clock(jiff::Timestamp::now(), &self.zone)
    }

    fn window(&self) -> Duration {
        Duration::from_secs(self.cfg.duplicate_window_secs)
    }

    fn row(&self, r: &HistoryMessage) -> NotifyRow {
        render::row(r, self.routing.targets(r.mtype.as_deref()))
    }

    /// `rows` as notify.lua takes them: each to its type's chats, then (`notify.to_requester`)
    /// to the chats that asked for the media it is about and, for a row MoviePilot wrote for
    /// an allowed Telegram user (its `userid`), to that user; each chat once.
    /// A chat with an open live card of the row's media gets none of its subscription,
    /// download and 入库 notices: the card says it (issue 45).
    async fn rows_for(&self, rows: &[&HistoryMessage]) -> Result<Vec<NotifyRow>, PollError> {
        let mut out: Vec<NotifyRow> = rows.iter().map(|r| self.row(r)).collect();
        let named: Vec<Option<(AskedMedia, Seasons)>> = rows
            .iter()
            .map(|r| AskedMedia::named_in(r.mtype.as_deref(), r.title.as_deref().unwrap_or("")))
            .collect();
        let mut media: Vec<AskedMedia> = Vec::new();
        for (m, _) in named.iter().flatten() {
            if !media.contains(m) {
                media.push(m.clone());
            }
        }
        let followers = self.ledger.followers(&media).await?;
        let askers = match self.cfg.to_requester {
            true => self.ledger.askers(&media).await?,
            false => vec![Vec::new(); media.len()],
        };
        for ((row, source), named) in out.iter_mut().zip(rows).zip(&named) {
            let carded = match named {
                Some((m, seasons)) => media
                    .iter()
                    .position(|x| x == m)
                    .map_or_else(Vec::new, |i| seasons.chats(&followers[i])),
                None => Vec::new(),
            };
            if !self.cfg.to_requester {
                leave_to_cards(row, &carded);
                continue;
            }
            let mut extra = Vec::new();
            if let Some((m, seasons)) = named
                && let Some(i) = media.iter().position(|x| x == m)
            {
                extra = seasons
                    .chats(&askers[i])
                    .into_iter()
                    .map(ChatTarget::chat)
                    .collect();
            }
            if let Some(user) = source.userid.as_deref().and_then(|u| u.trim().parse().ok())
                && self.allowed.contains(&user)
            {
                extra.push(ChatTarget::chat(user));
            }
            for chat in extra {
                if !row.chats.contains(&chat) {
                    row.chats.push(chat);
                }
                // Theirs: a person's "only mine" (`/notify`) lets it through.
                if !row.mine.contains(&chat.chat) {
                    row.mine.push(chat.chat);
                }
            }
            leave_to_cards(row, &carded);
        }
        Ok(out)
    }
}

/// `row` goes to none of the chats whose live card says it (`carded`); a row every chat of
/// which has such a card is recorded as seen, not counted as unrouted.
fn leave_to_cards(row: &mut NotifyRow, carded: &[i64]) {
    let had = !row.chats.is_empty();
    row.chats.retain(|c| !carded.contains(&c.chat));
    if had && row.chats.is_empty() {
        row.seen_only = true;
    }
}

/// Whether `row` comes after the relay's position by (reg_time, id).
fn is_after(row: &HistoryMessage, p: &NotifyPosition) -> bool {
    (row.reg_time.as_str(), row.id) > (p.reg_time.as_str(), p.id)
}

/// How many rows a poll that met neither the position nor the end left unread: MoviePilot
/// numbers every row (user messages too) in one sequence, so the gap between the position and
/// the oldest row read, at least one.
fn skipped_estimate(read: &[HistoryMessage], p: &NotifyPosition) -> u64 {
    let oldest = read.iter().map(|r| r.id).min().unwrap_or(p.id);
    oldest.saturating_sub(p.id).saturating_sub(1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(env: &[(&str, &str)]) -> Settings {
        Settings::load_from(
            None,
            env.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        )
        .unwrap()
    }

    #[test]
    fn each_chat_is_a_target_once_and_unrouted_types_fall_back_to_the_defaults() {
        let s = settings(&[
            ("ONCEBOT__TELEGRAM__ADMIN_CHATS", "1,1"),
            ("ONCEBOT__NOTIFY__ROUTES", "整理入库=5,5,6;Organize=6,7"),
        ]);
        let r = Routing::from_settings(&s).unwrap();
        let chats = |ids: &[i64]| ids.iter().map(|&c| ChatTarget::chat(c)).collect::<Vec<_>>();
        assert_eq!(r.targets(Some("整理入库")), chats(&[5, 6, 7]));
        assert_eq!(r.targets(Some("站点")), chats(&[1]));
        assert_eq!(r.targets(None), chats(&[1]));
        let none = settings(&[("ONCEBOT__NOTIFY__ROUTES", "站点=9")]);
        let r = Routing::from_settings(&none).unwrap();
        assert!(r.targets(Some("资源下载")).is_empty());
        assert_eq!(r.targets(Some("SiteMessage")), chats(&[9]));
        assert_eq!(r.targets(Some("站点")), chats(&[9]));
        // A route to a forum topic keeps it; the same chat's General topic is another target.
        let topics = settings(&[("ONCEBOT__NOTIFY__ROUTES", "站点=-100/7,-100/7,-100")]);
        let r = Routing::from_settings(&topics).unwrap();
        assert_eq!(
            r.targets(Some("站点")),
            vec![ChatTarget::in_thread(-100, Some(7)), ChatTarget::chat(-100)]
        );
    }
}
