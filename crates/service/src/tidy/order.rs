//! The module order ARCHITECTURE.md states, held to the code: its `Module order (leaves first):`
//! line lists module paths, and every file must belong to an entry and use only files of
//! entries before its own (or of its own).
//!
//! An entry is mostly a top-level module (`ledger`), possibly a submodule that stands on its
//! own (`worker::context`); a file belongs to the most specific entry naming its module or a
//! module above it, so `worker/context.rs` belongs to `worker::context` when that is listed and
//! to `worker` otherwise. `lib.rs`, the root, belongs to none.

use std::collections::BTreeMap;

use super::imports::{Reference, references};
use super::source::Crate;
use super::{service_src, workspace_root};

/// What starts the line that states the order.
const ORDER_LINE: &str = "Module order (leaves first):";

/// The entries of the order `architecture` states, if it has the line.
fn stated_order(architecture: &str) -> Option<Vec<String>> {
    let line = architecture
        .lines()
        .find_map(|l| l.trim().strip_prefix(ORDER_LINE))?;
    let entries = line
        .split(',')
        .map(|e| e.trim().trim_matches('`').trim_end_matches('.').to_string())
        .filter(|e| !e.is_empty())
        .collect();
    Some(entries)
}

/// The index of the entry `file` belongs to (`None` for the root, or a file no entry covers).
fn entry_of(krate: &Crate, order: &[String], file: usize) -> Option<usize> {
    let path = krate.modules[krate.file_module(file)].path.join("::");
    order
        .iter()
        .enumerate()
        .filter(|(_, e)| path == **e || path.starts_with(&format!("{e}::")))
        .max_by_key(|(_, e)| e.len())
        .map(|(i, _)| i)
}

/// What breaks the stated order: an entry naming no module, a file in no entry, and a file
/// using a file of a later entry (once per pair of entries, with its first reference).
fn order_problems(krate: &Crate, refs: &[Reference], order: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    let production = |f: &usize| !krate.files[*f].test_only;
    for entry in order {
        if !krate
            .modules
            .iter()
            .any(|m| !m.test_only && m.path.join("::") == *entry)
        {
            problems.push(format!("entry `{entry}` names no module"));
        }
    }
    for file in (1..krate.files.len()).filter(production) {
        if entry_of(krate, order, file).is_none() {
            problems.push(format!("{} belongs to no entry", krate.files[file].name));
        }
    }
    let mut backwards: BTreeMap<(usize, usize), (&Reference, usize)> = BTreeMap::new();
    for r in refs {
        let (Some(from), Some(to)) = (entry_of(krate, order, r.from), entry_of(krate, order, r.to))
        else {
            continue;
        };
        if from < to {
            backwards.entry((from, to)).or_insert((r, 0)).1 += 1;
        }
    }
    for ((from, to), (r, count)) in backwards {
        let more = match count {
            1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        problems.push(format!(
            "`{}` uses `{}`, which comes after it: {}:{} {}{more}",
            order[from], order[to], krate.files[r.from].name, r.line, r.path
        ));
    }
    problems
}

#[test]
fn architecture_names_the_real_module_order() {
    let path = workspace_root().join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let order = stated_order(&text)
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no line starting with `{ORDER_LINE}`"));
    let krate = Crate::load(&service_src());
    let (refs, _) = references(&krate);
    let problems = order_problems(&krate, &refs, &order);
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md's module order is not the code's (leaves first: a module uses only \
         those before it):\n  {}",
        problems.join("\n  ")
    );
}

mod tests {
    use super::super::source::tests::crate_of;
    use super::*;

    fn problems(order_line: &str) -> Vec<String> {
        let krate = crate_of(&[
            ("lib.rs", "mod base;\nmod worker;\n"),
            ("base.rs", "pub struct Base;\n"),
            ("worker/mod.rs", "mod context;\nmod run;\n"),
            (
                "worker/context.rs",
                "pub struct Context(crate::base::Base);\n",
            ),
            ("worker/run.rs", "use super::context::Context;\n"),
        ]);
        let (refs, _) = references(&krate);
        let order = stated_order(order_line).expect("the line is there");
        order_problems(&krate, &refs, &order)
    }

    #[test]
    fn the_line_lists_module_paths() {
        let text = "# Map\n\nModule order (leaves first): `base`, worker::context, worker.\n";
        assert_eq!(
            stated_order(text),
            Some(vec![
                "base".into(),
                "worker::context".into(),
                "worker".into()
            ])
        );
        assert_eq!(stated_order("no such line"), None);
    }

    #[test]
    fn an_order_the_code_keeps_has_no_problems() {
        let none: Vec<String> = Vec::new();
        assert_eq!(
            problems("Module order (leaves first): base, worker::context, worker"),
            none
        );
        assert_eq!(problems("Module order (leaves first): base, worker"), none);
    }

    #[test]
    fn a_leaf_using_a_later_entry_a_missing_file_and_a_stray_entry_are_problems() {
        assert_eq!(
            problems("Module order (leaves first): worker, base, ghost"),
            [
                "entry `ghost` names no module",
                "`worker` uses `base`, which comes after it: worker/context.rs:1 crate::base::Base",
            ]
        );
        assert_eq!(
            problems("Module order (leaves first): worker::context, worker"),
            ["base.rs belongs to no entry"]
        );
    }
}
