//! The library check as jobs use it: the cached answer when there is one
//! (`moviepilot.library_cache_secs`, in Redis, shared by every worker), else MoviePilot's
//! (`MoviePilot::library`, within its own short timeout), kept for the next ask. A list's
//! checks run at once, side by side. Nothing here fails a job: Redis or MoviePilot not
//! answering makes the check say nothing.

use std::time::Duration;

use crate::ledger::LibraryKey;
use crate::moviepilot::{LIBRARY_TIMEOUT, Library, LibraryMedia, MediaItem, MediaKind};

use crate::worker::context::Context;

/// How many checks of one list run at once (a list has up to 30 matches; each check is two or
/// three calls to MoviePilot, which asks its media server live).
const AT_ONCE: usize = 8;

/// How long a list's checks may take in all: one check's own timeout and a second for the
/// rest, so a single check always ends by its own timeout (and its "no answer" is kept) before
/// the list gives up on the ones still waiting for their turn.
const LIST_DEADLINE: Duration = Duration::from_secs(LIBRARY_TIMEOUT.as_secs() + 1);

/// How long a check that got no answer (`Library::Unknown`: a media server down or slow, routes
/// missing) is kept, at most: a broken media server then costs its timeout once a minute per
/// media, not on every search, and a repaired one is asked again within a minute.
const NO_ANSWER_TTL: Duration = Duration::from_secs(60);

fn cache_key(media: &LibraryMedia) -> LibraryKey {
    let kind = match media.kind {
        MediaKind::Movie => "movie",
        MediaKind::Tv => "tv",
    };
    (kind, media.tmdb_id, media.season)
}

/// The library check of one match of a list: the media with the season its buttons act on
/// (a series with one known season: that season; with several: every season).
pub fn of_item(item: &MediaItem) -> Option<LibraryMedia> {
    let season = match (item.kind, item.season_numbers.as_slice()) {
        (MediaKind::Tv, [only]) => Some(*only),
        _ => None,
    };
    Some(LibraryMedia {
        tmdb_id: item.tmdb_id?,
        kind: item.kind,
        season,
        title: item.title.clone(),
        year: item.year.clone(),
    })
}

/// What the library holds of `media`.
pub async fn check(cx: &Context<'_>, media: &LibraryMedia) -> Library {
    check_all(cx, std::slice::from_ref(media))
        .await
        .pop()
        .unwrap_or(Library::Unknown)
}

/// What the library holds of each match of `items`, in order (one per item; `Unknown` for a
/// match without a TMDB id), every page's, since a list's pages are rendered at once.
pub async fn check_items(cx: &Context<'_>, items: &[MediaItem]) -> Vec<Library> {
    let media: Vec<Option<LibraryMedia>> = items.iter().map(of_item).collect();
    let known: Vec<LibraryMedia> = media.iter().flatten().cloned().collect();
    let mut answers = check_all(cx, &known).await.into_iter();
    media
        .iter()
        .map(|m| match m {
            Some(_) => answers.next().unwrap_or(Library::Unknown),
            None => Library::Unknown,
        })
        .collect()
}

/// [`check`] for each of `media`: one read of the cache for all, then MoviePilot for the ones
/// it does not hold, [`AT_ONCE`] at a time, all within [`LIST_DEADLINE`] from the start: a
/// check not finished by then says nothing (and is not kept), so a long list waits hardly
/// longer than one check.
async fn check_all(cx: &Context<'_>, media: &[LibraryMedia]) -> Vec<Library> {
    let cached = cached(cx, media).await;
    let deadline = tokio::time::Instant::now() + LIST_DEADLINE;
    let turns = tokio::sync::Semaphore::new(AT_ONCE);
    let turns = &turns;
    let asks = media.iter().zip(cached).map(|(m, hit)| async move {
        if let Some(library) = hit {
            return library;
        }
        let asked = async {
            let _turn = turns.acquire().await.ok()?;
            Some(ask(cx, m).await)
        };
        match tokio::time::timeout_at(deadline, asked).await {
            Ok(Some(library)) => library,
            _ => Library::Unknown,
        }
    });
    futures::future::join_all(asks).await
}

/// The cached answers (`None` for each when the cache is off or Redis does not answer).
async fn cached(cx: &Context<'_>, media: &[LibraryMedia]) -> Vec<Option<Library>> {
    if cx.settings.moviepilot.library_cache().is_none() {
        return vec![None; media.len()];
    }
    let keys: Vec<LibraryKey> = media.iter().map(cache_key).collect();
    match cx.ledger.cached_library(&keys).await {
        Ok(found) => found
            .into_iter()
            .map(|text| text.and_then(|t| serde_json::from_str(&t).ok()))
            .collect(),
        Err(e) => {
            tracing::warn!(error = %e, "could not read the library cache; asking MoviePilot");
            vec![None; media.len()]
        }
    }
}

/// MoviePilot's answer, kept in the cache (for [`NO_ANSWER_TTL`] at most when there was none).
async fn ask(cx: &Context<'_>, media: &LibraryMedia) -> Library {
    let library = cx.mp.library(media).await;
    let ttl = match library.cacheable() {
        true => cx.settings.moviepilot.library_cache(),
        false => cx
            .settings
            .moviepilot
            .library_cache()
            .map(|ttl| ttl.min(NO_ANSWER_TTL)),
    };
    if let Some(ttl) = ttl
        && let Ok(text) = serde_json::to_string(&library)
        && let Err(e) = cx.ledger.cache_library(cache_key(media), &text, ttl).await
    {
        tracing::warn!(error = %e, "could not keep the library check's answer");
    }
    library
}
