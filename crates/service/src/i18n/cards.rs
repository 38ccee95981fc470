//! The live cards (issue 45): what a card says of its download or subscription as it moves,
//! and the one short notice when it ends. A card's text is its title and one state line; what
//! MoviePilot wrote (a time left, a path, a reason) is cleaned and bounded here again.

use super::Render;
use crate::untrusted::clean_line;

/// What a MoviePilot text may take of a card's line.
const MOVIEPILOT_TEXT_CHARS: usize = 200;

fn bounded(text: &str) -> String {
    let clean = clean_line(text);
    let mut out: String = clean.chars().take(MOVIEPILOT_TEXT_CHARS).collect();
    if clean.chars().count() > MOVIEPILOT_TEXT_CHARS {
        out.push('…');
    }
    out
}

/// Episodes as ranges: [5, 6, 7, 9] → "E05–E07, E09".
pub fn episode_ranges(episodes: &[u32]) -> String {
    let mut sorted = episodes.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            format!("E{start:02}")
        } else {
            format!("E{start:02}–E{end:02}")
        });
        i += 1;
    }
    parts.join(", ")
}

/// A subscription card's facts: what MoviePilot lacks, has downloaded and has filed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubscriptionFacts {
    pub lack: Option<i64>,
    pub downloaded: Vec<u32>,
    pub filed: Vec<u32>,
    /// MoviePilot completed the subscription; what it downloaded is still being filed.
    pub completed: bool,
}

impl Render {
    /// A card's whole text: its title, then its state line.
    pub fn card(&self, title: &str, line: &str) -> String {
        let title = bounded(title);
        zh_en!(self.zh(), ("「{title}」\n{line}"), ("\"{title}\"\n{line}"))
    }

    /// A download MoviePilot lists: percent and MoviePilot's own text for the time left.
    pub fn card_downloading(&self, percent: u32, left: Option<&str>) -> String {
        match left.map(bounded).filter(|l| !l.is_empty()) {
            Some(left) => zh_en!(
                self.zh(),
                ("⬇️ 下载中 {percent}%（剩余 {left}）"),
                ("⬇️ Downloading {percent}% ({left} left)")
            ),
            None => zh_en!(
                self.zh(),
                ("⬇️ 下载中 {percent}%"),
                ("⬇️ Downloading {percent}%")
            ),
        }
    }

    /// Left the downloader's list; no transfer row yet.
    pub fn card_downloaded(&self) -> String {
        zh_en!(
            self.zh(),
            "✅ 已下载，等待整理",
            "✅ Downloaded, waiting to be filed"
        )
        .to_string()
    }

    /// Every transfer row of the hash succeeded; `dest` where MoviePilot filed the first.
    pub fn card_in_library(&self, dest: Option<&str>) -> String {
        match dest.map(bounded).filter(|d| !d.is_empty()) {
            Some(dest) => zh_en!(
                self.zh(),
                ("🎬 已入库 ✓（{dest}）"),
                ("🎬 In the library ✓ ({dest})")
            ),
            None => zh_en!(self.zh(), "🎬 已入库 ✓", "🎬 In the library ✓").to_string(),
        }
    }

    /// A transfer row of the hash failed, with MoviePilot's reason.
    pub fn card_transfer_failed(&self, reason: Option<&str>) -> String {
        let reason = reason.map(bounded).filter(|r| !r.is_empty());
        let reason = reason.unwrap_or_else(|| zh_en!(self.zh(), "未知", "unknown").to_string());
        zh_en!(
            self.zh(),
            ("⚠️ 入库失败：{reason}"),
            ("⚠️ Filing failed: {reason}")
        )
    }

    /// Gone from the downloader with no transfer row within a day.
    pub fn card_vanished(&self) -> String {
        zh_en!(
            self.zh(),
            "❔ 已不在下载器中（没有整理记录）",
            "❔ No longer in the downloader (it was never filed)"
        )
        .to_string()
    }

