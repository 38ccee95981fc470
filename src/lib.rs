//! oncebot: a Telegram bot for MoviePilot that makes every command take effect once.
//!
//! ARCHITECTURE.md is the map. In reading order, following an update:
//! - `config`: settings from `config/default.toml`, a file and `ONCEBOT__*` variables.
//! - `telegram`: the update types oncebot reads and a thin Bot API client.
//! - `commands`: text → a whitelisted command, and the one table of per-command policies.
//! - `ingress`: the webhook and long polling; both decide the same way and call the ledger.
//! - `ledger`: the only code that knows Redis keys and scripts (`lua/`).
//! - `moviepilot`: the MoviePilot client (v2 and v3 dialects, one shared login, error kinds).
//! - `admin`: `oncebot jobs ...`, reading the ledger.
//! - `app`: roles, start-up and graceful shutdown.
//! - `sim`: simulated external servers speaking the real APIs, for tests, `demo` and `bench`.
//! - `demo`: `oncebot demo`, the whole pipeline against the simulators, narrated.

pub mod admin;
pub mod admin_web;
pub mod app;
mod backoff;
pub mod bench;
pub mod commands;
pub mod config;
mod consume;
pub mod demo;
pub mod dispatch;
pub mod failpoints;
pub mod i18n;
pub mod ingress;
pub mod ledger;
mod liveness;
pub mod metrics;
pub mod moviepilot;
pub mod redis_server;
mod shutdown;
pub mod sim;
pub mod telegram;
pub mod telemetry;
pub mod worker;
