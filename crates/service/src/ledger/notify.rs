//! The notification relay's side of the ledger: its position in MoviePilot's message history,
//! the one script that records a batch of rows (notify.lua), the lease that lets one process
//! poll at a time (lock.lua / unlock.lua, as the media lock), and the wake-up signal.

use std::collections::BTreeMap;
use std::time::Duration;

use redis::AsyncCommands as _;

use super::scripts::ScriptCall;
use super::{Conn, Ledger, LedgerError, keys, scripts};
use crate::asked::AskedMedia;
use crate::vocabulary::{ChatTarget, NoticeCategory};

/// How long a handled row's identity is remembered: far longer than a row can take to leave
/// the pages a poll reads (the position moves past it at once), so a clock that jumps back or a
/// second poller never brings one back.
pub const SEEN_RETENTION: Duration = Duration::from_secs(7 * 86_400);

/// Most identities the seen-set keeps, whatever their age.
pub const SEEN_MAX: u64 = 100_000;

/// One history row as notify.lua takes it (ARGV[13..], ten per row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyRow {
    /// `<id>|<reg_time>|<digest of title and text>`.
    pub identity: String,
    /// A digest of type, title and text: what makes two rows "the same notification".
    pub digest: String,
    /// `reg_time` in seconds (read as if UTC: only differences matter).
    pub reg_secs: i64,
    pub id: u64,
    pub reg_time: String,
    /// The message as the chats get it (already cleaned of control and bidi characters).
    pub text: String,
    /// The poster URL, if the row has one.
    pub photo: Option<String>,
    /// Each target chat once; empty: no route, counted as unrouted.
    pub chats: Vec<ChatTarget>,
    /// The category a person's `/notify` sets for it.
    pub category: NoticeCategory,
    /// The chats of `chats` that get it as their own (matched to what they asked): a person's
    /// "only mine" lets these through.
    pub mine: Vec<i64>,
    /// Record as seen without sending (the first start's rows older than where it begins).
    pub seen_only: bool,
}

/// Where the relay stands, as notify.lua keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotifyPosition {
    pub id: u64,
    pub reg_time: String,
    pub identity: String,
    /// When the last poll was recorded (ms since the epoch, Redis's clock).
    pub polled_at: Option<u64>,
    pub forwarded: u64,
    pub collapsed: u64,
    pub unrouted: u64,
    pub skipped: u64,
}

/// How notify.lua is asked to record a batch.
#[derive(Debug, Clone, Copy)]
pub enum NotifyMode<'a> {
    /// The first poll: the position becomes `newest` unless one exists meanwhile.
    Start { newest: &'a NotifyRow },
    /// Every later batch.
    Rows,
}

/// Rows a poll could not read (beyond `notify.max_pages`), told to the admin chats with the
/// batch that forwards what it did read.
#[derive(Debug, Clone, Copy)]
pub struct Skipped<'a> {
    pub count: u64,
    pub notice: &'a str,
}

/// What notify.lua did with a batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NotifyRecorded {
    /// Mode start met a position another process had set: nothing changed.
    pub position_existed: bool,
    pub forwarded: u64,
    pub collapsed: u64,
    pub unrouted: u64,
    pub seen_before: u64,
    /// Replies-stream entries queued (one per chat per forwarded row).
    pub messages: u64,
}

impl Ledger {
    /// The relay's position, `None` before its first poll.
    pub async fn notify_position(&self) -> Result<Option<NotifyPosition>, LedgerError> {
        let mut conn = self.conn.clone();
        let h: BTreeMap<String, String> =
            conn.hgetall(self.keys.notify_position())
                .await
                .map_err(LedgerError::redis(
                    "reading the notification relay's position",
                ))?;
        if !h.contains_key("reg_time") {
            return Ok(None);
        }
        let num = |k: &str| h.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        Ok(Some(NotifyPosition {
            id: num("id"),
            reg_time: h.get("reg_time").cloned().unwrap_or_default(),
            identity: h.get("identity").cloned().unwrap_or_default(),
            polled_at: h.get("polled_at").and_then(|v| v.parse().ok()),
            forwarded: num("forwarded"),
            collapsed: num("collapsed"),
            unrouted: num("unrouted"),
            skipped: num("skipped"),
        }))
    }

    /// notify.lua: records `rows` (oldest first) and advances the position, in one step; on the
    /// durable connection, since it queues replies.
    /// `clock` is quiet hours' (`vocabulary::notice_clock`).
    pub async fn notify_record(
        &self,
        mode: NotifyMode<'_>,
        rows: &[NotifyRow],
        skipped: Option<Skipped<'_>>,
        window: Duration,
        clock: &str,
    ) -> Result<NotifyRecorded, LedgerError> {
        let call = self.notify_record_call(mode, rows, skipped, window, clock);
        let (outcome, forwarded, collapsed, unrouted, seen_before, messages): (
            String,
            u64,
            u64,
            u64,
            u64,
            u64,
        ) = self
            .send_durable(&call, "recording MoviePilot notifications")
            .await?;
        match outcome.as_str() {
            "ok" | "exists" => Ok(NotifyRecorded {
                position_existed: outcome == "exists",
                forwarded,
                collapsed,
                unrouted,
                seen_before,
                messages,
            }),
            other => Err(LedgerError::Corrupt {
                doing: "recording MoviePilot notifications",
                detail: format!("notify.lua answered {other:?}"),
            }),
        }
    }

