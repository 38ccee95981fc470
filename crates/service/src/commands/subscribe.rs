//! `/subscribe` and `/best` (洗版, a subscription with MoviePilot's `best_version`): a title is
//! searched and its matches offered (`search`), a series without a season offers its seasons,
//! and `tmdb:<id> [S<n>]` subscribes once.
//!
//! Creating a subscription always looks first (`find_subscription`): MoviePilot answers a repeat
//! with the existing id but sends its notifications again, so oncebot never sends a repeat. The
//! same look is how a crashed subscribe is verified, so recovery and first run share one path.

use super::args::{ANYWAY, SubscriptionMedia, non_empty, parse_series, parse_tmdb, without_anyway};
use super::owners::service_owned;
use super::{Command, Spec, run_button};
use crate::asked::AskedMedia;
use crate::i18n;
use crate::ledger::{Job, TokenAction, TokenGroup};
use crate::moviepilot::{
    Library, LibraryMedia, MediaItem, MediaKind, MpError, NewSubscription, Subscription,
};
use crate::telegram::keyboard::Keyboard;
use crate::vocabulary::MpOutcome;
use crate::worker::context::{
    Context, Done, Followed, ask_before_call, buttons, ledger_error, note, noted, one_button,
    owner, reply_to,
};

pub(super) const SUBSCRIBE: Spec = Spec {
    name: "subscribe",
    about: &i18n::SUBSCRIBE,
    check: Some(check),
    run: Some(|cx, job, recovered| Box::pin(run(cx, job, false, recovered))),
    house: None,
};

pub(super) const BEST: Spec = Spec {
    name: "best",
    about: &i18n::BEST,
    check: Some(check),
    run: Some(|cx, job, recovered| Box::pin(run(cx, job, true, recovered))),
    house: None,
};

/// What a subscription's arguments ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Subscribe {
    /// A title: search, then let the user choose what to subscribe to.
    Title(String),
    /// A series whose season is not chosen yet (`tmdb:<id> tv`): its seasons offered as
    /// buttons. Changes nothing.
    ChooseSeason(u64),
    /// A movie (`season: None`) or one season of a series.
    Tmdb(Ask),
}

/// Typed arguments: a title, or a well-formed `tmdb:` reference (`tmdb:<id> tv` too).
fn check(args: &str) -> Option<String> {
    let ok = !args.is_empty()
        && args.chars().count() <= 200
        && (parse_series(args).is_some() || !matches!(parse_tmdb(args), Some(Err(()))));
    ok.then(|| args.to_string())
}

/// A job's arguments (`best`: `/best`'s, which never stop for the library: 洗版 is for media
/// one has already, as MoviePilot's own bot does it, and no "anyway" button makes one).
fn parse(args: &str, best: bool) -> Option<Subscribe> {
    if let Some(tmdb_id) = parse_series(args) {
        return Some(Subscribe::ChooseSeason(tmdb_id));
    }
    let (reference, check) = match best {
        true => (args, false),
        false => without_anyway(args),
    };
    Some(match parse_tmdb(reference) {
        Some(Ok((tmdb_id, season))) => Subscribe::Tmdb(Ask::new(tmdb_id, season, check, best)),
        Some(Err(())) => return None,
        None => Subscribe::Title(non_empty(args)?),
    })
}

async fn run(cx: &Context<'_>, job: &Job, best: bool, recovered: bool) -> Result<Done, MpError> {
    let verb = super::search::verb(best);
    match parse(job.args.trim(), best).ok_or_else(|| super::not_runnable(job))? {
        Subscribe::Title(title) => super::search::search(cx, job, &title, Some(verb)).await,
        Subscribe::ChooseSeason(tmdb_id) => choose_season(cx, job, tmdb_id, verb).await,
        Subscribe::Tmdb(ask) => subscribe(cx, job, ask, recovered).await,
    }
}

/// A subscription to make: `/subscribe tmdb:<id> [S<n>]` or `/best`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    let (media, kind) = media_to_subscribe(cx, tmdb_id, season).await?;
    let library = match check {
        true => super::library::check(cx, &library_media(&media, kind, tmdb_id, season)).await,
        false => Library::Unknown,
    };
    if library.is_present() {
        return Ok(in_library(cx, job, &media.title, (tmdb_id, season)));
    }
    if super::requests::asks(job, job_command(best)) {
        return request(cx, job, ask, (&media, &library)).await;
    }
    if let Some(over) = super::requests::over_quota(cx, job).await? {
        return Ok(over);
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
    let id = create(cx, job, &new, asked.as_ref()).await?;
    let mut done = subscribed(cx, job, (&media.title, season, id), false);
    let movie = kind == MediaKind::Movie;
    done.fields.push(follow(
        cx,
        (id, tmdb_id, season, movie),
        &media.title,
        asked.as_ref(),
    ));
    let done = Done {
        reply: done.reply.clone() + &r.subscribed_missing(&library),
        asked,
        photo: media.poster.clone(),
        ..done
    };
    Ok(best_noted(cx, best, done))
}

