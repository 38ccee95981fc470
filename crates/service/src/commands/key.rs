//! A command's business key and the jobs it makes: whose repeat a command is (`Asker`), the
//! digest that makes a repeat inside its window a pointer to the first job, and the
//! `ledger::JobSpec` an admission or a button hands the ledger, which knows no command.

use std::time::Duration;

use sha2::{Digest, Sha256};

use super::{Command, Window, collapse_whitespace};
use crate::ledger::{Job, JobSpec, Owner, TokenAction};
use crate::vocabulary::Role;
use crate::worker::context::owner;

/// Whose repeat a command is. A user mapped to a MoviePilot user is one person in every chat
/// (the same ask in a group and in a private chat is one job); anyone else is one user in one
/// chat, as before users were mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asker<'a> {
    /// A mapped user: their MoviePilot username.
    MoviePilot(&'a str),
    /// A user with no MoviePilot name of their own, in this chat.
    Chat { chat_id: i64, user_id: i64 },
    /// Nobody in particular: a house command (`Policy::house_wide`) is one per window for
    /// everyone, whoever asks.
    House,
}

impl<'a> Asker<'a> {
    /// Whose repeat `command` is when `user_id` asks it in `chat_id`, acting for `requester`.
    pub fn for_command(
        command: Command,
        chat_id: i64,
        user_id: i64,
        requester: Option<&'a str>,
    ) -> Self {
        if command.policy().house_wide {
            return Asker::House;
        }
        Self::of(chat_id, user_id, requester)
    }

    /// The asker of a command from `user_id` in `chat_id`, acting for `requester`.
    pub fn of(chat_id: i64, user_id: i64, requester: Option<&'a str>) -> Self {
        match requester {
            Some(name) => Asker::MoviePilot(name),
            None => Asker::Chat { chat_id, user_id },
        }
    }
}

/// The business idempotency key: a digest of the asker, command and case-folded arguments.
/// The time window is not part of the digest: it is the key's PX expiry, so the window starts
/// at the first request instead of at a clock boundary.
///
/// 32 hex characters: the first 128 bits of SHA-256. Two different commands would have to
/// collide while one's key is alive (a window of minutes) for the second to be taken as a
/// duplicate; at 128 bits that does not happen in practice, and every job HASH, `cmd:` key and
/// button token holding the digest is half the size of a full SHA-256 in hex.
pub fn idempotency_key(asker: Asker<'_>, command: Command, args: &str) -> String {
    let mut h = Sha256::new();
    match asker {
        // 16 bytes of ids, as before names existed: an upgrade keeps every open window.
        Asker::Chat { chat_id, user_id } => {
            h.update(chat_id.to_le_bytes());
            h.update(user_id.to_le_bytes());
        }
        // A marker no pair of ids starts with the same way (ids are 16 bytes, a name is
        // prefixed and NUL-terminated), so a name never collides with a chat and user.
        Asker::MoviePilot(name) => {
            h.update(b"moviepilot:");
            h.update(name.as_bytes());
            h.update([0]);
        }
        Asker::House => h.update(b"house:\0"),
    }
    h.update(command.name().as_bytes());
    h.update([0]);
    h.update(collapse_whitespace(args).to_lowercase().as_bytes());
    hex::encode(&h.finalize()[..16])
}

impl Command {
    /// The job `asker` makes with `args`, a repeat of which inside `window` is the same job.
    pub fn job(self, asker: Asker<'_>, args: impl Into<String>, window: Duration) -> JobSpec {
        let args = args.into();
        JobSpec {
            command: self.name(),
            idem: idempotency_key(asker, self, &args),
            window,
            recovery: self.policy().recovery,
            least_role: self.least_role(&args),
            args,
        }
    }

    /// The job a button makes for `owner` (acting for `requester`), with the business key of
    /// the same command typed by them; a button any admin may tap (`Owner::Admins`) has none.
    pub fn button(
        self,
        owner: Owner,
        requester: Option<&str>,
        args: impl Into<String>,
        window: Duration,
    ) -> JobSpec {
        self.button_keyed(owner, requester, args, None, window)
    }

    /// [`Command::button`], its business key digesting `key_args` instead of the arguments (a
    /// download is the same whichever list or button it came from: its key is the release).
    pub fn button_keyed(
        self,
        owner: Owner,
        requester: Option<&str>,
        args: impl Into<String>,
        key_args: Option<&str>,
        window: Duration,
    ) -> JobSpec {
        let args = args.into();
        let idem = match owner {
            Owner::User { chat_id, user_id } => idempotency_key(
                Asker::for_command(self, chat_id, user_id, requester),
                self,
                key_args.unwrap_or(&args),
            ),
            Owner::Admins { .. } => String::new(),
        };
        JobSpec {
            command: self.name(),
            idem,
            window,
            recovery: self.policy().recovery,
            least_role: self.least_role(&args),
            args,
        }
    }
}

impl Window {
    /// A house command's business key in this window: the same for everyone who asks, and for
    /// a calendar-day window a new one each day (the day is digested with the command). The
    /// admission and its repeat's force button both name the window by it.
    pub fn house_key(&self, command: Command) -> String {
        idempotency_key(Asker::House, command, self.day.as_deref().unwrap_or(""))
    }

    /// A house command's job in this window (its admission).
    pub fn house_job(&self, command: Command) -> JobSpec {
        JobSpec {
            command: command.name(),
            args: String::new(),
            idem: self.house_key(command),
            window: self.length,
            recovery: command.policy().recovery,
            least_role: command.least_role(""),
        }
    }

    /// The job of the force button under a house command's repeat: the same key and window,
    /// and running it inside the window is an admin's whatever the command.
    pub fn forced_job(&self, command: Command) -> JobSpec {
        let job = self.house_job(command);
        JobSpec {
            least_role: job.least_role.max(Role::Admin),
            ..job
        }
    }
}

/// A button that makes `command`'s job with `args`, as `job`'s asker typing it would (the same
/// business key and window), bound to them in this chat.
pub fn run_button(
    job: &Job,
    command: Command,
    args: impl Into<String>,
    window: Duration,
) -> TokenAction {
    TokenAction::Run(command.button(owner(job), job.requester.as_deref(), args, window))
}
