//! What a user typed, turned into a whitelisted command (or a reason it is not one).
//!
//! Parsing is pure: no I/O, no Redis. Anything that is not on the whitelist never reaches a
//! worker; unknown commands and bad arguments become a helpful reply, not a failed job.

mod args;
mod auto;
mod downloading;
mod grab;
mod help;
mod house;
mod key;
mod library;
mod notify;
mod owners;
mod pages;
mod parse;
mod policy;
mod quota;
mod redo;
mod releases;
mod request_lists;
mod requests;
mod restart;
mod search;
mod status;
mod subscribe;
mod subscriptions;
mod users;
mod version;
mod whoami;

pub use args::{
    ANYWAY, RESTART_CONFIRMED, SubscriptionMedia, parse_release, parse_series, parse_tmdb,
};
pub use house::{Asked as HouseAsked, admission as house_admission};
pub use key::{Asker, idempotency_key, run_button};
pub use parse::{ChatKind, Parsed, collapse_whitespace, parse};
pub use policy::{Policy, Recovery, Window, calendar_day};
pub use requests::{RequestRoute, withdraw_button};

use crate::i18n;
use crate::ledger::Job;
use crate::moviepilot::MpError;
use crate::worker::context::{Context, Done};
use futures::future::BoxFuture;

/// The commands oncebot understands. `/help` and `/start` are answered at once, without a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    Search,
    Subscribe,
    /// `/best <title>` (`洗版 <title>`) and `/best tmdb:<id> [S<n>]`: a subscription with
    /// MoviePilot's `best_version` (洗版: it keeps upgrading to a better release), a command
    /// of its own (its own duplicate key and window, `commands.best_window_secs`).
    Best,
    /// `/download <title>` (`下载 <title>`): the media matches, each with a button that starts
    /// a resource search.
    Download,
    Subscriptions,
    Unsubscribe,
    SearchNow,
    Downloading,
    Status,
    Jobs,
    /// Who the asker is to the bot: Telegram id, role, MoviePilot name, the role's source.
    Whoami,
    Help,
    Start,
    /// A resource search for one media (`/download tmdb:<id> [S<n>]`, or a match's button):
    /// the releases, each with a `下载 k` button. Not typed under this name.
    Releases,
    /// Download one release of a stored list (a `下载 k` button). Never typed.
    Grab,
    /// The "⚡ 自动" button under a release list: release 1 of the stored list (MoviePilot's
    /// best by its own order) downloaded as `grab` downloads it, and for a season the season
    /// subscribed as `/subscribe` subscribes it. Never typed; its argument is the list's job id.
    Auto,
    /// The house's costly jobs, an admin's (each starts one of MoviePilot's scheduler jobs,
    /// `Command::scheduler_job`): search every subscription on every site,
    SubscribeSearch,
    /// fetch every site's list again,
    SubscribeRefresh,
    /// sign in to every chosen site (the AutoSignIn plugin's run), once a calendar day,
    SiteSignin,
    /// file what the downloader finished,
    Transfer,
    /// read the media server's library again,
    MediaserverSync,
    /// and fetch the sites' cookies from CookieCloud.
    Cookiecloud,
    /// Restart MoviePilot, after Confirm / Cancel naming what is cut off; done when MoviePilot
    /// was seen gone and back (an admin's).
    Restart,
    /// File a transfer history record again (`/redo <record id>`), after Confirm naming the
    /// file MoviePilot deletes first (an admin's).
    Redo,
    /// This release and the live processes by role and release (an admin's; the job kind
    /// 0.2.0 adds, docs/releases.md).
    Version,
    /// Everyone who may use the bot, with a Revoke button on each grant (an admin's).
    Users,
    /// Take one grant back (a Revoke button under `/users`). Never typed.
    Revoke,
    /// The pending media requests, each with Approve / Decline (an admin's; issue 44).
    Requests,
    /// The asker's own media requests and their state, a pending one with Withdraw (issue 44).
    Mine,
    /// The asker's weekly quota: used, left, when the next slot frees (issue 44).
    Quota,
    /// The asker's own notices: per category all, only theirs, or off; quiet hours (issue 45).
    Notify,
}

