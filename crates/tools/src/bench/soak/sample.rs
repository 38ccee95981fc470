//! What the soak reads every minute: each process's RSS (`/proc/<pid>/status`), Redis's
//! `used_memory`, the deployment's keys by kind (SCAN of its prefix), and each stream's length,
//! pending entries and lag (XLEN, XINFO GROUPS).

use std::collections::BTreeMap;

use anyhow::Context as _;
use redis::AsyncCommands as _;
use redis::aio::MultiplexedConnection;
use serde::Serialize;

use super::scene::Processes;
use oncebot::ledger::Keys;
use oncebot::ledger::keys::Stream;

/// A stream's state at one moment.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct StreamState {
    pub len: u64,
    pub pending: u64,
    pub lag: u64,
}

/// One minute's figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Sample {
    pub minute: u32,
    /// Seconds since the traffic began.
    pub at_secs: f64,
    /// Per role: VmRSS in KiB, of it RssAnon (heap and stacks: where a leak grows; the rest
    /// is the binary's pages, which grow once as code runs for the first time), and the minute
    /// its process started (a series).
    pub rss_kib: BTreeMap<&'static str, u64>,
    pub anon_kib: BTreeMap<&'static str, u64>,
    pub since_minute: BTreeMap<&'static str, u32>,
    pub used_memory: u64,
    /// Keys by the kind segment after `v1:` (`job`, `updates`, `token`, ...).
    pub keys: BTreeMap<String, u64>,
    /// What the keys take: per kind, its count × the mean `MEMORY USAGE` of a sample of them.
    pub key_bytes: u64,
    /// Update_ids remembered: the fields of every `updates:` HASH.
    pub update_records: u64,
    /// `seq:job`: jobs created so far.
    pub jobs_created: u64,
    pub streams: BTreeMap<&'static str, StreamState>,
    /// What happened in the minute before: a kill, MoviePilot away.
    pub events: Vec<String>,
}

/// Keys sampled per kind for `MEMORY USAGE`.
const SAMPLES_PER_KIND: usize = 32;

/// A kind's keys at the end.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KindSurvey {
    pub keys: u64,
    /// Records: a key each, but an update_id each for `updates`.
    pub records: u64,
    pub without_ttl: u64,
    pub max_pttl_ms: i64,
    pub bytes_per_record: f64,
}

/// The reader: a connection of its own to the deployment's Redis.
pub struct Reader {
    pub conn: MultiplexedConnection,
    pub keys: Keys,
}

impl Reader {
    pub async fn connect(url: &str) -> anyhow::Result<Reader> {
        let client = redis::Client::open(url).context("the soak's Redis URL")?;
        Ok(Reader {
            conn: client.get_multiplexed_async_connection().await?,
            keys: Keys::new("oncebot"),
        })
    }

