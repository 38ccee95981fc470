//! The release flow (`/download`, the resource search, `下载 k`): the matches, the paged release
//! list, and what became of a download.

use super::search::subscribe_args;
use super::{About, Listed, Render, Usage};
use crate::moviepilot::{Library, MediaItem, Release};
use crate::untrusted::clean_line;
use std::ops::Range;
/// What `/download` needs for a match: `tmdb:<id>` for a movie, `tmdb:<id> S<n>` for a series
/// with exactly one known season, `tmdb:<id> tv` (every season) for any other series. `None`
/// without a TMDB id.
pub fn release_args(item: &MediaItem) -> Option<String> {
    subscribe_args(item)
}

/// Bytes as a user reads them: `4.2 GB`, `850 MB`.
pub(super) fn human_size(bytes: f64) -> String {
    const GB: f64 = 1024.0 * 1024.0 * 1024.0;
    const MB: f64 = 1024.0 * 1024.0;
    if bytes >= GB {
        format!("{:.1} GB", bytes / GB)
    } else {
        format!("{:.0} MB", (bytes / MB).max(1.0))
    }
}

impl Render {
    /// `/download <title>`: the matches, each with a button that searches its releases.
    pub fn download_matches(
        &self,
        title: &str,
        (items, library): (&[MediaItem], &[Library]),
        page: Range<usize>,
        kept: usize,
    ) -> String {
        if items.is_empty() {
            return self.search_results(title, (items, library), page, kept, false);
        }
        let mut out = zh_en!(
            self.zh(),
            (
                "「{title}」有 {} 个结果，请选择要搜索资源的条目：\n",
                items.len()
            ),
            (
                "{} results for \"{title}\"; choose one to find its releases:\n",
                items.len()
            )
        );
        out.push_str(&self.only_first(items.len(), kept));
        for i in page {
            let Some(item) = items.get(i) else { break };
            out.push_str(&self.match_line(i + 1, item));
            out.push_str(&self.library_suffix(library.get(i)));
            out.push('\n');
        }
        out.trim_end().to_string()
    }

    /// The button under match `n` of `/download <title>`.
    pub fn find_releases_button(&self, n: usize, item: &MediaItem) -> String {
        self.media_button(n, zh_en!(self.zh(), "下载", "Download"), item)
    }

    /// The download button beside a `/search` match's Subscribe button.
    pub fn search_download_button(&self, n: usize) -> String {
        zh_en!(self.zh(), ("{n}. 下载"), ("{n}. Download"))
    }

    /// The progress message of a resource search, sent at once; "{job}" is filled in by
    /// progress.lua.
    pub fn searching_sites(&self) -> String {
        zh_en!(
            self.zh(),
            "正在搜索站点资源…（任务 #{job}）",
            "Searching the sites for releases… (job #{job})"
        )
        .into()
    }

    /// A page of a resource search's list: one line per release of `page` (site, title, size,
    /// seeders, promotion), numbered from `first` (its place in the whole list), nothing else
    /// of MoviePilot's answer. `kept`: the releases that can be paged, of `total` read; `cut`:
    /// MoviePilot's answer was larger than oncebot reads. The line after the header says what
    /// the library holds.
    pub fn release_list(
        &self,
        media: &str,
        (page, first): (&[Release], usize),
        (kept, total, cut): (usize, usize, bool),
        library: &Library,
    ) -> String {
        let media = clean_line(media);
        if page.is_empty() && library.is_present() {
            return zh_en!(
                self.zh(),
                ("没有找到「{media}」的资源；已在媒体库。"),
                ("No releases found for {media}; it is already in your library.")
            );
        }
        if page.is_empty() {
            return zh_en!(
                self.zh(),
                ("没有找到「{media}」的资源。"),
                ("No releases found for {media}.")
            );
        }
        let mut out = match (self.zh(), cut, kept < total) {
            (true, true, _) => format!(
                "「{media}」的资源太多，MoviePilot 的回答超过了读取上限：读取了其中 {total} 个，可以翻看前 {kept} 个，点按钮下载：\n"
            ),
            (true, false, false) => format!("「{media}」找到 {total} 个资源，点按钮下载：\n"),
            (true, false, true) => {
                format!("「{media}」找到 {total} 个资源，只能翻看前 {kept} 个，点按钮下载：\n")
            }
            (false, true, _) => format!(
                "{media} has more releases than oncebot reads from one answer: {total} were read, the first {kept} can be paged; tap a button to download:\n"
            ),
            (false, false, false) => {
                format!("{total} releases of {media}; tap a button to download:\n")
            }
            (false, false, true) => format!(
                "{total} releases of {media}; only the first {kept} can be paged; tap a button to download:\n"
            ),
        };
        if let Some(line) = self.library_line(library) {
            out.push_str(&line);
            out.push('\n');
        }
        for (i, r) in page.iter().enumerate() {
            out.push_str(&release_line(first + i, r));
            out.push('\n');
        }
        out.trim_end().to_string()
    }

