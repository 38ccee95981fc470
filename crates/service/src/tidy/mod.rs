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
//!
//! A rule the code does not meet yet, because issue 42's rebuild is under way, names today's
//! offenders in an allowance list: the check passes for them, fails for any new one, and fails
//! for an entry no longer needed, so the list only shrinks.

mod cycles;
mod docs;
mod graph;
mod imports;
mod items;
mod lengths;
mod lex;
mod order;
mod source;

use std::path::{Path, PathBuf};

/// What removes the allowances written for issue 42.
const ISSUE_42: &str = "issue 42's rebuild";

/// A transitional exception to one of tidy's rules, with its figure when it was written: the
/// thing may shrink, not grow, and the entry goes when the thing meets the rule.
#[derive(Debug, Clone, Copy)]
struct Allowance {
    /// What it covers: `file:fn` for a function, a file's path, a document's name.
    what: &'static str,
    /// Its lines when the allowance was written.
    lines: usize,
    /// What is to remove it.
    removed_by: &'static str,
}

impl Allowance {
    /// An allowance that issue 42's rebuild is to remove.
    const fn until_issue_42(what: &'static str, lines: usize) -> Allowance {
        Allowance {
            what,
            lines,
            removed_by: ISSUE_42,
        }
    }
}

/// One thing measured now, against a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Measured {
    /// As an [`Allowance`] names it.
    what: String,
    lines: usize,
    /// Breaks the final rule: it passes only with an allowance.
    breaks_rule: bool,
}

/// What is wrong between the things measured and the allowances: a thing breaking the rule
/// without one, one past its allowance, an allowance no longer needed.
fn allowance_problems(measured: &[Measured], allowed: &[Allowance]) -> Vec<String> {
    let mut problems = Vec::new();
    for m in measured.iter().filter(|m| m.breaks_rule) {
        match allowed.iter().find(|a| a.what == m.what) {
            None => problems.push(format!("{}: {} lines, not allowed", m.what, m.lines)),
            Some(a) if m.lines > a.lines => problems.push(format!(
                "{}: {} lines, past its transitional allowance of {} (until {})",
                m.what, m.lines, a.lines, a.removed_by
            )),
            Some(_) => {}
        }
    }
    for a in allowed {
        if !measured.iter().any(|m| m.breaks_rule && m.what == a.what) {
            let now = measured
                .iter()
                .filter(|m| m.what == a.what)
                .map(|m| m.lines)
                .max();
            let now = now.map_or("gone".to_string(), |n| format!("{n} lines"));
            problems.push(format!(
                "{}: {now}, within the rule now: remove it from the allowances",
                a.what
            ));
        }
    }
    problems
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

mod tests {
    use super::*;

    fn measured(what: &str, lines: usize, breaks_rule: bool) -> Measured {
        Measured {
            what: what.into(),
            lines,
            breaks_rule,
        }
    }

    const ALLOWED: &[Allowance] = &[
        Allowance::until_issue_42("a.rs:f", 90),
        Allowance::until_issue_42("b.rs:g", 85),
    ];

    #[test]
    fn allowed_offenders_pass_while_they_do_not_grow() {
        let now = [measured("a.rs:f", 90, true), measured("b.rs:g", 81, true)];
        assert_eq!(allowance_problems(&now, ALLOWED), Vec::<String>::new());
    }

    #[test]
    fn a_new_offender_and_a_grown_one_fail() {
        let now = [
            measured("a.rs:f", 91, true),
            measured("b.rs:g", 85, true),
            measured("c.rs:h", 81, true),
        ];
        assert_eq!(
            allowance_problems(&now, ALLOWED),
            [
                "a.rs:f: 91 lines, past its transitional allowance of 90 (until issue 42's rebuild)",
                "c.rs:h: 81 lines, not allowed",
            ]
        );
    }

    #[test]
    fn an_allowance_no_longer_needed_fails_so_the_list_only_shrinks() {
        let now = [measured("a.rs:f", 60, false), measured("b.rs:g", 85, true)];
        assert_eq!(
            allowance_problems(&now, ALLOWED),
            ["a.rs:f: 60 lines, within the rule now: remove it from the allowances"]
        );
        let gone = [measured("b.rs:g", 85, true)];
        assert_eq!(
            allowance_problems(&gone, ALLOWED),
            ["a.rs:f: gone, within the rule now: remove it from the allowances"]
        );
    }
}
