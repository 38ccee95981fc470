//! What a resource search found and what the download history says, as the rest of oncebot
//! sees it.
//!
//! A search result's `torrent_info` carries the site's login cookie in clear, and MoviePilot
//! needs it back verbatim in `torrent_in`. So a [`Release`] keeps the raw object in a
//! [`RawJson`], which prints as `[redacted]` in `Debug` and is only ever stored in the ledger's
//! release list or sent back to MoviePilot; every field a reply may show is read out of it.

use std::fmt;

use serde_json::Value;

/// A MoviePilot object oncebot must keep verbatim but never show (it may hold a site cookie).
#[derive(Clone, PartialEq)]
pub struct RawJson(pub Value);

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// A resource search's answer: the `media_info` every result shares (stored once) and the
/// first releases in MoviePilot's order (as many as the caller keeps).
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseList {
    pub media_info: RawJson,
    pub releases: Vec<Release>,
    /// Results MoviePilot's answer holds (or, when `cut`, the part of it that was read).
    pub total: usize,
    /// The answer was longer than `moviepilot.max_body_bytes`: only its first `total` results
    /// were read.
    pub cut: bool,
}

impl ReleaseList {
    /// The media's poster, from the `media_info` the results share (its `poster_path`, as
    /// `/media/search` gives it: [`super::poster_url`]).
    pub fn poster(&self) -> Option<String> {
        let path = self.media_info.0.get("poster_path")?.as_str()?;
        super::poster_url(path)
    }

    /// No results.
    pub fn empty() -> ReleaseList {
        ReleaseList {
            media_info: RawJson(Value::Null),
            releases: Vec::new(),
            total: 0,
            cut: false,
        }
    }
}

/// What a resource search's body says, read in one pass without building what is not kept:
/// the first `keep` results become [`Release`]s, the rest are only counted (a `Value` tree per
/// result of a 45 MB answer was most of the worker's memory). A body cut short (at the byte
/// limit) keeps whatever was complete before the cut.
#[derive(Debug, Default)]
pub(crate) struct SearchAnswer {
    /// `None`: the body had no `success`, or was cut before it.
    pub success: Option<bool>,
    pub message: Option<String>,
    /// `data` began as a list (so, for a cut body, the results that were read are results).
    pub data_is_list: bool,
    pub media_info: Option<Value>,
    pub releases: Vec<Release>,
    pub total: usize,
    /// The body is not one JSON object (or was cut short).
    pub broken: bool,
}

impl SearchAnswer {
    pub(crate) fn read(body: &[u8], keep: usize) -> SearchAnswer {
        let mut answer = SearchAnswer::default();
        // Checked as UTF-8 once, not string by string (crate::json_body says why).
        let top = Top {
            answer: &mut answer,
            keep,
        };
        let read = match std::str::from_utf8(body) {
            Ok(text) => top.read_whole(serde_json::Deserializer::from_str(text)),
            Err(_) => top.read_whole(serde_json::Deserializer::from_slice(body)),
        };
        answer.broken = read.is_err();
        answer
    }
}

impl Top<'_> {
    /// The whole body through `de`, nothing after the object.
    fn read_whole<'de, R: serde_json::de::Read<'de>>(
        self,
        mut de: serde_json::Deserializer<R>,
    ) -> serde_json::Result<()> {
        use serde::de::DeserializeSeed as _;
        self.deserialize(&mut de)?;
        de.end()
    }
}

/// The envelope's object: `success`, `message` and `data`, in whatever order they come.
struct Top<'a> {
    answer: &'a mut SearchAnswer,
    keep: usize,
}

impl<'de> serde::de::DeserializeSeed<'de> for Top<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Top<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MoviePilot's {success, message, data}")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "success" => self.answer.success = map.next_value::<Option<bool>>()?,
                "message" => {
                    self.answer.message = match map.next_value::<Value>()? {
                        Value::String(m) => Some(m),
                        _ => None,
                    }
                }
                "data" => map.next_value_seed(Data {
                    answer: &mut *self.answer,
                    keep: self.keep,
                })?,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// `data`: a list of `Context` dicts, or anything else (`{}`, `null`), which holds no results.
struct Data<'a> {
    answer: &'a mut SearchAnswer,
    keep: usize,
}

