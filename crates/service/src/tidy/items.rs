//! The little of Rust's item grammar the checks need: an item's attributes, visibility and
//! keyword, the name it defines, where it ends; and which code is `#[cfg(test)]` (an item, a
//! field, a statement), which every check leaves out.
//!
//! Where an item ends depends on its kind: `fn`, `mod`, `struct`, `enum`, `union`, `trait` and
//! `impl` end with their `{ … }` body or a `;` (brackets in the signature passed over, so a
//! `[u8; 4]` does not end it); `use`, `const`, `static`, `type` and `let` with the first `;`
//! outside brackets (a `const X: S = S { a: 1 };` holds braces); a macro call with its group; a
//! field or statement with the first `,` or `;` outside brackets, or before the bracket closing
//! what holds it.

use std::ops::Range;

use super::lex::{Tok, ident};

pub(super) type Toks = [(Tok, usize)];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ItemKind {
    Fn,
    Struct,
    Enum,
    Union,
    Trait,
    TypeAlias,
    Const,
    Static,
    Mod,
    MacroRules,
    Use,
    Impl,
    ExternCrate,
    MacroCall,
    /// A field, a statement, a match arm: what an attribute inside a body is attached to.
    Other,
}

/// One item, or inside a body the field or statement an attribute is attached to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Item {
    pub kind: ItemKind,
    /// The name it defines (`impl`, `use` and macro calls define none).
    pub name: Option<String>,
    /// Its tokens, from its first attribute to its last token.
    pub span: Range<usize>,
    /// Its `{ … }` body, as the indices of the braces.
    pub body: Option<(usize, usize)>,
    /// Has a visibility (`pub`, `pub(crate)`, …): a `use` with one is a re-export.
    pub visible: bool,
    /// Carries `#[cfg(test)]` exactly (`cfg(not(test))` is production code).
    pub cfg_test: bool,
    /// A `macro_rules!` under `#[macro_export]`: its name belongs to the crate's root.
    pub macro_export: bool,
    /// Carries `#[path = …]`, which tidy does not follow.
    pub path_attribute: bool,
}

fn word(toks: &Toks, i: usize) -> Option<&str> {
    match toks.get(i) {
        Some((Tok::Ident(w), _)) => Some(w),
        _ => None,
    }
}

fn is_punct(toks: &Toks, i: usize, c: char) -> bool {
    toks.get(i).map(|t| &t.0) == Some(&Tok::Punct(c))
}

/// `#[…]` at `i`: the index of its `]`.
pub(super) fn outer_attribute_end(toks: &Toks, partner: &[usize], i: usize) -> Option<usize> {
    (is_punct(toks, i, '#') && is_punct(toks, i + 1, '[')).then(|| partner[i + 1])
}

/// `#![…]` at `i`: the index of its `]`.
pub(super) fn inner_attribute_end(toks: &Toks, partner: &[usize], i: usize) -> Option<usize> {
    (is_punct(toks, i, '#') && is_punct(toks, i + 1, '!') && is_punct(toks, i + 2, '['))
        .then(|| partner[i + 2])
}

/// `cfg(test)` exactly, given an attribute's tokens between its brackets.
pub(super) fn is_cfg_test(attr: &Toks) -> bool {
    let words: Vec<&Tok> = attr.iter().map(|t| &t.0).collect();
    words
        == [
            &ident("cfg"),
            &Tok::Punct('('),
            &ident("test"),
            &Tok::Punct(')'),
        ]
}

