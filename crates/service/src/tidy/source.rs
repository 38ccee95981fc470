//! A crate as the checks see it: its files, reached from `lib.rs` through `mod` declarations the
//! way rustc reaches them, each with its tokens and its `#[cfg(test)]` code, and its tree of
//! modules (a file's, and the inline `mod x { … }` ones inside it).
//!
//! Following `mod` lines rather than listing the directory is what makes a file test-only when
//! any module above it is declared under `#[cfg(test)]` (`tidy/` itself, `ledger/script_calls.rs`).
//! Files are read through a function, so the checks' own tests run on sources held in memory.

use std::ops::Range;
use std::path::Path;

use super::items::{Item, ItemKind, module_items, test_code};
use super::lex::{Tok, lex, pair_brackets};

/// One source file of the crate.
#[derive(Debug)]
pub(super) struct SourceFile {
    /// Its path under the crate's `src/`, with `/`: `worker/commit.rs`.
    pub name: String,
    pub toks: Vec<(Tok, usize)>,
    /// The bracket pairing each bracket token (see [`pair_brackets`]).
    pub partner: Vec<usize>,
    /// Token ranges of `#[cfg(test)]` code, in order.
    pub test_code: Vec<Range<usize>>,
    /// Declared under `#[cfg(test)]`, or inside a module that is: the whole file is test code.
    pub test_only: bool,
    /// Its lines, as `str::lines` counts them.
    pub lines: usize,
}

/// One module: a file's, or an inline `mod x { … }` inside a file.
#[derive(Debug)]
pub(super) struct Module {
    /// Its path from the crate's root: `["worker", "execute"]`; empty for the root.
    pub path: Vec<String>,
    pub file: usize,
    pub parent: Option<usize>,
    /// The tokens of its body in its file (the whole file for a file's module).
    pub body: Range<usize>,
    /// Its items, in order.
    pub items: Vec<Item>,
    /// Test code: declared under `#[cfg(test)]`, itself or a module above it.
    pub test_only: bool,
}

/// A crate's files and modules; the root module is the first, `lib.rs` the first file.
#[derive(Debug)]
pub(super) struct Crate {
    pub files: Vec<SourceFile>,
    pub modules: Vec<Module>,
}

impl Crate {
    /// The crate whose `lib.rs` is in `src_dir`, read from disk.
    pub fn load(src_dir: &Path) -> Crate {
        Crate::read(&|name: &str| std::fs::read_to_string(src_dir.join(name)).ok())
    }

    /// The crate whose files `read` returns by their path under `src/` (`None`: no such file).
    pub fn read(read: &dyn Fn(&str) -> Option<String>) -> Crate {
        let mut loader = Loader {
            krate: Crate {
                files: Vec::new(),
                modules: Vec::new(),
            },
            read,
        };
        let lib = read("lib.rs").expect("tidy: the crate has no src/lib.rs");
        let root = Place {
            path: Vec::new(),
            parent: None,
            test_only: false,
        };
        loader.add_file("lib.rs".into(), &lib, root);
        loader.krate
    }

    /// The file's lines outside its `#[cfg(test)]` code (lines a test item shares with
    /// production code count as production).
    pub fn production_lines(&self, file: usize) -> usize {
        let source = &self.files[file];
        if source.test_only {
            return 0;
        }
        let mut test_lines = std::collections::BTreeSet::new();
        for r in &source.test_code {
            let first = source.toks[r.start].1;
            let last = source.toks[r.end - 1].1;
            let shared_before = r.start > 0 && source.toks[r.start - 1].1 == first;
            let shared_after = source.toks.get(r.end).is_some_and(|t| t.1 == last);
            let lines = first + usize::from(shared_before)..=last - usize::from(shared_after);
            test_lines.extend(lines);
        }
        source.lines - test_lines.len()
    }

    /// `worker::execute`; `crate` for the root.
    pub fn module_name(&self, module: usize) -> String {
        match self.modules[module].path.as_slice() {
            [] => "crate".into(),
            path => path.join("::"),
        }
    }

    /// The modules above `module`, its parent first.
    pub fn ancestors(&self, module: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(self.modules[module].parent, |m| self.modules[*m].parent)
    }

    /// The module of the file itself (not an inline one inside it).
    pub fn file_module(&self, file: usize) -> usize {
        self.modules
            .iter()
            .position(|m| m.file == file)
            .expect("every file has its module")
    }
}

/// A crate being read, file by file, from its `lib.rs` down its `mod` lines.
struct Loader<'r> {
    krate: Crate,
    read: &'r dyn Fn(&str) -> Option<String>,
}

/// Where a module sits: its path, its parent, and whether it is test code.
struct Place {
    path: Vec<String>,
    parent: Option<usize>,
    test_only: bool,
}

