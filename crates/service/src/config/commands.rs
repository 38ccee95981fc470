//! `[commands]`: the duplicate windows of the side-effecting commands, and what a few commands
//! need to know (the releases a list keeps, `/site_signin`'s day and scheduler job).

use serde::Deserialize;

use super::{SettingError, env_name, nonzero};

/// Duplicate windows of the side-effecting commands (see `commands::policy`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSettings {
    pub subscribe_window_secs: u64,
    /// `/best` (洗版): a command of its own, so a plain `/subscribe` of the same media is not
    /// its repeat.
    pub best_window_secs: u64,
    pub unsubscribe_window_secs: u64,
    pub searchnow_window_secs: u64,
    /// Releases one resource search keeps, paged five at a time (one `下载 k` button each),
    /// within the stored list's memory bound.
    pub resources_shown: usize,
    /// A resource search's duplicate window, and how long its list and buttons live.
    pub resources_window_secs: u64,
    /// The same release from the same chat and user inside this window is one download.
    pub download_window_secs: u64,
    /// The house commands' windows (one start per window for everyone, issue 23).
    pub subscribe_search_window_secs: u64,
    pub subscribe_refresh_window_secs: u64,
    pub transfer_window_secs: u64,
    pub mediaserver_sync_window_secs: u64,
    pub cookiecloud_window_secs: u64,
    /// `/restart`'s window: one restart for the house inside it.
    pub restart_window_secs: u64,
    /// `/redo`'s window, per transfer record: one redo of a record for the house inside it.
    pub redo_window_secs: u64,
    /// How long a restart is watched for MoviePilot to go and come back before a person is
    /// asked to look.
    pub restart_watch_secs: u64,
    /// The time zone whose calendar day is `/site_signin`'s window (an IANA name), and in which
    /// a repeat is told when the first started.
    pub day_zone: String,
    /// The scheduler job `/site_signin` starts: the AutoSignIn plugin's sign-in of every site
    /// it is set to sign in to (`<plugin id>_<service id>`).
    pub site_signin_job: String,
}

impl CommandSettings {
    pub(super) fn validate(&self) -> Result<(), SettingError> {
        let shown = self.resources_shown;
        if !(1..=100).contains(&shown) {
            return Err(SettingError::new(
                "commands.resources_shown",
                format!("is {shown}, not 1 to 100"),
                format!(
                    "set {} to how many releases a list keeps for paging, e.g. 30",
                    env_name("commands.resources_shown")
                ),
            ));
        }
        if self.day_zone().is_err() {
            return Err(SettingError::new(
                "commands.day_zone",
                format!("is {:?}, not a time zone name", self.day_zone),
                format!(
                    "set {} to an IANA zone name, e.g. Asia/Shanghai or Europe/Berlin",
                    env_name("commands.day_zone")
                ),
            ));
        }
        let job = self.site_signin_job.as_str();
        if job.is_empty() || job.len() > 100 || !job.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(SettingError::new(
                "commands.site_signin_job",
                format!("is {job:?}, not a scheduler job id"),
                format!(
                    "set {} to the AutoSignIn plugin's job id, AutoSignIn_AutoSignIn unless \
                     MoviePilot's scheduler page lists another",
                    env_name("commands.site_signin_job")
                ),
            ));
        }
        nonzero(
            &[("commands.restart_watch_secs", self.restart_watch_secs)],
            ", so no restart could ever be seen",
            "a number of seconds, e.g. 180",
        )?;
        nonzero(
            &[("commands.resources_window_secs", self.resources_window_secs)],
            ", so every button would have expired before it is shown",
            "a number of seconds, e.g. 600",
        )
    }

    /// `day_zone`, looked up in the bundled zone database.
    pub fn day_zone(&self) -> Result<jiff::tz::TimeZone, jiff::Error> {
        jiff::tz::TimeZone::get(&self.day_zone)
    }

    /// The zone a role reads its clock in: `day_zone`, validated before any role starts, so
    /// UTC only when it was not (a test's settings).
    pub fn zone(&self) -> jiff::tz::TimeZone {
        self.day_zone().unwrap_or(jiff::tz::TimeZone::UTC)
    }
}
