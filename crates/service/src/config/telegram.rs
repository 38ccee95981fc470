//! `[telegram]`: the bot (its token and the Bot API), how updates arrive (webhook secret,
//! polling), who may use it (`allowed_users`, `users`), the language and the buttons' lifetimes.

use serde::Deserialize;

use super::{
    MIN_SECRET_CHARS, Secret, SettingError, Settings, chat_list, env_name, nonzero, secret_problem,
};
use crate::vocabulary::ChatTarget;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelegramSettings {
    pub token: Secret,
    pub api_url: String,
    pub webhook_secret: Secret,
    pub webhook_url: String,
    /// People, by Telegram id: read by the one chat-list parser, so a `chat/topic` entry is
    /// refused by [`Settings::directory`] (a person has no topic), not taken for a number.
    #[serde(deserialize_with = "chat_list")]
    pub allowed_users: Vec<ChatTarget>,
    /// Who each allowed user is: `<id>=<MoviePilot name>:<role>`, comma-separated (see
    /// `users::parse_users`). Empty maps nobody, so every allowed user keeps every right.
    pub users: String,
    pub bot_username: String,
    pub poll_timeout_secs: u64,
    /// After getUpdates answers 409 (a webhook is set, or another poller), wait this long
    /// before asking again: the conflict needs an operator, so retrying fast only adds noise.
    pub poll_conflict_retry_secs: u64,
    pub locale: Locale,
    /// How long a user's buttons (confirmations, choices) can be used: an old message's button
    /// tapped by mistake a day later must not run anything.
    pub confirm_ttl_secs: u64,
    /// Chats told about jobs that need a person, with buttons to settle them; `chat/topic`
    /// sends them to one forum topic.
    #[serde(deserialize_with = "chat_list")]
    pub admin_chats: Vec<ChatTarget>,
    /// How long those review buttons can be used; longer than `confirm_ttl_secs`, because a
    /// person may not look at once (and `oncebot jobs resolve` remains after it).
    pub review_ttl_secs: u64,
    /// Posters: a reply that names a media (search results, a release list, a subscription)
    /// and a relayed notification go as a photo with the text as its caption. `false`: text
    /// only, every one of them (the dispatcher drops the poster).
    pub posters: bool,
}

/// The language replies are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Locale {
    Zh,
    En,
}

impl TelegramSettings {
    /// `allowed_users` as ids (a `chat/topic` entry is refused by [`Settings::directory`]).
    pub fn allowed_user_ids(&self) -> Vec<i64> {
        self.allowed_users.iter().map(|u| u.chat).collect()
    }

    /// The admin chats without their topics: where a tap must come from, whose menus are set.
    pub fn admin_chat_ids(&self) -> Vec<i64> {
        self.admin_chats.iter().map(|c| c.chat).collect()
    }

    /// Whether the Bot API can be called with these settings, for what a process may send
    /// without needing it (`redis_health`'s admin notices).
    pub fn bot_api_usable(&self) -> bool {
        self.validate_bot_api().is_ok()
    }

    /// For roles that call the Bot API.
    pub(super) fn validate_bot_api(&self) -> Result<(), SettingError> {
        let token = self.token.expose();
        let fix = || {
            format!(
                "set {} to the token @BotFather gave you",
                env_name("telegram.token")
            )
        };
        if token.is_empty() {
            return Err(SettingError::new("telegram.token", "is not set", fix()));
        }
        if !token_looks_valid(token) {
            return Err(SettingError::new(
                "telegram.token",
                "does not look like a bot token (expected <digits>:<letters, digits, _ and ->)",
                fix(),
            ));
        }
        if reqwest::Url::parse(&self.api_url).is_err() {
            return Err(SettingError::new(
                "telegram.api_url",
                format!("is {:?}, not a URL", self.api_url),
                format!(
                    "set {} to https://api.telegram.org or your Bot API server's URL",
                    env_name("telegram.api_url")
                ),
            ));
        }
        Ok(())
    }

    /// For the webhook: Telegram's own rules for `secret_token`, and at least
    /// [`MIN_SECRET_CHARS`].
    pub(super) fn validate_webhook_secret(&self) -> Result<(), SettingError> {
        let secret = self.webhook_secret.expose();
        let problem = if secret.is_empty() {
            Some("is not set".to_string())
        } else {
            secret_problem(secret)
        };
        match problem {
            None => Ok(()),
            Some(problem) => Err(SettingError::new(
                "telegram.webhook_secret",
                problem,
                format!(
                    "set {} to a random string of {MIN_SECRET_CHARS}-256 characters of A-Z a-z \
                     0-9 _ - (e.g. `openssl rand -hex 32`); use --poll if you have no webhook",
                    env_name("telegram.webhook_secret")
                ),
            )),
        }
    }