    pub(super) fn notify_record_call(
        &self,
        mode: NotifyMode<'_>,
        rows: &[NotifyRow],
        skipped: Option<Skipped<'_>>,
        window: Duration,
        clock: &str,
    ) -> ScriptCall {
        let bytes: usize = rows.iter().map(|r| 128 + r.text.len()).sum();
        let (name, newest) = match mode {
            NotifyMode::Start { newest } => ("start", Some(newest)),
            NotifyMode::Rows => ("rows", None),
        };
        let (count, notice) = skipped.map_or((0, ""), |s| (s.count, s.notice));
        let admins = join(&self.review.admin_chats);
        let mut call = ScriptCall::new(&scripts::NOTIFY, 5, 12 + 10 * rows.len(), 256 + bytes);
        call.key("position hash", self.keys.notify_position())
            .key("seen zset", self.keys.notify_seen())
            .key("recent zset", self.keys.notify_recent())
            .key("replies stream", self.keys.replies_stream())
            .key("notices prefix", self.keys.notice_prefix())
            .arg("mode", name)
            .arg("replies consumer group", keys::Stream::Replies.group())
            .arg("seen retention", SEEN_RETENTION.as_millis() as u64)
            .arg("seen entries kept at most", SEEN_MAX)
            .arg("duplicate window", window.as_secs())
            .arg("skipped: rows beyond", count)
            .arg("skipped: the notice", notice)
            .arg("skipped: the admin chat ids", admins)
            .arg("start: the newest row's id", newest.map_or(0, |r| r.id))
            .arg(
                "start: its reg_time",
                newest.map_or("", |r| r.reg_time.as_str()),
            )
            .arg(
                "start: its identity",
                newest.map_or("", |r| r.identity.as_str()),
            )
            .arg("the clock of quiet hours", clock);
        for row in rows {
            call.args([
                row.identity.as_str(),
                row.digest.as_str(),
                &row.reg_secs.to_string(),
                &row.id.to_string(),
                row.reg_time.as_str(),
                row.text.as_str(),
                row.photo.as_deref().unwrap_or(""),
                &if row.seen_only {
                    "-".to_string()
                } else {
                    join(&row.chats)
                },
                row.category.as_str(),
                &join(&row.mine),
            ]);
        }
        call
    }

    /// lock.lua on the relay's lease: true if `holder` polls for `ttl` more (taken or renewed).
    pub async fn notify_lease(&self, holder: &str, ttl: Duration) -> Result<bool, LedgerError> {
        let call = self.notify_lease_call(holder, ttl);
        let held: i64 = self.send(&call, "taking the relay's lease").await?;
        Ok(held == 1)
    }

    pub(super) fn notify_lease_call(&self, holder: &str, ttl: Duration) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::LOCK, 1, 2, 64);
        call.key("lock key", self.keys.notify_lease())
            .arg("owner", holder)
            .arg("lease", ttl.as_millis() as u64);
        call
    }

    /// unlock.lua: a graceful stop hands the poll on at once.
    pub async fn notify_release(&self, holder: &str) -> Result<(), LedgerError> {
        let call = self.notify_release_call(holder);
        let _: i64 = self.send(&call, "releasing the relay's lease").await?;
        Ok(())
    }

    pub(super) fn notify_release_call(&self, holder: &str) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::UNLOCK, 1, 1, 64);
        call.key("lock key", self.keys.notify_lease())
            .arg("owner", holder);
        call
    }

    /// A wake-up call arrived: the poller (whichever process holds the lease) polls now. One
    /// element at most, expiring, carrying nothing of the call.
    pub async fn notify_wake(&self) -> Result<(), LedgerError> {
        let key = self.keys.notify_wake();
        let mut pipe = redis::pipe();
        pipe.lpush(&key, "1")
            .ignore()
            .ltrim(&key, 0, 0)
            .ignore()
            .expire(&key, 60)
            .ignore();
        let mut conn = self.conn.clone();
        pipe.query_async::<()>(&mut conn)
            .await
            .map_err(LedgerError::redis("waking the notification relay"))
    }

    /// Forgets the wake-up calls waiting (a read about to begin serves them).
    pub async fn notify_wake_clear(&self) -> Result<(), LedgerError> {
        let mut conn = self.conn.clone();
        redis::cmd("DEL")
            .arg(self.keys.notify_wake())
            .query_async::<()>(&mut conn)
            .await
            .map_err(LedgerError::redis("clearing the relay's wake-up calls"))
    }

    /// Waits up to `timeout` for a wake-up call (BLPOP on `conn`, a connection of its own with
    /// no response timeout); true when one came.
    pub async fn notify_wait(
        &self,
        conn: &mut Conn,
        timeout: Duration,
    ) -> Result<bool, LedgerError> {
        let got: Option<(String, String)> = redis::cmd("BLPOP")
            .arg(self.keys.notify_wake())
            .arg(timeout.as_secs_f64())
            .query_async(conn)
            .await
            .map_err(LedgerError::redis("waiting for a wake-up call"))?;
        Ok(got.is_some())
    }

    /// A connection for [`Ledger::notify_wait`] (a blocking command must not stall the shared one).
    pub async fn notify_wait_connection(&self) -> Result<Conn, LedgerError> {
        self.stream_connection()
            .await
            .map_err(LedgerError::redis("opening the relay's wake-up connection"))
    }
}

