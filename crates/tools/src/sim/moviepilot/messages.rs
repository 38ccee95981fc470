//! The simulator's message history and the Webhook plugin, as MoviePilot has them (see
//! `oncebot::moviepilot::HistoryMessage` for the versions read).
//!
//! - **History** (`GET /api/v1/message/web?page=&count=`, JWT, or the API key where the version
//!   takes it): every row, sent (`action` 1) and received (`action` 0); `to_dict()` of the
//!   columns in their order (`id, channel, source, mtype, title, text, image, link, userid,
//!   reg_time, action, note`). Pages newest first by `reg_time`; v2 before v2.9 (v2.5.6) then
//!   sorts each page back to oldest first (`result.sort(key=reg_time)`), later versions keep
//!   `reg_time, id` descending. v2 answers the bare list, v3 the envelope.
//! - **Ids** as SQLite gives them without AUTOINCREMENT: the highest id + 1, so a purge of the
//!   newest rows hands their ids out again.
//! - **Webhook plugin** payloads (`{"type": <event>, "data": {...}}`, enum members as objects
//!   with `_value_` and `_name_`), with a `download.added` whose `torrent_info` carries the
//!   site's cookie, sent by POST (JSON) or GET (the event in the query string).

use serde_json::{Value, json};

use super::{Data, Req, Resp, local_time_now, ok_payload, reports_backend_version};
use oncebot::moviepilot::Dialect;
use oncebot::vocabulary::NotificationType;

/// One row of the simulated message table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimMessage {
    pub id: u64,
    pub channel: Option<String>,
    pub source: Option<String>,
    pub mtype: Option<NotificationType>,
    pub title: String,
    pub text: String,
    pub image: Option<String>,
    pub link: Option<String>,
    pub userid: Option<String>,
    /// `%Y-%m-%d %H:%M:%S`, MoviePilot's local time without a zone (UTC here).
    pub reg_time: String,
    /// 1 sent by MoviePilot, 0 received from a user.
    pub action: i64,
}

/// A notification to write, as `ChainBase.post_message` stores it.
#[derive(Debug, Clone, Default)]
pub struct SimNotification {
    pub mtype: Option<NotificationType>,
    pub title: String,
    pub text: String,
    pub image: Option<String>,
    pub link: Option<String>,
    /// `reg_time`; `None`: now.
    pub at: Option<String>,
}

impl SimNotification {
    pub fn new(mtype: NotificationType, title: &str, text: &str) -> Self {
        SimNotification {
            mtype: Some(mtype),
            title: title.into(),
            text: text.into(),
            ..Self::default()
        }
    }

    pub fn with_image(mut self, url: &str) -> Self {
        self.image = Some(url.into());
        self
    }

    pub fn at(mut self, reg_time: &str) -> Self {
        self.at = Some(reg_time.into());
        self
    }
}

fn next_id(data: &Data) -> u64 {
    data.messages.iter().map(|m| m.id).max().unwrap_or(0) + 1
}

pub(super) fn notify(data: &mut Data, n: SimNotification) -> u64 {
    let id = next_id(data);
    data.messages.push(SimMessage {
        id,
        channel: Some("Telegram".into()),
        source: Some("Telegram".into()),
        mtype: n.mtype,
        title: n.title,
        text: n.text,
        image: n.image,
        link: n.link,
        userid: None,
        reg_time: n.at.unwrap_or_else(local_time_now),
        action: 1,
    });
    id
}

pub(super) fn user_message(data: &mut Data, text: &str) -> u64 {
    let id = next_id(data);
    data.messages.push(SimMessage {
        id,
        channel: Some("Telegram".into()),
        source: Some("Telegram".into()),
        mtype: None,
        title: String::new(),
        text: text.into(),
        image: None,
        link: None,
        userid: Some("123456789".into()),
        reg_time: local_time_now(),
        action: 0,
    });
    id
}

/// Deletes the `n` newest rows (by id): their ids are given again.
pub(super) fn purge_newest(data: &mut Data, n: usize) {
    data.messages.sort_by_key(|m| m.id);
    let keep = data.messages.len().saturating_sub(n);
    data.messages.truncate(keep);
}