    pub(super) fn validate_button_lifetimes(&self) -> Result<(), SettingError> {
        nonzero(
            &[
                ("telegram.confirm_ttl_secs", self.confirm_ttl_secs),
                ("telegram.review_ttl_secs", self.review_ttl_secs),
            ],
            ", so every button would have expired before it is shown",
            "a number of seconds, e.g. 600",
        )
    }

    /// For the roles that take updates (webhook or polling). `access_requests`
    /// (`household.access_requests`): the allow-list may be empty, the deployment is claimed.
    pub(super) fn validate_updates(&self, access_requests: bool) -> Result<(), SettingError> {
        if self.allowed_users.is_empty() && !access_requests {
            return Err(SettingError::new(
                "telegram.allowed_users",
                "is empty, so nobody could use the bot",
                format!(
                    "set {} to your Telegram user ids, comma-separated (e.g. 123456789,987654321), \
                     or set {}=true to start with nobody and claim the bot from the chat (its \
                     claim code is logged)",
                    env_name("telegram.allowed_users"),
                    env_name("household.access_requests")
                ),
            ));
        }
        if self.poll_timeout_secs > 50 {
            return Err(SettingError::new(
                "telegram.poll_timeout_secs",
                format!("is {}, above Telegram's 50", self.poll_timeout_secs),
                format!("set {} to 0-50", env_name("telegram.poll_timeout_secs")),
            ));
        }
        nonzero(
            &[(
                "telegram.poll_conflict_retry_secs",
                self.poll_conflict_retry_secs,
            )],
            ", which would ask Telegram again without pause",
            "e.g. 30",
        )
    }
}

