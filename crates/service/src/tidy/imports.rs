//! Which file each path in production code names: the references that make the edges of the
//! file graph, counting a name by the file that defines it.
//!
//! Every module has a scope: the names its items define (`fn`, `struct`, `enum`, `union`,
//! `trait`, `type`, `const`, `static`, `macro_rules!`, `mod`), the names its `use`
//! declarations bind, and its glob imports. A `use` inside a function binds for the whole
//! module here, a small over-reach that costs nothing in practice. A path is resolved segment by
//! segment as rustc resolves 2018 paths: from `crate`, `super`, `self`, or a name in scope; a
//! first name the crate does not bind is another crate's (`std`, `tokio`) and no edge. A name
//! bound by a `use` is followed to the item it names, so a re-export is seen through to the
//! defining file; once a segment names an item, the rest (a variant, an associated item) is its.
//!
//! Not references: a file naming its own items; a module naming an ancestor's own items (the
//! child's `super::Name`, however spelled: `crate::worker::Worker` from `worker/commit.rs` too);
//! a re-export (a `use` with a visibility) by a module of what a module below it holds (the
//! parent's `pub use x::Y;`); `mod` lines; anything in `#[cfg(test)]` code. A glob `use m::*`
//! names `m` itself, unless `m` is an ancestor, and the items it brings in that the module uses.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use super::items::ItemKind;
use super::lex::Tok;
use super::service_src;
use super::source::Crate;

/// A path in production code that names an item of another file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Reference {
    pub from: usize,
    pub to: usize,
    /// Where it was seen, in `from`.
    pub line: usize,
    /// As written (`super::claim::Claim`; `use super::*` for a glob).
    pub path: String,
}

/// A path into the crate that names nothing tidy can see (a macro's item, or a gap in tidy); it
/// counts as a reference to the file of the module it stopped in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unresolved {
    pub file: usize,
    pub line: usize,
    pub path: String,
}

/// What a name stands for in the crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    Module(usize),
    /// An item other than a module, by the file defining it.
    Item(usize),
}

/// One leaf of a `use` tree: the path it names and the name it binds (`None`: a glob).
#[derive(Debug, Clone, PartialEq, Eq)]
struct UseLeaf {
    segments: Vec<String>,
    binding: Option<String>,
    /// Written with a visibility: a re-export.
    reexport: bool,
    line: usize,
}

/// The names a module's code can use without a path.
#[derive(Debug, Default)]
struct Scope {
    defined: BTreeMap<String, Vec<Target>>,
    imported: BTreeMap<String, Vec<UseLeaf>>,
    globs: Vec<UseLeaf>,
    /// Every `use` leaf of the module, globs included, in order.
    uses: Vec<UseLeaf>,
    /// Token ranges of the module's own production code (without test code, inner modules).
    code: Vec<Range<usize>>,
}

/// What a name looks up to.
enum Lookup {
    Crate(Vec<Target>),
    /// Bound to another crate's item.
    External,
    Unbound,
}

/// What a path resolves to.
enum Resolved {
    /// The crate's `targets`, reached through the modules `through`, in order.
    Found {
        targets: Vec<Target>,
        through: Vec<usize>,
    },
    External,
    /// A segment that `module`, the last module reached, does not bind.
    Unresolved {
        module: usize,
    },
}

/// The crate's scopes, and the resolution of paths against them.
pub(super) struct Resolver<'a> {
    krate: &'a Crate,
    scopes: Vec<Scope>,
    /// Lookups under way, so a `use` cycle ends.
    visiting: RefCell<BTreeSet<(usize, String)>>,
}

/// Every reference in the crate's production code, and the paths into it that resolve to nothing.
pub(super) fn references(krate: &Crate) -> (Vec<Reference>, Vec<Unresolved>) {
    let resolver = Resolver::new(krate);
    let mut found = Vec::new();
    let mut unresolved = Vec::new();
    for module in 0..krate.modules.len() {
        if !krate.modules[module].test_only {
            resolver.module_references(module, &mut found, &mut unresolved);
        }
    }
    found.sort_by_key(|r| (r.from, r.to, r.line));
    found.dedup();
    (found, unresolved)
}

