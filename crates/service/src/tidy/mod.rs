//! Checks on the service's own source, run with its tests (rust-analyzer's "tidy" tests): a
//! rule the code should keep is held here, so it does not depend on someone remembering it.
//!
//! `function_lengths`: no function in `crates/service/src` is longer than
//! [`MAX_LINES`], and at most [`MAX_LONG`] are longer than [`LONG_LINES`] (issue 26 §4: long
//! functions grew back once; the test keeps them from growing back again). A function is
//! measured from its `fn` line to the line of its closing brace; `#[cfg(test)]` modules, files
//! and functions are not counted, nor signatures without a body (a trait's).
//!
//! The scanner is a small lexer, not a parser: it skips comments, strings (raw and byte strings
//! too) and char literals, tells lifetimes from chars, and takes `fn` followed by a name as a
//! function (a `fn(..)` pointer type has no name). Its own tests below hold it to the cases that
//! matter.

use std::path::{Path, PathBuf};

/// No function may be longer than this.
const MAX_LINES: usize = 100;
/// A function longer than this is "long"...
const LONG_LINES: usize = 60;
/// ...and the crate may have at most this many.
const MAX_LONG: usize = 12;

/// One function with a body, as found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Function {
    name: String,
    /// 1-based line of its `fn` keyword.
    line: usize,
    /// From the `fn` line to the closing brace's line, both included.
    lines: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Punct(char),
    /// A string, char or number literal (its text does not matter here).
    Literal,
}

/// Rust source as tokens with their 1-based lines, without comments.
fn lex(src: &str) -> Vec<(Tok, usize)> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    // Advances over `n` chars, counting the line breaks in them.
    let skip = |i: &mut usize, line: &mut usize, n: usize| {
        for c in &chars[*i..(*i + n).min(chars.len())] {
            if *c == '\n' {
                *line += 1;
            }
        }
        *i = (*i + n).min(chars.len());
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            skip(&mut i, &mut line, 1);
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            loop {
                if i >= chars.len() {
                    break;
                }
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    skip(&mut i, &mut line, 2);
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    skip(&mut i, &mut line, 2);
                    if depth == 0 {
                        break;
                    }
                } else {
                    skip(&mut i, &mut line, 1);
                }
            }
        } else if c == '"' {
            let start = line;
            let n = quoted_len(&chars[i..], '"');
            skip(&mut i, &mut line, n);
            out.push((Tok::Literal, start));
        } else if c == '\'' {
            let start = line;
            if next == Some('\\') || chars.get(i + 2) == Some(&'\'') {
                let n = quoted_len(&chars[i..], '\'');
                skip(&mut i, &mut line, n);
                out.push((Tok::Literal, start));
            } else {
                // A lifetime or a label: `'a`, `'static`.
                i += 1;
                while i < chars.len() && is_ident_char(chars[i]) {
                    i += 1;
                }
            }
        } else if is_ident_char(c) {
            let start = i;
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let rest = &chars[i..];
            let prefix = matches!(word.as_str(), "b" | "c" | "r" | "br" | "cr");
            let hashes = rest.iter().take_while(|c| **c == '#').count();
            if prefix && word.ends_with('r') && rest.get(hashes) == Some(&'"') {
                let n = raw_len(rest);
                let start = line;
                skip(&mut i, &mut line, n);
                out.push((Tok::Literal, start));
            } else if prefix && matches!(rest.first(), Some('"' | '\'')) {
                let n = quoted_len(rest, rest[0]);
                let start = line;
                skip(&mut i, &mut line, n);
                out.push((Tok::Literal, start));
            } else if word == "r" && hashes == 1 {
                // A raw identifier, `r#type`: the word after `#` comes next.
                i += 1;
            } else if c.is_ascii_digit() {
                out.push((Tok::Literal, line));
            } else {
                out.push((Tok::Ident(word), line));
            }
        } else {
            out.push((Tok::Punct(c), line));
            i += 1;
        }
    }
    out
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// The length of a `"…"` or `'…'` literal starting at `s[0]`, escapes included.
fn quoted_len(s: &[char], quote: char) -> usize {
    let mut i = 1;
    while i < s.len() {
        match s[i] {
            '\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    s.len()
}

/// The length of a raw string's `#…#"…"#…#` after its `r`.
fn raw_len(s: &[char]) -> usize {
    let hashes = s.iter().take_while(|c| **c == '#').count();
    let mut i = hashes + 1;
    while i < s.len() {
        if s[i] == '"'
            && s[i + 1..]
                .iter()
                .take(hashes)
                .filter(|c| **c == '#')
                .count()
                == hashes
        {
            return i + 1 + hashes;
        }
        i += 1;
    }
    s.len()
}

/// What one file holds: its functions with bodies, and the files of the `#[cfg(test)] mod x;`
/// it declares (not counted).
#[derive(Debug, Default)]
struct Scan {
    functions: Vec<Function>,
    test_modules: Vec<String>,
}

fn scan(src: &str) -> Scan {
    let toks = lex(src);
    let closing = matching_braces(&toks);
    let mut found = Scan::default();
    let mut cfg_test = false;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].0 {
            // An attribute: `#[…]` or `#![…]`.
            Tok::Punct('#') => {
                let open = if toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Punct('!')) {
                    i + 2
                } else {
                    i + 1
                };
                if toks.get(open).map(|t| &t.0) != Some(&Tok::Punct('[')) {
                    i += 1;
                    continue;
                }
                let end = bracket_end(&toks, open);
                cfg_test |= is_cfg_test(&toks[open + 1..end]);
                i = end + 1;
                continue;
            }
            Tok::Ident(word) if cfg_test && is_qualifier(word) => {}
            // `pub(crate)`, `pub(super)`, `pub(in path)`.
            Tok::Punct('(') if cfg_test && i > 0 && toks[i - 1].0 == ident("pub") => {
                i = paren_end(&toks, i) + 1;
                continue;
            }
            Tok::Ident(word) if cfg_test && (word == "mod" || word == "fn") => {
                // A test-only module or function: skipped whole.
                let (end, body) = item_end(&toks, i);
                if word == "mod"
                    && body.is_none()
                    && let Some((Tok::Ident(name), _)) = toks.get(i + 1)
                {
                    found.test_modules.push(name.clone());
                }
                cfg_test = false;
                i = body.map_or(end, |open| closing[open]) + 1;
                continue;
            }
            Tok::Ident(word) if word == "fn" => {
                cfg_test = false;
                if let Some((Tok::Ident(name), line)) = toks.get(i + 1)
                    && let (_, Some(open)) = item_end(&toks, i)
                {
                    found.functions.push(Function {
                        name: name.clone(),
                        line: *line,
                        lines: toks[closing[open]].1 - line + 1,
                    });
                }
            }
            _ => cfg_test = false,
        }
        i += 1;
    }
    found
}

