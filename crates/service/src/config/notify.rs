//! `[notify]`: the relay of MoviePilot's notifications: where each type goes, how often
//! MoviePilot is read, the relay's lease and its wake-up secret.

use serde::Deserialize;

use super::{Secret, SettingError, chat_list, env_name, nonzero, secret_problem};
use crate::vocabulary::{ChatTarget, NotificationType};

/// The relay of MoviePilot's notifications (see `notify`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifySettings {
    pub enabled: bool,
    /// Chats for every type without a route; empty: `telegram.admin_chats`. Each `chat` or
    /// `chat/topic`.
    #[serde(deserialize_with = "chat_list")]
    pub chats: Vec<ChatTarget>,
    /// `type=chat[,chat];...` (a chat may be `chat/topic`), kept as written and read by [`NotifySettings::parsed_routes`], so
    /// a mistake is reported with the key, its variable and the fix.
    pub routes: String,
    pub poll_interval_secs: u64,
    /// The least time between two reads, however many wake-up calls arrive.
    pub min_poll_gap_ms: u64,
    pub max_pages: u32,
    pub backfill: u32,
    pub duplicate_window_secs: u64,
    /// In the wake-up path; a secret because anyone who knows it can make the relay poll.
    pub webhook_secret: Secret,
    /// How often the polling process renews its lease.
    pub heartbeat_interval_ms: u64,
    /// The lease's expiry: how soon another process takes over when the poller dies.
    pub liveness_ttl_ms: u64,
    /// A notification about media someone asked for through oncebot also goes to the chat they
    /// asked in.
    pub to_requester: bool,
    /// How long oncebot remembers who asked for a media (a subscription may complete months
    /// later).
    pub requester_ttl_secs: u64,
}

/// The longest `notify.requester_ttl_secs`: a year.
pub const NOTIFY_REQUESTER_TTL_MAX: u64 = 31_536_000;

/// Most pages one poll may read (`notify.max_pages`).
pub const NOTIFY_MAX_PAGES: u32 = 200;