#[test]
fn every_path_into_the_service_resolves() {
    let krate = Crate::load(&service_src());
    let (_, unresolved) = references(&krate);
    let list: Vec<String> = unresolved
        .iter()
        .map(|u| format!("  {}:{} {}", krate.files[u.file].name, u.line, u.path))
        .collect();
    assert!(
        list.is_empty(),
        "tidy cannot tell what these paths name (an item a macro makes, or a gap in \
         tidy/imports.rs); the cycle checks count each as naming the module it stopped in:\n{}",
        list.join("\n")
    );
}

impl<'a> Resolver<'a> {
    fn new(krate: &'a Crate) -> Self {
        let mut scopes: Vec<Scope> = (0..krate.modules.len()).map(|_| Scope::default()).collect();
        for module in 0..krate.modules.len() {
            if krate.modules[module].test_only {
                continue;
            }
            define_items(krate, module, &mut scopes);
            let code = own_code(krate, module);
            let uses = use_leaves(krate, module, &code);
            let scope = &mut scopes[module];
            for leaf in &uses {
                match &leaf.binding {
                    Some(name) => scope
                        .imported
                        .entry(name.clone())
                        .or_default()
                        .push(leaf.clone()),
                    None => scope.globs.push(leaf.clone()),
                }
            }
            scope.uses = uses;
            scope.code = code;
        }
        Resolver {
            krate,
            scopes,
            visiting: RefCell::new(BTreeSet::new()),
        }
    }

    /// The references of one module's code: its `use` leaves, its paths, its globs' names.
    fn module_references(
        &self,
        module: usize,
        found: &mut Vec<Reference>,
        unresolved: &mut Vec<Unresolved>,
    ) {
        let file = self.krate.modules[module].file;
        let mut note = |to: Target, line: usize, path: String| {
            if let Target::Item(to) = to
                && self.is_edge(module, to)
            {
                found.push(Reference {
                    from: file,
                    to,
                    line,
                    path,
                });
            }
        };
        for leaf in &self.scopes[module].uses {
            let path = leaf.segments.join("::");
            match self.resolve(module, &leaf.segments) {
                Resolved::Found { targets, through } => {
                    if leaf.reexport && through.iter().any(|m| self.is_below(*m, module)) {
                        continue;
                    }
                    for target in targets {
                        match (target, &leaf.binding) {
                            (Target::Module(m), None) if !self.is_above(m, module) => note(
                                Target::Item(self.krate.modules[m].file),
                                leaf.line,
                                format!("{path}::*"),
                            ),
                            _ => note(target, leaf.line, path.clone()),
                        }
                    }
                }
                Resolved::External => {}
                Resolved::Unresolved { module: stopped } => {
                    note(self.module_file(stopped), leaf.line, path.clone());
                    unresolved.push(Unresolved {
                        file,
                        line: leaf.line,
                        path,
                    });
                }
            }
        }
        for (segments, line) in code_paths(self.krate, module, &self.scopes[module].code) {
            match self.resolve(module, &segments) {
                Resolved::Found { targets, .. } => {
                    for target in targets {
                        note(target, line, segments.join("::"));
                    }
                }
                Resolved::External => {}
                Resolved::Unresolved { module: stopped } => {
                    note(self.module_file(stopped), line, segments.join("::"));
                    unresolved.push(Unresolved {
                        file,
                        line,
                        path: segments.join("::"),
                    });
                }
            }
        }
        for (target, line, path) in self.glob_names(module) {
            note(target, line, path);
        }
    }