fn ident(word: &str) -> Tok {
    Tok::Ident(word.to_string())
}

/// Words that may stand between an item's attributes and its `fn` or `mod`.
fn is_qualifier(word: &str) -> bool {
    matches!(
        word,
        "pub" | "async" | "const" | "unsafe" | "extern" | "default"
    )
}

/// `cfg(test)` exactly (`cfg(not(test))` is not test code).
fn is_cfg_test(attr: &[(Tok, usize)]) -> bool {
    let words: Vec<&Tok> = attr.iter().map(|t| &t.0).collect();
    words
        == [
            &ident("cfg"),
            &Tok::Punct('('),
            &ident("test"),
            &Tok::Punct(')'),
        ]
}

/// The index of the `]` closing the `[` at `open`.
fn bracket_end(toks: &[(Tok, usize)], open: usize) -> usize {
    group_end(toks, open, '[', ']')
}

fn paren_end(toks: &[(Tok, usize)], open: usize) -> usize {
    group_end(toks, open, '(', ')')
}

fn group_end(toks: &[(Tok, usize)], open: usize, o: char, c: char) -> usize {
    let mut depth = 0;
    for (j, (t, _)) in toks.iter().enumerate().skip(open) {
        if *t == Tok::Punct(o) {
            depth += 1;
        } else if *t == Tok::Punct(c) {
            depth -= 1;
            if depth == 0 {
                return j;
            }
        }
    }
    toks.len() - 1
}

/// From an item's keyword at `at`: the index of the `;` that ends it without a body, or of the
/// body's `{` (also returned as the body). Parentheses and brackets are passed over, so a
/// `[u8; 4]` in a signature does not end it; a signature holds no braces outside them.
fn item_end(toks: &[(Tok, usize)], at: usize) -> (usize, Option<usize>) {
    let mut depth = 0i32;
    for (j, (t, _)) in toks.iter().enumerate().skip(at) {
        match t {
            Tok::Punct('(' | '[') => depth += 1,
            Tok::Punct(')' | ']') => depth -= 1,
            Tok::Punct('{') if depth == 0 => return (j, Some(j)),
            Tok::Punct(';') if depth == 0 => return (j, None),
            _ => {}
        }
    }
    (toks.len() - 1, None)
}

/// For each `{`, the index of its `}` (other entries unused).
fn matching_braces(toks: &[(Tok, usize)]) -> Vec<usize> {
    let mut closing = vec![toks.len().saturating_sub(1); toks.len()];
    let mut open = Vec::new();
    for (j, (t, _)) in toks.iter().enumerate() {
        match t {
            Tok::Punct('{') => open.push(j),
            Tok::Punct('}') => {
                if let Some(o) = open.pop() {
                    closing[o] = j;
                }
            }
            _ => {}
        }
    }
    closing
}

