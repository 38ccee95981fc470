//! Each person's own notices (issue 45, `/notify`): per category of MoviePilot notification,
//! everything their private chat receives, only their own, or nothing; and quiet hours, during
//! which their notices are sent silently, at most [`QUIET_NIGHT_MAX`] a night, the rest counted
//! and summed up when the hours end. The strings here are the fields and values of
//! `{P}:v1:notify:prefs:<telegram id>` that include/prefs.lua reads (docs/redis.md).

use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::NotificationType;

/// Notices a person's private chat gets silently in one night; the rest are held and counted.
pub const QUIET_NIGHT_MAX: u32 = 50;

/// The five categories a person sets: MoviePilot's eight types, the rarer ones together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoticeCategory {
    /// 资源下载.
    Download,
    /// 整理入库.
    Transfer,
    /// 订阅.
    Subscribe,
    /// 站点.
    Site,
    /// The rest: 媒体服务器, 手动处理, 插件, 其它.
    Other,
}

impl NoticeCategory {
    pub const ALL: [NoticeCategory; 5] = [
        NoticeCategory::Download,
        NoticeCategory::Transfer,
        NoticeCategory::Subscribe,
        NoticeCategory::Site,
        NoticeCategory::Other,
    ];

    /// The prefs HASH's field, the held counts' field and `/notify`'s argument.
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeCategory::Download => "download",
            NoticeCategory::Transfer => "transfer",
            NoticeCategory::Subscribe => "subscribe",
            NoticeCategory::Site => "site",
            NoticeCategory::Other => "other",
        }
    }

    /// The category of a history row's type (a row of no known type is "other").
    pub fn of(kind: Option<NotificationType>) -> NoticeCategory {
        match kind {
            Some(NotificationType::Download) => NoticeCategory::Download,
            Some(NotificationType::Organize) => NoticeCategory::Transfer,
            Some(NotificationType::Subscribe) => NoticeCategory::Subscribe,
            Some(NotificationType::SiteMessage) => NoticeCategory::Site,
            _ => NoticeCategory::Other,
        }
    }

    /// `as_str`, or the Chinese word the menus show (下载, 入库, 订阅, 站点, 其它).
    pub fn parse(text: &str) -> Option<NoticeCategory> {
        let text = text.trim();
        NoticeCategory::ALL.into_iter().find(|c| {
            c.as_str().eq_ignore_ascii_case(text)
                || c.chinese() == text
                || (*c == NoticeCategory::Other && text == "其他")
        })
    }

    fn chinese(self) -> &'static str {
        match self {
            NoticeCategory::Download => "下载",
            NoticeCategory::Transfer => "入库",
            NoticeCategory::Subscribe => "订阅",
            NoticeCategory::Site => "站点",
            NoticeCategory::Other => "其它",
        }
    }
}

/// What a person's private chat gets of one category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NoticeMode {
    /// Everything their chat is routed (the operator's routes, and what is theirs). No field.
    #[default]
    All,
    /// Only their own: their cards' endings and the notices matched to what they asked.
    Mine,
    /// Nothing.
    Off,
}

impl NoticeMode {
    pub const ALL: [NoticeMode; 3] = [NoticeMode::All, NoticeMode::Mine, NoticeMode::Off];

    pub fn as_str(self) -> &'static str {
        match self {
            NoticeMode::All => "all",
            NoticeMode::Mine => "mine",
            NoticeMode::Off => "off",
        }
    }

    /// `as_str` or the Chinese words (全部, 仅我的, 关闭).
    pub fn parse(text: &str) -> Option<NoticeMode> {
        match text.trim().to_lowercase().as_str() {
            "all" | "全部" | "on" => Some(NoticeMode::All),
            "mine" | "仅我的" | "我的" | "only" => Some(NoticeMode::Mine),
            "off" | "关闭" | "关" | "none" => Some(NoticeMode::Off),
            _ => None,
        }
    }
}

/// Quiet hours, as minutes of the day in `commands.day_zone`: `from` inclusive, `to` exclusive;
/// `from > to` spans midnight. Stored as `HH:MM-HH:MM` (the prefs HASH's `quiet`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuietHours {
    pub from: u16,
    pub to: u16,
}

impl QuietHours {
    /// The HASH field.
    pub const FIELD: &'static str = "quiet";

    /// `23:00-07:30` (also `23:00–07:30`, `23-7`, `23:00~07:30`); `None` for anything else, or a
    /// window of no length.
    pub fn parse(text: &str) -> Option<QuietHours> {
        let text = text.trim();
        let (from, to) = text
            .split_once(['-', '–', '~', '—'])
            .map(|(a, b)| (a.trim(), b.trim()))?;
        let (from, to) = (minutes(from)?, minutes(to)?);
        (from != to).then_some(QuietHours { from, to })
    }

    /// Whether `minute` (of the day) is inside.
    pub fn holds(self, minute: u16) -> bool {
        if self.from < self.to {
            (self.from..self.to).contains(&minute)
        } else {
            minute >= self.from || minute < self.to
        }
    }
}

