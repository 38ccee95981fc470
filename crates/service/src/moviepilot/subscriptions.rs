//! MoviePilot's `subscribe` area (`app/api/endpoints/subscribe.py`): a media's subscription
//! looked up, made, listed (all, or one user's), given an owner, deleted, and searched for now.
//! Made and deleted safely twice: MoviePilot answers a duplicate with the existing id, and a
//! delete of an id it does not have as done.
//!
//! Routes: `GET /api/v1/subscribe/media/tmdb:<id>` (v3: `/media/<id>?media_source=themoviedb`),
//! `POST|PUT|GET /api/v1/subscribe/`, `GET /api/v1/subscribe/user/<username>`,
//! `GET|DELETE /api/v1/subscribe/<id>`, `GET|POST /api/v1/subscribe/search/<id>`,
//! `GET /api/v1/subscribe/history/<type>`.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::client::{Call, MoviePilot, media_label};
use super::error::MpError;
use super::types::{
    CreatedId, Dialect, MediaKind, NewSubscription, Subscription, WireSubscribe, wire_u64,
};

/// A subscription-history row: a subscription MoviePilot completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedSubscription {
    pub tmdb_id: Option<u64>,
    pub season: Option<u32>,
    /// When, as MoviePilot wrote it (its local time, `%Y-%m-%d %H:%M:%S`).
    pub date: String,
}

impl MoviePilot {
    /// The subscription MoviePilot holds for this media (and season, for TV), if any. MoviePilot
    /// answers an all-null object for "none"; a row for another id or season is treated as none
    /// too. Without a season MoviePilot matches any subscription with that TMDB id (a movie's),
    /// whatever its type, so callers should compare `kind`.
    pub async fn find_subscription(
        &self,
        tmdb_id: u64,
        season: Option<u32>,
    ) -> Result<Option<Subscription>, MpError> {
        let season = season.filter(|s| *s > 0);
        let what = format!(
            "looking up the subscription of {}",
            media_label(tmdb_id, season)
        );
        let call = self
            .inner
            .get_media(what, "/api/v1/subscribe/media", tmdb_id)
            .query_opt("season", season);
        let answer = self.inner.call(&call).await?;
        let answer = self.inner.check_status(&call, answer)?;
        let row: Option<WireSubscribe> = self.inner.decode(&call, &answer)?;
        let Some(sub) = row.and_then(WireSubscribe::into_subscription) else {
            return Ok(None);
        };
        let other_media = sub.tmdb_id.is_some_and(|t| t != tmdb_id);
        let other_season = season.is_some_and(|s| sub.season.is_some_and(|have| have != s));
        if other_media || other_season {
            tracing::warn!(
                subscription = sub.id,
                asked_tmdb = tmdb_id,
                got_tmdb = ?sub.tmdb_id,
                "MoviePilot answered a subscription for other media or season; treating it as none"
            );
            return Ok(None);
        }
        Ok(Some(sub))
    }

    /// Subscribes and returns the subscription id. MoviePilot answers an existing subscription's
    /// id for a duplicate (same TMDB id, and season for TV), so this is safe to repeat, though
    /// v2 re-sends its "subscription added" notification each time.
    pub async fn create_subscription(&self, item: &NewSubscription) -> Result<u64, MpError> {
        let season = match item.kind {
            MediaKind::Tv => item.season.filter(|s| *s > 0),
            MediaKind::Movie => None,
        };
        let body = match self.inner.dialect {
            // What MoviePilot's own web UI sends; season 0 means "none" (movies) or "1" (TV).
            Dialect::V2 => json!({
                "name": item.name,
                "year": item.year,
                "type": item.kind.wire_name(),
                "tmdbid": item.tmdb_id,
                "season": season.unwrap_or(0),
            }),
            Dialect::V3 => {
                let mut body = json!({
                    "name": item.name,
                    "year": item.year,
                    "type": item.kind.wire_name(),
                    "media_source": "themoviedb",
                    "media_id": item.tmdb_id.to_string(),
                });
                if let (Some(s), Some(map)) = (season, body.as_object_mut()) {
                    map.insert("season".into(), json!(s));
                }
                body
            }
        };
        let mut body = body;
        if item.best {
            body["best_version"] = json!(1);
        }
        let what = format!("subscribing {}", media_label(item.tmdb_id, season));
        let call = Call::post(what, "/api/v1/subscribe/")
            .json(body)
            .side_effect();
        let answer = self.inner.call(&call).await?;
        let answer = self.inner.check_status(&call, answer)?;
        let created: Option<CreatedId> = self.inner.accepted(&call, &answer)?;
        match created.and_then(|d| d.id) {
            Some(id) => Ok(id),
            None => Err(MpError::Uncertain(format!(
                "{call}: MoviePilot answered success without a subscription id"
            ))),
        }
    }

