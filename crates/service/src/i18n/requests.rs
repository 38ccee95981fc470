//! Media requests (issue 44): what a requester is answered, the admins' cards and their
//! buttons, and every answer request.lua gives ("{id}", "{what}", "{who}" filled in by the
//! script). A card's description is built here from what the worker knew when it made the
//! requester's button (the media, the season, the release and its site, the library line).

use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::{About, Listed, Texts, Usage};
use crate::ledger::QuotaState;
use crate::untrusted::clean_line;

/// `/quota`: where one stands against their weekly quota.
pub const QUOTA: About = About {
    usage: Usage::Help,
    listed: Listed::Everyone {
        menu: |zh| zh_en!(zh, "我的每周额度", "My weekly quota"),
        help: Some(|zh| {
            zh_en!(
                zh,
                "/quota 本周还能订阅或下载几次",
                "/quota how many subscriptions or downloads you have left this week"
            )
        }),
    },
};

impl Texts {
    /// A card's buttons: Approve, Approve as best version (a subscription's only), Decline,
    /// with their decisions.
    pub fn request_buttons(&self) -> [(&'static str, &'static str); 3] {
        let zh = self.zh();
        [
            (zh_en!(zh, "批准", "Approve"), "approve"),
            (zh_en!(zh, "批准并洗版", "Approve as best version"), "best"),
            (zh_en!(zh, "拒绝", "Decline"), "decline"),
        ]
    }

    /// The requester's Withdraw button.
    pub fn withdraw_button(&self) -> &'static str {
        zh_en!(self.zh(), "撤回", "Withdraw")
    }

    /// A subscription asked for: the media (and season), then the library line.
    pub fn asking_subscription(&self, media: &str, best: bool, library: &str) -> String {
        let what = match best {
            true => zh_en!(self.zh(), "洗版订阅", "Best-version subscription"),
            false => zh_en!(self.zh(), "订阅", "Subscription"),
        };
        let text = zh_en!(self.zh(), ("{what}：{media}"), ("{what}: {media}"));
        join_library(text, library)
    }

    /// A download asked for: the media, the release and its site, then the library line.
    pub fn asking_download(&self, media: &str, release: &str, site: &str, library: &str) -> String {
        let (media, release, site) = (shown(media), shown(release), shown(site));
        let text = zh_en!(
            self.zh(),
            ("下载：{media}\n资源：{release}\n站点：{site}"),
            ("Download: {media}\nRelease: {release}\nSite: {site}")
        );
        join_library(text, library)
    }

    /// ⚡ Auto asked for: the best release of the list (and the season's subscription).
    pub fn asking_auto(&self, media: &str, library: &str) -> String {
        let media = shown(media);
        let text = zh_en!(
            self.zh(),
            ("⚡ 自动下载：{media}（列表中的第一个资源，剧集并订阅该季）"),
            ("⚡ Auto download: {media} (the list's first release; a season is also subscribed)")
        );
        join_library(text, library)
    }

    /// A media as a card names it: its title (cleaned: MoviePilot wrote it), year and season.
    pub fn asked_media(&self, title: &str, year: Option<&str>, season: Option<u32>) -> String {
        let mut text = shown(title);
        if let Some(year) = year.filter(|y| !y.is_empty()) {
            text.push_str(&format!(" ({})", shown(year)));
        }
        if let Some(n) = season {
            text.push_str(&zh_en!(self.zh(), (" 第 {n} 季"), (" season {n}")));
        }
        text
    }

    /// The requester's "who" on a card: their name (theirs or MoviePilot's: cleaned) and
    /// Telegram id.
    pub fn requester_line(&self, name: &str, id: i64) -> String {
        match name.is_empty() {
            true => id.to_string(),
            false => format!("{} ({id})", shown(name)),
        }
    }

    /// Every text request.lua writes (JSON, lua/request.lua's ARGV[15], and the texts of
    /// tap.lua's ARGV[20]).
    pub fn request_texts(&self) -> serde_json::Value {
        let zh = self.zh();
        serde_json::json!({
            "card": zh_en!(zh,
                "📝 媒体请求 #{id}\n{what}\n申请人：{who}",
                "📝 Media request #{id}\n{what}\nAsked by: {who}"),
            "sent": zh_en!(zh,
                "已提交，等待管理员批准（请求 #{id}）",
                "Sent for approval (request #{id})"),
            "same": zh_en!(zh,
                "这个请求已经在等待管理员批准（请求 #{id}）",
                "This is already waiting for approval (request #{id})"),
            "many": zh_en!(zh,
                "你等待批准的请求太多了，请等管理员处理后再提交。",
                "You have too many requests waiting; ask again once an admin has decided some."),
            "nobody": zh_en!(zh,
                "现在没有可以批准请求的管理员。",
                "No admin can approve a request now."),
            "expired": zh_en!(zh, "这个请求已过期或不存在。", "This request has expired or does not exist."),
            "foreign": zh_en!(zh, "这个按钮不是给你的", "This button is not for you."),
            "forbidden": zh_en!(zh, "只有管理员可以批准请求。", "Only an admin can decide a request."),
            "decided": zh_en!(zh, "已经处理过了：{what}", "Already decided: {what}"),
            "done": zh_en!(zh, "已处理：{what}", "Done: {what}"),
            "gone": zh_en!(zh,
                "这个人已经不能使用机器人了，请求已拒绝。",
                "This person no longer has access; the request is declined."),
            "withdrawn": zh_en!(zh, "请求已撤回。", "Request withdrawn."),
            "card_approved": zh_en!(zh, "✅ 已由 {who} 批准", "✅ Approved by {who}"),
            "card_best": zh_en!(zh, "✅ 已由 {who} 批准（洗版）", "✅ Approved as best version by {who}"),
            "card_declined": zh_en!(zh, "❌ 已由 {who} 拒绝", "❌ Declined by {who}"),
            "card_gone": zh_en!(zh,
                "❌ 已拒绝：申请人已不能使用机器人",
                "❌ Declined: the requester no longer has access"),
            "card_expired": zh_en!(zh, "⌛ 请求已过期，没有人处理", "⌛ Expired without a decision"),
            "card_withdrawn": zh_en!(zh, "↩️ 申请人已撤回", "↩️ Withdrawn by the requester"),
            "person_approved": zh_en!(zh,
                "✅ 请求 #{id} 已批准，正在执行：\n{what}",
                "✅ Request #{id} was approved and is running:\n{what}"),
            "person_declined": zh_en!(zh,
                "❌ 请求 #{id} 没有被批准：\n{what}",
                "❌ Request #{id} was declined:\n{what}"),
            "person_gone": zh_en!(zh,
                "❌ 请求 #{id} 已取消：你已不能使用机器人。",
                "❌ Request #{id} was cancelled: you no longer have access to the bot."),
            "person_expired": zh_en!(zh,
                "⌛ 请求 #{id} 已过期，没有管理员处理：\n{what}",
                "⌛ Request #{id} expired without a decision:\n{what}"),
        })
    }
}

