//! oncebot's service: everything that runs in production, and nothing that only tries it (the
//! simulators, demo, bench and test rig are `oncebot_tools`, a crate of their own).
//!
//! ARCHITECTURE.md is the map. In reading order, following an update:
//! - `config`: settings from `config/default.toml`, a file and `ONCEBOT__*` variables.
//! - `telegram`: the update types oncebot reads and a thin Bot API client.
//! - `commands`: text → a whitelisted command, the one table of per-command policies, and each
//!   command's run against MoviePilot in a file of its own.
//! - `ingress`: the webhook and long polling; both decide the same way and call the ledger.
//! - `ledger`: the only code that knows Redis keys and scripts (`lua/`).
//! - `worker`: reads jobs, runs each job's command once, records the outcome and the reply.
//! - `moviepilot`: the MoviePilot client (v2 and v3 dialects, one shared login, error kinds).
//! - `notify`: the relay of MoviePilot's notifications (its message history → replies);
//!   `asked`: which media someone asked for, so its notifications also reach their chat.
//! - `path_segment`: a name as exactly one segment of a MoviePilot URL's path.
//! - `users`, `users_sync`: who each allowed user is (`telegram.users`, MoviePilot's own mapping
//!   kept in Redis by a worker and followed by every ingress).
//! - `dispatch`: sends the replies and callback answers to Telegram, within its rate limits.
//! - `i18n`: every text a user reads; `untrusted`: cleans texts oncebot did not write before a user
//!   reads them.
//! - `admin`, `admin_web`: `oncebot jobs ...` and the operator's page, reading the ledger.
//! - `doctor`: `oncebot doctor`, one check per peer and setting, each with its fix.
//! - `redis_health`: whether Redis takes writes (a probe per process, `/readyz`, admin notices).
//! - `refusals`: refused requests at the doors, logged once a second per peer and counted.
//! - `servers`: the HTTP listeners and what each serves (probes, ingress's doors, the page).
//! - `app`: roles, start-up and graceful shutdown.

pub mod admin;
pub mod admin_web;
pub mod app;
pub mod asked;
mod assets;
mod backoff;
pub mod claim;
pub mod commands;
pub mod config;
mod consume;
pub mod dispatch;
pub mod doctor;
pub mod failpoints;
pub mod follow;
pub mod http_server;
pub mod i18n;
pub mod ingress;
mod json_body;
pub mod ledger;
mod liveness;
pub mod metrics;
pub mod moviepilot;
pub mod notify;
pub mod path_segment;
pub mod redis_health;
pub mod redis_policy;
pub mod refusals;
pub mod servers;
pub mod shutdown;
pub mod telegram;
pub mod telemetry;
#[cfg(test)]
mod tidy;
pub mod untrusted;
pub mod users;
pub mod users_sync;
pub mod versions;
pub mod vocabulary;
pub mod worker;
