//! Settings: `config/default.toml` (compiled in), then an operator file, then `ONCEBOT__*`
//! environment variables.
//!
//! Loading never guesses: an unknown key, a value of the wrong type or a setting a role needs but
//! lacks stops start-up with one [`SettingError`] line that names the setting, its environment
//! variable and the fix. Secrets are wrapped in [`Secret`], whose `Debug` never shows them.
//!
//! One file per section of `config/default.toml` holds that section's struct, its limits and its
//! checks (`redis.rs` for `[redis]`, ...). This file holds what they share (`Secret`,
//! `SettingError`, `env_name`, the chat-list parser) and what spans them: loading, [`Needs`] and
//! [`Settings::validate`], which runs the sections' checks in order. A section file uses only
//! this file's items, never another section's. A method of `Settings` that reads one section
//! lives in that section's file (`Settings::directory` in `telegram.rs`,
//! `Settings::runtime_threads` in `runtime.rs`).

mod admin;
mod commands;
mod dispatcher;
mod follow;
mod household;
mod http;
mod ledger;
mod log;
mod moviepilot;
mod notify;
mod redis;
mod runtime;
mod telegram;
#[cfg(test)]
mod test_env;
mod worker;

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Deserializer};

use crate::vocabulary::ChatTarget;

pub use crate::assets::DEFAULT_TOML;
pub use admin::{AdminSettings, MIN_ADMIN_PASSWORD_CHARS};
pub use commands::CommandSettings;
pub use dispatcher::DispatcherSettings;
pub use follow::{FOLLOW_MAX_DAYS, FollowSettings};
pub use household::{
    HouseholdSettings, MAX_ACCESS_REQUEST_WINDOW_SECS, MAX_PENDING_ACCESS_REQUESTS, Quotas,
};
pub use http::HttpSettings;
pub use ledger::LedgerSettings;
pub use log::{LogFormat, LogSettings};
pub use moviepilot::{MAX_LIBRARY_CACHE_SECS, MAX_USERS_REFRESH_SECS, MoviePilotSettings};
pub use notify::{NOTIFY_MAX_PAGES, NOTIFY_REQUESTER_TTL_MAX, NotifySettings};
pub use redis::{RedisSettings, cluster_nodes, is_redis_url};
pub use runtime::{RuntimeSettings, cpu_cores};
pub use telegram::{Locale, TelegramSettings};
pub use worker::WorkerSettings;

/// Environment variables that override settings start with this, then `__SECTION__KEY`.
pub const ENV_PREFIX: &str = "ONCEBOT";

/// Every setting oncebot reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub redis: RedisSettings,
    pub http: HttpSettings,
    pub admin: AdminSettings,
    pub telegram: TelegramSettings,
    pub household: HouseholdSettings,
    pub ledger: LedgerSettings,
    pub worker: WorkerSettings,
    pub dispatcher: DispatcherSettings,
    pub commands: CommandSettings,
    pub moviepilot: MoviePilotSettings,
    pub notify: NotifySettings,
    pub follow: FollowSettings,
    pub log: LogSettings,
    pub runtime: RuntimeSettings,
}

/// A string that must never reach a log line: `Debug` and `Display` print `[redacted]`.
#[derive(Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    /// The value itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// One bad or missing setting, said in one line an operator can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} {problem}: {fix}")]
pub struct SettingError {
    /// The setting, as `section.key`.
    pub key: &'static str,
    pub problem: String,
    pub fix: String,
}

impl SettingError {
    fn new(key: &'static str, problem: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            key,
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}

/// The environment variable that sets `section.key`.
pub fn env_name(key: &str) -> String {
    format!("{ENV_PREFIX}__{}", key.replace('.', "__").to_uppercase())
}

/// Which parts of the settings a command needs; validation checks only those.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// Receives updates (webhook or polling): needs the allow-list and the HTTP listener.
    pub ingress: bool,
    /// Ingress by webhook: needs the webhook secret.
    pub webhook: bool,
    /// Talks to the Bot API: needs the token.
    pub bot_api: bool,
    /// Talks to MoviePilot (the worker): needs its URL and credentials.
    pub moviepilot: bool,
    /// Sends replies (the dispatcher): its liveness must outlast a slow Redis call.
    pub dispatcher: bool,
    /// Relays MoviePilot's notifications: needs MoviePilot and the `notify` settings.
    pub notify: bool,
}