impl Texts {
    /// The answer when a weekly quota has no room: "本周额度已用完（5/5），下一个名额在 周四 20:14
    /// 释放" / "Weekly quota used (5/5); the next slot frees on Thu 20:14", the time in `zone`.
    pub fn quota_used_up(&self, limit: u32, state: QuotaState, zone: &TimeZone) -> String {
        let used = state.used;
        match state.next_free_ms.map(|ms| self.slot_time(ms, zone)) {
            Some(when) => zh_en!(
                self.zh(),
                ("本周额度已用完（{used}/{limit}），下一个名额在 {when} 释放"),
                ("Weekly quota used ({used}/{limit}); the next slot frees on {when}")
            ),
            None => zh_en!(
                self.zh(),
                ("本周额度已用完（{used}/{limit}）"),
                ("Weekly quota used ({used}/{limit})")
            ),
        }
    }

    /// `/quota`: where one stands (`None`: not limited).
    pub fn quota_report(&self, quota: Option<(u32, QuotaState, &TimeZone)>) -> String {
        let Some((limit, state, zone)) = quota else {
            return zh_en!(
                self.zh(),
                "你没有每周额度限制。",
                "You have no weekly quota."
            )
            .into();
        };
        let used = state.used;
        let left = limit.saturating_sub(used);
        let mut text = zh_en!(
            self.zh(),
            ("本周额度：已用 {used}/{limit}，还剩 {left} 个（订阅或下载一次用一个，⚡ 自动最多两个；滚动 7 天计算）"),
            ("Weekly quota: {used} of {limit} used, {left} left (a subscription or a download takes one, ⚡ Auto up to two; over a rolling 7 days)")
        );
        if let Some(ms) = state.next_free_ms {
            let when = self.slot_time(ms, zone);
            text.push_str(&zh_en!(
                self.zh(),
                ("\n下一个名额在 {when} 释放"),
                ("\nThe next slot frees on {when}")
            ));
        }
        text
    }

