//! No import cycle in the service's production code (issue 42): none between files at all (every
//! file a node, the strictest reading), and none between the sibling modules of one module.
//! The cycles between top-level modules are listed, not failed: two modules can use each other
//! through different files without a cycle between files (`commands/mod.rs` uses
//! `worker/context.rs`, `worker/mod.rs` uses `commands/mod.rs`); ARCHITECTURE.md's module order
//! (`order`, where `worker::context` is an entry of its own) rules them out.
//!
//! The references are `imports`'s: a parent's `mod` and `pub use` lines and a child's use of
//! its parent's own items are not edges, and test code imports freely.

use super::graph::Graph;
use super::imports::{Reference, references};
use super::service_src;
use super::source::Crate;

/// The service crate and its production references.
fn service() -> (Crate, Vec<Reference>) {
    let krate = Crate::load(&service_src());
    let (refs, _) = references(&krate);
    (krate, refs)
}

/// The graph of files: every production file a node.
fn file_graph(krate: &Crate, refs: &[Reference]) -> Graph {
    Graph::new(refs, |f| {
        (!krate.files[f].test_only).then(|| krate.files[f].name.clone())
    })
}

/// For each module below the root, the graph of its child modules, each standing for its
/// files and theirs below (the module's own file is not a sibling).
fn sibling_graphs(krate: &Crate, refs: &[Reference]) -> Vec<Graph> {
    let parents = (1..krate.modules.len()).filter(|m| !krate.modules[*m].test_only);
    parents
        .map(|parent| {
            let path = &krate.modules[parent].path;
            Graph::new(refs, |f| {
                let file_path = &krate.modules[krate.file_module(f)].path;
                (file_path.len() > path.len() && file_path.starts_with(path))
                    .then(|| file_path[..=path.len()].join("::"))
            })
        })
        .collect()
}

/// The graph of top-level modules (`lib.rs`, the root, is none).
fn top_level_graph(krate: &Crate, refs: &[Reference]) -> Graph {
    Graph::new(refs, |f| {
        krate.modules[krate.file_module(f)].path.first().cloned()
    })
}

/// Each cycle of the graphs as its chain and the references that make it.
fn cycles_of(krate: &Crate, graphs: &[Graph]) -> Vec<(String, String)> {
    graphs
        .iter()
        .flat_map(|g| {
            g.cycles()
                .into_iter()
                .map(move |c| (g.chain(&c), g.evidence(krate, &c)))
        })
        .collect()
}

/// Fails naming each cycle found, with the references that make it.
fn assert_no_cycles(what: &str, found: &[(String, String)]) {
    let problems: Vec<String> = found
        .iter()
        .map(|(chain, evidence)| format!("  {chain}\n{evidence}"))
        .collect();
    assert!(
        problems.is_empty(),
        "no import cycle between {what} (issue 42); a cycle goes when one step of it is moved \
         to the module it belongs to, or what both need to a module below them:\n{}",
        problems.join("\n")
    );
}

#[test]
fn no_cycle_between_files() {
    let (krate, refs) = service();
    let found = cycles_of(&krate, &[file_graph(&krate, &refs)]);
    assert_no_cycles("files", &found);
}

#[test]
fn no_cycle_between_sibling_files() {
    let (krate, refs) = service();
    let found = cycles_of(&krate, &sibling_graphs(&krate, &refs));
    assert_no_cycles("sibling files of one module", &found);
}

#[test]
fn cycles_between_top_level_modules_are_listed() {
    let (krate, refs) = service();
    let found = cycles_of(&krate, &[top_level_graph(&krate, &refs)]);
    println!("{} cycles between top-level modules:", found.len());
    for (chain, evidence) in &found {
        println!("  {chain}\n{evidence}");
    }
}
