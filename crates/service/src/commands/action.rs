//! A job's command and arguments as a typed action: the whitelist of what may reach MoviePilot.

use super::Command;
use crate::moviepilot::MediaKind;

/// One thing a worker may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Search {
        title: String,
    },
    /// Search, then let the user choose what to subscribe to (`best`: `/best`, 洗版).
    SubscribeTitle {
        title: String,
        best: bool,
    },
    /// Subscribe directly: a movie (`season: None`) or one season of a series. `check`: look
    /// in the library first and stop if it is there; false for the "Subscribe anyway" button's
    /// job (arguments ending in [`ANYWAY`]) and for `/best`. `best`: with MoviePilot's
    /// `best_version` (洗版).
    SubscribeTmdb {
        tmdb_id: u64,
        season: Option<u32>,
        check: bool,
        best: bool,
    },
    /// A series whose season is not chosen yet (`tmdb:<id> tv`): ask MoviePilot for its seasons
    /// and offer one button per season (`best`: buttons of `/best`). Changes nothing.
    ChooseSeason {
        tmdb_id: u64,
        best: bool,
    },
    /// `/subscriptions`: the asker's own (every one for an asker without a MoviePilot name of
    /// their own); `all: true` (`/subscriptions all`, an admin's) every one, with its owner.
    Subscriptions {
        all: bool,
    },
    /// `/unsubscribe <id>` as typed: look the subscription up and ask, with Confirm / Cancel
    /// naming what would be deleted. Changes nothing.
    AskUnsubscribe {
        subscription_id: u64,
    },
    /// The Confirm button's job: delete subscription `subscription_id`, but only while that id
    /// still names `media` (MoviePilot reuses ids).
    Unsubscribe {
        subscription_id: u64,
        media: SubscriptionMedia,
    },
    SearchNow {
        subscription_id: u64,
    },
    Downloading,
    Status {
        job_id: Option<u64>,
    },
    Jobs,
    /// `/download <title>`: the media matches, each with a button that searches its releases.
    DownloadTitle {
        title: String,
    },
    /// A resource search: a movie (`kind` Movie), one season, or every season of a series
    /// (`season: None`). `check`: stop if the library has it already; false for the "Download
    /// anyway" button's job (arguments ending in [`ANYWAY`]).
    FindReleases {
        tmdb_id: u64,
        kind: MediaKind,
        season: Option<u32>,
        check: bool,
    },
    /// Download release `index` (1-based) of the list stored by resource-search job `list`.
    Grab {
        list: u64,
        index: usize,
    },
    /// The ⚡ Auto button of the list stored by resource-search job `list` (arguments `<list>
    /// tmdb:<id> [S<n> | tv]`, the search's media): its release 1 downloaded (as
    /// [`Action::Grab`] `{ list, index: 1 }`), then for one season that season subscribed (as
    /// [`Action::SubscribeTmdb`]).
    Auto {
        list: u64,
        media: (u64, MediaKind, Option<u32>),
    },
    /// Start one of MoviePilot's scheduler jobs for the whole house: `command`'s, whose
    /// `job_id` is [`Command::scheduler_job`] (`/site_signin`'s setting may replace it).
    RunHouseJob {
        command: Command,
        job_id: &'static str,
    },
    /// `/restart`: ask, naming what a restart cuts off (Confirm / Cancel).
    AskRestart,
    /// Its Confirm button: restart MoviePilot once and watch it go and come back.
    Restart,
    /// `/redo <record>`: ask, naming the file MoviePilot would delete and file again.
    AskRedo {
        record: u64,
    },
    /// Its Confirm button (`<record> confirmed`): file the record again, once.
    Redo {
        record: u64,
    },
}

/// The arguments of the job `/restart`'s Confirm button makes (typed, `/restart` drops any),
/// and what follows the record id in `/redo`'s.
pub const RESTART_CONFIRMED: &str = "confirmed";

