//! `[admin]`: the operator's page (`admin_web`), off until a password is set, and the checks
//! that keep it from being guessed or reached from the wrong origin.

use std::net::SocketAddr;

use serde::Deserialize;

use super::{Secret, SettingError, Settings, env_name};

/// The operator's page (`admin_web`): off while `password` is empty.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminSettings {
    pub password: Secret,
    pub user: String,
    /// Show, never act: no action is offered, and a posted one is refused.
    pub read_only: bool,
    /// Its own address; empty serves it on `http.listen`.
    pub listen: String,
    /// The page's address as the browser sees it (e.g. `https://bot.example.org` behind a TLS
    /// proxy): a decision's Origin must name its scheme, host and port. Empty: `http://` and the
    /// request's Host.
    pub public_url: String,
}

impl AdminSettings {
    /// The page is served only when a password is set.
    pub fn enabled(&self) -> bool {
        !self.password.is_empty()
    }

    /// Its own address: `None` when it shares `http.listen`.
    pub fn listen_addr(&self) -> Result<Option<SocketAddr>, std::net::AddrParseError> {
        match self.listen.trim() {
            "" => Ok(None),
            addr => addr.parse().map(Some),
        }
    }

    /// The operator's page, when it is on: a user name basic auth can carry, and its own
    /// address if one is given.
    pub(super) fn validate(&self) -> Result<(), SettingError> {
        let a = self;
        if !a.enabled() {
            return Ok(());
        }
        if a.user.is_empty() || a.user.contains(':') || a.user.chars().any(char::is_control) {
            return Err(SettingError::new(
                "admin.user",
                format!("is {:?}, which basic auth cannot carry", a.user),
                format!(
                    "set {} to a name without ':' (default admin)",
                    env_name("admin.user")
                ),
            ));
        }
        if a.password.expose().chars().count() < MIN_ADMIN_PASSWORD_CHARS {
            return Err(SettingError::new(
                "admin.password",
                format!(
                    "is shorter than {MIN_ADMIN_PASSWORD_CHARS} characters, short enough to guess \
                     over the network"
                ),
                format!(
                    "set {} to at least {MIN_ADMIN_PASSWORD_CHARS} characters, e.g. the output of \
                     `openssl rand -base64 24`",
                    env_name("admin.password")
                ),
            ));
        }
        if a.password.expose().chars().any(char::is_control) {
            return Err(SettingError::new(
                "admin.password",
                "contains a control character, which a browser cannot send",
                format!("set {} to printable characters", env_name("admin.password")),
            ));
        }
        if self.listen_addr().is_err() {
            return Err(SettingError::new(
                "admin.listen",
                format!("is {:?}, not an address", a.listen),
                format!(
                    "set {} to e.g. 127.0.0.1:8081, or leave it empty to serve the page on http.listen",
                    env_name("admin.listen")
                ),
            ));
        }
        if let Err(why) = self.public_origin() {
            return Err(SettingError::new(
                "admin.public_url",
                format!("is {:?}, {why}", a.public_url),
                format!(
                    "set {} to the page's address as the browser shows it, e.g. \
                     https://bot.example.org (scheme, host and port only), or leave it empty",
                    env_name("admin.public_url")
                ),
            ));
        }
        Ok(())
    }

    /// `admin.public_url` as an origin (`https://bot.example.org`, a port only when it is not
    /// the scheme's default): `None` when empty.
    pub fn public_origin(&self) -> Result<Option<String>, &'static str> {
        let given = self.public_url.trim();
        if given.is_empty() {
            return Ok(None);
        }
        let url = reqwest::Url::parse(given).map_err(|_| "not a URL")?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err("not an http or https URL");
        }
        let Some(host) = url.host_str() else {
            return Err("a URL without a host");
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err("a URL with a user or password, which an origin never has");
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return Err("a URL with a path, query or fragment, which an origin never has");
        }
        Ok(Some(match url.port() {
            Some(port) => format!("{}://{host}:{port}", url.scheme()),
            None => format!("{}://{host}", url.scheme()),
        }))
    }
}

/// The shortest `admin.password` accepted: with the page's throttle (10 guesses a second per
/// peer), 16 random characters are out of reach of online guessing.
pub const MIN_ADMIN_PASSWORD_CHARS: usize = 16;

