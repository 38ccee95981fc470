//! Instructions per job, the figure that does not drift with the machine (`bench --callgrind`).
//!
//! CPU time per job moves by a quarter between runs on a shared VM, and its hardware counters
//! (`perf stat -e instructions`) are not exposed there. So the bench can run under
//! `valgrind --tool=callgrind`, with its Redis under callgrind too (`--redis-url`), and read
//! both processes' instruction counts (`callgrind_control -e <pid>`) at the edges of the drain
//! and of the e2e window: instructions per drained job and per end-to-end update, of this
//! process (worker, ingress, dispatcher and the simulators) and of redis-server.
//!
//! Everything runs some 50 times slower under callgrind, so timing-dependent behaviour (how
//! many jobs share a round trip, how often the bench polls) differs from a native run; the
//! counts are for comparing builds with each other, measured the same way. docs/benchmarks.md
//! has the commands.

use anyhow::Context as _;
use serde::Serialize;

use super::target::{info, info_field};
use oncebot::ledger::Ledger;

/// The two processes whose instructions are counted.
#[derive(Debug, Clone, Copy)]
pub struct Counters {
    process: u32,
    redis: u32,
}

/// Instructions executed so far by each process.
#[derive(Debug, Clone, Copy)]
pub struct Count {
    process: u64,
    redis: u64,
}

/// Instructions per job (or per update) of each process over a window.
#[derive(Debug, Clone, Serialize)]
pub struct PerJob {
    pub process: f64,
    pub redis: f64,
    /// Jobs (updates) the window counted.
    pub jobs: u64,
}

impl Counters {
    /// This process and the redis-server behind `ledger` (its `process_id`).
    pub async fn new(ledger: &Ledger) -> anyhow::Result<Counters> {
        let server = info(ledger, "server").await.context("INFO server")?;
        let redis = info_field(&server, "process_id").context("INFO server names no process_id")?;
        Ok(Counters {
            process: std::process::id(),
            redis,
        })
    }

    pub async fn read(&self) -> anyhow::Result<Count> {
        Ok(Count {
            process: instructions(self.process).await?,
            redis: instructions(self.redis).await?,
        })
    }
}

impl Count {
    /// Per job from `self` (the window's begin) to `after`.
    pub fn per_job(&self, after: &Count, jobs: u64) -> PerJob {
        let n = jobs.max(1) as f64;
        PerJob {
            process: after.process.saturating_sub(self.process) as f64 / n,
            redis: after.redis.saturating_sub(self.redis) as f64 / n,
            jobs,
        }
    }
}

/// The instructions (callgrind's `Ir`) process `pid` has executed so far, all threads.
async fn instructions(pid: u32) -> anyhow::Result<u64> {
    let out = tokio::process::Command::new("callgrind_control")
        .arg("-e")
        .arg(pid.to_string())
        .output()
        .await
        .context("running callgrind_control (valgrind's tools)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    parse_totals(&text).with_context(|| {
        format!("callgrind_control -e {pid} gave no totals (is the process running under valgrind --tool=callgrind?): {text}")
    })
}

/// Sums the per-thread lines after `Totals:` of `callgrind_control -e`.
fn parse_totals(text: &str) -> Option<u64> {
    let mut lines = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("Totals:"));
    lines.next()?;
    let mut sum = None;
    for line in lines {
        let Some(last) = line.split_whitespace().last() else {
            continue;
        };
        if let Ok(n) = last.replace(',', "").parse::<u64>() {
            sum = Some(sum.unwrap_or(0) + n);
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_of_every_thread_are_summed() {
        let text = "PID 13030: redis-server --port 6399\n\n  Totals:        Ir \n   Th 1  28,011,943 \n   Th 2         518 \n\n";
        assert_eq!(parse_totals(text), Some(28_012_461));
        assert_eq!(parse_totals("No active callgrind runs detected.\n"), None);
    }
}
