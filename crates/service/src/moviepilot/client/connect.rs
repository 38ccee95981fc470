//! Start-up: [`MoviePilot::connect`] reads the server's version, checks which credential opens
//! the subscription routes (the API key first, then the login), and picks the dialect from the
//! version or, when it says none, from the shape of an answer. A MoviePilot oncebot does not
//! speak, or credentials it refuses, stop the start with a line naming the setting to fix.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail};
use serde_json::Value;

use super::call::{Answer, Call};
use super::http::Credential;
use super::text::{detail_suffix, short};
use super::{GLOBAL_TOKEN, Inner, MoviePilot};
use crate::config::{MoviePilotSettings, env_name};
use crate::moviepilot::error::Unreachable;
use crate::moviepilot::types::Dialect;

impl MoviePilot {
    /// Reads the server's version (`GET /api/v1/system/global?token=moviepilot` →
    /// `data.BACKEND_VERSION`; a missing key means v2 before 2.6, refined by
    /// `/api/v3/system/status` when an API key is configured; otherwise the shape of
    /// `GET /api/v1/subscribe/` decides), refuses major versions other than 2 and 3, and checks
    /// that the credentials open the subscription routes. With only an API key, a server that
    /// refuses it there (v2.5.6) gives an error naming ONCEBOT__MOVIEPILOT__USERNAME and
    /// ONCEBOT__MOVIEPILOT__PASSWORD. With both, the API key is tried first and the login is
    /// the fallback.
    /// An error that is [`Unreachable`] may go away by itself (MoviePilot still starting); any
    /// other is a setting to fix.
    pub async fn connect(settings: &MoviePilotSettings) -> anyhow::Result<MoviePilot> {
        let mut inner = Inner::new(settings)?;
        let reported = inner.read_version().await?;
        let by_version = reported
            .as_deref()
            .map(|v| dialect_of_version(v, &inner.shown_url))
            .transpose()?
            .flatten();
        inner.version = reported.unwrap_or_else(|| "unknown".to_string());
        let probe = inner.establish_auth().await?;
        inner.dialect = choose_dialect(&inner, by_version, dialect_of_answer(&probe.body))?;
        let via = match &inner.auth.state.lock().await.bearer {
            Some(_) => "login",
            None => "api key",
        };
        tracing::info!(
            url = %inner.shown_url,
            version = %inner.version,
            dialect = %inner.dialect,
            auth = via,
            "connected to MoviePilot"
        );
        Ok(MoviePilot {
            inner: Arc::new(inner),
        })
    }
}

/// What MoviePilot says of itself before oncebot's credentials are checked
/// ([`MoviePilot::announced`], for `oncebot doctor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announced {
    /// `moviepilot.url` without userinfo, as messages show it.
    pub url: String,
    /// As [`MoviePilot::version`] reports it (`unknown` when MoviePilot says none).
    pub version: String,
    /// The dialect the version implies; `None` when it does not say (then only an answer
    /// read with the credentials does, as [`MoviePilot::connect`] decides).
    pub dialect: Option<Dialect>,
}

impl MoviePilot {
    /// Reads the version as [`MoviePilot::connect`] does, without checking the credentials. An
    /// [`Unreachable`] error: nothing answered; any other: a major version oncebot does not
    /// speak.
    pub async fn announced(settings: &MoviePilotSettings) -> anyhow::Result<Announced> {
        let inner = Inner::new(settings)?;
        let reported = inner.read_version().await?;
        let dialect = reported
            .as_deref()
            .map(|v| dialect_of_version(v, &inner.shown_url))
            .transpose()?
            .flatten();
        Ok(Announced {
            url: inner.shown_url.clone(),
            version: reported.unwrap_or_else(|| "unknown".to_string()),
            dialect,
        })
    }
}

