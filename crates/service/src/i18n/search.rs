//! `/search` and the choice lists of `订阅 X` / `洗版 X`: the matches, each with what the library
//! holds of it and its buttons' labels.

use std::ops::Range;

use super::{About, Listed, Render, Usage};
use crate::moviepilot::{Library, MediaItem, MediaKind};
use crate::telegram::keyboard::button_text;
use crate::untrusted::clean_line;

/// What `/subscribe` needs for a search result: `tmdb:<id>` for a movie, `tmdb:<id> S<n>` for a
/// series with exactly one known season, `tmdb:<id> tv` (choose the season) for any other series.
/// `None` for results without a TMDB id, which cannot be subscribed by id.
pub fn subscribe_args(item: &MediaItem) -> Option<String> {
    let id = item.tmdb_id?;
    Some(match (item.kind, item.season_numbers.as_slice()) {
        (MediaKind::Movie, _) => format!("tmdb:{id}"),
        (MediaKind::Tv, [only]) => format!("tmdb:{id} S{only}"),
        (MediaKind::Tv, _) => format!("tmdb:{id} tv"),
    })
}

impl Render {
    /// `/search` (`choose`: `订阅 X`): the header, then the matches of `page` (indexes into
    /// `items`, numbered from 1 for the whole list), each with what the library holds of it
    /// (`library[i]` for match `i`; a missing one says nothing). `kept`: how many of `items`
    /// can be paged.
    pub fn search_results(
        &self,
        title: &str,
        (items, library): (&[MediaItem], &[Library]),
        page: Range<usize>,
        kept: usize,
        choose: bool,
    ) -> String {
        let title = clean_line(title);
        if items.is_empty() {
            return zh_en!(
                self.zh(),
                ("没有找到「{title}」。"),
                ("Nothing found for \"{title}\".")
            );
        }
        let mut out = match (choose, self.zh()) {
            (true, true) => format!(
                "「{title}」有 {} 个结果，请选择要订阅的条目：\n",
                items.len()
            ),
            (false, true) => format!("「{title}」的搜索结果（{} 个）：\n", items.len()),
            (true, false) => format!(
                "{} results for \"{title}\"; choose one to subscribe:\n",
                items.len()
            ),
            (false, false) => format!("{} results for \"{title}\":\n", items.len()),
        };
        out.push_str(&self.only_first(items.len(), kept));
        out.push_str(&self.match_lines((items, library), page, "subscribe"));
        out.trim_end().to_string()
    }

    /// `洗版 X` / `/best X`: as [`Self::search_results`], the matches to subscribe to a better
    /// version of.
    pub fn best_results(
        &self,
        title: &str,
        (items, library): (&[MediaItem], &[Library]),
        page: Range<usize>,
        kept: usize,
    ) -> String {
        if items.is_empty() {
            return self.search_results(title, (items, library), page, kept, true);
        }
        let n = items.len();
        let mut out = zh_en!(
            self.zh(),
            ("「{title}」有 {n} 个结果，请选择要洗版（订阅更好版本）的条目：\n"),
            ("{n} results for \"{title}\"; choose one to subscribe to a better version of:\n")
        );
        out.push_str(&self.only_first(items.len(), kept));
        out.push_str(&self.match_lines((items, library), page, "best"));
        out.trim_end().to_string()
    }

    /// The lines of the matches of `page`, each with what the library holds and the typed form
    /// of its button (`/<command> <args>`).
    pub(super) fn match_lines(
        &self,
        (items, library): (&[MediaItem], &[Library]),
        page: Range<usize>,
        command: &str,
    ) -> String {
        let mut out = String::new();
        for i in page {
            let Some(item) = items.get(i) else { break };
            out.push_str(&self.match_line(i + 1, item));
            out.push_str(&self.library_suffix(library.get(i)));
            if let Some(args) = subscribe_args(item) {
                out.push_str(&format!("\n   /{command} {args}"));
            }
            out.push('\n');
        }
        out
    }

    /// `n. <title> (<year>) · <kind>`, without a line break.
    pub(super) fn match_line(&self, n: usize, item: &MediaItem) -> String {
        let year = item
            .year
            .as_deref()
            .map(|y| format!(" ({})", clean_line(y)))
            .unwrap_or_default();
        format!(
            "{n}. {}{year} · {}",
            clean_line(&item.title),
            self.kind(Some(item.kind))
        )
    }

    /// A line under a list's header when only the first `kept` of `total` items can be paged
    /// (the rest were not kept: the list's memory bound); empty otherwise.
    pub(super) fn only_first(&self, total: usize, kept: usize) -> String {
        if kept >= total {
            return String::new();
        }
        zh_en!(
            self.zh(),
            ("（共 {total} 个，只能翻看前 {kept} 个。）\n"),
            ("(Only the first {kept} of {total} can be paged.)\n")
        )
    }

    /// The text of the 洗版 button of result number `n` (1-based).
    pub fn best_button(&self, n: usize, item: &MediaItem) -> String {
        self.media_button(n, zh_en!(self.zh(), "洗版", "Best"), item)
    }

    /// The text of the Subscribe button of result number `n` (1-based).
    pub fn subscribe_button(&self, n: usize, item: &MediaItem) -> String {
        self.media_button(n, zh_en!(self.zh(), "订阅", "Subscribe"), item)
    }

    /// `n. <verb> <title> (<year>)`, cut to fit a button.
    pub(super) fn media_button(&self, n: usize, verb: &str, item: &MediaItem) -> String {
        let year = item
            .year
            .as_deref()
            .map(|y| format!(" ({})", clean_line(y)))
            .unwrap_or_default();
        button_text(
            &format!("{n}. {verb} {}{year}", clean_line(&item.title)),
            40,
        )
    }
}

/// `/search`.
pub const SEARCH: About = About {
    usage: Usage::Line(|zh| zh_en!(zh, "用法：/search <片名>", "Usage: /search <title>")),
    listed: Listed::Everyone {
        menu: |zh| zh_en!(zh, "搜索影视", "Search for a movie or series"),
        help: Some(|zh| {
            zh_en!(
                zh,
                "/search <片名> 搜索影视",
                "/search <title> search for a movie or series"
            )
        }),
    },
};