impl Command {
    pub const ALL: [Command; 31] = [
        Command::Search,
        Command::Subscribe,
        Command::Best,
        Command::Download,
        Command::Subscriptions,
        Command::Unsubscribe,
        Command::SearchNow,
        Command::Downloading,
        Command::Status,
        Command::Jobs,
        Command::Whoami,
        Command::Help,
        Command::Start,
        Command::Releases,
        Command::Grab,
        Command::Auto,
        Command::SubscribeSearch,
        Command::SubscribeRefresh,
        Command::SiteSignin,
        Command::Transfer,
        Command::MediaserverSync,
        Command::Cookiecloud,
        Command::Restart,
        Command::Redo,
        Command::Version,
        Command::Users,
        Command::Revoke,
        Command::Requests,
        Command::Mine,
        Command::Quota,
        Command::Notify,
    ];

    /// Its file's description of it: the one dispatch, a match without a fallback arm, so the
    /// compiler names the place a new command must fill in.
    fn spec(self) -> &'static Spec {
        match self {
            Command::Search => &search::SEARCH,
            Command::Subscribe => &subscribe::SUBSCRIBE,
            Command::Best => &subscribe::BEST,
            Command::Download => &releases::DOWNLOAD,
            Command::Subscriptions => &subscriptions::SUBSCRIPTIONS,
            Command::Unsubscribe => &subscriptions::UNSUBSCRIBE,
            Command::SearchNow => &subscriptions::SEARCHNOW,
            Command::Downloading => &downloading::DOWNLOADING,
            Command::Status => &status::STATUS,
            Command::Jobs => &status::JOBS,
            Command::Help => &help::HELP,
            Command::Start => &help::START,
            Command::Releases => &releases::RELEASES,
            Command::Grab => &grab::GRAB,
            Command::Auto => &auto::AUTO,
            Command::SubscribeSearch => &house::SUBSCRIBE_SEARCH,
            Command::SubscribeRefresh => &house::SUBSCRIBE_REFRESH,
            Command::SiteSignin => &house::SITE_SIGNIN,
            Command::Transfer => &house::TRANSFER,
            Command::MediaserverSync => &house::MEDIASERVER_SYNC,
            Command::Cookiecloud => &house::COOKIECLOUD,
            Command::Restart => &restart::RESTART,
            Command::Redo => &redo::REDO,
            Command::Version => &version::VERSION,
            Command::Whoami => &whoami::WHOAMI,
            Command::Users => &users::USERS,
            Command::Revoke => &users::REVOKE,
            Command::Requests => &request_lists::REQUESTS,
            Command::Mine => &request_lists::MINE,
            Command::Quota => &quota::QUOTA,
            Command::Notify => &notify::NOTIFY,
        }
    }

    /// The name after the slash, which is also the `command` field of a job.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The MoviePilot scheduler job a house command starts (`GET
    /// /api/v1/system/runscheduler?jobid=<id>`, MoviePilot's `app/scheduler.py`; the same ids in
    /// v2.5.6, the newest v2 and v3's `app/startup/scheduling/manifest.py`); `None` for every
    /// other command. `/site_signin`'s is the AutoSignIn plugin's, `<plugin id>_<service id>`,
    /// the default of `commands.site_signin_job`.
    pub fn scheduler_job(self) -> Option<&'static str> {
        self.spec().house.map(|h| h.scheduler_job)
    }

    /// What a house command starts at MoviePilot, in words ("the search of every
    /// subscription"); "this job" for any other.
    pub fn house_name(self) -> i18n::Words {
        self.spec().house.map_or(i18n::house_names::ANY, |h| h.name)
    }

    /// Whether a user may type it: `releases`, `grab` and `auto` jobs are made by `/download`
    /// and by buttons, whose arguments oncebot wrote itself.
    pub fn typed(self) -> bool {
        self.spec().check.is_some()
    }

    /// What it says about itself, in both languages: its usage and where it is listed.
    pub fn about(self) -> &'static i18n::About {
        self.spec().about
    }

    /// The arguments a user typed, as its job keeps them (whitespace collapsed, words it
    /// ignores dropped); `None`: not arguments it takes (answered with its usage), or a command
    /// nobody types.
    pub fn check(self, args: &str) -> Option<String> {
        self.spec().check.and_then(|check| check(args))
    }

    /// Runs `job` (of this command) against MoviePilot: its file's run, which reads the job's
    /// arguments; arguments it cannot use, and a command answered at admission (`/help`), fail
    /// for good. `recovered`: the job's previous worker died mid-run.
    pub async fn run(self, cx: &Context<'_>, job: &Job, recovered: bool) -> Result<Done, MpError> {
        match self.spec().run {
            Some(run) => run(cx, job, recovered).await,
            None => Err(not_runnable(job)),
        }
    }

    /// Every command by name with what it says about itself, in `ALL`'s order: the menus and
    /// the help are built from it (`i18n::Texts::help_for`, `command_list`).
    pub fn listing() -> [(&'static str, &'static i18n::About); 31] {
        Command::ALL.map(|c| (c.name(), c.about()))
    }

    /// The answer to arguments it cannot use.
    pub fn usage(self, texts: &i18n::Texts) -> String {
        texts.usage(self.about(), &Command::listing())
    }

    pub fn from_name(name: &str) -> Option<Command> {
        Command::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// How each command may be repeated and recovered: the one table (ingress reads the window,
/// workers the recovery; nothing else decides these), a row per command in `Command::ALL`'s
/// order. Columns: command, read or effect, at once or asks first, the duplicate window (from
/// the settings; `None`: no business-layer check), the recovery after a crash, the least role,
/// one per asker or for the whole house, a span of time or the calendar day.
#[rustfmt::skip]
pub const POLICIES: [Policy; 31] = {
    use policy::{ASKS, AT_ONCE, DAY, EFFECT, HOUSE, OWN, READ, SPAN, row};
    use Recovery::*;
    use crate::vocabulary::Role::*;
    [
        row(Command::Search, READ, AT_ONCE, None, Rerun, Viewer, OWN, SPAN),
        row(Command::Subscribe, EFFECT, AT_ONCE, Some(|s| s.subscribe_window_secs), VerifyThenRetry, User, OWN, SPAN),
        // As /subscribe's: the look for an existing subscription is the verification.
        row(Command::Best, EFFECT, AT_ONCE, Some(|s| s.best_window_secs), VerifyThenRetry, User, OWN, SPAN),
        // A requester may run the resource search too (issue 44): what they pick from it is asked
        // of an admin.
        row(Command::Download, READ, AT_ONCE, None, Rerun, Requester, OWN, SPAN),
        row(Command::Subscriptions, READ, AT_ONCE, None, Rerun, Viewer, OWN, SPAN),
        // The delete looks the subscription up first (its id must still name its media), and
        // "gone" is what a crashed delete is verified by.
        row(Command::Unsubscribe, EFFECT, ASKS, Some(|s| s.unsubscribe_window_secs), VerifyThenRetry, User, OWN, SPAN),
        row(Command::SearchNow, EFFECT, AT_ONCE, Some(|s| s.searchnow_window_secs), HoldForReview, User, OWN, SPAN),
        row(Command::Downloading, READ, AT_ONCE, None, Rerun, Viewer, OWN, SPAN),
        row(Command::Status, READ, AT_ONCE, None, Rerun, Viewer, OWN, SPAN),
        row(Command::Jobs, READ, AT_ONCE, None, Rerun, Viewer, OWN, SPAN),
        // Reads the directory as stored (Redis only).
        row(Command::Whoami, READ, AT_ONCE, None, Rerun, Viewer, OWN, SPAN),
        row(Command::Help, READ, AT_ONCE, None, NoJob, Viewer, OWN, SPAN),
        row(Command::Start, READ, AT_ONCE, None, NoJob, Viewer, OWN, SPAN),
        // The search hits every indexer site the user belongs to (rate limits), so it has a window
        // like a side effect, and is rerun at most once after a crash.
        row(Command::Releases, EFFECT, AT_ONCE, Some(|s| s.resources_window_secs), RerunOnce, Requester, OWN, SPAN),
        // MoviePilot cannot look a download up, but its history can be read: verify, then retry.
        row(Command::Grab, EFFECT, AT_ONCE, Some(|s| s.download_window_secs), VerifyThenRetry, User, OWN, SPAN),
        // The ⚡ Auto button: a download and a subscription, each verified as its own command's
        // (the download in MoviePilot's history from the notes, the subscription by looking), so a
        // crash anywhere re-runs nothing blindly. One per list in the download window.
        row(Command::Auto, EFFECT, AT_ONCE, Some(|s| s.download_window_secs), VerifyThenRetry, User, OWN, SPAN),
        // The house's costly jobs (issue 23): each starts one of MoviePilot's scheduler jobs, whose
        // repeat costs the whole house (every site searched or signed in to again, MoviePilot's own
        // runs skipped without a word). MoviePilot answers "success" whether the job ran, was already
        // running or was skipped, so a crashed start cannot be verified: the recovery says per job
        // whether running it again is harmless.
        row(Command::SubscribeSearch, EFFECT, AT_ONCE, Some(|s| s.subscribe_search_window_secs), HoldForReview, Admin, HOUSE, SPAN),
        row(Command::SubscribeRefresh, EFFECT, AT_ONCE, Some(|s| s.subscribe_refresh_window_secs), HoldForReview, Admin, HOUSE, SPAN),
        // Once a calendar day: a sign-in counts per day at the sites. The plugin keeps no history a
        // route can read (it is in its own data, shown only as a page), so a crash is held.
        row(Command::SiteSignin, EFFECT, AT_ONCE, Some(|_| 0), HoldForReview, Admin, HOUSE, DAY),
        // Files only what is not filed yet: running it again is harmless.
        row(Command::Transfer, EFFECT, AT_ONCE, Some(|s| s.transfer_window_secs), Rerun, Admin, HOUSE, SPAN),
        // Reads the whole library of the media server: harmless but long, so once more at most.
        row(Command::MediaserverSync, EFFECT, AT_ONCE, Some(|s| s.mediaserver_sync_window_secs), RerunOnce, Admin, HOUSE, SPAN),
        // Fetches cookies from CookieCloud: harmless to repeat.
        row(Command::Cookiecloud, EFFECT, AT_ONCE, Some(|s| s.cookiecloud_window_secs), Rerun, Admin, HOUSE, SPAN),
        // Asks first, naming what is cut off. After a crash it is verified, never sent again: the
        // job notes that the call is going out, and a later attempt only watches MoviePilot go and
        // come back (commands::restart).
        row(Command::Restart, EFFECT, ASKS, Some(|s| s.restart_window_secs), VerifyThenRetry, Admin, HOUSE, SPAN),
        // Deletes what the record filed before it files it again: twice would delete the first
        // redo's file. Once per record for the house in its window; after a crash a person decides,
        // seeing which file (the job notes it before the call).
        row(Command::Redo, EFFECT, ASKS, Some(|s| s.redo_window_secs), HoldForReview, Admin, HOUSE, SPAN),
        // Reads the registry only; an admin's, as what runs where is the operator's business.
        row(Command::Version, READ, AT_ONCE, None, Rerun, Admin, OWN, SPAN),
        // Everyone who may use the bot: who is allowed is the admins' business.
        row(Command::Users, READ, AT_ONCE, None, Rerun, Admin, OWN, SPAN),
        // Taking a grant back twice is taking it back once (the second finds none); the button
        // is once-only, so no window is needed beyond it.
        row(Command::Revoke, EFFECT, AT_ONCE, Some(|_| 0), Rerun, Admin, OWN, SPAN),
        // Read the ledger only (issue 44). Deciding is the admins' business; each list's buttons
        // decide or withdraw in request.lua, once, whoever taps (not this job's effect).
        row(Command::Requests, READ, AT_ONCE, None, Rerun, Admin, OWN, SPAN),
        // A requester's point: their own requests, whatever their role.
        row(Command::Mine, READ, AT_ONCE, None, Rerun, Viewer, OWN, SPAN),
        // Reads the quota ledger only (issue 44).
        row(Command::Quota, READ, AT_ONCE, None, Rerun, Viewer, OWN, SPAN),
        // No effect at MoviePilot: it writes the asker's own settings in Redis (issue 45), and
        // setting one twice is setting it once.
        row(Command::Notify, READ, AT_ONCE, None, Rerun, Viewer, OWN, SPAN),
    ]
};

/// One command as its own file describes it: the same shape for every command (mini-redis's
/// `cmd/`), reached through [`Command::spec`]. Its policy is its `POLICIES` row; its words are
/// the `i18n::About` it names.
pub(crate) struct Spec {
    /// The name after the slash, and a job's `command` field.
    pub name: &'static str,
    pub about: &'static i18n::About,
    /// The arguments a user may type, as its job keeps them; `None` for a command only buttons
    /// make (its arguments are oncebot's own).
    pub check: Option<fn(&str) -> Option<String>>,
    /// Its run for a job; `None` for a command answered at admission (`/help`, `/start`).
    pub run: Option<Run>,
    /// A house command's scheduler job, and what it starts in words.
    pub house: Option<House>,
}

/// A command's run: the job's arguments read, MoviePilot asked, the reply written (`Done`), or
/// the error whose kind decides what becomes of the job.
pub(crate) type Run =
    for<'a> fn(&'a Context<'a>, &'a Job, bool) -> BoxFuture<'a, Result<Done, MpError>>;

