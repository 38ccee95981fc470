//! Ingress: a Telegram update in, one admission decision out.
//!
//! Both doors (the webhook and long polling) call [`Ingress::handle`], so the rules for what
//! becomes a job are written once. Ingress never waits for MoviePilot or for a send: it records
//! the update in Redis and returns.
//!
//! A message becomes an admission (a job or a reply; a command whose policy says
//! `needs_confirmation` becomes a read-only job that looks its target up and asks); a callback
//! query (a tap on a button) becomes one `Ledger::tap`, which decides and queues its answer in
//! one step.

mod access;
pub mod polling;
mod requests;
pub mod webhook;

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use sha2::{Digest, Sha256};

use crate::commands::{self, Asker, ChatKind, Command, HouseAsked, Parsed};
use crate::config::{CommandSettings, Settings};
use crate::i18n::Texts;
use crate::ledger::{
    Admission, AdmissionAction, Admitted, ClaimOutcome, ClaimTry, Ledger, LedgerError, Owner, Tap,
    Tapped,
};
use crate::metrics::METRICS;
use crate::telegram::keyboard;
use crate::telegram::types::{CallbackQuery, Message, Update, User};
use crate::users::Live;
use crate::vocabulary::{JobState, ReplyKind, Role};

/// A stranger is told "not allowed" once per this window, however much they write.
const REFUSAL_WINDOW: Duration = Duration::from_secs(3600);

/// Why an update made no change in the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// An update kind the bot does not handle (poll, chat_member, ...).
    UnhandledKind,
    /// An edited message: editing a command does not run it again.
    EditedMessage,
    /// A callback query is not a message: [`Ingress::handle`] takes it to [`Ledger::tap`].
    CallbackQuery,
    /// No sender, a bot sender, a channel post, or no text.
    NoCommand,
    /// Plain text in a group, or a command for another bot.
    NotForUs,
}

impl Ignored {
    pub fn as_str(self) -> &'static str {
        match self {
            Ignored::UnhandledKind => "unhandled_kind",
            Ignored::EditedMessage => "edited_message",
            Ignored::CallbackQuery => "callback_query",
            Ignored::NoCommand => "no_command",
            Ignored::NotForUs => "not_for_us",
        }
    }
}

/// What became of one update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    Admitted(Admitted),
    /// A callback query, decided and answered by the ledger.
    Tapped(Tapped),
    Ignored(Ignored),
}

/// The rules of admission, shared by both doors.
#[derive(Clone)]
pub struct Ingress {
    inner: Arc<Inner>,
}

struct Inner {
    ledger: Ledger,
    /// Who may use the bot and who each is (`telegram.allowed_users` and `telegram.users`, the
    /// grants and MoviePilot's mapping as `users_sync` follows them): decided here, before
    /// admission.
    directory: Live,
    bot_username: String,
    texts: Texts,
    commands: CommandSettings,
    /// `commands.day_zone`: a calendar-day window's zone, and the clock a repeat is told in.
    day_zone: TimeZone,
    /// `telegram.confirm_ttl_secs`: how long a force button works.
    confirm_ttl: Duration,
    /// `notify.webhook_secret` while the relay is on: the wake-up path's secret (else it is 404).
    wake_secret: Option<crate::config::Secret>,
    /// Whether Redis may evict the ledger's keys now: both doors admit nothing while it may.
    redis_policy: crate::redis_policy::Watch,
    /// Whether a worker older than 0.2.0 is alive, which would fail a job of a new kind.
    gate: crate::versions::Gate,
    /// Whether Redis takes writes, as this process finds it: the process's one `WriteHealth`
    /// (`app` hands it to the other roles), told of every refused admission.
    write_health: crate::redis_health::WriteHealth,
    /// Asking for access from the chat (`household`, `telegram.admin_chats`).
    access: access::AccessSettings,
    /// Media requests (`household.request_ttl_secs`, ..., `telegram.admin_chats`).
    requests: requests::RequestSettings,
}

