//! What may be done with a job found `running` after its worker died, as a job's `recovery`
//! field stores it (written at admission, read by claim.lua).

use std::str::FromStr;

/// What is safe to do with a job that was `running` when its worker died.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// Read-only: run it again.
    Rerun,
    /// Read-only at MoviePilot but costly elsewhere (a resource search asks every indexer
    /// site): run it again after one crash, fail after a second.
    RerunOnce,
    /// A side effect MoviePilot can be asked about: look first, then retry only if absent.
    VerifyThenRetry,
    /// A side effect that is idempotent by nature (delete by id): run it again.
    IdempotentRerun,
    /// A side effect that can be neither verified nor safely repeated: hold for a person.
    HoldForReview,
    /// Answered at admission; never becomes a job.
    NoJob,
}

impl Recovery {
    pub const ALL: [Recovery; 6] = [
        Recovery::Rerun,
        Recovery::RerunOnce,
        Recovery::VerifyThenRetry,
        Recovery::IdempotentRerun,
        Recovery::HoldForReview,
        Recovery::NoJob,
    ];

    /// The name stored in a job's `recovery` field, which claim.lua reads after a crash.
    pub fn as_str(self) -> &'static str {
        match self {
            Recovery::Rerun => "rerun",
            Recovery::RerunOnce => "once",
            Recovery::VerifyThenRetry => "verify",
            Recovery::IdempotentRerun => "idempotent",
            Recovery::HoldForReview => "review",
            Recovery::NoJob => "none",
        }
    }
}

impl FromStr for Recovery {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Recovery::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("unknown recovery policy {s:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(name: &str) -> String {
        crate::assets::read(&format!("lua/{name}"))
    }

    /// Every stored name reads back as the variant that wrote it (`once` once read back as
    /// nothing, because the list it was looked up in missed `RerunOnce`).
    #[test]
    fn every_policy_reads_back_as_itself() {
        for r in Recovery::ALL {
            assert_eq!(r.as_str().parse::<Recovery>(), Ok(r));
        }
    }

    /// claim.lua decides by comparing the stored name with literals: each literal is a
    /// policy Rust can write, so no comparison can go dead by a spelling drift.
    #[test]
    fn every_name_claim_lua_compares_is_a_policy() {
        let claim = script("claim.lua");
        let compared: Vec<&str> = claim
            .split("recovery == '")
            .skip(1)
            .map(|rest| rest.split('\'').next().unwrap())
            .collect();
        assert!(
            compared.len() >= 3,
            "claim.lua compares no recovery names: {compared:?}"
        );
        for name in compared {
            assert!(
                name.parse::<Recovery>().is_ok(),
                "claim.lua compares {name:?}"
            );
        }
    }

    /// enqueue.lua's header, the contract of what admission stores, lists every policy.
    #[test]
    fn enqueue_lua_lists_every_policy_it_may_store() {
        let enqueue = script("enqueue.lua");
        let line = enqueue
            .lines()
            .find(|l| l.contains("recovery policy of the command"))
            .expect("enqueue.lua's header describes its recovery argument");
        let listed = line
            .split('(')
            .nth(1)
            .and_then(|s| s.split(')').next())
            .unwrap_or("");
        let names: Vec<&str> = listed.split('|').map(str::trim).collect();
        for r in Recovery::ALL {
            assert!(
                names.contains(&r.as_str()),
                "enqueue.lua's header misses {:?}",
                r.as_str()
            );
        }
    }
}