impl Inner {
    /// `data.BACKEND_VERSION` from `/system/global` (late v2, v3); for older v2 the Servarr
    /// emulation's version when an API key is configured. `None` when neither says.
    async fn read_version(&self) -> anyhow::Result<Option<String>> {
        let call =
            Call::get("reading the version", "/api/v1/system/global").query("token", GLOBAL_TOKEN);
        let answer = self.send(&call, &Credential::None).await.map_err(|e| {
            anyhow::Error::new(Unreachable(format!(
                "cannot reach MoviePilot at {}: {e} (check {} and that MoviePilot is running)",
                self.shown_url,
                env_name("moviepilot.url")
            )))
        })?;
        let mut old_v2 = false;
        if answer.status.is_success()
            && let Ok(Value::Object(body)) = crate::json_body::parse::<Value>(&answer.body)
            && let Some(Value::Object(data)) = body.get("data")
        {
            match data.get("BACKEND_VERSION").and_then(Value::as_str) {
                Some(version) if !version.trim().is_empty() => {
                    let version = crate::untrusted::clean_line(version.trim());
                    return Ok(Some(short(&version, 40)));
                }
                _ => old_v2 = true,
            }
        }
        let servarr = self.servarr_version().await;
        Ok(match (servarr, old_v2) {
            (Some(version), _) => Some(version),
            // v2.5.6 up to v2.8 answer the settings without the version key.
            (None, true) => Some(OLD_V2_LABEL.into()),
            (None, false) => None,
        })
    }

    /// `GET /api/v3/system/status` (v2's Sonarr emulation) with the API key: `version`.
    async fn servarr_version(&self) -> Option<String> {
        let key = self.auth.api_key.clone()?;
        let call = Call::get("reading the version", "/api/v3/system/status");
        let answer = self.send(&call, &Credential::ApiKey(key)).await.ok()?;
        if !answer.status.is_success() {
            return None;
        }
        let body: Value = crate::json_body::parse(&answer.body).ok()?;
        let version = crate::untrusted::clean_line(body.get("version")?.as_str()?.trim());
        (!version.is_empty()).then(|| short(&version, 40))
    }

    /// Makes sure some credential opens `GET /api/v1/subscribe/`, trying the API key first, and
    /// returns that answer (its shape tells v2 from v3).
    async fn establish_auth(&self) -> anyhow::Result<Answer> {
        let probe = Call::get("checking the credentials", "/api/v1/subscribe/")
            // Ignored by v2; keeps v3's answer small.
            .query("page", 1)
            .query("count", 1);
        if let Some(key) = self.auth.api_key.clone() {
            let answer = self.send(&probe, &Credential::ApiKey(key)).await?;
            if answer.status.is_success() {
                return Ok(answer);
            }
            if !self.refuses_credentials(answer.status) {
                return Err(anyhow!(
                    self.check_status(&probe, answer)
                        .err()
                        .map_or_else(|| "unexpected answer".to_string(), |e| e.to_string())
                ));
            }
            if self.auth.login.is_none() {
                bail!(
                    "MoviePilot {} at {} refused the API key in {} on GET /api/v1/subscribe/ \
                     (HTTP {}{}): {}",
                    self.version,
                    self.shown_url,
                    env_name("moviepilot.api_key"),
                    answer.status.as_u16(),
                    detail_suffix(&answer.body),
                    api_key_advice(&self.version)
                );
            }
            tracing::info!(
                status = answer.status.as_u16(),
                "MoviePilot refused the API key on the subscription routes; logging in instead"
            );
        }
        self.renew(0, Instant::now()).await?;
        let (credential, _) = self.auth.credential().await;
        let answer = self.send(&probe, &credential).await?;
        if answer.status.is_success() {
            return Ok(answer);
        }
        bail!(
            "MoviePilot refused GET /api/v1/subscribe/ to user {:?} right after logging in \
             (HTTP {}{}): give that user access to subscriptions",
            self.auth.login.as_ref().map_or("", |l| l.username.as_str()),
            answer.status.as_u16(),
            detail_suffix(&answer.body)
        )
    }
}

/// The version label of a v2 that reports no `BACKEND_VERSION` (v2.5.6 to v2.8).
const OLD_V2_LABEL: &str = "v2 (before v2.9: no BACKEND_VERSION)";

/// What to do about a refused API key, by version: MoviePilot takes the key on its login-only
/// routes since v2.9.3 (upstream commit feb03435); before that only a login opens them.
fn api_key_advice(version: &str) -> String {
    let key = env_name("moviepilot.api_key");
    let login = format!(
        "{} and {}",
        env_name("moviepilot.username"),
        env_name("moviepilot.password")
    );
    match takes_api_key(version) {
        Some(true) => format!(
            "the key is wrong or was changed: set {key} to MoviePilot's current API_TOKEN \
             (its settings page), or set {login} to a MoviePilot user instead"
        ),
        Some(false) => format!(
            "MoviePilot before v2.9.3 accepts only a login on these routes: set {login} to a \
             MoviePilot user"
        ),
        None => format!(
            "either the key is not MoviePilot's current API_TOKEN (set {key} to it), or this \
             MoviePilot is older than v2.9.3, which accepts only a login here (set {login})"
        ),
    }
}

