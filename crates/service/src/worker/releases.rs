//! The release flow: `/download <title>` (matches), the resource search (a stored list with
//! `下载 k` buttons), and one release's download, verified before it is ever sent again.
//!
//! A download's verification, in one place (`moviepilot-download-flow.md` §3, §7):
//! - MoviePilot has no idempotency and no lookup by hash, so before the add the attempt notes
//!   in the job (note.lua, under its fence) the release (site, title, subtitle), the ids of the
//!   matching manual rows of the download history that exist already, and when it began.
//! - Whoever runs the job after that (a crash, an uncertain answer) first reads the whole
//!   history for a matching row that is not one of those ids; a magnet's hash is also looked
//!   for among the active downloads. Found: `succeeded`, `mp_outcome = verified_existing`.
//! - Not found: it waits until `moviepilot.download_settle_secs` after that attempt began (a
//!   request whose caller died still runs to its end at MoviePilot), looks again, and only then
//!   sends the add again. What cannot be decided (the list expired, a magnet refused after an
//!   earlier send, too many sends) goes to `needs_review`.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use super::execute::{Context, Done, Settle, ledger_error, owner, reply_to, run_button};
use super::pages::{Nav, Paged, page_count, page_range};
use crate::asked::AskedMedia;
use crate::commands::Command;
use crate::ledger::{Job, Solo, TokenAction, TokenGroup};
use crate::moviepilot::{
    LIBRARY_TIMEOUT, Library, LibraryMedia, MediaItem, MediaKind, MpError, Release,
    ReleaseIdentity, ReleaseList,
};
use crate::telegram::keyboard::Keyboard;

/// The most payload a stored list may hold: the bytes of the values written (media_info once,
/// each release's torrent_info, every page's text and keyboard), not `MEMORY USAGE`, which adds
/// field names, the hashes' entries and the allocator's rounding; releases at the end of the
/// list are left out to stay under it. About 40 of the catalogue's releases (a torrent_info is
/// about 900 bytes, its line and button about 300 more), so `commands.resources_shown`'s
/// default of 30 fits; one list per search and user, for `commands.resources_window_secs`.
pub const LIST_BUDGET_BYTES: usize = 48 * 1024;

/// Sends of one download after which a still-unverified add is held for a person.
const MAX_SENDS: u64 = 3;

/// How the release flow behaves (from `commands.*` and `moviepilot.*`).
#[derive(Debug, Clone)]
pub struct ReleaseSettings {
    /// `commands.resources_shown`.
    pub shown: usize,
    /// `commands.resources_window_secs`: a list's and its buttons' lifetime.
    pub list_ttl: Duration,
    /// The resource search's duplicate window (the same setting).
    pub search_window: Duration,
    /// `commands.download_window_secs`.
    pub download_window: Duration,
    /// `moviepilot.download_settle_secs`.
    pub settle: Duration,
}

/// `/download <title>`: media matches, each with a button that starts a resource search. The
/// buttons are solo: searching one match leaves the others usable.
pub async fn matches(cx: &Context<'_>, job: &Job, title: &str) -> Result<Done, MpError> {
    let items = cx.mp.search_media(title).await?;
    let library = super::library::check_items(cx, &items).await;
    let text = |page, kept| {
        cx.render
            .download_matches(title, (&items, &library), page, kept)
    };
    let row = |group: &mut TokenGroup, i: usize| {
        release_search_button(cx, job, group, i + 1, &items[i], false)
            .into_iter()
            .collect()
    };
    let paged = super::pages::matches(cx, job, items.len(), text, row).await?;
    Ok(Done {
        reply: paged.first_text(),
        result: format!("{} results", items.len()),
        buttons: paged.buttons(),
        photo: super::execute::first_poster(&items),
        ..Done::default()
    })
}

/// A solo button that runs the resource search for `item`, or `None` without a TMDB id.
/// `short`: the label beside a `/search` match's Subscribe button.
pub fn release_search_button(
    cx: &Context<'_>,
    job: &Job,
    group: &mut TokenGroup,
    n: usize,
    item: &MediaItem,
    short: bool,
) -> Option<(String, String)> {
    let args = crate::i18n::release_args(item)?;
    let label = if short {
        cx.render.search_download_button(n)
    } else {
        cx.render.find_releases_button(n, item)
    };
    let action = run_button(job, Command::Releases, args, cx.releases.search_window);
    let data = group.add_solo(owner(job), &label, action, reply_to(job), Solo::default());
    Some((label, data))
}