/// A house command's part of its [`Spec`].
#[derive(Clone, Copy)]
pub(crate) struct House {
    pub scheduler_job: &'static str,
    pub name: i18n::Words,
}

/// The error of a job whose arguments its command cannot use (oncebot wrote every job's
/// arguments, so only a hand-made or corrupt job has them).
pub(crate) fn not_runnable(job: &Job) -> MpError {
    MpError::Permanent(format!(
        "/{} {} is not a command oncebot runs",
        job.command, job.args
    ))
}

/// A job's `command` field as read back from the ledger: a command this release knows, or the
/// name a newer release wrote (the row reads, instead of as corrupt). A worker of this release
/// leaves such a job for a newer worker, never fails it (docs/releases.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobCommand {
    Known(Command),
    Other(String),
}

impl JobCommand {
    pub fn parse(name: &str) -> JobCommand {
        Command::from_name(name)
            .map_or_else(|| JobCommand::Other(name.to_string()), JobCommand::Known)
    }

    /// The stored name.
    pub fn name(&self) -> &str {
        match self {
            JobCommand::Known(c) => c.name(),
            JobCommand::Other(name) => name,
        }
    }
}

impl std::fmt::Display for JobCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

impl serde::Serialize for JobCommand {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Locale;
    use crate::i18n::{Listed, Texts, Usage};