    /// The items the module's code uses by a name only its globs bind.
    fn glob_names(&self, module: usize) -> Vec<(Target, usize, String)> {
        let scope = &self.scopes[module];
        if scope.globs.is_empty() {
            return Vec::new();
        }
        let source = &self.krate.files[self.krate.modules[module].file];
        let words: BTreeSet<&str> = scope
            .code
            .iter()
            .flat_map(|r| source.toks[r.clone()].iter())
            .filter_map(|(t, _)| match t {
                Tok::Ident(w) => Some(w.as_str()),
                _ => None,
            })
            .filter(|w| !scope.defined.contains_key(*w) && !scope.imported.contains_key(*w))
            .collect();
        let mut found = Vec::new();
        for glob in &scope.globs {
            let Resolved::Found { targets, .. } = self.resolve(module, &glob.segments) else {
                continue;
            };
            for target in targets {
                let Target::Module(from) = target else {
                    continue;
                };
                for word in &words {
                    if let Lookup::Crate(named) = self.lookup(from, word, true) {
                        let path = format!("{}::* ({word})", glob.segments.join("::"));
                        found.extend(named.into_iter().map(|t| (t, glob.line, path.clone())));
                    }
                }
            }
        }
        found
    }

    /// A path that stopped in `module` counts as naming an item of its file: what a macro makes
    /// there is defined there.
    fn module_file(&self, module: usize) -> Target {
        Target::Item(self.krate.modules[module].file)
    }

    /// Whether `module` naming an item of file `to` is an edge: not its own file, nor an
    /// ancestor's.
    fn is_edge(&self, module: usize, to: usize) -> bool {
        let own = self.krate.modules[module].file;
        to != own
            && self
                .krate
                .ancestors(module)
                .all(|m| self.krate.modules[m].file != to)
    }

    /// Whether `m` is a strict descendant of `module`.
    fn is_below(&self, m: usize, module: usize) -> bool {
        self.krate.ancestors(m).any(|a| a == module)
    }

    /// Whether `m` is `module` or one of its ancestors.
    fn is_above(&self, m: usize, module: usize) -> bool {
        m == module || self.krate.ancestors(module).any(|a| a == m)
    }

    /// The path `segments`, written in `module`.
    fn resolve(&self, module: usize, segments: &[String]) -> Resolved {
        let mut through = Vec::new();
        let (mut targets, mut rest) = match segments[0].as_str() {
            "crate" => (vec![Target::Module(0)], 1),
            "self" => (vec![Target::Module(module)], 1),
            "super" => {
                let mut at = module;
                let mut k = 0;
                while segments.get(k).map(String::as_str) == Some("super") {
                    let Some(parent) = self.krate.modules[at].parent else {
                        return Resolved::Unresolved { module: at };
                    };
                    at = parent;
                    k += 1;
                }
                (vec![Target::Module(at)], k)
            }
            "Self" => return Resolved::External,
            name => match self.lookup(module, name, segments.len() == 1) {
                Lookup::Crate(found) => (found, 1),
                Lookup::External | Lookup::Unbound => return Resolved::External,
            },
        };
        while rest < segments.len() {
            let Some(Target::Module(at)) = targets
                .iter()
                .copied()
                .find(|t| matches!(t, Target::Module(_)))
            else {
                // An item: the rest is its variant or associated item.
                targets.retain(|t| matches!(t, Target::Item(_)));
                break;
            };
            through.push(at);
            match self.lookup(at, &segments[rest], rest + 1 == segments.len()) {
                Lookup::Crate(found) => targets = found,
                Lookup::External => return Resolved::External,
                Lookup::Unbound => return Resolved::Unresolved { module: at },
            }
            rest += 1;
        }
        Resolved::Found { targets, through }
    }