impl Ingress {
    pub fn new(settings: &Settings, ledger: Ledger) -> Self {
        Self {
            inner: Arc::new(Inner {
                ledger,
                // Settings are validated before any role starts (`Settings::validate` checks
                // `telegram.users`); an empty directory would refuse everyone, never allow more.
                directory: Live::new(settings.directory().unwrap_or_default()),
                bot_username: settings
                    .telegram
                    .bot_username
                    .trim_start_matches('@')
                    .into(),
                texts: Texts::new(settings.telegram.locale),
                commands: settings.commands.clone(),
                day_zone: settings.commands.zone(),
                confirm_ttl: Duration::from_secs(settings.telegram.confirm_ttl_secs),
                wake_secret: (settings.notify.enabled
                    && !settings.notify.webhook_secret.is_empty())
                .then(|| settings.notify.webhook_secret.clone()),
                redis_policy: Default::default(),
                gate: crate::versions::Gate::default(),
                write_health: crate::redis_health::WriteHealth::new(),
                access: access::AccessSettings::new(settings),
                requests: requests::RequestSettings::new(settings),
            }),
        }
    }

    pub fn ledger(&self) -> &Ledger {
        &self.inner.ledger
    }

    /// What the live check of Redis's `maxmemory-policy` found (`redis_policy::run` writes it,
    /// `/readyz` reads it): while an evicting policy is found, nothing is admitted.
    pub fn redis_policy(&self) -> &crate::redis_policy::Watch {
        &self.inner.redis_policy
    }

    /// The directory this ingress decides with, for `users_sync::Follower` to keep current.
    pub fn directory(&self) -> &Live {
        &self.inner.directory
    }

    /// The process's view of whether Redis takes writes (`redis_health`).
    pub fn write_health(&self) -> &crate::redis_health::WriteHealth {
        &self.inner.write_health
    }

    /// An update Redis did not record, which Telegram delivers again (`then` says how): learned
    /// by the write health, counted, and logged (at debug while Redis refuses writes, which
    /// `redis_health` says once an episode).
    pub fn not_recorded(&self, update_id: i64, e: &LedgerError, then: &str) {
        self.write_health().learn(e);
        METRICS.update(if e.refusal().is_some() {
            "writes_refused"
        } else {
            "unavailable"
        });
        crate::log_unless_refused!(e, error, update_id, error = %e, "update not recorded; {then}");
    }

    /// The relay's wake-up secret, when the relay is on and one is set: the wake-up path works
    /// on every process of the deployment (the relay polls through Redis).
    pub fn wake_secret(&self) -> Option<&crate::config::Secret> {
        self.inner.wake_secret.as_ref()
    }

    /// Decides and records one update. An `Err` means Redis did not take it: the caller must
    /// make Telegram deliver it again (503 to the webhook; no offset advance when polling).
    pub async fn handle(&self, update: &Update) -> Result<Handled, LedgerError> {
        if let Some(query) = &update.callback_query {
            if let Some(token) = query.data.as_deref().and_then(keyboard::access_token_of) {
                return self.access_tap(update.update_id, query, token).await;
            }
            if let Some(token) = query.data.as_deref().and_then(keyboard::request_token_of) {
                return self.request_tap(update.update_id, query, token).await;
            }
            return self.tap(update.update_id, query).await;
        }
        // `/claim`, the one command a stranger may send: before the allow-list.
        if let Some((message, from, typed)) = self.claim_of(update) {
            return self.claim(update.update_id, message, from, typed).await;
        }
        // A stranger in a private chat may ask for access (`household.access_requests`).
        if let Some((message, from)) = self.asks_access(update) {
            return self.offer_access(update.update_id, message, from).await;
        }
        let mut admission = match self.decide(update) {
            Ok(a) => a,
            Err(ignored) => {
                METRICS.update("ignored");
                tracing::debug!(
                    update_id = update.update_id,
                    reason = ignored.as_str(),
                    "update ignored"
                );
                return Ok(Handled::Ignored(ignored));
            }
        };
        self.hold_new_kind(&mut admission).await?;
        let admitted = self.inner.ledger.admit(&admission).await?;
        self.count(update, &admission, &admitted);
        log_admitted(update.update_id, &admission, &admitted);
        Ok(Handled::Admitted(admitted))
    }

