//! Who asked for a media: the key the worker records when a subscription or a download it ran
//! succeeded, and the relay reads to also send MoviePilot's notifications about that media to
//! the chat it was asked in (`notify.to_requester`). Pure, a leaf.
//!
//! A MoviePilot notification carries no subscription id, TMDB id or download hash (its `link` is
//! generic, and a routed row's `userid` is empty: reference §2a), but every default title about
//! a media begins with the media's `title_year` ("三体 (2023)", `MediaInfo.title_year`), then
//! for a series the season ("S01", "S01-S02"): "三体 (2023) S01 已添加订阅", "… S01 E01-E08 开始下载",
//! "… 已入库", "… 已完成订阅". So the match is: the same `title_year` at the start of the title,
//! and, where oncebot recorded a season, a title naming no season or one that covers it.

use sha2::{Digest, Sha256};

use crate::vocabulary::NotificationType;

/// A media as MoviePilot names it at the start of a notification's title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskedMedia {
    /// `"<title> (<year>)"`, as MoviePilot's `MediaInfo.title_year`.
    pub title_year: String,
    /// The season asked for; `None`: a movie, or every season.
    pub season: Option<u32>,
}

impl AskedMedia {
    /// The media oncebot asked MoviePilot for. `None` without a year: MoviePilot's
    /// `title_year` is then the title alone, which no title can be told apart from the words
    /// after it.
    pub fn new(title: &str, year: Option<&str>, season: Option<u32>) -> Option<AskedMedia> {
        let title = title.trim();
        let year = year.map(str::trim).filter(|y| is_year(y))?;
        (!title.is_empty()).then(|| AskedMedia {
            title_year: format!("{title} ({year})"),
            season: season.filter(|s| *s > 0),
        })
    }

    /// The media a notification is about, read from its type and title: only subscription,
    /// download and 入库 notifications, and only a title that begins with a `title_year`.
    pub fn named_in(mtype: Option<&str>, title: &str) -> Option<(AskedMedia, Seasons)> {
        let about_media = matches!(
            NotificationType::of_row(mtype),
            Some(
                NotificationType::Subscribe
                    | NotificationType::Download
                    | NotificationType::Organize
            )
        );
        if !about_media {
            return None;
        }
        let title = title.trim();
        let end = title_year_end(title)?;
        let media = AskedMedia {
            title_year: title[..end].to_string(),
            season: None,
        };
        Some((media, Seasons::named_in(&title[end..])))
    }

    /// The digest in the key of this media's askers (`asked:<digest>`): the same for the
    /// worker's record and the relay's lookup.
    pub fn digest(&self) -> String {
        let hash = Sha256::digest(self.title_year.as_bytes());
        hex::encode(&hash[..12])
    }

    /// The member of that key for `chat_id`: `<season or 0>|<chat id>`.
    pub fn member(&self, chat_id: i64) -> String {
        format!("{}|{chat_id}", self.season.unwrap_or(0))
    }
}

/// The seasons a notification's title names after the `title_year`: none (a movie, or a title
/// without one), or a first and last ("S01" is 1 to 1, "S01-S03" 1 to 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seasons(Option<(u32, u32)>);

impl Seasons {
    fn named_in(rest: &str) -> Seasons {
        let token = rest
            .split_whitespace()
            .find(|t| t.starts_with('S') && t[1..].starts_with(|c: char| c.is_ascii_digit()));
        let Some(token) = token else {
            return Seasons(None);
        };
        let number = |t: &str| -> Option<u32> {
            let digits: String = t
                .trim_start_matches('S')
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        };
        let first = number(token);
        let last = token.split_once('-').and_then(|(_, l)| number(l)).or(first);
        Seasons(first.zip(last))
    }

    /// Whether a record for `season` (none: every season) is about this title.
    fn covers(self, season: u32) -> bool {
        match self.0 {
            None => true,
            Some(_) if season == 0 => true,
            Some((first, last)) => (first..=last).contains(&season),
        }
    }

