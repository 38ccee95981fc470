//! README.md and ARCHITECTURE.md kept short (issue 42): a reader gets through the README
//! before trying oncebot and through the map before changing it (rust-analyzer's rule for an
//! architecture document: "keep it short").

use super::{Measured, breaking, workspace_root};

/// The documents and their final limits, in lines.
const LIMITS: &[(&str, usize)] = &[("README.md", 300), ("ARCHITECTURE.md", 450)];

#[test]
fn readme_and_architecture_are_short() {
    let measured: Vec<Measured> = LIMITS
        .iter()
        .map(|(name, limit)| {
            let path = workspace_root().join(name);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let lines = text.lines().count();
            Measured {
                what: name.to_string(),
                lines,
                breaks_rule: lines > *limit,
            }
        })
        .collect();
    let problems = breaking(&measured);
    let limits: Vec<String> = LIMITS.iter().map(|(n, l)| format!("{n} {l}")).collect();
    assert!(
        problems.is_empty(),
        "documents over their limits in lines ({}): say less, or move the detail to docs/:\n  {}",
        limits.join(", "),
        problems.join("\n  ")
    );
}