/// Whether MoviePilot `version` accepts `X-API-KEY` on the routes that otherwise need a login
/// (v2.9.3 and later, v3); `None` when the version does not say.
fn takes_api_key(version: &str) -> Option<bool> {
    if version == OLD_V2_LABEL {
        return Some(false);
    }
    let mut parts = version
        .trim()
        .trim_start_matches(['v', 'V'])
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    let major = parts.next().flatten()?;
    let minor = parts.next().flatten().unwrap_or(0);
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch) >= (2, 9, 3))
}

/// `2`, `3`, … from `v2.5.6`, `3.0.1-1`, `V3.1`.
fn major_version(version: &str) -> Option<u32> {
    let digits: String = version
        .trim()
        .trim_start_matches(['v', 'V'])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The dialect a reported version implies (`None`: a version without a major number); a major
/// version oncebot does not speak is an error.
fn dialect_of_version(version: &str, shown_url: &str) -> anyhow::Result<Option<Dialect>> {
    Ok(match major_version(version) {
        Some(2) => Some(Dialect::V2),
        Some(3) => Some(Dialect::V3),
        Some(other) => bail!(
            "MoviePilot at {shown_url} reports version {version} (major {other}); oncebot speaks \
             MoviePilot v2 and v3 only: run a v2 or v3 MoviePilot, or an oncebot that supports \
             v{other}"
        ),
        None => None,
    })
}

/// The dialect the subscription list's shape implies: v2 answers a bare list, v3 an envelope.
fn dialect_of_answer(body: &[u8]) -> Option<Dialect> {
    match crate::json_body::parse::<Value>(body) {
        Ok(Value::Array(_)) => Some(Dialect::V2),
        Ok(Value::Object(o)) if o.contains_key("success") => Some(Dialect::V3),
        _ => None,
    }
}

/// The version decides when both speak and disagree (said in the log); one of them must speak.
fn choose_dialect(
    inner: &Inner,
    by_version: Option<Dialect>,
    by_answer: Option<Dialect>,
) -> anyhow::Result<Dialect> {
    match (by_version, by_answer) {
        (Some(v), Some(s)) if v != s => {
            tracing::warn!(
                version = %inner.version,
                by_version = %v,
                by_shape = %s,
                "MoviePilot's version and its answers disagree; going by the version"
            );
            Ok(v)
        }
        (Some(v), _) | (None, Some(v)) => Ok(v),
        (None, None) => bail!(
            "could not tell which MoviePilot API {} speaks (no version reported, and \
             GET /api/v1/subscribe/ answered neither a list nor an envelope): check {}",
            inner.shown_url,
            env_name("moviepilot.url")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_key_is_taken_from_v2_9_3_on() {
        assert_eq!(takes_api_key("v2.5.6"), Some(false));
        assert_eq!(takes_api_key(OLD_V2_LABEL), Some(false));
        assert_eq!(takes_api_key("v2.9.2"), Some(false));
        assert_eq!(takes_api_key("v2.9.3"), Some(true));
        assert_eq!(takes_api_key("v2.14.0"), Some(true));
        assert_eq!(takes_api_key("v3.1.0"), Some(true));
        assert_eq!(takes_api_key("unknown"), None);
        assert!(api_key_advice("v2.14.0").contains("API_TOKEN"));
        assert!(!api_key_advice("v2.14.0").contains("before v2.9.3"));
        assert!(api_key_advice("v2.5.6").contains("before v2.9.3"));
    }

    #[test]
    fn major_versions_are_read_from_moviepilots_spellings() {
        assert_eq!(major_version("v2.5.6"), Some(2));
        assert_eq!(major_version("3.0.1-1"), Some(3));
        assert_eq!(major_version("V4.0"), Some(4));
        assert_eq!(major_version("dev"), None);
    }
}
