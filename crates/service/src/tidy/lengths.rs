//! Functions and files that grew too long (issue 26 §4: long functions grew back once; these
//! tests keep them from growing back again).
//!
//! A function is measured from its `fn` line to the line of its closing brace; `#[cfg(test)]`
//! code is not counted, nor signatures without a body (a trait's), and a nested function counts
//! on its own and inside its outer one. A file is measured by its lines outside `#[cfg(test)]`
//! code. The service's functions, the tools crate's and the service's files each have a rule
//! (issue 42's), with no exceptions.

use super::items::{braced_end, test_code};
use super::lex::{Tok, pair_brackets};
use super::source::{Crate, unreached_files};
use super::{Measured, breaking, service_src, tools_src};

/// One function with a body, as found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Function {
    pub name: String,
    /// 1-based line of its `fn` keyword.
    pub line: usize,
    /// From the `fn` line to the closing brace's line, both included.
    pub lines: usize,
}

/// A crate's rule for function lengths.
struct FunctionRule {
    /// No function may be longer than this.
    max_lines: usize,
    /// A function longer than this is "long"...
    long_lines: usize,
    /// ...and the crate may have at most this many.
    max_long: usize,
}

/// The service's final rule (issue 42).
const SERVICE_FUNCTIONS: FunctionRule = FunctionRule {
    max_lines: 80,
    long_lines: 60,
    max_long: 8,
};

/// The tools crate's rule: simulators and the bench read as scripts, so a little longer.
const TOOLS_FUNCTIONS: FunctionRule = FunctionRule {
    max_lines: 100,
    long_lines: 60,
    max_long: 12,
};

/// No service file may hold more lines than this outside its `#[cfg(test)]` code.
const FILE_MAX_LINES: usize = 1_000;

/// The functions with a body in `toks`, outside the `test_code` ranges, in order of their `fn`.
fn functions(
    toks: &[(Tok, usize)],
    partner: &[usize],
    test_code: &[std::ops::Range<usize>],
) -> Vec<Function> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if let Some(r) = test_code.iter().find(|r| r.start == i) {
            i = r.end;
            continue;
        }
        if toks[i].0 == Tok::Ident("fn".into())
            && let Some((Tok::Ident(name), line)) = toks.get(i + 1)
            && let (_, Some((_, close))) = braced_end(toks, partner, i)
        {
            found.push(Function {
                name: name.clone(),
                line: *line,
                lines: toks[close].1 - line + 1,
            });
        }
        i += 1;
    }
    found
}

/// The functions of one file's source, test code left out.
fn scan(src: &str) -> Vec<Function> {
    let toks = super::lex::lex(src);
    let partner = pair_brackets(&toks);
    let test_code = test_code(&toks, &partner);
    functions(&toks, &partner, &test_code)
}

/// Every function with a body in the crate's production code, with its file's name.
fn crate_functions(krate: &Crate) -> Vec<(String, Function)> {
    krate
        .files
        .iter()
        .filter(|f| !f.test_only)
        .flat_map(|f| {
            functions(&f.toks, &f.partner, &f.test_code)
                .into_iter()
                .map(|func| (f.name.clone(), func))
        })
        .collect()
}

/// How the functions measure against `rule`: those that break it (every long one, once there
/// are too many), and the list of long functions to show with them.
fn function_report(rule: &FunctionRule, found: &[(String, Function)]) -> (Vec<String>, String) {
    let long = found
        .iter()
        .filter(|(_, f)| f.lines > rule.long_lines)
        .count();
    let measured: Vec<Measured> = found
        .iter()
        .map(|(file, f)| Measured {
            what: format!("{file}:{}", f.name),
            lines: f.lines,
            breaks_rule: f.lines > rule.max_lines
                || (long > rule.max_long && f.lines > rule.long_lines),
        })
        .collect();
    let mut shown: Vec<&(String, Function)> = found
        .iter()
        .filter(|(_, f)| f.lines > rule.long_lines)
        .collect();
    shown.sort_by_key(|(_, f)| std::cmp::Reverse(f.lines));
    let list = shown
        .iter()
        .map(|(file, f)| format!("  {file}:{} fn {}: {} lines", f.line, f.name, f.lines))
        .collect::<Vec<_>>()
        .join("\n");
    (breaking(&measured), list)
}