    /// What `name` stands for in `module`: its own items, then its `use` bindings, then its
    /// globs'. A name that is not the last of its path must be a module or a type, which the
    /// caller picks; the last may be several things at once (a module and a function).
    fn lookup(&self, module: usize, name: &str, last: bool) -> Lookup {
        let key = (module, name.to_string());
        if !self.visiting.borrow_mut().insert(key.clone()) {
            return Lookup::Unbound;
        }
        let found = self.lookup_unguarded(module, name);
        self.visiting.borrow_mut().remove(&key);
        match found {
            Lookup::Crate(mut targets) => {
                targets.sort();
                targets.dedup();
                if !last && targets.iter().any(|t| matches!(t, Target::Module(_))) {
                    targets.retain(|t| matches!(t, Target::Module(_)));
                }
                Lookup::Crate(targets)
            }
            other => other,
        }
    }

    fn lookup_unguarded(&self, module: usize, name: &str) -> Lookup {
        let scope = &self.scopes[module];
        let mut targets = scope.defined.get(name).cloned().unwrap_or_default();
        let mut external = false;
        for leaf in scope.imported.get(name).into_iter().flatten() {
            match self.resolve(module, &leaf.segments) {
                Resolved::Found { targets: found, .. } => targets.extend(found),
                Resolved::External => external = true,
                Resolved::Unresolved { .. } => {}
            }
        }
        if targets.is_empty() && !external {
            for glob in &scope.globs {
                let Resolved::Found { targets: found, .. } = self.resolve(module, &glob.segments)
                else {
                    continue;
                };
                for from in found {
                    if let Target::Module(from) = from {
                        match self.lookup(from, name, true) {
                            Lookup::Crate(more) => targets.extend(more),
                            Lookup::External => external = true,
                            Lookup::Unbound => {}
                        }
                    }
                }
            }
        }
        match (targets.is_empty(), external) {
            (false, _) => Lookup::Crate(targets),
            (true, true) => Lookup::External,
            (true, false) => Lookup::Unbound,
        }
    }
}

/// The names `module`'s items define, in its scope (a `#[macro_export]` macro's in the root's too).
fn define_items(krate: &Crate, module: usize, scopes: &mut [Scope]) {
    let m = &krate.modules[module];
    for item in m.items.iter().filter(|it| !it.cfg_test) {
        let Some(name) = &item.name else { continue };
        let target = match item.kind {
            ItemKind::Mod => {
                let child = (0..krate.modules.len()).find(|c| {
                    krate.modules[*c].parent == Some(module)
                        && krate.modules[*c].path.last() == Some(name)
                });
                match child {
                    Some(c) => Target::Module(c),
                    None => continue,
                }
            }
            ItemKind::Use
            | ItemKind::Impl
            | ItemKind::ExternCrate
            | ItemKind::MacroCall
            | ItemKind::Other => continue,
            _ => Target::Item(m.file),
        };
        if item.macro_export {
            scopes[0]
                .defined
                .entry(name.clone())
                .or_default()
                .push(target);
        }
        scopes[module]
            .defined
            .entry(name.clone())
            .or_default()
            .push(target);
    }
}

/// The token ranges of `module`'s own production code: its body without test code and without
/// the bodies of the inline modules inside it.
fn own_code(krate: &Crate, module: usize) -> Vec<Range<usize>> {
    let m = &krate.modules[module];
    let source = &krate.files[m.file];
    let mut holes: Vec<Range<usize>> = source.test_code.clone();
    holes.extend(
        krate
            .modules
            .iter()
            .filter(|c| c.parent == Some(module) && c.file == m.file)
            .map(|c| c.body.clone()),
    );
    holes.sort_by_key(|r| r.start);
    let mut code = Vec::new();
    let mut at = m.body.start;
    for hole in holes {
        if hole.end <= at || hole.start >= m.body.end {
            continue;
        }
        if hole.start > at {
            code.push(at..hole.start);
        }
        at = at.max(hole.end);
    }
    if at < m.body.end {
        code.push(at..m.body.end);
    }
    code
}

