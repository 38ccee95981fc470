//! How a job ended, in the user's words: failed (for which reason), retried, waiting for
//! MoviePilot to take oncebot's credentials again, held for a person, settled by one.

use super::Render;
use crate::untrusted::clean_line;
use crate::vocabulary::{ErrorKind, Resolution};

impl Render {
    /// What went wrong, in one plain sentence per error kind (`MpError::kind`). The details
    /// (HTTP statuses, paths, OS errors, setting names) stay in the log and `oncebot jobs show`;
    /// a `declined` error's text is already the user's (see [`Render::failed`]).
    pub fn error_sentence(&self, kind: ErrorKind) -> &'static str {
        match kind {
            ErrorKind::Transient => zh_en!(
                self.zh(),
                "MoviePilot 暂时无法连接或暂时出错",
                "MoviePilot cannot be reached or had a problem for now"
            ),
            ErrorKind::Uncertain => zh_en!(
                self.zh(),
                "MoviePilot 没有及时回应，结果未知",
                "MoviePilot did not answer in time, so the outcome is unknown"
            ),
            ErrorKind::Credentials => zh_en!(
                self.zh(),
                "MoviePilot 暂时不接受机器人的登录，管理员已收到通知",
                "MoviePilot does not accept the bot's login for now; its administrators have been told"
            ),
            ErrorKind::Permanent | ErrorKind::Declined => zh_en!(
                self.zh(),
                "MoviePilot 没有接受这个请求",
                "MoviePilot did not accept this request"
            ),
        }
    }

    /// A job that ended `failed`. `declined` is the user's own reason (no such media, no such
    /// season); any other failure is said by its kind only.
    pub fn failed(&self, job: u64, kind: ErrorKind, declined: Option<&str>) -> String {
        match (declined, self.zh()) {
            (Some(why), true) => format!("任务 #{job} 未完成：{why}"),
            (Some(why), false) => format!("Job #{job} did not go through: {why}"),
            (None, true) => format!(
                "任务 #{job} 未完成：{}。请稍后重新发送命令；如果一直这样，请联系管理员。",
                self.error_sentence(kind)
            ),
            (None, false) => format!(
                "Job #{job} did not go through: {}. Please send the command again later; if it keeps happening, tell the bot's administrator.",
                self.error_sentence(kind)
            ),
        }
    }

    /// A job that used up its attempts.
    pub fn gave_up(&self, job: u64, kind: ErrorKind, attempts: u32) -> String {
        zh_en!(
            self.zh(),
            (
                "任务 #{job} 尝试 {attempts} 次后仍未完成：{}。请稍后重新发送命令。",
                self.error_sentence(kind)
            ),
            (
                "Job #{job} did not go through after {attempts} attempts: {}. Please send the command again later.",
                self.error_sentence(kind)
            )
        )
    }

    pub fn retrying(&self, job: u64, kind: ErrorKind, secs: u64, attempt: u32, max: u32) -> String {
        let check = kind == ErrorKind::Uncertain;
        match (self.zh(), check) {
            (true, false) => format!(
                "{}，任务 #{job} 将在 {secs} 秒后自动重试（第 {attempt}/{max} 次）。",
                self.error_sentence(kind)
            ),
            (true, true) => format!(
                "{}。任务 #{job} 将在 {secs} 秒后先核实结果再继续，不会重复执行（第 {attempt}/{max} 次）。",
                self.error_sentence(kind)
            ),
            (false, false) => format!(
                "{}; job #{job} will be retried in {secs} s (attempt {attempt} of {max}).",
                self.error_sentence(kind)
            ),
            (false, true) => format!(
                "{}. In {secs} s job #{job} will first check what happened, so nothing is done twice (attempt {attempt} of {max}).",
                self.error_sentence(kind)
            ),
        }
    }

    /// Sent once to a job's chat when it starts waiting for MoviePilot to accept the bot's
    /// credentials again.
    pub fn waiting_for_credentials(&self, job: u64) -> String {
        zh_en!(
            self.zh(),
            (
                "{}。任务 #{job} 会保留，恢复后自动继续，无需重新发送。",
                self.error_sentence(ErrorKind::Credentials)
            ),
            (
                "{}. Job #{job} is kept and will go on by itself once that is fixed; no need to send it again.",
                self.error_sentence(ErrorKind::Credentials)
            )
        )
    }

    /// The admin chats' notice that MoviePilot refuses the credentials (told once while it
    /// lasts). For operators: `detail` may name the setting to fix, never a secret.
    pub fn credentials_notice(&self, detail: &str, wait_secs: u64) -> String {
        let detail = clean_line(detail);
        zh_en!(
            self.zh(),
            ("MoviePilot 拒绝了 oncebot 的登录凭据，任务正在等待（最多 {wait_secs} 秒，不消耗重试次数）。\n{detail}\n修正后任务会自动继续。"),
            ("MoviePilot refuses oncebot's credentials; jobs are waiting (up to {wait_secs} s, without using their attempts).\n{detail}\nThey go on by themselves once this is fixed.")
        )
    }

    /// Sent when an outcome is uncertain and cannot be verified; "{job}" is left for claim.lua.
    pub fn held(&self, job: Option<u64>) -> String {
        let job = job.map_or_else(|| "{job}".to_string(), |j| j.to_string());
        zh_en!(
            self.zh(),
            ("任务 #{job} 的结果无法确认。为避免重复操作，它不会自动重试，已转人工处理。"),
            ("Job #{job}'s outcome is uncertain. So that nothing happens twice it is not retried automatically; a person will settle it.")
        )
    }

    /// Sent by claim.lua when a read-only job lost its worker too often; "{job}" is filled there.
    pub fn crashed_too_often(&self) -> String {
        zh_en!(self.zh(), "任务 #{job} 多次执行中断，已停止重试。请稍后重新发送命令。", "Job #{job} was interrupted too many times and will not be retried. Please send the command again later.")
        .into()
    }

    pub fn resolved(&self, decision: Resolution) -> String {
        self.texts.resolved(decision).into()
    }
}
