//! A job to make, as the layer above decided it: the ledger stores it as given and knows no
//! command. What a command means (its business key, window, recovery, least role) is the
//! `commands` module's; the ledger only needs the values, in the job HASH, the `cmd:` key and a
//! button's token.

use std::time::Duration;

use crate::vocabulary::{Recovery, Role};

/// One job's making: by an admission (`Ledger::admit`) or by a button's tap (a token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSpec {
    /// The job's `command` field: the command's name.
    pub command: &'static str,
    /// The job's `args` field.
    pub args: String,
    /// The business key (`cmd:<idem>`), which makes a repeat inside `window` a pointer to the
    /// first job; empty for none (a button any admin may tap).
    pub idem: String,
    /// The duplicate window; zero for none.
    pub window: Duration,
    /// What a worker does with the job after a crash (`claim.lua`), stored with it.
    pub recovery: Recovery,
    /// The least role that may run it (a button's token carries it; tap.lua compares ranks).
    pub least_role: Role,
}
