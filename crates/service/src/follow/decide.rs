//! What one poll means for one card: from the card as stored and what MoviePilot answered, the
//! card's next step, or none. Pure, so every rule is a unit test.
//!
//! A download, by its hash: listed → downloading (percent, time left); left the list →
//! downloaded, waiting to be filed (only once it was listed: Transmission before 4.0 drops
//! MoviePilot's label, so its list never shows the torrent, and the card then says "started"
//! until the transfer rows come); its transfer rows decide the end: all filed → in the library,
//! one failed and none filed → filing failed with MoviePilot's reason; listed once, gone a day
//! with no row → no longer in the downloader. A subscription, by its id: in the list → what it
//! lacks and has downloaded (`note`), plus the episodes its TMDB id and season had filed;
//! gone, with a subscription-history row of its media dated from the card's start → completed
//! (a final state once what it downloaded is filed, or a day later), without one → cancelled.

use crate::i18n::{Render, SubscriptionFacts};
use crate::ledger::{Card, CardStep};
use crate::moviepilot::{
    CompletedSubscription, DownloadProgress, Subscription, TransferRow, parse_local_time,
};
use crate::vocabulary::CardState;

/// How long a download may be gone from the list without a transfer row, and a completed
/// subscription's downloads unfiled, before the card ends.
pub const GRACE_MS: u64 = 86_400_000;

/// What one poll read of MoviePilot. `None`: not read (no card needed it, or the read failed:
/// a card then keeps its state and says nothing wrong).
#[derive(Debug, Default)]
pub struct Observed {
    pub now_ms: u64,
    pub downloads: Option<Vec<DownloadProgress>>,
    pub subscriptions: Option<Vec<Subscription>>,
    /// The transfer rows new since the last poll.
    pub transfers: Vec<TransferRow>,
    /// Whether `transfers` may be matched by media (false on the very first poll, whose rows
    /// may be older than any card).
    pub transfers_by_media: bool,
    /// The newest subscription-history rows of each kind read.
    pub completed: Option<Vec<CompletedSubscription>>,
}

/// How far before a card's start a subscription-history row may be dated and still be the
/// card's: MoviePilot writes its local time, oncebot knows UTC, so a day of grace plus a day
/// for any zone's offset. An earlier completion of the same media is months older.
const HISTORY_SLACK_SECS: i64 = 2 * 86_400;

