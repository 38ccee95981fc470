//! The worker's replies, in the configured locale. Pure functions: no I/O.
//!
//! Only the fields a user needs are shown: never raw MoviePilot answers (torrent results carry
//! site cookies).

use crate::config::Locale;
use crate::i18n::Texts;
use crate::ledger::{Job, JobState};
use crate::moviepilot::{Download, MediaItem, MediaKind, Subscription};
use crate::telegram::keyboard::button_text;

/// What `/subscribe` needs for a search result: `tmdb:<id>` for a movie, `tmdb:<id> S<n>` for a
/// series with exactly one known season, `tmdb:<id> tv` (choose the season) for any other series.
/// `None` for results without a TMDB id, which cannot be subscribed by id.
pub fn subscribe_args(item: &MediaItem) -> Option<String> {
    let id = item.tmdb_id?;
    Some(match (item.kind, item.season_numbers.as_slice()) {
        (MediaKind::Movie, _) => format!("tmdb:{id}"),
        (MediaKind::Tv, [only]) => format!("tmdb:{id} S{only}"),
        (MediaKind::Tv, _) => format!("tmdb:{id} tv"),
    })
}

/// Renders replies for one locale.
#[derive(Debug, Clone, Copy)]
pub struct Render {
    texts: Texts,
}

impl Render {
    pub fn new(locale: Locale) -> Self {
        Self {
            texts: Texts::new(locale),
        }
    }

    fn zh(&self) -> bool {
        self.texts.locale == Locale::Zh
    }