    /// A job of a kind newer than a worker still alive (an upgrade under way: one of a
    /// release before 0.2.0, which fails a kind it does not know) becomes the "being upgraded"
    /// answer instead, and no job (docs/releases.md). Read only for a new kind, and at most
    /// once per `versions::GATE_VIEW`: the view may be that old.
    async fn hold_new_kind(&self, admission: &mut Admission) -> Result<(), LedgerError> {
        let kind = match &admission.action {
            AdmissionAction::Job(job)
            | AdmissionAction::Confirm { job, .. }
            | AdmissionAction::HouseJob { job, .. } => job.command,
            AdmissionAction::Reply { .. } => return Ok(()),
        };
        let inner = &self.inner;
        let requester = admission.role == Role::Requester;
        let held = (crate::versions::is_new_kind(kind)
            && inner.gate.older_worker_alive(&inner.ledger).await?)
            || (requester && inner.gate.requester_unknown(&inner.ledger).await?);
        if !held {
            return Ok(());
        }
        tracing::info!(
            kind,
            "a command newer than a worker still running: answered, not admitted, until the upgrade is over"
        );
        admission.action = AdmissionAction::Reply {
            kind: ReplyKind::UnknownCommand,
            text: inner.texts.upgrading().into(),
            window: Duration::ZERO,
            once_key: String::new(),
        };
        Ok(())
    }

    /// A tap on a button: one `Ledger::tap`, which decides and queues its answer.
    async fn tap(&self, update_id: i64, query: &CallbackQuery) -> Result<Handled, LedgerError> {
        let mut tap = self.read_tap(update_id, query);
        if tap.allowed {
            self.quota_and_request(&mut tap, &query.from).await?;
        }
        let inner = &self.inner;
        // Only tap.lua reads the token, so the kinds held back go with every tap.
        let held = match inner.gate.older_worker_alive(&inner.ledger).await? {
            true => crate::versions::new_kinds_arg(),
            false => String::new(),
        };
        // A requester's job carries a role a 0.2.0 worker cannot read: while one lives, no
        // button of theirs makes a job (issue 44).
        let held = match tap.role == Role::Requester
            && inner.gate.requester_unknown(&inner.ledger).await?
        {
            true => format!(
                "|{}|",
                crate::versions::worker_kinds()
                    .collect::<Vec<_>>()
                    .join("|")
            ),
            false => held,
        };
        let tapped = inner.ledger.tap_holding(&tap, &held).await?;
        METRICS.update("callback");
        tracing::info!(
            update_id,
            user_id = tap.user_id,
            chat_id = tap.chat_id,
            outcome = tapped.outcome(),
            job_id = tapped_job(&tapped),
            "button tapped"
        );
        Ok(Handled::Tapped(tapped))
    }

    /// Counts an admission's outcome (a refusal by its kind) and a new job's first state; a
    /// command the user's role does not allow is also logged.
    fn count(&self, update: &Update, admission: &Admission, admitted: &Admitted) {
        let refused = match &admission.action {
            AdmissionAction::Reply { kind, .. } => Some(*kind),
            _ => None,
        };
        METRICS.update(match refused {
            Some(ReplyKind::Refusal) => "unauthorised",
            Some(ReplyKind::Forbidden) => "forbidden",
            _ => admitted.outcome(),
        });
        if refused == Some(ReplyKind::Forbidden) {
            tracing::info!(
                update_id = update.update_id,
                user_id = admission.user_id,
                chat_id = admission.chat_id,
                command = self.forbidden_command(update),
                "command refused: the user's role does not allow it; no job"
            );
        }
        if let (
            Admitted::New { .. },
            AdmissionAction::Job(job) | AdmissionAction::HouseJob { job, .. },
        ) = (admitted, &admission.action)
        {
            METRICS.transition(job.command, JobState::Pending.as_str());
        }
    }

    /// The pure part: what this update asks for, before Redis is involved.
    pub fn decide(&self, update: &Update) -> Result<Admission, Ignored> {
        let inner = &self.inner;
        let (message, from, text, chat) = command_message(update)?;
        let parsed = commands::parse(text, chat, &inner.bot_username);
        if parsed == Parsed::NotForUs {
            return Err(Ignored::NotForUs);
        }
        // `None` for a stranger (refused below); while nobody is mapped, every allowed user is
        // an admin acting as the service account.
        let identity = inner.directory.current().identify(from.id);
        let allowed = identity.is_some();
        let role = identity
            .as_ref()
            .map_or(crate::vocabulary::Role::Admin, |i| i.role);
        let requester = identity.and_then(|i| i.requester);
        let action = if !allowed {
            AdmissionAction::Reply {
                kind: ReplyKind::Refusal,
                text: inner.texts.refusal().into(),
                window: REFUSAL_WINDOW,
                once_key: once_key(ReplyKind::Refusal, message.chat.id, from.id),
            }
        } else {
            let asker = Asker::of(message.chat.id, from.id, requester.as_deref());
            self.action(parsed, role, message, (from.id, asker))?
        };
        Ok(Admission {
            update_id: update.update_id,
            chat_id: message.chat.id,
            user_id: from.id,
            message_id: Some(message.message_id),
            thread_id: message.topic(),
            requester,
            role,
            action,
        })
    }