    /// Every command says what it is in both languages (the compiler holds that each has an
    /// `About` and a `POLICIES` row; this holds their contents): a usage that names it, and a
    /// listing decision. Every command a user can type is in a menu (an admin's for the house
    /// commands, which no one else's menu names) unless it is hidden on purpose; the menus name
    /// nothing else, and each entry is one Telegram accepts (a bad one fails the whole list).
    #[test]
    fn every_command_has_its_words_in_both_languages_and_a_menu_decision() {
        // `/start` is what Telegram's own Start button sends; the menu offers `/help`, its twin.
        const HIDDEN: [Command; 1] = [Command::Start];
        for command in Command::ALL {
            let about = command.about();
            let name = command.name();
            assert_eq!(
                command.policy().command,
                command,
                "/{name}: its POLICIES row"
            );
            for zh in [true, false] {
                let usage = match about.usage {
                    Usage::Line(words) => words(zh),
                    Usage::Help | Usage::AdminHelp => "",
                };
                assert!(usage.is_empty() || usage.contains('/'), "/{name}: {usage}");
                match about.listed {
                    Listed::Everyone { menu, help } => {
                        assert!(!command.policy().house_wide, "/{name} in everyone's menu");
                        assert!((1..=256).contains(&menu(zh).chars().count()), "/{name}");
                        if let Some(help) = help {
                            assert!(help(zh).starts_with(&format!("/{name}")), "/{name}");
                        }
                    }
                    Listed::Admins { menu, help } => {
                        assert!(command.least_role("") == crate::vocabulary::Role::Admin);
                        assert!((1..=256).contains(&menu(zh).chars().count()), "/{name}");
                        assert!(help(zh).starts_with(&format!("/{name}")), "/{name}");
                    }
                    Listed::Hidden => {
                        assert!(!command.typed() || HIDDEN.contains(&command), "/{name}");
                    }
                }
            }
            if let Usage::Line(words) = about.usage {
                assert_ne!(
                    words(true),
                    words(false),
                    "/{name}: one text for two languages"
                );
            }
        }
        for locale in [Locale::Zh, Locale::En] {
            let texts = Texts::new(locale);
            let listing = Command::listing();
            let mut menu = texts.command_list(&listing);
            menu.extend(texts.admin_command_list(&listing));
            let names: Vec<&str> = menu.iter().map(|(name, _)| *name).collect();
            for command in Command::ALL {
                let shown = command.typed() && !HIDDEN.contains(&command);
                assert_eq!(
                    names.contains(&command.name()),
                    shown,
                    "/{} in the {locale:?} menu: expected {shown}",
                    command.name()
                );
            }
            for name in &names {
                assert_eq!(
                    names.iter().filter(|n| *n == name).count(),
                    1,
                    "/{name} twice"
                );
            }
        }
    }