impl NotifySettings {
    /// `notify.routes` as (type, chats) pairs, in the order written; a type named twice takes
    /// the chats of both.
    pub fn parsed_routes(&self) -> Result<Vec<(NotificationType, Vec<ChatTarget>)>, SettingError> {
        let bad = |problem: String| {
            SettingError::new(
                "notify.routes",
                problem,
                format!(
                    "set {} to type=chat[,chat];... with a type such as 整理入库 or Organize, and a \
                     chat as its id or chat/topic, e.g. \"整理入库=-1001234567890/7;SiteMessage=123\"",
                    env_name("notify.routes")
                ),
            )
        };
        let mut routes: Vec<(NotificationType, Vec<ChatTarget>)> = Vec::new();
        for part in self
            .routes
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let Some((kind, chats)) = part.split_once('=') else {
                return Err(bad(format!("has {part:?} without '='")));
            };
            let Some(kind) = NotificationType::parse(kind) else {
                return Err(bad(format!(
                    "names {:?}, which is not a MoviePilot notification type",
                    kind.trim()
                )));
            };
            let mut ids = Vec::new();
            for chat in chats.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                let id = ChatTarget::parse(chat)
                    .map_err(|e| bad(format!("for {}: {e}", kind.value())))?;
                ids.push(id);
            }
            if ids.is_empty() {
                return Err(bad(format!("routes {} to no chat", kind.value())));
            }
            match routes.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, known)) => known.extend(ids),
                None => routes.push((kind, ids)),
            }
        }
        Ok(routes)
    }

    /// When the relay runs: routes that parse, a poll interval, a page limit, a lease that one
    /// slow heartbeat cannot outlive, a wake-up secret Telegram-style.
    pub(super) fn validate(&self, command_timeout_ms: u64) -> Result<(), SettingError> {
        self.parsed_routes()?;
        nonzero(
            &[("notify.poll_interval_secs", self.poll_interval_secs)],
            ", which would ask MoviePilot without pause",
            "at least 1 (default 15)",
        )?;
        self.validate_max_pages()?;
        self.validate_poll_gap()?;
        self.validate_wake_secret()?;
        self.validate_heartbeat()?;
        self.validate_requester_ttl()?;
        self.validate_lease(command_timeout_ms)
    }

    /// One poll reads 1 to `NOTIFY_MAX_PAGES` pages.
    fn validate_max_pages(&self) -> Result<(), SettingError> {
        if !(1..=NOTIFY_MAX_PAGES).contains(&self.max_pages) {
            return Err(SettingError::new(
                "notify.max_pages",
                format!("is {}, not 1 to {NOTIFY_MAX_PAGES}", self.max_pages),
                format!(
                    "set {} to how many pages of 50 rows one poll may read (default 10)",
                    env_name("notify.max_pages")
                ),
            ));
        }
        Ok(())
    }

    /// A gap between reads no longer than the interval between them.
    fn validate_poll_gap(&self) -> Result<(), SettingError> {
        let most = self.poll_interval_secs.saturating_mul(1000);
        if self.min_poll_gap_ms > most {
            return Err(SettingError::new(
                "notify.min_poll_gap_ms",
                format!(
                    "is {}, longer than notify.poll_interval_secs ({} ms)",
                    self.min_poll_gap_ms, most
                ),
                format!(
                    "set {} to at most {most} (default 1000)",
                    env_name("notify.min_poll_gap_ms")
                ),
            ));
        }
        Ok(())
    }

    /// The wake-up path's secret: empty (no wake-up path), or a secret as the webhook's.
    pub(super) fn validate_wake_secret(&self) -> Result<(), SettingError> {
        let secret = self.webhook_secret.expose();
        if secret.is_empty() {
            return Ok(());
        }
        match secret_problem(secret) {
            None => Ok(()),
            Some(problem) => Err(SettingError::new(
                "notify.webhook_secret",
                problem,
                format!(
                    "set {} to a random string such as the output of `openssl rand -hex 32`, or \
                     leave it empty to turn the wake-up endpoint off",
                    env_name("notify.webhook_secret")
                ),
            )),
        }
    }

    /// The lease is renewed no more often than Redis should be asked.
    fn validate_heartbeat(&self) -> Result<(), SettingError> {
        if self.heartbeat_interval_ms < 50 {
            return Err(SettingError::new(
                "notify.heartbeat_interval_ms",
                format!(
                    "is {}, more often than Redis should be asked",
                    self.heartbeat_interval_ms
                ),
                format!(
                    "set {} to at least 50 (default 1000)",
                    env_name("notify.heartbeat_interval_ms")
                ),
            ));
        }
        Ok(())
    }

    /// Who asked for a media is remembered between a minute and a year.
    fn validate_requester_ttl(&self) -> Result<(), SettingError> {
        if !(60..=NOTIFY_REQUESTER_TTL_MAX).contains(&self.requester_ttl_secs) {
            return Err(SettingError::new(
                "notify.requester_ttl_secs",
                format!(
                    "is {}, not 60 to {NOTIFY_REQUESTER_TTL_MAX}",
                    self.requester_ttl_secs
                ),
                format!(
                    "set {} to how many seconds oncebot remembers who asked for a media (default 7776000, 90 days)",
                    env_name("notify.requester_ttl_secs")
                ),
            ));
        }
        Ok(())
    }

    /// The lease outlives one slow renewal, so a second relay never polls beside a live one.
    fn validate_lease(&self, command_timeout_ms: u64) -> Result<(), SettingError> {
        let least = self.heartbeat_interval_ms + command_timeout_ms;
        if self.liveness_ttl_ms <= least {
            return Err(SettingError::new(
                "notify.liveness_ttl_ms",
                format!(
                    "is {}, not more than notify.heartbeat_interval_ms + \
                     redis.command_timeout_ms ({least}), so one slow renewal would hand the \
                     poll to a second process",
                    self.liveness_ttl_ms
                ),
                format!(
                    "set {} above {least} (default 3500)",
                    env_name("notify.liveness_ttl_ms")
                ),
            ));
        }
        Ok(())
    }

    /// The relay must have somewhere to send: a default, the admin chats
    /// (`telegram.admin_chats`, given), or a route.
    pub(super) fn validate_targets(&self, admin_chats: &[ChatTarget]) -> Result<(), SettingError> {
        if self.chats.is_empty() && admin_chats.is_empty() && self.routes.trim().is_empty() {
            return Err(SettingError::new(
                "notify.chats",
                "is empty, and so are telegram.admin_chats and notify.routes: every notification \
                 would go nowhere",
                format!(
                    "set {} (or {}) to the chats that get MoviePilot's notifications, e.g. 123456789",
                    env_name("notify.chats"),
                    env_name("telegram.admin_chats")
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Needs;
    use crate::config::test_env::{NOTIFY, load, notify_env};
    use crate::vocabulary::{ChatTarget, NotificationType};

    #[test]
    fn notify_defaults_are_the_issues() {
        let s = load(&[]).unwrap();
        assert!(!s.notify.enabled);
        assert_eq!(s.notify.poll_interval_secs, 15);
        assert_eq!(s.notify.max_pages, 10);
        assert_eq!(s.notify.backfill, 0);
        assert_eq!(s.notify.duplicate_window_secs, 120);
        assert!(s.notify.chats.is_empty());
        load(&notify_env()).unwrap().validate(NOTIFY).unwrap();
    }

    #[test]
    fn notify_routes_take_both_spellings_and_name_their_variable_when_wrong() {
        let mut env = notify_env();
        env.push((
            "ONCEBOT__NOTIFY__ROUTES",
            "整理入库=-1001, 7; SiteMessage=7;organize=8",
        ));
        let s = load(&env).unwrap();
        s.validate(NOTIFY).unwrap();
        let chats = |ids: &[i64]| ids.iter().map(|&c| ChatTarget::chat(c)).collect::<Vec<_>>();
        assert_eq!(
            s.notify.parsed_routes().unwrap(),
            vec![
                (NotificationType::Organize, chats(&[-1001, 7, 8])),
                (NotificationType::SiteMessage, chats(&[7])),
            ]
        );
        for bad in [
            "下载=1",
            "Organize",
            "Organize=abc",
            "Organize=",
            "Organize=-100/x",
        ] {
            let mut env = notify_env();
            env.push(("ONCEBOT__NOTIFY__ROUTES", bad));
            let e = load(&env).unwrap().validate(NOTIFY).unwrap_err();
            assert_eq!(e.key, "notify.routes", "{bad}");
            assert!(e.to_string().contains("ONCEBOT__NOTIFY__ROUTES"), "{e}");
        }
    }

    /// Issue 45, item 5: a route or a default chat may be a forum topic; `chat/1` and a bare
    /// chat are its General topic.
    #[test]
    fn notify_routes_and_chats_take_a_forum_topic() {
        let mut env = notify_env();
        env.push((
            "ONCEBOT__NOTIFY__ROUTES",
            "整理入库=-100123/7,-100123/1;站点=-100123",
        ));
        env.push(("ONCEBOT__NOTIFY__CHATS", "-100123/9"));
        let s = load(&env).unwrap();
        s.validate(NOTIFY).unwrap();
        let general = ChatTarget::chat(-100123);
        assert_eq!(
            s.notify.parsed_routes().unwrap(),
            vec![
                (
                    NotificationType::Organize,
                    vec![ChatTarget::in_thread(-100123, Some(7)), general]
                ),
                (NotificationType::SiteMessage, vec![general]),
            ]
        );
        assert_eq!(
            s.notify.chats,
            vec![ChatTarget::in_thread(-100123, Some(9))]
        );
    }

    #[test]
    fn notify_settings_are_checked_only_when_the_relay_runs() {
        for (var, value, key) in [
            (
                "ONCEBOT__NOTIFY__POLL_INTERVAL_SECS",
                "0",
                "notify.poll_interval_secs",
            ),
            ("ONCEBOT__NOTIFY__MAX_PAGES", "0", "notify.max_pages"),
            (
                "ONCEBOT__NOTIFY__WEBHOOK_SECRET",
                "has space",
                "notify.webhook_secret",
            ),
            (
                "ONCEBOT__NOTIFY__LIVENESS_TTL_MS",
                "2000",
                "notify.liveness_ttl_ms",
            ),
            ("ONCEBOT__TELEGRAM__ADMIN_CHATS", "", "notify.chats"),
        ] {
            let mut env = notify_env();
            env.retain(|(k, _)| *k != var);
            env.push((var, value));
            let s = load(&env).unwrap();
            let e = s.validate(NOTIFY).unwrap_err();
            assert_eq!(e.key, key);
            assert!(
                e.fix.contains("ONCEBOT__NOTIFY__") || e.fix.contains("ONCEBOT__TELEGRAM__"),
                "{e}"
            );
            s.validate(Needs::default()).unwrap();
        }
        let mut env = notify_env();
        env.push(("ONCEBOT__NOTIFY__WEBHOOK_SECRET", "s3cret-value"));
        let s = load(&env).unwrap();
        assert!(!format!("{s:?}").contains("s3cret-value"));
    }
}
