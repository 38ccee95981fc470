//! The ⚡ Auto button's job: release 1 downloaded, then the season subscribed, each step said.

use super::{About, Listed, Render};
use crate::vocabulary::JobState;

impl Render {
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
}

/// The ⚡ Auto button's job: never typed.
pub const AUTO: About = About {
    usage: super::releases::DOWNLOAD.usage,
    listed: Listed::Hidden,
};
