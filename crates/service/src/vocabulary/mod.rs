//! The words Rust and the Lua scripts share, as types: where a job is (`JobState`), what a reply
//! on the replies stream is (`ReplyKind`), what may be done with a job found running after a
//! crash (`Recovery`), a person's decision on a held job (`Resolution`), what resolve.lua
//! answered (`Resolved`), what a user may do (`Role`), how a MoviePilot call failed (`ErrorKind`)
//! and what a job did there (`MpOutcome`), where a live card stands (`CardState`), where a
//! message goes (`ChatTarget`: `chat/topic`), a person's own notices (`NoticePrefs`), and the names of a job's fields (`job_field`).
//! Each has one `as_str`, the exact string the scripts
//! store and compare; nothing else in Rust spells those strings.
//!
//! A leaf: it imports nothing of the crate, so the ledger, the worker, the texts (`i18n`) and the
//! pages can all use it without depending on each other.

mod card_state;
mod chat_target;
mod error_kind;
pub mod job_field;
mod job_state;
mod mp_outcome;
mod notice_prefs;
mod notification_type;
mod recovery;
mod reply_kind;
mod role;

pub use card_state::CardState;
pub use chat_target::ChatTarget;
pub use error_kind::ErrorKind;
pub use job_state::JobState;
pub use mp_outcome::MpOutcome;
pub use notice_prefs::{
    NoticeCategory, NoticeMode, NoticePrefs, QUIET_NIGHT_MAX, QuietHours, notice_clock,
};
pub use notification_type::NotificationType;
pub use recovery::Recovery;
pub use reply_kind::ReplyKind;
pub use role::Role;

/// A person's decision on a `needs_review` job (`jobs resolve --as`, spelled by the binary's
/// `ResolutionArg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    Succeeded,
    Failed,
    Retry,
}

impl Resolution {
    pub const ALL: [Resolution; 3] = [Resolution::Succeeded, Resolution::Failed, Resolution::Retry];

    /// ARGV of resolve.lua and tap.lua's review tokens.
    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Succeeded => "succeeded",
            Resolution::Failed => "failed",
            Resolution::Retry => "retry",
        }
    }
}

/// What resolve.lua did with a person's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolved {
    /// The job was waiting for review and is now in this state.
    Settled(JobState),
    /// The job is not waiting for review (settled meanwhile, or never held); nothing changed.
    NotWaiting(JobState),
    /// There is no such job (never, or expired).
    Missing,
}