/// Every `use` leaf in `code`, at any depth.
fn use_leaves(krate: &Crate, module: usize, code: &[Range<usize>]) -> Vec<UseLeaf> {
    let source = &krate.files[krate.modules[module].file];
    let toks = &source.toks;
    let mut leaves = Vec::new();
    for range in code {
        for i in range.clone() {
            if toks[i].0 != Tok::Ident("use".into()) {
                continue;
            }
            let end = (i..range.end)
                .find(|j| toks[*j].0 == Tok::Punct(';'))
                .unwrap_or(range.end);
            let reexport = match toks.get(i.wrapping_sub(1)).map(|t| &t.0) {
                Some(Tok::Ident(w)) => w == "pub",
                Some(Tok::Punct(')')) => {
                    let open = source.partner[i - 1];
                    open > 0 && toks[open - 1].0 == Tok::Ident("pub".into())
                }
                _ => false,
            };
            let mut tree = UseTree {
                toks,
                partner: &source.partner,
                reexport,
                leaves: &mut leaves,
            };
            tree.parse(i + 1, end, Vec::new());
        }
    }
    leaves
}

/// A `use` tree being flattened into its leaves.
struct UseTree<'t> {
    toks: &'t [(Tok, usize)],
    partner: &'t [usize],
    reexport: bool,
    leaves: &'t mut Vec<UseLeaf>,
}

impl UseTree<'_> {
    /// The tree in `toks[at..end]`, under the path `prefix`.
    fn parse(&mut self, mut at: usize, end: usize, mut segments: Vec<String>) {
        if at < end && self.toks[at].0 == Tok::PathSep {
            // `use ::std::…`: another crate's.
            return;
        }
        let line = self.toks.get(at).map_or(0, |t| t.1);
        while at < end {
            match &self.toks[at].0 {
                Tok::Ident(w) if w != "as" => {
                    segments.push(w.clone());
                    at += 1;
                    if at < end && self.toks[at].0 == Tok::PathSep {
                        at += 1;
                        continue;
                    }
                    break;
                }
                Tok::Punct('*') => {
                    self.leaf(segments, None, line);
                    return;
                }
                Tok::Punct('{') => {
                    self.group(at, segments);
                    return;
                }
                _ => return,
            }
        }
        if segments.last().map(String::as_str) == Some("self") {
            segments.pop();
        }
        let alias =
            (at + 1 < end && self.toks[at].0 == Tok::Ident("as".into())).then(|| {
                match &self.toks[at + 1].0 {
                    Tok::Ident(w) => w.clone(),
                    _ => "_".into(),
                }
            });
        let binding = alias.or_else(|| segments.last().cloned());
        if let Some(binding) = binding
            && !segments.is_empty()
        {
            self.leaf(segments, Some(binding), line);
        }
    }

    /// The trees of the group `{ a, b::{c, d} }` opening at `open`, each under `segments`.
    fn group(&mut self, open: usize, segments: Vec<String>) {
        let close = self.partner[open];
        let mut start = open + 1;
        let mut j = start;
        while j <= close {
            if j == close || self.toks[j].0 == Tok::Punct(',') {
                if j > start {
                    self.parse(start, j, segments.clone());
                }
                start = j + 1;
            } else if matches!(self.toks[j].0, Tok::Punct('(' | '[' | '{')) {
                j = self.partner[j];
            }
            j += 1;
        }
    }

    fn leaf(&mut self, segments: Vec<String>, binding: Option<String>, line: usize) {
        if !segments.is_empty() {
            self.leaves.push(UseLeaf {
                segments,
                binding,
                reexport: self.reexport,
                line,
            });
        }
    }
}

