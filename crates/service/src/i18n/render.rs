//! The reply renderer, `Render`: one per locale, its few shared helpers (a media's kind and
//! season in words, the page and Confirm / Cancel buttons), and the "working on it" message every
//! job may send. The replies of each command are in the file of the same name beside this one.

use super::Texts;
use crate::config::Locale;
use crate::moviepilot::MediaKind;

/// Renders replies for one locale.
#[derive(Debug, Clone, Copy)]
pub struct Render {
    pub(super) texts: Texts,
}

impl Render {
    pub fn new(locale: Locale) -> Self {
        Self {
            texts: Texts::new(locale),
        }
    }

    /// The plain texts behind the rendering.
    pub fn texts(&self) -> &Texts {
        &self.texts
    }

    pub(super) fn zh(&self) -> bool {
        self.texts.locale == Locale::Zh
    }

    pub(super) fn kind(&self, kind: Option<MediaKind>) -> &'static str {
        match (kind, self.zh()) {
            (Some(MediaKind::Movie), true) => "电影",
            (Some(MediaKind::Tv), true) => "电视剧",
            (Some(MediaKind::Movie), false) => "movie",
            (Some(MediaKind::Tv), false) => "series",
            (None, _) => "",
        }
    }

    pub(super) fn season(&self, season: Option<u32>) -> String {
        match (season, self.zh()) {
            (Some(n), true) => format!(" 第 {n} 季"),
            (Some(n), false) => format!(" season {n}"),
            (None, _) => String::new(),
        }
    }

    /// The page-number button between ◀ and ▶: `page/pages`.
    pub fn page_button(&self, page: usize, pages: usize) -> String {
        format!("{page}/{pages}")
    }

    /// The button that shows the page before.
    pub fn previous_page(&self) -> &'static str {
        "◀"
    }

    /// The button that shows the page after.
    pub fn next_page(&self) -> &'static str {
        "▶"
    }

    pub fn cancel_button(&self) -> &'static str {
        self.texts.cancel_button()
    }

    pub fn confirm_button(&self) -> &'static str {
        self.texts.confirm_button()
    }

    /// "received, working on it"; "{job}" is filled in by progress.lua.
    pub fn working_on_it(&self) -> String {
        zh_en!(
            self.zh(),
            "已接收，正在处理（任务 #{job}）…",
            "Received, working on it (job #{job})…"
        )
        .into()
    }
}
