//! `[moviepilot]`: where MoviePilot is, how oncebot signs in, how long each kind of call may
//! take, and how long its answers (the user mapping, the library check) are kept.

use std::time::Duration;

use serde::Deserialize;

use super::{Secret, SettingError, env_name, nonzero};

/// Where MoviePilot is and how to authenticate (see `moviepilot`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoviePilotSettings {
    /// The base URL, e.g. `http://moviepilot:3001` (the API) or `http://moviepilot:3000` (the web
    /// UI, which proxies `/api`). Required by the worker.
    pub url: String,
    /// MoviePilot's `API_TOKEN`, sent as `X-API-KEY`. v3 (and probably late v2) accept it
    /// everywhere; v2.5.6 does not, and needs `username` + `password`.
    pub api_key: Secret,
    /// A MoviePilot user oncebot logs in as (form login, bearer token).
    pub username: String,
    pub password: Secret,
    /// Bounds every call that does not wait for TMDB.
    pub timeout_secs: u64,
    /// Bounds the calls that make MoviePilot ask TMDB (media search and detail), which are slower.
    pub search_timeout_secs: u64,
    /// How long a job waits (in `retry_wait`, its attempts unspent) while MoviePilot refuses
    /// oncebot's credentials, before it fails: the operator's problem, not the user's.
    pub auth_wait_secs: u64,
    /// Bounds a resource search, which answers only after every indexer site has.
    pub resource_search_timeout_secs: u64,
    /// Bounds an add (`POST /api/v1/download/`): over qBittorrent MoviePilot takes 3 to 27 s.
    pub download_timeout_secs: u64,
    /// After an interrupted add, how long from that attempt's start to wait for MoviePilot to
    /// finish the request (and write its history row) before the add is sent again.
    pub download_settle_secs: u64,
    /// The most bytes of one MoviePilot answer oncebot reads: a release list is cut there, any
    /// other answer over it fails (the process's memory stays bounded, whatever the server
    /// sends).
    pub max_body_bytes: u64,
    /// How often MoviePilot's own Telegram mapping (each user's `telegram_userid`) is read
    /// again; 0 turns that mapping off (`telegram.users` alone maps users). See
    /// [`MoviePilotSettings::users_refresh`].
    pub users_refresh_secs: u64,
    /// How long the library check's answer for one media is kept in Redis (shared by every
    /// worker, kept over a restart); 0 asks MoviePilot every time. See
    /// [`MoviePilotSettings::library_cache`].
    pub library_cache_secs: u64,
}

/// The longest `moviepilot.library_cache_secs` (a day): a library answer older than that would
/// keep calling something "in your library" long after it was deleted, or the reverse.
pub const MAX_LIBRARY_CACHE_SECS: u64 = 86_400;

/// The longest `moviepilot.users_refresh_secs` (a day): a mapping older than that would keep a
/// removed MoviePilot user's role for too long.
pub const MAX_USERS_REFRESH_SECS: u64 = 86_400;

impl MoviePilotSettings {
    /// How often MoviePilot's own mapping is read, `None` when it is off (0).
    pub fn users_refresh(&self) -> Option<Duration> {
        (self.users_refresh_secs > 0).then(|| Duration::from_secs(self.users_refresh_secs))
    }

    /// How long a library check's answer is kept, `None` when the cache is off (0).
    pub fn library_cache(&self) -> Option<Duration> {
        (self.library_cache_secs > 0).then(|| Duration::from_secs(self.library_cache_secs))
    }

    /// `library_cache_secs`: at most a day.
    pub(super) fn validate_library_cache(&self) -> Result<(), SettingError> {
        if self.library_cache_secs > MAX_LIBRARY_CACHE_SECS {
            return Err(SettingError::new(
                "moviepilot.library_cache_secs",
                format!(
                    "is {}, more than {MAX_LIBRARY_CACHE_SECS} (a day): what is in the library \
                     would be told from an answer that old",
                    self.library_cache_secs
                ),
                format!(
                    "set {} to a number of seconds from 1 to {MAX_LIBRARY_CACHE_SECS} (default \
                     600), or 0 to ask MoviePilot every time",
                    env_name("moviepilot.library_cache_secs")
                ),
            ));
        }
        Ok(())
    }

