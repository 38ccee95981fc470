//! Runs one action against MoviePilot (or the ledger, for /status and /jobs) and says what
//! happened in words for the user. No retry decisions here: errors go back classified.
//!
//! Creating a subscription always looks first (`find_subscription`): MoviePilot answers a repeat
//! with the existing id but re-sends its notifications, so oncebot never sends a repeat. The same
//! look is how a crashed subscribe is verified, so recovery and first run share one path.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::asked::AskedMedia;
use crate::commands::{Action, Command, SubscriptionMedia};
use crate::ledger::{Attempt, Job, JobFilter, Ledger, LedgerError, Owner, TokenAction, TokenGroup};
use crate::moviepilot::{
    Library, LibraryMedia, MediaItem, MediaKind, MoviePilot, MpError, NewSubscription,
    SchedulerRun, Subscription,
};
use crate::telegram::keyboard::Keyboard;
use crate::vocabulary::Role;

use crate::i18n::{self, Render, Whose};

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
    pub(super) fn new(reply: String, result: String) -> Done {
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
    pub media_locks: &'a MediaLocks,
    pub buttons: &'a ButtonSettings,
    pub releases: &'a super::releases::ReleaseSettings,
    /// The attempt running the action (its fence, for notes written mid-run).
    pub attempt: &'a Attempt,
    /// What the house commands need of the settings.
    pub house: &'a HouseSettings,
    /// How long a library check's answer is cached (`moviepilot.library_cache_secs`; `None`:
    /// not cached).
    pub library_cache: Option<Duration>,
    /// How long a chat that asked for a media is remembered for the relay; `None` while the
    /// relay or `notify.to_requester` is off.
    pub asker_ttl: Option<Duration>,
    /// The digest of the media this attempt noted as asked for before its call
    /// ([`ask_before_call`]), which a failed end undoes.
    pub asked_before_call: Mutex<Option<String>>,
}

