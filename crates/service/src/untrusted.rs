//! Texts oncebot did not write (a release title from a site, a message from MoviePilot, a
//! notification's body) are cleaned here before a user reads them.
//!
//! Why: such a text can carry control characters that change what the reader sees or make
//! Telegram refuse the message whole. A U+202E RIGHT-TO-LEFT OVERRIDE makes `exe.txt` read as
//! `txt.exe`, so a site can make one release title read as another; a NUL or ESC makes a Bot API
//! call fail, which would lose the whole release list for one bad title.
//!
//! What is removed: C0 controls (U+0000–U+001F) except `\n`, DEL (U+007F), C1 controls
//! (U+0080–U+009F), the bidi controls (U+200E, U+200F, U+061C, U+202A–U+202E, U+2066–U+2069), and
//! the invisible U+200B ZERO WIDTH SPACE, U+2060 WORD JOINER and U+FEFF (a byte order mark), which
//! make two texts that read the same differ. ZWNJ and ZWJ (U+200C, U+200D) stay: emoji sequences
//! (👨‍👩‍👧) and several scripts need them.
//!
//! The user's own text is one of these too: a command's arguments (`commands::parse` cleans the
//! message before reading it) and anything a reply repeats of it.
//! What is replaced: `\t` becomes a space (a tab is spacing the author meant, and Telegram renders
//! it inconsistently), the line and paragraph separators U+2028/U+2029 become `\n` (they are line
//! breaks, and Telegram clients disagree on showing them). `\r` is removed, so `\r\n` reads `\n`.
//!
//! [`clean`] keeps line breaks (for texts that have them on purpose: a message, a description);
//! [`clean_line`] is for one-line texts (a title, a site name) and turns every line break into a
//! space, so a title cannot push a fake line into a list.
//!
//! Both borrow when nothing changes: almost every text is clean, and the lists are long.

use std::borrow::Cow;

/// What one character becomes.
enum Fate {
    Keep,
    Drop,
    Space,
    Newline,
}

fn fate(c: char, one_line: bool) -> Fate {
    match c {
        '\n' | '\u{2028}' | '\u{2029}' if one_line => Fate::Space,
        '\n' => Fate::Keep,
        '\u{2028}' | '\u{2029}' => Fate::Newline,
        '\t' => Fate::Space,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => Fate::Drop,
        '\u{200e}'
        | '\u{200f}'
        | '\u{061c}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}' => Fate::Drop,
        // Invisible: a zero width space, a word joiner, a byte order mark. (ZWNJ and ZWJ,
        // U+200C and U+200D, stay: emoji sequences and several scripts need them.)
        '\u{200b}' | '\u{2060}' | '\u{feff}' => Fate::Drop,
        _ => Fate::Keep,
    }
}

fn cleaned(text: &str, one_line: bool) -> Cow<'_, str> {
    let Some(first) = text
        .char_indices()
        .find(|&(_, c)| !matches!(fate(c, one_line), Fate::Keep))
        .map(|(i, _)| i)
    else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        match fate(c, one_line) {
            Fate::Keep => out.push(c),
            Fate::Drop => {}
            Fate::Space => out.push(' '),
            Fate::Newline => out.push('\n'),
        }
    }
    Cow::Owned(out)
}

/// `text` without control and bidi characters; line breaks kept (U+2028/U+2029 as `\n`), `\t` as
/// a space. Borrows when `text` is already clean.
pub fn clean(text: &str) -> Cow<'_, str> {
    cleaned(text, false)
}

/// Like [`clean`], for a text shown on one line (a title): every line break becomes a space too.
pub fn clean_line(text: &str) -> Cow<'_, str> {
    cleaned(text, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_text_is_borrowed() {
        let text = "流浪地球 2 · 2160p\nDolby Vision 「HDR」 🎬";
        assert!(matches!(clean(text), Cow::Borrowed(t) if t == text));
        let line = "The Wandering Earth II 2023 2160p";
        assert!(matches!(clean_line(line), Cow::Borrowed(t) if t == line));
    }

    #[test]
    fn c0_c1_and_del_are_removed_but_newline_kept() {
        let text = "a\u{0}b\u{1b}[31mc\u{7}\u{7f}d\u{85}e\u{9b}f\r\ng";
        assert_eq!(clean(text), "ab[31mcdef\ng");
    }

    #[test]
    fn a_tab_becomes_a_space() {
        assert_eq!(clean("1080p\tx265"), "1080p x265");
        assert_eq!(clean_line("1080p\tx265"), "1080p x265");
    }

    #[test]
    fn bidi_controls_are_removed() {
        let text = "\u{202a}a\u{202b}b\u{202c}c\u{202d}d\u{202e}e\u{2066}f\u{2067}g\u{2068}h\u{2069}i\u{200e}j\u{200f}k\u{061c}l";
        assert_eq!(clean(text), "abcdefghijkl");
        // The classic disguise: an override that makes "txt.exe" read as "exe.txt".
        assert_eq!(clean_line("Movie.\u{202e}vkm.exe"), "Movie.vkm.exe");
    }

    #[test]
    fn zero_width_space_word_joiner_and_bom_are_removed_zwnj_and_zwj_kept() {
        assert_eq!(clean_line("Du\u{200b}ne\u{2060} 2021\u{feff}"), "Dune 2021");
        let family = "👨\u{200d}👩\u{200d}👧";
        assert_eq!(clean(family), family);
        let persian = "می\u{200c}خواهم";
        assert_eq!(clean_line(persian), persian);
    }

    #[test]
    fn line_and_paragraph_separators_become_newlines() {
        assert_eq!(clean("a\u{2028}b\u{2029}c"), "a\nb\nc");
    }

    #[test]
    fn one_line_texts_lose_every_line_break() {
        assert_eq!(clean_line("a\nb\u{2028}c\u{2029}d\r\ne"), "a b c d e");
    }

    #[test]
    fn letters_beside_the_ranges_are_kept() {
        // Just outside the removed ranges: NBSP (U+00A0), ZWNJ and ZWJ (U+200C, U+200D: emoji
        // and scripts need them), U+2061, U+206A, U+FEFE, U+FF00.
        let text = "\u{a0}\u{200c}\u{200d}\u{2061}\u{206a}\u{2070}\u{fefe}\u{ff00}";
        assert!(matches!(clean(text), Cow::Borrowed(_)));
    }
}