/// A resource search: the list (at most `commands.resources_shown`, in MoviePilot's order),
/// stored with its `下载 k` buttons for `commands.resources_window_secs`. Nothing found is a
/// result (the job succeeds and its window absorbs repeats); an answer cut at
/// `moviepilot.max_body_bytes` is listed from what was read, and the list says so.
///
/// Before the sites are asked, the library: a media it holds already stops the search with one
/// line and a "Download anyway" button (`check`; the button's job runs with `check` false and
/// still shows what the library holds in the list's header).
pub async fn search(
    cx: &Context<'_>,
    job: &Job,
    (tmdb_id, kind, season): (u64, MediaKind, Option<u32>),
    check: bool,
) -> Result<Done, MpError> {
    let r = &cx.render;
    let (name, library) = library_first(cx, (tmdb_id, kind, season)).await;
    if check && library.is_present() {
        return Ok(in_library(cx, job, &name, (tmdb_id, kind, season)));
    }
    let found = match cx
        .mp
        .search_releases(tmdb_id, kind, season, cx.releases.shown)
        .await
    {
        Ok(found) => found,
        // The sites were asked; a lost answer is not asked again by itself.
        Err(MpError::Uncertain(reason)) => {
            tracing::warn!(reason = %reason, "resource search lost its answer; not retried");
            return Ok(Done {
                reply: r.failed(job.id, "permanent", Some(&r.release_search_lost())),
                result: String::new(),
                settle: Some(Settle::Failed {
                    error: format!("resource search not answered: {reason}"),
                }),
                ..Done::default()
            });
        }
        Err(e) => return Err(e),
    };
    let media = media_name(&found, season).unwrap_or(name);
    if found.releases.is_empty() {
        return Ok(Done {
            reply: r.release_list(&media, (&[], 1), (0, 0, false), &library),
            result: "0 releases".into(),
            ..Done::default()
        });
    }
    store_list(cx, job, (&media, &library), &found).await
}

/// The media's name (MoviePilot's title and year, else `tmdb:<id>`) and what the library
/// holds of it. The title is read from MoviePilot within the library check's own timeout, as
/// the media servers look a media up by its name; without it the check goes by the id alone.
async fn library_first(
    cx: &Context<'_>,
    (tmdb_id, kind, season): (u64, MediaKind, Option<u32>),
) -> (String, Library) {
    let detail = tokio::time::timeout(LIBRARY_TIMEOUT, cx.mp.media_detail(tmdb_id, kind)).await;
    let item = match detail {
        Ok(Ok(item)) => item,
        _ => None,
    };
    let (title, year) = item.map(|i| (i.title, i.year)).unwrap_or_default();
    let mut name = match (&year, title.is_empty()) {
        (_, true) => format!("tmdb:{tmdb_id}"),
        (Some(y), false) if !y.is_empty() => format!("{title} ({y})"),
        _ => title.clone(),
    };
    if let Some(s) = season {
        name.push_str(&format!(" S{s:02}"));
    }
    let media = LibraryMedia {
        tmdb_id,
        kind,
        season,
        title,
        year,
    };
    (name, super::library::check(cx, &media).await)
}

/// No resource search made: the library has the media. One line and a "Download anyway"
/// button that runs the same search without stopping (its own job and duplicate key).
fn in_library(
    cx: &Context<'_>,
    job: &Job,
    name: &str,
    (tmdb_id, kind, season): (u64, MediaKind, Option<u32>),
) -> Done {
    let r = &cx.render;
    let target = match (kind, season) {
        (MediaKind::Movie, _) => format!("tmdb:{tmdb_id}"),
        (MediaKind::Tv, Some(n)) => format!("tmdb:{tmdb_id} S{n}"),
        (MediaKind::Tv, None) => format!("tmdb:{tmdb_id} tv"),
    };
    let anyway = run_button(
        job,
        Command::Releases,
        format!("{target} {}", crate::commands::ANYWAY),
        cx.releases.search_window,
    );
    Done {
        reply: r.in_library_not_searched(name),
        result: "in the library; sites not searched".into(),
        fields: vec![("mp_outcome".into(), "in_library".into())],
        buttons: super::execute::one_button(cx, job, r.download_anyway_button(), anyway),
        ..Done::default()
    }
}