fn row(m: &SimMessage) -> Value {
    json!({
        "id": m.id,
        "channel": m.channel,
        "source": m.source,
        "mtype": m.mtype.map(NotificationType::value),
        "title": m.title,
        "text": m.text,
        "image": m.image,
        "link": m.link,
        "userid": m.userid,
        "reg_time": m.reg_time,
        "action": m.action,
        "note": {},
    })
}

/// `GET /api/v1/message/web`.
pub(super) fn history(data: &Data, dialect: Dialect, version: &str, req: &Req) -> Resp {
    let page = req.number("page", 1).unwrap_or(1).max(1);
    let count = req.number("count", 20).unwrap_or(20);
    let mut rows: Vec<&SimMessage> = data.messages.iter().collect();
    rows.sort_by(|a, b| (&b.reg_time, b.id).cmp(&(&a.reg_time, a.id)));
    let mut rows: Vec<&SimMessage> = rows
        .into_iter()
        .skip((page - 1) * count)
        .take(count)
        .collect();
    if dialect == Dialect::V2 && !reports_backend_version(version) {
        // v2.5.6: `result.sort(key=lambda x: x.reg_time, reverse=False)` after the query.
        rows.sort_by(|a, b| a.reg_time.cmp(&b.reg_time));
    }
    ok_payload(dialect, Value::Array(rows.into_iter().map(row).collect()))
}

/// An enum member as the plugin's walker turns it into JSON (its `__dict__`).
fn enum_member(t: NotificationType) -> Value {
    let order = NotificationType::ALL
        .iter()
        .position(|x| *x == t)
        .unwrap_or(0);
    json!({"_value_": t.value(), "_name_": t.name(), "_sort_order_": order})
}

/// The plugin's body for `notice.message` of `m` (`{**Notification, "type": mtype}`).
pub fn notice_payload(m: &SimMessage) -> Value {
    let mtype = m.mtype.map(enum_member);
    json!({
        "type": "notice.message",
        "data": {
            "channel": null, "source": m.source, "mtype": mtype, "ctype": null,
            "title": m.title, "text": m.text, "image": m.image, "link": m.link,
            "userid": m.userid, "username": null, "targets": {"telegram_userid": "123456789"},
            "buttons": null, "type": mtype,
        }
    })
}

/// The plugin's body for `download.added`: the context's `torrent_info` is `vars(self)`, the
/// site's login cookie included.
pub fn download_added_payload(site_cookie: &str) -> Value {
    json!({
        "type": "download.added",
        "data": {
            "hash": "f0e1d2c3b4a5968778695a4b3c2d1e0f01234567",
            "downloader": "qbittorrent",
            "episodes": [],
            "username": "admin",
            "source": "Manual",
            "context": {
                "meta_info": {"name": "Dune Part Two", "year": "2024", "type": {"_value_": "电影", "_name_": "MOVIE"}},
                "media_info": {"title": "沙丘2", "year": "2024", "tmdb_id": 693134},
                "torrent_info": {
                    "site": 1, "site_name": "SimSite", "site_cookie": site_cookie,
                    "site_ua": "Mozilla/5.0", "site_proxy": false, "site_order": 0,
                    "title": "Dune.Part.Two.2024.2160p.WEB-DL", "enclosure": "https://sim.site/dl/1",
                    "page_url": "https://sim.site/details/1", "size": 21474836480u64,
                    "seeders": 12, "peers": 1
                }
            }
        }
    })
}

/// Sends `payload` to `url` as the Webhook plugin does: POST with the JSON body, or GET with the
/// event in the query string. Returns the HTTP status.
pub async fn send_webhook(url: &str, payload: &Value, get: bool) -> anyhow::Result<u16> {
    let client = reqwest::Client::builder()
        .user_agent("python-urllib3/2.2.1")
        .build()?;
    let request = if get {
        let mut query: Vec<(String, String)> = Vec::new();
        if let Some(obj) = payload.as_object() {
            for (k, v) in obj {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                query.push((k.clone(), v));
            }
        }
        client.get(url).query(&query)
    } else {
        client.post(url).json(payload)
    };
    Ok(request.send().await?.status().as_u16())
}