fn csv(numbers: &[u32]) -> String {
    numbers
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn numbers(text: &str) -> Vec<u32> {
    text.split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect()
}

fn merged(mut a: Vec<u32>, b: impl IntoIterator<Item = u32>) -> Vec<u32> {
    a.extend(b);
    a.sort_unstable();
    a.dedup();
    a
}

/// The card's next step, or `None` when nothing changed.
pub fn next_step(card: &Card, seen: &Observed, r: &Render, follow_days: u64) -> Option<CardStep> {
    let title = card.text("title");
    let until: u64 = card.number("until").unwrap_or(u64::MAX);
    let step = if card.text("kind") == "subscription" {
        subscription_step(card, seen, r)
    } else {
        download_step(card, seen, r)
    };
    let mut step = match step {
        Some(step) => step,
        None if seen.now_ms >= until => CardStep {
            state: Some(CardState::Expired),
            text: r.card(title, &r.card_expired(follow_days)),
            ..CardStep::default()
        },
        None => return None,
    };
    let state = step.state.unwrap_or(card.state);
    if state.is_final() && step.notice.is_empty() && state != CardState::Cancelled {
        // The end is news: one short message the person hears (edits are silent).
        if state != CardState::Expired {
            step.notice = step.text.clone();
        }
    }
    Some(step)
}

fn download_step(card: &Card, seen: &Observed, r: &Render) -> Option<CardStep> {
    filed_step(card, seen, r).or_else(|| listed_step(card, seen, r))
}

/// The end a download's transfer rows decide: all filed, or one failed and none filed.
fn filed_step(card: &Card, seen: &Observed, r: &Render) -> Option<CardStep> {
    let hash = card.text("hash");
    let mut filed = card.text("filed") == "1";
    let mut failed = card.fields.get("failed").cloned();
    let mut dest = card.fields.get("dest").cloned();
    for row in seen
        .transfers
        .iter()
        .filter(|t| t.hash.as_deref() == Some(hash))
    {
        if row.succeeded {
            filed = true;
            dest = dest.or_else(|| row.dest.clone());
        } else {
            failed = Some(row.error.clone().unwrap_or_default());
        }
    }
    if !filed && failed.is_none() {
        return None;
    }
    let mut kept = vec![("filed", if filed { "1" } else { "0" }.to_string())];
    kept.extend(failed.clone().map(|f| ("failed", f)));
    kept.extend(dest.clone().map(|d| ("dest", d)));
    let (state, line) = if filed {
        (CardState::InLibrary, r.card_in_library(dest.as_deref()))
    } else {
        let reason = r.card_transfer_failed(failed.as_deref());
        (CardState::TransferFailed, reason)
    };
    Some(CardStep {
        state: Some(state),
        text: r.card(card.text("title"), &line),
        seen: kept,
        ..CardStep::default()
    })
}

/// Where the downloader's list puts a download: listed (percent, time left), or gone from it
/// after it was listed (downloaded, then after a day with no transfer row, vanished).
fn listed_step(card: &Card, seen: &Observed, r: &Render) -> Option<CardStep> {
    let title = card.text("title");
    let list = seen.downloads.as_ref()?;
    if let Some(d) = list.iter().find(|d| d.hash == card.text("hash")) {
        let line = r.card_downloading(d.percent, d.left_time.as_deref());
        return Some(CardStep {
            state: Some(CardState::Downloading),
            text: r.card(title, &line),
            progress: card.state == CardState::Downloading,
            seen: vec![("listed", "1".into()), ("percent", d.percent.to_string())],
            ..CardStep::default()
        });
    }
    if card.text("listed") != "1" {
        return None;
    }
    let gone_at = card.number::<u64>("gone_at").unwrap_or(seen.now_ms);
    let (state, line) = if seen.now_ms.saturating_sub(gone_at) >= GRACE_MS {
        (CardState::Vanished, r.card_vanished())
    } else {
        (CardState::Downloaded, r.card_downloaded())
    };
    Some(CardStep {
        state: Some(state),
        text: r.card(title, &line),
        seen: vec![("gone_at", gone_at.to_string())],
        ..CardStep::default()
    })
}

/// What a subscription card knows: its stored facts, this poll's transfer rows of its media
/// and its row in the list.
fn subscription_facts(
    card: &Card,
    seen: &Observed,
    movie: bool,
) -> (SubscriptionFacts, Option<bool>) {
    let tmdb: Option<u64> = card.number("tmdb_id");
    let season: Option<u32> = card.number("season");
    let mut facts = SubscriptionFacts {
        lack: card.number("lack"),
        downloaded: numbers(card.text("downloaded")),
        filed: numbers(card.text("filed")),
        completed: card.fields.contains_key("done_at"),
    };
    if seen.transfers_by_media {
        let ours = seen.transfers.iter().filter(|t| {
            t.succeeded && t.tmdb_id.is_some() && t.tmdb_id == tmdb && (movie || t.season == season)
        });
        let episodes: Vec<u32> = ours
            .flat_map(|t| if movie { vec![1] } else { t.episodes.clone() })
            .collect();
        facts.filed = merged(facts.filed, episodes);
    }
    let id: Option<u64> = card.number("subscription_id");
    let listed = seen.subscriptions.as_ref().map(|subs| {
        let row = subs.iter().find(|s| Some(s.id) == id);
        if let Some(row) = row {
            facts.lack = row.lack_episode;
            facts.downloaded = merged(facts.downloaded.clone(), row.downloaded.iter().copied());
        }
        row.is_some()
    });
    (facts, listed)
}

/// A subscription gone from the list: whether MoviePilot completed it (a subscription-history
/// row of its media dated from the card's start); `None` when the history was not read.
fn completed(card: &Card, seen: &Observed, movie: bool) -> Option<bool> {
    let history = seen.completed.as_ref()?;
    let tmdb: Option<u64> = card.number("tmdb_id");
    let season: Option<u32> = card.number("season");
    let from = card.number::<i64>("started_at")? / 1000 - HISTORY_SLACK_SECS;
    Some(history.iter().any(|row| {
        let dated_after = parse_local_time(&row.date).is_none_or(|at| at >= from);
        row.tmdb_id == tmdb && (movie || row.season == season) && dated_after
    }))
}

fn subscription_step(card: &Card, seen: &Observed, r: &Render) -> Option<CardStep> {
    let title = card.text("title");
    let movie = card.text("mtype") == "movie";
    let (mut facts, listed) = subscription_facts(card, seen, movie);
    let mut done_at: Option<u64> = card.number("done_at");
    if listed == Some(false) && done_at.is_none() {
        if !completed(card, seen, movie)? {
            return Some(CardStep {
                state: Some(CardState::Cancelled),
                text: r.card(title, &r.card_cancelled()),
                ..CardStep::default()
            });
        }
        done_at = Some(seen.now_ms);
        facts.completed = true;
    }
    let mut kept = vec![
        ("downloaded", csv(&facts.downloaded)),
        ("filed", csv(&facts.filed)),
    ];
    kept.extend(facts.lack.map(|n| ("lack", n.to_string())));
    if let Some(at) = done_at {
        kept.push(("done_at", at.to_string()));
        let all_filed = facts.downloaded.iter().all(|e| facts.filed.contains(e));
        if all_filed || seen.now_ms.saturating_sub(at) >= GRACE_MS {
            let filed = if movie {
                Vec::new()
            } else {
                facts.filed.clone()
            };
            return Some(CardStep {
                state: Some(CardState::Completed),
                text: r.card(title, &r.card_completed(&filed)),
                seen: kept,
                ..CardStep::default()
            });
        }
    }
    if movie {
        // A movie's "episodes" are MoviePilot's bookkeeping ([1]); its card shows none.
        facts.downloaded.clear();
        facts.filed.clear();
    }
    Some(CardStep {
        state: Some(CardState::Subscribed),
        text: r.card(title, &r.card_subscribed(&facts)),
        seen: kept,
        ..CardStep::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Locale;
    use crate::moviepilot::CompletedSubscription;

    const DAY: u64 = 86_400_000;
    const START: u64 = 1_800_000_000_000;

    fn card(kind: &str, state: CardState, fields: &[(&str, &str)]) -> Card {
        let mut all: std::collections::HashMap<String, String> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        all.insert("kind".into(), kind.into());
        all.insert("title".into(), "Dune (2021)".into());
        all.insert("started_at".into(), START.to_string());
        all.insert("until".into(), (START + 120 * DAY).to_string());
        Card {
            id: 7,
            state,
            seq: 1,
            chat_id: 42,
            fields: all,
        }
    }

    fn seen(now: u64) -> Observed {
        Observed {
            now_ms: now,
            downloads: Some(Vec::new()),
            subscriptions: Some(Vec::new()),
            transfers_by_media: true,
            ..Observed::default()
        }
    }

    fn row(hash: Option<&str>, tmdb: Option<u64>, episodes: &[u32], ok: bool) -> TransferRow {
        TransferRow {
            id: 9,
            hash: hash.map(str::to_string),
            tmdb_id: tmdb,
            season: Some(1),
            episodes: episodes.to_vec(),
            succeeded: ok,
            error: (!ok).then(|| "未识别到媒体信息".to_string()),
            dest: ok.then(|| "/media/x".to_string()),
        }
    }

    fn r() -> Render {
        Render::new(Locale::En)
    }

    fn state_of(step: Option<CardStep>) -> Option<CardState> {
        step.and_then(|s| s.state)
    }

    #[test]
    fn a_download_never_listed_stays_started_and_one_listed_then_gone_a_day_vanishes() {
        // Transmission before 4.0: never in MoviePilot's list. Nothing to say, however long.
        let never = card("download", CardState::Started, &[("hash", "ab")]);
        assert_eq!(next_step(&never, &seen(START + 30 * DAY), &r(), 120), None);
        // Listed once, now gone: downloaded, waiting; a day later with no row, vanished.
        let listed = card(
            "download",
            CardState::Downloading,
            &[("hash", "ab"), ("listed", "1")],
        );
        let gone = next_step(&listed, &seen(START + DAY), &r(), 120).unwrap();
        assert_eq!(gone.state, Some(CardState::Downloaded));
        let gone_at = gone
            .seen
            .iter()
            .find(|(k, _)| *k == "gone_at")
            .unwrap()
            .1
            .clone();
        let waiting = card(
            "download",
            CardState::Downloaded,
            &[("hash", "ab"), ("listed", "1"), ("gone_at", &gone_at)],
        );
        let later = START + 2 * DAY + 1;
        let step = next_step(&waiting, &seen(later), &r(), 120).unwrap();
        assert_eq!(step.state, Some(CardState::Vanished));
        assert!(!step.notice.is_empty(), "the end is told");
    }

    #[test]
    fn a_failed_transfer_row_ends_the_card_with_moviepilots_reason_and_a_filed_one_wins() {
        let c = card(
            "download",
            CardState::Downloaded,
            &[("hash", "ab"), ("listed", "1")],
        );
        let mut s = seen(START + DAY);
        s.transfers = vec![row(Some("ab"), None, &[], false)];
        let failed = next_step(&c, &s, &r(), 120).unwrap();
        assert_eq!(failed.state, Some(CardState::TransferFailed));
        assert!(failed.text.contains("未识别到媒体信息"), "{}", failed.text);
        s.transfers.push(row(Some("ab"), None, &[], true));
        assert_eq!(
            state_of(next_step(&c, &s, &r(), 120)),
            Some(CardState::InLibrary)
        );
        // Another torrent's rows say nothing of this one.
        s.transfers = vec![row(Some("cd"), None, &[], true)];
        assert_eq!(
            state_of(next_step(&c, &s, &r(), 120)),
            Some(CardState::Downloaded)
        );
    }

    #[test]
    fn a_subscription_completes_once_its_downloads_are_filed_and_is_cancelled_without_history() {
        let fields = [
            ("subscription_id", "3"),
            ("tmdb_id", "900001"),
            ("season", "1"),
            ("mtype", "tv"),
            ("downloaded", "5,6"),
            ("filed", "5"),
        ];
        let c = card("subscription", CardState::Subscribed, &fields);
        let mut s = seen(START + DAY);
        // Gone from the list without a history row: cancelled, no notice.
        s.completed = Some(Vec::new());
        let cancelled = next_step(&c, &s, &r(), 120).unwrap();
        assert_eq!(cancelled.state, Some(CardState::Cancelled));
        assert!(cancelled.notice.is_empty());
        // A history row of an earlier subscription of the same media is not this one's.
        let old = CompletedSubscription {
            tmdb_id: Some(900_001),
            season: Some(1),
            date: "2020-01-01 10:00:00".into(),
        };
        s.completed = Some(vec![old.clone()]);
        assert_eq!(
            state_of(next_step(&c, &s, &r(), 120)),
            Some(CardState::Cancelled)
        );
        // Completed now, E06 not yet filed: it waits; once filed, complete.
        let now = CompletedSubscription {
            date: "2027-01-16 10:00:00".into(),
            ..old
        };
        s.completed = Some(vec![now]);
        let waiting = next_step(&c, &s, &r(), 120).unwrap();
        assert_eq!(waiting.state, Some(CardState::Subscribed));
        assert!(
            waiting.text.contains("waiting to be filed"),
            "{}",
            waiting.text
        );
        let done_at = waiting
            .seen
            .iter()
            .find(|(k, _)| *k == "done_at")
            .unwrap()
            .1
            .clone();
        let mut fields = fields.to_vec();
        fields.push(("done_at", &done_at));
        let c = card("subscription", CardState::Subscribed, &fields);
        let mut s = seen(START + DAY + 1000);
        s.transfers = vec![row(None, Some(900_001), &[6], true)];
        let done = next_step(&c, &s, &r(), 120).unwrap();
        assert_eq!(done.state, Some(CardState::Completed));
        assert!(done.text.contains("E05–E06"), "{}", done.text);
        assert!(!done.notice.is_empty());
    }

    #[test]
    fn an_unread_list_changes_nothing_and_the_end_of_following_expires_the_card() {
        let c = card(
            "download",
            CardState::Downloading,
            &[("hash", "ab"), ("listed", "1")],
        );
        let mut s = seen(START + DAY);
        s.downloads = None;
        assert_eq!(
            next_step(&c, &s, &r(), 120),
            None,
            "a failed read says nothing"
        );
        s.now_ms = START + 121 * DAY;
        let expired = next_step(&c, &s, &r(), 120).unwrap();
        assert_eq!(expired.state, Some(CardState::Expired));
        assert!(expired.notice.is_empty());
    }
}