impl Loader<'_> {
    /// The file `name` (its text `src`) and the modules below it.
    fn add_file(&mut self, name: String, src: &str, mut place: Place) {
        let toks = lex(src);
        let partner = pair_brackets(&toks);
        let test_code = test_code(&toks, &partner);
        // An inner `#![cfg(test)]` at the top makes the whole file test code.
        place.test_only |= test_code.first().is_some_and(|r| r.len() == toks.len());
        let children_dir = children_dir(&name);
        let body = 0..toks.len();
        self.krate.files.push(SourceFile {
            name,
            toks,
            partner,
            test_code,
            test_only: place.test_only,
            lines: src.lines().count(),
        });
        let file = self.krate.files.len() - 1;
        self.add_module(file, place, body, &children_dir);
    }

    /// The module whose body is `body` in `file`, then the modules it declares (their files
    /// in `children_dir`).
    fn add_module(&mut self, file: usize, place: Place, body: Range<usize>, children_dir: &str) {
        let source = &self.krate.files[file];
        let items = module_items(&source.toks, &source.partner, body.clone());
        let id = self.krate.modules.len();
        self.krate.modules.push(Module {
            path: place.path.clone(),
            file,
            parent: place.parent,
            body,
            items: items.clone(),
            test_only: place.test_only,
        });
        for item in items.iter().filter(|it| it.kind == ItemKind::Mod) {
            let Some(name) = &item.name else { continue };
            let child = Place {
                path: [place.path.clone(), vec![name.clone()]].concat(),
                parent: Some(id),
                test_only: place.test_only || item.cfg_test,
            };
            match item.body {
                Some((open, close)) => {
                    let child_dir = format!("{children_dir}{name}/");
                    self.add_module(file, child, open + 1..close, &child_dir);
                }
                None => {
                    assert!(
                        !item.path_attribute,
                        "tidy: {}: `#[path]` on mod {name} is not followed",
                        self.krate.files[file].name
                    );
                    let (child_name, src) = module_file(children_dir, name, self.read);
                    self.add_file(child_name, &src, child);
                }
            }
        }
    }
}

/// Where the modules a file declares live: beside `lib.rs` and `mod.rs`, in a directory named
/// after any other file (`worker.rs` → `worker/`). Paths under `src/`, ending in `/` or empty.
fn children_dir(file: &str) -> String {
    let (dir, base) = file.rsplit_once('/').unwrap_or(("", file));
    let dir = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    match base.strip_suffix(".rs") {
        Some("lib" | "main" | "mod") | None => dir,
        Some(stem) => format!("{dir}{stem}/"),
    }
}

/// The file a `mod name;` declares: `name.rs` or `name/mod.rs` in `dir`, with its text.
fn module_file(dir: &str, name: &str, read: &dyn Fn(&str) -> Option<String>) -> (String, String) {
    [format!("{dir}{name}.rs"), format!("{dir}{name}/mod.rs")]
        .into_iter()
        .find_map(|path| read(&path).map(|src| (path, src)))
        .unwrap_or_else(|| {
            panic!("tidy: mod {name}; has neither {dir}{name}.rs nor {dir}{name}/mod.rs")
        })
}

/// The `.rs` files under `src_dir` that no `mod` reaches (rustc never compiles them).
pub(super) fn unreached_files(src_dir: &Path, krate: &Crate) -> Vec<String> {
    let mut on_disk = Vec::new();
    rust_files(src_dir, src_dir, &mut on_disk);
    on_disk
        .into_iter()
        .filter(|name| krate.files.iter().all(|f| &f.name != name))
        .collect()
}

fn rust_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("tidy: {}: {e}", dir.display()))
        .map(|e| e.expect("tidy: a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path.strip_prefix(root).unwrap_or(&path);
            out.push(name.to_string_lossy().replace('\\', "/"));
        }
    }
}

pub(super) mod tests {
    use super::*;

    /// A crate made of `(path under src/, text)` pairs.
    pub(in super::super) fn crate_of(files: &[(&str, &str)]) -> Crate {
        let files: Vec<(String, String)> = files
            .iter()
            .map(|(n, s)| (n.to_string(), s.to_string()))
            .collect();
        Crate::read(&move |name: &str| {
            files
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, s)| s.clone())
        })
    }

    #[test]
    fn modules_are_reached_through_mod_lines_and_test_ones_are_marked() {
        let krate = crate_of(&[
            ("lib.rs", "mod a;\n#[cfg(test)]\nmod tidy;\n"),
            ("a/mod.rs", "pub mod b;\nmod inline {\n    mod c;\n}\n"),
            ("a/b.rs", "fn b() {}\n"),
            ("a/inline/c.rs", "fn c() {}\n"),
            ("tidy/mod.rs", "mod lex;\n"),
            ("tidy/lex.rs", "fn lex() {}\n"),
        ]);
        let files: Vec<(&str, bool)> = krate
            .files
            .iter()
            .map(|f| (f.name.as_str(), f.test_only))
            .collect();
        assert_eq!(
            files,
            [
                ("lib.rs", false),
                ("a/mod.rs", false),
                ("a/b.rs", false),
                ("a/inline/c.rs", false),
                ("tidy/mod.rs", true),
                ("tidy/lex.rs", true),
            ]
        );
        let modules: Vec<String> = (0..krate.modules.len())
            .map(|m| krate.module_name(m))
            .collect();
        assert_eq!(
            modules,
            [
                "crate",
                "a",
                "a::b",
                "a::inline",
                "a::inline::c",
                "tidy",
                "tidy::lex"
            ]
        );
    }

    #[test]
    fn production_lines_leave_out_test_code() {
        let krate = crate_of(&[(
            "lib.rs",
            "fn a() {}\n#[cfg(test)]\nfn b() {\n}\nfn c() {}\n#[cfg(test)]\nmod tests {\n    fn d() {}\n}\n",
        )]);
        assert_eq!(krate.files[0].lines, 9);
        assert_eq!(krate.production_lines(0), 2);
    }
}
