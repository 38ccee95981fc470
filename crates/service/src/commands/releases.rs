//! The release flow's searches: `/download <title>` (MoviePilot's matches, each with a button
//! that starts a resource search) and the resource search itself (`releases`, made by those
//! buttons and by `/download tmdb:<id> [S<n> | tv]`): a stored list of releases, paged, with a
//! `下载 k` button each (`grab`) and a ⚡ Auto button (`auto`).

use serde_json::Value;

use super::args::{self, ANYWAY, ReleaseTarget, non_empty, parse_release_target, without_anyway};
use super::grab::grab_key_args;
use super::pages::{Nav, Paged, page_count, page_range};
use super::{Command, Spec, run_button};
use crate::i18n;
use crate::ledger::{Job, Solo, TokenAction, TokenGroup};
use crate::moviepilot::{
    LIBRARY_TIMEOUT, Library, LibraryMedia, MediaItem, MediaKind, MpError, Release, ReleaseList,
};
use crate::telegram::keyboard::Keyboard;
use crate::vocabulary::{ErrorKind, MpOutcome};
use crate::worker::context::{Context, Done, Settle, ledger_error, one_button, owner, reply_to};

pub(super) const DOWNLOAD: Spec = Spec {
    name: "download",
    about: &i18n::DOWNLOAD,
    check: Some(args::title),
    run: Some(|cx, job, _| {
        Box::pin(async move {
            let title = non_empty(job.args.trim()).ok_or_else(|| super::not_runnable(job))?;
            matches(cx, job, &title).await
        })
    }),
    house: None,
};

/// A resource search's job: never typed by this name (`/download tmdb:<id>` is one).
pub(super) const RELEASES: Spec = Spec {
    name: "releases",
    about: &i18n::RELEASES,
    check: None,
    run: Some(|cx, job, _| {
        Box::pin(async move {
            let (target, check) = find(&job.args).ok_or_else(|| super::not_runnable(job))?;
            // The search takes as long as the slowest site: say so at once, not after
            // worker.progress_after_ms; the list then replaces this message.
            cx.tell_progress(&cx.render.searching_sites()).await;
            search(cx, job, target, check).await
        })
    }),
    house: None,
};

/// A resource search's arguments: a movie (`tmdb:<id>`), one season (`tmdb:<id> S<n>`), or every
/// season of a series (`tmdb:<id> tv`), and whether the library check stops it (not for the
/// "Download anyway" button's job, arguments ending in [`ANYWAY`]).
fn find(args: &str) -> Option<(ReleaseTarget, bool)> {
    let (target, check) = without_anyway(args.trim());
    Some((parse_release_target(target)?, check))
}

/// The ⚡ Auto button's arguments for the list resource-search job `job` stores (`<list>
/// tmdb:<id> [S<n> | tv]`); `None` for an asker whose role may not download.
fn auto_args(job: &Job) -> Option<String> {
    if job.role < Command::Auto.least_role("") && !super::requests::asks(job, Command::Auto) {
        return None;
    }
    let ((tmdb_id, kind, season), _) = find(&job.args)?;
    let target = match (kind, season) {
        (MediaKind::Movie, _) => format!("tmdb:{tmdb_id}"),
        (MediaKind::Tv, Some(n)) => format!("tmdb:{tmdb_id} S{n}"),
        (MediaKind::Tv, None) => format!("tmdb:{tmdb_id} tv"),
    };
    Some(format!("{} {target}", job.id))
}

/// The most payload a stored list may hold: the bytes of the values written (media_info once,
/// each release's torrent_info, every page's text and keyboard), not `MEMORY USAGE`, which adds
/// field names, the hashes' entries and the allocator's rounding; releases at the end of the
/// list are left out to stay under it. About 40 of the catalogue's releases (a torrent_info is
/// about 900 bytes, its line and button about 300 more), so `commands.resources_shown`'s
/// default of 30 fits; one list per search and user, for `commands.resources_window_secs`.
pub const LIST_BUDGET_BYTES: usize = 48 * 1024;

/// `/download <title>`: media matches, each with a button that starts a resource search. The
/// buttons are solo: searching one match leaves the others usable.
async fn matches(cx: &Context<'_>, job: &Job, title: &str) -> Result<Done, MpError> {
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
    super::pages::matches(cx, job, &items, text, row).await
}