    /// The button of release `n`, before and after it is used.
    pub fn release_button(&self, n: usize, used: bool) -> String {
        match (self.zh(), used) {
            (true, false) => format!("下载 {n}"),
            (true, true) => format!("✓ 下载 {n}"),
            (false, false) => format!("Download {n}"),
            (false, true) => format!("✓ Download {n}"),
        }
    }

    /// A download MoviePilot took (or, after an interruption, was verified to have taken).
    pub fn download_started(&self, title: &str, site: &str) -> String {
        let (title, site) = (clean_line(title), clean_line(site));
        zh_en!(
            self.zh(),
            ("已开始下载「{title}」（站点：{site}）。"),
            ("Started downloading \"{title}\" (site: {site}).")
        )
    }

    /// MoviePilot answered `success:false` to an add.
    pub fn download_refused(&self, title: &str, site: &str) -> String {
        let (title, site) = (clean_line(title), clean_line(site));
        zh_en!(
            self.zh(),
            ("MoviePilot 没有添加「{title}」（站点：{site}）：站点或下载器拒绝了它。可以换一个资源再试。"),
            ("MoviePilot did not add \"{title}\" (site: {site}): the site or the downloader refused it. Try another release.")
        )
    }

    /// The list a button named has expired (its buttons should have too).
    pub fn release_list_expired(&self) -> String {
        zh_en!(
            self.zh(),
            "这个资源列表已过期，请重新发送 /download 搜索。",
            "This list of releases has expired; send /download again."
        )
        .into()
    }

    /// A resource search whose answer was lost (a timeout, a dropped connection): the sites were
    /// asked already, so it is not repeated by itself.
    pub fn release_search_lost(&self) -> String {
        zh_en!(self.zh(), "站点资源搜索没有及时返回结果（站点已被搜索过，所以不会自动重试）。稍后可以再发送一次。", "The search for releases did not answer in time (the sites were already searched, so it is not repeated by itself). You may send it again later.")
        .into()
    }

    /// Why a download is held for a person.
    pub fn download_undecided(&self, title: &str, site: &str) -> String {
        let (title, site) = (clean_line(title), clean_line(site));
        zh_en!(
            self.zh(),
            ("无法确认「{title}」（站点：{site}）是否已添加到下载器，为避免重复下载，已交给管理员确认。"),
            ("Cannot tell whether \"{title}\" (site: {site}) reached the downloader; to avoid a second download, an operator will check.")
        )
    }

    /// A resource search not made: the media is in the library already.
    pub fn in_library_not_searched(&self, media: &str) -> String {
        let media = clean_line(media);
        zh_en!(
            self.zh(),
            ("「{media}」已在媒体库中，没有搜索站点资源。如仍要下载，请点「仍然下载」。"),
            ("{media} is already in your library, so the sites were not searched. Tap \"Download anyway\" to search all the same.")
        )
    }

    pub fn download_anyway_button(&self) -> &'static str {
        zh_en!(self.zh(), "仍然下载", "Download anyway")
    }
}

