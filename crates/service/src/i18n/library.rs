//! The library check's words (`moviepilot::Library`): in a match line, a release list's header, a
//! subscription's confirmation, and the answers that stop before a search or a subscription. A
//! check that said nothing (not configured, no answer) adds nothing.

use super::Render;
use crate::moviepilot::{Gap, Library};
/// Episodes as a reader scans them: runs of three or more as ranges, `E05–E08, E10`.
pub(super) fn episode_ranges(episodes: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < episodes.len() {
        let start = episodes[i];
        let mut end = start;
        while i + 1 < episodes.len() && episodes[i + 1] == end + 1 {
            i += 1;
            end = episodes[i];
        }
        match end - start {
            0 => parts.push(format!("E{start:02}")),
            1 => parts.push(format!("E{start:02}, E{end:02}")),
            _ => parts.push(format!("E{start:02}–E{end:02}")),
        }
        i += 1;
    }
    parts.join(", ")
}

/// How many incomplete seasons a line names before it says "…".
pub(super) const GAPS_SHOWN: usize = 3;
impl Render {
    /// One incomplete season: "第 1 季缺 E05–E08" / "缺第 2 季".
    pub(super) fn gap(&self, gap: &Gap) -> String {
        let season = gap.season;
        if gap.episodes.is_empty() {
            return zh_en!(self.zh(), ("缺第 {season} 季"), ("season {season} missing"));
        }
        let eps = episode_ranges(&gap.episodes);
        zh_en!(
            self.zh(),
            ("第 {season} 季缺 {eps}"),
            ("season {season} is missing {eps}")
        )
    }

    /// Seasons missing whole, in a row: "缺第 2–6 季" / "seasons 2–6 missing".
    pub(super) fn whole_seasons(&self, first: u32, last: u32) -> String {
        zh_en!(
            self.zh(),
            ("缺第 {first}–{last} 季"),
            ("seasons {first}–{last} missing")
        )
    }

    /// What is missing, every incomplete season (seasons missing whole and in a row as one
    /// range; at most [`GAPS_SHOWN`] parts, then "…").
    pub(super) fn gaps(&self, gaps: &[Gap]) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut i = 0;
        while i < gaps.len() {
            let mut j = i;
            while gaps[i].episodes.is_empty()
                && j + 1 < gaps.len()
                && gaps[j + 1].episodes.is_empty()
                && gaps[j + 1].season == gaps[j].season + 1
            {
                j += 1;
            }
            parts.push(match j > i {
                true => self.whole_seasons(gaps[i].season, gaps[j].season),
                false => self.gap(&gaps[i]),
            });
            i = j + 1;
        }
        if parts.len() > GAPS_SHOWN {
            parts.truncate(GAPS_SHOWN);
            parts.push("…".into());
        }
        parts.join(zh_en!(self.zh(), "；", "; "))
    }

    /// The short note of a match line: "已在媒体库", or what is missing; `None`: nothing to say.
    pub fn library_note(&self, library: &Library) -> Option<String> {
        match library {
            Library::Present => {
                Some(zh_en!(self.zh(), "已在媒体库", "in your library").to_string())
            }
            Library::Partly { missing } => Some(self.gaps(missing)),
            Library::Absent | Library::NotConfigured | Library::Unknown => None,
        }
    }

    /// " · 已在媒体库" after a match, or nothing.
    pub(super) fn library_suffix(&self, library: Option<&Library>) -> String {
        library
            .and_then(|l| self.library_note(l))
            .map(|note| format!(" · {note}"))
            .unwrap_or_default()
    }

    /// A release list's line about the library (not in it is worth saying there too).
    pub fn library_line(&self, library: &Library) -> Option<String> {
        match library {
            Library::Present => {
                Some(zh_en!(self.zh(), "媒体库：已有", "Library: already there").to_string())
            }
            Library::Partly { missing } => {
                let gaps = self.gaps(missing);
                Some(zh_en!(self.zh(), ("媒体库：{gaps}"), ("Library: {gaps}")))
            }
            Library::Absent => {
                Some(zh_en!(self.zh(), "媒体库：还没有", "Library: not there yet").to_string())
            }
            Library::NotConfigured | Library::Unknown => None,
        }
    }

    /// A subscription made for media partly in the library: what is missing, after the
    /// confirmation; empty otherwise.
    pub fn subscribed_missing(&self, library: &Library) -> String {
        match library {
            Library::Partly { missing } => {
                let gaps = self.gaps(missing);
                zh_en!(
                    self.zh(),
                    ("\n媒体库中缺：{gaps}"),
                    ("\nMissing from your library: {gaps}")
                )
            }
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod library_tests {
    use super::*;
    use crate::config::Locale;

    #[test]
    pub(super) fn episode_ranges_are_compact() {
        assert_eq!(episode_ranges(&[5, 6, 7, 8]), "E05–E08");
        assert_eq!(
            episode_ranges(&[1, 3, 4, 10, 11, 12]),
            "E01, E03, E04, E10–E12"
        );
        assert_eq!(episode_ranges(&[]), "");
    }

    #[test]
    pub(super) fn a_partly_present_season_names_what_is_missing() {
        let zh = Render::new(Locale::Zh);
        let library = Library::Partly {
            missing: vec![
                Gap {
                    season: 1,
                    episodes: vec![5, 6, 7, 8],
                    total: 8,
                },
                Gap {
                    season: 2,
                    episodes: vec![],
                    total: 10,
                },
            ],
        };
        assert_eq!(
            zh.library_note(&library).as_deref(),
            Some("第 1 季缺 E05–E08；缺第 2 季")
        );
        assert_eq!(
            zh.library_note(&Library::Present).as_deref(),
            Some("已在媒体库")
        );
        let seasons = |range: std::ops::RangeInclusive<u32>| Library::Partly {
            missing: range
                .map(|season| Gap {
                    season,
                    episodes: vec![],
                    total: 10,
                })
                .collect(),
        };
        assert_eq!(
            zh.library_note(&seasons(2..=6)).as_deref(),
            Some("缺第 2–6 季")
        );
        assert_eq!(
            Render::new(Locale::En)
                .library_note(&seasons(2..=2))
                .as_deref(),
            Some("season 2 missing")
        );
        assert_eq!(zh.library_note(&Library::NotConfigured), None);
        assert_eq!(zh.library_note(&Library::Unknown), None);
    }
}
