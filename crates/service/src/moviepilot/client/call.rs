//! One MoviePilot request as data ([`Call`], built by its builder) and the answer it got
//! ([`Answer`]): what the call path sends twice when a credential is renewed, names in every
//! error, and counts by route in the metrics. Its own file because every area builds calls and
//! nothing here sends one.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::Inner;
use crate::moviepilot::types::Dialect;

/// Whether a call changes MoviePilot's state: what an answer lost on the way, a proxy's
/// 502/504 or an unreadable answer is (transient for a read, uncertain for a change).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Effect {
    ReadOnly,
    /// Changes MoviePilot's state: a lost answer means "maybe done".
    SideEffect,
}

/// One request, described well enough to send it twice and to name it in an error. Built from
/// [`Call::get`] (or its siblings), which is read-only, without a query or a body and within the
/// client's timeout: a call site says only what differs.
pub(in crate::moviepilot) struct Call {
    /// What the caller wanted, e.g. `subscribing TMDB 438631 season 1`.
    pub(super) what: String,
    pub(super) method: Method,
    /// Under the base URL, e.g. `/api/v1/subscribe/`.
    pub(super) path: String,
    pub(super) query: Vec<(&'static str, String)>,
    pub(super) json: Option<Value>,
    pub(super) effect: Effect,
    /// `None`: the client's own (`moviepilot.timeout_secs`); see [`Inner::timeout_of`].
    pub(super) timeout: Option<Duration>,
}

impl Call {
    /// A read-only `method` request for `path`, within the client's timeout.
    pub(in crate::moviepilot) fn new(
        method: Method,
        what: impl Into<String>,
        path: impl Into<String>,
    ) -> Call {
        Call {
            what: what.into(),
            method,
            path: path.into(),
            query: Vec::new(),
            json: None,
            effect: Effect::ReadOnly,
            timeout: None,
        }
    }

    /// [`Self::new`] with `GET`.
    pub(in crate::moviepilot) fn get(what: impl Into<String>, path: impl Into<String>) -> Call {
        Call::new(Method::GET, what, path)
    }

    /// [`Self::new`] with `POST`; its body comes with [`Self::json`].
    pub(in crate::moviepilot) fn post(what: impl Into<String>, path: impl Into<String>) -> Call {
        Call::new(Method::POST, what, path)
    }

    /// [`Self::new`] with `PUT`; its body comes with [`Self::json`].
    pub(in crate::moviepilot) fn put(what: impl Into<String>, path: impl Into<String>) -> Call {
        Call::new(Method::PUT, what, path)
    }

    /// [`Self::new`] with `DELETE`.
    pub(in crate::moviepilot) fn delete(what: impl Into<String>, path: impl Into<String>) -> Call {
        Call::new(Method::DELETE, what, path)
    }

    /// Adds `name=value` to the query, after the pairs already there (the URL keeps this order).
    pub(in crate::moviepilot) fn query(mut self, name: &'static str, value: impl ToString) -> Call {
        self.query.push((name, value.to_string()));
        self
    }

    /// [`Self::query`] when there is a value; nothing otherwise.
    pub(in crate::moviepilot) fn query_opt(
        self,
        name: &'static str,
        value: Option<impl ToString>,
    ) -> Call {
        match value {
            Some(value) => self.query(name, value),
            None => self,
        }
    }

    /// The JSON body.
    pub(in crate::moviepilot) fn json(mut self, body: Value) -> Call {
        self.json = Some(body);
        self
    }

    /// Changes MoviePilot's state (or, like a resource search, costs something outside it): an
    /// answer lost after the request left is "maybe done", never simply retried.
    pub(in crate::moviepilot) fn side_effect(mut self) -> Call {
        self.effect = Effect::SideEffect;
        self
    }

    /// Within `timeout` instead of the client's.
    pub(in crate::moviepilot) fn within(mut self, timeout: Duration) -> Call {
        self.timeout = Some(timeout);
        self
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MoviePilot {} {} ({})",
            self.method, self.path, self.what
        )
    }
}

/// What MoviePilot answered to one call, its body read through `moviepilot.max_body_bytes`.
pub(in crate::moviepilot) struct Answer {
    pub(in crate::moviepilot) status: StatusCode,
    pub(super) retry_after: Option<String>,
    /// At most `moviepilot.max_body_bytes`.
    pub(in crate::moviepilot) body: Bytes,
    /// The body was longer than the limit: `body` is its beginning.
    pub(in crate::moviepilot) cut: bool,
}

/// `GET /api/v1/subscribe/media/{id}`: a call's route with its ids taken out, so metrics
/// have one series per route, not one per subscription.
pub(super) fn route_label(call: &Call) -> String {
    // One String, built in one pass: this runs for every MoviePilot call.
    let method = call.method.as_str();
    let mut label = String::with_capacity(method.len() + 1 + call.path.len());
    label.push_str(method);
    label.push(' ');
    let mut after_user = false;
    for (i, seg) in call.path.split('/').enumerate() {
        if i > 0 {
            label.push('/');
        }
        let all_digits = !seg.is_empty() && seg.bytes().all(|c| c.is_ascii_digit());
        if after_user && !seg.is_empty() {
            // `/subscribe/user/{username}`: a series per route, and no name in the metrics.
            label.push_str("{username}");
        } else if all_digits || seg.contains(':') {
            label.push_str("{id}");
        } else {
            label.push_str(seg);
        }
        after_user = seg == "user" && call.path.starts_with("/api/v1/subscribe/");
    }
    label
}

impl Inner {
    /// A `GET` of TMDB media under `prefix`, the path and query naming it as this dialect does:
    /// v2 `prefix/tmdb:<id>`, v3 `prefix/<id>?media_source=themoviedb` (further query pairs
    /// follow that one).
    pub(in crate::moviepilot) fn get_media(
        &self,
        what: String,
        prefix: &str,
        tmdb_id: u64,
    ) -> Call {
        match self.dialect {
            Dialect::V2 => Call::get(what, format!("{prefix}/tmdb:{tmdb_id}")),
            Dialect::V3 => {
                Call::get(what, format!("{prefix}/{tmdb_id}")).query("media_source", "themoviedb")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn route_labels_take_ids_out_of_paths() {
        let label = |method: super::Method, path: &str| {
            super::route_label(&super::Call::new(method, "", path))
        };
        for (method, path, want) in [
            (
                super::Method::GET,
                "/api/v1/media/search",
                "GET /api/v1/media/search",
            ),
            (
                super::Method::GET,
                "/api/v1/subscribe/media/tmdb:438631",
                "GET /api/v1/subscribe/media/{id}",
            ),
            (
                super::Method::DELETE,
                "/api/v1/subscribe/42",
                "DELETE /api/v1/subscribe/{id}",
            ),
            (
                super::Method::POST,
                "/api/v1/subscribe/",
                "POST /api/v1/subscribe/",
            ),
            (
                super::Method::GET,
                "/api/v1/subscribe/user/alice",
                "GET /api/v1/subscribe/user/{username}",
            ),
            (super::Method::GET, "/api/v1/user/", "GET /api/v1/user/"),
        ] {
            assert_eq!(label(method, path), want);
        }
    }
}