/// Stores the list, paged, with as many of the releases as fit in [`LIST_BUDGET_BYTES`] (and
/// `commands.resources_shown`), and answers its first page, with a Download button per release.
async fn store_list(
    cx: &Context<'_>,
    job: &Job,
    (media, library): (&str, &Library),
    found: &ReleaseList,
) -> Result<Done, MpError> {
    let total = found.total;
    let infos: Vec<Value> = found
        .releases
        .iter()
        .take(cx.releases.shown)
        .map(|r| r.torrent_info.0.clone())
        .collect();
    let sizes: Vec<usize> = infos.iter().map(|v| v.to_string().len()).collect();
    let media_bytes = found.media_info.0.to_string().len();
    // The releases alone already set an upper bound; the pages' bytes are fitted below it.
    let mut kept = infos.len();
    while kept > 1 && media_bytes + sizes[..kept].iter().sum::<usize>() > LIST_BUDGET_BYTES {
        kept -= 1;
    }
    loop {
        let shown = &found.releases[..kept];
        let paged = release_pages(cx, job, (media, library), shown, (total, found.cut));
        let bytes = media_bytes + sizes[..kept].iter().sum::<usize>() + paged.bytes();
        if bytes > LIST_BUDGET_BYTES && kept > 1 {
            kept -= 1;
            continue;
        }
        if bytes > LIST_BUDGET_BYTES {
            return Err(MpError::Permanent(format!(
                "MoviePilot's answer for this media is too large to keep ({bytes} bytes for one release)"
            )));
        }
        let releases = Some((&found.media_info.0, &infos[..kept]));
        cx.ledger
            .store_list(job.id, cx.releases.list_ttl, &paged.pages, releases)
            .await
            .map_err(ledger_error)?;
        let read = if found.cut { " (list cut)" } else { "" };
        return Ok(Done {
            reply: paged.first_text(),
            result: format!("{total} releases{read}, {kept} kept"),
            fields: vec![("releases_shown".into(), kept.to_string())],
            buttons: paged.buttons(),
            photo: found.poster(),
            ..Done::default()
        });
    }
}

/// The media's name for the list's header: the title and year of the search's answer (`None`
/// when it names none, as an empty one does).
fn media_name(found: &ReleaseList, season: Option<u32>) -> Option<String> {
    let info = &found.media_info.0;
    let title = info
        .get("title")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())?;
    let mut name = match info
        .get("year")
        .and_then(Value::as_str)
        .filter(|y| !y.is_empty())
    {
        Some(year) => format!("{title} ({year})"),
        None => title.to_string(),
    };
    if let Some(s) = season {
        name.push_str(&format!(" S{s:02}"));
    }
    Some(name)
}

/// The list's pages: each page's text and keyboard (its `下载 k` buttons, numbered for the
/// whole list, three to a row, then ◀ / ▶), and the tokens behind them all. A `下载 k` button
/// names release k of the stored list and the page it is on (for its `✓`).
fn release_pages(
    cx: &Context<'_>,
    job: &Job,
    (media, library): (&str, &Library),
    shown: &[Release],
    (total, cut): (usize, bool),
) -> Paged {
    let r = &cx.render;
    let mut group = TokenGroup::new(cx.releases.list_ttl);
    let count = page_count(shown.len());
    let nav = Nav::new(&mut group, owner(job), job.id, count, r);
    let auto = super::auto::args(job);
    let mut pages = Vec::with_capacity(count);
    for page in 1..=count {
        let range = page_range(page, shown.len());
        let mut keyboard = Keyboard::new();
        let mut row = Vec::new();
        for i in range.clone() {
            row.push(release_button(cx, job, &mut group, &shown[i], i + 1, page));
            if row.len() == 3 {
                keyboard = keyboard.row(std::mem::take(&mut row));
            }
        }
        keyboard = keyboard.row(row);
        if let Some(auto) = &auto {
            keyboard = keyboard.row(vec![auto_button(cx, job, &mut group, auto, page)]);
        }
        keyboard = nav.under(keyboard, page, r);
        let text = r.release_list(
            media,
            (&shown[range.clone()], range.start + 1),
            (shown.len(), total, cut),
            library,
        );
        pages.push((text, keyboard.to_json()));
    }
    Paged { pages, group }
}