/// What ends the arguments of a "Subscribe anyway" / "Download anyway" button's job: the same
/// subscription or resource search, without stopping for what the library holds. Never typed
/// (a typed `/subscribe tmdb:1 anyway` is a bad argument), so only those buttons make it, and
/// its duplicate key is its own.
pub const ANYWAY: &str = "anyway";

/// `args` without a trailing [`ANYWAY`], and whether the library check stops the action.
fn without_anyway(args: &str) -> (&str, bool) {
    match args.strip_suffix(ANYWAY) {
        Some(rest) if rest.ends_with(' ') => (rest.trim_end(), false),
        _ => (args, true),
    }
}

impl Action {
    /// Reads a job's `command` and `args`; `None` for arguments the command cannot use, and for
    /// a command that makes no job.
    pub fn parse(command: Command, args: &str) -> Option<Action> {
        let args = args.trim();
        let id = |s: &str| s.parse::<u64>().ok().filter(|&n| n > 0);
        Some(match command {
            Command::Search => Action::Search {
                title: non_empty(args)?,
            },
            Command::Subscribe | Command::Best if parse_series(args).is_some() => {
                Action::ChooseSeason {
                    tmdb_id: parse_series(args)?,
                    best: command == Command::Best,
                }
            }
            Command::Subscribe => match parse_tmdb(without_anyway(args).0) {
                Some(Ok((tmdb_id, season))) => Action::SubscribeTmdb {
                    tmdb_id,
                    season,
                    check: without_anyway(args).1,
                    best: false,
                },
                Some(Err(())) => return None,
                None => Action::SubscribeTitle {
                    title: non_empty(args)?,
                    best: false,
                },
            },
            // 洗版 is for media one has already: no library check (MoviePilot's own bot skips it).
            Command::Best => match parse_tmdb(args) {
                Some(Ok((tmdb_id, season))) => Action::SubscribeTmdb {
                    tmdb_id,
                    season,
                    check: false,
                    best: true,
                },
                Some(Err(())) => return None,
                None => Action::SubscribeTitle {
                    title: non_empty(args)?,
                    best: true,
                },
            },
            Command::Subscriptions => Action::Subscriptions { all: args == "all" },
            Command::Unsubscribe => match args.split_once(' ') {
                None => Action::AskUnsubscribe {
                    subscription_id: id(args)?,
                },
                Some((sub, media)) => Action::Unsubscribe {
                    subscription_id: id(sub)?,
                    media: SubscriptionMedia::parse(media)?,
                },
            },
            Command::SearchNow => Action::SearchNow {
                subscription_id: id(args)?,
            },
            Command::Downloading => Action::Downloading,
            Command::SubscribeSearch
            | Command::SubscribeRefresh
            | Command::SiteSignin
            | Command::Transfer
            | Command::MediaserverSync
            | Command::Cookiecloud => Action::RunHouseJob {
                command,
                job_id: command.scheduler_job()?,
            },
            Command::Restart if args == RESTART_CONFIRMED => Action::Restart,
            Command::Restart if args.is_empty() => Action::AskRestart,
            Command::Restart => return None,
            Command::Redo => match args.split_once(' ') {
                None => Action::AskRedo { record: id(args)? },
                Some((record, RESTART_CONFIRMED)) => Action::Redo {
                    record: id(record)?,
                },
                Some(_) => return None,
            },
            Command::Status if args.is_empty() => Action::Status { job_id: None },
            Command::Status => Action::Status {
                job_id: Some(id(args)?),
            },
            Command::Jobs => Action::Jobs,
            Command::Download => Action::DownloadTitle {
                title: non_empty(args)?,
            },
            Command::Releases | Command::Grab | Command::Auto => release_action(command, args)?,
            Command::Help | Command::Start => return None,
        })
    }
}

