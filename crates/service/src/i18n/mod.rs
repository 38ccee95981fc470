//! Every text a user reads, in Chinese (the default, MoviePilot's users) and English, in one
//! idiom: [`zh_en!`]. `Texts` holds the short ones the scripts and the dispatcher use (labels,
//! buttons, tap answers, templates); [`replies`] the replies of jobs, built from their data.
//!
//! Pure functions of the locale: no I/O. Placeholders such as `{job}` and `{state}` in
//! [`Texts::duplicate_template`], [`Texts::tap_texts`] and [`Texts::review_template`] are filled
//! in by the Lua scripts, which alone know the job and its state at that instant.

/// One text in Chinese and English, the configured one chosen: `zh_en!(zh, "中文", "English")`
/// is a `&'static str`; with each side in parentheses it is formatted, as `format!` takes it:
/// `zh_en!(zh, ("第 {n} 季"), ("Season {n}"))`.
macro_rules! zh_en {
    ($zh:expr, $z:literal, $e:literal $(,)?) => {
        if $zh { $z } else { $e }
    };
    ($zh:expr, ($($z:tt)+), ($($e:tt)+) $(,)?) => {
        if $zh { format!($($z)+) } else { format!($($e)+) }
    };
}

mod replies;

pub use replies::{Render, Whose, release_args, subscribe_args};

use crate::commands::Command;
use crate::config::Locale;
use crate::ledger::{LedgerTexts, TapTexts};
use crate::vocabulary::{JobState, Resolution};

/// "30 分钟", "2 小时", "45 秒".
fn duration_zh(d: std::time::Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 && s.is_multiple_of(3600) {
        format!("{} 小时", s / 3600)
    } else if s >= 60 && s.is_multiple_of(60) {
        format!("{} 分钟", s / 60)
    } else {
        format!("{s} 秒")
    }
}