impl<'de> serde::de::DeserializeSeed<'de> for Data<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Data<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of search results")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let answer = self.answer;
        answer.data_is_list = true;
        loop {
            if answer.releases.len() < self.keep {
                let Some(mut row) = seq.next_element::<Value>()? else {
                    return Ok(());
                };
                answer.total += 1;
                if answer.media_info.is_none()
                    && let Some(media) = row.get_mut("media_info").map(Value::take)
                {
                    answer.media_info = Some(media);
                }
                if let Some(release) = row
                    .get_mut("torrent_info")
                    .map(Value::take)
                    .and_then(Release::from_torrent_info)
                {
                    answer.releases.push(release);
                }
            } else {
                let Some(serde::de::IgnoredAny) = seq.next_element()? else {
                    return Ok(());
                };
                answer.total += 1;
            }
        }
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
}

/// One release (a `Context`'s `torrent_info`), with what a reply shows read out of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    pub site_name: String,
    pub title: String,
    /// The subtitle (`description`); empty when the site gives none.
    pub description: String,
    /// Bytes.
    pub size: Option<f64>,
    pub seeders: Option<i64>,
    /// e.g. `免费`, `50%`, `普通`.
    pub volume_factor: Option<String>,
    /// The site's configured downloader, sent back as `downloader` (v2.14 otherwise replaces
    /// it with the default one).
    pub site_downloader: Option<String>,
    /// The info-hash of a `magnet:` enclosure (lower case), known before the add.
    pub magnet_hash: Option<String>,
    /// `torrent_info` as MoviePilot sent it, site cookie included.
    pub torrent_info: RawJson,
}

impl Release {
    /// Reads a `torrent_info` object; `None` without a title or a site.
    pub fn from_torrent_info(info: Value) -> Option<Release> {
        let text = |name: &str| {
            info.get(name)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let title = text("title")?;
        let site_name = text("site_name")?;
        let number = |name: &str| match info.get(name) {
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        };
        Some(Release {
            description: text("description").unwrap_or_default(),
            size: number("size"),
            seeders: number("seeders").map(|n| n as i64),
            volume_factor: text("volume_factor"),
            site_downloader: text("site_downloader"),
            magnet_hash: text("enclosure").and_then(|e| magnet_hash(&e)),
            title,
            site_name,
            torrent_info: RawJson(info),
        })
    }

    /// What makes two releases the same download: site, title and subtitle, as the download
    /// history records them.
    pub fn identity(&self) -> ReleaseIdentity {
        ReleaseIdentity {
            site: self.site_name.clone(),
            title: self.title.clone(),
            description: self.description.clone(),
        }
    }
}

/// Site, title and subtitle: the history's `torrent_site`, `torrent_name`, `torrent_description`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReleaseIdentity {
    pub site: String,
    pub title: String,
    pub description: String,
}

impl ReleaseIdentity {
    /// Whether `row` records a manual download of this release.
    pub fn matches(&self, row: &HistoryRow) -> bool {
        row.manual
            && row.torrent_site == self.site
            && row.torrent_name == self.title
            && row.torrent_description == self.description
    }
}

/// One row of `GET /api/v1/history/download`, reduced to what verification reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRow {
    pub id: u64,
    pub torrent_site: String,
    pub torrent_name: String,
    pub torrent_description: String,
    pub download_hash: Option<String>,
    /// `note.source == "Manual"`: added through the API or the web UI, not by a subscription.
    pub manual: bool,
}