    /// `users_refresh_secs`: every role reads it (workers refresh, ingress follows).
    pub(super) fn validate_users_refresh(&self) -> Result<(), SettingError> {
        if self.users_refresh_secs > MAX_USERS_REFRESH_SECS {
            return Err(SettingError::new(
                "moviepilot.users_refresh_secs",
                format!(
                    "is {}, more than {MAX_USERS_REFRESH_SECS} (a day): a MoviePilot user removed \
                     meanwhile would keep their role that long",
                    self.users_refresh_secs
                ),
                format!(
                    "set {} to a number of seconds from 1 to {MAX_USERS_REFRESH_SECS} (default \
                     600), or 0 to map users by telegram.users alone",
                    env_name("moviepilot.users_refresh_secs")
                ),
            ));
        }
        Ok(())
    }

    /// For the worker: where MoviePilot is and how to sign in.
    pub(super) fn validate(&self) -> Result<(), SettingError> {
        self.validate_url()?;
        self.validate_credentials()?;
        nonzero(
            &[
                ("moviepilot.timeout_secs", self.timeout_secs),
                ("moviepilot.search_timeout_secs", self.search_timeout_secs),
                (
                    "moviepilot.resource_search_timeout_secs",
                    self.resource_search_timeout_secs,
                ),
                (
                    "moviepilot.download_timeout_secs",
                    self.download_timeout_secs,
                ),
            ],
            ", so every call would time out at once",
            "a number of seconds, e.g. 15",
        )?;
        if self.max_body_bytes < MIN_MP_BODY_BYTES {
            return Err(SettingError::new(
                "moviepilot.max_body_bytes",
                format!(
                    "is {}, less than {MIN_MP_BODY_BYTES} bytes (a single release can be larger)",
                    self.max_body_bytes
                ),
                format!(
                    "set {} to a number of bytes, e.g. 8388608 (8 MiB, the default)",
                    env_name("moviepilot.max_body_bytes")
                ),
            ));
        }
        Ok(())
    }

    /// An http(s) URL with a host.
    fn validate_url(&self) -> Result<(), SettingError> {
        if self.url.trim().is_empty() {
            return Err(SettingError::new(
                "moviepilot.url",
                "is not set",
                format!(
                    "set {} to MoviePilot's address, e.g. http://moviepilot:3001",
                    env_name("moviepilot.url")
                ),
            ));
        }
        let parsed = reqwest::Url::parse(&self.url);
        if !matches!(&parsed, Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host()) {
            return Err(SettingError::new(
                "moviepilot.url",
                format!("is {:?}, not an http(s) URL", self.url),
                format!(
                    "set {} to MoviePilot's address, e.g. http://moviepilot:3001",
                    env_name("moviepilot.url")
                ),
            ));
        }
        Ok(())
    }

    /// An API key, or a username with its password (both or neither).
    fn validate_credentials(&self) -> Result<(), SettingError> {
        let has_login = !self.username.is_empty() && !self.password.is_empty();
        if !self.username.is_empty() && self.password.is_empty() {
            return Err(SettingError::new(
                "moviepilot.password",
                "is not set, but moviepilot.username is",
                format!(
                    "set {} to the password of MoviePilot user {:?}",
                    env_name("moviepilot.password"),
                    self.username
                ),
            ));
        }
        if self.username.is_empty() && !self.password.is_empty() {
            return Err(SettingError::new(
                "moviepilot.username",
                "is not set, but moviepilot.password is",
                format!(
                    "set {} to the MoviePilot user the password belongs to",
                    env_name("moviepilot.username")
                ),
            ));
        }
        if self.api_key.is_empty() && !has_login {
            return Err(SettingError::new(
                "moviepilot.api_key",
                "is not set, and neither are moviepilot.username and moviepilot.password",
                format!(
                    "set {} to MoviePilot's API_TOKEN (v3, late v2), or {} and {} to a \
                     MoviePilot user (needed for v2.5.6)",
                    env_name("moviepilot.api_key"),
                    env_name("moviepilot.username"),
                    env_name("moviepilot.password")
                ),
            ));
        }
        Ok(())
    }
}