/// `<digits>:<35ish characters of A-Z a-z 0-9 _ ->`, as @BotFather issues them.
fn token_looks_valid(token: &str) -> bool {
    let Some((id, rest)) = token.split_once(':') else {
        return false;
    };
    !id.is_empty()
        && id.chars().all(|c| c.is_ascii_digit())
        && !rest.is_empty()
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl Settings {
    /// The allowed users and who each is (`telegram.users`), or the entry that is wrong.
    pub fn directory(&self) -> Result<crate::users::Directory, SettingError> {
        let fix = || {
            format!(
                "set {} to <telegram id>=<MoviePilot name>:<viewer|requester|user|admin>, \
                 comma-separated (e.g. 111111111=alice:admin,222222222=:user), each id also in {}",
                env_name("telegram.users"),
                env_name("telegram.allowed_users")
            )
        };
        if let Some(topic) = self
            .telegram
            .allowed_users
            .iter()
            .find(|u| u.thread.is_some())
        {
            return Err(SettingError::new(
                "telegram.allowed_users",
                format!(
                    "has {:?}, a chat and a forum topic; it lists people, by their Telegram user id",
                    topic.to_string()
                ),
                format!(
                    "set {} to Telegram user ids only, comma-separated (e.g. 123456789); a topic \
                     belongs in {} or {}",
                    env_name("telegram.allowed_users"),
                    env_name("telegram.admin_chats"),
                    env_name("notify.routes")
                ),
            ));
        }
        let mappings = crate::users::parse_users(&self.telegram.users)
            .map_err(|e| SettingError::new("telegram.users", e.to_string(), fix()))?;
        crate::users::Directory::new(&self.telegram.allowed_user_ids(), mappings)
            .map_err(|e| SettingError::new("telegram.users", e.to_string(), fix()))
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Needs;
    use crate::config::test_env::{ALL, NOTIFY, WORKER, load, serving_env};
    use crate::vocabulary::ChatTarget;

    /// `telegram.users` is checked in every role (a worker records roles too), and a bad entry
    /// is named with why.
    #[test]
    fn telegram_users_is_checked_in_every_role_naming_the_entry() {
        let mut env = serving_env();
        env.push(("ONCEBOT__TELEGRAM__USERS", "1=alice:admin,2=:user"));
        let s = load(&env).unwrap();
        s.validate(ALL).unwrap();
        assert_eq!(s.directory().unwrap().rows().len(), 3);
        for (users, says) in [
            (
                "1=alice:admin,2=bob:boss",
                "\"2=bob:boss\" has an unknown role \"boss\"",
            ),
            (
                "1=alice:admin,9=x:user",
                "maps 9, who is not in telegram.allowed_users",
            ),
            ("1=alice:admin,1=bob:user", "maps 1 again"),
        ] {
            let mut env = serving_env();
            env.push(("ONCEBOT__TELEGRAM__USERS", users));
            for needs in [ALL, WORKER, NOTIFY, Needs::default()] {
                let e = load(&env).unwrap().validate(needs).unwrap_err();
                assert_eq!(e.key, "telegram.users");
                let text = e.to_string();
                assert!(text.contains(says), "{text}");
                assert!(text.contains("ONCEBOT__TELEGRAM__USERS"), "{text}");
            }
        }
    }

    #[test]
    fn a_missing_webhook_secret_names_its_variable() {
        let env: Vec<_> = serving_env()
            .into_iter()
            .filter(|(k, _)| !k.contains("SECRET"))
            .collect();
        let err = load(&env).unwrap().validate(ALL).unwrap_err();
        assert_eq!(err.key, "telegram.webhook_secret");
        assert!(
            err.to_string()
                .contains("ONCEBOT__TELEGRAM__WEBHOOK_SECRET")
        );
    }

    #[test]
    fn a_webhook_secret_with_forbidden_characters_is_rejected() {
        let mut env = serving_env();
        env.retain(|(k, _)| !k.contains("SECRET"));
        env.push(("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", "has space"));
        let err = load(&env).unwrap().validate(ALL).unwrap_err();
        assert_eq!(err.key, "telegram.webhook_secret");
    }

    #[test]
    fn a_zero_poll_conflict_pause_is_rejected() {
        let mut env = serving_env();
        env.push(("ONCEBOT__TELEGRAM__POLL_CONFLICT_RETRY_SECS", "0"));
        let err = load(&env).unwrap().validate(ALL).unwrap_err();
        assert_eq!(err.key, "telegram.poll_conflict_retry_secs");
    }

    #[test]
    fn admin_chats_take_user_and_group_ids_and_default_to_none() {
        assert!(load(&[]).unwrap().telegram.admin_chats.is_empty());
        let s = load(&[("ONCEBOT__TELEGRAM__ADMIN_CHATS", "1001, -1001234567890")]).unwrap();
        assert_eq!(s.telegram.admin_chat_ids(), vec![1001, -1001234567890]);
        assert_eq!(s.telegram.confirm_ttl_secs, 600);
    }

    /// Issue 45, item 5: an admin chat may be a forum topic; `chat/1` and a bare chat are the
    /// General topic (no thread: Telegram refuses `message_thread_id=1`).
    #[test]
    fn admin_chats_take_a_forum_topic_and_general_is_no_topic() {
        let s = load(&[(
            "ONCEBOT__TELEGRAM__ADMIN_CHATS",
            "-100123/7, -100123/1, -100456",
        )])
        .unwrap();
        assert_eq!(
            s.telegram.admin_chats,
            vec![
                ChatTarget::in_thread(-100123, Some(7)),
                ChatTarget::chat(-100123),
                ChatTarget::chat(-100456),
            ]
        );
        let e = load(&[("ONCEBOT__TELEGRAM__ADMIN_CHATS", "-100123/x")]).unwrap_err();
        assert!(e.to_string().contains("not a topic id"), "{e}");
    }

    /// `telegram.allowed_users` shares the list parser but lists people: a topic is refused with
    /// the setting, the entry and the fix.
    #[test]
    fn allowed_users_refuse_a_topic_naming_the_entry() {
        let mut env = serving_env();
        env.retain(|(k, _)| *k != "ONCEBOT__TELEGRAM__ALLOWED_USERS");
        env.push(("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1,123/7"));
        let e = load(&env).unwrap().validate(ALL).unwrap_err();
        assert_eq!(e.key, "telegram.allowed_users");
        let text = e.to_string();
        assert!(text.contains("\"123/7\""), "{text}");
        assert!(text.contains("ONCEBOT__TELEGRAM__ALLOWED_USERS"), "{text}");
        // The General topic is no topic: `123/1` is the id 123.
        env.pop();
        env.push(("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1,123/1"));
        let s = load(&env).unwrap();
        s.validate(ALL).unwrap();
        assert_eq!(s.telegram.allowed_user_ids(), vec![1, 123]);
    }

    #[test]
    fn a_zero_button_lifetime_is_rejected() {
        let s = load(&[("ONCEBOT__TELEGRAM__CONFIRM_TTL_SECS", "0")]).unwrap();
        assert_eq!(
            s.validate(Needs::default()).unwrap_err().key,
            "telegram.confirm_ttl_secs"
        );
    }
}