    /// Every key of the deployment (SCAN, never KEYS).
    pub async fn all_keys(&self) -> anyhow::Result<Vec<String>> {
        let mut conn = self.conn.clone();
        let pattern = format!("{}*", self.keys.base());
        let mut cursor = 0u64;
        let mut out = Vec::new();
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
                .await
                .context("SCAN")?;
            out.extend(keys);
            if next == 0 {
                return Ok(out);
            }
            cursor = next;
        }
    }

    /// A key's kind: the segment after `v1:`.
    pub fn kind<'k>(&self, key: &'k str) -> &'k str {
        let rest = key.strip_prefix(self.keys.base()).unwrap_or(key);
        rest.split(':').next().unwrap_or(rest)
    }

    pub async fn used_memory(&self) -> anyhow::Result<u64> {
        self.memory_field("used_memory").await
    }

    /// One figure of `INFO memory`.
    pub async fn memory_field(&self, field: &str) -> anyhow::Result<u64> {
        let mut conn = self.conn.clone();
        let info: String = redis::cmd("INFO")
            .arg("memory")
            .query_async(&mut conn)
            .await?;
        info.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .with_context(|| format!("INFO memory has no {field}"))
    }

    pub async fn stream(&self, stream: Stream) -> anyhow::Result<StreamState> {
        let mut conn = self.conn.clone();
        let key = stream.key(&self.keys);
        let len: u64 = conn.xlen(&key).await?;
        let groups: redis::Value = match redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(&key)
            .query_async(&mut conn)
            .await
        {
            Ok(v) => v,
            // No stream yet: nothing in it.
            Err(_) => return Ok(StreamState::default()),
        };
        let mut state = StreamState {
            len,
            ..StreamState::default()
        };
        for group in as_list(&groups) {
            let fields = pairs(group);
            if fields.get("name").map(String::as_str) == Some(stream.group()) {
                let num = |k: &str| fields.get(k).and_then(|v| v.parse().ok()).unwrap_or(0);
                state.pending = num("pending");
                state.lag = num("lag");
            }
        }
        Ok(state)
    }

    /// Every key's PTTL and a sample's MEMORY USAGE, by kind.
    pub async fn survey(&self) -> anyhow::Result<BTreeMap<String, KindSurvey>> {
        let mut conn = self.conn.clone();
        let mut out: BTreeMap<String, KindSurvey> = BTreeMap::new();
        let mut sampled: BTreeMap<String, (usize, u64, u64)> = BTreeMap::new();
        for key in self.all_keys().await? {
            let kind = self.kind(&key).to_string();
            let pttl: i64 = conn.pttl(&key).await?;
            let records = if kind == "updates" {
                conn.hlen(&key).await?
            } else {
                1u64
            };
            let k = out.entry(kind.clone()).or_default();
            k.keys += 1;
            k.records += records;
            if pttl == -1 {
                k.without_ttl += 1;
            }
            k.max_pttl_ms = k.max_pttl_ms.max(pttl);
            let s = sampled.entry(kind).or_default();
            if s.0 < SAMPLES_PER_KIND {
                let bytes: Option<u64> = redis::cmd("MEMORY")
                    .arg("USAGE")
                    .arg(&key)
                    .arg("SAMPLES")
                    .arg(0)
                    .query_async(&mut conn)
                    .await?;
                *s = (s.0 + 1, s.1 + bytes.unwrap_or(0), s.2 + records);
            }
        }
        for (kind, (_, bytes, records)) in sampled {
            if let Some(k) = out.get_mut(&kind) {
                k.bytes_per_record = bytes as f64 / records.max(1) as f64;
            }
        }
        Ok(out)
    }

    /// `seq:job`: jobs created so far.
    pub async fn jobs_created(&self) -> anyhow::Result<u64> {
        let mut conn = self.conn.clone();
        let seq: Option<u64> = conn.get(self.keys.job_seq()).await?;
        Ok(seq.unwrap_or(0))
    }

    /// Reads one minute's figures.
    pub async fn sample(
        &self,
        minute: u32,
        at_secs: f64,
        processes: &Processes,
    ) -> anyhow::Result<Sample> {
        let mut sample = Sample {
            minute,
            at_secs,
            used_memory: self.used_memory().await?,
            ..Sample::default()
        };
        for p in &processes.0 {
            let field = |f| {
                p.process
                    .pid()
                    .and_then(|pid| status_kib(pid, f))
                    .unwrap_or(0)
            };
            sample.rss_kib.insert(p.role, field("VmRSS:"));
            sample.anon_kib.insert(p.role, field("RssAnon:"));
            sample.since_minute.insert(p.role, p.since_minute);
        }
        for (kind, k) in self.survey().await? {
            if kind == "updates" {
                sample.update_records = k.records;
            }
            sample.key_bytes += (k.bytes_per_record * k.records as f64) as u64;
            sample.keys.insert(kind, k.keys);
        }
        sample.jobs_created = self.jobs_created().await?;
        for stream in Stream::ALL {
            sample
                .streams
                .insert(stream.name(), self.stream(stream).await?);
        }
        Ok(sample)
    }
}

/// A figure of `/proc/<pid>/status` in KiB (`VmRSS:`, `RssAnon:`).
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// The elements of an array reply.
pub fn as_list(v: &redis::Value) -> Vec<&redis::Value> {
    match v {
        redis::Value::Array(items) | redis::Value::Set(items) => items.iter().collect(),
        _ => Vec::new(),
    }
}

/// A reply of alternating names and values (RESP2) or a map (RESP3), as strings.
pub fn pairs(v: &redis::Value) -> BTreeMap<String, String> {
    let text = |v: &redis::Value| match v {
        redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        redis::Value::SimpleString(s) => s.clone(),
        redis::Value::Int(i) => i.to_string(),
        _ => String::new(),
    };
    match v {
        redis::Value::Map(m) => m.iter().map(|(k, v)| (text(k), text(v))).collect(),
        redis::Value::Array(items) => items
            .chunks(2)
            .filter_map(|c| Some((text(c.first()?), text(c.get(1)?))))
            .collect(),
        _ => BTreeMap::new(),
    }
}
