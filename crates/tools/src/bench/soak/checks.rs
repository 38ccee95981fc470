//! The soak's pass checks, each with the figures it compared and against what.
//!
//! - `rss_flat`: per process series (a restarted process starts a new one), a least-squares
//!   line through its anonymous RSS (`RssAnon`: heap and stacks, where a leak grows) from the
//!   fifth minute of its life on, growth per ten minutes relative to the line's
//!   start under 2 % (or under 512 KiB, the allocator's granularity for a heap of a few MiB);
//!   VmRSS is shown beside it. VmRSS also counts the binary's own pages, which
//!   step up once (by 2 MiB in the debug build) when code first runs, e.g. the error paths of
//!   MoviePilot's first absence in a process's life: shared and reclaimable, not growth. Series
//!   with fewer than three such points are listed as too short, not judged.
//! - `keys_predicted`: job HASHes and remembered update_ids at the end against what the
//!   retentions predict from the traffic alone: jobs created (`seq:job` each minute) within
//!   `worker.job_retention_secs`, and the update_ids the webhook took whose `updates:` HASH had a
//!   write within `ledger.update_retention_secs` (the HASH's expiry renews on every write).
//! - `memory_predicted`: `used_memory` at the end against Redis's own overhead before the
//!   traffic (used_memory minus the keys' `MEMORY USAGE` then) plus, per kind, the records the
//!   retentions predict (the kinds above) or counted (the rest) × bytes per record
//!   (`MEMORY USAGE ... SAMPLES 0` of up to 32 keys of the kind, over their records).
//! - `ttl_or_bound`: `PTTL` of every key: -1 only for kinds `docs/redis.md` documents as bounded
//!   (their sizes are checked against their bounds), and every expiring kind's longest PTTL within
//!   its retention as run.
//! - `streams_trimmed`: every minute, each stream's length within its group's lag + pending +
//!   one stream node (100 entries: `XTRIM MINID ~` removes whole nodes).
//! - `nothing_pending`: after the traffic stopped and the work drained, every pending entry of
//!   the jobs stream is a running job's, and none of the dispatchers' is left.

use std::collections::BTreeMap;
use std::time::Instant;

use redis::AsyncCommands as _;
use serde::Serialize;

use super::sample::{KindSurvey, Reader, Sample, as_list};
use super::scene::Scaled;
use oncebot::ledger::keys::Stream;

/// The allowed growth of RSS per ten minutes, percent.
const RSS_GROWTH_LIMIT: f64 = 2.0;
/// Growth per ten minutes below this many KiB counts as flat whatever its share: a heap of a few
/// MiB cannot be judged to 2 % (60-100 KiB) when mimalloc takes memory in 64 KiB pages, one per
/// size class and thread as each is first used.
const RSS_GRANULARITY_KIB: f64 = 512.0;
/// The first minute RSS is judged from.
const RSS_FROM_MINUTE: u32 = 5;
/// How far a prediction may be off, relative.
const TOLERANCE: f64 = 0.10;
/// Entries of one stream node (`stream-node-max-entries`, Redis's default).
const STREAM_NODE: u64 = 100;

/// Kinds without an expiry that docs/redis.md documents as bounded, with the bound.
pub const BOUNDED: [(&str, &str); 15] = [
    ("seq", "one key (seq:job)"),
    (
        "stream",
        "trimmed to the unfinished work (checked by streams_trimmed)",
    ),
    ("retry", "jobs waiting for their backoff"),
    (
        "index",
        "index:recent ledger.jobs_index_len ids; index:needs_review jobs waiting for a person",
    ),
    ("chat", "ledger.chat_index_len ids per chat"),
    (
        "notify",
        "position: one key; seen: 7 days and 100,000 members; recent: twice the duplicate window; \
         prefs: one per person; held: a member per person, night and held:<id> 2 days",
    ),
    ("users", "one key"),
    ("mp_account", "one key"),
    ("owners", "a field per subscription oncebot created"),
    ("consumers", "one member per running process"),
    (
        "processes",
        "one member per running process without a worker or dispatcher",
    ),
    ("poll", "one key"),
    (
        "card",
        "open: a member of cards:open each, ended within follow.max_days (at most \
         notify.requester_ttl_secs); closed: 30 days",
    ),
    (
        "cards",
        "cards:open: one member per open card; cards:of:<id>: a person's newest 50, expiring",
    ),
    ("follow", "one key (follow:cursor)"),
];

/// One check's verdict and its figures.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub pass: bool,
    pub figures: Vec<String>,
}