    /// A subscription as it stands.
    pub fn card_subscribed(&self, facts: &SubscriptionFacts) -> String {
        let mut line = match (facts.completed, facts.lack) {
            (true, _) => zh_en!(
                self.zh(),
                "✅ 订阅完成，等待入库",
                "✅ Subscription complete, waiting to be filed"
            )
            .to_string(),
            (false, Some(n)) if n > 0 => {
                zh_en!(
                    self.zh(),
                    ("📺 已订阅（缺 {n} 集）"),
                    ("📺 Subscribed ({n} missing)")
                )
            }
            _ => zh_en!(self.zh(), "📺 已订阅", "📺 Subscribed").to_string(),
        };
        if !facts.downloaded.is_empty() {
            let e = episode_ranges(&facts.downloaded);
            line.push_str(&zh_en!(
                self.zh(),
                ("\n⬇️ 已下载 {e}"),
                ("\n⬇️ Downloaded {e}")
            ));
        }
        if !facts.filed.is_empty() {
            let e = episode_ranges(&facts.filed);
            line.push_str(&zh_en!(self.zh(), ("\n🎬 已入库 {e}"), ("\n🎬 Filed {e}")));
        }
        line
    }

    /// The subscription ended: MoviePilot completed it and filed what it downloaded.
    pub fn card_completed(&self, filed: &[u32]) -> String {
        if filed.is_empty() {
            return zh_en!(self.zh(), "✅ 订阅完成 ✓", "✅ Subscription complete ✓").to_string();
        }
        let e = episode_ranges(filed);
        zh_en!(
            self.zh(),
            ("✅ 订阅完成 ✓（已入库 {e}）"),
            ("✅ Subscription complete ✓ (filed {e})")
        )
    }

    /// The subscription left MoviePilot's list without completing.
    pub fn card_cancelled(&self) -> String {
        zh_en!(
            self.zh(),
            "✖️ 订阅已取消（MoviePilot 中已没有这个订阅）",
            "✖️ Cancelled (MoviePilot no longer has this subscription)"
        )
        .to_string()
    }

    /// Followed for `days` days without an end.
    pub fn card_expired(&self, days: u64) -> String {
        zh_en!(
            self.zh(),
            ("⏸ 已跟进 {days} 天，不再更新"),
            ("⏸ Followed for {days} days; no more updates")
        )
    }

    /// The closing notice (a new message, in reply to the card) for `final_line`'s end.
    pub fn card_notice(&self, title: &str, in_library: bool) -> String {
        let title = bounded(title);
        if in_library {
            zh_en!(
                self.zh(),
                ("🎬「{title}」已入库，可以看了。"),
                ("🎬 \"{title}\" is in your library.")
            )
        } else {
            zh_en!(
                self.zh(),
                ("「{title}」没有入库，详情见上面的卡片。"),
                ("\"{title}\" did not reach your library; the card above says why.")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Locale;

    #[test]
    fn episodes_read_as_ranges() {
        assert_eq!(episode_ranges(&[7, 5, 6, 9, 9]), "E05–E07, E09");
        assert_eq!(episode_ranges(&[1]), "E01");
        assert_eq!(episode_ranges(&[]), "");
    }

    #[test]
    fn a_card_shows_what_moviepilot_wrote_cleaned_and_bounded() {
        let r = Render::new(Locale::Zh);
        let line = r.card_downloading(37, Some("12分3秒\u{202e}"));
        assert_eq!(line, "⬇️ 下载中 37%（剩余 12分3秒）");
        let long = "x".repeat(500);
        assert!(r.card_transfer_failed(Some(&long)).chars().count() < 230);
        let facts = SubscriptionFacts {
            lack: Some(8),
            downloaded: vec![5, 6],
            filed: vec![5],
            completed: false,
        };
        assert_eq!(
            r.card("三体 (2023) S01", &r.card_subscribed(&facts)),
            "「三体 (2023) S01」\n📺 已订阅（缺 8 集）\n⬇️ 已下载 E05–E06\n🎬 已入库 E05"
        );
        let en = Render::new(Locale::En);
        assert_eq!(en.card_in_library(None), "🎬 In the library ✓");
    }
}
