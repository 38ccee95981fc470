//! What a command's run is given and gives back: the job's [`Context`] (MoviePilot, the ledger,
//! the texts, the settings, the attempt's fence), the [`Done`] it returns, and the few helpers
//! every command's reply uses (its buttons, the job's notes, who a button is for). A leaf of
//! `worker`: it knows no command and none of the worker's machinery, so the command files can
//! stand on it and the worker on them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::asked::AskedMedia;
use crate::config::Settings;
use crate::i18n::Render;
use crate::ledger::{Attempt, Job, Ledger, LedgerError, Owner, TokenAction, TokenGroup};
use crate::moviepilot::{MoviePilot, MpError};
use crate::telegram::keyboard::Keyboard;
use crate::vocabulary::{ErrorKind, job_field};

/// What a successful run produced.
#[derive(Debug, Clone, Default)]
pub struct Done {
    /// The reply for the user.
    pub reply: String,
    /// A short result for the ledger's `result` field.
    pub result: String,
    /// Extra job fields: MoviePilot ids touched, what the external call answered.
    pub fields: Vec<(String, String)>,
    /// Buttons under the reply, stored with the outcome (complete.lua).
    pub buttons: Option<Buttons>,
    /// The poster of the media the reply is about (its http(s) URL), written with the reply
    /// (complete.lua): the dispatcher sends the reply as a photo when the text fits a caption
    /// and `telegram.posters` is on.
    pub photo: Option<String>,
    /// The run ended without success although MoviePilot answered (see [`Settle`]); `None`:
    /// `succeeded`.
    pub settle: Option<Settle>,
    /// The media this job asked MoviePilot for (a subscription, a download): its
    /// notifications also go to the job's chat (`notify.to_requester`).
    pub asked: Option<AskedMedia>,
}

/// What a live card follows (issue 45): a download by its hash, or a subscription by its id
/// (and its TMDB id and season, which its transfer rows carry).
#[derive(Debug, Clone, Copy)]
pub enum Followed<'a> {
    Download {
        hash: &'a str,
    },
    Subscription {
        id: u64,
        tmdb_id: u64,
        season: Option<u32>,
        movie: bool,
    },
}

/// A run that finished without succeeding, with `reply` for the user and `error` for the
/// ledger kept apart (the user never reads what MoviePilot said raw).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settle {
    /// `failed`, not retried (MoviePilot refused a download; a resource search lost its answer).
    Failed { error: String },
    /// `needs_review`: what happened cannot be decided, so a person decides (admins told).
    Held { error: String },
}

impl Done {
    /// A reply and the ledger's short result, with no extra fields and no buttons.
    pub fn new(reply: String, result: String) -> Done {
        Done {
            reply,
            result,
            ..Done::default()
        }
    }
}

/// Buttons under a reply: what Telegram shows, and the tokens behind them.
#[derive(Debug, Clone)]
pub struct Buttons {
    /// InlineKeyboardMarkup JSON.
    pub markup: String,
    /// `TokenGroup::spec` JSON, for complete.lua.
    pub tokens: String,
}

/// Serialises subscription creates for one media inside this process, so two users asking for
/// the same title at once cannot both pass the existence check.
pub type MediaLocks = KeyedLocks<(u64, Option<u32>)>;

/// One async mutex per key, created on demand and forgotten when nobody holds it.
pub struct KeyedLocks<K> {
    locks: Arc<Mutex<LockMap<K>>>,
}

struct LockMap<K> {
    map: HashMap<K, Arc<tokio::sync::Mutex<()>>>,
    /// Unused locks are swept out when the map reaches this size: then twice what is left (at
    /// least 64), so a sweep, which visits every entry, costs O(1) per `get` on average and the
    /// map holds at most about twice the locks in use.
    sweep_at: usize,
}

impl<K> Default for LockMap<K> {
    fn default() -> Self {
        Self {
            map: HashMap::new(),
            sweep_at: 0,
        }
    }
}

impl<K> Default for KeyedLocks<K> {
    fn default() -> Self {
        Self {
            locks: Arc::default(),
        }
    }
}