/// Redis's own share of `used_memory` (everything but the keys) at the first sample from minute
/// 5 on, once the structures that grow to a size and stay (tables, buffers) have grown.
pub fn non_key_bytes(samples: &[Sample]) -> u64 {
    samples
        .iter()
        .find(|s| s.minute >= RSS_FROM_MINUTE)
        .or(samples.last())
        .map_or(0, |s| s.used_memory.saturating_sub(s.key_bytes))
}

/// RSS per series: flat after minute 5.
pub fn rss_flat(samples: &[Sample]) -> Check {
    // Per (role, start minute): (minute, RssAnon, VmRSS).
    type Point = (f64, f64, u64);
    let mut series: BTreeMap<(&str, u32), Vec<Point>> = BTreeMap::new();
    for s in samples {
        for (&role, &anon) in &s.anon_kib {
            let since = s.since_minute[role];
            // Minute 5 of each process's own life: a restarted one warms up as the first did.
            if s.minute >= since + RSS_FROM_MINUTE && anon > 0 {
                series.entry((role, since)).or_default().push((
                    f64::from(s.minute),
                    anon as f64,
                    s.rss_kib[role],
                ));
            }
        }
    }
    let mut pass = true;
    let mut figures = Vec::new();
    for ((role, since), points) in series {
        let name = format!("{role} (started minute {since})");
        if points.len() < 3 {
            figures.push(format!(
                "{name}: {} points from its minute 5, too short to judge",
                points.len()
            ));
            continue;
        }
        let xy: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.1)).collect();
        let (slope, intercept) = fit(&xy);
        let start = intercept + slope * xy[0].0;
        let growth = 100.0 * slope * 10.0 / start;
        let ok = growth < RSS_GROWTH_LIMIT || slope * 10.0 < RSS_GRANULARITY_KIB;
        pass &= ok;
        let (first, last) = (points[0], points[points.len() - 1]);
        figures.push(format!(
            "{name}: minutes {}-{}, RssAnon {:.2} -> {:.2} MiB, fitted {growth:+.2} % ({:+.0} KiB) \
             per 10 minutes (limit {RSS_GROWTH_LIMIT} % or {RSS_GRANULARITY_KIB} KiB; VmRSS {:.1} -> {:.1} MiB) {}",
            first.0,
            last.0,
            first.1 / 1024.0,
            last.1 / 1024.0,
            slope * 10.0,
            first.2 as f64 / 1024.0,
            last.2 as f64 / 1024.0,
            verdict(ok)
        ));
    }
    Check {
        name: "rss_flat",
        pass,
        figures,
    }
}

/// Least squares: (slope, intercept).
fn fit(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (slope, my - slope * mx)
}

fn verdict(ok: bool) -> &'static str {
    if ok { "PASS" } else { "FAIL" }
}

fn within(measured: f64, predicted: f64) -> bool {
    // One record of rounding either way is allowed where the counts are small.
    (measured - predicted).abs() <= (TOLERANCE * predicted).max(1.0)
}

/// What the retentions predict, from the traffic: records by kind.
pub struct Predicted {
    pub jobs: u64,
    pub update_records: u64,
}

/// Jobs created within the job retention (from the per-minute `seq:job`), and the update_ids
/// taken whose bucket was written within the update retention.
pub fn predict(
    samples: &[Sample],
    jobs_now: u64,
    admitted: &BTreeMap<i64, Instant>,
    start: Instant,
    end: Instant,
    scaled: &[Scaled],
) -> Predicted {
    let secs = |name: &str| {
        scaled
            .iter()
            .find(|s| s.setting == name)
            .map_or(u64::MAX, |s| s.secs) as f64
    };
    let end_secs = end.duration_since(start).as_secs_f64();
    let job_cut = end_secs - secs("worker.job_retention_secs");
    let created_before = samples
        .iter()
        .filter(|s| s.at_secs <= job_cut)
        .map(|s| s.jobs_created)
        .next_back()
        .unwrap_or(0);
    let update_cut = end_secs - secs("ledger.update_retention_secs");
    let mut buckets: BTreeMap<i64, (u64, f64)> = BTreeMap::new();
    for (&id, &at) in admitted {
        let b = buckets.entry(id.div_euclid(100)).or_default();
        b.0 += 1;
        b.1 = b.1.max(at.duration_since(start).as_secs_f64());
    }
    Predicted {
        jobs: jobs_now.saturating_sub(created_before),
        update_records: buckets
            .values()
            .filter(|(_, last)| *last > update_cut)
            .map(|(n, _)| n)
            .sum(),
    }
}

