//! What a live card reads of the simulated MoviePilot (issue 45), in the shapes v2.5.6 and v2.14
//! write (`/work/notes`-era research, cited in `docs/notifications.md#live-cards`):
//!
//! - **Downloads** (`GET /api/v1/download/`): the torrents the client is downloading, each with
//!   its lower-case `hash`, `progress` (a percent) and `left_time` as MoviePilot's
//!   `StringUtils.str_secends` writes it ("2时37分20秒", "12分3秒"; "" while the speed is 0). A
//!   finished torrent leaves the list ([`super::MoviePilotSim::finish_download`]).
//! - **Transfers** (`GET /api/v1/history/transfer`): one row per file, newest first, with the
//!   torrent's `download_hash`, `tmdbid`, `seasons` ("S01"), `episodes` ("E05" or "E05-E06"),
//!   `status` (a boolean) and `errmsg` ([`SimFiled`]).
//! - **Subscriptions** (`GET /api/v1/subscribe/`): `lack_episode` falls and `note` lists the
//!   episodes downloaded ([`super::MoviePilotSim::set_subscription_progress`]); a completed one
//!   gets a subscription-history row (a new id, `date` = when it completed) and leaves the list
//!   ([`super::MoviePilotSim::complete_subscription`]); a deleted one leaves no history row.
//! - **Subscription history** (`GET /api/v1/subscribe/history/{mtype}?page=&count=`, `mtype`
//!   电影 or 电视剧): a bare list of `Subscribe` rows, newest first (v2).

use serde_json::{Value, json};

use super::{MoviePilotSim, Req, Resp, SimTransfer, State, json_resp, local_time_now};
use http::StatusCode;
use oncebot::moviepilot::MediaKind;

/// A file MoviePilot filed (or failed to) from a download: the transfer row's fields beyond
/// src, dest and title.
#[derive(Debug, Clone, Default)]
pub struct SimFiled {
    pub download_hash: Option<String>,
    pub tmdb_id: Option<u64>,
    pub kind: Option<MediaKind>,
    /// "S01".
    pub seasons: Option<String>,
    /// "E05" or "E05-E06".
    pub episodes: Option<String>,
    /// `status`.
    pub succeeded: bool,
    pub errmsg: Option<String>,
}

impl SimFiled {
    pub(super) fn fill(&self, row: &mut Value) {
        row["download_hash"] = json!(self.download_hash);
        row["tmdbid"] = json!(self.tmdb_id);
        row["seasons"] = json!(self.seasons);
        row["episodes"] = json!(self.episodes);
        row["status"] = json!(self.succeeded);
        row["errmsg"] = json!(self.errmsg);
        row["type"] = json!(self.kind.map_or("电影", MediaKind::wire_name));
        row["date"] = json!(local_time_now());
    }
}

/// The completed subscriptions, newest last.
#[derive(Debug, Default)]
pub(super) struct SubHistory {
    rows: Vec<Value>,
    next_id: u64,
}

/// MoviePilot's `StringUtils.str_secends`: "2时37分20秒", zero hours or minutes left out.
pub(super) fn left_time(progress: f64) -> String {
    let secs = ((100.0 - progress.clamp(0.0, 100.0)) * 7.0) as u64;
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s}秒"),
        (0, _) => format!("{m}分{s}秒"),
        _ => format!("{h}时{m}分{s}秒"),
    }
}

impl MoviePilotSim {
    /// The downloader's progress of torrent `hash` (a percent).
    pub fn set_download_progress(&self, hash: &str, progress: f64) {
        let mut data = self.state.data();
        for d in data.downloads.iter_mut().filter(|d| d.hash == hash) {
            d.progress = progress;
        }
    }

    /// Torrent `hash` finished (or was removed): it leaves the downloading list.
    pub fn finish_download(&self, hash: &str) {
        self.state.data().downloads.retain(|d| d.hash != hash);
    }

    /// MoviePilot filed (or failed to file) one file into `dest`: a transfer row; its id.
    pub fn file_transfer(&self, src: &str, dest: &str, title: &str, filed: SimFiled) -> u64 {
        let mut data = self.state.data();
        let t = &mut data.transfers;
        t.next_id += 1;
        let record = SimTransfer {
            src: src.into(),
            dest: dest.into(),
            title: title.into(),
            filed: Some(filed),
        };
        t.records.insert(t.next_id, record);
        t.next_id
    }

    /// Subscription `id` lacks `lack` episodes and has downloaded `downloaded` (its `note`).
    pub fn set_subscription_progress(&self, id: u64, lack: u32, downloaded: &[u32]) {
        if let Some(sub) = self.state.data().subs.get_mut(&id) {
            sub.lack_episode = Some(lack);
            sub.note = downloaded.to_vec();
        }
    }

    /// Someone deleted subscription `id` in MoviePilot's web UI: gone, no history row. False:
    /// no such subscription.
    pub fn delete_subscription(&self, id: u64) -> bool {
        self.state.data().subs.remove(&id).is_some()
    }

    /// MoviePilot completed subscription `id`: a history row, then the subscription deleted
    /// (v2.5.6 `app/chain/subscribe.py` `__finish_subscribe`). False: no such subscription.
    pub fn complete_subscription(&self, id: u64) -> bool {
        let mut data = self.state.data();
        let Some(sub) = data.subs.remove(&id) else {
            return false;
        };
        let history = &mut data.sub_history;
        history.next_id += 1;
        history.rows.push(json!({
            "id": history.next_id, "name": sub.name, "year": sub.year,
            "type": sub.kind.wire_name(), "tmdbid": sub.tmdb_id, "season": sub.season,
            "total_episode": sub.total_episode, "lack_episode": 0, "note": sub.note,
            "username": sub.username, "best_version": u8::from(sub.best_version),
            "date": local_time_now(),
        }));
        true
    }
}

/// `GET /api/v1/subscribe/history/{mtype}?page=&count=`: the completed subscriptions of one
/// kind, newest first, a bare list.
pub(super) fn subscribe_history(state: &State, mtype: &str, req: &Req) -> Resp {
    let page = req.number("page", 1).unwrap_or(1).max(1);
    let count = req.number("count", 30).unwrap_or(30).max(1);
    let data = state.data();
    let rows: Vec<Value> = data
        .sub_history
        .rows
        .iter()
        .rev()
        .filter(|r| r["type"] == mtype)
        .skip((page - 1) * count)
        .take(count)
        .cloned()
        .collect();
    json_resp(StatusCode::OK, &Value::Array(rows))
}
