//! Telegram: the wire types oncebot reads from updates, inline keyboards and the callback data
//! of its buttons, and a thin Bot API client.
//!
//! This module knows the Bot API and nothing about Redis.

pub mod api;
pub mod keyboard;
pub mod types;