/// Season `n`'s button under a season choice: the subscription's job as if typed, or for a
/// requester the request it asks for (issue 44).
fn season_button(
    cx: &Context<'_>,
    job: &Job,
    group: &mut TokenGroup,
    (media, tmdb_id, n): (&MediaItem, u64, u32),
    command: Command,
) -> (String, String) {
    let r = &cx.render;
    let label = r.season_button(n);
    let action = run_button(
        job,
        command,
        format!("tmdb:{tmdb_id} S{n}"),
        command.window(&cx.settings.commands),
    );
    let asking = match (&action, super::requests::asks(job, command)) {
        (TokenAction::Run(spec), true) => {
            let texts = r.texts();
            let named = texts.asked_media(&media.title, media.year.as_deref(), Some(n));
            let what = texts.asking_subscription(&named, command == Command::Best, "");
            Some(super::requests::asking(
                cx,
                job,
                spec,
                what,
                media.poster.as_deref(),
            ))
        }
        _ => None,
    };
    let data = group.add(owner(job), &label, action, reply_to(job));
    if let Some(asking) = asking {
        group.asking(asking);
    }
    (label, data)
}

/// The command of a subscription job: `/best` or `/subscribe`.
fn job_command(best: bool) -> Command {
    match best {
        true => Command::Best,
        false => Command::Subscribe,
    }
}

/// A requester's subscription, past the look and the library check: a request an admin
/// decides (issue 44), whose approval makes this subscription's job.
async fn request(
    cx: &Context<'_>,
    job: &Job,
    ask: Ask,
    (media, library): (&MediaItem, &Library),
) -> Result<Done, MpError> {
    let command = job_command(ask.best);
    let target = SubscriptionMedia::Tmdb {
        tmdb_id: ask.tmdb_id,
        season: ask.season,
    };
    let args = match ask.check {
        true => target.args(),
        false if ask.best => target.args(),
        false => format!("{} {}", target.args(), ANYWAY),
    };
    let spec = command.button(
        owner(job),
        job.requester.as_deref(),
        args,
        command.window(&cx.settings.commands),
    );
    let texts = cx.render.texts();
    let name = texts.asked_media(&media.title, media.year.as_deref(), ask.season);
    let line = cx.render.library_line(library).unwrap_or_default();
    let what = texts.asking_subscription(&name, ask.best, &line);
    super::requests::ask(cx, job, spec, (what, media.poster.as_deref())).await
}

/// MoviePilot's detail of the media a subscription is asked for (a series when a season is
/// given), with a season it does not have refused.
async fn media_to_subscribe(
    cx: &Context<'_>,
    tmdb_id: u64,
    season: Option<u32>,
) -> Result<(MediaItem, MediaKind), MpError> {
    let r = &cx.render;
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
    Ok((media, kind))
}

/// Creates the subscription, with the job's notes around the call that let an attempt after a
/// crash give what it made to the requester; its id.
async fn create(
    cx: &Context<'_>,
    job: &Job,
    new: &NewSubscription,
    asked: Option<&AskedMedia>,
) -> Result<u64, MpError> {
    if job.requester.is_some() {
        // Before the create: whatever the service account owns for this media after a crash
        // from here on is this job's to give to the requester.
        note(cx, &[(SUBSCRIPTION_CREATED, CREATING.into())]).await?;
    }
    ask_before_call(cx, job, asked).await;
    let id = cx.mp.create_subscription(new).await?;
    if let Some(owner) = job.requester.as_deref() {
        // MoviePilot made the service account the owner: note the row as this job's, so an
        // attempt after a crash here gives it to the requester instead of calling it someone
        // else's existing subscription, then give it.
        note(cx, &[(SUBSCRIPTION_CREATED, id.to_string())]).await?;
        crate::crash_point!("worker.after_subscribe_create");
        give(cx, (id, Some(new.tmdb_id), new.season), owner).await?;
    }
    Ok(id)
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
            MpOutcome::PlainExists.field(),
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
        format!("{} {}", media.args(), ANYWAY),
        Command::Subscribe.window(&cx.settings.commands),
    );
    let buttons = match (&anyway, super::requests::asks(job, Command::Subscribe)) {
        // A requester's "anyway" asks an admin (its card says the library has it).
        (TokenAction::Run(spec), true) => {
            let texts = r.texts();
            let line = r.library_line(&Library::Present).unwrap_or_default();
            let named = texts.asked_media(name, None, season);
            let what = texts.asking_subscription(&named, false, &line);
            let asking = super::requests::asking(cx, job, spec, what, None);
            let mut group = TokenGroup::new(cx.button_ttl());
            let label = r.subscribe_anyway_button();
            let data = group.add(owner(job), label, anyway.clone(), reply_to(job));
            group.asking(asking);
            buttons(&group, Keyboard::new().row(vec![(label.to_string(), data)]))
        }
        _ => one_button(cx, job, r.subscribe_anyway_button(), anyway),
    };
    Done {
        reply: r.in_library_not_subscribed(name, season),
        result: "in the library; not subscribed".into(),
        fields: vec![MpOutcome::InLibrary.field()],
        buttons,
        ..Done::default()
    }
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
    // This job's own subscription (made before a crash, or given to its requester now) is
    // followed by its card; one that was there before is not this job's to follow.
    let own = |mut done: Done| {
        let movie = existing.kind == Some(MediaKind::Movie);
        if let Some(tmdb_id) = existing.tmdb_id {
            let sub = (existing.id, tmdb_id, season, movie);
            done.fields
                .push(follow(cx, sub, &existing.name, asked.as_ref()));
        }
        done
    };
    if let Some(owner) = owner_to_set(cx, job, existing).await? {
        give(cx, (existing.id, existing.tmdb_id, existing.season), owner).await?;
        return Ok(Done {
            asked: asked.clone(),
            photo: existing.poster.clone(),
            ..own(subscribed(
                cx,
                job,
                (&existing.name, season, existing.id),
                recovered,
            ))
        });
    }
    let (reply, outcome) = if recovered {
        (
            r.subscription_verified(job.id, &existing.name, season, existing.id),
            MpOutcome::VerifiedExisting,
        )
    } else {
        (
            r.already_subscribed(&existing.name, season, existing.id),
            MpOutcome::AlreadyExisted,
        )
    };
    let done = Done {
        reply,
        result: format!("subscription {} exists", existing.id),
        fields: vec![
            ("mp_subscription_id".into(), existing.id.to_string()),
            outcome.field(),
        ],
        asked: asked.clone(),
        photo: existing.poster.clone(),
        ..Done::default()
    };
    Ok(if recovered { own(done) } else { done })
}

