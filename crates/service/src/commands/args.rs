//! The arguments commands share: a TMDB reference (`tmdb:<id> [S<n> | tv]`), a release of a
//! stored list, which media a subscription is (so an old Confirm cannot delete the subscription
//! that took its id), and the words only buttons write (`anyway`, `confirmed`). Pure.

use crate::moviepilot::MediaKind;

/// The arguments of the job `/restart`'s Confirm button makes (typed, `/restart` drops any),
/// and what follows the record id in `/redo`'s.
pub const RESTART_CONFIRMED: &str = "confirmed";

/// What ends the arguments of a "Subscribe anyway" / "Download anyway" button's job: the same
/// subscription or resource search, without stopping for what the library holds. Never typed
/// (a typed `/subscribe tmdb:1 anyway` is a bad argument), so only those buttons make it, and
/// its duplicate key is its own.
pub const ANYWAY: &str = "anyway";

/// `args` without a trailing [`ANYWAY`], and whether the library check stops the action.
pub(super) fn without_anyway(args: &str) -> (&str, bool) {
    match args.strip_suffix(ANYWAY) {
        Some(rest) if rest.ends_with(' ') => (rest.trim_end(), false),
        _ => (args, true),
    }
}

/// Which media a subscription is for: what tells a subscription apart from a later one that
/// MoviePilot gave the same id. Written into the Confirm button's arguments
/// (`<id> tmdb:<id> [S<n>]`, or `<id> name:<name>` for one without a TMDB id), so the button,
/// its duplicate key and its job all name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubscriptionMedia {
    Tmdb { tmdb_id: u64, season: Option<u32> },
    Name(String),
}

impl SubscriptionMedia {
    /// The identity of a subscription row as MoviePilot lists it.
    pub fn of(tmdb_id: Option<u64>, season: Option<u32>, name: &str) -> SubscriptionMedia {
        match tmdb_id {
            Some(tmdb_id) => SubscriptionMedia::Tmdb { tmdb_id, season },
            None => SubscriptionMedia::Name(name.to_string()),
        }
    }

    /// `tmdb:<id> [S<n>]` or `name:<name>`.
    pub fn args(&self) -> String {
        match self {
            SubscriptionMedia::Tmdb {
                tmdb_id,
                season: Some(n),
            } => format!("tmdb:{tmdb_id} S{n}"),
            SubscriptionMedia::Tmdb { tmdb_id, .. } => format!("tmdb:{tmdb_id}"),
            SubscriptionMedia::Name(name) => format!("name:{name}"),
        }
    }

    pub(super) fn parse(text: &str) -> Option<SubscriptionMedia> {
        if let Some(name) = text.strip_prefix("name:") {
            return non_empty(name.trim()).map(SubscriptionMedia::Name);
        }
        match parse_tmdb(text)? {
            Ok((tmdb_id, season)) => Some(SubscriptionMedia::Tmdb { tmdb_id, season }),
            Err(()) => None,
        }
    }
}

pub(super) fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// `tmdb:<id> tv`: a series, season to be chosen (TMDB numbers movies and series separately, so
/// the word also says which of the two the id is).
pub fn parse_series(args: &str) -> Option<u64> {
    let lower = args.to_lowercase();
    let mut parts = lower.strip_prefix("tmdb:")?.split_whitespace();
    let id = parts.next()?.parse::<u64>().ok().filter(|&n| n > 0)?;
    (parts.next() == Some("tv") && parts.next().is_none()).then_some(id)
}

/// What a resource search is for: `tmdb:<id>` (a movie), `tmdb:<id> S<n>` (one season of a
/// series) or `tmdb:<id> tv` (a series, every season).
pub(super) fn parse_release_target(args: &str) -> Option<ReleaseTarget> {
    if let Some(id) = parse_series(args) {
        return Some((id, MediaKind::Tv, None));
    }
    match parse_tmdb(args)? {
        Ok((id, None)) => Some((id, MediaKind::Movie, None)),
        Ok((id, Some(season))) => Some((id, MediaKind::Tv, Some(season))),
        Err(()) => None,
    }
}

/// What a resource search is for: a TMDB id, movie or series, and the season (`None`: a movie,
/// or every season of a series).
pub type ReleaseTarget = (u64, MediaKind, Option<u32>);

/// A `grab` job's arguments, `<list> <k>`: the resource-search job whose stored list holds the
/// release, and its number in that list (1-based).
pub fn parse_release(args: &str) -> Option<(u64, usize)> {
    let mut parts = args.split_whitespace();
    let list = parts.next()?.parse::<u64>().ok().filter(|&n| n > 0)?;
    let index = parts.next()?.parse::<usize>().ok().filter(|&n| n > 0)?;
    parts.next().is_none().then_some((list, index))
}

/// `tmdb:<id>` or `tmdb:<id> S<n>`: `None` if the arguments are not a tmdb reference at all,
/// `Some(Err)` if they start like one but are malformed.
pub fn parse_tmdb(args: &str) -> Option<Result<(u64, Option<u32>), ()>> {
    let lower = args.to_lowercase();
    let rest = lower.strip_prefix("tmdb:")?;
    let mut parts = rest.split_whitespace();
    let parsed = (|| {
        let id = parts.next()?.parse::<u64>().ok().filter(|&n| n > 0)?;
        let season = match parts.next() {
            None => None,
            Some(s) => Some(
                s.strip_prefix('s')?
                    .parse::<u32>()
                    .ok()
                    .filter(|&n| n > 0)?,
            ),
        };
        parts.next().is_none().then_some((id, season))
    })();
    Some(parsed.ok_or(()))
}

/// A positive id (a job, a subscription, a transfer record): digits, at most 18 of them.
pub(super) fn is_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 18 && s.bytes().all(|b| b.is_ascii_digit()) && s != "0"
}

/// `s` as a positive id.
pub(super) fn id(s: &str) -> Option<u64> {
    s.parse::<u64>().ok().filter(|&n| n > 0)
}

/// A title to search: at most 200 characters, not empty.
pub(super) fn title(args: &str) -> Option<String> {
    (!args.is_empty() && args.chars().count() <= 200).then(|| args.to_string())
}

/// The check of a command that takes no arguments: any typed are dropped, so `/jobs please` is
/// `/jobs`.
pub(super) fn none(_args: &str) -> Option<String> {
    Some(String::new())
}

/// The check of a command that takes an id.
pub(super) fn one_id(args: &str) -> Option<String> {
    is_id(args).then(|| args.to_string())
}
