//! `/restart`: the question naming what a restart cuts off, and how the restart was seen to go.

use super::{About, Listed, Render, Usage};

impl Render {
    /// `/restart`'s question: what a restart cuts off.
    pub fn confirm_restart(&self, running: &[String], ours: usize) -> String {
        let mut cut = Vec::new();
        if !running.is_empty() {
            let names = running.join(zh_en!(self.zh(), "、", ", "));
            cut.push(zh_en!(
                self.zh(),
                ("MoviePilot 正在执行的任务：{names}"),
                ("what MoviePilot is running now: {names}")
            ));
        }
        if ours > 0 {
            cut.push(zh_en!(
                self.zh(),
                ("oncebot 正在执行的 {ours} 个任务（之后会自动核实或重试）"),
                ("{ours} oncebot jobs under way (checked or retried afterwards)")
            ));
        }
        let cut = if cut.is_empty() {
            zh_en!(
                self.zh(),
                "目前没有正在执行的任务。",
                "Nothing is running right now."
            )
            .to_string()
        } else {
            let list = cut.join(zh_en!(self.zh(), "；", "; "));
            zh_en!(self.zh(), ("将被中断：{list}。"), ("It cuts off {list}."))
        };
        zh_en!(
            self.zh(),
            ("确认重启 MoviePilot？重启期间（通常 20–30 秒）MoviePilot 无法访问。{cut}"),
            ("Restart MoviePilot? It does not answer while it restarts (usually 20–30 s). {cut}")
        )
    }

    pub fn restart_back(&self, down_secs: u64) -> String {
        zh_en!(
            self.zh(),
            ("MoviePilot 已重启完成，中断了约 {down_secs} 秒。"),
            ("MoviePilot has restarted and is back; it was gone for about {down_secs} s.")
        )
    }

    /// MoviePilot would not restart (its own words stay in the job's `error`).
    pub fn restart_refused(&self) -> &'static str {
        zh_en!(
            self.zh(),
            "MoviePilot 无法自行重启（只有在 Docker 中且能访问 Docker 时才可以），请手动重启它。",
            "MoviePilot would not restart itself (it can only in Docker, with access to Docker); restart it by hand."
        )
    }

    pub fn restart_not_seen(&self, watched: u64) -> String {
        zh_en!(
            self.zh(),
            ("MoviePilot 接受了重启，但 {watched} 秒内一直正常响应：它没有重启。可以稍后再试。"),
            ("MoviePilot accepted the restart but kept answering for {watched} s: it did not restart. You may try again.")
        )
    }

    pub fn restart_not_back(&self, watched: u64) -> String {
        zh_en!(
            self.zh(),
            ("MoviePilot 重启后 {watched} 秒内仍未恢复，已通知管理员查看。"),
            ("MoviePilot went down for the restart and has not come back within {watched} s; the admins were told to look.")
        )
    }

    pub fn restart_unknown(&self) -> String {
        zh_en!(
            self.zh(),
            "oncebot 在发出重启后中断了，无法确认 MoviePilot 是否重启，已通知管理员核实。不会再次发送重启。",
            "oncebot stopped after it sent the restart, so whether MoviePilot restarted cannot be told; the admins were asked to check. The restart is not sent again."
        )
        .to_string()
    }
}

/// `/restart`: no arguments (typed, it always asks first).
pub const RESTART: About = About {
    usage: Usage::AdminHelp,
    listed: Listed::Admins {
        menu: |zh| {
            zh_en!(
                zh,
                "重启 MoviePilot（需确认）",
                "Restart MoviePilot (asks first)"
            )
        },
        help: |zh| {
            zh_en!(
                zh,
                "/restart 重启 MoviePilot（需确认）",
                "/restart restart MoviePilot (asks first)"
            )
        },
    },
};