pub fn keys_predicted(kinds: &BTreeMap<String, KindSurvey>, p: &Predicted) -> Check {
    let count = |k: &str| kinds.get(k).map_or(0, |k| k.records);
    let mut pass = true;
    let mut figures = Vec::new();
    for (kind, measured, predicted) in [
        ("job", count("job"), p.jobs),
        ("updates (update_ids)", count("updates"), p.update_records),
    ] {
        let ok = within(measured as f64, predicted as f64);
        pass &= ok;
        figures.push(format!(
            "{kind}: {measured} in Redis, {predicted} predicted {}",
            verdict(ok)
        ));
    }
    Check {
        name: "keys_predicted",
        pass,
        figures,
    }
}

pub fn memory_predicted(
    kinds: &BTreeMap<String, KindSurvey>,
    p: &Predicted,
    overhead: u64,
    used_memory: u64,
) -> Check {
    let mut predicted = overhead as f64;
    let mut parts = Vec::new();
    for (kind, k) in kinds {
        let records = match kind.as_str() {
            "job" => p.jobs,
            "updates" => p.update_records,
            _ => k.records,
        };
        predicted += records as f64 * k.bytes_per_record;
        parts.push(format!("{kind} {records} × {:.0} B", k.bytes_per_record));
    }
    let ok = (used_memory as f64 - predicted).abs() <= TOLERANCE * used_memory as f64;
    Check {
        name: "memory_predicted",
        pass: ok,
        figures: vec![
            format!(
                "used_memory {used_memory} B, predicted {predicted:.0} B ({:+.1} %) {}",
                100.0 * (used_memory as f64 - predicted) / predicted.max(1.0),
                verdict(ok)
            ),
            format!(
                "= Redis's own (used_memory less the keys, minute 5) {overhead} B + {}",
                parts.join(" + ")
            ),
        ],
    }
}

/// The longest a key of `kind` may live as run, in ms; `None` for a kind the table lacks.
pub fn ttl_bound_ms(kind: &str, scaled: &[Scaled]) -> Option<i64> {
    let secs = |name: &str| {
        scaled
            .iter()
            .find(|s| s.setting == name)
            .map_or(0, |s| s.secs as i64)
    };
    let windows = scaled
        .iter()
        .filter(|s| s.setting.starts_with("commands."))
        .map(|s| s.secs as i64)
        .max()
        .unwrap_or(0);
    let buttons = secs("telegram.confirm_ttl_secs")
        .max(secs("telegram.review_ttl_secs"))
        .max(secs("commands.resources_window_secs"));
    let s = match kind {
        "updates" => secs("ledger.update_retention_secs"),
        "job" => secs("worker.job_retention_secs"),
        // A refusal's marker lives an hour; /site_signin's key the rest of the day.
        "cmd" => windows.max(86_400),
        "token" => buttons,
        "tgroup" => buttons + 1,
        "releases" => secs("commands.resources_window_secs"),
        "pages" => secs("commands.resources_window_secs").max(secs("telegram.confirm_ttl_secs")),
        "library" => secs("moviepilot.library_cache_secs").max(60),
        "reply" => secs("dispatcher.reply_retention_secs"),
        "asked" => secs("notify.requester_ttl_secs"),
        // A live card's chats: until it ends, at most notify.requester_ttl_secs.
        "following" => secs("notify.requester_ttl_secs"),
        "lock" => 120,
        "alive" => 4,
        // A process's write probe (`redis_health`): 10 s, rewritten while it lives.
        "probe" => 10,
        "notify" => 60,
        "notice" | "mp_login" => 3_600,
        _ => return None,
    };
    Some(s * 1000)
}

pub fn ttl_or_bound(kinds: &BTreeMap<String, KindSurvey>, scaled: &[Scaled]) -> Check {
    let mut pass = true;
    let mut figures = Vec::new();
    for (kind, k) in kinds {
        let bounded = BOUNDED.iter().find(|(b, _)| b == kind);
        let (ok, why) = match (bounded, ttl_bound_ms(kind, scaled)) {
            (Some((_, bound)), _) => (true, format!("no TTL needed: {bound}")),
            (None, Some(limit)) => (
                k.without_ttl == 0 && k.max_pttl_ms <= limit,
                format!(
                    "{} without TTL, longest PTTL {} ms (retention {limit} ms)",
                    k.without_ttl, k.max_pttl_ms
                ),
            ),
            (None, None) => (false, "a kind the soak does not know".into()),
        };
        pass &= ok;
        figures.push(format!("{kind}: {} keys; {why} {}", k.keys, verdict(ok)));
    }
    Check {
        name: "ttl_or_bound",
        pass,
        figures,
    }
}

