//! Finding releases of a media and downloading one: MoviePilot's `search` area
//! (`app/api/endpoints/search.py`, the resource search every indexer site answers) and its
//! `download` area (`app/api/endpoints/download.py`: add a torrent, list what the downloader
//! is working on). A resource search's answer may be cut at `moviepilot.max_body_bytes` and is
//! still a list; `success` decides before `data` is looked at.
//!
//! Routes: `GET /api/v1/search/media/tmdb:<id>` (v3: `/<id>?media_source=themoviedb`),
//! `POST /api/v1/download/`, `GET /api/v1/download/`.

use serde_json::{Value, json};

use super::client::{Call, MoviePilot, media_label};
use super::error::MpError;
use super::releases::{RawJson, ReleaseList, SearchAnswer};
use super::types::{Download, MediaKind, WireDownload};
use crate::config::env_name;

/// What v3 answers when nothing was found, in the locale every request asks for (`zh-CN`; v2
/// answers it untranslated).
const NOTHING_FOUND: &str = "未搜索到";

/// What a resource search's answer amounts to, from its envelope and whether its body was
/// cut at `moviepilot.max_body_bytes`.
#[derive(Debug, PartialEq, Eq)]
enum SearchVerdict {
    /// A list of releases (or the beginning of one, when cut).
    Listed,
    /// MoviePilot's "nothing found" (`success:false`, 未搜索到任何资源): an empty list.
    NothingFound,
    /// Any other `success:false`, with MoviePilot's message.
    Refused(String),
    /// Cut before it could be read as a list: over the limit.
    TooLarge,
    /// Neither a list nor a refusal.
    Unexpected,
}

/// `success` decides before `data` is looked at; a cut body that had begun a list of results
/// counts as one.
fn search_verdict(read: &SearchAnswer, cut: bool) -> SearchVerdict {
    let listed = match read.success {
        Some(true) => true,
        // Cut before `success` (the real server puts it first, serde_json's maps last):
        // a list of results is a success.
        None if cut && read.data_is_list => true,
        Some(false) => {
            let message = read.message.clone().unwrap_or_default();
            return match message.contains(NOTHING_FOUND) {
                true => SearchVerdict::NothingFound,
                false => SearchVerdict::Refused(message),
            };
        }
        None => false,
    };
    // A whole body must also be whole JSON; a cut one is broken by being cut.
    if listed && (cut || !read.broken) {
        SearchVerdict::Listed
    } else if cut {
        SearchVerdict::TooLarge
    } else {
        SearchVerdict::Unexpected
    }
}

/// Release search and downloads (`moviepilot-download-flow.md` §1-3).
/// One listed torrent as a live card shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadProgress {
    /// The info-hash, lower case.
    pub hash: String,
    /// Percent done, 0 to 100.
    pub percent: u32,
    /// MoviePilot's own text for the time left, cleaned (`None` when it gives none).
    pub left_time: Option<String>,
}

impl MoviePilot {
    /// A resource search for one media (`GET /api/v1/search/media/tmdb:<id>?mtype=&season=`,
    /// v3 `/<id>?media_source=themoviedb`). Synchronous at MoviePilot: it answers after every
    /// indexer site has, so it has its own long timeout. Keeps the first `keep` releases and
    /// counts the rest; an answer over `moviepilot.max_body_bytes` is cut there (the list says
    /// so). `success` decides before `data` is looked at: MoviePilot's "nothing found"
    /// (`success:false`, 未搜索到任何资源) is an empty list, any other refusal (未识别到TMDB媒体信息,
    /// 未知的媒体ID, 媒体ID格式无效) a permanent error with MoviePilot's message.
    pub async fn search_releases(
        &self,
        tmdb_id: u64,
        kind: MediaKind,
        season: Option<u32>,
        keep: usize,
    ) -> Result<ReleaseList, MpError> {
        let call = self.search_call(tmdb_id, kind, season);
        let answer = self.inner.call(&call).await?;
        // A list cut at the limit is still a list: the size check is this route's own.
        let answer = self.inner.check_code(&call, answer)?;
        let read = SearchAnswer::read(&answer.body, keep);
        match search_verdict(&read, answer.cut) {
            SearchVerdict::Listed => {}
            SearchVerdict::NothingFound => return Ok(ReleaseList::empty()),
            SearchVerdict::Refused(message) => {
                return Err(self.inner.refused(&call, Some(&message)));
            }
            SearchVerdict::TooLarge => return Err(self.inner.too_large(&call)),
            SearchVerdict::Unexpected => return Err(self.inner.unexpected_body(&call, &answer)),
        }
        if answer.cut {
            tracing::warn!(
                read = read.total,
                limit = self.inner.max_body,
                "{call}: the answer is larger than {}; kept the results before the cut",
                env_name("moviepilot.max_body_bytes")
            );
        }
        Ok(ReleaseList {
            media_info: RawJson(read.media_info.unwrap_or(Value::Null)),
            releases: read.releases,
            total: read.total,
            cut: answer.cut,
        })
    }

    /// The resource search's call: the media's path in this dialect, its kind and season.
    fn search_call(&self, tmdb_id: u64, kind: MediaKind, season: Option<u32>) -> Call {
        let what = format!("searching releases of {}", media_label(tmdb_id, season));
        self.inner
            .get_media(what, "/api/v1/search/media", tmdb_id)
            .query("mtype", kind.wire_name())
            .query_opt("season", season)
            // Read-only at MoviePilot, but it asks every indexer site: an answer lost after the
            // request left is uncertain (the sites were hit), so it is not retried blindly.
            .side_effect()
            .within(self.inner.resource_search_timeout)
    }