    fn kind(&self, kind: Option<MediaKind>) -> &'static str {
        match (kind, self.zh()) {
            (Some(MediaKind::Movie), true) => "电影",
            (Some(MediaKind::Tv), true) => "电视剧",
            (Some(MediaKind::Movie), false) => "movie",
            (Some(MediaKind::Tv), false) => "series",
            (None, _) => "",
        }
    }

    fn season(&self, season: Option<u32>) -> String {
        match (season, self.zh()) {
            (Some(n), true) => format!(" 第 {n} 季"),
            (Some(n), false) => format!(" season {n}"),
            (None, _) => String::new(),
        }
    }

    pub fn search_results(&self, title: &str, items: &[MediaItem], choose: bool) -> String {
        if items.is_empty() {
            return if self.zh() {
                format!("没有找到「{title}」。")
            } else {
                format!("Nothing found for \"{title}\".")
            };
        }
        let mut out = match (choose, self.zh()) {
            (true, true) => format!(
                "「{title}」有 {} 个结果，请选择要订阅的条目：\n",
                items.len()
            ),
            (false, true) => format!("「{title}」的搜索结果（{} 个）：\n", items.len()),
            (true, false) => format!(
                "{} results for \"{title}\"; choose one to subscribe:\n",
                items.len()
            ),
            (false, false) => format!("{} results for \"{title}\":\n", items.len()),
        };
        for (i, item) in items.iter().take(8).enumerate() {
            let year = item
                .year
                .as_deref()
                .map(|y| format!(" ({y})"))
                .unwrap_or_default();
            out.push_str(&format!(
                "{}. {}{year} · {}",
                i + 1,
                item.title,
                self.kind(Some(item.kind))
            ));
            if let Some(args) = subscribe_args(item) {
                out.push_str(&format!("\n   /subscribe {args}"));
            }
            out.push('\n');
        }
        out.trim_end().to_string()
    }

    /// The text of the Subscribe button of result number `n` (1-based).
    pub fn subscribe_button(&self, n: usize, item: &MediaItem) -> String {
        let year = item
            .year
            .as_deref()
            .map(|y| format!(" ({y})"))
            .unwrap_or_default();
        let text = if self.zh() {
            format!("{n}. 订阅 {}{year}", item.title)
        } else {
            format!("{n}. Subscribe {}{year}", item.title)
        };
        button_text(&text, 40)
    }

    /// The question above the season buttons of a series.
    pub fn choose_season(&self, name: &str, seasons: usize) -> String {
        if self.zh() {
            format!("「{name}」共 {seasons} 季，请选择要订阅的季：")
        } else {
            format!("\"{name}\" has {seasons} seasons; choose the one to subscribe to:")
        }
    }

    /// A season button's text.
    pub fn season_button(&self, season: u32) -> String {
        if self.zh() {
            format!("第 {season} 季")
        } else {
            format!("Season {season}")
        }
    }

    pub fn cancel_button(&self) -> &'static str {
        self.texts.cancel_button()
    }

    pub fn subscribed(&self, name: &str, season: Option<u32>, id: u64) -> String {
        let s = self.season(season);
        if self.zh() {
            format!("已订阅「{name}」{s}（订阅 #{id}）。")
        } else {
            format!("Subscribed to \"{name}\"{s} (subscription #{id}).")
        }
    }

    pub fn already_subscribed(&self, name: &str, season: Option<u32>, id: u64) -> String {
        let s = self.season(season);
        if self.zh() {
            format!("「{name}」{s}已在订阅中（订阅 #{id}），没有重复添加。")
        } else {
            format!("\"{name}\"{s} is already subscribed (subscription #{id}); nothing added.")
        }
    }

    pub fn subscription_verified(
        &self,
        job: u64,
        name: &str,
        season: Option<u32>,
        id: u64,
    ) -> String {
        let s = self.season(season);
        if self.zh() {
            format!(
                "任务 #{job} 执行中被中断；已向 MoviePilot 核实：「{name}」{s}的订阅 #{id} 已存在，没有重复添加。"
            )
        } else {
            format!(
                "Job #{job} was interrupted; MoviePilot confirms subscription #{id} to \"{name}\"{s} exists, so nothing was repeated."
            )
        }
    }

    pub fn media_not_found(&self, tmdb_id: u64) -> String {
        if self.zh() {
            format!("MoviePilot 未识别到媒体信息 tmdb:{tmdb_id}")
        } else {
            format!("MoviePilot does not know tmdb:{tmdb_id}")
        }
    }

    pub fn no_such_season(&self, name: &str, season: u32) -> String {
        if self.zh() {
            format!("「{name}」没有第 {season} 季")
        } else {
            format!("\"{name}\" has no season {season}")
        }
    }

    pub fn subscriptions(&self, subs: &[Subscription]) -> String {
        if subs.is_empty() {
            return self
                .texts_pick("当前没有订阅。", "No subscriptions.")
                .into();
        }
        let mut out = String::from(self.texts_pick("当前订阅：\n", "Subscriptions:\n"));
        for s in subs {
            let year = s
                .year
                .as_deref()
                .map(|y| format!(" ({y})"))
                .unwrap_or_default();
            let lack = match (s.lack_episode, self.zh()) {
                (Some(n), true) if n > 0 => format!(" · 缺 {n} 集"),
                (Some(n), false) if n > 0 => format!(" · {n} episodes missing"),
                _ => String::new(),
            };
            out.push_str(&format!(
                "#{} {}{year}{}{lack}\n",
                s.id,
                s.name,
                self.season(s.season)
            ));
        }
        out.trim_end().to_string()
    }

    pub fn unsubscribed(&self, id: u64) -> String {
        if self.zh() {
            format!("已取消订阅 #{id}。")
        } else {
            format!("Subscription #{id} cancelled.")
        }
    }

    pub fn search_now(&self, id: u64) -> String {
        if self.zh() {
            format!("已请求 MoviePilot 立即搜索订阅 #{id}（MoviePilot 不会告知是否找到资源）。")
        } else {
            format!(
                "Asked MoviePilot to search subscription #{id} now (it does not say whether anything was found)."
            )
        }
    }

    pub fn downloading(&self, downloads: &[Download]) -> String {
        if downloads.is_empty() {
            return self
                .texts_pick("当前没有正在下载的任务。", "Nothing is downloading.")
                .into();
        }
        let mut out = String::from(self.texts_pick("正在下载：\n", "Downloading:\n"));
        for d in downloads {
            let se = d
                .season_episode
                .as_deref()
                .map(|s| format!(" {s}"))
                .unwrap_or_default();
            let progress = d
                .progress
                .map(|p| format!(" · {p:.0}%"))
                .unwrap_or_default();
            out.push_str(&format!("{}{se}{progress}\n", d.title));
        }
        out.trim_end().to_string()
    }

    fn state_label(&self, status: &str) -> String {
        status
            .parse::<JobState>()
            .map(|s| self.texts.state_label(s).to_string())
            .unwrap_or_else(|_| status.to_string())
    }

    pub fn job_status(&self, j: &Job) -> String {
        let state = self.state_label(&j.status);
        let detail = j
            .result
            .as_deref()
            .or(j.error.as_deref())
            .map(|d| format!("\n{d}"))
            .unwrap_or_default();
        if self.zh() {
            format!(
                "任务 #{}：/{} {} · {state}（尝试 {} 次）{detail}",
                j.id, j.command, j.args, j.attempts
            )
        } else {
            format!(
                "Job #{}: /{} {} · {state} ({} attempts){detail}",
                j.id, j.command, j.args, j.attempts
            )
        }
    }

    pub fn job_not_found(&self, asked: Option<u64>) -> String {
        match (asked, self.zh()) {
            (Some(id), true) => format!("没有找到任务 #{id}。"),
            (Some(id), false) => format!("No job #{id} here."),
            (None, true) => "这个会话还没有任务。".into(),
            (None, false) => "No jobs in this chat yet.".into(),
        }
    }

    pub fn jobs(&self, jobs: &[Job]) -> String {
        if jobs.is_empty() {
            return self.job_not_found(None);
        }
        let mut out = String::from(self.texts_pick("最近的任务：\n", "Recent jobs:\n"));
        for j in jobs {
            out.push_str(&format!(
                "#{} /{} {} · {}\n",
                j.id,
                j.command,
                j.args,
                self.state_label(&j.status)
            ));
        }
        out.trim_end().to_string()
    }

    /// "received, working on it"; "{job}" is filled in by progress.lua.
    pub fn working_on_it(&self) -> String {
        self.texts_pick(
            "已接收，正在处理（任务 #{job}）…",
            "Received, working on it (job #{job})…",
        )
        .into()
    }

    pub fn failed(&self, job: u64, reason: &str) -> String {
        if self.zh() {
            format!("任务 #{job} 失败：{reason}")
        } else {
            format!("Job #{job} failed: {reason}")
        }
    }

    pub fn retrying(&self, job: u64, reason: &str, secs: u64, attempt: u32, max: u32) -> String {
        if self.zh() {
            format!(
                "任务 #{job} 暂时失败（{reason}），{secs} 秒后自动重试（第 {attempt}/{max} 次）。"
            )
        } else {
            format!(
                "Job #{job} failed for now ({reason}); retrying in {secs} s (attempt {attempt} of {max})."
            )
        }
    }

    /// Sent when an outcome is uncertain and cannot be verified; "{job}" is left for claim.lua.
    pub fn held(&self, job: Option<u64>, reason: Option<&str>) -> String {
        let job = job.map_or_else(|| "{job}".to_string(), |j| j.to_string());
        let reason = reason.map(|r| format!("（{r}）")).unwrap_or_default();
        if self.zh() {
            format!(
                "任务 #{job} 的结果无法确认{reason}。为避免重复操作，它不会自动重试，已转人工处理。"
            )
        } else {
            let reason = reason.trim_start_matches('（').trim_end_matches('）');
            let reason = if reason.is_empty() {
                String::new()
            } else {
                format!(" ({reason})")
            };
            format!(
                "Job #{job}'s outcome is uncertain{reason}. So that nothing happens twice it is not retried automatically; a person will settle it."
            )
        }
    }

    /// Sent by claim.lua when a read-only job lost its worker too often; "{job}" is filled there.
    pub fn crashed_too_often(&self) -> String {
        self.texts_pick(
            "任务 #{job} 多次执行中断，已停止重试。请稍后重新发送命令。",
            "Job #{job} was interrupted too many times and will not be retried. Please send the command again later.",
        )
        .into()
    }

    pub fn resolved(&self, decision: &str) -> String {
        self.texts.resolved(decision).into()
    }

    fn texts_pick(&self, zh: &'static str, en: &'static str) -> &'static str {
        if self.zh() { zh } else { en }
    }
}
