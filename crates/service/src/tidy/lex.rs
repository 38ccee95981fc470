//! Rust source as tokens with their lines, and the brackets that pair them: the one reading of
//! the text every check shares, so comments, strings and chars trip none of them.
//!
//! A small lexer, not a parser: it skips comments, strings (raw and byte strings too) and char
//! literals, tells lifetimes from chars, and keeps `::` as one token so a path is a run of
//! words joined by it (`a: ::std::X` is not the path `a::std`).

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
    Ident(String),
    Punct(char),
    /// `::`, the separator of a path's segments.
    PathSep,
    /// A string, char or number literal (its text does not matter here).
    Literal,
}

/// Rust source as tokens with their 1-based lines, without comments.
pub(super) fn lex(src: &str) -> Vec<(Tok, usize)> {
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
            let n = block_comment_len(&chars[i..]);
            skip(&mut i, &mut line, n);
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
        } else if c == ':' && next == Some(':') {
            out.push((Tok::PathSep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(c), line));
            i += 1;
        }
    }
    out
}

pub(super) fn ident(word: &str) -> Tok {
    Tok::Ident(word.to_string())
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// The length of a `/* … */` comment starting at `s[0]`, nested comments included.
fn block_comment_len(s: &[char]) -> usize {
    let mut depth = 0;
    let mut i = 0;
    while i < s.len() {
        if s[i] == '/' && s.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    s.len()
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

/// For each `(`, `[` and `{`, the index of the bracket closing it, and the other way round
/// (other entries unused). An unclosed bracket is paired with the last token.
pub(super) fn pair_brackets(toks: &[(Tok, usize)]) -> Vec<usize> {
    let last = toks.len().saturating_sub(1);
    let mut partner = vec![last; toks.len()];
    let mut open = Vec::new();
    for (j, (t, _)) in toks.iter().enumerate() {
        match t {
            Tok::Punct('(' | '[' | '{') => open.push(j),
            Tok::Punct(')' | ']' | '}') => {
                if let Some(o) = open.pop() {
                    partner[o] = j;
                    partner[j] = o;
                }
            }
            _ => {}
        }
    }
    partner
}

mod tests {
    use super::*;

    fn words(src: &str) -> Vec<Tok> {
        lex(src).into_iter().map(|(t, _)| t).collect()
    }

    #[test]
    fn a_path_separator_is_one_token_and_a_lone_colon_another() {
        assert_eq!(
            words("a: ::b::C"),
            [
                ident("a"),
                Tok::Punct(':'),
                Tok::PathSep,
                ident("b"),
                Tok::PathSep,
                ident("C")
            ]
        );
    }

    #[test]
    fn comments_strings_chars_and_lifetimes_leave_no_words_behind() {
        let src =
            "// fn a\n/* fn b /* fn c */ */ \"fn d\" r#\"fn e\"# b'f' '\\'' &'static x r#type";
        assert_eq!(
            words(src),
            [
                Tok::Literal,
                Tok::Literal,
                Tok::Literal,
                Tok::Literal,
                Tok::Punct('&'),
                ident("x"),
                ident("type")
            ]
        );
    }

    #[test]
    fn tokens_carry_the_line_they_start_on() {
        let lines: Vec<usize> = lex("a\n\"x\ny\"\n/*\n*/ b")
            .into_iter()
            .map(|t| t.1)
            .collect();
        assert_eq!(lines, [1, 2, 5]);
    }

    #[test]
    fn brackets_are_paired_both_ways() {
        let toks = lex("f(a[1], { b })");
        let partner = pair_brackets(&toks);
        assert_eq!((partner[1], partner[10]), (10, 1));
        assert_eq!((partner[3], partner[5]), (5, 3));
        assert_eq!((partner[7], partner[9]), (9, 7));
    }
}
