//! `oncebot bench --soak`: a month, compressed. A busy household's traffic (`household`: N
//! commands, M taps and K MoviePilot notifications a day) replayed `--speed` times faster
//! against real `oncebot serve` processes, one per role (`scene`), with every retention, window
//! and expiry divided by the same factor, so that what a real day would leave in Redis is left
//! in a day's 24 h / speed. Every few minutes one role is SIGKILLed and started again (the
//! roles in turn) and MoviePilot goes away and comes back (its connections refused for a while).
//!
//! Every minute it prints each process's RSS, Redis `used_memory`, keys by kind and each
//! stream's length and pending entries (`sample`); at the end the pass checks (`checks`), each
//! with its figures, and it exits non-zero when one fails. Household-days covered: wall minutes
//! × speed / 1440 (a day is 72 minutes at `--speed 20`).

mod checks;
mod household;
mod sample;
mod scene;

use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use checks::Check;
use household::{Counts, MEMBERS};
use sample::{Reader, Sample};
use scene::{Processes, ROLES, Scene};

/// How the soak runs.
#[derive(Debug, Clone)]
pub struct Options {
    pub speed: f64,
    pub minutes: u32,
    /// The length of a soak minute in seconds (60; shorter in the suite's soak).
    pub minute_secs: f64,
    /// A role never killed (its process lives the whole run).
    pub spare: Option<String>,
    pub json: bool,
}

/// A role is SIGKILLed every this many minutes (the roles in turn).
const KILL_EVERY: u32 = 3;
/// MoviePilot goes away every this many minutes, starting at minute 2...
const AWAY_EVERY: u32 = 5;
/// ...for this share of a minute (20 s of a real one: a MoviePilot restart on a small host).
const AWAY_SHARE: f64 = 1.0 / 3.0;
/// How long the work may take to drain once the traffic stopped.
const DRAIN: Duration = Duration::from_secs(240);

/// The end of the run: what it did and the checks.
#[derive(Debug, Serialize)]
struct Summary {
    speed: f64,
    minutes: u32,
    minute_secs: f64,
    household_days: f64,
    day: household::Day,
    scaled: Vec<scene::Scaled>,
    unscaled: &'static str,
    commands: u64,
    taps: u64,
    taps_missed: u64,
    taps_cut: u64,
    notifications: u64,
    redelivered: u64,
    jobs_created: u64,
    kills: u32,
    moviepilot_away: u32,
    checks: Vec<Check>,
    pass: bool,
}

/// Runs the soak and prints it; whether every check passed.
pub async fn run(opts: &Options) -> anyhow::Result<bool> {
    let scene = Arc::new(Scene::start(opts.speed, &MEMBERS).await?);
    let mut processes = scene.start_processes().await?;
    let reader = Reader::connect(&scene.redis.url()).await?;
    let mut out = std::io::stdout().lock();
    if !opts.json {
        write_head(&mut out, opts)?;
    }
    drop(out);
    let counts = Arc::new(Counts::default());
    let stop = CancellationToken::new();
    let start = Instant::now();
    let traffic = tokio::spawn(household::run(
        scene.clone(),
        opts.speed,
        counts.clone(),
        stop.clone(),
    ));
    let (samples, kills, away) = minutes(opts, &scene, &mut processes, &reader, start).await?;
    stop.cancel();
    traffic.await??;
    drain(&reader).await;
    let end = Instant::now();
    let admitted = counts
        .admitted
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let scaled = scene::scaled_settings(opts.speed);
    let kinds = reader.survey().await?;
    let jobs_created = reader.jobs_created().await?;
    let predicted = checks::predict(&samples, jobs_created, &admitted, start, end, &scaled);
    let overhead = checks::non_key_bytes(&samples);
    let settings = scene.env.settings()?;
    let checks = vec![
        checks::rss_flat(&samples),
        checks::keys_predicted(&kinds, &predicted),
        checks::memory_predicted(&kinds, &predicted, overhead, reader.used_memory().await?),
        checks::ttl_or_bound(&kinds, &scaled),
        checks::sizes(
            &reader,
            settings.ledger.chat_index_len.into(),
            settings.ledger.jobs_index_len.into(),
        )
        .await?,
        checks::streams_trimmed(&samples),
        checks::nothing_pending(&reader).await?,
    ];
    processes.stop().await;
    let pass = checks.iter().all(|c| c.pass);
    let wall = opts.minute_secs * f64::from(opts.minutes);
    let summary = Summary {
        speed: opts.speed,
        minutes: opts.minutes,
        minute_secs: opts.minute_secs,
        household_days: wall * opts.speed / 86_400.0,
        day: household::day(),
        scaled,
        unscaled: scene::UNSCALED,
        commands: Counts::get(&counts.commands),
        taps: Counts::get(&counts.taps),
        taps_missed: Counts::get(&counts.taps_missed),
        taps_cut: Counts::get(&counts.taps_cut),
        notifications: Counts::get(&counts.notifications),
        redelivered: Counts::get(&counts.redelivered),
        jobs_created,
        kills,
        moviepilot_away: away,
        checks,
        pass,
    };
    let mut out = std::io::stdout().lock();
    if opts.json {
        serde_json::to_writer(&mut out, &summary)?;
        writeln!(out)?;
    } else {
        write_summary(&mut out, &summary)?;
    }
    out.flush()?;
    Ok(pass)
}

