//! Helpers for the integration tests.

pub mod child;