/// The item (or field, or statement) starting at `at` with its attributes.
pub(super) fn parse_item(toks: &Toks, partner: &[usize], at: usize) -> Item {
    let mut item = Item {
        kind: ItemKind::Other,
        name: None,
        span: at..at + 1,
        body: None,
        visible: false,
        cfg_test: false,
        macro_export: false,
        path_attribute: false,
    };
    let mut i = at;
    while let Some(end) = outer_attribute_end(toks, partner, i) {
        let attr = &toks[i + 2..end];
        item.cfg_test |= is_cfg_test(attr);
        item.macro_export |= attr.first().map(|t| &t.0) == Some(&ident("macro_export"));
        item.path_attribute |= attr.first().map(|t| &t.0) == Some(&ident("path"));
        i = end + 1;
    }
    if word(toks, i) == Some("pub") {
        item.visible = true;
        i += 1;
        if is_punct(toks, i, '(') {
            i = partner[i] + 1;
        }
    }
    i = skip_qualifiers(toks, i);
    let (kind, name, end, body) = item_at(toks, partner, i);
    item.kind = kind;
    item.name = name;
    item.body = body;
    item.span = at..(end + 1).max(i + 1).min(toks.len());
    item
}

/// Words that may stand between an item's visibility and its keyword.
fn skip_qualifiers(toks: &Toks, mut i: usize) -> usize {
    loop {
        let next = word(toks, i + 1);
        match word(toks, i) {
            Some("async" | "unsafe") => i += 1,
            Some("extern") if next != Some("crate") => {
                i += 1;
                if matches!(toks.get(i), Some((Tok::Literal, _))) {
                    i += 1;
                }
            }
            Some("const") if matches!(next, Some("fn" | "unsafe" | "async" | "extern")) => i += 1,
            Some("default")
                if matches!(next, Some("fn" | "type" | "const" | "unsafe" | "impl")) =>
            {
                i += 1
            }
            Some("auto") if next == Some("trait") => i += 1,
            _ => return i,
        }
    }
}

type Parsed = (ItemKind, Option<String>, usize, Option<(usize, usize)>);

/// From an item's keyword at `i`: its kind, its name, the index of its last token, its body.
fn item_at(toks: &Toks, partner: &[usize], i: usize) -> Parsed {
    let name_at = |j: usize| word(toks, j).map(str::to_string);
    let braced = |kind: ItemKind, name: Option<String>| {
        let (end, body) = braced_end(toks, partner, i);
        (kind, name, end, body)
    };
    let until_semicolon = |kind: ItemKind, name: Option<String>| {
        (kind, name, statement_end(toks, partner, i, &[';']), None)
    };
    match word(toks, i) {
        Some("fn") => braced(ItemKind::Fn, name_at(i + 1)),
        Some("struct") => braced(ItemKind::Struct, name_at(i + 1)),
        Some("enum") => braced(ItemKind::Enum, name_at(i + 1)),
        Some("trait") => braced(ItemKind::Trait, name_at(i + 1)),
        Some("mod") => braced(ItemKind::Mod, name_at(i + 1)),
        Some("impl") => braced(ItemKind::Impl, None),
        Some("union") if word(toks, i + 1).is_some() => braced(ItemKind::Union, name_at(i + 1)),
        Some("type") => until_semicolon(ItemKind::TypeAlias, name_at(i + 1)),
        Some("const") => until_semicolon(ItemKind::Const, name_at(i + 1)),
        Some("static") => {
            let name = if word(toks, i + 1) == Some("mut") {
                i + 2
            } else {
                i + 1
            };
            until_semicolon(ItemKind::Static, name_at(name))
        }
        Some("use") => until_semicolon(ItemKind::Use, None),
        Some("extern") => until_semicolon(ItemKind::ExternCrate, None),
        Some("let") => until_semicolon(ItemKind::Other, None),
        Some("macro_rules") if is_punct(toks, i + 1, '!') => {
            let (end, body) = macro_end(toks, partner, i + 3);
            (ItemKind::MacroRules, name_at(i + 2), end, body)
        }
        Some(_) => match macro_bang(toks, i) {
            Some(bang) => {
                let (end, body) = macro_end(toks, partner, bang + 1);
                (ItemKind::MacroCall, None, end, body)
            }
            None => other(toks, partner, i),
        },
        None => other(toks, partner, i),
    }
}

/// A field, statement or arm: up to the first `,` or `;` outside brackets.
fn other(toks: &Toks, partner: &[usize], i: usize) -> Parsed {
    (
        ItemKind::Other,
        None,
        statement_end(toks, partner, i, &[',', ';']),
        None,
    )
}