/// A solo button that runs the resource search for `item`, or `None` without a TMDB id.
/// `short`: the label beside a `/search` match's Subscribe button.
pub(super) fn release_search_button(
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
    let action = run_button(
        job,
        Command::Releases,
        args,
        Command::Releases.window(&cx.settings.commands),
    );
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
async fn search(
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
        .search_releases(tmdb_id, kind, season, cx.settings.commands.resources_shown)
        .await
    {
        Ok(found) => found,
        // The sites were asked; a lost answer is not asked again by itself.
        Err(MpError::Uncertain(reason)) => {
            tracing::warn!(reason = %reason, "resource search lost its answer; not retried");
            return Ok(Done {
                reply: r.failed(job.id, ErrorKind::Permanent, Some(&r.release_search_lost())),
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
        format!("{target} {}", ANYWAY),
        Command::Releases.window(&cx.settings.commands),
    );
    Done {
        reply: r.in_library_not_searched(name),
        result: "in the library; sites not searched".into(),
        fields: vec![MpOutcome::InLibrary.field()],
        buttons: one_button(cx, job, r.download_anyway_button(), anyway),
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
        .take(cx.settings.commands.resources_shown)
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
        let poster = found.poster();
        let about = (media, library, poster.as_deref());
        let paged = release_pages(cx, job, about, shown, (total, found.cut));
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
            .store_list(job.id, cx.list_ttl(), &paged.pages, releases)
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
    (media, library, poster): (&str, &Library, Option<&str>),
    shown: &[Release],
    (total, cut): (usize, bool),
) -> Paged {
    // A requester's buttons ask an admin (issue 44): each carries its request card.
    let library_line = cx.render.library_line(library).unwrap_or_default();
    let asking = |spec: &TokenAction, what: String| match spec {
        TokenAction::Run(spec) if super::requests::asks(job, Command::Grab) => {
            Some(super::requests::asking(cx, job, spec, what, poster))
        }
        _ => None,
    };
    let r = &cx.render;
    let mut group = TokenGroup::new(cx.list_ttl());
    let count = page_count(shown.len());
    let nav = Nav::new(&mut group, owner(job), job.id, count, r);
    let auto = auto_args(job);
    let mut pages = Vec::with_capacity(count);
    for page in 1..=count {
        let range = page_range(page, shown.len());
        let mut keyboard = Keyboard::new();
        let mut row = Vec::new();
        for i in range.clone() {
            let button = release_button(cx, job, &mut group, &shown[i], i + 1, page);
            let texts = cx.render.texts();
            let what =
                texts.asking_download(media, &shown[i].title, &shown[i].site_name, &library_line);
            if let Some(a) = group.tokens.last().and_then(|t| asking(&t.action, what)) {
                group.asking(a);
            }
            row.push(button);
            if row.len() == 3 {
                keyboard = keyboard.row(std::mem::take(&mut row));
            }
        }
        keyboard = keyboard.row(row);
        if let Some(auto) = &auto {
            let button = auto_button(cx, job, &mut group, auto, page);
            let what = cx.render.texts().asking_auto(media, &library_line);
            if let Some(a) = group.tokens.last().and_then(|t| asking(&t.action, what)) {
                group.asking(a);
            }
            keyboard = keyboard.row(vec![button]);
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
        Command::Grab.window(&cx.settings.commands),
    ));
    let solo = Solo {
        list: Some(job.id),
        used_label: r.release_button(n, true),
        page: Some(page),
    };
    let data = group.add_solo(owner(job), &label, action, reply_to(job), solo);
    (label, data)
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
        Command::Grab.window(&cx.settings.commands),
    );
    let solo = Solo {
        list: Some(job.id),
        used_label: r.auto_button(true),
        page: Some(page),
    };
    let data = group.add_solo(owner(job), &label, action, reply_to(job), solo);
    (label, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_search_is_a_movie_a_season_or_every_season() {
        assert_eq!(
            find("tmdb:438631"),
            Some(((438631, MediaKind::Movie, None), true))
        );
        assert_eq!(
            find("tmdb:108545 S1"),
            Some(((108545, MediaKind::Tv, Some(1)), true))
        );
        assert_eq!(
            find("tmdb:63639 tv"),
            Some(((63639, MediaKind::Tv, None), true))
        );
        assert_eq!(find("Dune"), None);
    }

    #[test]
    fn an_anyway_button_runs_the_same_search_without_the_library_stop() {
        assert_eq!(
            find("tmdb:438631 anyway"),
            Some(((438631, MediaKind::Movie, None), false))
        );
        assert_eq!(find("tmdb:438631anyway"), None);
        // Typed, it is a bad argument: only the buttons make it.
        assert!(matches!(
            crate::commands::parse(
                "/download tmdb:438631 anyway",
                crate::commands::ChatKind::Private,
                ""
            ),
            crate::commands::Parsed::BadArgs { .. }
        ));
    }
}
