//! Simulated outside services, started in-process on 127.0.0.1: the tests drive them, and so
//! will `oncebot demo` and `oncebot bench`.
//!
//! A simulator speaks the real service's wire protocol (paths, JSON shapes, error bodies), not a
//! trait of ours, so whatever talks to it crosses the same boundary it crosses in production.
//! Each one records what it was asked, lets a test inject faults, and lets a test wait for an
//! event instead of sleeping.
//!
//! - `telegram`: the Bot API (getUpdates, sendMessage, edits, callbacks, webhooks, faults).
//! - `moviepilot`: MoviePilot in its v2 (as v2.5.6 really answered) or v3 dialect.

pub mod moviepilot;
pub mod telegram;