/// The bounded kinds' sizes against their bounds (the lists and the seen-set).
pub async fn sizes(
    reader: &Reader,
    chat_index_len: u64,
    jobs_index_len: u64,
) -> anyhow::Result<Check> {
    let mut conn = reader.conn.clone();
    let mut pass = true;
    let mut figures = Vec::new();
    let mut longest_chat = 0u64;
    for key in reader.all_keys().await? {
        if reader.kind(&key) == "chat" {
            longest_chat = longest_chat.max(conn.llen(&key).await?);
        }
    }
    let recent: u64 = conn
        .llen(format!("{}index:recent", reader.keys.base()))
        .await?;
    let seen: u64 = conn
        .zcard(format!("{}notify:seen", reader.keys.base()))
        .await?;
    for (what, n, bound) in [
        ("longest chat:<id>:jobs", longest_chat, chat_index_len),
        ("index:recent", recent, jobs_index_len),
        ("notify:seen", seen, 100_000),
    ] {
        let ok = n <= bound;
        pass &= ok;
        figures.push(format!("{what}: {n} (bound {bound}) {}", verdict(ok)));
    }
    Ok(Check {
        name: "bounded_sizes",
        pass,
        figures,
    })
}

pub fn streams_trimmed(samples: &[Sample]) -> Check {
    let mut pass = true;
    let mut figures = Vec::new();
    for stream in Stream::ALL {
        let name = stream.name();
        let (mut longest, mut worst) = (0u64, 0i64);
        for s in samples {
            let st = s.streams[name];
            longest = longest.max(st.len);
            worst = worst.max(st.len as i64 - (st.lag + st.pending + STREAM_NODE) as i64);
        }
        let ok = worst <= 0;
        pass &= ok;
        figures.push(format!(
            "{name}: longest {longest} entries; at most {} over lag + pending + {STREAM_NODE} {}",
            worst.max(0),
            verdict(ok)
        ));
    }
    Check {
        name: "streams_trimmed",
        pass,
        figures,
    }
}

/// Every pending entry of the jobs stream is a running job's; the dispatchers' streams have none.
pub async fn nothing_pending(reader: &Reader) -> anyhow::Result<Check> {
    let mut conn = reader.conn.clone();
    let mut pass = true;
    let mut figures = Vec::new();
    for stream in Stream::ALL {
        let key = stream.key(&reader.keys);
        let pending: redis::Value = redis::cmd("XPENDING")
            .arg(&key)
            .arg(stream.group())
            .arg("-")
            .arg("+")
            .arg(1000)
            .query_async(&mut conn)
            .await
            .unwrap_or(redis::Value::Nil);
        let mut not_running = 0;
        let entries = as_list(&pending);
        for e in &entries {
            let id = match as_list(e).first() {
                Some(redis::Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
                _ => continue,
            };
            if stream != Stream::Jobs || !job_running(reader, &key, &id).await? {
                not_running += 1;
            }
        }
        let ok = not_running == 0;
        pass &= ok;
        figures.push(format!(
            "{}: {} pending, {not_running} of them not running {}",
            stream.name(),
            entries.len(),
            verdict(ok)
        ));
    }
    Ok(Check {
        name: "nothing_pending",
        pass,
        figures,
    })
}

/// Whether the jobs-stream entry `id` carries a job in state `running`.
async fn job_running(reader: &Reader, stream: &str, id: &str) -> anyhow::Result<bool> {
    let mut conn = reader.conn.clone();
    let entry: BTreeMap<String, BTreeMap<String, String>> = redis::cmd("XRANGE")
        .arg(stream)
        .arg(id)
        .arg(id)
        .query_async::<redis::streams::StreamRangeReply>(&mut conn)
        .await?
        .ids
        .into_iter()
        .map(|e| {
            let fields = e
                .map
                .iter()
                .filter_map(|(k, v)| {
                    Some((k.clone(), redis::from_redis_value_ref::<String>(v).ok()?))
                })
                .collect();
            (e.id, fields)
        })
        .collect();
    let Some(job) = entry.get(id).and_then(|f| f.get("job")) else {
        return Ok(false);
    };
    let status: Option<String> = conn
        .hget(format!("{}job:{job}", reader.keys.base()), "status")
        .await?;
    Ok(status.as_deref() == Some("running"))
}