/// The solo `下载 n` button of release `n` (1-based, in the whole list), on page `page`.
fn release_button(
    cx: &Context<'_>,
    job: &Job,
    group: &mut TokenGroup,
    release: &Release,
    n: usize,
    page: usize,
) -> (String, String) {
    let r = &cx.render;
    let label = r.release_button(n, false);
    let id = release.identity();
    let action = TokenAction::Run(Command::Grab.button_keyed(
        owner(job),
        job.requester.as_deref(),
        format!("{} {n}", job.id),
        Some(&grab_key_args(&id)),
        cx.releases.download_window,
    ));
    let solo = Solo {
        list: Some(job.id),
        used_label: r.release_button(n, true),
        page: Some(page),
    };
    let data = group.add_solo(owner(job), &label, action, reply_to(job), solo);
    (label, data)
}

/// What a download's business key digests instead of its arguments: the release (site,
/// title, subtitle), so it is one job whichever list or button it came from (the ⚡ Auto job's
/// download takes the same key, `worker::auto`).
pub(super) fn grab_key_args(id: &ReleaseIdentity) -> String {
    format!("{}\n{}\n{}", id.site, id.title, id.description)
}

/// The ⚡ Auto button of page `page` (a token per page, each marked used on its own page; they
/// share one business key, so a second tap on any page is the first one's duplicate).
fn auto_button(
    cx: &Context<'_>,
    job: &Job,
    group: &mut TokenGroup,
    args: &str,
    page: usize,
) -> (String, String) {
    let r = &cx.render;
    let label = r.auto_button(false);
    let action = run_button(
        job,
        Command::Auto,
        args.to_string(),
        cx.releases.download_window,
    );
    let solo = Solo {
        list: Some(job.id),
        used_label: r.auto_button(true),
        page: Some(page),
    };
    let data = group.add_solo(owner(job), &label, action, reply_to(job), solo);
    (label, data)
}

/// What an earlier attempt of this download noted before its add.
#[derive(Debug, Default)]
struct Noted {
    identity: Option<ReleaseIdentity>,
    before: BTreeSet<u64>,
    began_ms: Option<u64>,
    magnet: Option<String>,
    sends: u64,
}

impl Noted {
    /// What the job's earlier attempts noted (the claim hands over only the fields a worker
    /// always needs; the notes are read here).
    async fn of(cx: &Context<'_>, job: &Job) -> Result<Noted, MpError> {
        let full = cx.ledger.job(job.id).await.map_err(ledger_error)?;
        Ok(Noted::read(full.as_ref().unwrap_or(job)))
    }

    fn read(job: &Job) -> Noted {
        let field = |name: &str| job.extra.get(name).cloned().unwrap_or_default();
        let identity = job
            .extra
            .contains_key("grab_site")
            .then(|| ReleaseIdentity {
                site: field("grab_site"),
                title: field("grab_title"),
                description: field("grab_description"),
            });
        Noted {
            identity,
            before: field("grab_before")
                .split(',')
                .filter_map(|id| id.trim().parse().ok())
                .collect(),
            began_ms: field("grab_began_ms").parse().ok(),
            magnet: Some(field("grab_magnet")).filter(|m| !m.is_empty()),
            sends: field("grab_sends").parse().unwrap_or(0),
        }
    }
}

/// The release `下载 1` of list `list` downloads, as the ⚡ Auto job names it for its business
/// key: from the stored list, or (after it expired) from what an earlier attempt of `job`
/// noted before its add; `None` when neither has it.
pub(super) async fn best_identity(
    cx: &Context<'_>,
    job: &Job,
    list: u64,
) -> Result<Option<ReleaseIdentity>, MpError> {
    let stored = cx.ledger.releases(list).await.map_err(ledger_error)?;
    let release = stored
        .and_then(|l| l.releases.into_iter().next())
        .and_then(Release::from_torrent_info);
    match release {
        Some(release) => Ok(Some(release.identity())),
        None => Ok(Noted::of(cx, job).await?.identity),
    }
}