impl HistoryRow {
    /// Reads one row; `None` without an id.
    pub fn from_wire(row: &Value) -> Option<HistoryRow> {
        let id = super::types::wire_u64(row.get("id"))?;
        let text = |name: &str| {
            row.get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        // `note` is a JSON column: an object, or (older rows, other drivers) its text.
        let note = match row.get("note") {
            Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
            Some(v) => v.clone(),
            None => Value::Null,
        };
        let manual = note.get("source").and_then(Value::as_str) == Some("Manual");
        Some(HistoryRow {
            id,
            torrent_site: text("torrent_site"),
            torrent_name: text("torrent_name"),
            torrent_description: text("torrent_description"),
            download_hash: Some(text("download_hash")).filter(|h| !h.is_empty()),
            manual,
        })
    }
}

/// The btih of `magnet:?xt=urn:btih:<hash>&...`, lower case; `None` for anything else.
pub fn magnet_hash(enclosure: &str) -> Option<String> {
    let query = enclosure.trim().strip_prefix("magnet:?")?;
    query.split('&').find_map(|part| {
        let value = part.strip_prefix("xt=")?;
        let hash = value
            .strip_prefix("urn:btih:")
            .or_else(|| value.strip_prefix("urn%3Abtih%3A"))?;
        let ok = matches!(hash.len(), 32 | 40) && hash.bytes().all(|b| b.is_ascii_alphanumeric());
        ok.then(|| hash.to_ascii_lowercase())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_release_keeps_its_raw_info_but_never_prints_it() {
        let info = json!({"site_name": "SiteA", "title": "Dune 2021 2160p", "description": "沙丘",
            "size": 1.5e10, "seeders": 12, "volume_factor": "免费", "site_downloader": "qb2",
            "site_cookie": "uid=1; pass=MARKER", "enclosure": "https://a.example/dl/1"});
        let release = Release::from_torrent_info(info.clone()).unwrap();
        assert_eq!(release.torrent_info.0, info);
        assert_eq!(release.seeders, Some(12));
        assert_eq!(release.site_downloader.as_deref(), Some("qb2"));
        assert!(!format!("{release:?}").contains("MARKER"));
    }

    fn context(n: usize) -> Value {
        json!({"meta_info": {}, "media_info": {"title": "Dune", "year": "2021"},
            "torrent_info": {"site_name": "S", "title": format!("Dune {n}"), "description": ""}})
    }

    #[test]
    fn a_search_answer_keeps_the_first_releases_and_counts_the_rest() {
        let rows: Vec<Value> = (1..=50).map(context).collect();
        let body =
            serde_json::to_vec(&json!({"data": rows, "message": null, "success": true})).unwrap();
        let answer = SearchAnswer::read(&body, 8);
        assert!(!answer.broken);
        assert_eq!(answer.success, Some(true));
        assert_eq!(answer.total, 50);
        assert_eq!(answer.releases.len(), 8);
        assert_eq!(answer.releases[7].title, "Dune 8");
        assert_eq!(answer.media_info.unwrap()["title"], "Dune");
    }

    #[test]
    fn a_cut_search_answer_keeps_what_was_complete_before_the_cut() {
        let rows: Vec<Value> = (1..=50).map(context).collect();
        let body =
            serde_json::to_vec(&json!({"data": rows, "message": null, "success": true})).unwrap();
        let cut = &body[..body.len() / 2];
        let answer = SearchAnswer::read(cut, 8);
        assert!(answer.broken && answer.data_is_list);
        assert_eq!(answer.success, None, "cut before it");
        assert!(answer.total > 8 && answer.total < 50, "{}", answer.total);
        assert_eq!(answer.releases.len(), 8);
    }

    #[test]
    fn a_refusal_is_read_whatever_shape_its_data_has() {
        for body in [
            r#"{"success":false,"message":"未搜索到任何资源","data":{}}"#,
            r#"{"success":false,"message":"未搜索到任何资源","data":null}"#,
            r#"{"data":{},"message":"未搜索到任何资源","success":false}"#,
        ] {
            let answer = SearchAnswer::read(body.as_bytes(), 8);
            assert!(!answer.broken, "{body}");
            assert_eq!(answer.success, Some(false));
            assert_eq!(answer.message.as_deref(), Some("未搜索到任何资源"));
            assert!(!answer.data_is_list && answer.releases.is_empty());
        }
        assert!(SearchAnswer::read(b"<html>", 8).broken);
    }

    #[test]
    fn magnet_hashes_are_read_and_other_links_are_not() {
        let hash = "C12FE1C06BBA254A9DC9F519B335AA7C1367A88A";
        assert_eq!(
            magnet_hash(&format!("magnet:?xt=urn:btih:{hash}&dn=x")).as_deref(),
            Some(hash.to_ascii_lowercase().as_str())
        );
        assert_eq!(magnet_hash("https://site/download.php?id=1"), None);
        assert_eq!(magnet_hash("magnet:?dn=x"), None);
    }

    #[test]
    fn history_rows_match_on_site_title_subtitle_and_manual_source() {
        let row = HistoryRow::from_wire(&json!({"id": 7, "torrent_site": "SiteA",
            "torrent_name": "T", "torrent_description": "D", "download_hash": "abc",
            "note": {"source": "Manual"}}))
        .unwrap();
        let id = ReleaseIdentity {
            site: "SiteA".into(),
            title: "T".into(),
            description: "D".into(),
        };
        assert!(id.matches(&row));
        let by_subscription = HistoryRow {
            manual: false,
            ..row.clone()
        };
        assert!(!id.matches(&by_subscription));
        let text_note = HistoryRow::from_wire(&json!({"id": 8, "torrent_site": "SiteA",
            "torrent_name": "T", "torrent_description": "D", "note": "{\"source\": \"Manual\"}"}))
        .unwrap();
        assert!(id.matches(&text_note));
    }
}
