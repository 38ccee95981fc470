//! `/subscribe` and `/best` (洗版): subscribed, found already, verified after a crash, the season
//! choice, and the answers that stop before a subscription.

use super::{About, Listed, Render, Usage};
use crate::untrusted::clean_line;

impl Render {
    /// What a best-version subscription does, after its confirmation.
    pub fn best_note(&self) -> &'static str {
        zh_en!(
            self.zh(),
            "\n洗版：MoviePilot 会一直寻找更好的版本并替换，直到达到最高优先级。",
            "\nBest version: MoviePilot keeps looking for a better release and replaces the one it has, up to your top priority."
        )
    }

    /// `/best` found a plain subscription, left as it is.
    pub fn plain_subscription_exists(&self, name: &str, season: Option<u32>, id: u64) -> String {
        let name = clean_line(name);
        let s = self.season(season);
        zh_en!(
            self.zh(),
            ("「{name}」{s}已有普通订阅（订阅 #{id}），MoviePilot 每部影视只能有一个订阅，所以没有改成洗版。要洗版，请先 /unsubscribe {id}，再发送 洗版。"),
            ("\"{name}\"{s} already has a plain subscription (#{id}), and MoviePilot keeps one per title, so it was not changed to best version. To get the best version, send /unsubscribe {id} first, then /best again.")
        )
    }

    /// The question above the season buttons of a series.
    pub fn choose_season(&self, name: &str, seasons: usize) -> String {
        let name = clean_line(name);
        zh_en!(
            self.zh(),
            ("「{name}」共 {seasons} 季，请选择要订阅的季："),
            ("\"{name}\" has {seasons} seasons; choose the one to subscribe to:")
        )
    }

    /// A season button's text.
    pub fn season_button(&self, season: u32) -> String {
        zh_en!(self.zh(), ("第 {season} 季"), ("Season {season}"))
    }

    pub fn subscribed(&self, name: &str, season: Option<u32>, id: u64) -> String {
        let name = clean_line(name);
        let s = self.season(season);
        zh_en!(
            self.zh(),
            ("已订阅「{name}」{s}（订阅 #{id}）。"),
            ("Subscribed to \"{name}\"{s} (subscription #{id}).")
        )
    }

    pub fn already_subscribed(&self, name: &str, season: Option<u32>, id: u64) -> String {
        let name = clean_line(name);
        let s = self.season(season);
        zh_en!(
            self.zh(),
            ("「{name}」{s}已在订阅中（订阅 #{id}），没有重复添加。"),
            ("\"{name}\"{s} is already subscribed (subscription #{id}); nothing added.")
        )
    }

    pub fn subscription_verified(
        &self,
        job: u64,
        name: &str,
        season: Option<u32>,
        id: u64,
    ) -> String {
        let name = clean_line(name);
        let s = self.season(season);
        zh_en!(
            self.zh(),
            ("任务 #{job} 执行中被中断；已向 MoviePilot 核实：「{name}」{s}的订阅 #{id} 已存在，没有重复添加。"),
            ("Job #{job} was interrupted; MoviePilot confirms subscription #{id} to \"{name}\"{s} exists, so nothing was repeated.")
        )
    }

    pub fn media_not_found(&self, tmdb_id: u64) -> String {
        zh_en!(
            self.zh(),
            ("MoviePilot 未识别到媒体信息 tmdb:{tmdb_id}"),
            ("MoviePilot does not know tmdb:{tmdb_id}")
        )
    }

    pub fn no_such_season(&self, name: &str, season: u32) -> String {
        let name = clean_line(name);
        zh_en!(
            self.zh(),
            ("「{name}」没有第 {season} 季"),
            ("\"{name}\" has no season {season}")
        )
    }

    /// A subscription not made: the media is in the library already.
    pub fn in_library_not_subscribed(&self, name: &str, season: Option<u32>) -> String {
        let name = clean_line(name);
        let s = self.season(season);
        zh_en!(
            self.zh(),
            ("「{name}」{s}已在媒体库中，没有订阅。如仍要订阅，请点「仍然订阅」。"),
            ("\"{name}\"{s} is already in your library, so no subscription was made. Tap \"Subscribe anyway\" to subscribe all the same.")
        )
    }

    pub fn subscribe_anyway_button(&self) -> &'static str {
        zh_en!(self.zh(), "仍然订阅", "Subscribe anyway")
    }
}

/// `/subscribe`.
pub const SUBSCRIBE: About = About {
    usage: Usage::Line(|zh| {
        zh_en!(
            zh,
            "用法：/subscribe <片名>，或 /subscribe tmdb:<id>（电影），或 /subscribe tmdb:<id> S<季>（剧集），或 /subscribe tmdb:<id> tv（剧集，选择季）",
            "Usage: /subscribe <title>, or /subscribe tmdb:<id> (a movie), or /subscribe tmdb:<id> S<n> (season n of a series), or /subscribe tmdb:<id> tv (a series; choose the season)"
        )
    }),
    listed: Listed::Everyone {
        menu: |zh| zh_en!(zh, "订阅", "Subscribe"),
        help: Some(|zh| {
            zh_en!(
                zh,
                "/subscribe <片名> 订阅（或 tmdb:<id> [S<季>]）",
                "/subscribe <title> subscribe (or tmdb:<id> [S<n>])"
            )
        }),
    },
};

/// `/best` (洗版).
pub const BEST: About = About {
    usage: Usage::Line(|zh| {
        zh_en!(
            zh,
            "用法：/best <片名>（或“洗版 <片名>”），或 /best tmdb:<id>（电影），或 /best tmdb:<id> S<季>（剧集），或 /best tmdb:<id> tv（剧集，选择季）",
            "Usage: /best <title>, or /best tmdb:<id> (a movie), or /best tmdb:<id> S<n> (season n of a series), or /best tmdb:<id> tv (a series; choose the season)"
        )
    }),
    listed: Listed::Everyone {
        menu: |zh| {
            zh_en!(
                zh,
                "洗版（订阅更好的版本）",
                "Subscribe to a better version"
            )
        },
        help: Some(|zh| {
            zh_en!(
                zh,
                "/best <片名> 洗版：订阅并不断换成更好的版本（或 tmdb:<id> [S<季>]）",
                "/best <title> subscribe and keep upgrading to a better version (or tmdb:<id> [S<n>])"
            )
        }),
    },
};