    /// What an allowed user's parsed text becomes: a job (a lookup without a window when its
    /// command asks first), or a reply (help, usage, unknown command, not for this role).
    fn action(
        &self,
        parsed: Parsed,
        role: Role,
        message: &Message,
        (user_id, asker): (i64, Asker<'_>),
    ) -> Result<AdmissionAction, Ignored> {
        let texts = self.inner.texts;
        let reply = |kind: ReplyKind, text: String| AdmissionAction::Reply {
            kind,
            text,
            window: Duration::ZERO,
            once_key: String::new(),
        };
        Ok(match parsed {
            // A requester's subscription is looked up as anyone's; where it would act, their
            // worker makes a request instead (issue 44).
            Parsed::Run { command, args }
                if role < command.least_role(&args)
                    && !(role == Role::Requester && command.requestable()) =>
            {
                reply(
                    ReplyKind::Forbidden,
                    texts.forbidden(command.least_role(&args)).into(),
                )
            }
            Parsed::Run {
                command: Command::Help | Command::Start,
                ..
            } => reply(ReplyKind::Help, texts.help_for(role, &Command::listing())),
            // The ask is a lookup job without a window; its Confirm button makes the job that
            // has the window (see `Policy::needs_confirmation`).
            Parsed::Run { command, args } if command.policy().needs_confirmation => {
                AdmissionAction::Job(command.job(asker, args, Duration::ZERO))
            }
            Parsed::Run { command, .. } if command.policy().house_wide => {
                self.house_job(command, message, user_id, Timestamp::now())
            }
            Parsed::Run { command, args } => {
                let window = command.window(&self.inner.commands);
                AdmissionAction::Job(command.job(asker, args, window))
            }
            Parsed::BadArgs { command } => reply(ReplyKind::Usage, command.usage(&texts)),
            Parsed::Unknown { name } => {
                reply(ReplyKind::UnknownCommand, texts.unknown_command(&name))
            }
            Parsed::NotForUs => return Err(Ignored::NotForUs),
        })
    }
}

impl Ingress {
    /// A `/claim` (`/claim@<this bot>`) in a private chat from a person, with what follows it.
    fn claim_of<'u>(&self, update: &'u Update) -> Option<(&'u Message, &'u User, &'u str)> {
        let (message, from, text, chat) = command_message(update).ok()?;
        if chat != ChatKind::Private {
            return None;
        }
        let text = text.trim_start();
        let end = text.find(char::is_whitespace).unwrap_or(text.len());
        let (word, rest) = text.split_at(end);
        let (command, bot) = word.split_once('@').unwrap_or((word, ""));
        let ours = bot.is_empty()
            || self.inner.bot_username.is_empty()
            || bot.eq_ignore_ascii_case(&self.inner.bot_username);
        (command.eq_ignore_ascii_case("/claim") && ours).then_some((message, from, rest))
    }

    /// A `/claim <code>`: the code's digest to bot_claim.lua, which grants, counts and answers
    /// in one step. The code is in no log line, no reply and no key.
    async fn claim(
        &self,
        update_id: i64,
        message: &Message,
        from: &User,
        typed: &str,
    ) -> Result<Handled, LedgerError> {
        let inner = &self.inner;
        let digest = match typed.trim() {
            "" => String::new(),
            typed => crate::claim::digest(typed),
        };
        let texts = inner.texts.claim_texts();
        let claim = ClaimTry {
            update_id,
            chat_id: message.chat.id,
            user_id: from.id,
            message_id: message.message_id,
            digest: &digest,
            claimed: !inner.directory.current().admins().is_empty(),
            texts: &texts,
        };
        let outcome = inner.ledger.claim_bot(&claim).await?;
        METRICS.update("claim");
        tracing::info!(
            update_id,
            user_id = from.id,
            outcome = outcome.as_str(),
            "/claim answered"
        );
        if outcome == ClaimOutcome::Claimed {
            tracing::warn!(
                user_id = from.id,
                "the bot was claimed: this Telegram user is an admin now (a grant by claim); the \
                 claim code is spent"
            );
        }
        Ok(Handled::Admitted(match outcome {
            ClaimOutcome::DuplicateUpdate => Admitted::DuplicateUpdate {
                job_id: None,
                state: None,
            },
            ClaimOutcome::Silent => Admitted::Suppressed,
            _ => Admitted::Replied,
        }))
    }

