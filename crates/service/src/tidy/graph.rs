//! A directed graph of named nodes built from references, and its elementary cycles: the
//! structure the cycle and order checks share, kept apart from what the nodes are (files,
//! sibling modules, top-level modules).
//!
//! Cycles are found with Johnson's algorithm, each once, starting at its least node by name, so
//! a cycle reads the same in every run (`a → b → a`, never `b → a → b`) and can be named in an
//! allowance list.

use std::collections::{BTreeMap, BTreeSet};

use super::imports::Reference;
use super::source::Crate;

/// More cycles than this means the graph is one tangle; listing them stops there.
const MAX_CYCLES: usize = 10_000;

/// Nodes by name, and edges each with the first reference that makes it.
#[derive(Debug)]
pub(super) struct Graph {
    /// Sorted.
    pub names: Vec<String>,
    pub edges: BTreeMap<(usize, usize), Reference>,
}

impl Graph {
    /// The graph whose nodes are what `node_of` maps files to (a file mapped to `None` is left
    /// out); an edge joins two different nodes some reference joins.
    pub fn new(refs: &[Reference], node_of: impl Fn(usize) -> Option<String>) -> Graph {
        let pairs: Vec<(String, String, &Reference)> = refs
            .iter()
            .filter_map(|r| Some((node_of(r.from)?, node_of(r.to)?, r)))
            .filter(|(a, b, _)| a != b)
            .collect();
        let names: BTreeSet<&String> = pairs.iter().flat_map(|(a, b, _)| [a, b]).collect();
        let names: Vec<String> = names.into_iter().cloned().collect();
        let index = |name: &String| names.binary_search(name).expect("every node is named");
        let mut edges = BTreeMap::new();
        for (a, b, r) in &pairs {
            edges
                .entry((index(a), index(b)))
                .or_insert_with(|| (*r).clone());
        }
        Graph { names, edges }
    }

    fn successors(&self) -> Vec<Vec<usize>> {
        let mut next = vec![Vec::new(); self.names.len()];
        for (a, b) in self.edges.keys() {
            next[*a].push(*b);
        }
        next
    }

    /// Every elementary cycle, as its nodes from the least, sorted; at most [`MAX_CYCLES`].
    pub fn cycles(&self) -> Vec<Vec<usize>> {
        let next = self.successors();
        let mut found = Vec::new();
        for start in 0..self.names.len() {
            let component = component_of(start, &next);
            if component.len() < 2 || found.len() >= MAX_CYCLES {
                continue;
            }
            let mut search = Johnson {
                next: &next,
                component,
                start,
                blocked: vec![false; next.len()],
                blocked_by: vec![BTreeSet::new(); next.len()],
                stack: Vec::new(),
                found: &mut found,
            };
            search.circuit(start);
        }
        found.sort();
        found
    }

    /// `a → b → a`.
    pub fn chain(&self, cycle: &[usize]) -> String {
        cycle
            .iter()
            .chain(cycle.first())
            .map(|n| self.names[*n].as_str())
            .collect::<Vec<_>>()
            .join(" → ")
    }

    /// One reference for each step of the cycle: `  a → b: a.rs:12 super::b::X`.
    pub fn evidence(&self, krate: &Crate, cycle: &[usize]) -> String {
        let steps = cycle.iter().zip(cycle.iter().skip(1).chain(cycle.first()));
        steps
            .map(|(a, b)| {
                let r = &self.edges[&(*a, *b)];
                format!(
                    "    {} → {}: {}:{} {}",
                    self.names[*a], self.names[*b], krate.files[r.from].name, r.line, r.path
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The nodes from `start` up that `start` reaches and that reach it back (its strongly
/// connected component among them).
fn component_of(start: usize, next: &[Vec<usize>]) -> BTreeSet<usize> {
    let mut previous = vec![Vec::new(); next.len()];
    for (a, bs) in next.iter().enumerate() {
        for b in bs {
            previous[*b].push(a);
        }
    }
    let forward = reach(start, next);
    let backward = reach(start, &previous);
    forward.intersection(&backward).copied().collect()
}

/// The nodes from `start` up reachable from `start` along `next`.
fn reach(start: usize, next: &[Vec<usize>]) -> BTreeSet<usize> {
    let mut seen = BTreeSet::from([start]);
    let mut todo = vec![start];
    while let Some(n) = todo.pop() {
        for m in &next[n] {
            if *m >= start && seen.insert(*m) {
                todo.push(*m);
            }
        }
    }
    seen
}

/// Johnson's search for the cycles through `start` inside its component.
struct Johnson<'g> {
    next: &'g [Vec<usize>],
    component: BTreeSet<usize>,
    start: usize,
    blocked: Vec<bool>,
    blocked_by: Vec<BTreeSet<usize>>,
    stack: Vec<usize>,
    found: &'g mut Vec<Vec<usize>>,
}

impl Johnson<'_> {
    /// Whether some cycle through `start` goes on from `v`.
    fn circuit(&mut self, v: usize) -> bool {
        let mut closed = false;
        self.stack.push(v);
        self.blocked[v] = true;
        let next: Vec<usize> = self.next[v]
            .iter()
            .copied()
            .filter(|w| self.component.contains(w))
            .collect();
        for &w in &next {
            if self.found.len() >= MAX_CYCLES {
                break;
            }
            if w == self.start {
                self.found.push(self.stack.clone());
                closed = true;
            } else if !self.blocked[w] && self.circuit(w) {
                closed = true;
            }
        }
        if closed {
            self.unblock(v);
        } else {
            for &w in &next {
                self.blocked_by[w].insert(v);
            }
        }
        self.stack.pop();
        closed
    }

    fn unblock(&mut self, u: usize) {
        self.blocked[u] = false;
        for w in std::mem::take(&mut self.blocked_by[u]) {
            if self.blocked[w] {
                self.unblock(w);
            }
        }
    }
}

mod tests {
    use super::*;

    /// A graph of single-letter nodes, files numbered by their letter.
    fn graph(edges: &[(char, char)]) -> Graph {
        let refs: Vec<Reference> = edges
            .iter()
            .map(|(a, b)| Reference {
                from: *a as usize,
                to: *b as usize,
                line: 1,
                path: String::new(),
            })
            .collect();
        Graph::new(&refs, |f| char::from_u32(f as u32).map(String::from))
    }

    fn chains(g: &Graph) -> Vec<String> {
        g.cycles().iter().map(|c| g.chain(c)).collect()
    }

    #[test]
    fn every_elementary_cycle_is_found_once_from_its_least_node() {
        let g = graph(&[
            ('b', 'a'),
            ('a', 'b'),
            ('b', 'c'),
            ('c', 'a'),
            ('c', 'd'),
            ('d', 'e'),
        ]);
        assert_eq!(chains(&g), ["a → b → a", "a → b → c → a"]);
    }

    #[test]
    fn a_graph_without_cycles_has_none_and_tangles_are_all_listed() {
        assert!(chains(&graph(&[('a', 'b'), ('b', 'c'), ('a', 'c')])).is_empty());
        let all = [
            ('a', 'b'),
            ('b', 'a'),
            ('b', 'c'),
            ('c', 'b'),
            ('a', 'c'),
            ('c', 'a'),
        ];
        assert_eq!(
            chains(&graph(&all)),
            [
                "a → b → a",
                "a → b → c → a",
                "a → c → a",
                "a → c → b → a",
                "b → c → b"
            ]
        );
    }
}