    /// Adds a download (`POST /api/v1/download/` with `media_in`, `torrent_in` and `downloader`
    /// as the web UI sends them) and returns its info-hash (`download_id`). MoviePilot has no
    /// idempotency: a lost answer is uncertain and must be verified in the history.
    pub async fn add_download(
        &self,
        media_info: &Value,
        torrent_info: &Value,
        downloader: Option<&str>,
    ) -> Result<String, MpError> {
        let mut body = json!({"media_in": media_info, "torrent_in": torrent_info});
        if let Some(d) = downloader.filter(|d| !d.is_empty()) {
            body["downloader"] = json!(d);
        }
        let call = Call::post("adding a download", "/api/v1/download/")
            .json(body)
            .side_effect()
            .within(self.inner.download_timeout);
        let answer = self.inner.call(&call).await?;
        let answer = self.inner.check_status(&call, answer)?;
        let data: Option<Value> = self.inner.accepted(&call, &answer)?;
        match data
            .as_ref()
            .and_then(|d| d.get("download_id"))
            .and_then(Value::as_str)
        {
            Some(hash) if !hash.is_empty() => Ok(hash.to_ascii_lowercase()),
            _ => Err(MpError::Uncertain(format!(
                "{call}: MoviePilot answered success without a download id"
            ))),
        }
    }

    /// What the downloader is working on (`GET /api/v1/download/`).
    pub async fn downloading(&self) -> Result<Vec<Download>, MpError> {
        let call = Call::get("listing downloads", "/api/v1/download/");
        let rows: Vec<WireDownload> = self.inner.fetch_list(&call).await?;
        Ok(rows.into_iter().map(WireDownload::into_download).collect())
    }

    /// Where each listed torrent stands, by hash (`GET /api/v1/download/`): what a live card
    /// reads (issue 45). `progress` is a percent (0-100 for both clients); `left_time` is
    /// MoviePilot's own text (`StringUtils.str_secends`: "2时37分20秒", "" while the speed is 0).
    pub async fn download_progress(&self) -> Result<Vec<DownloadProgress>, MpError> {
        let call = Call::get("listing downloads", "/api/v1/download/");
        let rows: Vec<Value> = self.inner.fetch_list(&call).await?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let hash = r.get("hash").and_then(Value::as_str)?.trim();
                let left = r.get("left_time").and_then(Value::as_str).unwrap_or("");
                let percent = match r.get("progress") {
                    Some(Value::Number(n)) => n.as_f64(),
                    Some(Value::String(s)) => s.trim().parse().ok(),
                    _ => None,
                };
                Some(DownloadProgress {
                    hash: hash.to_ascii_lowercase(),
                    percent: percent.unwrap_or(0.0).clamp(0.0, 100.0).floor() as u32,
                    left_time: Some(crate::untrusted::clean_line(left).into_owned())
                        .filter(|t| !t.trim().is_empty()),
                })
            })
            .collect())
    }

    /// The info-hashes of what the downloader is downloading (`GET /api/v1/download/`),
    /// lower case: where a magnet added moments ago shows up.
    pub async fn downloading_hashes(&self) -> Result<Vec<String>, MpError> {
        let call = Call::get("listing downloads", "/api/v1/download/");
        let rows: Vec<Value> = self.inner.fetch_list(&call).await?;
        Ok(rows
            .iter()
            .filter_map(|r| r.get("hash").and_then(Value::as_str))
            .map(str::to_ascii_lowercase)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_search_answer_is_read_by_success_first_and_a_cut_list_is_a_list() {
        use super::{SearchAnswer, SearchVerdict, search_verdict};
        let answer =
            |success: Option<bool>, message: &str, data_is_list: bool, broken: bool| SearchAnswer {
                success,
                message: (!message.is_empty()).then(|| message.to_string()),
                data_is_list,
                broken,
                ..SearchAnswer::default()
            };
        let cases = [
            (
                answer(Some(true), "", true, false),
                false,
                SearchVerdict::Listed,
            ),
            (
                answer(Some(true), "", true, true),
                false,
                SearchVerdict::Unexpected,
            ),
            (
                answer(Some(true), "", true, true),
                true,
                SearchVerdict::Listed,
            ),
            (answer(None, "", true, true), true, SearchVerdict::Listed),
            (answer(None, "", false, true), true, SearchVerdict::TooLarge),
            (
                answer(None, "", true, false),
                false,
                SearchVerdict::Unexpected,
            ),
            (
                answer(Some(false), "未搜索到任何资源", false, false),
                false,
                SearchVerdict::NothingFound,
            ),
            (
                answer(Some(false), "未识别到TMDB媒体信息", false, false),
                false,
                SearchVerdict::Refused("未识别到TMDB媒体信息".into()),
            ),
            (
                answer(Some(false), "", false, false),
                false,
                SearchVerdict::Refused(String::new()),
            ),
        ];
        for (read, cut, want) in cases {
            assert_eq!(
                search_verdict(&read, cut),
                want,
                "{:?} cut {cut}",
                read.success
            );
        }
    }
}