    /// A house command's admission at `now` (`commands::house_admission`).
    fn house_job(
        &self,
        command: Command,
        message: &Message,
        user_id: i64,
        now: Timestamp,
    ) -> AdmissionAction {
        let inner = &self.inner;
        let asked = HouseAsked {
            settings: &inner.commands,
            zone: &inner.day_zone,
            texts: inner.texts,
            confirm_ttl: inner.confirm_ttl,
            owner: Owner::User {
                chat_id: message.chat.id,
                user_id,
            },
            message_id: message.message_id,
        };
        commands::house_admission(command, &asked, now)
    }
}

/// A message that can carry a command: its sender (a person, not a bot), its text and the kind
/// of chat it is in (private, or a group; a channel is not).
fn command_message(update: &Update) -> Result<(&Message, &User, &str, ChatKind), Ignored> {
    let Some(message) = &update.message else {
        return Err(if update.edited_message.is_some() {
            Ignored::EditedMessage
        } else if update.callback_query.is_some() {
            Ignored::CallbackQuery
        } else {
            Ignored::UnhandledKind
        });
    };
    let (Some(from), Some(text)) = (&message.from, &message.text) else {
        return Err(Ignored::NoCommand);
    };
    if from.is_bot {
        return Err(Ignored::NoCommand);
    }
    let chat = match message.chat.kind.as_str() {
        "private" => ChatKind::Private,
        "group" | "supergroup" => ChatKind::Group,
        _ => return Err(Ignored::NoCommand),
    };
    Ok((message, from, text, chat))
}

/// The job a tap's answer names, for the log line.
fn tapped_job(tapped: &Tapped) -> Option<u64> {
    match tapped {
        Tapped::New { job_id }
        | Tapped::DuplicateCommand { job_id, .. }
        | Tapped::Resolved { job_id, .. }
        | Tapped::Settled { job_id, .. } => Some(*job_id),
        Tapped::Used { job_id, .. } | Tapped::DuplicateUpdate { job_id, .. } => *job_id,
        _ => None,
    }
}

/// The line that says what became of an admitted update.
fn log_admitted(update_id: i64, admission: &Admission, admitted: &Admitted) {
    match admitted {
        Admitted::New { job_id } => tracing::info!(
            update_id,
            job_id,
            chat_id = admission.chat_id,
            "job created"
        ),
        Admitted::DuplicateUpdate { job_id, .. } => {
            tracing::info!(update_id, job_id, "update delivered again; nothing changed")
        }
        Admitted::DuplicateCommand { job_id, state } => tracing::info!(
            update_id,
            job_id,
            state = state.as_str(),
            "same command inside its window; pointed at the existing job"
        ),
        Admitted::Confirming => tracing::info!(
            update_id,
            chat_id = admission.chat_id,
            "asked for a confirmation; no job until it is tapped"
        ),
        Admitted::Replied | Admitted::Suppressed => tracing::debug!(
            update_id,
            outcome = admitted.outcome(),
            "answered without a job"
        ),
    }
}

impl Ingress {
    /// The command a refused update asked for, for the log line.
    fn forbidden_command(&self, update: &Update) -> &'static str {
        let Some(m) = &update.message else { return "" };
        let chat = if m.chat.kind == "private" {
            ChatKind::Private
        } else {
            ChatKind::Group
        };
        match m
            .text
            .as_deref()
            .map(|t| commands::parse(t, chat, &self.inner.bot_username))
        {
            Some(Parsed::Run { command, .. }) => command.name(),
            _ => "",
        }
    }

    /// What a callback query asks of the ledger. Anything not recognisably one of our buttons
    /// still goes to the ledger, so it too is answered (once).
    fn read_tap(&self, update_id: i64, query: &CallbackQuery) -> Tap {
        let identity = self.inner.directory.current().identify(query.from.id);
        let role = identity
            .as_ref()
            .map_or(crate::vocabulary::Role::Viewer, |i| i.role);
        let chat_id = query.message.as_ref().map(|m| m.chat.id);
        Tap {
            update_id,
            callback_query_id: query.id.clone(),
            user_id: query.from.id,
            allowed: !query.from.is_bot && identity.is_some(),
            // tap.lua decides what the role allows (it alone reads the token).
            role,
            requester: identity.and_then(|i| i.requester),
            // Set by `tap`, which reads the tapper's quota first.
            request: None,
            quota: None,
            chat_id,
            message_id: query.message.as_ref().map(|m| m.message_id),
            thread_id: query.message.as_ref().and_then(|m| m.topic()),
            token: query
                .data
                .as_deref()
                .and_then(keyboard::token_of)
                .map(str::to_string),
        }
    }
}

