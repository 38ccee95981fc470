//! oncebot's integration tests: one binary, every test against its own real `redis-server`.
//!
//! Run them with `cargo nextest run --features failpoints`. `redis-server` must be on the PATH
//! (`apt-get install redis-server`); tests fail, not skip, without it.

// Shared helpers: updates as Telegram sends them, a view of Redis, the app and the binary.
mod support;

// The webhook front door: secret, size and shape checks, and the three layers of duplicates
// (update_id, command window, none for read-only commands), Redis outages and restarts.
mod ingress;

// Long polling as a real process against a fake Bot API: the offset commit after admission, and
// a crash between the two (failpoint + SIGKILL) that re-reads without a second job.
mod polling;

// The Lua scripts called through the ledger: every outcome in a script's header, and every job
// state change checked against `JobState::can_transition`.
mod lua_scripts;

// The `oncebot` binary as a process: `jobs list/show --json`, exit codes, start-up errors,
// `serve` with its probes and graceful SIGTERM.
mod cli;
