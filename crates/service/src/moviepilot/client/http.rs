//! One call sent with one credential, and its answer read: the HTTP client (locale, connect
//! timeout), the URL built from `moviepilot.url`, the body read through
//! `moviepilot.max_body_bytes`, and what a request that failed on the way is ([`MpError`]:
//! transient when it never left, uncertain for a side effect whose answer was lost). No
//! credential is chosen and no status is judged here.

use std::time::Duration;

use anyhow::{Context as _, anyhow};
use bytes::Bytes;
use reqwest::header::{HeaderValue, RETRY_AFTER};

use super::Inner;
use super::call::{Answer, Call, Effect};
use super::text::short;
use crate::config::{MoviePilotSettings, Secret, env_name};
use crate::moviepilot::error::MpError;

/// The locale every request asks for: the one oncebot matches MoviePilot's messages in. V3 reads
/// `X-MoviePilot-Locale` first, then `Accept-Language` (its web client sends both).
const LOCALE: &str = "zh-CN";

/// The HTTP client every call goes through: MoviePilot's texts in Chinese (`LOCALE`), and a
/// connection that does not answer within `timeout` (at most 5 s) is given up.
pub(super) fn http_client(timeout: Duration) -> anyhow::Result<reqwest::Client> {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-moviepilot-locale", HeaderValue::from_static(LOCALE));
    headers.insert(
        reqwest::header::ACCEPT_LANGUAGE,
        HeaderValue::from_static(LOCALE),
    );
    reqwest::Client::builder()
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .default_headers(headers)
        .build()
        .map_err(|e| anyhow!("building the MoviePilot HTTP client: {}", e.without_url()))
}

/// `moviepilot.url` as the calls' base (as text, and parsed once for every call's URL to be
/// built from), and as logs may show it (without any userinfo).
pub(super) fn base_urls(
    settings: &MoviePilotSettings,
) -> anyhow::Result<(String, reqwest::Url, String)> {
    let parsed = reqwest::Url::parse(settings.url.trim())
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
        .with_context(|| {
            format!(
                "moviepilot.url {:?} is not an http(s) URL: set {} to e.g. http://moviepilot:3001",
                settings.url,
                env_name("moviepilot.url")
            )
        })?;
    let base = parsed.as_str().trim_end_matches('/').to_string();
    let mut base_url = parsed.clone();
    base_url.set_query(None);
    base_url.set_fragment(None);
    let mut shown = parsed;
    // Both only fail for URLs that cannot carry userinfo, which then has none to hide.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    Ok((
        base,
        base_url,
        shown.as_str().trim_end_matches('/').to_string(),
    ))
}

/// What one request carries to be let in (the call path picks it: `Auth::credential`).
pub(in crate::moviepilot) enum Credential {
    None,
    ApiKey(Secret),
    Bearer(Secret),
}

impl Inner {
    /// Sends `call` once with `credential` and reads its answer: no retry, no status judged.
    pub(in crate::moviepilot) async fn send(
        &self,
        call: &Call,
        credential: &Credential,
    ) -> Result<Answer, MpError> {
        let mut url = self.base_url.clone();
        let path = format!("{}{}", url.path().trim_end_matches('/'), call.path);
        url.set_path(&path);
        if !call.query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(call.query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        let mut request = self
            .http
            .request(call.method.clone(), url)
            .timeout(self.timeout_of(call));
        if let Some(body) = &call.json {
            request = request.json(body);
        }
        request = match credential {
            Credential::None => request,
            Credential::Bearer(token) => request.bearer_auth(token.expose()),
            Credential::ApiKey(key) => match HeaderValue::from_str(key.expose()) {
                Ok(mut value) => {
                    value.set_sensitive(true);
                    request.header("X-API-KEY", value)
                }
                Err(_) => {
                    return Err(MpError::CredentialsRefused(format!(
                        "{call}: {} contains characters that cannot go in an HTTP header",
                        env_name("moviepilot.api_key")
                    )));
                }
            },
        };
        let response = request
            .send()
            .await
            .map_err(|e| self.transport_error(call, e))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(|v| short(v, 20));
        let (body, cut) = read_body(response, self.max_body)
            .await
            .map_err(|e| self.transport_error(call, e))?;
        Ok(Answer {
            status,
            retry_after,
            body,
            cut,
        })
    }

    /// Connection refused means the request never left: transient. Anything after that (a
    /// timeout, a dropped connection) is uncertain for a call with a side effect.
    fn transport_error(&self, call: &Call, error: reqwest::Error) -> MpError {
        let not_sent = error.is_connect() || error.is_builder();
        if error.is_connect() {
            self.saw_unreachable();
        }
        let text = transport_text(error, self.timeout_of(call));
        match (not_sent, call.effect) {
            (true, _) | (false, Effect::ReadOnly) => MpError::Transient(format!("{call}: {text}")),
            (false, Effect::SideEffect) => MpError::Uncertain(format!(
                "{call}: {text}; MoviePilot may or may not have done it"
            )),
        }
    }
}

/// At most `limit` bytes of `response`'s body, and whether there was more: the rest is never
/// read (dropping the response closes its connection), so an answer of any size costs at most
/// `limit` bytes of memory.
pub(super) async fn read_body(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<(Bytes, bool), reqwest::Error> {
    // Sized once when the length is known (MoviePilot's answers carry it): growing by doubling
    // would copy and, at its peak, hold about three times the limit.
    let expected = response.content_length().map_or(16 * 1024, |n| n as usize);
    let mut body = bytes::BytesMut::with_capacity(expected.min(limit));
    while let Some(chunk) = response.chunk().await? {
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body.freeze(), true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body.freeze(), false))
}

pub(super) fn transport_text(error: reqwest::Error, timeout: Duration) -> String {
    if error.is_timeout() {
        return format!("no answer within {} s", timeout.as_secs());
    }
    let error = error.without_url();
    let mut text = if error.is_connect() {
        "cannot connect".to_string()
    } else {
        "connection lost".to_string()
    };
    let mut source = std::error::Error::source(&error);
    let mut depth = 0;
    while let Some(cause) = source
        && depth < 4
    {
        text.push_str(": ");
        text.push_str(&short(&cause.to_string(), 120));
        source = cause.source();
        depth += 1;
    }
    text
}