    /// A card's quota line for the requester: "本周额度：已用 3/5" / "Quota: 3 of 5 used this week".
    pub fn quota_line(&self, limit: u32, used: u32) -> String {
        zh_en!(
            self.zh(),
            ("本周额度：已用 {used}/{limit}"),
            ("Quota: {used} of {limit} used this week")
        )
    }

    /// "周四 20:14" / "Thu 20:14" in `zone`.
    fn slot_time(&self, ms: i64, zone: &TimeZone) -> String {
        let Ok(at) = Timestamp::from_millisecond(ms) else {
            return String::new();
        };
        let at = at.to_zoned_datetime(zone.clone());
        let day = at.weekday().to_monday_zero_offset() as usize;
        let (hh, mm) = (at.hour(), at.minute());
        match self.zh() {
            true => format!(
                "{} {hh:02}:{mm:02}",
                ["周一", "周二", "周三", "周四", "周五", "周六", "周日"][day]
            ),
            false => format!(
                "{} {hh:02}:{mm:02}",
                ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][day]
            ),
        }
    }
}

/// The most characters of one name a card shows (a title, a release, a site, a person).
const SHOWN_CHARS: usize = 200;

/// A name someone else wrote (MoviePilot, a tracker, a person), as a card shows it: on one
/// line, without control or bidi characters, at most [`SHOWN_CHARS`].
fn shown(text: &str) -> String {
    clean_line(text).chars().take(SHOWN_CHARS).collect()
}

/// A description with its library line under it (none when the library was not checked).
fn join_library(what: String, library: &str) -> String {
    match library.is_empty() {
        true => what,
        false => format!("{what}\n{library}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Locale;

    /// Every text in both languages, with the placeholders request.lua fills.
    #[test]
    fn the_texts_exist_in_both_languages_with_their_placeholders() {
        let (z, e) = (
            Texts::new(Locale::Zh).request_texts(),
            Texts::new(Locale::En).request_texts(),
        );
        for (key, value) in e.as_object().unwrap() {
            assert_ne!(z[key], *value, "{key}: one text for two languages");
        }
        for (key, hole) in [
            ("card", "{what}"),
            ("card", "{who}"),
            ("sent", "{id}"),
            ("card_approved", "{who}"),
            ("person_declined", "{id}"),
        ] {
            assert!(z[key].as_str().unwrap().contains(hole), "{key}");
            assert!(e[key].as_str().unwrap().contains(hole), "{key}");
        }
        assert_eq!(
            e["sent"].as_str().unwrap().replace("{id}", "12"),
            "Sent for approval (request #12)"
        );
    }

    /// What MoviePilot or a tracker wrote is cleaned and bounded before a card shows it.
    #[test]
    fn a_cards_names_are_cleaned_and_bounded() {
        let en = Texts::new(Locale::En);
        let long = "D".repeat(500);
        let what = en.asking_download("Dune\u{202e}", &long, "si\nte", "");
        assert!(what.starts_with("Download: Dune\nRelease: "), "{what}");
        assert!(what.contains(&"D".repeat(200)) && !what.contains(&"D".repeat(201)));
        assert!(what.ends_with("Site: si te"), "{what}");
        assert_eq!(en.requester_line("car\u{200b}ol", 3), "carol (3)");
    }

    /// The words, the time in the zone: 2026-12-10 12:14 UTC is Thursday 20:14 in
    /// Shanghai.
    #[test]
    fn a_used_up_quota_says_when_the_next_slot_frees() {
        let zone = TimeZone::get("Asia/Shanghai").unwrap();
        let at: Timestamp = "2026-12-10T12:14:00Z".parse().unwrap();
        let state = QuotaState {
            used: 5,
            next_free_ms: Some(at.as_millisecond()),
        };
        assert_eq!(
            Texts::new(Locale::Zh).quota_used_up(5, state, &zone),
            "本周额度已用完（5/5），下一个名额在 周四 20:14 释放"
        );
        assert_eq!(
            Texts::new(Locale::En).quota_used_up(5, state, &zone),
            "Weekly quota used (5/5); the next slot frees on Thu 20:14"
        );
    }
}
