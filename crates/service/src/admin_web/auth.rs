//! Who may use the operator's page and whether a form came from it: HTTP basic auth compared
//! in constant time, the CSRF field (an HMAC of its issue time under a key derived from the
//! password, so every process with the same settings accepts it and a new password voids it),
//! and the same-origin check of a POST.

use base64::Engine as _;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use warp::http::{HeaderMap, HeaderValue, StatusCode, header};
use warp::reply::Response;

/// How long a page's CSRF field stays good: a page left open over a working day still acts.
const CSRF_LIFETIME_SECS: u64 = 12 * 3600;
/// Clock difference between two processes behind one address that is still accepted.
const CSRF_SKEW_SECS: u64 = 300;

/// The page's credentials, kept as digests so comparisons take the same time whatever the
/// lengths, and the CSRF key.
#[derive(Clone)]
pub struct Credentials {
    user: String,
    user_digest: [u8; 32],
    password_digest: [u8; 32],
    csrf_key: [u8; 32],
}

/// What the Authorization header said.
#[derive(Debug, PartialEq, Eq)]
pub enum Checked {
    Allowed,
    /// No basic credentials (a browser's first request): ask for them.
    Missing,
    /// Credentials that do not match: refused, and logged.
    Wrong,
}

impl Credentials {
    pub fn new(user: &str, password: &str) -> Credentials {
        let mut key = Sha256::new();
        key.update(b"oncebot admin csrf v1\0");
        key.update(password.as_bytes());
        Credentials {
            user: user.to_string(),
            user_digest: digest(user.as_bytes()),
            password_digest: digest(password.as_bytes()),
            csrf_key: key.finalize().into(),
        }
    }

    pub fn user(&self) -> &str {
        &self.user
    }

    /// Basic auth: both the user and the password must match; both are always compared.
    pub fn check(&self, headers: &HeaderMap) -> Checked {
        let Some(given) = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, rest) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("basic").then(|| rest.trim())
            })
        else {
            return Checked::Missing;
        };
        let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(given) else {
            return Checked::Wrong;
        };
        let Some(colon) = decoded.iter().position(|&b| b == b':') else {
            return Checked::Wrong;
        };
        let (user, password) = (&decoded[..colon], &decoded[colon + 1..]);
        let ok =
            digest(user).ct_eq(&self.user_digest) & digest(password).ct_eq(&self.password_digest);
        if bool::from(ok) {
            Checked::Allowed
        } else {
            Checked::Wrong
        }
    }

    /// The CSRF field of a page rendered at `now` (seconds): `<now>.<hmac hex>`.
    pub fn csrf_token(&self, now: u64) -> String {
        format!("{now}.{}", hex::encode(self.csrf_mac(now)))
    }

    /// A field this page family issued, not older than a working day.
    pub fn csrf_valid(&self, token: &str, now: u64) -> bool {
        let Some((issued, mac)) = token.split_once('.') else {
            return false;
        };
        let Ok(issued) = issued.parse::<u64>() else {
            return false;
        };
        let Ok(mac) = hex::decode(mac) else {
            return false;
        };
        let fresh =
            issued <= now + CSRF_SKEW_SECS && now.saturating_sub(issued) <= CSRF_LIFETIME_SECS;
        fresh && bool::from(mac.as_slice().ct_eq(&self.csrf_mac(issued)))
    }

    /// HMAC-SHA256 (RFC 2104) of the user and the issue time.
    fn csrf_mac(&self, issued: u64) -> [u8; 32] {
        let mut ipad = [0x36u8; 64];
        let mut opad = [0x5cu8; 64];
        for (i, k) in self.csrf_key.iter().enumerate() {
            ipad[i] ^= k;
            opad[i] ^= k;
        }
        let inner = Sha256::new()
            .chain_update(ipad)
            .chain_update(self.user.as_bytes())
            .chain_update(b"\0")
            .chain_update(issued.to_string().as_bytes())
            .finalize();
        Sha256::new()
            .chain_update(opad)
            .chain_update(inner)
            .finalize()
            .into()
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// 401 with the challenge that makes a browser ask for the user and password.
pub fn challenge() -> Response {
    let mut resp = Response::new("sign in to see the operator page\n".into());
    *resp.status_mut() = StatusCode::UNAUTHORIZED;
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"oncebot admin\", charset=\"UTF-8\""),
    );
    resp
}

/// Whether the request carries credentials at all (else it is a browser's first request: ask).
pub fn has_credentials(headers: &HeaderMap) -> bool {
    headers.contains_key(header::AUTHORIZATION)
}

/// A POST came from a page of this origin: its Origin (or, without one, its Referer) has the
/// scheme, host and port of `public` (`admin.public_url`) or, without it, `http://` and the Host
/// header (oncebot itself speaks plain HTTP; behind a TLS proxy the operator says the scheme).
/// Neither header: refused (every browser sends one of them with a form; a page that hides both
/// is not one of ours). Behind a proxy without `public`, the proxy must pass the Host header on,
/// as Caddy and nginx's `proxy_set_header Host $host` do.
pub fn same_origin(headers: &HeaderMap, public: Option<&str>) -> bool {
    match (source_origin(headers), expected_origin(headers, public)) {
        (Some(source), Some(expected)) => source == expected,
        _ => false,
    }
}