/// The minutes of the run: a sample each, then the kill and MoviePilot's absence due; the
/// samples, kills and absences.
async fn minutes(
    opts: &Options,
    scene: &Scene,
    processes: &mut Processes,
    reader: &Reader,
    start: Instant,
) -> anyhow::Result<(Vec<Sample>, u32, u32)> {
    let minute_len = Duration::from_secs_f64(opts.minute_secs);
    let (mut samples, mut events, mut kills, mut away) = (Vec::new(), Vec::new(), 0, 0);
    for minute in 1..=opts.minutes {
        tokio::time::sleep_until((start + minute_len * minute).into()).await;
        let at = start.elapsed().as_secs_f64();
        let mut sample = reader.sample(minute, at, processes).await?;
        sample.events = std::mem::take(&mut events);
        print_minute(opts, &sample)?;
        samples.push(sample);
        if minute == opts.minutes {
            break;
        }
        if minute % KILL_EVERY == 0 {
            let role = ROLES[(minute / KILL_EVERY - 1) as usize % ROLES.len()];
            if opts.spare.as_deref() == Some(role) {
                events.push(format!("{role} spared (--spare)"));
            } else {
                scene.kill_and_restart(processes, role, minute).await?;
                events.push(format!("SIGKILL {role}, restarted"));
                kills += 1;
            }
        }
        if minute % AWAY_EVERY == 2 {
            let down = minute_len.mul_f64(AWAY_SHARE);
            scene.moviepilot_away(down);
            events.push(format!("MoviePilot away {:.0} s", down.as_secs_f64()));
            away += 1;
        }
    }
    Ok((samples, kills, away))
}

/// Waits until nothing is queued, pending or waiting for a retry (or `DRAIN` passed: the
/// checks then show what was left).
async fn drain(reader: &Reader) {
    let until = Instant::now() + DRAIN;
    while Instant::now() < until {
        let mut idle = true;
        for stream in oncebot::ledger::keys::Stream::ALL {
            match reader.stream(stream).await {
                Ok(s) => idle &= s.lag == 0 && s.pending == 0,
                Err(_) => idle = false,
            }
        }
        let mut conn = reader.conn.clone();
        let retry: u64 = redis::cmd("ZCARD")
            .arg(format!("{}retry", reader.keys.base()))
            .query_async(&mut conn)
            .await
            .unwrap_or(1);
        if idle && retry == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tracing::warn!("the work did not drain within {} s", DRAIN.as_secs());
}

fn write_head(out: &mut impl std::io::Write, opts: &Options) -> std::io::Result<()> {
    let d = household::day();
    writeln!(
        out,
        "oncebot bench --soak: {} people, a day of {} commands, {} taps, {} MoviePilot notifications, \
         {}x faster (a day every {:.1} minutes); {} minutes of {:.0} s",
        d.members,
        d.commands,
        d.taps,
        d.notifications,
        opts.speed,
        1440.0 / opts.speed,
        opts.minutes,
        opts.minute_secs
    )?;
    for s in scene::scaled_settings(opts.speed) {
        writeln!(
            out,
            "  {:<42} {:>8} s (default {}){}",
            s.setting,
            s.secs,
            s.default_secs,
            if s.note.is_empty() {
                String::new()
            } else {
                format!("; {}", s.note)
            }
        )?;
    }
    writeln!(out, "  {}", scene::UNSCALED)?;
    if let Some(role) = &opts.spare {
        writeln!(out, "  --spare {role}: that process is never killed")?;
    }
    writeln!(
        out,
        "min  VmRSS/RssAnon MiB: {}  | redis used_memory MiB (of it keys) | keys by kind | streams len/pending | events",
        ROLES.join(" ")
    )
}

fn print_minute(opts: &Options, s: &Sample) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if opts.json {
        serde_json::to_writer(&mut out, s)?;
        writeln!(out)?;
        return Ok(out.flush()?);
    }
    let mib = |m: &std::collections::BTreeMap<&str, u64>, r: &str| {
        m.get(r).copied().unwrap_or(0) as f64 / 1024.0
    };
    let rss: Vec<String> = ROLES
        .iter()
        .map(|r| format!("{:.1}/{:.1}", mib(&s.rss_kib, r), mib(&s.anon_kib, r)))
        .collect();
    let keys: Vec<String> = s.keys.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let streams: Vec<String> = s
        .streams
        .iter()
        .map(|(k, st)| format!("{k} {}/{}", st.len, st.pending))
        .collect();
    writeln!(
        out,
        "{:>3}  {}  | {:.2} ({:.0} KiB keys) | {} (update_ids {}) | {} | {}",
        s.minute,
        rss.join(" "),
        s.used_memory as f64 / 1_048_576.0,
        s.key_bytes as f64 / 1024.0,
        keys.join(", "),
        s.update_records,
        streams.join(", "),
        s.events.join("; ")
    )?;
    Ok(out.flush()?)
}

fn write_summary(out: &mut impl std::io::Write, s: &Summary) -> std::io::Result<()> {
    writeln!(
        out,
        "household-days covered: {:.2} ({} minutes of {:.0} s at {}x)",
        s.household_days, s.minutes, s.minute_secs, s.speed
    )?;
    writeln!(
        out,
        "traffic: {} commands, {} taps ({} buttons not seen in time, {} cut by the end), {} notifications, {} jobs; \
         {} webhook posts answered other than 200 and posted again; {} SIGKILLs, MoviePilot away {} times",
        s.commands,
        s.taps,
        s.taps_missed,
        s.taps_cut,
        s.notifications,
        s.jobs_created,
        s.redelivered,
        s.kills,
        s.moviepilot_away
    )?;
    for c in &s.checks {
        writeln!(out, "{} {}", if c.pass { "PASS" } else { "FAIL" }, c.name)?;
        for f in &c.figures {
            writeln!(out, "    {f}")?;
        }
    }
    writeln!(out, "{}", if s.pass { "soak: PASS" } else { "soak: FAIL" })
}
