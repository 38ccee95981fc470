//! Simulated external servers that speak the real APIs (paths, JSON shapes, error bodies), with
//! fault injection. Tests drive them, and `oncebot demo`/`bench` run against them, so they live
//! in the library rather than under `tests/`.
//!
//! - `moviepilot`: MoviePilot in its v2 (as v2.5.6 really answered) or v3 dialect.

pub mod moviepilot;
