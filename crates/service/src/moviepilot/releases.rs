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
/// releases in MoviePilot's order.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseList {
    pub media_info: RawJson,
    pub releases: Vec<Release>,
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
        let id = match row.get("id")? {
            Value::Number(n) => n.as_u64()?,
            Value::String(s) => s.trim().parse().ok()?,
            _ => return None,
        };
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