    /// Every subscription (`GET /api/v1/subscribe/`).
    pub async fn list_subscriptions(&self) -> Result<Vec<Subscription>, MpError> {
        let call = Call::get("listing subscriptions", "/api/v1/subscribe/");
        let rows: Vec<WireSubscribe> = self.inner.fetch_list(&call).await?;
        Ok(rows
            .into_iter()
            .filter_map(WireSubscribe::into_subscription)
            .collect())
    }

    /// The newest page of the subscription history of one kind (`GET
    /// /api/v1/subscribe/history/{mtype}?page=1&count=`, `mtype` 电影 or 电视剧): the subscriptions
    /// MoviePilot completed, as (TMDB id, season, `date` as MoviePilot wrote it). A live card
    /// whose subscription left the list looks here to tell done from cancelled.
    pub async fn subscription_history(
        &self,
        kind: MediaKind,
        count: usize,
    ) -> Result<Vec<CompletedSubscription>, MpError> {
        let mtype = match kind {
            MediaKind::Movie => "电影",
            MediaKind::Tv => "电视剧",
        };
        let segment = crate::path_segment::encode(mtype)
            .map_err(|e| MpError::Permanent(format!("reading the subscription history: {e}")))?;
        let path = format!("/api/v1/subscribe/history/{segment}");
        let call = Call::get("reading the subscription history", path)
            .query("page", 1)
            .query("count", count);
        let rows: Vec<serde_json::Value> = self.inner.fetch_list(&call).await?;
        Ok(rows
            .iter()
            .map(|row| {
                let number = |name: &str| wire_u64(row.get(name));
                let date = row.get("date").and_then(|d| d.as_str()).unwrap_or("");
                CompletedSubscription {
                    tmdb_id: number("tmdbid"),
                    season: number("season").and_then(|s| u32::try_from(s).ok()),
                    date: crate::untrusted::clean_line(date).into_owned(),
                }
            })
            .collect())
    }

    /// The subscriptions `username` owns (`GET /api/v1/subscribe/user/{username}`: v2.5.6
    /// `app/api/endpoints/subscribe.py` `user_subscribes`, a bare list; the newest line in the
    /// envelope). "My subscriptions" in MoviePilot's own web UI. The name is one path segment
    /// (`path_segment`); one that cannot be (`.`, `..`, empty) is refused, nothing sent.
    pub async fn user_subscriptions(&self, username: &str) -> Result<Vec<Subscription>, MpError> {
        let segment = crate::path_segment::encode(username)
            .map_err(|e| MpError::Permanent(format!("listing a user's subscriptions: {e}")))?;
        let call = Call::get(
            format!("listing {username:?}'s subscriptions"),
            format!("/api/v1/subscribe/user/{segment}"),
        );
        let rows: Vec<WireSubscribe> = self.inner.fetch_list(&call).await?;
        Ok(rows
            .into_iter()
            .filter_map(WireSubscribe::into_subscription)
            .collect())
    }