    /// The chats among `members` (`<season>|<chat>`, as [`AskedMedia::member`] writes them,
    /// or a live card's `<season>|<chat>|<card>`) whose record this title is about, each once,
    /// in the order given.
    pub fn chats(self, members: &[String]) -> Vec<i64> {
        let mut chats = Vec::new();
        for member in members {
            let mut parts = member.split('|');
            let (Some(season), Some(chat)) = (parts.next(), parts.next()) else {
                continue;
            };
            let (Ok(season), Ok(chat)) = (season.parse::<u32>(), chat.parse::<i64>()) else {
                continue;
            };
            if self.covers(season) && !chats.contains(&chat) {
                chats.push(chat);
            }
        }
        chats
    }
}

fn is_year(text: &str) -> bool {
    text.len() == 4 && text.bytes().all(|b| b.is_ascii_digit())
}

/// Where the first `" (YYYY)"` of `title` ends: the end of its `title_year`.
fn title_year_end(title: &str) -> Option<usize> {
    let bytes = title.as_bytes();
    (1..bytes.len()).find_map(|i| {
        let candidate = bytes.get(i..i + 7)?;
        let year = std::str::from_utf8(&candidate[2..6]).ok()?;
        (candidate[0] == b' ' && candidate[1] == b'(' && candidate[6] == b')' && is_year(year))
            .then_some(i + 7)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seasons(mtype: &str, title: &str) -> Option<(String, Seasons)> {
        AskedMedia::named_in(Some(mtype), title).map(|(m, s)| (m.title_year, s))
    }

    #[test]
    fn moviepilots_default_titles_name_the_media_and_its_seasons() {
        let three_body = AskedMedia::new("三体", Some("2023"), Some(1)).unwrap();
        assert_eq!(three_body.title_year, "三体 (2023)");
        for (mtype, title, want) in [
            ("订阅", "三体 (2023) S01 已添加订阅", Some((1, 1))),
            ("资源下载", "三体 (2023) S01 E01-E08 开始下载", Some((1, 1))),
            ("资源下载", "三体 (2023)S01 E03 开始下载", Some((1, 1))),
            ("整理入库", "三体 (2023) S01-S02 已入库", Some((1, 2))),
            ("订阅", "三体 (2023)  已完成订阅", None),
        ] {
            let (title_year, s) = seasons(mtype, title).unwrap();
            assert_eq!(title_year, "三体 (2023)", "{title}");
            assert_eq!(s, Seasons(want), "{title}");
        }
        assert_eq!(
            seasons("订阅", "Dune: Part Two (2024) 已添加订阅")
                .unwrap()
                .0,
            "Dune: Part Two (2024)"
        );
        assert_eq!(
            AskedMedia::new("Dune: Part Two", Some("2024"), None)
                .unwrap()
                .digest(),
            AskedMedia::named_in(Some("Subscribe"), "Dune: Part Two (2024) 已添加订阅")
                .unwrap()
                .0
                .digest()
        );
    }

    #[test]
    fn other_types_and_titles_without_a_year_name_no_media() {
        assert_eq!(seasons("站点", "三体 (2023) 签到成功"), None);
        assert_eq!(AskedMedia::named_in(None, "三体 (2023) S01 已入库"), None);
        assert_eq!(seasons("订阅", "三体 S01 已添加订阅"), None);
        assert_eq!(seasons("订阅", "三体 (20233) S01"), None);
        assert_eq!(AskedMedia::new("三体", None, Some(1)), None);
        assert_eq!(AskedMedia::new("三体", Some("二〇二三"), None), None);
    }

    #[test]
    fn a_record_for_a_season_matches_titles_about_it_or_about_no_season() {
        let members: Vec<String> = ["1|10", "2|20", "0|30", "1|10", "junk", "x|1"]
            .iter()
            .map(|m| m.to_string())
            .collect();
        assert_eq!(Seasons(Some((1, 1))).chats(&members), vec![10, 30]);
        assert_eq!(Seasons(Some((1, 2))).chats(&members), vec![10, 20, 30]);
        assert_eq!(Seasons(None).chats(&members), vec![10, 20, 30]);
        assert_eq!(Seasons(Some((3, 3))).chats(&members), vec![30]);
    }
}