/// A macro call's path at `i` (`name!`, `a::b!`): the index of its `!`.
fn macro_bang(toks: &Toks, mut i: usize) -> Option<usize> {
    while word(toks, i).is_some() {
        if is_punct(toks, i + 1, '!') {
            return Some(i + 1);
        }
        if toks.get(i + 1).map(|t| &t.0) != Some(&Tok::PathSep) {
            return None;
        }
        i += 2;
    }
    None
}

/// A macro's group opening at `open`: its last token (the `}`, or the `;` after `(…)`/`[…]`).
fn macro_end(toks: &Toks, partner: &[usize], open: usize) -> (usize, Option<(usize, usize)>) {
    let close = partner[open.min(toks.len() - 1)];
    if is_punct(toks, open, '{') {
        (close, Some((open, close)))
    } else if is_punct(toks, close + 1, ';') {
        (close + 1, None)
    } else {
        (close, None)
    }
}

/// From an item's keyword at `at`: the index of the `;` that ends it without a body, or of the
/// body's `}` (the body returned too). Parentheses and brackets are passed over, so a
/// `[u8; 4]` in a signature does not end it; a signature holds no braces outside them.
pub(super) fn braced_end(
    toks: &Toks,
    partner: &[usize],
    at: usize,
) -> (usize, Option<(usize, usize)>) {
    let mut j = at;
    while j < toks.len() {
        match toks[j].0 {
            Tok::Punct('(' | '[') => j = partner[j],
            Tok::Punct('{') => return (partner[j], Some((j, partner[j]))),
            Tok::Punct(';') => return (j, None),
            _ => {}
        }
        j += 1;
    }
    (toks.len() - 1, None)
}

/// From `at`: the index of the first of `ends` outside brackets, or of the token before the
/// bracket that closes what holds it.
fn statement_end(toks: &Toks, partner: &[usize], at: usize, ends: &[char]) -> usize {
    let mut j = at;
    while j < toks.len() {
        match toks[j].0 {
            Tok::Punct('(' | '[' | '{') => j = partner[j],
            Tok::Punct(')' | ']' | '}') => return j.saturating_sub(1).max(at),
            Tok::Punct(c) if ends.contains(&c) => return j,
            _ => {}
        }
        j += 1;
    }
    toks.len() - 1
}

/// The items of a module whose body is `range`, in order (what their bodies hold is theirs).
pub(super) fn module_items(toks: &Toks, partner: &[usize], range: Range<usize>) -> Vec<Item> {
    let mut items = Vec::new();
    let mut i = range.start;
    while i < range.end {
        if let Some(end) = inner_attribute_end(toks, partner, i) {
            i = end + 1;
        } else if is_punct(toks, i, ';') {
            i += 1;
        } else {
            let item = parse_item(toks, partner, i);
            i = item.span.end.max(i + 1);
            items.push(item);
        }
    }
    items
}

/// The token ranges of `#[cfg(test)]` code, in order: items, fields and statements under an
/// outer `#[cfg(test)]`, and the whole group (or file) an inner `#![cfg(test)]` stands in.
pub(super) fn test_code(toks: &Toks, partner: &[usize]) -> Vec<Range<usize>> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if let Some(end) = inner_attribute_end(toks, partner, i) {
            if is_cfg_test(&toks[i + 3..end]) {
                let group = enclosing_group(toks, partner, i);
                found.retain(|r: &Range<usize>| r.end <= group.start);
                found.push(group.clone());
                i = group.end;
                continue;
            }
        } else if outer_attribute_end(toks, partner, i).is_some() {
            let item = parse_item(toks, partner, i);
            if item.cfg_test {
                i = item.span.end;
                found.push(item.span);
                continue;
            }
        }
        i += 1;
    }
    found
}