/// Downloads release `index` of list `list`, once (see the module's doc): an earlier attempt's
/// add is looked for first, then the intent is noted, then the add is sent.
pub async fn grab(cx: &Context<'_>, job: &Job, list: u64, index: usize) -> Result<Done, MpError> {
    let r = &cx.render;
    let noted = Noted::of(cx, job).await?;
    let stored = cx.ledger.releases(list).await.map_err(ledger_error)?;
    let release = stored
        .as_ref()
        .and_then(|l| l.releases.get(index - 1))
        .cloned()
        .and_then(Release::from_torrent_info);
    let Some(identity) = release
        .as_ref()
        .map(Release::identity)
        .or_else(|| noted.identity.clone())
    else {
        return Err(MpError::Permanent(r.release_list_expired()));
    };
    let magnet = release
        .as_ref()
        .and_then(|rel| rel.magnet_hash.clone())
        .or_else(|| noted.magnet.clone());
    let asked = stored.as_ref().and_then(|l| asked_media(&l.media_info));
    let started = |hash: &str, outcome: &str| Done {
        asked: asked.clone(),
        ..started(cx, &identity, hash, outcome)
    };
    let undecided =
        |error: String| hold(r.download_undecided(&identity.title, &identity.site), error);

    if let Some(began) = noted.began_ms {
        // An earlier attempt may have sent the add: look before anything is sent again.
        if let Some(hash) = look_again(cx, &identity, &noted, magnet.as_deref(), began).await? {
            return Ok(started(&hash, "verified_existing"));
        }
        if noted.sends >= MAX_SENDS {
            return Ok(undecided(format!(
                "sent {} times and never seen in MoviePilot's download history",
                noted.sends
            )));
        }
        tracing::warn!("download not in MoviePilot's history after settling; sending it again");
    }

    let (Some(stored), Some(release)) = (stored, release) else {
        if noted.began_ms.is_some() {
            return Ok(undecided(
                "the release list expired before the download could be verified or sent again"
                    .into(),
            ));
        }
        return Err(MpError::Permanent(r.release_list_expired()));
    };
    let sends = noted.sends + 1;
    note_intent(cx, &identity, magnet.as_deref(), sends).await?;
    super::execute::ask_before_call(cx, job, asked.as_ref()).await;
    crate::crash_point!("worker.before_download");
    let downloader = release.site_downloader.as_deref();
    match cx
        .mp
        .add_download(&stored.media_info, &release.torrent_info.0, downloader)
        .await
    {
        Ok(hash) => Ok(started(&hash, "added")),
        // qBittorrent refuses a magnet it already has: after an earlier send that may have
        // reached it, a refusal says nothing.
        Err(MpError::Permanent(reason)) if magnet.is_some() && sends > 1 => Ok(undecided(format!(
            "a magnet sent again was refused ({reason}); the first send may have added it"
        ))),
        Err(MpError::Permanent(reason)) => Ok(refused(cx, job, &identity, reason)),
        Err(e) => Err(e),
    }
}

/// The download is in MoviePilot (`outcome`: `added`, `verified_existing`), with its hash.
fn started(cx: &Context<'_>, identity: &ReleaseIdentity, hash: &str, outcome: &str) -> Done {
    Done {
        reply: cx.render.download_started(&identity.title, &identity.site),
        result: format!("download {hash} {outcome}"),
        fields: vec![
            ("mp_download_hash".into(), hash.to_string()),
            ("mp_outcome".into(), outcome.into()),
        ],
        ..Done::default()
    }
}

/// MoviePilot refused the add: failed, not retried, the user told which release.
fn refused(cx: &Context<'_>, job: &Job, identity: &ReleaseIdentity, reason: String) -> Done {
    let reply = cx.render.download_refused(&identity.title, &identity.site);
    super::execute::refused(cx, job, &reply, reason)
}

