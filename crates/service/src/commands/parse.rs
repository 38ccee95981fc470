//! A message's text read as a command: the slash command (or, in a private chat, plain text and
//! MoviePilot's own keywords `订阅 X`, `搜索 X`, `下载 X`, `洗版 X`), addressed to this bot, with
//! the arguments its command accepts ([`Command::check`]), or the reason it is not one. Pure.

use super::Command;

/// A message's text, read as a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// A valid command with its arguments (whitespace collapsed, case kept).
    Run { command: Command, args: String },
    /// A command oncebot knows, with arguments it cannot use; `usage` says what it expected.
    BadArgs { command: Command },
    /// A slash command oncebot does not know (the name, lower-cased).
    Unknown { name: String },
    /// Not for this bot (plain text in a group, or `/cmd@other_bot`).
    NotForUs,
}

/// Where a message was written, which decides what counts as addressed to the bot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatKind {
    Private,
    Group,
}

/// Reads `text` as a command. `bot_username` (without `@`, may be empty) decides whether
/// `/cmd@name` is for us. In a private chat plain text is a search, and `订阅 X` / `搜索 X` mean
/// `/subscribe X` / `/search X` (and `下载 X` `/download X`), as in MoviePilot's own bot.
pub fn parse(text: &str, chat: ChatKind, bot_username: &str) -> Parsed {
    // The user's text without control, bidi or invisible characters: what a job stores, its
    // business key digests and a reply repeats is what the user saw.
    let text = collapse_whitespace(&crate::untrusted::clean_line(text));
    if text.is_empty() {
        return Parsed::NotForUs;
    }
    let Some(rest) = text.strip_prefix('/') else {
        if chat == ChatKind::Group {
            return Parsed::NotForUs;
        }
        for (word, command) in [
            ("订阅", Command::Subscribe),
            ("搜索", Command::Search),
            ("下载", Command::Download),
            ("洗版", Command::Best),
        ] {
            if let Some(args) = text.strip_prefix(word)
                && (args.is_empty() || args.starts_with(' '))
            {
                return with_args(command, args.trim());
            }
        }
        return with_args(Command::Search, &text);
    };
    let (head, args) = rest.split_once(' ').unwrap_or((rest, ""));
    let (name, mention) = head.split_once('@').unwrap_or((head, ""));
    if !mention.is_empty()
        && !bot_username.is_empty()
        && !mention.eq_ignore_ascii_case(bot_username.trim_start_matches('@'))
    {
        return Parsed::NotForUs;
    }
    let name = name.to_lowercase();
    match Command::from_name(&name).filter(|c| c.typed()) {
        Some(command) => with_args(command, args),
        None if name.is_empty() => Parsed::NotForUs,
        None => Parsed::Unknown { name },
    }
}

fn with_args(command: Command, args: &str) -> Parsed {
    let args = args.trim();
    // `/download tmdb:<id> [S<n> | tv]` is a resource search straight away.
    if command == Command::Download && args.to_lowercase().starts_with("tmdb:") {
        return match super::args::parse_release_target(args) {
            Some(_) => Parsed::Run {
                command: Command::Releases,
                args: args.to_string(),
            },
            None => Parsed::BadArgs { command },
        };
    }
    match command.check(args) {
        Some(args) => Parsed::Run { command, args },
        None => Parsed::BadArgs { command },
    }
}

/// Trims and turns every run of whitespace into one space.
pub fn collapse_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