/// The origin a decision must come from, normalised as [`source_origin`] is.
pub fn expected_origin(headers: &HeaderMap, public: Option<&str>) -> Option<String> {
    let url = match public {
        Some(origin) => origin.to_string(),
        None => format!(
            "http://{}",
            headers.get(header::HOST).and_then(|v| v.to_str().ok())?
        ),
    };
    origin_of(&url)
}

/// The Origin header's origin, else the Referer's: `scheme://host[:port]`, lower case, the
/// scheme's default port left out.
pub fn source_origin(headers: &HeaderMap) -> Option<String> {
    let source = headers
        .get(header::ORIGIN)
        .or_else(|| headers.get(header::REFERER))
        .and_then(|v| v.to_str().ok())?;
    origin_of(source)
}

fn origin_of(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let host = url.host_str()?;
    // The URL's rules leave out the scheme's default port and lower-case the host.
    Some(match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(user_pass: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        let v = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(user_pass)
        );
        h.insert(header::AUTHORIZATION, v.parse().unwrap());
        h
    }

    #[test]
    fn basic_auth_needs_both_the_user_and_the_password() {
        let c = Credentials::new("admin", "pa:ss wörd");
        assert_eq!(c.check(&HeaderMap::new()), Checked::Missing);
        assert_eq!(c.check(&basic("admin:pa:ss wörd")), Checked::Allowed);
        assert_eq!(c.check(&basic("admin:pa:ss")), Checked::Wrong);
        assert_eq!(c.check(&basic("root:pa:ss wörd")), Checked::Wrong);
        assert_eq!(c.check(&basic("admin")), Checked::Wrong);
        let mut bad = HeaderMap::new();
        bad.insert(header::AUTHORIZATION, "Basic !!!".parse().unwrap());
        assert_eq!(c.check(&bad), Checked::Wrong);
    }

    #[test]
    fn a_csrf_field_is_good_for_a_day_for_this_password_only() {
        let c = Credentials::new("admin", "one");
        let t = c.csrf_token(1_000_000);
        assert!(c.csrf_valid(&t, 1_000_000));
        assert!(c.csrf_valid(&t, 1_000_000 + CSRF_LIFETIME_SECS));
        assert!(!c.csrf_valid(&t, 1_000_000 + CSRF_LIFETIME_SECS + 1));
        assert!(!Credentials::new("admin", "two").csrf_valid(&t, 1_000_000));
        assert!(!c.csrf_valid("", 1_000_000));
        assert!(!c.csrf_valid("1000000.00", 1_000_000));
        let forged = t.replacen("1000000", "1000001", 1);
        assert!(!c.csrf_valid(&forged, 1_000_001));
    }

    #[test]
    fn same_origin_compares_the_scheme_host_and_port_of_origin_or_referer() {
        let h = |pairs: &[(header::HeaderName, &str)]| {
            let mut m = HeaderMap::new();
            for (k, v) in pairs {
                m.insert(k.clone(), v.parse().unwrap());
            }
            m
        };
        let host = (header::HOST, "127.0.0.1:8080");
        let plain = |pairs: &[(header::HeaderName, &str)]| same_origin(&h(pairs), None);
        assert!(plain(&[
            host.clone(),
            (header::ORIGIN, "http://127.0.0.1:8080")
        ]));
        assert!(plain(&[
            host.clone(),
            (header::REFERER, "http://127.0.0.1:8080/admin/jobs/3")
        ]));
        assert!(!plain(&[
            host.clone(),
            (header::ORIGIN, "http://evil.example")
        ]));
        assert!(!plain(&[host.clone(), (header::ORIGIN, "null")]));
        assert!(!plain(std::slice::from_ref(&host)));
        // The scheme counts: oncebot's own listener is plain HTTP.
        assert!(!plain(&[
            host.clone(),
            (header::ORIGIN, "https://127.0.0.1:8080")
        ]));
        assert!(!plain(&[
            host.clone(),
            (header::REFERER, "https://127.0.0.1:8080/admin/")
        ]));
        assert!(!plain(&[
            host.clone(),
            (header::ORIGIN, "http://127.0.0.1:8081")
        ]));
        // Default ports and case are normalised.
        assert!(plain(&[
            (header::HOST, "Bot.Example.org:80"),
            (header::ORIGIN, "http://bot.example.org")
        ]));
        assert!(!plain(&[
            (header::HOST, "bot.example.org"),
            (header::ORIGIN, "https://bot.example.org")
        ]));
        assert!(!plain(&[
            (header::HOST, "bot.example.org"),
            (header::ORIGIN, "http://bot.example.org.evil.example")
        ]));
        // Behind a TLS proxy: the configured origin, whatever Host the proxy sends.
        let public = Some("https://bot.example.org");
        let proxied = |origin: &str| {
            same_origin(
                &h(&[(header::HOST, "127.0.0.1:8080"), (header::ORIGIN, origin)]),
                public,
            )
        };
        assert!(proxied("https://bot.example.org"));
        assert!(proxied("https://bot.example.org:443"));
        assert!(!proxied("http://bot.example.org"));
        assert!(!proxied("https://bot.example.org:8443"));
        assert!(!proxied("http://127.0.0.1:8080"));
    }
}
