//! The replies a job sends (the worker's, and the texts the relay and the operator's tools
//! share with it), in the configured locale. Pure functions: no I/O.
//!
//! Only the fields a user needs are shown: never raw MoviePilot answers (torrent results carry
//! site cookies). Every text that comes from MoviePilot (titles, names, sites, states) goes
//! through [`clean_line`] here, the one place replies are written: a site's title cannot carry a
//! control or bidi character into Telegram (a U+202E that makes one release read as another, a
//! NUL that makes Telegram refuse the whole list), nor a line break that fakes a line.

use std::ops::Range;

use super::Texts;
use crate::commands::Command;
use crate::config::Locale;
use crate::ledger::{Job, JobState, Resolution};
use crate::moviepilot::{
    Download, Gap, Library, MediaItem, MediaKind, Release, SchedulerRun, Subscription,
    TransferRecord,
};
use crate::telegram::keyboard::button_text;
use crate::untrusted::clean_line;

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

    /// `/search` (`choose`: `订阅 X`): the header, then the matches of `page` (indexes into
    /// `items`, numbered from 1 for the whole list), each with what the library holds of it
    /// (`library[i]` for match `i`; a missing one says nothing). `kept`: how many of `items`
    /// can be paged.
    pub fn search_results(
        &self,
        title: &str,
        (items, library): (&[MediaItem], &[Library]),
        page: Range<usize>,
        kept: usize,
        choose: bool,
    ) -> String {
        let title = clean_line(title);
        if items.is_empty() {
            return zh_en!(
                self.zh(),
                ("没有找到「{title}」。"),
                ("Nothing found for \"{title}\".")
            );
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
        out.push_str(&self.only_first(items.len(), kept));
        out.push_str(&self.match_lines((items, library), page, "subscribe"));
        out.trim_end().to_string()
    }

    /// `洗版 X` / `/best X`: as [`Self::search_results`], the matches to subscribe to a better
    /// version of.
    pub fn best_results(
        &self,
        title: &str,
        (items, library): (&[MediaItem], &[Library]),
        page: Range<usize>,
        kept: usize,
    ) -> String {
        if items.is_empty() {
            return self.search_results(title, (items, library), page, kept, true);
        }
        let n = items.len();
        let mut out = zh_en!(
            self.zh(),
            ("「{title}」有 {n} 个结果，请选择要洗版（订阅更好版本）的条目：\n"),
            ("{n} results for \"{title}\"; choose one to subscribe to a better version of:\n")
        );
        out.push_str(&self.only_first(items.len(), kept));
        out.push_str(&self.match_lines((items, library), page, "best"));
        out.trim_end().to_string()
    }

    /// The lines of the matches of `page`, each with what the library holds and the typed form
    /// of its button (`/<command> <args>`).
    fn match_lines(
        &self,
        (items, library): (&[MediaItem], &[Library]),
        page: Range<usize>,
        command: &str,
    ) -> String {
        let mut out = String::new();
        for i in page {
            let Some(item) = items.get(i) else { break };
            out.push_str(&self.match_line(i + 1, item));
            out.push_str(&self.library_suffix(library.get(i)));
            if let Some(args) = subscribe_args(item) {
                out.push_str(&format!("\n   /{command} {args}"));
            }
            out.push('\n');
        }
        out
    }

    /// `n. <title> (<year>) · <kind>`, without a line break.
    fn match_line(&self, n: usize, item: &MediaItem) -> String {
        let year = item
            .year
            .as_deref()
            .map(|y| format!(" ({})", clean_line(y)))
            .unwrap_or_default();
        format!(
            "{n}. {}{year} · {}",
            clean_line(&item.title),
            self.kind(Some(item.kind))
        )
    }

    /// A line under a list's header when only the first `kept` of `total` items can be paged
    /// (the rest were not kept: the list's memory bound); empty otherwise.
    fn only_first(&self, total: usize, kept: usize) -> String {
        if kept >= total {
            return String::new();
        }
        zh_en!(
            self.zh(),
            ("（共 {total} 个，只能翻看前 {kept} 个。）\n"),
            ("(Only the first {kept} of {total} can be paged.)\n")
        )
    }

    /// The page-number button between ◀ and ▶: `page/pages`.
    pub fn page_button(&self, page: usize, pages: usize) -> String {
        format!("{page}/{pages}")
    }

    /// The button that shows the page before.
    pub fn previous_page(&self) -> &'static str {
        "◀"
    }

    /// The button that shows the page after.
    pub fn next_page(&self) -> &'static str {
        "▶"
    }

    /// The text of the 洗版 button of result number `n` (1-based).
    pub fn best_button(&self, n: usize, item: &MediaItem) -> String {
        self.media_button(n, zh_en!(self.zh(), "洗版", "Best"), item)
    }

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

    /// The text of the Subscribe button of result number `n` (1-based).
    pub fn subscribe_button(&self, n: usize, item: &MediaItem) -> String {
        self.media_button(n, zh_en!(self.zh(), "订阅", "Subscribe"), item)
    }

    /// `n. <verb> <title> (<year>)`, cut to fit a button.
    fn media_button(&self, n: usize, verb: &str, item: &MediaItem) -> String {
        let year = item
            .year
            .as_deref()
            .map(|y| format!(" ({})", clean_line(y)))
            .unwrap_or_default();
        button_text(
            &format!("{n}. {verb} {}{year}", clean_line(&item.title)),
            40,
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

    pub fn cancel_button(&self) -> &'static str {
        self.texts.cancel_button()
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

    pub fn confirm_button(&self) -> &'static str {
        self.texts.confirm_button()
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

    /// `/redo`'s question: the file MoviePilot deletes and the one it files again.
    pub fn confirm_redo(&self, record: &TransferRecord) -> String {
        let (id, title) = (record.id, clean_line(&record.title));
        let (dest, src) = (clean_line(&record.dest), clean_line(&record.src));
        zh_en!(
            self.zh(),
            ("确认重新整理记录 #{id}「{title}」？MoviePilot 会先删除上次整理出的文件：\n{dest}\n再重新整理：\n{src}"),
            ("File transfer record #{id} (\"{title}\") again? MoviePilot first deletes what it filed last time:\n{dest}\nthen files again:\n{src}")
        )
    }

    pub fn no_such_record(&self, id: u64) -> String {
        zh_en!(
            self.zh(),
            ("MoviePilot 的整理历史中没有记录 #{id}（重新整理过的记录会换成新编号）。"),
            ("MoviePilot's transfer history has no record #{id} (a record filed again gets a new number).")
        )
    }

    pub fn redo_done(&self, record: &TransferRecord) -> String {
        let (id, title) = (record.id, clean_line(&record.title));
        zh_en!(
            self.zh(),
            ("MoviePilot 已重新整理记录 #{id}「{title}」。"),
            ("MoviePilot filed record #{id} (\"{title}\") again.")
        )
    }

    /// MoviePilot would not file the record again (its own words stay in the job's `error`).
    pub fn redo_refused(&self, id: u64) -> String {
        zh_en!(
            self.zh(),
            ("MoviePilot 没有重新整理记录 #{id}，原因已记录在任务中，管理员可以查看。"),
            ("MoviePilot did not file record #{id} again; why is kept in the job for the admins.")
        )
    }

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

    /// A house command's result: what MoviePilot's scheduler did with the job.
    pub fn house_job_ran(&self, command: Command, run: &SchedulerRun) -> String {
        let name = self.texts.house_job_name(command);
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

    pub fn search_now(&self, id: u64) -> String {
        zh_en!(
            self.zh(),
            ("已请求 MoviePilot 立即搜索订阅 #{id}（MoviePilot 不会告知是否找到资源）。"),
            ("Asked MoviePilot to search subscription #{id} now (it does not say whether anything was found).")
        )
    }

    /// One line per torrent: the media's name, season and episodes, progress, and under it the
    /// torrent's own title (three torrents of one series differ only there).
    pub fn downloading(&self, downloads: &[Download]) -> String {
        if downloads.is_empty() {
            return zh_en!(
                self.zh(),
                "当前没有正在下载的任务。",
                "Nothing is downloading."
            )
            .into();
        }
        let mut out = String::from(zh_en!(self.zh(), "正在下载：\n", "Downloading:\n"));
        for d in downloads {
            let se = d
                .season_episode
                .as_deref()
                .map(|s| format!(" {}", clean_line(s)))
                .unwrap_or_default();
            let progress = d
                .progress
                .map(|p| format!(" · {p:.0}%"))
                .unwrap_or_default();
            out.push_str(&format!("{}{se}{progress}\n", clean_line(&d.title)));
            if let Some(torrent) = d.torrent.as_deref() {
                out.push_str(&format!("   {}\n", clean_line(torrent)));
            }
        }
        out.trim_end().to_string()
    }

    fn state_label(&self, status: JobState) -> &'static str {
        self.texts.state_label(status)
    }

    pub fn job_status(&self, j: &Job) -> String {
        let state = self.state_label(j.status);
        let detail = self
            .status_detail(j)
            .map(|d| format!("\n{d}"))
            .unwrap_or_default();
        zh_en!(
            self.zh(),
            (
                "任务 #{}：/{} {} · {state}（尝试 {} 次）{detail}",
                j.id,
                j.command,
                j.args,
                j.attempts
            ),
            (
                "Job #{}: /{} {} · {state} ({} attempts){detail}",
                j.id,
                j.command,
                j.args,
                j.attempts
            )
        )
    }

    /// What `/status` says under a job: its result, or what went wrong in the user's words
    /// (the recorded error itself is for operators).
    fn status_detail(&self, j: &Job) -> Option<String> {
        if let Some(result) = &j.result {
            // It may quote MoviePilot (a download's hash).
            return Some(clean_line(result).into_owned());
        }
        j.error.as_ref()?;
        let kind = j.extra.get("mp_error_kind").map(String::as_str);
        Some(match kind {
            Some("declined") => {
                crate::untrusted::clean(j.error.as_deref().unwrap_or_default()).into_owned()
            }
            Some(kind) => self.error_sentence(kind).to_string(),
            // Held or failed by claim.lua after its worker stopped: the state says it.
            None => return None,
        })
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
        let mut out = String::from(zh_en!(self.zh(), "最近的任务：\n", "Recent jobs:\n"));
        for j in jobs {
            out.push_str(&format!(
                "#{} /{} {} · {}\n",
                j.id,
                j.command,
                j.args,
                self.state_label(j.status)
            ));
        }
        out.trim_end().to_string()
    }

    /// "received, working on it"; "{job}" is filled in by progress.lua.
    pub fn working_on_it(&self) -> String {
        zh_en!(
            self.zh(),
            "已接收，正在处理（任务 #{job}）…",
            "Received, working on it (job #{job})…"
        )
        .into()
    }

    /// What went wrong, in one plain sentence per error kind (`MpError::kind`). The details
    /// (HTTP statuses, paths, OS errors, setting names) stay in the log and `oncebot jobs show`;
    /// a `declined` error's text is already the user's (see [`Render::failed`]).
    pub fn error_sentence(&self, kind: &str) -> &'static str {
        match kind {
            "transient" => zh_en!(
                self.zh(),
                "MoviePilot 暂时无法连接或暂时出错",
                "MoviePilot cannot be reached or had a problem for now"
            ),
            "uncertain" => zh_en!(
                self.zh(),
                "MoviePilot 没有及时回应，结果未知",
                "MoviePilot did not answer in time, so the outcome is unknown"
            ),
            "credentials" => zh_en!(
                self.zh(),
                "MoviePilot 暂时不接受机器人的登录，管理员已收到通知",
                "MoviePilot does not accept the bot's login for now; its administrators have been told"
            ),
            _ => zh_en!(
                self.zh(),
                "MoviePilot 没有接受这个请求",
                "MoviePilot did not accept this request"
            ),
        }
    }

    /// A job that ended `failed`. `declined` is the user's own reason (no such media, no such
    /// season); any other failure is said by its kind only.
    pub fn failed(&self, job: u64, kind: &str, declined: Option<&str>) -> String {
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
    pub fn gave_up(&self, job: u64, kind: &str, attempts: u32) -> String {
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

    pub fn retrying(&self, job: u64, kind: &str, secs: u64, attempt: u32, max: u32) -> String {
        let check = kind == "uncertain";
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
                self.error_sentence("credentials")
            ),
            (
                "{}. Job #{job} is kept and will go on by itself once that is fixed; no need to send it again.",
                self.error_sentence("credentials")
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

/// What `/download` needs for a match: `tmdb:<id>` for a movie, `tmdb:<id> S<n>` for a series
/// with exactly one known season, `tmdb:<id> tv` (every season) for any other series. `None`
/// without a TMDB id.
pub fn release_args(item: &MediaItem) -> Option<String> {
    subscribe_args(item)
}

/// Bytes as a user reads them: `4.2 GB`, `850 MB`.
fn human_size(bytes: f64) -> String {
    const GB: f64 = 1024.0 * 1024.0 * 1024.0;
    const MB: f64 = 1024.0 * 1024.0;
    if bytes >= GB {
        format!("{:.1} GB", bytes / GB)
    } else {
        format!("{:.0} MB", (bytes / MB).max(1.0))
    }
}

/// The replies of the release flow (`/download`, resource search, `下载 k`).
impl Render {
    /// `/download <title>`: the matches, each with a button that searches its releases.
    pub fn download_matches(
        &self,
        title: &str,
        (items, library): (&[MediaItem], &[Library]),
        page: Range<usize>,
        kept: usize,
    ) -> String {
        if items.is_empty() {
            return self.search_results(title, (items, library), page, kept, false);
        }
        let mut out = zh_en!(
            self.zh(),
            (
                "「{title}」有 {} 个结果，请选择要搜索资源的条目：\n",
                items.len()
            ),
            (
                "{} results for \"{title}\"; choose one to find its releases:\n",
                items.len()
            )
        );
        out.push_str(&self.only_first(items.len(), kept));
        for i in page {
            let Some(item) = items.get(i) else { break };
            out.push_str(&self.match_line(i + 1, item));
            out.push_str(&self.library_suffix(library.get(i)));
            out.push('\n');
        }
        out.trim_end().to_string()
    }

    /// The button under match `n` of `/download <title>`.
    pub fn find_releases_button(&self, n: usize, item: &MediaItem) -> String {
        self.media_button(n, zh_en!(self.zh(), "下载", "Download"), item)
    }

    /// The download button beside a `/search` match's Subscribe button.
    pub fn search_download_button(&self, n: usize) -> String {
        zh_en!(self.zh(), ("{n}. 下载"), ("{n}. Download"))
    }

    /// The progress message of a resource search, sent at once; "{job}" is filled in by
    /// progress.lua.
    pub fn searching_sites(&self) -> String {
        zh_en!(
            self.zh(),
            "正在搜索站点资源…（任务 #{job}）",
            "Searching the sites for releases… (job #{job})"
        )
        .into()
    }

    /// A page of a resource search's list: one line per release of `page` (site, title, size,
    /// seeders, promotion), numbered from `first` (its place in the whole list), nothing else
    /// of MoviePilot's answer. `kept`: the releases that can be paged, of `total` read; `cut`:
    /// MoviePilot's answer was larger than oncebot reads. The line after the header says what
    /// the library holds.
    pub fn release_list(
        &self,
        media: &str,
        (page, first): (&[Release], usize),
        (kept, total, cut): (usize, usize, bool),
        library: &Library,
    ) -> String {
        let media = clean_line(media);
        if page.is_empty() && library.is_present() {
            return zh_en!(
                self.zh(),
                ("没有找到「{media}」的资源；已在媒体库。"),
                ("No releases found for {media}; it is already in your library.")
            );
        }
        if page.is_empty() {
            return zh_en!(
                self.zh(),
                ("没有找到「{media}」的资源。"),
                ("No releases found for {media}.")
            );
        }
        let mut out = match (self.zh(), cut, kept < total) {
            (true, true, _) => format!(
                "「{media}」的资源太多，MoviePilot 的回答超过了读取上限：读取了其中 {total} 个，可以翻看前 {kept} 个，点按钮下载：\n"
            ),
            (true, false, false) => format!("「{media}」找到 {total} 个资源，点按钮下载：\n"),
            (true, false, true) => {
                format!("「{media}」找到 {total} 个资源，只能翻看前 {kept} 个，点按钮下载：\n")
            }
            (false, true, _) => format!(
                "{media} has more releases than oncebot reads from one answer: {total} were read, the first {kept} can be paged; tap a button to download:\n"
            ),
            (false, false, false) => {
                format!("{total} releases of {media}; tap a button to download:\n")
            }
            (false, false, true) => format!(
                "{total} releases of {media}; only the first {kept} can be paged; tap a button to download:\n"
            ),
        };
        if let Some(line) = self.library_line(library) {
            out.push_str(&line);
            out.push('\n');
        }
        for (i, r) in page.iter().enumerate() {
            let mut line = format!(
                "{}. 【{}】{}",
                first + i,
                clean_line(&r.site_name),
                clean_line(&r.title)
            );
            if let Some(size) = r.size.filter(|s| *s > 0.0) {
                line.push_str(&format!(" · {}", human_size(size)));
            }
            if let Some(seeders) = r.seeders {
                line.push_str(&format!(" · {seeders}↑"));
            }
            if let Some(promo) = r
                .volume_factor
                .as_deref()
                .filter(|p| *p != "普通" && *p != "未知")
            {
                line.push_str(&format!(" · {}", clean_line(promo)));
            }
            out.push_str(&line);
            out.push('\n');
        }
        out.trim_end().to_string()
    }

    /// The button of release `n`, before and after it is used.
    pub fn release_button(&self, n: usize, used: bool) -> String {
        match (self.zh(), used) {
            (true, false) => format!("下载 {n}"),
            (true, true) => format!("✓ 下载 {n}"),
            (false, false) => format!("Download {n}"),
            (false, true) => format!("✓ Download {n}"),
        }
    }

    /// A download MoviePilot took (or, after an interruption, was verified to have taken).
    pub fn download_started(&self, title: &str, site: &str) -> String {
        let (title, site) = (clean_line(title), clean_line(site));
        zh_en!(
            self.zh(),
            ("已开始下载「{title}」（站点：{site}）。"),
            ("Started downloading \"{title}\" (site: {site}).")
        )
    }

    /// MoviePilot answered `success:false` to an add.
    pub fn download_refused(&self, title: &str, site: &str) -> String {
        let (title, site) = (clean_line(title), clean_line(site));
        zh_en!(
            self.zh(),
            ("MoviePilot 没有添加「{title}」（站点：{site}）：站点或下载器拒绝了它。可以换一个资源再试。"),
            ("MoviePilot did not add \"{title}\" (site: {site}): the site or the downloader refused it. Try another release.")
        )
    }

    /// The list a button named has expired (its buttons should have too).
    pub fn release_list_expired(&self) -> String {
        zh_en!(
            self.zh(),
            "这个资源列表已过期，请重新发送 /download 搜索。",
            "This list of releases has expired; send /download again."
        )
        .into()
    }

    /// A resource search whose answer was lost (a timeout, a dropped connection): the sites were
    /// asked already, so it is not repeated by itself.
    pub fn release_search_lost(&self) -> String {
        zh_en!(self.zh(), "站点资源搜索没有及时返回结果（站点已被搜索过，所以不会自动重试）。稍后可以再发送一次。", "The search for releases did not answer in time (the sites were already searched, so it is not repeated by itself). You may send it again later.")
        .into()
    }

    /// The ⚡ Auto button under a release list, before and after it is used.
    pub fn auto_button(&self, used: bool) -> String {
        match (self.zh(), used) {
            (true, false) => "⚡ 自动".into(),
            (true, true) => "✓ ⚡ 自动".into(),
            (false, false) => "⚡ Auto".into(),
            (false, true) => "✓ ⚡ Auto".into(),
        }
    }

    /// The ⚡ Auto job's report: each step's line (`✓`, `✗` or `⚠` and its sentence), in order.
    pub fn auto_report(&self, steps: &[String]) -> String {
        let head = zh_en!(self.zh(), "⚡ 自动：", "⚡ Auto:");
        let mut out = head.to_string();
        for step in steps {
            out.push('\n');
            out.push_str(step);
        }
        out
    }

    /// The ⚡ Auto job's progress after its download, while it subscribes (`download`: the
    /// download's line).
    pub fn auto_subscribing(&self, download: &str) -> String {
        let next = zh_en!(self.zh(), "… 正在订阅这一季", "… subscribing to the season");
        format!("{}\n{next}", self.auto_report(&[download.to_string()]))
    }

    /// The best release was downloaded by another job already (a `下载 1` tapped first): that
    /// job is the download.
    pub fn auto_download_is_job(&self, job: u64, state: JobState) -> String {
        let state = self.state_label(state);
        zh_en!(
            self.zh(),
            ("第 1 个资源已由任务 #{job} 下载（{state}），没有再次下载。"),
            ("Release 1 is already being downloaded by job #{job} ({state}); not downloaded again.")
        )
    }

    /// A list of every season: the ⚡ Auto job subscribes to no season by itself.
    pub fn auto_no_season(&self) -> String {
        zh_en!(
            self.zh(),
            "这是全部季的列表，所以没有订阅；要订阅某一季，请发送 /subscribe。",
            "This list is of every season, so nothing was subscribed; send /subscribe to choose a season."
        )
        .into()
    }

    /// The subscription step could not be done (MoviePilot did not answer twice, or refused):
    /// the download stands.
    pub fn auto_subscribe_failed(&self, tmdb_id: u64, season: u32) -> String {
        zh_en!(
            self.zh(),
            ("订阅没有完成（MoviePilot 没有回应或拒绝了）；下载不受影响。稍后可以发送 /subscribe tmdb:{tmdb_id} S{season} 再试。"),
            ("The subscription was not made (MoviePilot did not answer or refused it); the download stands. You may send /subscribe tmdb:{tmdb_id} S{season} later.")
        )
    }

    /// Why a download is held for a person.
    pub fn download_undecided(&self, title: &str, site: &str) -> String {
        let (title, site) = (clean_line(title), clean_line(site));
        zh_en!(
            self.zh(),
            ("无法确认「{title}」（站点：{site}）是否已添加到下载器，为避免重复下载，已交给管理员确认。"),
            ("Cannot tell whether \"{title}\" (site: {site}) reached the downloader; to avoid a second download, an operator will check.")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(n: usize) -> Release {
        let info = serde_json::json!({"site_name": format!("PT{n}"), "title": format!("Dune {n}")});
        Release::from_torrent_info(info).expect("a release")
    }

    /// A page is numbered for the whole list, and a list cut by its bound says, in either
    /// language, how many were found and how many can be paged.
    #[test]
    fn a_page_numbers_its_items_for_the_whole_list_and_says_what_can_be_paged() {
        let page: Vec<Release> = (6..=10).map(release).collect();
        let zh = Render::new(Locale::Zh).release_list(
            "Dune (2021)",
            (&page, 6),
            (38, 80, false),
            &Library::Unknown,
        );
        assert!(
            zh.starts_with("「Dune (2021)」找到 80 个资源，只能翻看前 38 个"),
            "{zh}"
        );
        assert!(zh.contains("\n6. 【PT6】Dune 6") && zh.contains("\n10. 【PT10】Dune 10"));
        assert!(!zh.contains("\n1. "), "{zh}");
        let en = Render::new(Locale::En).release_list(
            "Dune (2021)",
            (&page, 6),
            (38, 80, false),
            &Library::Unknown,
        );
        assert!(
            en.starts_with("80 releases of Dune (2021); only the first 38 can be paged"),
            "{en}"
        );
        let whole = Render::new(Locale::En).release_list(
            "Dune",
            (&page[..2], 1),
            (2, 2, false),
            &Library::Unknown,
        );
        assert!(whole.starts_with("2 releases of Dune; tap"), "{whole}");
        assert!(
            Render::new(Locale::Zh)
                .only_first(40, 30)
                .contains("只能翻看前 30 个")
        );
        assert_eq!(Render::new(Locale::En).only_first(30, 30), "");
    }
}

/// Episodes as a reader scans them: runs of three or more as ranges, `E05–E08, E10`.
fn episode_ranges(episodes: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < episodes.len() {
        let start = episodes[i];
        let mut end = start;
        while i + 1 < episodes.len() && episodes[i + 1] == end + 1 {
            i += 1;
            end = episodes[i];
        }
        match end - start {
            0 => parts.push(format!("E{start:02}")),
            1 => parts.push(format!("E{start:02}, E{end:02}")),
            _ => parts.push(format!("E{start:02}–E{end:02}")),
        }
        i += 1;
    }
    parts.join(", ")
}

/// How many incomplete seasons a line names before it says "…".
const GAPS_SHOWN: usize = 3;

/// The library check's words (`moviepilot::Library`): in a match line, a release list's
/// header, a subscription's confirmation, and the answers that stop before a search or a
/// subscription. A check that said nothing (not configured, no answer) adds nothing.
impl Render {
    /// One incomplete season: "第 1 季缺 E05–E08" / "缺第 2 季".
    fn gap(&self, gap: &Gap) -> String {
        let season = gap.season;
        if gap.episodes.is_empty() {
            return zh_en!(self.zh(), ("缺第 {season} 季"), ("season {season} missing"));
        }
        let eps = episode_ranges(&gap.episodes);
        zh_en!(
            self.zh(),
            ("第 {season} 季缺 {eps}"),
            ("season {season} is missing {eps}")
        )
    }

    /// Seasons missing whole, in a row: "缺第 2–6 季" / "seasons 2–6 missing".
    fn whole_seasons(&self, first: u32, last: u32) -> String {
        zh_en!(
            self.zh(),
            ("缺第 {first}–{last} 季"),
            ("seasons {first}–{last} missing")
        )
    }

    /// What is missing, every incomplete season (seasons missing whole and in a row as one
    /// range; at most [`GAPS_SHOWN`] parts, then "…").
    fn gaps(&self, gaps: &[Gap]) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut i = 0;
        while i < gaps.len() {
            let mut j = i;
            while gaps[i].episodes.is_empty()
                && j + 1 < gaps.len()
                && gaps[j + 1].episodes.is_empty()
                && gaps[j + 1].season == gaps[j].season + 1
            {
                j += 1;
            }
            parts.push(match j > i {
                true => self.whole_seasons(gaps[i].season, gaps[j].season),
                false => self.gap(&gaps[i]),
            });
            i = j + 1;
        }
        if parts.len() > GAPS_SHOWN {
            parts.truncate(GAPS_SHOWN);
            parts.push("…".into());
        }
        parts.join(zh_en!(self.zh(), "；", "; "))
    }

    /// The short note of a match line: "已在媒体库", or what is missing; `None`: nothing to say.
    pub fn library_note(&self, library: &Library) -> Option<String> {
        match library {
            Library::Present => {
                Some(zh_en!(self.zh(), "已在媒体库", "in your library").to_string())
            }
            Library::Partly { missing } => Some(self.gaps(missing)),
            Library::Absent | Library::NotConfigured | Library::Unknown => None,
        }
    }

    /// " · 已在媒体库" after a match, or nothing.
    fn library_suffix(&self, library: Option<&Library>) -> String {
        library
            .and_then(|l| self.library_note(l))
            .map(|note| format!(" · {note}"))
            .unwrap_or_default()
    }

    /// A release list's line about the library (not in it is worth saying there too).
    fn library_line(&self, library: &Library) -> Option<String> {
        match library {
            Library::Present => {
                Some(zh_en!(self.zh(), "媒体库：已有", "Library: already there").to_string())
            }
            Library::Partly { missing } => {
                let gaps = self.gaps(missing);
                Some(zh_en!(self.zh(), ("媒体库：{gaps}"), ("Library: {gaps}")))
            }
            Library::Absent => {
                Some(zh_en!(self.zh(), "媒体库：还没有", "Library: not there yet").to_string())
            }
            Library::NotConfigured | Library::Unknown => None,
        }
    }

    /// A subscription made for media partly in the library: what is missing, after the
    /// confirmation; empty otherwise.
    pub fn subscribed_missing(&self, library: &Library) -> String {
        match library {
            Library::Partly { missing } => {
                let gaps = self.gaps(missing);
                zh_en!(
                    self.zh(),
                    ("\n媒体库中缺：{gaps}"),
                    ("\nMissing from your library: {gaps}")
                )
            }
            _ => String::new(),
        }
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

    /// A resource search not made: the media is in the library already.
    pub fn in_library_not_searched(&self, media: &str) -> String {
        let media = clean_line(media);
        zh_en!(
            self.zh(),
            ("「{media}」已在媒体库中，没有搜索站点资源。如仍要下载，请点「仍然下载」。"),
            ("{media} is already in your library, so the sites were not searched. Tap \"Download anyway\" to search all the same.")
        )
    }

    pub fn subscribe_anyway_button(&self) -> &'static str {
        zh_en!(self.zh(), "仍然订阅", "Subscribe anyway")
    }

    pub fn download_anyway_button(&self) -> &'static str {
        zh_en!(self.zh(), "仍然下载", "Download anyway")
    }
}

#[cfg(test)]
mod library_tests {
    use super::*;

    #[test]
    fn episode_ranges_are_compact() {
        assert_eq!(episode_ranges(&[5, 6, 7, 8]), "E05–E08");
        assert_eq!(
            episode_ranges(&[1, 3, 4, 10, 11, 12]),
            "E01, E03, E04, E10–E12"
        );
        assert_eq!(episode_ranges(&[]), "");
    }

    #[test]
    fn a_partly_present_season_names_what_is_missing() {
        let zh = Render::new(Locale::Zh);
        let library = Library::Partly {
            missing: vec![
                Gap {
                    season: 1,
                    episodes: vec![5, 6, 7, 8],
                    total: 8,
                },
                Gap {
                    season: 2,
                    episodes: vec![],
                    total: 10,
                },
            ],
        };
        assert_eq!(
            zh.library_note(&library).as_deref(),
            Some("第 1 季缺 E05–E08；缺第 2 季")
        );
        assert_eq!(
            zh.library_note(&Library::Present).as_deref(),
            Some("已在媒体库")
        );
        let seasons = |range: std::ops::RangeInclusive<u32>| Library::Partly {
            missing: range
                .map(|season| Gap {
                    season,
                    episodes: vec![],
                    total: 10,
                })
                .collect(),
        };
        assert_eq!(
            zh.library_note(&seasons(2..=6)).as_deref(),
            Some("缺第 2–6 季")
        );
        assert_eq!(
            Render::new(Locale::En)
                .library_note(&seasons(2..=2))
                .as_deref(),
            Some("season 2 missing")
        );
        assert_eq!(zh.library_note(&Library::NotConfigured), None);
        assert_eq!(zh.library_note(&Library::Unknown), None);
    }
}