impl Settings {
    /// Every secret of the configuration, for the log's last line of defence
    /// (`telemetry::init`): the bot token, both webhook secrets, MoviePilot's API key and
    /// password, the operator page's password and a password in a Redis URL.
    pub fn secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = [
            &self.telegram.token,
            &self.telegram.webhook_secret,
            &self.notify.webhook_secret,
            &self.moviepilot.api_key,
            &self.moviepilot.password,
            &self.admin.password,
        ]
        .iter()
        .map(|s| s.expose().to_string())
        .collect();
        for url in self.redis.url.expose().split(',') {
            if let Ok(parsed) = reqwest::Url::parse(url.trim())
                && let Some(password) = parsed.password()
            {
                out.push(password.to_string());
            }
        }
        out.retain(|s| !s.is_empty());
        out
    }

    /// Defaults, then `file` (if any), then `ONCEBOT__*` variables from the process environment.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Self> {
        Self::load_from(file, std::env::vars())
    }

    /// Like [`Settings::load`] with an explicit environment, so tests need not touch the process's.
    pub fn load_from(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let mut builder = config::Config::builder().add_source(config::File::from_str(
            DEFAULT_TOML,
            config::FileFormat::Toml,
        ));
        if let Some(path) = file {
            if !path.exists() {
                anyhow::bail!(
                    "config file {} does not exist: check the path given to --config",
                    path.display()
                );
            }
            builder = builder.add_source(
                config::File::from(path)
                    .format(config::FileFormat::Toml)
                    .required(true),
            );
        }
        let env: config::Map<String, String> = env
            .into_iter()
            .filter(|(k, _)| k.starts_with(&format!("{ENV_PREFIX}__")))
            .collect();
        builder = builder.add_source(
            config::Environment::with_prefix(ENV_PREFIX)
                .separator("__")
                .source(Some(env)),
        );
        let built = builder.build().context(
            "reading settings (config/default.toml, --config file, ONCEBOT__* variables)",
        )?;
        let settings: Settings = built.try_deserialize().map_err(|e| {
            anyhow::anyhow!(
                "invalid settings: {e} (every setting is listed with its meaning in config/default.toml; \
                 environment variables are ONCEBOT__SECTION__KEY)"
            )
        })?;
        Ok(settings)
    }

    /// Checks what every command needs, plus what `needs` asks for.
    pub fn validate(&self, needs: Needs) -> Result<(), SettingError> {
        self.redis.validate()?;
        self.directory()?;
        self.moviepilot.validate_users_refresh()?;
        self.moviepilot.validate_library_cache()?;
        self.http.validate_limits()?;
        self.ledger.validate()?;
        self.worker.validate()?;
        self.dispatcher.validate()?;
        self.household.validate()?;
        self.follow.validate()?;
        if needs.bot_api {
            self.telegram.validate_bot_api()?;
        }
        if needs.webhook {
            self.telegram.validate_webhook_secret()?;
        }
        self.commands.validate()?;
        self.telegram.validate_button_lifetimes()?;
        if needs.ingress {
            self.telegram
                .validate_updates(self.household.access_requests)?;
            self.http.validate()?;
            // Every ingress serves the relay's wake-up path while the relay is on.
            if self.notify.enabled {
                self.notify.validate_wake_secret()?;
            }
        }
        if needs.moviepilot || needs.notify {
            self.moviepilot.validate()?;
        }
        if needs.notify {
            self.notify.validate(self.redis.command_timeout_ms)?;
            self.notify.validate_targets(&self.telegram.admin_chats)?;
        }
        self.admin.validate()?;
        self.validate_liveness(needs)
    }

    /// The liveness of the consumer roles that run: an expiry that one slow heartbeat could
    /// outlive would let a live process look dead.
    fn validate_liveness(&self, needs: Needs) -> Result<(), SettingError> {
        let (w, d) = (&self.worker, &self.dispatcher);
        for (runs, interval_key, interval, ttl_key, ttl) in [
            (
                needs.moviepilot,
                "worker.heartbeat_interval_ms",
                w.heartbeat_interval_ms,
                "worker.liveness_ttl_ms",
                w.liveness_ttl_ms,
            ),
            (
                needs.dispatcher,
                "dispatcher.heartbeat_interval_ms",
                d.heartbeat_interval_ms,
                "dispatcher.liveness_ttl_ms",
                d.liveness_ttl_ms,
            ),
        ] {
            if !runs {
                continue;
            }
            if interval < 50 {
                return Err(SettingError::new(
                    interval_key,
                    format!("is {interval}, more often than Redis should be asked"),
                    format!(
                        "set {} to at least 50 (default 1000)",
                        env_name(interval_key)
                    ),
                ));
            }
            // One slow heartbeat (up to a whole command timeout late) must not let a live
            // process look dead.
            let least = interval + self.redis.command_timeout_ms;
            if ttl <= least {
                return Err(SettingError::new(
                    ttl_key,
                    format!(
                        "is {ttl}, not more than {interval_key} + redis.command_timeout_ms \
                         ({least}), so one slow heartbeat would make a live process look dead"
                    ),
                    format!("set {} above {least} (default 3500)", env_name(ttl_key)),
                ));
            }
        }
        Ok(())
    }
}

