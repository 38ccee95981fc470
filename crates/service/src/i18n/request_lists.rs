//! The lists of media requests (issue 44): `/requests` (an admin's: the pending ones, each with
//! its buttons) and `/mine` (anyone's: their own, each with its state in words, a pending one
//! with Withdraw). What a request says of itself (`what`, `who`) was written by the worker or
//! the tap that made it; it is cleaned again here, line by line, as everything shown is.

use std::ops::Range;

use super::{About, Listed, Render, Usage};
use crate::ledger::{Card, StoredRequest};
use crate::untrusted::clean_line;
use crate::vocabulary::CardState;

/// One line of `/mine`: a media request, or a live card (issue 45) with the request it
/// carries on, if an approval made its job (then that request has no line of its own).
#[derive(Debug, Clone, Copy)]
pub enum Mine<'a> {
    Request(&'a StoredRequest),
    Card(&'a Card, Option<u64>),
}

impl Render {
    /// `/requests` with nothing pending.
    pub fn no_pending_requests(&self) -> String {
        zh_en!(self.zh(), "没有等待批准的请求。", "No pending requests.").to_string()
    }

    /// `/mine` for someone with no request and no card kept.
    pub fn no_requests_of_mine(&self) -> String {
        zh_en!(
            self.zh(),
            "你没有请求或卡片（处理过的请求保留 7 天，结束的卡片 30 天）。",
            "You have no requests or cards (decided requests are kept for 7 days, ended cards for 30)."
        )
        .to_string()
    }

    /// One page of `/requests`: the pending requests in `range`, oldest first, under a header
    /// (`more`: there are more than the list shows, the oldest are).
    pub fn pending_requests_page(
        &self,
        all: &[StoredRequest],
        range: Range<usize>,
        more: bool,
    ) -> String {
        let n = all.len();
        let mut out = match (self.zh(), more) {
            (true, false) => format!("等待批准的请求（{n} 个，最早的在前）："),
            (true, true) => format!("等待批准的请求（最早的 {n} 个）："),
            (false, false) => format!("Pending requests ({n}), oldest first:"),
            (false, true) => format!("Pending requests (the {n} oldest):"),
        };
        for r in &all[range] {
            out.push_str(&format!(
                "\n\n📝 #{} · {}\n{}",
                r.id,
                clean_line(&r.who),
                what(r)
            ));
        }
        out
    }

    /// One page of `/mine`: the asker's requests and live cards in `range`, newest first, each
    /// with its state.
    pub fn my_requests_page(&self, all: &[Mine<'_>], range: Range<usize>, now: i64) -> String {
        let n = all.len();
        let mut out = zh_en!(
            self.zh(),
            ("你的请求和卡片（{n} 个，最新的在前）："),
            ("Your requests and cards ({n}), newest first:")
        );
        for item in &all[range] {
            match item {
                Mine::Request(r) => {
                    let state = self.request_state(r, now);
                    out.push_str(&format!("\n\n#{} · {state}\n{}", r.id, what(r)));
                }
                Mine::Card(c, request) => {
                    let state = self.card_state(c.state, c.number("percent"));
                    let job = zh_en!(self.zh(), "任务", "job");
                    let title = self.card_title(c);
                    let asked = match request {
                        Some(r) => zh_en!(
                            self.zh(),
                            ("（请求 #{r} 已批准）"),
                            (" (request #{r}, approved)")
                        ),
                        None => String::new(),
                    };
                    out.push_str(&format!("\n\n🃏 {job} #{} · {state}{asked}\n{title}", c.id));
                }
            }
        }
        out
    }

    /// A card's line under its state: what it follows and its title, cleaned and bounded.
    pub fn card_title(&self, c: &Card) -> String {
        let kind = match c.text("kind") {
            "subscription" => zh_en!(self.zh(), "订阅", "Subscription"),
            _ => zh_en!(self.zh(), "下载", "Download"),
        };
        let title: String = clean_line(c.text("title")).chars().take(200).collect();
        zh_en!(self.zh(), ("{kind}：{title}"), ("{kind}: {title}"))
    }

    /// A live card's state in a few words (`/mine`); a download's percent when it has one.
    pub fn card_state(&self, state: CardState, percent: Option<u32>) -> String {
        let zh = self.zh();
        match state {
            CardState::Started => zh_en!(zh, "⏳ 已开始下载", "⏳ download started").into(),
            CardState::Downloading => match percent {
                Some(p) => zh_en!(zh, ("⬇️ 下载中 {p}%"), ("⬇️ downloading {p}%")),
                None => zh_en!(zh, "⬇️ 下载中", "⬇️ downloading").into(),
            },
            CardState::Downloaded => zh_en!(
                zh,
                "✅ 已下载，等待整理",
                "✅ downloaded, waiting to be filed"
            )
            .into(),
            CardState::InLibrary => zh_en!(zh, "🎬 已入库", "🎬 in the library").into(),
            CardState::TransferFailed => zh_en!(zh, "⚠️ 入库失败", "⚠️ filing failed").into(),
            CardState::Vanished => {
                zh_en!(zh, "❔ 已不在下载器中", "❔ no longer in the downloader").into()
            }
            CardState::Subscribed => zh_en!(zh, "📺 已订阅", "📺 subscribed").into(),
            CardState::Completed => zh_en!(zh, "✅ 订阅完成", "✅ subscription complete").into(),
            CardState::Cancelled => zh_en!(zh, "✖️ 订阅已取消", "✖️ subscription cancelled").into(),
            CardState::Expired => zh_en!(zh, "⏸ 不再跟进", "⏸ no longer followed").into(),
        }
    }

    /// A `/mine` card's Show button: sends the card again.
    pub fn show_card_button(&self, job: u64) -> String {
        zh_en!(self.zh(), ("显示任务 #{job}"), ("Show job #{job}"))
    }

    /// A request's state in words: waiting, approved (by whom, the job), declined (by whom),
    /// expired, withdrawn.
    pub fn request_state(&self, r: &StoredRequest, now: i64) -> String {
        let zh = self.zh();
        let who = clean_line(&r.decided_by_name);
        let job = r.job_id.map(|j| j.to_string()).unwrap_or_default();
        match (r.state.as_str(), r.decision.as_str()) {
            ("pending", _) if r.expires_at > now => {
                zh_en!(zh, "⏳ 等待批准", "⏳ waiting for approval").into()
            }
            ("pending" | "expired", _) => {
                zh_en!(zh, "⌛ 已过期，没有人处理", "⌛ expired without a decision").into()
            }
            ("approved", "best") => zh_en!(
                zh,
                ("✅ 已由 {who} 批准（洗版），任务 #{job}"),
                ("✅ approved as best version by {who}, job #{job}")
            ),
            ("approved", _) => zh_en!(
                zh,
                ("✅ 已由 {who} 批准，任务 #{job}"),
                ("✅ approved by {who}, job #{job}")
            ),
            ("declined", "gone") => zh_en!(
                zh,
                "❌ 已取消：当时你不能使用机器人",
                "❌ cancelled: you had no access then"
            )
            .into(),
            ("declined", _) => zh_en!(zh, ("❌ 已由 {who} 拒绝"), ("❌ declined by {who}")),
            ("withdrawn", _) => zh_en!(zh, "↩️ 已撤回", "↩️ withdrawn").into(),
            (other, _) => clean_line(other).into_owned(),
        }
    }

    /// A list's button for request `id`: `decision` is a card's (`approve`, `best`,
    /// `decline`) or `withdraw`.
    pub fn listed_request_button(&self, decision: &str, id: u64) -> String {
        let zh = self.zh();
        let word = match decision {
            "approve" => zh_en!(zh, "批准", "Approve"),
            "best" => zh_en!(zh, "批准并洗版", "Approve as best"),
            "decline" => zh_en!(zh, "拒绝", "Decline"),
            _ => zh_en!(zh, "撤回", "Withdraw"),
        };
        format!("{word} #{id}")
    }
}

/// A request's description, each line cleaned.
fn what(r: &StoredRequest) -> String {
    r.what
        .lines()
        .map(clean_line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// `/requests`: no arguments; an admin's.
pub const REQUESTS: About = About {
    usage: Usage::AdminHelp,
    listed: Listed::Admins {
        menu: |zh| zh_en!(zh, "等待批准的媒体请求", "Pending media requests"),
        help: |zh| {
            zh_en!(
                zh,
                "/requests 等待批准的媒体请求（逐个批准或拒绝）",
                "/requests pending media requests, each with Approve / Decline"
            )
        },
    },
};

/// `/mine`: no arguments; anyone's (a requester's requests).
pub const MINE: About = About {
    usage: Usage::Help,
    listed: Listed::Everyone {
        menu: |zh| zh_en!(zh, "我的请求和卡片", "My requests and cards"),
        help: Some(|zh| {
            zh_en!(
                zh,
                "/mine 我的媒体请求和卡片及其状态（等待中的可以撤回，卡片可以再显示）",
                "/mine your media requests and cards, each with its state (withdraw a pending one, show a card again)"
            )
        }),
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Locale;

    fn request(state: &str, decision: &str) -> StoredRequest {
        StoredRequest {
            id: 7,
            state: state.into(),
            what: "Subscription: Dune (2021)\nNot in the library".into(),
            who: "carol (1003)".into(),
            expires_at: 2_000,
            decision: decision.into(),
            decided_by_name: "alice (1001)".into(),
            job_id: (state == "approved").then_some(9),
            ..StoredRequest::default()
        }
    }

    /// Every state in words, in both languages; a pending request past its time is expired.
    #[test]
    fn every_state_has_its_words() {
        let (en, zh) = (Render::new(Locale::En), Render::new(Locale::Zh));
        let cases = [
            ("pending", "", "⏳ waiting for approval"),
            ("approved", "approve", "✅ approved by alice (1001), job #9"),
            (
                "approved",
                "best",
                "✅ approved as best version by alice (1001), job #9",
            ),
            ("declined", "decline", "❌ declined by alice (1001)"),
            ("declined", "gone", "❌ cancelled: you had no access then"),
            ("expired", "", "⌛ expired without a decision"),
            ("withdrawn", "", "↩️ withdrawn"),
        ];
        for (state, decision, words) in cases {
            let r = request(state, decision);
            assert_eq!(en.request_state(&r, 1_000), words);
            assert_ne!(zh.request_state(&r, 1_000), words);
        }
        let late = request("pending", "");
        assert_eq!(
            en.request_state(&late, 3_000),
            "⌛ expired without a decision"
        );
        let pending = request("pending", "");
        let page = en.my_requests_page(&[Mine::Request(&pending)], 0..1, 1_000);
        assert_eq!(
            page,
            "Your requests and cards (1), newest first:\n\n#7 · ⏳ waiting for approval\n\
             Subscription: Dune (2021)\nNot in the library"
        );
        let page = en.pending_requests_page(&[request("pending", "")], 0..1, false);
        assert!(
            page.contains("📝 #7 · carol (1003)\nSubscription: Dune"),
            "{page}"
        );
        assert_eq!(en.listed_request_button("best", 7), "Approve as best #7");
        assert_eq!(en.show_card_button(9), "Show job #9");
        assert_eq!(zh.show_card_button(9), "显示任务 #9");
    }

    /// A card's line: its job, its state in words (a download's percent), what it follows and
    /// its title, cleaned; every state has words in both languages, distinct in each.
    #[test]
    fn a_cards_line_says_its_state_in_words() {
        let (en, zh) = (Render::new(Locale::En), Render::new(Locale::Zh));
        let card = Card {
            id: 9,
            state: CardState::Downloading,
            seq: 2,
            chat_id: 1003,
            fields: [
                ("kind", "download"),
                ("title", "Dune (2021)\u{202e}"),
                ("percent", "37"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        };
        let pending = request("pending", "");
        let all = [Mine::Card(&card, None), Mine::Request(&pending)];
        assert_eq!(
            en.my_requests_page(&all, 0..2, 1_000),
            "Your requests and cards (2), newest first:\n\n\
             🃏 job #9 · ⬇️ downloading 37%\nDownload: Dune (2021)\n\n\
             #7 · ⏳ waiting for approval\nSubscription: Dune (2021)\nNot in the library"
        );
        assert!(
            zh.my_requests_page(&all, 0..1, 1_000)
                .contains("🃏 任务 #9 · ⬇️ 下载中 37%\n下载：Dune (2021)")
        );
        for render in [&en, &zh] {
            let words: std::collections::BTreeSet<String> = CardState::ALL
                .into_iter()
                .map(|s| render.card_state(s, None))
                .collect();
            assert_eq!(words.len(), CardState::ALL.len(), "{words:?}");
        }
        assert_ne!(
            en.card_state(CardState::InLibrary, None),
            zh.card_state(CardState::InLibrary, None)
        );
        assert_eq!(zh.listed_request_button("withdraw", 7), "撤回 #7");
    }
}