/// "30 minutes", "2 hours", "1 hour", "45 seconds".
fn duration_en(d: std::time::Duration) -> String {
    let s = d.as_secs();
    let (n, unit) = if s >= 3600 && s.is_multiple_of(3600) {
        (s / 3600, "hour")
    } else if s >= 60 && s.is_multiple_of(60) {
        (s / 60, "minute")
    } else {
        (s, "second")
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The texts of one locale.
#[derive(Debug, Clone, Copy)]
pub struct Texts {
    pub locale: Locale,
}

impl Texts {
    pub fn new(locale: Locale) -> Self {
        Self { locale }
    }

    fn zh(&self) -> bool {
        self.locale == Locale::Zh
    }

    /// Every text the ledger's scripts write into chats, for `Ledger::connect` (the ledger
    /// composes none of its own).
    pub fn for_ledger(&self) -> LedgerTexts {
        LedgerTexts {
            state_labels: JobState::ALL.map(|s| (s, self.state_label(s))),
            duplicate: self.duplicate_template(),
            taps: self.tap_texts(),
            resolved: Resolution::ALL.map(|d| (d, self.resolved(d))),
            review: self.review_template(),
            review_buttons: self.review_buttons(),
        }
    }

    /// The label of a state, as users read it.
    pub fn state_label(&self, state: JobState) -> &'static str {
        use JobState::*;
        match state {
            Pending => zh_en!(self.zh(), "排队中", "queued"),
            Running => zh_en!(self.zh(), "执行中", "running"),
            RetryWait => zh_en!(self.zh(), "等待重试", "waiting to retry"),
            Succeeded => zh_en!(self.zh(), "已完成", "succeeded"),
            Failed => zh_en!(self.zh(), "失败", "failed"),
            NeedsReview => zh_en!(self.zh(), "待人工确认", "waiting for a person"),
        }
    }

    /// Sent when a command repeats one inside its duplicate window.
    pub fn duplicate_template(&self) -> &'static str {
        zh_en!(
            self.zh(),
            "已收到相同的请求，即任务 #{job}（{state}），不会重复执行。发送 /status {job} 查看进度。",
            "Already received as job #{job} ({state}); it will not run twice. Send /status {job} to follow it."
        )
    }

    pub fn confirm_button(&self) -> &'static str {
        zh_en!(self.zh(), "确认", "Confirm")
    }

    pub fn cancel_button(&self) -> &'static str {
        zh_en!(self.zh(), "取消", "Cancel")
    }

    /// Answers to a tap (answerCallbackQuery, at most 200 characters). "{job}" and "{state}"
    /// are filled in by `lua/tap.lua`, which alone knows the job and its state at that instant.
    pub fn tap_texts(&self) -> TapTexts {
        TapTexts {
            expired: zh_en!(
                self.zh(),
                "按钮已过期，请重新发送命令",
                "This button has expired; send the command again."
            ),
            foreign: zh_en!(
                self.zh(),
                "这个按钮不是给你的",
                "This button is not for you."
            ),
            unknown: zh_en!(
                self.zh(),
                "这个按钮已失效，请重新发送命令",
                "This button no longer works; send the command again."
            ),
            received: zh_en!(self.zh(), "已接收：任务 #{job}", "Received: job #{job}"),
            duplicate: self.duplicate_template(),
            already: zh_en!(
                self.zh(),
                "已处理过：任务 #{job}（{state}）",
                "Already handled: job #{job} {state}"
            ),
            already_done: zh_en!(self.zh(), "已处理过", "Already handled."),
            cancelled: zh_en!(self.zh(), "已取消", "Cancelled."),
            resolved: zh_en!(
                self.zh(),
                "已处理：任务 #{job} 现在是「{state}」",
                "Done: job #{job} is now {state}"
            ),
            settled: zh_en!(
                self.zh(),
                "任务 #{job} 已被处理过（{state}），未做改动",
                "Job #{job} was already settled ({state}); nothing changed."
            ),
            forbidden: zh_en!(
                self.zh(),
                "你的角色不能使用这个按钮",
                "Your role does not allow this button."
            ),
        }
    }

    /// Sent to the job's chat when a person settles it; "{job}" is filled in by the script.
    pub fn resolved(&self, decision: Resolution) -> &'static str {
        match decision {
            Resolution::Succeeded => zh_en!(
                self.zh(),
                "管理员已确认任务 #{job} 完成。",
                "An operator confirmed job #{job} succeeded."
            ),
            Resolution::Failed => zh_en!(
                self.zh(),
                "管理员已将任务 #{job} 标记为失败。",
                "An operator marked job #{job} failed."
            ),
            Resolution::Retry => zh_en!(
                self.zh(),
                "管理员已安排任务 #{job} 重新执行。",
                "An operator scheduled job #{job} to run again."
            ),
        }
    }

    /// The message admin chats get when a job needs a person. "{job}", "{command}", "{args}",
    /// "{attempts}" and "{error}" are filled in by the script that holds the job.
    pub fn review_template(&self) -> &'static str {
        zh_en!(
            self.zh(),
            "任务 #{job} 需要人工确认\n命令：/{command} {args}\n已尝试：{attempts} 次\n情况：{error}\n\n请核实 MoviePilot 中的实际结果后选择：",
            "Job #{job} needs a person\nCommand: /{command} {args}\nAttempts: {attempts}\nWhat happened: {error}\n\nCheck what MoviePilot actually did, then choose:"
        )
    }

    /// The labels of the review buttons: mark succeeded, mark failed, retry.
    pub fn review_buttons(&self) -> [&'static str; 3] {
        [
            zh_en!(self.zh(), "标记成功", "Mark succeeded"),
            zh_en!(self.zh(), "标记失败", "Mark failed"),
            zh_en!(self.zh(), "重试", "Retry"),
        ]
    }

    pub fn refusal(&self) -> &'static str {
        zh_en!(
            self.zh(),
            "抱歉，你没有使用这个机器人的权限。请联系管理员把你的 Telegram 用户 ID 加入白名单。",
            "Sorry, you are not allowed to use this bot. Ask its owner to add your Telegram user id to the allow-list."
        )
    }

    /// An allowed user's command that needs `needs` (a role above theirs): one plain sentence.
    pub fn forbidden(&self, needs: crate::vocabulary::Role) -> &'static str {
        match needs {
            crate::vocabulary::Role::Admin => {
                zh_en!(
                    self.zh(),
                    "只有管理员可以这样做。",
                    "Only an admin can do that."
                )
            }
            _ => zh_en!(
                self.zh(),
                "你只能查看：搜索、订阅列表、下载进度和任务状态。",
                "You can only look: search, the subscription list, downloads and job status."
            ),
        }
    }

    pub fn unknown_command(&self, name: &str) -> String {
        let name = crate::untrusted::clean_line(name);
        match self.locale {
            Locale::Zh => format!("不认识的命令 /{name}。发送 /help 查看可用命令。"),
            Locale::En => format!("I don't know /{name}. Send /help to see what I can do."),
        }
    }

    /// How to call a command, for a reply to bad arguments.
    pub fn usage(&self, command: Command) -> &'static str {
        use Command::*;
        match command {
            Search => zh_en!(self.zh(), "用法：/search <片名>", "Usage: /search <title>"),
            Best => zh_en!(
                self.zh(),
                "用法：/best <片名>（或“洗版 <片名>”），或 /best tmdb:<id>（电影），或 /best tmdb:<id> S<季>（剧集），或 /best tmdb:<id> tv（剧集，选择季）",
                "Usage: /best <title>, or /best tmdb:<id> (a movie), or /best tmdb:<id> S<n> (season n of a series), or /best tmdb:<id> tv (a series; choose the season)"
            ),
            Subscribe => zh_en!(
                self.zh(),
                "用法：/subscribe <片名>，或 /subscribe tmdb:<id>（电影），或 /subscribe tmdb:<id> S<季>（剧集），或 /subscribe tmdb:<id> tv（剧集，选择季）",
                "Usage: /subscribe <title>, or /subscribe tmdb:<id> (a movie), or /subscribe tmdb:<id> S<n> (season n of a series), or /subscribe tmdb:<id> tv (a series; choose the season)"
            ),
            Unsubscribe => zh_en!(
                self.zh(),
                "用法：/unsubscribe <订阅 ID>（/subscriptions 可查看 ID）",
                "Usage: /unsubscribe <subscription id> (/subscriptions lists them)"
            ),
            SearchNow => zh_en!(
                self.zh(),
                "用法：/searchnow <订阅 ID>",
                "Usage: /searchnow <subscription id>"
            ),
            Status => zh_en!(
                self.zh(),
                "用法：/status [任务编号]",
                "Usage: /status [job id]"
            ),
            Download | Releases | Grab | Auto => zh_en!(
                self.zh(),
                "用法：/download <片名>，或 /download tmdb:<id>（电影），或 /download tmdb:<id> S<季>（剧集的一季）",
                "Usage: /download <title>, or /download tmdb:<id> (a movie), or /download tmdb:<id> S<n> (season n of a series)"
            ),
            Subscriptions | Downloading | Jobs | Help | Start => self.help(),
            SubscribeSearch | SubscribeRefresh | SiteSignin | Transfer | MediaserverSync
            | Cookiecloud | Restart => self.admin_help(),
            Redo => zh_en!(
                self.zh(),
                "用法：/redo <整理记录 ID>（MoviePilot 整理历史中的记录编号）",
                "Usage: /redo <transfer record id> (the record's number in MoviePilot's transfer history)"
            ),
        }
    }

    /// What a house command starts at MoviePilot, as a user reads it.
    pub fn house_job_name(&self, command: Command) -> &'static str {
        use Command::*;
        match command {
            SubscribeSearch => zh_en!(
                self.zh(),
                "搜索全部订阅",
                "the search of every subscription"
            ),
            SubscribeRefresh => zh_en!(self.zh(), "刷新订阅", "the refresh of every site's list"),
            SiteSignin => zh_en!(self.zh(), "站点签到", "the sign-in to every site"),
            Transfer => zh_en!(self.zh(), "整理下载", "the filing of finished downloads"),
            MediaserverSync => zh_en!(self.zh(), "同步媒体库", "the media server sync"),
            Cookiecloud => zh_en!(self.zh(), "同步 CookieCloud", "the CookieCloud cookie sync"),
            _ => zh_en!(self.zh(), "这个任务", "this job"),
        }
    }

    /// The answer to a house command repeated inside its window, for enqueue.lua: "{time}" is
    /// when the first started (in `commands.day_zone`), "{job}" and "{state}" as for any repeat.
    /// `window` is how long the window is (`None`: until the end of the day).
    pub fn house_repeat(&self, command: Command, window: Option<std::time::Duration>) -> String {
        let name = self.house_job_name(command);
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

    /// The command menu registered with setMyCommands: (command, description).
    pub fn command_list(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            (
                "search",
                zh_en!(self.zh(), "搜索影视", "Search for a movie or series"),
            ),
            ("subscribe", zh_en!(self.zh(), "订阅", "Subscribe")),
            (
                "best",
                zh_en!(
                    self.zh(),
                    "洗版（订阅更好的版本）",
                    "Subscribe to a better version"
                ),
            ),
            (
                "download",
                zh_en!(
                    self.zh(),
                    "搜索资源并下载",
                    "Find a release and download it"
                ),
            ),
            (
                "subscriptions",
                zh_en!(self.zh(), "查看订阅", "List subscriptions"),
            ),
            (
                "unsubscribe",
                zh_en!(self.zh(), "取消订阅", "Cancel a subscription"),
            ),
            (
                "searchnow",
                zh_en!(self.zh(), "立即搜索订阅", "Search a subscription now"),
            ),
            (
                "downloading",
                zh_en!(self.zh(), "正在下载", "Active downloads"),
            ),
            (
                "status",
                zh_en!(self.zh(), "任务状态", "How a job is doing"),
            ),
            ("jobs", zh_en!(self.zh(), "最近的任务", "Recent jobs")),
            ("help", zh_en!(self.zh(), "帮助", "Help")),
        ]
    }

    /// The house commands, an admin's, for the menu Telegram shows in an admin's chat.
    pub fn admin_command_list(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            (
                "subscribe_search",
                zh_en!(self.zh(), "搜索全部订阅", "Search every subscription now"),
            ),
            (
                "subscribe_refresh",
                zh_en!(self.zh(), "刷新订阅", "Refresh every site's list"),
            ),
            (
                "site_signin",
                zh_en!(
                    self.zh(),
                    "站点签到（每天一次）",
                    "Sign in to the sites (once a day)"
                ),
            ),
            (
                "transfer",
                zh_en!(self.zh(), "整理下载", "File finished downloads"),
            ),
            (
                "mediaserver_sync",
                zh_en!(self.zh(), "同步媒体库", "Sync the media server's library"),
            ),
            (
                "cookiecloud",
                zh_en!(
                    self.zh(),
                    "同步 CookieCloud",
                    "Fetch cookies from CookieCloud"
                ),
            ),
            (
                "restart",
                zh_en!(
                    self.zh(),
                    "重启 MoviePilot（需确认）",
                    "Restart MoviePilot (asks first)"
                ),
            ),
            (
                "redo",
                zh_en!(
                    self.zh(),
                    "重新整理一条整理记录（需确认）",
                    "File a transfer record again (asks first)"
                ),
            ),
        ]
    }

    /// The help's part for admins: the house commands and what a repeat does.
    pub fn admin_help(&self) -> &'static str {
        zh_en!(
            self.zh(),
            "管理员命令（全家共用，窗口内只执行一次）：\n\
             /subscribe_search 搜索全部订阅\n\
             /subscribe_refresh 刷新订阅\n\
             /site_signin 站点签到（每天一次）\n\
             /transfer 整理下载\n\
             /mediaserver_sync 同步媒体库\n\
             /cookiecloud 同步 CookieCloud\n\
             /restart 重启 MoviePilot（需确认）\n\
             /redo <整理记录 ID> 重新整理（需确认）",
            "Admin commands (one run per window for the whole house):\n\
             /subscribe_search search every subscription now\n\
             /subscribe_refresh refresh every site's list\n\
             /site_signin sign in to the sites (once a day)\n\
             /transfer file finished downloads\n\
             /mediaserver_sync sync the media server's library\n\
             /cookiecloud fetch cookies from CookieCloud\n\
             /restart restart MoviePilot (asks first)\n\
             /redo <transfer record id> file it again (asks first)"
        )
    }

    /// The help for someone of `role`: an admin's adds the house commands.
    pub fn help_for(&self, role: crate::vocabulary::Role) -> String {
        if role == crate::vocabulary::Role::Admin {
            format!("{}\n\n{}", self.help(), self.admin_help())
        } else {
            self.help().to_string()
        }
    }

    pub fn help(&self) -> &'static str {
        zh_en!(
            self.zh(),
            "我可以帮你操作 MoviePilot，每条命令只会执行一次：\n\
             /search <片名> 搜索影视\n\
             /subscribe <片名> 订阅（或 tmdb:<id> [S<季>]）\n\
             /best <片名> 洗版：订阅并不断换成更好的版本（或 tmdb:<id> [S<季>]）\n\
             /download <片名> 搜索站点资源并下载（或 tmdb:<id> [S<季>]）\n\
             /subscriptions 查看订阅\n\
             /unsubscribe <订阅 ID> 取消订阅（需确认）\n\
             /searchnow <订阅 ID> 立即搜索订阅\n\
             /downloading 正在下载\n\
             /status [任务编号] 任务状态\n\
             /jobs 最近的任务\n\
             直接发送片名即可搜索；“订阅 X”“搜索 X”“下载 X”“洗版 X”也可以。",
            "I drive MoviePilot for you, and every command takes effect once:\n\
             /search <title> search for a movie or series\n\
             /subscribe <title> subscribe (or tmdb:<id> [S<n>])\n\
             /best <title> subscribe and keep upgrading to a better version (or tmdb:<id> [S<n>])\n\
             /download <title> find a release and download it (or tmdb:<id> [S<n>])\n\
             /subscriptions list subscriptions\n\
             /unsubscribe <subscription id> cancel one (asks first)\n\
             /searchnow <subscription id> search a subscription now\n\
             /downloading active downloads\n\
             /status [job id] how a job is doing\n\
             /jobs your recent jobs\n\
             Plain text is a search."
        )
    }

    /// To the admin chats, once per outage longer than the relay reads back: how many of
    /// MoviePilot's notifications it did not forward, and how to read them.
    pub fn notify_skipped(&self, count: u64, max_pages: u32) -> String {
        match self.locale {
            Locale::Zh => format!(
                "MoviePilot 的通知中断太久：oncebot 最多回读 {max_pages} 页（每页 50 条），约有 {count} 条更早的通知没有转发。请在 MoviePilot 的消息中心查看；之后的通知照常送达。"
            ),
            Locale::En => format!(
                "MoviePilot's notifications were out of reach too long: oncebot reads back at most {max_pages} pages of 50, so about {count} older notifications were not forwarded. See them in MoviePilot's message centre; later ones arrive as usual."
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Telegram shows at most 200 characters of a callback answer; the placeholders add a job
    /// id and a state label (a few dozen characters at most).
    #[test]
    fn tap_answers_fit_telegrams_200_characters() {
        for locale in [Locale::Zh, Locale::En] {
            let t = Texts::new(locale).tap_texts();
            for text in [
                t.expired,
                t.foreign,
                t.unknown,
                t.received,
                t.duplicate,
                t.already,
                t.already_done,
                t.cancelled,
                t.resolved,
                t.settled,
            ] {
                assert!(text.chars().count() <= 150, "{text}");
            }
        }
    }

    /// Every command a user can type is in the menu the dispatcher registers with
    /// setMyCommands, in both languages, unless it is hidden on purpose; the menu names nothing
    /// else, and each entry is one Telegram accepts (a bad one fails the whole list).
    #[test]
    fn every_typed_command_is_in_the_command_menu_or_deliberately_hidden() {
        // `/start` is what Telegram's own Start button sends; the menu offers `/help`, its twin.
        // `releases` and `grab` are never typed (`Command::typed`), so never in the menu.
        const HIDDEN: [Command; 1] = [Command::Start];
        for locale in [Locale::Zh, Locale::En] {
            let texts = Texts::new(locale);
            // Everyone's menu, then an admin's (setMyCommands per admin chat): the house
            // commands are in the second only.
            let mut menu = texts.command_list();
            for (name, _) in &menu {
                let command = Command::from_name(name).unwrap();
                assert!(!command.policy().house_wide, "/{name} in everyone's menu");
            }
            menu.extend(texts.admin_command_list());
            let names: Vec<&str> = menu.iter().map(|(name, _)| *name).collect();
            for command in Command::ALL {
                let shown = command.typed() && !HIDDEN.contains(&command);
                assert_eq!(
                    names.contains(&command.name()),
                    shown,
                    "/{} in the {locale:?} menu: expected {shown}",
                    command.name()
                );
            }
            for (name, description) in &menu {
                assert!(
                    Command::from_name(name).is_some_and(Command::typed),
                    "the {locale:?} menu offers /{name}, which is no typed command"
                );
                assert_eq!(
                    names.iter().filter(|n| *n == name).count(),
                    1,
                    "/{name} twice in the {locale:?} menu"
                );
                assert!(
                    (1..=256).contains(&description.chars().count()),
                    "/{name}: Telegram takes 1 to 256 characters of description"
                );
            }
        }
    }
}