/// Fails listing what is wrong, with the long functions.
fn assert_functions(crate_name: &str, rule: &FunctionRule, krate: &Crate) {
    let found = crate_functions(krate);
    let (problems, list) = function_report(rule, &found);
    let over = found
        .iter()
        .filter(|(_, f)| f.lines > rule.max_lines)
        .count();
    let long = found
        .iter()
        .filter(|(_, f)| f.lines > rule.long_lines)
        .count();
    println!(
        "{crate_name}: {over} functions over {} lines, {long} over {}:\n{list}",
        rule.max_lines, rule.long_lines
    );
    assert!(
        problems.is_empty(),
        "{crate_name}: no function may be over {} lines, and at most {} over {} ({over} and {long} now); \
         split them into named steps (issue 26 §4):\n  {}\nThe long functions:\n{list}",
        rule.max_lines,
        rule.max_long,
        rule.long_lines,
        problems.join("\n  ")
    );
}

#[test]
fn service_functions_are_short() {
    let krate = Crate::load(&service_src());
    assert_functions("crates/service/src", &SERVICE_FUNCTIONS, &krate);
}

#[test]
fn tools_functions_are_short() {
    let krate = Crate::load(&tools_src());
    assert_functions("crates/tools/src", &TOOLS_FUNCTIONS, &krate);
}

#[test]
fn service_files_are_short() {
    let krate = Crate::load(&service_src());
    let measured: Vec<Measured> = (0..krate.files.len())
        .filter(|f| !krate.files[*f].test_only)
        .map(|f| {
            let lines = krate.production_lines(f);
            Measured {
                what: krate.files[f].name.clone(),
                lines,
                breaks_rule: lines > FILE_MAX_LINES,
            }
        })
        .collect();
    let problems = breaking(&measured);
    assert!(
        problems.is_empty(),
        "crates/service/src: no file may hold more than {FILE_MAX_LINES} lines outside its \
         #[cfg(test)] code; split it into modules of one concern each:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn every_source_file_is_reached_from_lib_rs() {
    for src in [service_src(), tools_src()] {
        let unreached = unreached_files(&src, &Crate::load(&src));
        assert!(
            unreached.is_empty(),
            "{}: no `mod` line reaches {unreached:?}: rustc never compiles them, and tidy cannot \
             tell their test code from their production code",
            src.display()
        );
    }
}

mod tests {
    use super::*;

    fn lengths(src: &str) -> Vec<(String, usize)> {
        scan(src).into_iter().map(|f| (f.name, f.lines)).collect()
    }

    fn pairs(expected: &[(&str, usize)]) -> Vec<(String, usize)> {
        expected.iter().map(|(n, l)| (n.to_string(), *l)).collect()
    }

    #[test]
    fn a_function_is_counted_from_its_fn_line_to_its_closing_brace() {
        let src = "/// Doc.\n#[inline]\npub(crate) async fn a() {\n    b();\n}\n";
        assert_eq!(
            scan(src)[0],
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
                   struct S {\n    #[cfg(test)]\n    named: u8,\n}\n#[cfg(test)]\nimpl S {\n    fn in_test_impl() {}\n}\nfn after() {\n}\n";
        let names: Vec<_> = scan(src).into_iter().map(|f| f.name).collect();
        assert_eq!(names, ["kept", "real", "after"]);
    }

    #[test]
    fn nested_functions_are_counted_on_their_own_and_inside_their_outer_function() {
        let src = "fn outer() {\n    fn inner() {\n    }\n}\n";
        assert_eq!(lengths(src), pairs(&[("outer", 4), ("inner", 2)]));
    }

    fn function(file: &str, name: &str, lines: usize) -> (String, Function) {
        (
            file.into(),
            Function {
                name: name.into(),
                line: 1,
                lines,
            },
        )
    }

    const RULE: FunctionRule = FunctionRule {
        max_lines: 80,
        long_lines: 60,
        max_long: 2,
    };

    #[test]
    fn long_functions_within_the_budget_pass() {
        let found = [
            function("a.rs", "f", 80),
            function("a.rs", "g", 61),
            function("b.rs", "h", 60),
        ];
        assert_eq!(function_report(&RULE, &found).0, Vec::<String>::new());
    }

    #[test]
    fn over_the_budget_every_long_function_is_named() {
        let found = [
            function("a.rs", "f", 70),
            function("a.rs", "g", 61),
            function("b.rs", "h", 65),
        ];
        assert_eq!(
            function_report(&RULE, &found).0,
            ["a.rs:f: 70 lines", "a.rs:g: 61 lines", "b.rs:h: 65 lines"]
        );
    }

    #[test]
    fn a_function_over_the_maximum_fails_even_within_the_budget() {
        let found = [function("a.rs", "f", 81)];
        assert_eq!(function_report(&RULE, &found).0, ["a.rs:f: 81 lines"]);
    }
}