/// How a resource search is asked for: `/download` typed, and the jobs its buttons make.
const DOWNLOAD_USAGE: Usage = Usage::Line(|zh| {
    zh_en!(
        zh,
        "用法：/download <片名>，或 /download tmdb:<id>（电影），或 /download tmdb:<id> S<季>（剧集的一季）",
        "Usage: /download <title>, or /download tmdb:<id> (a movie), or /download tmdb:<id> S<n> (season n of a series)"
    )
});
/// `/download`.
pub const DOWNLOAD: About = About {
    usage: DOWNLOAD_USAGE,
    listed: Listed::Everyone {
        menu: |zh| zh_en!(zh, "搜索资源并下载", "Find a release and download it"),
        help: Some(|zh| {
            zh_en!(
                zh,
                "/download <片名> 搜索站点资源并下载（或 tmdb:<id> [S<季>]）",
                "/download <title> find a release and download it (or tmdb:<id> [S<n>])"
            )
        }),
    },
};

/// A resource search's job (a button's, or `/download tmdb:<id>`): never typed by this name.
pub const RELEASES: About = About {
    usage: DOWNLOAD_USAGE,
    listed: Listed::Hidden,
};

/// A `下载 k` button's job: never typed.
pub const GRAB: About = About {
    usage: DOWNLOAD_USAGE,
    listed: Listed::Hidden,
};

/// Release `n` of a list: its site, title, size, seeders and promotion (none when it is the
/// normal rate or unknown).
fn release_line(n: usize, r: &Release) -> String {
    let mut line = format!(
        "{n}. 【{}】{}",
        clean_line(&r.site_name),
        clean_line(&r.title)
    );
    if let Some(size) = r.size.filter(|s| *s > 0.0) {
        line.push_str(&format!(" · {}", human_size(size)));
    }
    if let Some(seeders) = r.seeders {
        line.push_str(&format!(" · {seeders}↑"));
    }
    if let Some(promo) = r
        .volume_factor
        .as_deref()
        .filter(|p| *p != "普通" && *p != "未知")
    {
        line.push_str(&format!(" · {}", clean_line(promo)));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Locale;

    pub(super) fn release(n: usize) -> Release {
        let info = serde_json::json!({"site_name": format!("PT{n}"), "title": format!("Dune {n}")});
        Release::from_torrent_info(info).expect("a release")
    }

    /// A page is numbered for the whole list, and a list cut by its bound says, in either
    /// language, how many were found and how many can be paged.
    #[test]
    pub(super) fn a_page_numbers_its_items_for_the_whole_list_and_says_what_can_be_paged() {
        let page: Vec<Release> = (6..=10).map(release).collect();
        let zh = Render::new(Locale::Zh).release_list(
            "Dune (2021)",
            (&page, 6),
            (38, 80, false),
            &Library::Unknown,
        );
        assert!(
            zh.starts_with("「Dune (2021)」找到 80 个资源，只能翻看前 38 个"),
            "{zh}"
        );
        assert!(zh.contains("\n6. 【PT6】Dune 6") && zh.contains("\n10. 【PT10】Dune 10"));
        assert!(!zh.contains("\n1. "), "{zh}");
        let en = Render::new(Locale::En).release_list(
            "Dune (2021)",
            (&page, 6),
            (38, 80, false),
            &Library::Unknown,
        );
        assert!(
            en.starts_with("80 releases of Dune (2021); only the first 38 can be paged"),
            "{en}"
        );
        let whole = Render::new(Locale::En).release_list(
            "Dune",
            (&page[..2], 1),
            (2, 2, false),
            &Library::Unknown,
        );
        assert!(whole.starts_with("2 releases of Dune; tap"), "{whole}");
        assert!(
            Render::new(Locale::Zh)
                .only_first(40, 30)
                .contains("只能翻看前 30 个")
        );
        assert_eq!(Render::new(Locale::En).only_first(30, 30), "");
    }
}