    /// Makes `username` the owner of subscription `id`; `false` when this MoviePilot cannot
    /// (nothing was sent). MoviePilot's create sets the owner to the calling account whatever
    /// the body says (v2.5.6 `subscribe.py` L79). v2's update (`PUT /api/v1/subscribe/`, v2.5.6
    /// L89-124) writes `username` as sent and every field the body leaves out as the schema's
    /// default (from v2.9.0 a null too), so the row is read (`GET /api/v1/subscribe/{id}`), its
    /// `username` changed and written back whole: every other field keeps MoviePilot's value.
    /// Safe to repeat. v3's update keeps the owner whatever it is sent (`username` is one of
    /// its server-controlled fields, pinned to the stored one), so on v3 this does nothing.
    pub async fn set_subscription_owner(&self, id: u64, username: &str) -> Result<bool, MpError> {
        if self.inner.dialect == Dialect::V3 {
            return Ok(false);
        }
        let read = Call::get(
            format!("reading subscription {id}"),
            format!("/api/v1/subscribe/{id}"),
        );
        let answer = self.inner.call(&read).await?;
        let answer = self.inner.check_status(&read, answer)?;
        let mut row: serde_json::Map<String, Value> = self
            .inner
            .decode(&read, &answer)?
            .ok_or_else(|| self.inner.unexpected_body(&read, &answer))?;
        if row.get("id").and_then(Value::as_u64) != Some(id) {
            return Err(MpError::Permanent(format!(
                "{read}: MoviePilot answered another row or an empty one"
            )));
        }
        row.insert("username".into(), json!(username));
        let what = format!("making {username} the owner of subscription {id}");
        let write = Call::put(what, "/api/v1/subscribe/")
            .json(Value::Object(row))
            .side_effect();
        let answer = self.inner.call(&write).await?;
        let answer = self.inner.check_status(&write, answer)?;
        let _: Option<Value> = self.inner.accepted(&write, &answer)?;
        Ok(true)
    }

    /// Deletes a subscription. Idempotent: v2 answers success for any id, and v3's 404 for an
    /// unknown id counts as "already done".
    pub async fn delete_subscription(&self, id: u64) -> Result<(), MpError> {
        let call = Call::delete(
            format!("deleting subscription {id}"),
            format!("/api/v1/subscribe/{id}"),
        )
        .side_effect();
        let answer = self.inner.call(&call).await?;
        if self.inner.dialect == Dialect::V3 && answer.status == StatusCode::NOT_FOUND {
            return Ok(());
        }
        let answer = self.inner.check_status(&call, answer)?;
        let _: Option<Value> = self.inner.accepted(&call, &answer)?;
        Ok(())
    }

    /// Asks MoviePilot to search for a subscription now (v2 and v3.0.0 `GET`, v3.0.1 on `POST
    /// /api/v1/subscribe/search/{id}`; a v3 that answers the POST 405 is asked with GET, since a
    /// 405 did not run). Success only means the job was queued: MoviePilot skips it silently
    /// when a search is already running or the subscription is under a minute old.
    pub async fn search_subscription_now(&self, id: u64) -> Result<(), MpError> {
        let post = self.inner.dialect == Dialect::V3 && !search_trigger_is_get(&self.inner.version);
        let trigger = |method: Method| {
            let what = format!("starting a search for subscription {id}");
            Call::new(method, what, format!("/api/v1/subscribe/search/{id}")).side_effect()
        };
        let mut call = match post {
            true => trigger(Method::POST).json(json!({})),
            false => trigger(Method::GET),
        };
        let mut answer = self.inner.call(&call).await?;
        if post && answer.status == StatusCode::METHOD_NOT_ALLOWED {
            tracing::info!(
                version = %self.inner.version,
                "MoviePilot has no POST search trigger (v3.0.0 has only GET); asking with GET"
            );
            call = trigger(Method::GET);
            answer = self.inner.call(&call).await?;
        }
        let answer = self.inner.check_status(&call, answer)?;
        let _: Option<Value> = self.inner.accepted(&call, &answer)?;
        Ok(())
    }
}

/// Whether MoviePilot `version` has only `GET /subscribe/search/{id}` (v3.0.0; POST from
/// v3.0.1, MoviePilot-TV PR #40).
fn search_trigger_is_get(version: &str) -> bool {
    let mut parts = version
        .trim()
        .trim_start_matches(['v', 'V'])
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    let (major, minor, patch) = (
        parts.next().flatten(),
        parts.next().flatten(),
        parts.next().flatten(),
    );
    (major, minor, patch) == (Some(3), Some(0), Some(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_v3_0_0_searches_now_with_get() {
        assert!(search_trigger_is_get("v3.0.0"));
        assert!(search_trigger_is_get("3.0.0-1"));
        assert!(!search_trigger_is_get("v3.0.1"));
        assert!(!search_trigger_is_get("v3.1.0"));
        assert!(!search_trigger_is_get("unknown"));
    }
}