impl std::fmt::Display for QuietHours {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:02}:{:02}-{:02}:{:02}",
            self.from / 60,
            self.from % 60,
            self.to / 60,
            self.to % 60
        )
    }
}

/// `HH:MM` or `H` (24 meaning midnight is refused: use 00:00) as minutes of the day.
fn minutes(text: &str) -> Option<u16> {
    let (h, m) = match text.split_once([':', '：']) {
        Some((h, m)) if m.len() == 2 => (h, m),
        Some(_) => return None,
        None => (text, "0"),
    };
    if h.is_empty() || h.len() > 2 {
        return None;
    }
    let (h, m): (u16, u16) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

/// A person's settings as the prefs HASH holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NoticePrefs {
    /// One mode per category, in [`NoticeCategory::ALL`]'s order.
    pub modes: [NoticeMode; 5],
    pub quiet: Option<QuietHours>,
}

impl NoticePrefs {
    /// From the HASH's fields; a value this release does not know reads as the default.
    pub fn from_fields<'a>(fields: impl IntoIterator<Item = (&'a str, &'a str)>) -> NoticePrefs {
        let mut prefs = NoticePrefs::default();
        for (name, value) in fields {
            if name == QuietHours::FIELD {
                prefs.quiet = QuietHours::parse(value);
            } else if let Some(i) = NoticeCategory::ALL.iter().position(|c| c.as_str() == name) {
                prefs.modes[i] = NoticeMode::parse(value).unwrap_or_default();
            }
        }
        prefs
    }

    pub fn mode(&self, category: NoticeCategory) -> NoticeMode {
        let i = NoticeCategory::ALL.iter().position(|c| *c == category);
        i.map_or(NoticeMode::All, |i| self.modes[i])
    }
}

/// The clock include/prefs.lua decides quiet hours with, read here (Lua has no time zones):
/// `<minute of the day>|<today>|<yesterday>|<ms at the minute's start>|<night max>`, the days
/// `YYYY-MM-DD` in `commands.day_zone`. A quiet night is named by the day it began.
pub fn notice_clock(now: Timestamp, zone: &TimeZone) -> String {
    let local = now.to_zoned_datetime(zone.clone());
    let minute = local.hour() as i64 * 60 + local.minute() as i64;
    let today = local.date();
    let yesterday = today.yesterday().unwrap_or(today);
    let into_minute = local.second() as i64 * 1000 + local.millisecond() as i64;
    format!(
        "{minute}|{today}|{yesterday}|{}|{QUIET_NIGHT_MAX}",
        now.as_millisecond() - into_minute
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_hours_parse_and_span_midnight() {
        let q = QuietHours::parse("23:00-07:30").unwrap();
        assert_eq!((q.from, q.to), (1380, 450));
        assert_eq!(q.to_string(), "23:00-07:30");
        assert!(q.holds(1380) && q.holds(0) && q.holds(449));
        assert!(!q.holds(450) && !q.holds(1379) && !q.holds(720));
        let day = QuietHours::parse(" 1 – 6 ").unwrap();
        assert_eq!(day.to_string(), "01:00-06:00");
        assert!(day.holds(60) && !day.holds(360) && !day.holds(30));
        for bad in [
            "",
            "23:00",
            "23:00-23:00",
            "24:00-07:00",
            "23:60-07:00",
            "a-b",
            "123-4",
        ] {
            assert_eq!(QuietHours::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn categories_and_modes_read_both_spellings() {
        for c in NoticeCategory::ALL {
            assert_eq!(NoticeCategory::parse(c.as_str()), Some(c));
            assert_eq!(NoticeCategory::parse(c.chinese()), Some(c));
        }
        assert_eq!(
            NoticeCategory::of(NotificationType::parse("插件")),
            NoticeCategory::Other
        );
        assert_eq!(
            NoticeCategory::of(NotificationType::parse("整理入库")),
            NoticeCategory::Transfer
        );
        for m in NoticeMode::ALL {
            assert_eq!(NoticeMode::parse(m.as_str()), Some(m));
        }
        let p = NoticePrefs::from_fields([("site", "off"), ("quiet", "22:00-08:00"), ("x", "y")]);
        assert_eq!(p.mode(NoticeCategory::Site), NoticeMode::Off);
        assert_eq!(p.mode(NoticeCategory::Download), NoticeMode::All);
        assert_eq!(p.quiet.unwrap().to_string(), "22:00-08:00");
    }

    #[test]
    fn the_clock_is_the_zone_s_minute_and_days() {
        let now: Timestamp = "2026-12-07T16:05:42.5Z".parse().unwrap();
        let shanghai = TimeZone::get("Asia/Shanghai").unwrap();
        let start = now.as_millisecond() - 42_500;
        assert_eq!(
            notice_clock(now, &shanghai),
            format!("5|2026-12-08|2026-12-07|{start}|50")
        );
        assert_eq!(
            notice_clock(now, &TimeZone::UTC),
            format!("965|2026-12-07|2026-12-06|{start}|50")
        );
    }
}