/// The job field that says which subscription a job created for its requester (note.lua):
/// [`CREATING`] before the create call, then the id, before the owner is set.
const SUBSCRIPTION_CREATED: &str = "sub_created";

const CREATING: &str = "creating";

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
            MpOutcome::VerifiedExisting,
        )
    } else {
        (r.subscribed(name, season, id), MpOutcome::Created)
    };
    let mut fields = vec![
        ("mp_subscription_id".into(), id.to_string()),
        outcome.field(),
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

/// The `follow` field of subscription `id` (issue 45): its card shows `name` (the media as
/// MoviePilot names it, and the season), and follows the subscription's id, TMDB id and season.
fn follow(
    cx: &Context<'_>,
    (id, tmdb_id, season, movie): (u64, u64, Option<u32>, bool),
    name: &str,
    asked: Option<&AskedMedia>,
) -> (String, String) {
    let title = match (asked, season) {
        (Some(m), Some(s)) => format!("{} S{s:02}", m.title_year),
        (Some(m), None) => m.title_year.clone(),
        (None, Some(s)) => format!("{name} S{s:02}"),
        (None, None) => name.to_string(),
    };
    let followed = Followed::Subscription {
        id,
        tmdb_id,
        season,
        movie,
    };
    cx.follow_field(followed, &title, asked)
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
    let mut group = TokenGroup::new(cx.button_ttl());
    let mut keyboard = Keyboard::new();
    // Telegram allows 100 buttons; no series has anywhere near that many seasons in MoviePilot.
    for row in seasons.chunks(4).take(20) {
        let buttons = row
            .iter()
            .map(|&n| season_button(cx, job, &mut group, (&media, tmdb_id, n), command))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tmdb(tmdb_id: u64, season: Option<u32>, check: bool, best: bool) -> Option<Subscribe> {
        Some(Subscribe::Tmdb(Ask::new(tmdb_id, season, check, best)))
    }

    #[test]
    fn tmdb_references_with_and_without_a_season() {
        assert_eq!(
            parse("tmdb:108545 S1", false),
            tmdb(108545, Some(1), true, false)
        );
        assert_eq!(parse("TMDB:438631", false), tmdb(438631, None, true, false));
        assert_eq!(
            parse("tmdb:63639 TV", false),
            Some(Subscribe::ChooseSeason(63639))
        );
        assert_eq!(parse("tmdb:63639 tv S1", false), None);
        assert_eq!(parse("tmdb:abc", false), None);
        assert_eq!(parse("tmdb:1 season2", false), None);
        assert_eq!(parse("三体", false), Some(Subscribe::Title("三体".into())));
    }

    #[test]
    fn best_is_a_best_version_subscription_without_the_library_stop() {
        assert_eq!(
            parse("tmdb:108545 S1", true),
            tmdb(108545, Some(1), false, true)
        );
        assert_eq!(
            parse("tmdb:63639 tv", true),
            Some(Subscribe::ChooseSeason(63639))
        );
        assert_eq!(parse("三体", true), Some(Subscribe::Title("三体".into())));
        assert_eq!(parse("tmdb:1 S1 anyway", true), None);
        assert_eq!(parse("", true), None);
    }

    #[test]
    fn an_anyway_button_runs_the_same_subscription_without_the_library_stop() {
        assert_eq!(
            parse("tmdb:108545 S1 anyway", false),
            tmdb(108545, Some(1), false, false)
        );
        // Typed, it is a bad argument: only the buttons make it.
        assert!(matches!(
            crate::commands::parse(
                "/subscribe tmdb:108545 S1 anyway",
                crate::commands::ChatKind::Private,
                ""
            ),
            crate::commands::Parsed::BadArgs { .. }
        ));
    }
}