impl Settings {
    /// The operator page's own address: `None` when it shares `http.listen`.
    pub fn admin_listen_addr(&self) -> Result<Option<SocketAddr>, std::net::AddrParseError> {
        self.admin.listen_addr()
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Needs;
    use crate::config::test_env::load;

    #[test]
    fn the_admin_page_is_off_by_default_and_its_settings_are_checked_when_on() {
        let off = load(&[]).unwrap();
        assert!(!off.admin.enabled());
        assert_eq!(off.admin.user, "admin");
        assert!(!off.admin.read_only);
        assert_eq!(off.admin_listen_addr(), Ok(None));
        // A bad address is no error while the page is off.
        load(&[("ONCEBOT__ADMIN__LISTEN", "nowhere")])
            .unwrap()
            .validate(Needs::default())
            .unwrap();
        let on = [
            ("ONCEBOT__ADMIN__PASSWORD", LONG_PW),
            ("ONCEBOT__ADMIN__LISTEN", "nowhere"),
        ];
        let e = load(&on).unwrap().validate(Needs::default()).unwrap_err();
        assert_eq!(e.key, "admin.listen");
        assert!(e.to_string().contains("ONCEBOT__ADMIN__LISTEN"), "{e}");
        let colon = [
            ("ONCEBOT__ADMIN__PASSWORD", LONG_PW),
            ("ONCEBOT__ADMIN__USER", "a:b"),
        ];
        let e = load(&colon)
            .unwrap()
            .validate(Needs::default())
            .unwrap_err();
        assert_eq!(e.key, "admin.user");
        let own = load(&[
            ("ONCEBOT__ADMIN__PASSWORD", LONG_PW),
            ("ONCEBOT__ADMIN__LISTEN", "127.0.0.1:8081"),
            ("ONCEBOT__ADMIN__READ_ONLY", "true"),
        ])
        .unwrap();
        own.validate(Needs::default()).unwrap();
        assert!(own.admin.read_only);
        assert_eq!(
            own.admin_listen_addr(),
            Ok(Some(([127, 0, 0, 1], 8081).into()))
        );
        assert_eq!(format!("{:?}", own.admin.password), "[redacted]");
    }

    const LONG_PW: &str = "sixteen-chars-ok";

    #[test]
    fn an_admin_password_shorter_than_16_characters_is_refused_with_how_to_make_one() {
        let e = load(&[("ONCEBOT__ADMIN__PASSWORD", "fifteen-chars-x")])
            .unwrap()
            .validate(Needs::default())
            .unwrap_err();
        assert_eq!(e.key, "admin.password");
        let said = e.to_string();
        assert!(said.contains("16 characters"), "{said}");
        assert!(said.contains("openssl rand -base64 24"), "{said}");
        assert!(said.contains("ONCEBOT__ADMIN__PASSWORD"), "{said}");
        assert!(
            !said.contains("fifteen-chars-x"),
            "the password is not repeated: {said}"
        );
        // Characters, not bytes: 16 Chinese characters are 16.
        load(&[(
            "ONCEBOT__ADMIN__PASSWORD",
            "一二三四五六七八九十甲乙丙丁戊己",
        )])
        .unwrap()
        .validate(Needs::default())
        .unwrap();
        load(&[("ONCEBOT__ADMIN__PASSWORD", LONG_PW)])
            .unwrap()
            .validate(Needs::default())
            .unwrap();
    }

    #[test]
    fn admin_public_url_is_an_origin_or_empty() {
        let with = |url: &str| {
            load(&[
                ("ONCEBOT__ADMIN__PASSWORD", LONG_PW),
                ("ONCEBOT__ADMIN__PUBLIC_URL", url),
            ])
            .unwrap()
        };
        assert_eq!(with("").admin.public_origin(), Ok(None));
        for (given, origin) in [
            ("https://bot.example.org", "https://bot.example.org"),
            ("https://bot.example.org/", "https://bot.example.org"),
            ("https://bot.example.org:443", "https://bot.example.org"),
            (
                "https://Bot.Example.org:8443",
                "https://bot.example.org:8443",
            ),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ] {
            let s = with(given);
            s.validate(Needs::default()).unwrap();
            assert_eq!(
                s.admin.public_origin(),
                Ok(Some(origin.to_string())),
                "{given}"
            );
        }
        for bad in [
            "bot.example.org",
            "ftp://bot.example.org",
            "https://bot.example.org/admin/",
            "https://u:p@bot.example.org",
            "https://bot.example.org/?a=1",
        ] {
            let e = with(bad).validate(Needs::default()).unwrap_err();
            assert_eq!(e.key, "admin.public_url", "{bad}");
            assert!(e.to_string().contains("ONCEBOT__ADMIN__PUBLIC_URL"), "{e}");
        }
    }
}