/// Remembers that the job's chat asks for `media` *before* the create or the download goes out:
/// MoviePilot writes its "已添加订阅" during that request and its Webhook plugin wakes the relay
/// at once, which forwarded it before an ask recorded after the answer. The job notes the ask,
/// so a `failed` end undoes it. Not remembered: nothing goes to the asker, as before.
pub(super) async fn ask_before_call(cx: &Context<'_>, job: &Job, media: Option<&AskedMedia>) {
    let (Some(media), Some(ttl)) = (media, cx.asker_ttl) else {
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

/// The house commands' settings (`commands.*`).
#[derive(Debug, Clone)]
pub struct HouseSettings {
    /// `commands.site_signin_job`: the scheduler job `/site_signin` starts.
    pub site_signin_job: String,
    /// `commands.restart_watch_secs`.
    pub restart_watch: Duration,
}

/// How the buttons under a reply behave.
#[derive(Debug, Clone)]
pub struct ButtonSettings {
    /// `telegram.confirm_ttl_secs`.
    pub ttl: Duration,
    /// The duplicate window of `/subscribe`, which a Subscribe button's job has too.
    pub subscribe_window: Duration,
    /// The same of `/best` (洗版).
    pub best_window: Duration,
    /// The duplicate window of `/unsubscribe`, which its Confirm button's job has.
    pub unsubscribe_window: Duration,
    /// The same of `/restart`,
    pub restart_window: Duration,
    /// and of `/redo`.
    pub redo_window: Duration,
}

impl ButtonSettings {
    /// From `telegram.confirm_ttl_secs` and the commands' windows.
    pub fn of(settings: &crate::config::Settings) -> ButtonSettings {
        ButtonSettings {
            ttl: Duration::from_secs(settings.telegram.confirm_ttl_secs),
            subscribe_window: Command::Subscribe.window(&settings.commands),
            best_window: Command::Best.window(&settings.commands),
            unsubscribe_window: Command::Unsubscribe.window(&settings.commands),
            restart_window: Command::Restart.window(&settings.commands),
            redo_window: Command::Redo.window(&settings.commands),
        }
    }

    /// The window of a subscription button's job: `/best`'s or `/subscribe`'s.
    pub fn window_of(&self, command: Command) -> Duration {
        match command {
            Command::Best => self.best_window,
            _ => self.subscribe_window,
        }
    }
}

/// Runs `action` for `job`. `recovered` marks a job whose previous worker died mid-run.
pub async fn run(
    cx: &Context<'_>,
    job: &Job,
    action: &Action,
    recovered: bool,
) -> Result<Done, MpError> {
    let r = &cx.render;
    match action {
        Action::Search { title } => search(cx, job, title, None).await,
        Action::SubscribeTitle { title, best } => search(cx, job, title, Some(verb(*best))).await,
        Action::DownloadTitle { title } => super::releases::matches(cx, job, title).await,
        Action::FindReleases {
            tmdb_id,
            kind,
            season,
            check,
        } => super::releases::search(cx, job, (*tmdb_id, *kind, *season), *check).await,
        Action::Grab { list, index } => super::releases::grab(cx, job, *list, *index).await,
        Action::Auto { list, media } => super::auto::auto(cx, job, *list, *media, recovered).await,
        Action::ChooseSeason { tmdb_id, best } => {
            choose_season(cx, job, *tmdb_id, verb(*best)).await
        }
        &Action::SubscribeTmdb {
            tmdb_id,
            season,
            check,
            best,
        } => subscribe(cx, job, Ask::new(tmdb_id, season, check, best), recovered).await,
        Action::Subscriptions { all } => {
            let (subs, whose) = list(cx, job, *all).await?;
            Ok(Done::new(
                r.subscriptions(&subs, whose),
                format!("{} subscriptions", subs.len()),
            ))
        }
        Action::AskUnsubscribe { subscription_id } => {
            ask_unsubscribe(cx, job, *subscription_id).await
        }
        Action::Unsubscribe {
            subscription_id,
            media,
        } => unsubscribe(cx, job, *subscription_id, media, recovered).await,
        Action::SearchNow { subscription_id } => {
            cx.mp.search_subscription_now(*subscription_id).await?;
            Ok(Done {
                fields: vec![("mp_subscription_id".into(), subscription_id.to_string())],
                ..Done::new(
                    r.search_now(*subscription_id),
                    format!("search requested for subscription {subscription_id}"),
                )
            })
        }
        Action::Downloading => {
            let downloads = cx.mp.downloading().await?;
            Ok(Done::new(
                r.downloading(&downloads),
                format!("{} downloads", downloads.len()),
            ))
        }
        Action::Status { job_id } => {
            let reply = status(cx, job, *job_id).await?;
            Ok(Done::new(reply, "status".into()))
        }
        Action::Jobs => jobs(cx, job).await,
        Action::RunHouseJob { command, job_id } => run_house_job(cx, *command, job_id).await,
        Action::AskRestart => super::restart::ask(cx, job).await,
        Action::Restart => super::restart::restart(cx, job).await,
        Action::AskRedo { record } => super::redo::ask(cx, job, *record).await,
        Action::Redo { record } => super::redo::redo(cx, job, *record).await,
    }
}

/// A house command: one of MoviePilot's scheduler jobs, started once (its window is admission's).
async fn run_house_job(
    cx: &Context<'_>,
    command: Command,
    job_id: &'static str,
) -> Result<Done, MpError> {
    let job_id = match command {
        Command::SiteSignin => cx.house.site_signin_job.as_str(),
        _ => job_id,
    };
    let run = cx.mp.run_scheduler(job_id).await?;
    let mut fields = vec![
        ("mp_scheduler_job".into(), job_id.to_string()),
        ("mp_outcome".into(), run.outcome().to_string()),
    ];
    if let SchedulerRun::Started { detail } = &run {
        fields.push(("mp_call".into(), detail.clone()));
    }
    Ok(Done {
        fields,
        ..Done::new(
            cx.render.house_job_ran(command.house_name(), &run),
            format!("{job_id}: {}", run.outcome()),
        )
    })
}

/// The command a subscription's buttons run: `/best` (洗版) or `/subscribe`.
fn verb(best: bool) -> Command {
    if best {
        Command::Best
    } else {
        Command::Subscribe
    }
}

/// `/search` (`choose`: `订阅 X` / `洗版 X`, which offer the matches to subscribe to with
/// that command).
async fn search(
    cx: &Context<'_>,
    job: &Job,
    title: &str,
    choose: Option<Command>,
) -> Result<Done, MpError> {
    let items = cx.mp.search_media(title).await?;
    let library = super::library::check_items(cx, &items).await;
    let r = &cx.render;
    let text = |page, kept| match choose {
        Some(Command::Best) => r.best_results(title, (&items, &library), page, kept),
        _ => r.search_results(title, (&items, &library), page, kept, choose.is_some()),
    };
    let row = |group: &mut TokenGroup, i| subscribe_row(cx, job, group, (i, &items[i]), choose);
    let paged = super::pages::matches(cx, job, items.len(), text, row).await?;
    Ok(Done {
        reply: paged.first_text(),
        result: format!("{} results", items.len()),
        buttons: paged.buttons(),
        photo: first_poster(&items),
        ..Done::default()
    })
}

/// A match list's poster: the first match's, as MoviePilot's own bot shows it (the list reads
/// as "this one, or one of these"); none when the first match has none.
pub(super) fn first_poster(items: &[MediaItem]) -> Option<String> {
    items.first()?.poster.clone()
}

/// `/jobs`: this chat's last ten jobs but this one.
async fn jobs(cx: &Context<'_>, job: &Job) -> Result<Done, MpError> {
    let filter = JobFilter {
        chat_id: Some(job.chat_id),
        limit: 11,
        status: None,
    };
    let jobs: Vec<Job> = cx
        .ledger
        .list_jobs(&filter)
        .await
        .map_err(ledger_error)?
        .into_iter()
        .filter(|j| j.id != job.id)
        .take(10)
        .collect();
    Ok(Done::new(
        cx.render.jobs(&jobs),
        format!("{} jobs", jobs.len()),
    ))
}

/// A subscription to make: `/subscribe tmdb:<id> [S<n>]` or `/best`.
#[derive(Debug, Clone, Copy)]
struct Ask {
    tmdb_id: u64,
    season: Option<u32>,
    /// Stop if the library has the media (not for an "anyway" button's job, nor `/best`).
    check: bool,
    /// With MoviePilot's `best_version` (洗版).
    best: bool,
}

impl Ask {
    fn new(tmdb_id: u64, season: Option<u32>, check: bool, best: bool) -> Ask {
        Ask {
            tmdb_id,
            season,
            check,
            best,
        }
    }
}

/// A subscription (`ask`), under the media lock: looked for first, then made.
async fn subscribe(
    cx: &Context<'_>,
    job: &Job,
    ask: Ask,
    recovered: bool,
) -> Result<Done, MpError> {
    let Ask {
        tmdb_id, season, ..
    } = ask;
    let lock = cx.media_locks.get((tmdb_id, season));
    let _guard = lock.lock().await;
    // Across processes too: the existence check and the create must not interleave with another
    // worker's. The lease outlives a create call; a crash leaves it to expire, or to the same
    // job's recovery, which may take it again at once.
    let owner = format!("job:{}", job.id);
    if !cx
        .ledger
        .lock_media(tmdb_id, season, &owner, MEDIA_LOCK_LEASE)
        .await
        .map_err(ledger_error)?
    {
        return Err(MpError::Transient(
            "another worker is creating this subscription right now".into(),
        ));
    }
    let result = subscribe_locked(cx, job, ask, recovered).await;
    if let Err(e) = cx.ledger.unlock_media(tmdb_id, season, &owner).await {
        tracing::warn!(error = %e, "could not release the media lock; it expires by itself");
    }
    result
}

/// `/subscribe tmdb:<id> S<n>`, as the ⚡ Auto job's second step runs it: the same path
/// (looked for under the media lock first, the library checked).
pub(super) async fn subscribe_season(
    cx: &Context<'_>,
    job: &Job,
    (tmdb_id, season): (u64, u32),
    recovered: bool,
) -> Result<Done, MpError> {
    subscribe(
        cx,
        job,
        Ask::new(tmdb_id, Some(season), true, false),
        recovered,
    )
    .await
}

/// How long a media lock lives if its holder dies before releasing it.
const MEDIA_LOCK_LEASE: std::time::Duration = std::time::Duration::from_secs(120);

/// MoviePilot keeps one subscription per media (TMDB id and season): an existing one is this
/// job's (made before a crash) or someone's; a `/best` that finds a plain one leaves it as it
/// is and says how to switch (see `plain_exists`).
async fn subscribe_locked(
    cx: &Context<'_>,
    job: &Job,
    ask: Ask,
    recovered: bool,
) -> Result<Done, MpError> {
    let r = &cx.render;
    let Ask {
        tmdb_id,
        season,
        check,
        best,
    } = ask;
    if let Some(existing) = cx.mp.find_subscription(tmdb_id, season).await? {
        if best && !existing.best_version {
            return Ok(plain_exists(cx, &existing, season));
        }
        let done = found(cx, job, &existing, season, recovered).await?;
        return Ok(best_noted(cx, best, done));
    }
    let kind = if season.is_some() {
        MediaKind::Tv
    } else {
        MediaKind::Movie
    };
    let media = cx
        .mp
        .media_detail(tmdb_id, kind)
        .await?
        .ok_or_else(|| MpError::Declined(r.media_not_found(tmdb_id)))?;
    if let Some(n) = season
        && !media.season_numbers.is_empty()
        && !media.season_numbers.contains(&n)
    {
        return Err(MpError::Declined(r.no_such_season(&media.title, n)));
    }
    let library = match check {
        true => super::library::check(cx, &library_media(&media, kind, tmdb_id, season)).await,
        false => Library::Unknown,
    };
    if library.is_present() {
        return Ok(in_library(cx, job, &media.title, (tmdb_id, season)));
    }
    if job.requester.is_some() {
        // Before the create: whatever the service account owns for this media after a crash
        // from here on is this job's to give to the requester.
        note(cx, &[(SUBSCRIPTION_CREATED, CREATING.into())]).await?;
    }
    let new = NewSubscription {
        name: media.title.clone(),
        year: media.year.clone(),
        kind,
        tmdb_id,
        season,
        best,
    };
    let asked = AskedMedia::new(&media.title, media.year.as_deref(), season);
    ask_before_call(cx, job, asked.as_ref()).await;
    let id = cx.mp.create_subscription(&new).await?;
    if let Some(owner) = job.requester.as_deref() {
        // MoviePilot made the service account the owner: note the row as this job's, so an
        // attempt after a crash here gives it to the requester instead of calling it someone
        // else's existing subscription, then give it.
        note(cx, &[(SUBSCRIPTION_CREATED, id.to_string())]).await?;
        crate::crash_point!("worker.after_subscribe_create");
        give(cx, (id, Some(tmdb_id), season), owner).await?;
    }
    let done = subscribed(cx, job, (&media.title, season, id), false);
    let done = Done {
        reply: done.reply.clone() + &r.subscribed_missing(&library),
        asked,
        photo: media.poster.clone(),
        ..done
    };
    Ok(best_noted(cx, best, done))
}

/// A `/best` answer says what best version means; any other is `done` as it is.
fn best_noted(cx: &Context<'_>, best: bool, done: Done) -> Done {
    if !best {
        return done;
    }
    Done {
        reply: done.reply.clone() + cx.render.best_note(),
        ..done
    }
}

/// `/best` found a plain subscription to the media. MoviePilot keeps one per media (a
/// best-version create would answer the plain one's id and leave it plain), and switching it
/// means rewriting someone's whole row (`PUT /api/v1/subscribe/`), which oncebot does not do
/// for them: it is left as it is and the user is told how to switch (cancel it, then 洗版).
fn plain_exists(cx: &Context<'_>, existing: &Subscription, season: Option<u32>) -> Done {
    Done {
        reply: cx
            .render
            .plain_subscription_exists(&existing.name, season, existing.id),
        result: format!("plain subscription {} exists; not switched", existing.id),
        fields: vec![
            ("mp_subscription_id".into(), existing.id.to_string()),
            ("mp_outcome".into(), "plain_exists".into()),
        ],
        ..Done::default()
    }
}

/// The library check of a subscription to `media` (its season, when one is asked).
fn library_media(
    media: &MediaItem,
    kind: MediaKind,
    tmdb_id: u64,
    season: Option<u32>,
) -> LibraryMedia {
    LibraryMedia {
        tmdb_id,
        kind,
        season,
        title: media.title.clone(),
        year: media.year.clone(),
    }
}

/// No subscription made: the library has the media. One line, and a "Subscribe anyway" button
/// that runs the same subscription without the check (its own job and duplicate key).
fn in_library(
    cx: &Context<'_>,
    job: &Job,
    name: &str,
    (tmdb_id, season): (u64, Option<u32>),
) -> Done {
    let r = &cx.render;
    let media = SubscriptionMedia::Tmdb { tmdb_id, season };
    let anyway = run_button(
        job,
        Command::Subscribe,
        format!("{} {}", media.args(), crate::commands::ANYWAY),
        cx.buttons.subscribe_window,
    );
    Done {
        reply: r.in_library_not_subscribed(name, season),
        result: "in the library; not subscribed".into(),
        fields: vec![("mp_outcome".into(), "in_library".into())],
        buttons: one_button(cx, job, r.subscribe_anyway_button(), anyway),
        ..Done::default()
    }
}

/// A button that makes `command`'s job with `args`, as `job`'s asker typing it would (same
/// business key and window), bound to them in this chat.
pub(super) fn run_button(
    job: &Job,
    command: Command,
    args: impl Into<String>,
    window: Duration,
) -> TokenAction {
    TokenAction::Run(command.button(owner(job), job.requester.as_deref(), args, window))
}

/// One once-only button under an answer, bound to the asker in this chat.
pub(super) fn one_button(
    cx: &Context<'_>,
    job: &Job,
    label: &str,
    action: TokenAction,
) -> Option<Buttons> {
    let owner = owner(job);
    let mut group = TokenGroup::new(cx.buttons.ttl);
    let data = group.add(owner, label, action, reply_to(job));
    buttons(&group, Keyboard::new().row(vec![(label.to_string(), data)]))
}

/// The subscription to this media exists: this job's own (created before a crash or a lost
/// answer, given to the requester now), or one that was there before (left as it is).
async fn found(
    cx: &Context<'_>,
    job: &Job,
    existing: &Subscription,
    season: Option<u32>,
    recovered: bool,
) -> Result<Done, MpError> {
    let r = &cx.render;
    let asked = AskedMedia::new(&existing.name, existing.year.as_deref(), season);
    if let Some(owner) = owner_to_set(cx, job, existing).await? {
        give(cx, (existing.id, existing.tmdb_id, existing.season), owner).await?;
        return Ok(Done {
            asked,
            photo: existing.poster.clone(),
            ..subscribed(cx, job, (&existing.name, season, existing.id), recovered)
        });
    }
    let (reply, outcome) = if recovered {
        (
            r.subscription_verified(job.id, &existing.name, season, existing.id),
            "verified_existing",
        )
    } else {
        (
            r.already_subscribed(&existing.name, season, existing.id),
            "already_existed",
        )
    };
    Ok(Done {
        reply,
        result: format!("subscription {} exists", existing.id),
        fields: vec![
            ("mp_subscription_id".into(), existing.id.to_string()),
            ("mp_outcome".into(), outcome.into()),
        ],
        asked,
        photo: existing.poster.clone(),
        ..Done::default()
    })
}

/// The job field that says which subscription a job created for its requester (note.lua):
/// [`CREATING`] before the create call, then the id, before the owner is set.
const SUBSCRIPTION_CREATED: &str = "sub_created";
const CREATING: &str = "creating";

/// Notes `fields` in the job (note.lua, fenced by this attempt) before a call whose effect a
/// later attempt must know of after a crash. Fails when this attempt no longer owns the job.
pub(super) async fn note(cx: &Context<'_>, fields: &[(&str, String)]) -> Result<(), MpError> {
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
pub(super) async fn noted(
    cx: &Context<'_>,
    id: u64,
    field: &str,
) -> Result<Option<String>, MpError> {
    let full = cx.ledger.job(id).await.map_err(ledger_error)?;
    Ok(full.and_then(|mut j| j.extra.remove(field)))
}

/// A subscription this job created (`name`, `season`, `id`), given to the requester: the reply
/// and the fields.
fn subscribed(
    cx: &Context<'_>,
    job: &Job,
    (name, season, id): (&str, Option<u32>, u64),
    recovered: bool,
) -> Done {
    let r = &cx.render;
    let (reply, outcome) = if recovered {
        (
            r.subscription_verified(job.id, name, season, id),
            "verified_existing",
        )
    } else {
        (r.subscribed(name, season, id), "created")
    };
    let mut fields = vec![
        ("mp_subscription_id".into(), id.to_string()),
        ("mp_outcome".into(), outcome.into()),
    ];
    if let Some(owner) = &job.requester {
        fields.push(("mp_owner".into(), owner.clone()));
    }
    Done {
        reply,
        result: format!("subscription {id} created"),
        fields,
        ..Done::default()
    }
}

/// Makes `owner` the owner of `sub`: in MoviePilot where its update writes the owner (v2),
/// else in oncebot's own record (`owners`), which [`resolve_owners`] reads back.
async fn give(
    cx: &Context<'_>,
    (id, tmdb_id, season): (u64, Option<u64>, Option<u32>),
    owner: &str,
) -> Result<(), MpError> {
    if cx.mp.set_subscription_owner(id, owner).await? {
        return Ok(());
    }
    cx.ledger
        .record_owner(id, tmdb_id, season, owner)
        .await
        .map_err(ledger_error)
}

/// Whether MoviePilot's owner of `sub` is oncebot's service account (any row, with an API key
/// alone: oncebot does not know the name MoviePilot gives it then).
fn service_owned(cx: &Context<'_>, sub: &Subscription) -> bool {
    match cx.mp.service_username() {
        Some(service) => sub.username.as_deref() == Some(service),
        None => true,
    }
}

/// Each of `subs` with its owner as a person sees it: MoviePilot's, except that a row the
/// service account owns and oncebot gave to a requester in its own record (v3) is theirs.
async fn resolve_owners(cx: &Context<'_>, subs: &mut [Subscription]) -> Result<(), MpError> {
    let ask = service_owned_rows(cx, subs);
    if ask.is_empty() || !any_recorded_owner(cx).await? {
        return Ok(());
    }
    fill_recorded_owners(cx, subs, ask).await
}

/// The positions of the rows MoviePilot says the service account owns.
fn service_owned_rows(cx: &Context<'_>, subs: &[Subscription]) -> Vec<usize> {
    (0..subs.len())
        .filter(|&i| service_owned(cx, &subs[i]))
        .collect()
}

/// [`resolve_owners`] once it is known that some owner is recorded: the rows at `ask` (those
/// the service account owns) take their recorded owner.
async fn fill_recorded_owners(
    cx: &Context<'_>,
    subs: &mut [Subscription],
    ask: Vec<usize>,
) -> Result<(), MpError> {
    let keys: Vec<(u64, Option<u64>, Option<u32>)> = ask
        .iter()
        .map(|&i| (subs[i].id, subs[i].tmdb_id, subs[i].season))
        .collect();
    let owners = cx
        .ledger
        .recorded_owners(&keys)
        .await
        .map_err(ledger_error)?;
    for (i, owner) in ask.into_iter().zip(owners) {
        if let Some(owner) = owner {
            subs[i].username = Some(owner);
        }
    }
    Ok(())
}

async fn any_recorded_owner(cx: &Context<'_>) -> Result<bool, MpError> {
    cx.ledger.any_recorded_owner().await.map_err(ledger_error)
}

/// `/subscriptions`: the asker's own (MoviePilot's "my subscriptions", plus the ones oncebot
/// recorded as theirs), every one with owners for `all`, every one for an asker without a name.
async fn list(
    cx: &Context<'_>,
    job: &Job,
    all: bool,
) -> Result<(Vec<Subscription>, Whose), MpError> {
    match job.requester.as_deref() {
        Some(me) if !all => {
            if !any_recorded_owner(cx).await? {
                return Ok((cx.mp.user_subscriptions(me).await?, Whose::Own));
            }
            let mut subs = cx.mp.list_subscriptions().await?;
            let ask = service_owned_rows(cx, &subs);
            fill_recorded_owners(cx, &mut subs, ask).await?;
            subs.retain(|s| s.username.as_deref() == Some(me));
            Ok((subs, Whose::Own))
        }
        _ => {
            let mut subs = cx.mp.list_subscriptions().await?;
            resolve_owners(cx, &mut subs).await?;
            Ok((subs, if all { Whose::Everyone } else { Whose::Unsplit }))
        }
    }
}

/// The requester to give `existing` to, when it is the one this job created and someone else
/// (the service account) still owns it: the job noted its id (`sub_created`), or noted that it
/// was about to create one (a crash or a lost answer between the create and the id's note) and
/// finds it owned by the service account; the media lock kept anyone else from creating it
/// meanwhile. Anyone else's subscription, one found before this job created anything, or one
/// the requester owns already, is left as it is.
async fn owner_to_set<'j>(
    cx: &Context<'_>,
    job: &'j Job,
    existing: &Subscription,
) -> Result<Option<&'j str>, MpError> {
    let Some(requester) = job.requester.as_deref() else {
        return Ok(None);
    };
    if existing.username.as_deref() == Some(requester) {
        return Ok(None);
    }
    let noted = noted(cx, job.id, SUBSCRIPTION_CREATED).await?;
    let noted = noted.as_deref();
    let ours = noted == Some(existing.id.to_string().as_str())
        || (noted == Some(CREATING) && service_owned(cx, existing));
    Ok(ours.then_some(requester))
}

/// The owner of `sub` when that is someone other than the asker (the job's MoviePilot user, or
/// the service account for an asker without one); `None` for the asker's own and for a row that
/// names nobody.
fn someone_elses<'s>(cx: &Context<'_>, job: &Job, sub: &'s Subscription) -> Option<&'s str> {
    let owner = sub.username.as_deref()?;
    let asker = job.requester.as_deref().or(cx.mp.service_username())?;
    (owner != asker).then_some(owner)
}

/// Refuses a `user` another's subscription (MoviePilot's own bot lets anyone cancel anyone's,
/// #5098); for an admin, the words that name its owner (empty for the asker's own).
fn ownership_check(cx: &Context<'_>, job: &Job, sub: &Subscription) -> Result<String, MpError> {
    match someone_elses(cx, job, sub) {
        None => Ok(String::new()),
        Some(owner) if job.role < Role::Admin => Err(MpError::Declined(
            cx.render.not_your_subscription(sub.id, owner),
        )),
        Some(owner) => Ok(cx.render.owned_by(owner)),
    }
}

/// `/unsubscribe <id>`: looks the subscription up in the list (v2.5.6 answers 500 to
/// `GET /api/v1/subscribe/<id>` for a missing id) and asks, naming it, with Confirm / Cancel.
/// Confirm runs `/unsubscribe <id> <media>`, so a later subscription that MoviePilot gives the
/// same id is a different command with buttons of its own. A missing id gets no buttons.
async fn ask_unsubscribe(cx: &Context<'_>, job: &Job, id: u64) -> Result<Done, MpError> {
    let r = &cx.render;
    let mut subs = cx.mp.list_subscriptions().await?;
    resolve_owners(cx, &mut subs).await?;
    let Some(sub) = subs.iter().find(|s| s.id == id) else {
        return Ok(Done::new(
            r.no_such_subscription(id),
            format!("no subscription {id}"),
        ));
    };
    let whose = ownership_check(cx, job, sub)?;
    let media = SubscriptionMedia::of(sub.tmdb_id, sub.season, &sub.name);
    let confirm = run_button(
        job,
        Command::Unsubscribe,
        format!("{id} {}", media.args()),
        cx.buttons.unsubscribe_window,
    );
    Ok(Done {
        reply: r.confirm_unsubscribe(id, &sub.name, sub.season) + &whose,
        result: format!("asked to confirm deleting subscription {id}"),
        fields: vec![("mp_subscription_id".into(), id.to_string())],
        buttons: confirm_or_cancel(cx, job, confirm),
        ..Done::default()
    })
}

/// MoviePilot refused: `failed`, not retried; the user reads `reply`, MoviePilot's own words
/// stay in the job's `error` (`error`) for the admins.
pub(super) fn refused(cx: &Context<'_>, job: &Job, reply: &str, error: String) -> Done {
    Done {
        reply: cx.render.failed(job.id, "permanent", Some(reply)),
        settle: Some(Settle::Failed { error }),
        ..Done::default()
    }
}

/// **Confirm / Cancel** under a question: Confirm does `confirm` (makes the job with the side
/// effect), Cancel nothing; siblings, bound to the asker in this chat.
pub(super) fn confirm_or_cancel(
    cx: &Context<'_>,
    job: &Job,
    confirm: TokenAction,
) -> Option<Buttons> {
    let r = &cx.render;
    let owner = owner(job);
    let reply_to = reply_to(job);
    let mut group = TokenGroup::new(cx.buttons.ttl);
    let yes = group.add(owner, r.confirm_button(), confirm, reply_to);
    let no = group.add(owner, r.cancel_button(), TokenAction::Cancel, reply_to);
    let keyboard = Keyboard::new().row(vec![
        (r.confirm_button().to_string(), yes),
        (r.cancel_button().to_string(), no),
    ]);
    buttons(&group, keyboard)
}

/// The Confirm button's delete: only while `id` still names `media`, and (for a `user`) is
/// theirs. Looking first is also how a crashed delete is verified: gone means done.
async fn unsubscribe(
    cx: &Context<'_>,
    job: &Job,
    id: u64,
    media: &SubscriptionMedia,
    recovered: bool,
) -> Result<Done, MpError> {
    let r = &cx.render;
    let mut subs = cx.mp.list_subscriptions().await?;
    resolve_owners(cx, &mut subs).await?;
    let fields = |outcome: &str| {
        vec![
            ("mp_subscription_id".into(), id.to_string()),
            ("mp_outcome".into(), outcome.to_string()),
        ]
    };
    let Some(sub) = subs.iter().find(|s| s.id == id) else {
        let (reply, outcome) = if recovered {
            (r.unsubscribe_verified(id), "verified_deleted")
        } else {
            (r.subscription_gone(id), "already_gone")
        };
        return Ok(Done {
            fields: fields(outcome),
            ..Done::new(reply, format!("subscription {id} is gone"))
        });
    };
    if SubscriptionMedia::of(sub.tmdb_id, sub.season, &sub.name) != *media {
        return Err(MpError::Declined(r.subscription_replaced(id, &sub.name)));
    }
    let whose = ownership_check(cx, job, sub)?;
    cx.mp.delete_subscription(id).await?;
    if let Err(e) = cx.ledger.forget_owner(id, sub.tmdb_id, sub.season).await {
        tracing::warn!(error = %e, "could not forget the deleted subscription's recorded owner");
    }
    Ok(Done {
        fields: fields("deleted"),
        ..Done::new(
            r.unsubscribed(id, &sub.name, sub.season) + &whose,
            format!("deleted subscription {id}"),
        )
    })
}

async fn status(cx: &Context<'_>, job: &Job, asked: Option<u64>) -> Result<String, MpError> {
    let r = &cx.render;
    let target = match asked {
        Some(id) => cx.ledger.job(id).await.map_err(ledger_error)?,
        None => cx
            .ledger
            .list_jobs(&JobFilter {
                chat_id: Some(job.chat_id),
                limit: 2,
                status: None,
            })
            .await
            .map_err(ledger_error)?
            .into_iter()
            .find(|j| j.id != job.id),
    };
    // A user sees only their own chat's jobs; another chat's job is "not found", not "forbidden",
    // so ids of other chats' jobs leak nothing.
    Ok(match target.filter(|j| j.chat_id == job.chat_id) {
        Some(j) => r.job_status(&j),
        None => r.job_not_found(asked),
    })
}

/// The Subscribe button of search result `i` (0-based) when it has a TMDB id, bound to the
/// user who searched; it runs `/subscribe <args>` (`choose`: that command, `/best` for 洗版)
/// as if typed (see `i18n::subscribe_args`). Siblings, on every page: one tap uses them all.
/// None for a viewer (a button they could not use would only be refused). A plain search's row
/// (`choose` none) also has a solo button that starts a resource search for that match (it
/// uses nothing else up).
fn subscribe_row(
    cx: &Context<'_>,
    job: &Job,
    group: &mut TokenGroup,
    (i, item): (usize, &MediaItem),
    choose: Option<Command>,
) -> Vec<(String, String)> {
    let command = choose.unwrap_or(Command::Subscribe);
    if job.role < command.least_role("") {
        return Vec::new();
    }
    let Some(args) = i18n::subscribe_args(item) else {
        return Vec::new();
    };
    let owner = owner(job);
    let label = match command {
        Command::Best => cx.render.best_button(i + 1, item),
        _ => cx.render.subscribe_button(i + 1, item),
    };
    let action = run_button(job, command, args, cx.buttons.window_of(command));
    let data = group.add(owner, &label, action, reply_to(job));
    let mut row = vec![(label, data)];
    if choose.is_none()
        && let Some(button) =
            super::releases::release_search_button(cx, job, group, i + 1, item, true)
    {
        row.push(button);
    }
    row
}

/// `/subscribe tmdb:<id> tv` (or `/best`'s, `command`): the series' seasons as buttons (four
/// to a row) and a Cancel.
async fn choose_season(
    cx: &Context<'_>,
    job: &Job,
    tmdb_id: u64,
    command: Command,
) -> Result<Done, MpError> {
    let r = &cx.render;
    let media = cx
        .mp
        .media_detail(tmdb_id, MediaKind::Tv)
        .await?
        .ok_or_else(|| MpError::Declined(r.media_not_found(tmdb_id)))?;
    let seasons = if media.season_numbers.is_empty() {
        // MoviePilot did not say: season 1 exists for any series.
        vec![1]
    } else {
        media.season_numbers.clone()
    };
    let owner = owner(job);
    let reply_to = reply_to(job);
    let mut group = TokenGroup::new(cx.buttons.ttl);
    let mut keyboard = Keyboard::new();
    // Telegram allows 100 buttons; no series has anywhere near that many seasons in MoviePilot.
    for row in seasons.chunks(4).take(20) {
        let buttons = row
            .iter()
            .map(|&n| {
                let label = r.season_button(n);
                let action = run_button(
                    job,
                    command,
                    format!("tmdb:{tmdb_id} S{n}"),
                    cx.buttons.window_of(command),
                );
                let data = group.add(owner, &label, action, reply_to);
                (label, data)
            })
            .collect();
        keyboard = keyboard.row(buttons);
    }
    let cancel = group.add(owner, r.cancel_button(), TokenAction::Cancel, reply_to);
    keyboard = keyboard.row(vec![(r.cancel_button().to_string(), cancel)]);
    Ok(Done {
        reply: r.choose_season(&media.title, seasons.len()),
        result: format!("{} seasons offered", seasons.len()),
        fields: vec![],
        buttons: buttons(&group, keyboard),
        ..Done::default()
    })
}

/// The keyboard and its tokens; `None` for a group without buttons.
pub(super) fn buttons(group: &TokenGroup, keyboard: Keyboard) -> Option<Buttons> {
    (!group.tokens.is_empty()).then(|| Buttons {
        markup: keyboard.to_json(),
        tokens: group.spec().to_string(),
    })
}

/// The user's message a job answers (a job made by a button answers the command that showed it).
/// A ledger failure inside a job: Redis will answer again, so the attempt is retried.
pub(super) fn ledger_error(e: LedgerError) -> MpError {
    MpError::Transient(e.to_string())
}

/// The buttons under a job's answer are its asker's, in the chat it was asked in.
pub(super) fn owner(job: &Job) -> Owner {
    Owner::User {
        chat_id: job.chat_id,
        user_id: job.user_id,
    }
}

pub(super) fn reply_to(job: &Job) -> Option<i64> {
    job.extra
        .get(crate::vocabulary::job_field::MESSAGE_ID)
        .and_then(|m| m.parse().ok())
}
