//! How a MoviePilot call failed: the kind decides what becomes of the job (failed at once,
//! retried, verified, waiting for the operator) and the sentence the user reads. Stored in a job's
//! `mp_error_kind` field and a metric's `kind` label; this is the only spelling of its values.

use std::str::FromStr;

/// A MoviePilot error's kind (`moviepilot::MpError::kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The request is wrong and will stay wrong (a 4xx, an answer that makes no sense).
    Permanent,
    /// MoviePilot said no, in words the user may read (no such media, not allowed).
    Declined,
    /// MoviePilot refuses oncebot's credentials: the operator's to fix.
    Credentials,
    /// Unreachable, a timeout before anything was sent, a 5xx of a call that is safe to repeat.
    Transient,
    /// The call may have had its effect: verified, or held for a person.
    Uncertain,
}

impl ErrorKind {
    /// The job field that stores it.
    pub const FIELD: &'static str = "mp_error_kind";

    pub const ALL: [ErrorKind; 5] = [
        ErrorKind::Permanent,
        ErrorKind::Declined,
        ErrorKind::Credentials,
        ErrorKind::Transient,
        ErrorKind::Uncertain,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Permanent => "permanent",
            ErrorKind::Declined => "declined",
            ErrorKind::Credentials => "credentials",
            ErrorKind::Transient => "transient",
            ErrorKind::Uncertain => "uncertain",
        }
    }
}

impl FromStr for ErrorKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ErrorKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown error kind {s:?}"))
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for k in ErrorKind::ALL {
            assert_eq!(k.as_str().parse::<ErrorKind>(), Ok(k));
        }
        assert!("Permanent".parse::<ErrorKind>().is_err());
    }
}