    fn run(command: Command, args: &str) -> Parsed {
        Parsed::Run {
            command,
            args: args.into(),
        }
    }

    #[test]
    fn commands_answered_at_admission_have_no_run_and_an_unknown_name_stays_as_stored() {
        for command in [Command::Help, Command::Start] {
            assert!(command.spec().run.is_none(), "/{}", command.name());
        }
        for command in Command::ALL {
            let answered_at_admission = matches!(command, Command::Help | Command::Start);
            assert_eq!(command.spec().run.is_none(), answered_at_admission);
        }
        assert_eq!(JobCommand::parse("rm"), JobCommand::Other("rm".into()));
    }

    #[test]
    fn commands_are_case_folded_and_whitespace_collapsed() {
        assert_eq!(
            parse("  /Subscribe   三体  S1 ", ChatKind::Private, ""),
            run(Command::Subscribe, "三体 S1")
        );
    }

    #[test]
    fn the_bot_mention_is_stripped_and_other_bots_are_ignored() {
        assert_eq!(
            parse("/subscribe@OnceBot dune", ChatKind::Group, "oncebot"),
            run(Command::Subscribe, "dune")
        );
        assert_eq!(
            parse("/subscribe@other_bot dune", ChatKind::Group, "oncebot"),
            Parsed::NotForUs
        );
    }

