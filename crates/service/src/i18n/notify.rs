//! `/notify` (issue 45): a person's own notices in words: the menu, its buttons, the answer in a
//! group, and the summary of what quiet hours held.

use super::{About, Listed, Render, Usage};
use crate::ledger::QuietSummary;
use crate::vocabulary::{NoticeCategory, NoticeMode, NoticePrefs, QUIET_NIGHT_MAX, QuietHours};

impl Render {
    /// A category as the menu names it.
    pub fn notice_category(&self, category: NoticeCategory) -> &'static str {
        match category {
            NoticeCategory::Download => zh_en!(self.zh(), "下载", "Downloads"),
            NoticeCategory::Transfer => zh_en!(self.zh(), "入库", "Library"),
            NoticeCategory::Subscribe => zh_en!(self.zh(), "订阅", "Subscriptions"),
            NoticeCategory::Site => zh_en!(self.zh(), "站点", "Sites"),
            NoticeCategory::Other => zh_en!(self.zh(), "其它", "Other"),
        }
    }

    fn notice_mode(&self, mode: NoticeMode) -> &'static str {
        match mode {
            NoticeMode::All => zh_en!(self.zh(), "全部", "all"),
            NoticeMode::Mine => zh_en!(self.zh(), "仅我的", "only mine"),
            NoticeMode::Off => zh_en!(self.zh(), "关闭", "off"),
        }
    }

    /// `/notify`'s answer: each category's choice, the quiet hours, and how to change them.
    pub fn notify_menu(&self, prefs: &NoticePrefs, zone: &str, changed: bool) -> String {
        let zh = self.zh();
        let mut out = String::new();
        if changed {
            out.push_str(zh_en!(zh, "已保存。\n\n", "Saved.\n\n"));
        }
        out.push_str(zh_en!(
            zh,
            "你在与我的私聊中收到的 MoviePilot 通知：\n",
            "The MoviePilot notices you get in this private chat:\n"
        ));
        for category in NoticeCategory::ALL {
            let name = self.notice_category(category);
            let mode = self.notice_mode(prefs.mode(category));
            out.push_str(&format!("• {name}: {mode}\n"));
        }
        let quiet = match prefs.quiet {
            Some(q) => zh_en!(
                zh,
                ("免打扰：{q}（{zone}），期间通知静音送达，每晚最多 {QUIET_NIGHT_MAX} 条，其余在结束时汇总成一条。"),
                ("Quiet hours: {q} ({zone}): notices arrive silently, at most {QUIET_NIGHT_MAX} a night; the rest are summed up in one message when they end.")
            ),
            None => zh_en!(zh, "免打扰：未设置。", "Quiet hours: none.").to_string(),
        };
        out.push('\n');
        out.push_str(&quiet);
        out.push_str(zh_en!(
            zh,
            "\n\n“仅我的”= 你自己的请求、订阅和下载的进度卡片与通知。审批、复核和服务器告警不受这些设置影响。点下面的按钮修改；其它免打扰时段：/notify quiet 23:30-07:30",
            "\n\n\"Only mine\" = the cards and notices of your own requests, subscriptions and downloads. Approvals, reviews and server alerts are never affected. Tap a button below to change; other quiet hours: /notify quiet 23:30-07:30"
        ));
        out
    }

    /// A mode's button in a category's row, ✓ on the current one.
    pub fn notify_button(
        &self,
        category: NoticeCategory,
        mode: NoticeMode,
        current: bool,
    ) -> String {
        let mark = if current { "✓ " } else { "" };
        format!(
            "{mark}{}·{}",
            self.notice_category(category),
            self.notice_mode(mode)
        )
    }

    /// A quiet-hours button: set these hours, or (`None`) turn them off.
    pub fn quiet_button(&self, quiet: Option<QuietHours>) -> String {
        match quiet {
            Some(q) => zh_en!(self.zh(), ("免打扰 {q}"), ("Quiet {q}")),
            None => zh_en!(self.zh(), "关闭免打扰", "No quiet hours").to_string(),
        }
    }

    /// `/notify` in a group: the settings are a person's own, for their private chat.
    pub fn notify_private_only(&self) -> String {
        zh_en!(
            self.zh(),
            "通知设置只对你与我的私聊生效：请在私聊中发送 /notify。群里的通知由管理服务器的人设置。",
            "Notice settings apply to your private chat with me: send /notify there. A group's notices are set by whoever runs the server."
        )
        .to_string()
    }

    /// The summary after quiet hours, as quiet_end.lua fills it in.
    pub fn quiet_summary(&self) -> QuietSummary {
        QuietSummary {
            text: zh_en!(
                self.zh(),
                "免打扰期间另有 {n} 条通知没有推送：{types}。可在 MoviePilot 的消息中心查看。",
                "During your quiet hours {n} more notices were not pushed: {types}. MoviePilot's message centre has them."
            )
            .to_string(),
            labels: NoticeCategory::ALL.map(|c| self.notice_category(c).to_string()),
            separator: zh_en!(self.zh(), "，", ", ").to_string(),
        }
    }
}

/// `/notify`: no arguments shows the menu; everyone's.
pub const NOTIFY: About = About {
    usage: Usage::Line(|zh| {
        zh_en!(
            zh,
            "用法：/notify（显示并修改）、/notify 下载 仅我的（类别：下载 入库 订阅 站点 其它；全部 仅我的 关闭）、/notify quiet 23:00-07:30、/notify quiet off",
            "Usage: /notify (show and change), /notify download mine (download transfer subscribe site other; all mine off), /notify quiet 23:00-07:30, /notify quiet off"
        )
    }),
    listed: Listed::Everyone {
        menu: |zh| zh_en!(zh, "我的通知与免打扰", "My notices and quiet hours"),
        help: Some(|zh| {
            zh_en!(
                zh,
                "/notify 选择收哪些通知（全部/仅我的/关闭）和免打扰时段",
                "/notify which notices you get (all / only mine / off) and quiet hours"
            )
        }),
    },
};
