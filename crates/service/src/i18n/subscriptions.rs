//! `/subscriptions`, `/unsubscribe` (its question and its outcomes) and `/searchnow`.

use super::{About, Listed, Render, Usage};
use crate::moviepilot::Subscription;
use crate::untrusted::clean_line;

/// Whose subscriptions a `/subscriptions` reply lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whose {
    /// The asker's own (`GET /api/v1/subscribe/user/{username}`).
    Own,
    /// Every user's, each with its owner (`/subscriptions all`).
    Everyone,
    /// Every one, for an asker without a MoviePilot name (as before users were mapped).
    Unsplit,
}

impl Render {
    pub fn subscriptions(&self, subs: &[Subscription], whose: Whose) -> String {
        if subs.is_empty() {
            return match whose {
                Whose::Own => zh_en!(self.zh(), "你还没有订阅。", "You have no subscriptions."),
                Whose::Everyone | Whose::Unsplit => {
                    zh_en!(self.zh(), "当前没有订阅。", "No subscriptions.")
                }
            }
            .into();
        }
        let mut out = String::from(match whose {
            Whose::Own => zh_en!(self.zh(), "你的订阅：\n", "Your subscriptions:\n"),
            Whose::Everyone => zh_en!(self.zh(), "全部订阅：\n", "All subscriptions:\n"),
            Whose::Unsplit => zh_en!(self.zh(), "当前订阅：\n", "Subscriptions:\n"),
        });
        for s in subs {
            let year = s
                .year
                .as_deref()
                .map(|y| format!(" ({})", clean_line(y)))
                .unwrap_or_default();
            let lack = match (s.lack_episode, self.zh()) {
                (Some(n), true) if n > 0 => format!(" · 缺 {n} 集"),
                (Some(n), false) if n > 0 => format!(" · {n} episodes missing"),
                _ => String::new(),
            };
            let owner = match (whose, s.username.as_deref()) {
                (Whose::Everyone, Some(name)) if !name.is_empty() => {
                    format!(" · {}", clean_line(name))
                }
                _ => String::new(),
            };
            out.push_str(&format!(
                "#{} {}{year}{}{lack}{owner}\n",
                s.id,
                clean_line(&s.name),
                self.season(s.season)
            ));
        }
        out.trim_end().to_string()
    }

    pub fn unsubscribed(&self, id: u64, name: &str, season: Option<u32>) -> String {
        let name = clean_line(name);
        let s = self.season(season);
        zh_en!(
            self.zh(),
            ("已取消订阅 #{id}「{name}」{s}。"),
            ("Subscription #{id} to \"{name}\"{s} cancelled.")
        )
    }

    /// A `user` asked to cancel a subscription another MoviePilot user owns.
    pub fn not_your_subscription(&self, id: u64, owner: &str) -> String {
        let owner = clean_line(owner);
        zh_en!(
            self.zh(),
            ("订阅 #{id} 属于 {owner}：只有管理员可以取消别人的订阅。"),
            ("Subscription #{id} is {owner}'s: only an admin can cancel someone else's subscription.")
        )
    }

    /// Said to an admin acting on someone else's subscription: whose it is.
    pub fn owned_by(&self, owner: &str) -> String {
        let owner = clean_line(owner);
        zh_en!(
            self.zh(),
            ("（这是 {owner} 的订阅。）"),
            (" (It is {owner}'s subscription.)")
        )
    }

    /// The question under Confirm / Cancel, naming what would be deleted.
    pub fn confirm_unsubscribe(&self, id: u64, name: &str, season: Option<u32>) -> String {
        let name = clean_line(name);
        let s = self.season(season);
        zh_en!(
            self.zh(),
            ("确认取消订阅 #{id}「{name}」{s}？此操作不可撤销。"),
            ("Cancel subscription #{id} to \"{name}\"{s}? This cannot be undone.")
        )
    }

    pub fn no_such_subscription(&self, id: u64) -> String {
        zh_en!(
            self.zh(),
            ("没有找到订阅 #{id}。发送 /subscriptions 查看现有订阅及其 ID。"),
            ("There is no subscription #{id}. Send /subscriptions to see them with their ids.")
        )
    }

    /// A confirmed delete found the subscription already gone (deleted meanwhile).
    pub fn subscription_gone(&self, id: u64) -> String {
        zh_en!(
            self.zh(),
            ("订阅 #{id} 已经不存在，无需取消。"),
            ("Subscription #{id} is already gone; nothing to cancel.")
        )
    }

    /// A delete interrupted by a crash, found done when it was checked.
    pub fn unsubscribe_verified(&self, id: u64) -> String {
        zh_en!(
            self.zh(),
            ("已向 MoviePilot 核实：订阅 #{id} 已取消，没有重复操作。"),
            ("MoviePilot confirms subscription #{id} is cancelled; nothing was repeated.")
        )
    }

    /// The id now names another subscription (MoviePilot reuses ids): nothing was deleted.
    pub fn subscription_replaced(&self, id: u64, now: &str) -> String {
        let now = clean_line(now);
        zh_en!(
            self.zh(),
            ("订阅 #{id} 现在是另一个订阅「{now}」，原来的订阅已经不在了。为安全起见没有取消任何订阅；如需取消「{now}」，请重新发送 /unsubscribe {id}。"),
            ("Subscription #{id} is now another one (\"{now}\"); the one you confirmed is gone. To be safe nothing was cancelled; to cancel \"{now}\", send /unsubscribe {id} again.")
        )
    }

    pub fn search_now(&self, id: u64) -> String {
        zh_en!(
            self.zh(),
            ("已请求 MoviePilot 立即搜索订阅 #{id}（MoviePilot 不会告知是否找到资源）。"),
            ("Asked MoviePilot to search subscription #{id} now (it does not say whether anything was found).")
        )
    }
}

/// `/subscriptions`: no arguments but `all`.
pub const SUBSCRIPTIONS: About = About {
    usage: Usage::Help,
    listed: Listed::Everyone {
        menu: |zh| zh_en!(zh, "查看订阅", "List subscriptions"),
        help: Some(|zh| {
            zh_en!(
                zh,
                "/subscriptions 查看订阅",
                "/subscriptions list subscriptions"
            )
        }),
    },
};

/// `/unsubscribe`.
pub const UNSUBSCRIBE: About = About {
    usage: Usage::Line(|zh| {
        zh_en!(
            zh,
            "用法：/unsubscribe <订阅 ID>（/subscriptions 可查看 ID）",
            "Usage: /unsubscribe <subscription id> (/subscriptions lists them)"
        )
    }),
    listed: Listed::Everyone {
        menu: |zh| zh_en!(zh, "取消订阅", "Cancel a subscription"),
        help: Some(|zh| {
            zh_en!(
                zh,
                "/unsubscribe <订阅 ID> 取消订阅（需确认）",
                "/unsubscribe <subscription id> cancel one (asks first)"
            )
        }),
    },
};

/// `/searchnow`.
pub const SEARCHNOW: About = About {
    usage: Usage::Line(|zh| {
        zh_en!(
            zh,
            "用法：/searchnow <订阅 ID>",
            "Usage: /searchnow <subscription id>"
        )
    }),
    listed: Listed::Everyone {
        menu: |zh| zh_en!(zh, "立即搜索订阅", "Search a subscription now"),
        help: Some(|zh| {
            zh_en!(
                zh,
                "/searchnow <订阅 ID> 立即搜索订阅",
                "/searchnow <subscription id> search a subscription now"
            )
        }),
    },
};