    #[test]
    fn plain_text_is_a_search_in_private_and_ignored_in_groups() {
        assert_eq!(
            parse("流浪地球", ChatKind::Private, ""),
            run(Command::Search, "流浪地球")
        );
        assert_eq!(parse("hello all", ChatKind::Group, ""), Parsed::NotForUs);
    }

    #[test]
    fn chinese_keywords_map_to_commands() {
        assert_eq!(
            parse("订阅 三体", ChatKind::Private, ""),
            run(Command::Subscribe, "三体")
        );
        assert_eq!(
            parse("搜索 三体", ChatKind::Private, ""),
            run(Command::Search, "三体")
        );
        // A title that merely starts with the keyword is a search for that title.
        assert_eq!(
            parse("订阅者", ChatKind::Private, ""),
            run(Command::Search, "订阅者")
        );
        assert_eq!(
            parse("洗版 三体", ChatKind::Private, ""),
            run(Command::Best, "三体")
        );
        assert_eq!(
            parse("/best tmdb:108545 S1", ChatKind::Private, ""),
            run(Command::Best, "tmdb:108545 S1")
        );
        assert_eq!(
            parse("/best tmdb:1 season2", ChatKind::Private, ""),
            Parsed::BadArgs {
                command: Command::Best
            }
        );
    }