/// After an attempt that began an add (`began`, ms): the add's hash if MoviePilot shows it now
/// or once `moviepilot.download_settle_secs` after that attempt began (MoviePilot finishes a
/// request whose caller died); `None`: it never arrived.
async fn look_again(
    cx: &Context<'_>,
    identity: &ReleaseIdentity,
    noted: &Noted,
    magnet: Option<&str>,
    began: u64,
) -> Result<Option<String>, MpError> {
    if let Some(hash) = verify(cx, identity, &noted.before, magnet).await? {
        tracing::info!(hash = %hash, "download verified in MoviePilot's history; not sent again");
        return Ok(Some(hash));
    }
    let settle_at = began + cx.releases.settle.as_millis() as u64;
    let now = super::now_ms();
    if now >= settle_at {
        return Ok(None);
    }
    let wait = Duration::from_millis(settle_at - now);
    tracing::info!(
        wait_ms = wait.as_millis() as u64,
        "download not in the history yet; waiting for MoviePilot to settle before looking again"
    );
    tokio::time::sleep(wait).await;
    let found = verify(cx, identity, &noted.before, magnet).await?;
    if let Some(hash) = &found {
        tracing::info!(hash = %hash, "download verified after settling; not sent again");
    }
    Ok(found)
}

/// Notes the intent in the job before the add (note.lua, fenced): the release, the matching
/// history rows that exist already, when this attempt began, and how many sends this is.
async fn note_intent(
    cx: &Context<'_>,
    identity: &ReleaseIdentity,
    magnet: Option<&str>,
    sends: u64,
) -> Result<(), MpError> {
    let before: Vec<String> = cx
        .mp
        .download_history()
        .await?
        .iter()
        .filter(|row| identity.matches(row))
        .map(|row| row.id.to_string())
        .collect();
    let notes = [
        ("grab_site", identity.site.clone()),
        ("grab_title", identity.title.clone()),
        ("grab_description", identity.description.clone()),
        ("grab_before", before.join(",")),
        ("grab_began_ms", super::now_ms().to_string()),
        ("grab_magnet", magnet.unwrap_or_default().to_string()),
        ("grab_sends", sends.to_string()),
    ];
    if cx
        .ledger
        .note(cx.attempt, &notes)
        .await
        .map_err(ledger_error)?
    {
        Ok(())
    } else {
        Err(MpError::Transient(
            "this attempt no longer owns the job; not sending the download".into(),
        ))
    }
}

/// The media a release list is for, as its notifications will name it: MoviePilot's own
/// `title_year` where the stored media_info has one, and its season.
fn asked_media(media_info: &Value) -> Option<AskedMedia> {
    let text = |key: &str| media_info.get(key).and_then(Value::as_str);
    let year = match media_info.get("year") {
        Some(Value::Number(n)) => Some(n.to_string()),
        other => other.and_then(|v| v.as_str()).map(str::to_string),
    };
    let season = media_info
        .get("season")
        .and_then(Value::as_u64)
        .and_then(|s| u32::try_from(s).ok());
    AskedMedia::new(text("title")?, year.as_deref(), season)
}

fn hold(reply: String, error: String) -> Done {
    Done {
        reply,
        settle: Some(Settle::Held { error }),
        ..Done::default()
    }
}

/// A matching manual row of the history that was not there before the add (read whole, in no
/// particular order), or a magnet's hash among the active downloads: the hash, if found.
async fn verify(
    cx: &Context<'_>,
    identity: &ReleaseIdentity,
    before: &BTreeSet<u64>,
    magnet: Option<&str>,
) -> Result<Option<String>, MpError> {
    let rows = cx.mp.download_history().await?;
    if let Some(row) = rows
        .iter()
        .filter(|row| identity.matches(row) && !before.contains(&row.id))
        .max_by_key(|row| row.id)
    {
        return Ok(Some(row.download_hash.clone().unwrap_or_default()));
    }
    if let Some(hash) = magnet {
        let active = cx.mp.downloading_hashes().await?;
        if active.iter().any(|h| h.eq_ignore_ascii_case(hash)) {
            return Ok(Some(hash.to_string()));
        }
    }
    Ok(None)
}