/// The paths of two segments or more in `code` outside `use` declarations, with their lines:
/// `crate::ledger::Ledger`, `super::execute::run`, `Command::Search`.
fn code_paths(krate: &Crate, module: usize, code: &[Range<usize>]) -> Vec<(Vec<String>, usize)> {
    let toks = &krate.files[krate.modules[module].file].toks;
    let mut paths = Vec::new();
    for range in code {
        let mut i = range.start;
        while i < range.end {
            if toks[i].0 == Tok::Ident("use".into()) {
                i = (i..range.end)
                    .find(|j| toks[*j].0 == Tok::Punct(';'))
                    .unwrap_or(range.end);
                continue;
            }
            let starts = matches!(toks[i].0, Tok::Ident(_))
                && !(i > 0 && matches!(toks[i - 1].0, Tok::PathSep | Tok::Punct('.')));
            if !starts {
                i += 1;
                continue;
            }
            let mut segments = Vec::new();
            let mut j = i;
            while let Some((Tok::Ident(w), _)) = toks.get(j) {
                segments.push(w.clone());
                if j + 2 < range.end
                    && toks[j + 1].0 == Tok::PathSep
                    && matches!(toks[j + 2].0, Tok::Ident(_))
                {
                    j += 2;
                } else {
                    break;
                }
            }
            if segments.len() > 1 {
                paths.push((segments, toks[i].1));
            }
            i = j + 1;
        }
    }
    paths
}

mod tests {
    use super::super::source::tests::crate_of;
    use super::*;

    /// The references of a crate made of `files`, as `from → to: path`.
    fn edges(files: &[(&str, &str)]) -> Vec<String> {
        let krate = crate_of(files);
        let (refs, unresolved) = references(&krate);
        assert_eq!(unresolved, [], "every path resolves");
        refs.iter()
            .map(|r| {
                format!(
                    "{} → {}: {}",
                    krate.files[r.from].name, krate.files[r.to].name, r.path
                )
            })
            .collect()
    }