/// The release flow's jobs, which buttons make with arguments oncebot wrote: a resource
/// search, a download of one release, the ⚡ Auto button's job.
fn release_action(command: Command, args: &str) -> Option<Action> {
    Some(match command {
        Command::Releases => {
            let (target, check) = without_anyway(args);
            let (tmdb_id, kind, season) = parse_release_target(target)?;
            Action::FindReleases {
                tmdb_id,
                kind,
                season,
                check,
            }
        }
        Command::Grab => {
            let (list, index) = parse_release(args)?;
            Action::Grab { list, index }
        }
        Command::Auto => {
            let (list, media) = args.split_once(' ')?;
            Action::Auto {
                list: list.parse().ok().filter(|&n| n > 0)?,
                media: parse_release_target(media)?,
            }
        }
        _ => return None,
    })
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

    fn parse(text: &str) -> Option<SubscriptionMedia> {
        if let Some(name) = text.strip_prefix("name:") {
            return non_empty(name.trim()).map(SubscriptionMedia::Name);
        }
        match parse_tmdb(text)? {
            Ok((tmdb_id, season)) => Some(SubscriptionMedia::Tmdb { tmdb_id, season }),
            Err(()) => None,
        }
    }
}

fn non_empty(s: &str) -> Option<String> {
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
pub(super) fn parse_release_target(args: &str) -> Option<(u64, MediaKind, Option<u32>)> {
    if let Some(id) = parse_series(args) {
        return Some((id, MediaKind::Tv, None));
    }
    match parse_tmdb(args)? {
        Ok((id, None)) => Some((id, MediaKind::Movie, None)),
        Ok((id, Some(season))) => Some((id, MediaKind::Tv, Some(season))),
        Err(()) => None,
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmdb_references_with_and_without_a_season() {
        assert_eq!(
            Action::parse(Command::Subscribe, "tmdb:108545 S1"),
            Some(Action::SubscribeTmdb {
                tmdb_id: 108545,
                season: Some(1),
                check: true,
                best: false
            })
        );
        assert_eq!(
            Action::parse(Command::Subscribe, "TMDB:438631"),
            Some(Action::SubscribeTmdb {
                tmdb_id: 438631,
                season: None,
                check: true,
                best: false
            })
        );
        assert_eq!(
            Action::parse(Command::Subscribe, "tmdb:63639 TV"),
            Some(Action::ChooseSeason {
                tmdb_id: 63639,
                best: false
            })
        );
        assert_eq!(Action::parse(Command::Subscribe, "tmdb:63639 tv S1"), None);
        assert_eq!(Action::parse(Command::Subscribe, "tmdb:abc"), None);
        assert_eq!(Action::parse(Command::Subscribe, "tmdb:1 season2"), None);
        assert_eq!(
            Action::parse(Command::Subscribe, "三体"),
            Some(Action::SubscribeTitle {
                title: "三体".into(),
                best: false
            })
        );
    }

    #[test]
    fn best_is_a_best_version_subscription_without_the_library_stop() {
        assert_eq!(
            Action::parse(Command::Best, "tmdb:108545 S1"),
            Some(Action::SubscribeTmdb {
                tmdb_id: 108545,
                season: Some(1),
                check: false,
                best: true
            })
        );
        assert_eq!(
            Action::parse(Command::Best, "tmdb:63639 tv"),
            Some(Action::ChooseSeason {
                tmdb_id: 63639,
                best: true
            })
        );
        assert_eq!(
            Action::parse(Command::Best, "三体"),
            Some(Action::SubscribeTitle {
                title: "三体".into(),
                best: true
            })
        );
        assert_eq!(Action::parse(Command::Best, "tmdb:1 S1 anyway"), None);
        assert_eq!(Action::parse(Command::Best, ""), None);
    }

    #[test]
    fn an_anyway_button_runs_the_same_action_without_the_library_stop() {
        assert_eq!(
            Action::parse(Command::Subscribe, "tmdb:108545 S1 anyway"),
            Some(Action::SubscribeTmdb {
                tmdb_id: 108545,
                season: Some(1),
                check: false,
                best: false
            })
        );
        assert_eq!(
            Action::parse(Command::Releases, "tmdb:438631 anyway"),
            Some(Action::FindReleases {
                tmdb_id: 438631,
                kind: MediaKind::Movie,
                season: None,
                check: false
            })
        );
        assert_eq!(Action::parse(Command::Releases, "tmdb:438631anyway"), None);
        // Typed, it is a bad argument: only the buttons make it.
        for typed in [
            "/subscribe tmdb:108545 S1 anyway",
            "/download tmdb:438631 anyway",
        ] {
            assert!(matches!(
                super::super::parse(typed, super::super::ChatKind::Private, ""),
                super::super::Parsed::BadArgs { .. }
            ));
        }
    }

    #[test]
    fn release_searches_and_grabs() {
        assert_eq!(
            Action::parse(Command::Releases, "tmdb:438631"),
            Some(Action::FindReleases {
                tmdb_id: 438631,
                kind: MediaKind::Movie,
                season: None,
                check: true
            })
        );
        assert_eq!(
            Action::parse(Command::Releases, "tmdb:108545 S1"),
            Some(Action::FindReleases {
                tmdb_id: 108545,
                kind: MediaKind::Tv,
                season: Some(1),
                check: true
            })
        );
        assert_eq!(
            Action::parse(Command::Releases, "tmdb:63639 tv"),
            Some(Action::FindReleases {
                tmdb_id: 63639,
                kind: MediaKind::Tv,
                season: None,
                check: true
            })
        );
        assert_eq!(Action::parse(Command::Releases, "Dune"), None);
        assert_eq!(
            Action::parse(Command::Grab, "12 3"),
            Some(Action::Grab { list: 12, index: 3 })
        );
        assert_eq!(Action::parse(Command::Grab, "12"), None);
        assert_eq!(Action::parse(Command::Grab, "12 0"), None);
        assert_eq!(
            Action::parse(Command::Auto, "12 tmdb:108545 S1"),
            Some(Action::Auto {
                list: 12,
                media: (108545, MediaKind::Tv, Some(1))
            })
        );
        assert_eq!(
            Action::parse(Command::Auto, "12 tmdb:438631"),
            Some(Action::Auto {
                list: 12,
                media: (438631, MediaKind::Movie, None)
            })
        );
        assert_eq!(Action::parse(Command::Auto, "12"), None);
        assert_eq!(Action::parse(Command::Auto, "0 tmdb:1"), None);
    }

    #[test]
    fn a_bare_id_asks_and_an_id_with_its_media_deletes() {
        assert_eq!(
            Action::parse(Command::Unsubscribe, "7"),
            Some(Action::AskUnsubscribe { subscription_id: 7 })
        );
        let three_body = SubscriptionMedia::Tmdb {
            tmdb_id: 108545,
            season: Some(1),
        };
        assert_eq!(
            Action::parse(Command::Unsubscribe, &format!("7 {}", three_body.args())),
            Some(Action::Unsubscribe {
                subscription_id: 7,
                media: three_body
            })
        );
        let named = SubscriptionMedia::Name("流浪地球 2".into());
        assert_eq!(named.args(), "name:流浪地球 2");
        assert_eq!(
            Action::parse(Command::Unsubscribe, "7 name:流浪地球 2"),
            Some(Action::Unsubscribe {
                subscription_id: 7,
                media: named
            })
        );
        assert_eq!(Action::parse(Command::Unsubscribe, "7 tmdb:x"), None);
        assert_eq!(Action::parse(Command::Unsubscribe, "0"), None);
    }

    #[test]
    fn commands_without_a_job_are_not_actions() {
        assert_eq!(Action::parse(Command::Help, ""), None);
        assert_eq!(
            super::super::JobCommand::parse("rm"),
            super::super::JobCommand::Other("rm".into())
        );
    }
}
