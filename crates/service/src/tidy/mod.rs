//! Checks on the workspace's own source and documents, run with the service's tests
//! (rust-analyzer's "tidy" tests): a rule the code should keep is held here, so it does not
//! depend on someone remembering it. They live in the service crate, which every change
//! builds, and read the tools crate and the top-level documents from there.
//!
//! - `lex`: Rust source as tokens, without comments, strings or chars to trip over.
//! - `items`: the little of the item grammar the checks need, and which code is `#[cfg(test)]`.
//! - `source`: a crate as its files and modules, reached from `lib.rs` through `mod` lines.
//! - `lengths`: functions (both crates) and files (the service) that grew too long.
//! - `imports`: which file each path in the service's production code names.
//! - `graph`: a graph of named nodes over those references, and its elementary cycles.
//! - `cycles`: no import cycle between files, nor between sibling modules.
//! - `order`: the module order ARCHITECTURE.md states, held to the code.
//! - `docs`: README.md and ARCHITECTURE.md kept short.
//! - `release`: the version, the compose image's tag and the CHANGELOG's newest release agree.

mod cycles;
mod docs;
mod graph;
mod imports;
mod items;
mod lengths;
mod lex;
mod order;
mod release;
mod source;

use std::path::{Path, PathBuf};

/// One thing measured now, against a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Measured {
    /// `file:fn` for a function, a file's path, a document's name.
    what: String,
    lines: usize,
    breaks_rule: bool,
}

/// The things measured that break their rule, each as `what: N lines`.
fn breaking(measured: &[Measured]) -> Vec<String> {
    measured
        .iter()
        .filter(|m| m.breaks_rule)
        .map(|m| format!("{}: {} lines", m.what, m.lines))
        .collect()
}

/// The workspace's root, two levels above the service crate.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn service_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn tools_src() -> PathBuf {
    workspace_root().join("crates/tools/src")
}
