//! Telegram: the wire types oncebot reads from updates, and a thin Bot API client.
//!
//! This module knows the Bot API and nothing about Redis.

pub mod api;
pub mod types;