/// The key under which a reply of `kind` to this user in this chat goes out once per window.
fn once_key(kind: ReplyKind, chat_id: i64, user_id: i64) -> String {
    let mut h = Sha256::new();
    h.update(kind.as_str().as_bytes());
    h.update([0]);
    h.update(chat_id.to_le_bytes());
    h.update(user_id.to_le_bytes());
    hex::encode(&h.finalize()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ingress(users: &str) -> Ingress {
        let settings = Settings::load_from(
            None,
            [
                ("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1,2,3"),
                ("ONCEBOT__TELEGRAM__USERS", users),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string())),
        )
        .unwrap();
        // Connecting is lazy (it needs a runtime, not a Redis): `decide` never reaches Redis.
        let ledger = Ledger::connect(
            &settings,
            crate::i18n::Texts::new(settings.telegram.locale).for_ledger(),
        )
        .unwrap();
        Ingress::new(&settings, ledger)
    }

    fn message(user: i64, text: &str) -> Update {
        serde_json::from_value(serde_json::json!({
            "update_id": 10,
            "message": {"message_id": 5, "from": {"id": user}, "chat": {"id": user, "type": "private"},
                "text": text}
        }))
        .unwrap()
    }

    /// A house command's force button lives `telegram.confirm_ttl_secs`, except a calendar
    /// day's, which ends with the day: from 23:59:30 in Shanghai it works 30 s, so it cannot
    /// force yesterday's sign-in after midnight. (The clock is the argument.)
    #[tokio::test]
    async fn a_calendar_days_force_button_ends_with_the_day() {
        let ingress = ingress("");
        let update = message(1, "/site_signin");
        let msg = update.message.as_ref().unwrap();
        let ttl_at = |command: Command, at: &str| match ingress.house_job(
            command,
            msg,
            1,
            at.parse().unwrap(),
        ) {
            AdmissionAction::HouseJob { force, job, .. } => (force.ttl, job.window),
            other => panic!("{other:?}"),
        };
        let (ttl, window) = ttl_at(Command::SiteSignin, "2026-12-03T15:59:30Z");
        assert_eq!(
            (ttl, window),
            (Duration::from_secs(30), Duration::from_secs(30))
        );
        let (ttl, _) = ttl_at(Command::SiteSignin, "2026-12-03T03:00:00Z");
        assert_eq!(ttl, Duration::from_secs(600), "telegram.confirm_ttl_secs");
        let (ttl, _) = ttl_at(Command::Transfer, "2026-12-03T15:59:30Z");
        assert_eq!(ttl, Duration::from_secs(600));
    }

    fn forbidden(a: &Admission) -> bool {
        matches!(
            a.action,
            AdmissionAction::Reply {
                kind: ReplyKind::Forbidden,
                ..
            }
        )
    }

    /// Issue 22: a viewer's /subscribe makes no job; a user may, but not `/subscriptions all`.
    #[tokio::test]
    async fn a_command_above_the_role_is_answered_without_a_job() {
        let i = ingress("1=alice:viewer,2=bob:admin");
        assert!(forbidden(
            &i.decide(&message(1, "/subscribe tmdb:1")).unwrap()
        ));
        assert!(!forbidden(&i.decide(&message(1, "/search dune")).unwrap()));
        // 3 is unmapped while others are: a user.
        assert!(!forbidden(
            &i.decide(&message(3, "/subscribe tmdb:1")).unwrap()
        ));
        assert!(forbidden(
            &i.decide(&message(3, "/subscriptions all")).unwrap()
        ));
        assert!(!forbidden(
            &i.decide(&message(2, "/subscriptions all")).unwrap()
        ));
    }

    /// Nothing changes for a deployment that maps nobody: everyone may do everything.
    #[tokio::test]
    async fn nobody_mapped_keeps_every_right() {
        let i = ingress("");
        for text in ["/subscriptions all", "/subscribe tmdb:1", "/download dune"] {
            let a = i.decide(&message(3, text)).unwrap();
            assert!(matches!(a.action, AdmissionAction::Job { .. }), "{text}");
        }
    }
}
