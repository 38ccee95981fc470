//! What a failed MoviePilot call means for the job that made it.
//!
//! The worker decides from the kind alone: a permanent failure ends the job, a transient one is
//! retried later, and an uncertain one must be checked against MoviePilot before anything is
//! repeated, because the call may already have taken effect. The text says which call failed
//! and why; it never carries a secret, a token or raw torrent data (see `client`).

use crate::vocabulary::ErrorKind;

/// A failed MoviePilot call, classified by what may be done about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MpError {
    /// Repeating the call fails the same way: MoviePilot refused it (a 4xx, or `success:false`
    /// with a reason such as 未识别到媒体信息).
    #[error("{0}")]
    Permanent(String),
    /// What the user asked cannot be done, and the text says why in the user's words (no such
    /// media, no such season, the subscription is gone): shown to the user as it is.
    #[error("{0}")]
    Declined(String),
    /// MoviePilot refused oncebot's credentials (the API key, the login, or the user's rights).
    /// Nothing the user did: the operator must fix a setting, and the job waits meanwhile.
    #[error("{0}")]
    CredentialsRefused(String),
    /// Nothing happened, try again later: MoviePilot is unreachable, answered 5xx, or a
    /// read-only call timed out.
    #[error("{0}")]
    Transient(String),
    /// A call with a side effect (subscribe, unsubscribe, search now) was sent but its answer
    /// never arrived: it may or may not have taken effect. Check before repeating it.
    #[error("{0}")]
    Uncertain(String),
}

impl MpError {
    /// Its kind, for logs, metrics and the ledger's `mp_error_kind`.
    pub fn kind(&self) -> ErrorKind {
        match self {
            MpError::Permanent(_) => ErrorKind::Permanent,
            MpError::Declined(_) => ErrorKind::Declined,
            MpError::CredentialsRefused(_) => ErrorKind::Credentials,
            MpError::Transient(_) => ErrorKind::Transient,
            MpError::Uncertain(_) => ErrorKind::Uncertain,
        }
    }

    /// The text, without the kind.
    pub fn message(&self) -> &str {
        match self {
            MpError::Permanent(m)
            | MpError::Declined(m)
            | MpError::CredentialsRefused(m)
            | MpError::Transient(m)
            | MpError::Uncertain(m) => m,
        }
    }
}

/// `MoviePilot::connect` could not reach the server at all (as opposed to a setting it refused):
/// worth trying again later.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Unreachable(pub String);

/// Why MoviePilot's users could not be listed (`MoviePilot::list_users`), apart from any other
/// failed call: one kind the caller can explain to the operator, since it lasts until a
/// setting changes in MoviePilot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListUsersError {
    /// The MoviePilot account oncebot acts as is not a superuser, so MoviePilot refuses the list
    /// (v2.5.6: 400 `{"detail":"用户权限不足"}`; v3: the same words in its envelope, or a 403).
    #[error("{0}")]
    NotSuperuser(String),
    /// Any other failure, as every call classifies it.
    #[error(transparent)]
    Failed(#[from] MpError),
}