/// Who asked for which media (`asked:<digest>`), for `notify.to_requester`.
impl Ledger {
    /// asked.lua: `chat_id` asked for `media`; remembered for `ttl` from now. With `before_call`
    /// (a job about to send its create or download), the ask is also noted in that job, once,
    /// so that [`Ledger::forget_asker`] can undo it if the job fails.
    pub async fn remember_asker(
        &self,
        media: &AskedMedia,
        chat_id: i64,
        ttl: Duration,
        before_call: Option<u64>,
    ) -> Result<(), LedgerError> {
        let call = self.remember_asker_call(media, chat_id, ttl, before_call);
        let _: i64 = self
            .send(&call, "remembering who asked for a media")
            .await?;
        Ok(())
    }

    pub(super) fn remember_asker_call(
        &self,
        media: &AskedMedia,
        chat_id: i64,
        ttl: Duration,
        before_call: Option<u64>,
    ) -> ScriptCall {
        let askers = self.keys.asked(&media.digest());
        let mut call = ScriptCall::new(&scripts::ASKED, 3, 6, 200);
        call.key("askers zset", &askers);
        match before_call {
            Some(job) => call.key("job HASH", self.keys.job(job)),
            None => call.key("job HASH", &askers),
        };
        call.key("following ZSET", self.keys.following(&media.digest()))
            .arg("mode", "remember")
            .arg("member", media.member(chat_id))
            .arg("time to live", ttl.as_millis() as u64)
            .arg(
                "\"1\": the job is about to send",
                if before_call.is_some() { "1" } else { "0" },
            )
            .arg("the digest in KEYS[1]", media.digest())
            .arg(
                "the job's id",
                before_call.map(|j| j.to_string()).unwrap_or_default(),
            );
        call
    }

    /// asked.lua: job `job_id` ended `failed`: the ask it noted before its call (`digest`, from
    /// its `asked_digest` field) is undone (an earlier ask of the same chat keeps its expiry).
    /// `false` when the job noted none.
    pub async fn forget_asker(&self, digest: &str, job_id: u64) -> Result<bool, LedgerError> {
        let call = self.forget_asker_call(digest, job_id);
        let undone: i64 = self.send(&call, "forgetting who asked for a media").await?;
        Ok(undone == 1)
    }

    pub(super) fn forget_asker_call(&self, digest: &str, job_id: u64) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::ASKED, 3, 6, 128);
        call.key("askers zset", self.keys.asked(digest))
            .key("job HASH", self.keys.job(job_id))
            .key("following ZSET", self.keys.following(digest))
            .arg("mode", "forget")
            .arg("member", "")
            .arg("time to live", "")
            .arg("\"1\": the job is about to send", "0")
            .arg("the digest in KEYS[1]", digest)
            .arg("the job's id", job_id);
        call
    }

    /// The unexpired members of each media's askers, in the order given (one round trip).
    pub async fn askers(&self, media: &[AskedMedia]) -> Result<Vec<Vec<String>>, LedgerError> {
        let keys: Vec<String> = media.iter().map(|m| self.keys.asked(&m.digest())).collect();
        self.unexpired_members(&keys, "reading who asked for a media")
            .await
    }
}

impl Ledger {
    /// For each media, the members of its `following:<digest>` whose card is still followed
    /// (`<season>|<chat>|<card>`): the chats whose card says what its notices would.
    pub async fn followers(&self, media: &[AskedMedia]) -> Result<Vec<Vec<String>>, LedgerError> {
        let keys: Vec<String> = media
            .iter()
            .map(|m| self.keys.following(&m.digest()))
            .collect();
        self.unexpired_members(&keys, "reading the chats following a media")
            .await
    }

    /// For each key, its members scored from now on (one round trip).
    async fn unexpired_members(
        &self,
        keys: &[String],
        doing: &'static str,
    ) -> Result<Vec<Vec<String>>, LedgerError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let mut pipe = redis::pipe();
        for key in keys {
            pipe.zrangebyscore(key, now, "+inf");
        }
        pipe.query_async(&mut self.conn.clone())
            .await
            .map_err(LedgerError::redis(doing))
    }
}

/// Chats for a script, comma-separated: each `chat` or `chat/topic` (`queue_reply` splits it).
fn join<T: std::fmt::Display>(ids: &[T]) -> String {
    let mut out = String::new();
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&id.to_string());
    }
    out
}