    #[test]
    fn a_re_export_is_followed_to_the_file_defining_the_name() {
        let found = edges(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            (
                "a/mod.rs",
                "mod inner;\npub use inner::{Deep as Renamed, Other};\n",
            ),
            ("a/inner.rs", "pub struct Deep;\npub fn Other() {}\n"),
            (
                "b.rs",
                "use crate::a::Renamed;\nfn f() { crate::a::Other(); }\n",
            ),
        ]);
        assert_eq!(
            found,
            [
                "b.rs → a/inner.rs: crate::a::Renamed",
                "b.rs → a/inner.rs: crate::a::Other",
            ]
        );
    }

    #[test]
    fn super_names_a_parent_freely_and_a_sibling_with_an_edge() {
        let found = edges(&[
            ("lib.rs", "mod w;\n"),
            (
                "w/mod.rs",
                "mod a;\nmod b;\npub struct Worker;\npub(crate) use b::Shared;\n",
            ),
            (
                "w/a.rs",
                "use super::Worker;\nuse super::Shared;\nfn f(_: crate::w::Worker) { super::b::g(); }\n",
            ),
            ("w/b.rs", "pub struct Shared;\npub fn g() {}\n"),
        ]);
        assert_eq!(
            found,
            [
                "w/a.rs → w/b.rs: super::Shared",
                "w/a.rs → w/b.rs: super::b::g"
            ]
        );
    }

    #[test]
    fn grouped_and_renamed_imports_are_each_an_edge() {
        let found = edges(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
            (
                "a.rs",
                "use crate::{b::{One, Two as Deux}, c::{self, Three}};\nfn f() { c::four(); }\n",
            ),
            ("b.rs", "pub struct One;\npub struct Two;\n"),
            ("c.rs", "pub struct Three;\npub fn four() {}\n"),
        ]);
        assert_eq!(
            found,
            [
                "a.rs → b.rs: crate::b::One",
                "a.rs → b.rs: crate::b::Two",
                "a.rs → c.rs: crate::c::Three",
                "a.rs → c.rs: c::four",
            ]
        );
    }

    #[test]
    fn qualified_paths_in_code_name_their_item_and_other_crates_are_no_edge() {
        let found = edges(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            (
                "a.rs",
                "use std::collections::HashMap;\nfn f(x: &HashMap<u8, u8>) -> crate::b::Kind {\n    \
                 let _ = tokio::spawn(async {});\n    crate::b::Kind::Variant\n}\n",
            ),
            ("b.rs", "pub enum Kind { Variant }\n"),
        ]);
        assert_eq!(
            found,
            [
                "a.rs → b.rs: crate::b::Kind",
                "a.rs → b.rs: crate::b::Kind::Variant"
            ]
        );
    }

    #[test]
    fn a_glob_of_a_sibling_is_an_edge_and_of_a_parent_only_what_it_brings_in() {
        let found = edges(&[
            ("lib.rs", "mod p;\nmod far;\n"),
            (
                "p/mod.rs",
                "mod a;\nmod b;\nmod c;\nuse crate::far::Far;\npub struct Own;\n",
            ),
            ("p/a.rs", "use super::b::*;\n"),
            ("p/b.rs", "pub struct B;\n"),
            ("p/c.rs", "use super::*;\nfn f(_: Own, _: Far) {}\n"),
            ("far.rs", "pub struct Far;\n"),
        ]);
        assert_eq!(
            found,
            [
                "p/mod.rs → far.rs: crate::far::Far",
                "p/a.rs → p/b.rs: super::b::*",
                "p/c.rs → far.rs: super::* (Far)",
            ]
        );
    }

    #[test]
    fn test_code_imports_freely() {
        let found = edges(&[
            ("lib.rs", "mod a;\nmod b;\n#[cfg(test)]\nmod checks;\n"),
            (
                "a.rs",
                "#[cfg(test)]\nuse crate::b::B;\nfn f() {\n    #[cfg(test)]\n    crate::b::g();\n}\n\
                 #[cfg(test)]\nmod tests {\n    use crate::b::B;\n}\n",
            ),
            ("b.rs", "pub struct B;\npub fn g() {}\n"),
            ("checks.rs", "use crate::a::*;\n"),
        ]);
        assert_eq!(found, Vec::<String>::new());
    }

    #[test]
    fn a_parents_re_export_is_no_edge_but_its_own_use_of_a_child_is() {
        let found = edges(&[
            ("lib.rs", "pub mod p;\npub use p::Api;\n"),
            (
                "p/mod.rs",
                "mod api;\nmod helper;\npub use api::Api;\nuse helper::help;\nfn f() { help() }\n",
            ),
            ("p/api.rs", "pub struct Api;\n"),
            ("p/helper.rs", "pub fn help() {}\n"),
        ]);
        assert_eq!(found, ["p/mod.rs → p/helper.rs: helper::help"]);
    }

    #[test]
    fn an_exported_macro_belongs_to_the_root_and_a_use_inside_a_function_counts() {
        let found = edges(&[
            ("lib.rs", "mod fail;\nmod a;\nmod b;\n"),
            (
                "fail.rs",
                "#[macro_export]\nmacro_rules! crash { () => {} }\n",
            ),
            (
                "a.rs",
                "fn f() {\n    use crate::b::B;\n    crate::crash!();\n}\n",
            ),
            ("b.rs", "pub struct B;\n"),
        ]);
        assert_eq!(
            found,
            ["a.rs → fail.rs: crate::crash", "a.rs → b.rs: crate::b::B"]
        );
    }

    #[test]
    fn a_path_into_the_crate_that_names_nothing_is_reported_and_names_its_module() {
        let krate = crate_of(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            (
                "a.rs",
                "macro_rules! make { () => { pub fn made() {} } }\nmake!();\n",
            ),
            ("b.rs", "fn f() {\n    crate::a::made();\n}\n"),
        ]);
        let (refs, unresolved) = references(&krate);
        assert_eq!(
            unresolved,
            [Unresolved {
                file: 2,
                line: 2,
                path: "crate::a::made".into()
            }]
        );
        assert_eq!(
            refs,
            [Reference {
                from: 2,
                to: 1,
                line: 2,
                path: "crate::a::made".into()
            }]
        );
    }
}
