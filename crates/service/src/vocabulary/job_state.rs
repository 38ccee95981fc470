//! The job states and the one table of allowed transitions.
//!
//! `docs/job-states.mmd` draws the same table; the Lua scripts are tested against it
//! (`tests/it/lua_scripts.rs`). A state is added only with a reason in ARCHITECTURE.md.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Recorded and on the jobs stream; no worker has claimed it.
    Pending,
    /// Claimed by a worker (attempt N); the effect may be under way.
    Running,
    /// A transient failure; runs again when its backoff is due.
    RetryWait,
    /// Done; the result is recorded.
    Succeeded,
    /// Will not be retried (a permanent error, or attempts used up); the reason is recorded.
    Failed,
    /// The outcome is uncertain (a crash or timeout during a side effect that cannot be
    /// verified): a person decides with `oncebot jobs resolve`.
    NeedsReview,
}

impl JobState {
    pub const ALL: [JobState; 6] = [
        JobState::Pending,
        JobState::Running,
        JobState::RetryWait,
        JobState::Succeeded,
        JobState::Failed,
        JobState::NeedsReview,
    ];

    /// The name stored in the job HASH's `status` field.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::RetryWait => "retry_wait",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::NeedsReview => "needs_review",
        }
    }

    /// No transition leaves these except a person's decision (none leaves `succeeded`/`failed`).
    pub fn is_terminal(self) -> bool {
        matches!(self, JobState::Succeeded | JobState::Failed)
    }

    /// The transition table. `None` as `from` is the creation of a job.
    pub fn can_transition(from: Option<JobState>, to: JobState) -> bool {
        use JobState::*;
        matches!(
            (from, to),
            (None, Pending)
                | (Some(Pending), Running)
                // A running job whose owner died is claimed again (new attempt) when its
                // command's recovery policy allows a re-run.
                | (Some(Running), Running)
                | (Some(Running), Succeeded)
                | (Some(Running), RetryWait)
                | (Some(Running), Failed)
                | (Some(Running), NeedsReview)
                | (Some(RetryWait), Running)
                // A person settles an uncertain job.
                | (Some(NeedsReview), Succeeded)
                | (Some(NeedsReview), Failed)
                | (Some(NeedsReview), Pending)
        )
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for JobState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JobState::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<_> = JobState::ALL.iter().map(|s| s.as_str()).collect();
                format!(
                    "unknown job state {s:?}; expected one of {}",
                    names.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in JobState::ALL {
            assert_eq!(s.as_str().parse::<JobState>().unwrap(), s);
        }
        assert!("done".parse::<JobState>().is_err());
    }

    #[test]
    fn terminal_states_have_no_way_out() {
        for from in JobState::ALL.into_iter().filter(|s| s.is_terminal()) {
            for to in JobState::ALL {
                assert!(!JobState::can_transition(Some(from), to), "{from} -> {to}");
            }
        }
    }

    #[test]
    fn every_job_starts_pending() {
        for to in JobState::ALL {
            assert_eq!(JobState::can_transition(None, to), to == JobState::Pending);
        }
    }

    #[test]
    fn the_mermaid_diagram_draws_exactly_the_table() {
        let diagram = crate::assets::read("docs/job-states.mmd");
        let mut drawn = std::collections::HashSet::new();
        for line in diagram.lines() {
            let line = line.trim();
            let Some((from, rest)) = line.split_once("-->") else {
                continue;
            };
            let to = rest.split(':').next().unwrap_or("").trim();
            let from = from.trim();
            let from = if from == "[*]" {
                None
            } else {
                Some(from.parse::<JobState>().unwrap())
            };
            if to == "[*]" {
                continue;
            }
            drawn.insert((from, to.parse::<JobState>().unwrap()));
        }
        let mut table = std::collections::HashSet::new();
        for from in std::iter::once(None).chain(JobState::ALL.into_iter().map(Some)) {
            for to in JobState::ALL {
                if JobState::can_transition(from, to) {
                    table.insert((from, to));
                }
            }
        }
        assert_eq!(drawn, table);
    }
}