/// The file a `mod name;` in `file` declares.
fn module_file(file: &Path, name: &str) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new("."));
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let dir = if matches!(stem, "lib" | "main" | "mod") {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    };
    let flat = dir.join(format!("{name}.rs"));
    if flat.exists() {
        flat
    } else {
        dir.join(name).join("mod.rs")
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every function with a body in the crate's source outside test code, with its file.
fn crate_functions() -> Vec<(PathBuf, Function)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut scans = Vec::new();
    let mut test_files = Vec::new();
    for file in files {
        let src = std::fs::read_to_string(&file).unwrap();
        let found = scan(&src);
        for name in &found.test_modules {
            let test_file = module_file(&file, name);
            assert!(
                test_file.exists(),
                "{}: mod {name}; not found",
                file.display()
            );
            test_files.push(test_file);
        }
        scans.push((file, found.functions));
    }
    scans
        .into_iter()
        .filter(|(file, _)| !test_files.contains(file))
        .flat_map(|(file, functions)| {
            let shown = file.strip_prefix(root).unwrap_or(&file).to_path_buf();
            functions.into_iter().map(move |f| (shown.clone(), f))
        })
        .collect()
}

#[test]
fn function_lengths() {
    let mut long: Vec<_> = crate_functions()
        .into_iter()
        .filter(|(_, f)| f.lines > LONG_LINES)
        .collect();
    long.sort_by_key(|(_, f)| std::cmp::Reverse(f.lines));
    let list = long
        .iter()
        .map(|(file, f)| {
            format!(
                "  {}:{} fn {}: {} lines",
                file.display(),
                f.line,
                f.name,
                f.lines
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let too_long = long.iter().filter(|(_, f)| f.lines > MAX_LINES).count();
    assert!(
        too_long == 0 && long.len() <= MAX_LONG,
        "{too_long} functions over {MAX_LINES} lines (none allowed) and {} over {LONG_LINES} \
         (at most {MAX_LONG}); split them into named steps (issue 26 §4):\n{list}",
        long.len()
    );
}

mod tests {
    use super::*;

    fn lengths(src: &str) -> Vec<(String, usize)> {
        scan(src)
            .functions
            .into_iter()
            .map(|f| (f.name, f.lines))
            .collect()
    }

    fn pairs(expected: &[(&str, usize)]) -> Vec<(String, usize)> {
        expected.iter().map(|(n, l)| (n.to_string(), *l)).collect()
    }

    #[test]
    fn a_function_is_counted_from_its_fn_line_to_its_closing_brace() {
        let src = "/// Doc.\n#[inline]\npub(crate) async fn a() {\n    b();\n}\n";
        assert_eq!(
            scan(src).functions[0],
            Function {
                name: "a".into(),
                line: 3,
                lines: 3
            }
        );
    }

    #[test]
    fn qualifiers_generics_and_where_clauses_over_several_lines_are_part_of_the_function() {
        let src = "pub const fn c() -> u8 { 1 }\n\
                   pub(super) async unsafe fn g<\n    T: Into<u8>,\n>(\n    x: T,\n) -> Result<(), [u8; 4]>\n\
                   where\n    T: Copy,\n{\n    todo!()\n}\n";
        assert_eq!(lengths(src), pairs(&[("c", 1), ("g", 10)]));
    }

    #[test]
    fn trait_impls_count_and_signatures_without_a_body_do_not() {
        let src = "trait T {\n    fn sig(&self) -> u8;\n    fn default_body(&self) {\n    }\n}\n\
                   impl T for X {\n    fn sig(&self) -> u8 {\n        1\n    }\n}\n";
        assert_eq!(lengths(src), pairs(&[("default_body", 2), ("sig", 3)]));
    }

    #[test]
    fn strings_chars_comments_and_pointer_types_do_not_confuse_it() {
        let src = "fn a(f: fn(u8) -> u8) -> &'static str {\n\
                   let _ = '{'; let _ = '\\''; let _ = b'}';\n\
                   // fn nope() {\n/* fn no() { /* nested */ } */\n\
                   let _ = \"fn no() { \\\" }\"; let _ = r#\"}\" fn x() {\"#;\n\
                   let _: &dyn Fn() = &|| {}; let r#type = 1;\n'label: loop { break 'label; }\n\"}\"\n}\n";
        assert_eq!(lengths(src), pairs(&[("a", 9)]));
    }

    #[test]
    fn test_modules_and_test_functions_are_left_out() {
        let src = "fn kept() {}\n#[cfg(test)]\nmod tests {\n    fn helper() {\n    }\n}\n\
                   #[cfg(test)]\n#[allow(dead_code)]\npub(crate) fn only_in_tests() {\n}\n\
                   #[cfg(test)]\nmod script_calls;\n#[cfg(not(test))]\nfn real() {\n}\n\
                   struct S {\n    #[cfg(test)]\n    named: u8,\n}\nfn after() {\n}\n";
        let found = scan(src);
        let names: Vec<_> = found.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["kept", "real", "after"]);
        assert_eq!(found.test_modules, ["script_calls"]);
    }

    #[test]
    fn nested_functions_are_counted_on_their_own_and_inside_their_outer_function() {
        let src = "fn outer() {\n    fn inner() {\n    }\n}\n";
        assert_eq!(lengths(src), pairs(&[("outer", 4), ("inner", 2)]));
    }
}