/// The group of tokens (brackets included) around `i`, or the whole file at its top level.
fn enclosing_group(toks: &Toks, partner: &[usize], i: usize) -> Range<usize> {
    let mut j = i;
    while j > 0 {
        j -= 1;
        match toks[j].0 {
            Tok::Punct(')' | ']' | '}') => j = partner[j],
            Tok::Punct('(' | '[' | '{') => return j..partner[j] + 1,
            _ => {}
        }
    }
    0..toks.len()
}

mod tests {
    use super::super::lex::{lex, pair_brackets};
    use super::*;

    /// Each item as (kind, name, its tokens' first and last line).
    fn items(src: &str) -> Vec<(ItemKind, Option<String>, usize, usize)> {
        let toks = lex(src);
        let partner = pair_brackets(&toks);
        module_items(&toks, &partner, 0..toks.len())
            .into_iter()
            .map(|it| {
                let lines = (toks[it.span.start].1, toks[it.span.end - 1].1);
                (it.kind, it.name, lines.0, lines.1)
            })
            .collect()
    }

    fn named(
        kind: ItemKind,
        name: &str,
        first: usize,
        last: usize,
    ) -> (ItemKind, Option<String>, usize, usize) {
        (kind, Some(name.to_string()), first, last)
    }

    #[test]
    fn items_end_where_their_kind_ends() {
        let src = "const X: S = S { a: 1 };\n\
                   use a::{b, c};\n\
                   pub(crate) struct T([u8; 4]);\n\
                   impl T {\n    fn f() {}\n}\n\
                   macro_rules! m {\n    () => {};\n}\n\
                   lua!(a, b);\n\
                   pub const unsafe fn g() -> u8 {\n    1\n}\n\
                   static mut N: u8 = 0;\n\
                   type Y = [u8; { 4 }];\n";
        assert_eq!(
            items(src),
            [
                named(ItemKind::Const, "X", 1, 1),
                (ItemKind::Use, None, 2, 2),
                named(ItemKind::Struct, "T", 3, 3),
                (ItemKind::Impl, None, 4, 6),
                named(ItemKind::MacroRules, "m", 7, 9),
                (ItemKind::MacroCall, None, 10, 10),
                named(ItemKind::Fn, "g", 11, 13),
                named(ItemKind::Static, "N", 14, 14),
                named(ItemKind::TypeAlias, "Y", 15, 15),
            ]
        );
    }

    #[test]
    fn attributes_visibility_and_test_marks_are_read() {
        let src = "/// Doc.\n#[cfg(test)]\n#[allow(dead_code)]\npub(crate) mod a;\n\
                   #[macro_export]\nmacro_rules! m { () => {} }\n#[cfg(not(test))]\npub use b::C;\n";
        let toks = lex(src);
        let partner = pair_brackets(&toks);
        let found = module_items(&toks, &partner, 0..toks.len());
        let marks: Vec<_> = found
            .iter()
            .map(|it| (it.kind, it.visible, it.cfg_test, it.macro_export))
            .collect();
        assert_eq!(
            marks,
            [
                (ItemKind::Mod, true, true, false),
                (ItemKind::MacroRules, false, false, true),
                (ItemKind::Use, true, false, false),
            ]
        );
    }

    #[test]
    fn test_code_covers_items_fields_statements_and_inner_attributes() {
        let src = "struct S {\n    #[cfg(test)]\n    pub named: u8,\n    kept: u8,\n}\n\
                   fn f() {\n    #[cfg(test)]\n    self.x.push(1);\n    g(S {\n        #[cfg(test)]\n        named: N::default()\n    });\n}\n\
                   #[cfg(test)]\nimpl S {\n    fn helper() {}\n}\n\
                   mod t {\n    #![cfg(test)]\n    fn inner() {}\n}\n";
        let toks = lex(src);
        let partner = pair_brackets(&toks);
        let lines: Vec<(usize, usize)> = test_code(&toks, &partner)
            .into_iter()
            .map(|r| (toks[r.start].1, toks[r.end - 1].1))
            .collect();
        assert_eq!(lines, [(2, 3), (7, 8), (10, 11), (14, 17), (18, 21)]);
    }
}