    #[test]
    fn best_and_subscribe_of_the_same_media_are_different_commands() {
        let asker = Asker::of(1, 2, None);
        assert_ne!(
            idempotency_key(asker, Command::Best, "tmdb:438631"),
            idempotency_key(asker, Command::Subscribe, "tmdb:438631")
        );
    }

    #[test]
    fn subscriptions_keeps_all_and_drops_anything_else() {
        assert_eq!(
            parse("/subscriptions ALL", ChatKind::Private, ""),
            run(Command::Subscriptions, "all")
        );
        assert_eq!(
            parse("/subscriptions please", ChatKind::Private, ""),
            run(Command::Subscriptions, "")
        );
    }

    #[test]
    fn bad_arguments_and_unknown_commands_are_values() {
        assert_eq!(
            parse("/unsubscribe abc", ChatKind::Private, ""),
            Parsed::BadArgs {
                command: Command::Unsubscribe
            }
        );
        assert_eq!(
            parse("/subscribe", ChatKind::Private, ""),
            Parsed::BadArgs {
                command: Command::Subscribe
            }
        );
        assert_eq!(
            parse("/frobnicate", ChatKind::Private, ""),
            Parsed::Unknown {
                name: "frobnicate".into()
            }
        );
    }

    #[test]
    fn idempotency_key_ignores_case_and_spacing_of_arguments() {
        let chat = |c, u| Asker::Chat {
            chat_id: c,
            user_id: u,
        };
        let a = idempotency_key(chat(1, 2), Command::Subscribe, "Dune  Part Two");
        let b = idempotency_key(chat(1, 2), Command::Subscribe, "dune part two");
        assert_eq!(a, b);
        assert_ne!(
            a,
            idempotency_key(chat(1, 3), Command::Subscribe, "dune part two")
        );
        assert_ne!(
            a,
            idempotency_key(chat(9, 2), Command::Subscribe, "dune part two")
        );
        assert_ne!(
            a,
            idempotency_key(chat(1, 2), Command::Search, "dune part two")
        );
        assert_eq!(a.len(), 32);
    }

    #[test]
    fn a_moviepilot_user_is_one_asker_in_every_chat() {
        let alice_here = Asker::of(-100, 1, Some("alice"));
        let alice_there = Asker::of(1, 1, Some("alice"));
        let key = |asker| idempotency_key(asker, Command::Subscribe, "tmdb:1");
        assert_eq!(key(alice_here), key(alice_there));
        assert_ne!(key(alice_here), key(Asker::of(-100, 1, Some("bob"))));
        assert_ne!(key(alice_here), key(Asker::of(-100, 1, None)));
        assert_eq!(
            Asker::of(-100, 1, None),
            Asker::Chat {
                chat_id: -100,
                user_id: 1
            }
        );
    }
}
