//! The house commands (MoviePilot's scheduler jobs, an admin's, one per window for the house):
//! what each starts, in words, the answer to a repeat inside the window, and the result.

use super::{About, Listed, Render, Texts, Usage, Words, capitalised, duration_en, duration_zh};
use crate::moviepilot::SchedulerRun;

impl Render {
    /// A house command's result: what MoviePilot's scheduler did with the job (`name`, what
    /// the command starts: [`names`]).
    pub fn house_job_ran(&self, name: Words, run: &SchedulerRun) -> String {
        let name = name(self.zh());
        match run {
            SchedulerRun::Finished => zh_en!(
                self.zh(),
                ("MoviePilot 已执行完{name}。"),
                ("MoviePilot has run {name} to its end.")
            ),
            SchedulerRun::Started { .. } => zh_en!(
                self.zh(),
                ("MoviePilot 已开始{name}，仍在执行（完成后 MoviePilot 会自行通知）。"),
                ("MoviePilot has started {name} and is still at it (MoviePilot reports when it is done).")
            ),
            SchedulerRun::AlreadyRunning => zh_en!(
                self.zh(),
                ("MoviePilot 正在执行{name}，这次没有再启动。"),
                ("MoviePilot is already running {name}; it was not started again.")
            ),
        }
    }
}

/// One house command's words: what it starts at MoviePilot, and its listing.
const fn house(menu: Words, help: Words) -> About {
    About {
        usage: Usage::AdminHelp,
        listed: Listed::Admins { menu, help },
    }
}

pub const SUBSCRIBE_SEARCH: About = house(
    |zh| zh_en!(zh, "搜索全部订阅", "Search every subscription now"),
    |zh| {
        zh_en!(
            zh,
            "/subscribe_search 搜索全部订阅",
            "/subscribe_search search every subscription now"
        )
    },
);

pub const SUBSCRIBE_REFRESH: About = house(
    |zh| zh_en!(zh, "刷新订阅", "Refresh every site's list"),
    |zh| {
        zh_en!(
            zh,
            "/subscribe_refresh 刷新订阅",
            "/subscribe_refresh refresh every site's list"
        )
    },
);

pub const SITE_SIGNIN: About = house(
    |zh| {
        zh_en!(
            zh,
            "站点签到（每天一次）",
            "Sign in to the sites (once a day)"
        )
    },
    |zh| {
        zh_en!(
            zh,
            "/site_signin 站点签到（每天一次）",
            "/site_signin sign in to the sites (once a day)"
        )
    },
);

pub const TRANSFER: About = house(
    |zh| zh_en!(zh, "整理下载", "File finished downloads"),
    |zh| {
        zh_en!(
            zh,
            "/transfer 整理下载",
            "/transfer file finished downloads"
        )
    },
);

pub const MEDIASERVER_SYNC: About = house(
    |zh| zh_en!(zh, "同步媒体库", "Sync the media server's library"),
    |zh| {
        zh_en!(
            zh,
            "/mediaserver_sync 同步媒体库",
            "/mediaserver_sync sync the media server's library"
        )
    },
);

pub const COOKIECLOUD: About = house(
    |zh| zh_en!(zh, "同步 CookieCloud", "Fetch cookies from CookieCloud"),
    |zh| {
        zh_en!(
            zh,
            "/cookiecloud 同步 CookieCloud",
            "/cookiecloud fetch cookies from CookieCloud"
        )
    },
);

/// What each house command starts at MoviePilot, as a user reads it.
pub mod names {
    use super::Words;

    pub const SUBSCRIBE_SEARCH: Words =
        |zh| zh_en!(zh, "搜索全部订阅", "the search of every subscription");
    pub const SUBSCRIBE_REFRESH: Words =
        |zh| zh_en!(zh, "刷新订阅", "the refresh of every site's list");
    pub const SITE_SIGNIN: Words = |zh| zh_en!(zh, "站点签到", "the sign-in to every site");
    pub const TRANSFER: Words = |zh| zh_en!(zh, "整理下载", "the filing of finished downloads");
    pub const MEDIASERVER_SYNC: Words = |zh| zh_en!(zh, "同步媒体库", "the media server sync");
    pub const COOKIECLOUD: Words =
        |zh| zh_en!(zh, "同步 CookieCloud", "the CookieCloud cookie sync");
    /// Any other command.
    pub const ANY: Words = |zh| zh_en!(zh, "这个任务", "this job");
}

impl Texts {
    /// The answer to a house command repeated inside its window, for enqueue.lua: "{time}" is
    /// when the first started (in `commands.day_zone`), "{job}" and "{state}" as for any
    /// repeat. `name` is what the command starts ([`names`]); `window` how long the window is
    /// (`None`: until the end of the day).
    pub fn house_repeat(&self, name: Words, window: Option<std::time::Duration>) -> String {
        let name = name(self.zh());
        let until = match (window, self.zh()) {
            (None, true) => "今天不会再执行".to_string(),
            (None, false) => "it will not run again today".to_string(),
            (Some(w), true) => format!("{}内不会重复", duration_zh(w)),
            (Some(w), false) => format!("it will not run again within {}", duration_en(w)),
        };
        zh_en!(
            self.zh(),
            ("已在 {{time}} 开始{name}（任务 #{{job}}，{{state}}），{until}。如确需现在再执行一次，请点下面的按钮。"),
            (
                "{} was started at {{time}} (job #{{job}}, {{state}}); {until}. To run it again now anyway, tap the button.",
                capitalised(name)
            )
        )
    }

    /// The button under a house command's repeat that runs it again anyway (once).
    pub fn force_button(&self) -> &'static str {
        zh_en!(self.zh(), "仍要再执行一次", "Run it again now")
    }
}
