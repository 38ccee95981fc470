//! `/downloading`: MoviePilot's active downloads, one line per torrent.

use super::{About, Listed, Render, Usage};
use crate::moviepilot::Download;
use crate::untrusted::clean_line;

impl Render {
    /// One line per torrent: the media's name, season and episodes, progress, and under it the
    /// torrent's own title (three torrents of one series differ only there).
    pub fn downloading(&self, downloads: &[Download]) -> String {
        if downloads.is_empty() {
            return zh_en!(
                self.zh(),
                "当前没有正在下载的任务。",
                "Nothing is downloading."
            )
            .into();
        }
        let mut out = String::from(zh_en!(self.zh(), "正在下载：\n", "Downloading:\n"));
        for d in downloads {
            let se = d
                .season_episode
                .as_deref()
                .map(|s| format!(" {}", clean_line(s)))
                .unwrap_or_default();
            let progress = d
                .progress
                .map(|p| format!(" · {p:.0}%"))
                .unwrap_or_default();
            out.push_str(&format!("{}{se}{progress}\n", clean_line(&d.title)));
            if let Some(torrent) = d.torrent.as_deref() {
                out.push_str(&format!("   {}\n", clean_line(torrent)));
            }
        }
        out.trim_end().to_string()
    }
}

/// `/downloading`: no arguments.
pub const DOWNLOADING: About = About {
    usage: Usage::Help,
    listed: Listed::Everyone {
        menu: |zh| zh_en!(zh, "正在下载", "Active downloads"),
        help: Some(|zh| zh_en!(zh, "/downloading 正在下载", "/downloading active downloads")),
    },
};