impl<K> Clone for KeyedLocks<K> {
    fn clone(&self) -> Self {
        Self {
            locks: self.locks.clone(),
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone> KeyedLocks<K> {
    /// The lock for `key`; hold its guard for as long as the work must be exclusive.
    pub fn get(&self, key: K) -> Arc<tokio::sync::Mutex<()>> {
        // A poisoned lock only means another task panicked while inserting; the map is fine.
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        if locks.map.len() >= locks.sweep_at {
            locks.map.retain(|_, l| Arc::strong_count(l) > 1);
            locks.sweep_at = (2 * locks.map.len()).max(64);
        }
        locks.map.entry(key).or_default().clone()
    }
}

/// Everything an action may use.
pub struct Context<'a> {
    pub mp: &'a MoviePilot,
    pub ledger: &'a Ledger,
    pub render: Render,
    /// Every setting: a command reads its own (its window, its list's size).
    pub settings: &'a Settings,
    pub media_locks: &'a MediaLocks,
    /// The attempt running the job (its fence, for notes written mid-run).
    pub attempt: &'a Attempt,
    /// The job's id, for the progress message.
    pub job_id: u64,
    /// Set before a "working on it" message is queued (by the worker's timer or a command's
    /// [`Context::tell_progress`]): the outcome then edits it.
    pub progress: &'a AtomicBool,
    /// The digest of the media this attempt noted as asked for before its call
    /// ([`ask_before_call`]), which a failed end undoes.
    pub asked_before_call: Mutex<Option<String>>,
}

impl Context<'_> {
    /// How long a reply's buttons live (`telegram.confirm_ttl_secs`).
    pub fn button_ttl(&self) -> Duration {
        Duration::from_secs(self.settings.telegram.confirm_ttl_secs)
    }

    /// How long a release list and its buttons live (`commands.resources_window_secs`).
    pub fn list_ttl(&self) -> Duration {
        Duration::from_secs(self.settings.commands.resources_window_secs)
    }

    /// How long a chat that asked for a media is remembered for the relay; `None` while the
    /// relay or `notify.to_requester` is off.
    pub fn asker_ttl(&self) -> Option<Duration> {
        let notify = &self.settings.notify;
        (notify.enabled && notify.to_requester)
            .then(|| Duration::from_secs(notify.requester_ttl_secs))
    }

    /// The job field `follow` (issue 45): with a `succeeded` outcome it opens the job's live
    /// card (complete.lua), which follows `followed` under `title` for `follow.max_days` (at
    /// most `notify.requester_ttl_secs`); `media`, when known, is the media whose
    /// subscription, download and 入库 notices the relay leaves to the card in this chat.
    pub fn follow_field(
        &self,
        followed: Followed<'_>,
        title: &str,
        media: Option<&AskedMedia>,
    ) -> (String, String) {
        let follow_for = self
            .settings
            .follow
            .follow_for(self.settings.notify.requester_ttl_secs);
        let title: String = crate::untrusted::clean_line(title)
            .chars()
            .take(200)
            .collect();
        let mut spec = serde_json::json!({
            "title": title,
            "follow_ms": follow_for.as_millis().to_string(),
        });
        match followed {
            Followed::Download { hash } => {
                spec["kind"] = "download".into();
                spec["hash"] = hash.to_ascii_lowercase().into();
            }
            Followed::Subscription {
                id,
                tmdb_id,
                season,
                movie,
            } => {
                spec["kind"] = "subscription".into();
                spec["subscription_id"] = id.to_string().into();
                spec["tmdb_id"] = tmdb_id.to_string().into();
                spec["mtype"] = if movie { "movie" } else { "tv" }.into();
                if let Some(season) = season {
                    spec["season"] = season.to_string().into();
                }
            }
        }
        if let Some(media) = media {
            spec["follow_digest"] = media.digest().into();
            spec["follow_season"] = media.season.unwrap_or(0).to_string().into();
        }
        (job_field::FOLLOW.to_string(), spec.to_string())
    }

    /// Queues `text` as the job's "working on it" message now (a step that takes long says so
    /// at once); the outcome then replaces it.
    pub async fn tell_progress(&self, text: &str) {
        // Set first, whatever the call answers: one that timed out may still have queued it.
        self.progress.store(true, Ordering::Relaxed);
        if let Err(e) = self
            .ledger
            .queue_progress(self.job_id, self.attempt.attempt, text)
            .await
        {
            tracing::warn!(error = %e, "could not queue the progress message");
        }
    }
}

/// Remembers that the job's chat asks for `media` *before* the create or the download goes out:
/// MoviePilot writes its "已添加订阅" during that request and its Webhook plugin wakes the relay
/// at once, which forwarded it before an ask recorded after the answer. The job notes the ask,
/// so a `failed` end undoes it. Not remembered: nothing goes to the asker, as before.
pub async fn ask_before_call(cx: &Context<'_>, job: &Job, media: Option<&AskedMedia>) {
    let (Some(media), Some(ttl)) = (media, cx.asker_ttl()) else {
        return;
    };
    match cx
        .ledger
        .remember_asker(media, job.chat_id, ttl, Some(job.id))
        .await
    {
        Ok(()) => {
            *cx.asked_before_call
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(media.digest());
        }
        Err(e) => {
            tracing::warn!(error = %e, "could not remember who asked before the call; MoviePilot's first notices about this media may miss the asker")
        }
    }
}

/// Who may use the bot and who each is, as it stands now: the settings' side with the grants
/// and MoviePilot's mapping as stored (one round trip), as every ingress follows it.
pub async fn directory_now(cx: &Context<'_>) -> Result<crate::users::Directory, MpError> {
    // Checked at start (`Settings::validate`); were it not, nobody would be on the list.
    let base = cx.settings.directory().unwrap_or_default();
    let moviepilot = cx.settings.moviepilot.users_refresh().is_some();
    crate::users_sync::read_directory(cx.ledger, &base, moviepilot)
        .await
        .map_err(ledger_error)
}

/// One once-only button under an answer, bound to the asker in this chat.
pub fn one_button(
    cx: &Context<'_>,
    job: &Job,
    label: &str,
    action: TokenAction,
) -> Option<Buttons> {
    let owner = owner(job);
    let mut group = TokenGroup::new(cx.button_ttl());
    let data = group.add(owner, label, action, reply_to(job));
    buttons(&group, Keyboard::new().row(vec![(label.to_string(), data)]))
}

/// Notes `fields` in the job (note.lua, fenced by this attempt) before a call whose effect a
/// later attempt must know of after a crash. Fails when this attempt no longer owns the job.
pub async fn note(cx: &Context<'_>, fields: &[(&str, String)]) -> Result<(), MpError> {
    let noted = cx
        .ledger
        .note(cx.attempt, fields)
        .await
        .map_err(ledger_error)?;
    if noted {
        Ok(())
    } else {
        Err(MpError::Transient(
            "this attempt no longer owns the job (its lease was taken)".into(),
        ))
    }
}

/// The note `field` an attempt of job `id` left (`None`: none). The claim hands over only the
/// fields a worker always needs, so notes are read from the whole job.
pub async fn noted(cx: &Context<'_>, id: u64, field: &str) -> Result<Option<String>, MpError> {
    let full = cx.ledger.job(id).await.map_err(ledger_error)?;
    Ok(full.and_then(|mut j| j.extra.remove(field)))
}

/// MoviePilot refused: `failed`, not retried; the user reads `reply`, MoviePilot's own words
/// stay in the job's `error` (`error`) for the admins.
pub fn refused(cx: &Context<'_>, job: &Job, reply: &str, error: String) -> Done {
    Done {
        reply: cx.render.failed(job.id, ErrorKind::Permanent, Some(reply)),
        settle: Some(Settle::Failed { error }),
        ..Done::default()
    }
}

/// **Confirm / Cancel** under a question: Confirm does `confirm` (makes the job with the side
/// effect), Cancel nothing; siblings, bound to the asker in this chat.
pub fn confirm_or_cancel(cx: &Context<'_>, job: &Job, confirm: TokenAction) -> Option<Buttons> {
    let r = &cx.render;
    let owner = owner(job);
    let reply_to = reply_to(job);
    let mut group = TokenGroup::new(cx.button_ttl());
    let yes = group.add(owner, r.confirm_button(), confirm, reply_to);
    let no = group.add(owner, r.cancel_button(), TokenAction::Cancel, reply_to);
    let keyboard = Keyboard::new().row(vec![
        (r.confirm_button().to_string(), yes),
        (r.cancel_button().to_string(), no),
    ]);
    buttons(&group, keyboard)
}

/// The keyboard and its tokens; `None` for a group without buttons.
pub fn buttons(group: &TokenGroup, keyboard: Keyboard) -> Option<Buttons> {
    (!group.tokens.is_empty()).then(|| Buttons {
        markup: keyboard.to_json(),
        tokens: group.spec().to_string(),
    })
}

/// The user's message a job answers (a job made by a button answers the command that showed it).
/// A ledger failure inside a job: Redis will answer again, so the attempt is retried.
pub fn ledger_error(e: LedgerError) -> MpError {
    MpError::Transient(e.to_string())
}

/// The buttons under a job's answer are its asker's, in the chat it was asked in.
pub fn owner(job: &Job) -> Owner {
    Owner::User {
        chat_id: job.chat_id,
        user_id: job.user_id,
    }
}

pub fn reply_to(job: &Job) -> Option<i64> {
    job.extra
        .get(crate::vocabulary::job_field::MESSAGE_ID)
        .and_then(|m| m.parse().ok())
}

/// Milliseconds since the Unix epoch by this host's clock (a download's and a restart's start,
/// noted for a later attempt).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