/// The fewest characters a secret that guards a door may have (`telegram.webhook_secret`,
/// `notify.webhook_secret`): one character was found in 37 tries.
pub const MIN_SECRET_CHARS: usize = 16;

/// What is wrong with a non-empty secret that guards a door, if anything: Telegram's own rules
/// for `secret_token` (1-256 characters of A-Z a-z 0-9 _ -, also safe in a URL path) and at
/// least [`MIN_SECRET_CHARS`].
fn secret_problem(secret: &str) -> Option<String> {
    let charset_ok = secret
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !charset_ok || secret.len() > 256 {
        return Some(format!(
            "is not {MIN_SECRET_CHARS}-256 characters of A-Z a-z 0-9 _ -"
        ));
    }
    if secret.len() < MIN_SECRET_CHARS {
        return Some(format!(
            "has {} characters, fewer than the {MIN_SECRET_CHARS} a secret needs (a short one \
             is guessed in a few tries)",
            secret.len()
        ));
    }
    None
}

/// The first of `settings` that is 0: "`key` is 0`because`: set VAR to `fix`".
fn nonzero(settings: &[(&'static str, u64)], because: &str, fix: &str) -> Result<(), SettingError> {
    match settings.iter().find(|(_, value)| *value == 0) {
        Some((key, _)) => Err(SettingError::new(
            key,
            format!("is 0{because}"),
            format!("set {} to {fix}", env_name(key)),
        )),
        None => Ok(()),
    }
}

/// A list of chats (`telegram.allowed_users`, `telegram.admin_chats`, `notify.chats`), each
/// `chat` or `chat/topic` ([`ChatTarget::parse`]): one parser for every list of Telegram ids.
/// `telegram.allowed_users` takes people, so its check ([`Settings::directory`]) refuses a
/// topic with a [`SettingError`] naming the entry.
/// Accepts `"1,2,3"` (what an environment variable gives), a TOML array of numbers or strings,
/// or a single number.
fn chat_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ChatTarget>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Number(i64),
        List(Vec<Item>),
    }
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Item {
        Number(i64),
        Text(String),
    }
    let ids = match Raw::deserialize(d)? {
        Raw::Number(n) => vec![ChatTarget::chat(n)],
        Raw::Text(s) => s
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(ChatTarget::parse)
            .collect::<Result<_, _>>()
            .map_err(serde::de::Error::custom)?,
        Raw::List(items) => items
            .into_iter()
            .map(|i| match i {
                Item::Number(n) => Ok(ChatTarget::chat(n)),
                Item::Text(s) => ChatTarget::parse(&s),
            })
            .collect::<Result<_, _>>()
            .map_err(serde::de::Error::custom)?,
    };
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_env::{ALL, WORKER, load, notify_env, serving_env};

    #[test]
    fn a_liveness_expiry_one_slow_heartbeat_could_outlive_is_refused() {
        let worker = [
            ("ONCEBOT__MOVIEPILOT__URL", "http://127.0.0.1:3001"),
            ("ONCEBOT__MOVIEPILOT__API_KEY", "k"),
        ];
        load(&worker).unwrap().validate(WORKER).unwrap();
        let mut short = worker.to_vec();
        short.push(("ONCEBOT__WORKER__LIVENESS_TTL_MS", "3000"));
        let e = load(&short).unwrap().validate(WORKER).unwrap_err();
        assert_eq!(e.key, "worker.liveness_ttl_ms");
        assert!(
            e.to_string().contains("ONCEBOT__WORKER__LIVENESS_TTL_MS"),
            "{e}"
        );
        // Only for the roles that run: an ingress alone has no liveness.
        load(&[("ONCEBOT__REDIS__COMMAND_TIMEOUT_MS", "10000")])
            .unwrap()
            .validate(Needs::default())
            .unwrap();
        let mut often = serving_env();
        often.push(("ONCEBOT__DISPATCHER__HEARTBEAT_INTERVAL_MS", "10"));
        let e = load(&often).unwrap().validate(ALL).unwrap_err();
        assert_eq!(e.key, "dispatcher.heartbeat_interval_ms");
    }

    #[test]
    fn defaults_load_and_are_safe() {
        let s = load(&[]).unwrap();
        assert_eq!(s.redis.url.expose(), "redis://127.0.0.1:6379");
        assert_eq!(s.redis.key_prefix, "oncebot");
        assert_eq!(s.http.listen, "0.0.0.0:8080");
        assert_eq!(s.telegram.api_url, "https://api.telegram.org");
        assert!(s.validate(Needs::default()).is_ok());
        assert_eq!(s.validate(ALL).unwrap_err().key, "telegram.token");
    }

    #[test]
    fn environment_overrides_with_double_underscores() {
        let mut env = serving_env();
        env.push(("ONCEBOT__REDIS__URL", "redis://10.0.0.1:6380"));
        env.push(("ONCEBOT__REDIS__KEY_PREFIX", "bot2"));
        env.push(("ONCEBOT__HTTP__LISTEN", "127.0.0.1:9000"));
        let s = load(&env).unwrap();
        assert_eq!(s.redis.url.expose(), "redis://10.0.0.1:6380");
        assert_eq!(s.redis.key_prefix, "bot2");
        assert_eq!(s.telegram.allowed_user_ids(), vec![1, 2, 3]);
        s.validate(ALL).unwrap();
    }

    /// Issue 41, item 3: a secret that guards a door has at least 16 characters; the error
    /// names the setting and how to make one.
    #[test]
    fn a_secret_shorter_than_16_characters_is_refused_naming_the_setting_and_the_fix() {
        for (var, key) in [
            (
                "ONCEBOT__TELEGRAM__WEBHOOK_SECRET",
                "telegram.webhook_secret",
            ),
            ("ONCEBOT__NOTIFY__WEBHOOK_SECRET", "notify.webhook_secret"),
        ] {
            for (value, ok) in [
                ("a", false),
                ("abcdefghij12345", false),
                ("abcdefghij123456", true),
            ] {
                let mut env = serving_env();
                env.extend(notify_env());
                env.retain(|(k, _)| *k != var);
                env.push((var, value));
                let got = load(&env).unwrap().validate(ALL);
                if ok {
                    assert!(got.is_ok(), "{var}={value}: {got:?}");
                    continue;
                }
                let err = got.unwrap_err();
                assert_eq!(err.key, key, "{var}={value}");
                let line = err.to_string();
                assert!(line.contains(var), "{line}");
                assert!(line.contains("fewer than the 16"), "{line}");
                assert!(line.contains("openssl rand -hex 32"), "{line}");
            }
        }
    }

    #[test]
    fn a_non_numeric_user_id_is_rejected_with_its_value() {
        let mut env = serving_env();
        env.retain(|(k, _)| !k.contains("ALLOWED"));
        env.push(("ONCEBOT__TELEGRAM__ALLOWED_USERS", "12,alice"));
        let err = load(&env).unwrap_err().to_string();
        assert!(err.contains("alice"), "{err}");
    }

    #[test]
    fn an_unknown_setting_is_an_error() {
        let err = load(&[("ONCEBOT__REDIS__URLL", "x")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("urll"), "{err}");
    }

    #[test]
    fn secrets_never_show_in_debug_output() {
        let s = load(&serving_env()).unwrap();
        let shown = format!("{s:?}");
        assert!(!shown.contains("abc-DEF_ghi"));
        assert!(!shown.contains("s3cret_-"));
    }

    #[test]
    fn env_names_follow_the_documented_pattern() {
        assert_eq!(env_name("redis.key_prefix"), "ONCEBOT__REDIS__KEY_PREFIX");
    }

    #[test]
    fn the_example_operator_file_loads_and_validates() {
        let path = crate::assets::path("config/example.toml");
        let s = Settings::load_from(Some(&path), std::iter::empty()).unwrap();
        assert_eq!(s.telegram.allowed_user_ids(), vec![123456789, 987654321]);
        assert_eq!(s.telegram.locale, Locale::En);
        // The token and the webhook secret come from the environment, never from the file.
        s.validate(Needs {
            ingress: true,
            ..Needs::default()
        })
        .unwrap();
        let with_secrets = Settings::load_from(
            Some(&path),
            serving_env()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string())),
        )
        .unwrap();
        with_secrets.validate(ALL).unwrap();
    }

    /// docs/settings.md's table is the operator's reference; it must not miss a key. Each key
    /// has its own row, which opens with the key and then its variable.
    #[test]
    fn the_settings_doc_has_a_row_for_every_setting_with_its_variable() {
        let doc = crate::assets::read("docs/settings.md");
        let mut section = String::new();
        let mut missing = Vec::new();
        for line in DEFAULT_TOML.lines().map(str::trim) {
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = name.to_string();
            } else if let Some((key, _)) = line.split_once('=')
                && !line.starts_with('#')
            {
                let setting = format!("{section}.{}", key.trim());
                let var = env_name(&setting);
                let row = format!("| `{setting}` | `{var}` |");
                if !doc.lines().any(|l| l.starts_with(&row)) {
                    missing.push(row);
                }
            }
        }
        assert!(
            missing.is_empty(),
            "docs/settings.md has no row {missing:?}"
        );
    }
}