/// The least `moviepilot.max_body_bytes` may be: one release with its media info is a few KiB.
const MIN_MP_BODY_BYTES: u64 = 64 * 1024;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::config::Needs;
    use crate::config::test_env::{WORKER, load};

    #[test]
    fn a_library_cache_longer_than_a_day_is_refused_and_0_turns_it_off() {
        let with = |secs: &str| load(&[("ONCEBOT__MOVIEPILOT__LIBRARY_CACHE_SECS", secs)]).unwrap();
        let defaults = load(&[]).unwrap();
        assert_eq!(
            defaults.moviepilot.library_cache(),
            Some(Duration::from_secs(600))
        );
        assert_eq!(with("0").moviepilot.library_cache(), None);
        with("0").validate(Needs::default()).unwrap();
        with("86400").validate(Needs::default()).unwrap();
        let e = with("86401").validate(Needs::default()).unwrap_err();
        assert_eq!(e.key, "moviepilot.library_cache_secs");
        let said = e.to_string();
        assert!(
            said.contains("ONCEBOT__MOVIEPILOT__LIBRARY_CACHE_SECS"),
            "{said}"
        );
        assert!(!said.contains('\n'), "one line: {said}");
    }

    #[test]
    fn moviepilot_defaults_need_a_url_for_the_worker() {
        let s = load(&[]).unwrap();
        assert_eq!(s.moviepilot.timeout_secs, 15);
        assert!(s.validate(Needs::default()).is_ok());
        let err = s.validate(WORKER).unwrap_err();
        assert_eq!(err.key, "moviepilot.url");
        assert!(
            err.to_string().contains("ONCEBOT__MOVIEPILOT__URL"),
            "{err}"
        );
    }

    #[test]
    fn moviepilot_url_must_be_http() {
        let s = load(&[
            ("ONCEBOT__MOVIEPILOT__URL", "moviepilot:3001"),
            ("ONCEBOT__MOVIEPILOT__API_KEY", "k"),
        ])
        .unwrap();
        assert_eq!(s.validate(WORKER).unwrap_err().key, "moviepilot.url");
    }

    #[test]
    fn a_moviepilot_body_limit_too_small_for_one_release_is_rejected() {
        let worker = |limit: &'static str| {
            load(&[
                ("ONCEBOT__MOVIEPILOT__URL", "http://127.0.0.1:3001"),
                ("ONCEBOT__MOVIEPILOT__API_KEY", "k"),
                ("ONCEBOT__MOVIEPILOT__MAX_BODY_BYTES", limit),
            ])
            .unwrap()
            .validate(WORKER)
        };
        let err = worker("1000").unwrap_err();
        assert_eq!(err.key, "moviepilot.max_body_bytes");
        assert!(
            err.to_string()
                .contains("ONCEBOT__MOVIEPILOT__MAX_BODY_BYTES"),
            "{err}"
        );
        worker("65536").unwrap();
        let defaults = load(&[]).unwrap();
        assert_eq!(defaults.moviepilot.max_body_bytes, 8 * 1024 * 1024);
    }

    #[test]
    fn moviepilot_needs_an_api_key_or_a_login() {
        let url = ("ONCEBOT__MOVIEPILOT__URL", "http://127.0.0.1:3001");
        let err = load(&[url]).unwrap().validate(WORKER).unwrap_err();
        assert_eq!(err.key, "moviepilot.api_key");
        let text = err.to_string();
        assert!(text.contains("ONCEBOT__MOVIEPILOT__API_KEY"), "{text}");
        assert!(text.contains("ONCEBOT__MOVIEPILOT__USERNAME"), "{text}");
        assert!(text.contains("ONCEBOT__MOVIEPILOT__PASSWORD"), "{text}");

        let half = load(&[url, ("ONCEBOT__MOVIEPILOT__USERNAME", "admin")]).unwrap();
        assert_eq!(
            half.validate(WORKER).unwrap_err().key,
            "moviepilot.password"
        );

        for env in [
            vec![url, ("ONCEBOT__MOVIEPILOT__API_KEY", "k")],
            vec![
                url,
                ("ONCEBOT__MOVIEPILOT__USERNAME", "admin"),
                ("ONCEBOT__MOVIEPILOT__PASSWORD", "pw"),
            ],
        ] {
            load(&env).unwrap().validate(WORKER).unwrap();
        }
    }

    #[test]
    fn moviepilot_secrets_never_show_in_debug_output() {
        let s = load(&[
            ("ONCEBOT__MOVIEPILOT__API_KEY", "key-1234567890abcdef"),
            ("ONCEBOT__MOVIEPILOT__PASSWORD", "pass-word-xyz"),
        ])
        .unwrap();
        let shown = format!("{s:?}");
        assert!(!shown.contains("key-1234567890abcdef"));
        assert!(!shown.contains("pass-word-xyz"));
    }
}
