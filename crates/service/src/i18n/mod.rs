//! Every text a user reads, in Chinese (the default, MoviePilot's users) and English, in one
//! idiom: [`zh_en!`]. `Texts` holds the short ones the scripts and the dispatcher use (labels,
//! buttons, tap answers, templates); [`About`] is what a command says about itself (usage, menu,
//! help); [`Render`] (`render.rs`) builds the replies of jobs from their data, in one file per
//! command family.
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

mod access;
mod auto;
mod cards;
mod claim;
mod downloading;
mod help;
mod house;
mod library;
mod notify;
mod outcomes;
mod redis_health;
mod redo;
mod releases;
mod render;
mod request_lists;
mod requests;
mod restart;
mod search;
mod status;
mod subscribe;
mod subscriptions;
mod users;
mod version;
mod whoami;

pub use auto::AUTO;
pub use cards::SubscriptionFacts;
pub use downloading::DOWNLOADING;
pub use help::{Commands, HELP, START};
pub use house::{
    COOKIECLOUD, MEDIASERVER_SYNC, SITE_SIGNIN, SUBSCRIBE_REFRESH, SUBSCRIBE_SEARCH, TRANSFER,
    names as house_names,
};
pub use notify::NOTIFY;

pub use redo::REDO;
pub use releases::{DOWNLOAD, GRAB, RELEASES, release_args};
pub use render::Render;
pub use request_lists::{MINE, Mine, REQUESTS};
pub use requests::QUOTA;
pub use restart::RESTART;
pub use search::{SEARCH, subscribe_args};
pub use status::{JOBS, STATUS};
pub use subscribe::{BEST, SUBSCRIBE};
pub use subscriptions::{SEARCHNOW, SUBSCRIPTIONS, UNSUBSCRIBE, Whose};
pub use users::{REVOKE, USERS};
pub use version::VERSION;
pub use whoami::WHOAMI;

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

/// One text in both languages, chosen where it is read, in the one idiom:
/// `|zh| zh_en!(zh, "中文", "English")`.
pub type Words = fn(bool) -> &'static str;

/// What a command says about itself, in both languages: its usage (the answer to arguments it
/// cannot use) and where it is listed (Telegram's command menu and /help). Every command has one
/// (`commands::Command::about`, a match without a fallback arm).
#[derive(Clone, Copy)]
pub struct About {
    pub usage: Usage,
    pub listed: Listed,
}

/// How a command is called, for the answer to bad arguments.
#[derive(Clone, Copy)]
pub enum Usage {
    /// A line of its own: "Usage: /search <title>".
    Line(Words),
    /// It takes no arguments (any are dropped): the help is its usage.
    Help,
    /// An admin's command without arguments: the admins' help.
    AdminHelp,
}

/// Where a command is listed.
#[derive(Clone, Copy)]
pub enum Listed {
    /// In everyone's menu (setMyCommands: `menu`, 1 to 256 characters) and, with a `help` line,
    /// in /help (`/help` itself has none).
    Everyone { menu: Words, help: Option<Words> },
    /// In the menu of an admin's chat and the admins' part of /help: the house commands.
    Admins { menu: Words, help: Words },
    /// In no menu: `/start` (Telegram's own Start button sends it; the menu offers its twin
    /// `/help`) and the jobs only buttons make.
    Hidden,
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

    pub(super) fn zh(&self) -> bool {
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
            upgrading: self.upgrading(),
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
}
