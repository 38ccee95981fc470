//! The upgrade test (issue 46): the old release's processes under load, replaced one role at
//! a time by this tree's, as `docker compose up -d --build` after a `git pull` does it, with
//! an old and a new worker side by side for a while; then every accepted update is one job or
//! one reply, every job one effect, every reply delivered once, nothing pending.
//!
//! The old release is built by `scripts/upgrade-test` (from the newest `v*` tag before HEAD,
//! or issue 46's base `1170969`), which runs this test with `ONCEBOT_OLD_BINARY`,
//! `ONCEBOT_OLD_TREE` and `ONCEBOT_OLD_NAME`; without them it fails.

mod checks;
mod load;
mod releases;

use std::sync::Arc;
use std::time::Duration;

use oncebot_tools::sim::moviepilot::SimOptions;
use tokio::time::Instant;

use crate::support::child::Oncebot;
use crate::support::eventually;
use crate::support::rig::Rig;
use load::Load;
use releases::Release;

/// How long a process may take to start, or to show that it took its part of the load.
const PHASE: Duration = Duration::from_secs(40);

/// Jobs each release's workers finish while both run.
const SIDE_BY_SIDE: usize = 30;

/// The deployment's settings: short liveness and polls so a stopped process's work is taken
/// over within seconds, downloads that settle in two seconds, notifications to ALICE.
/// `notify.min_poll_gap_ms` is newer than 1170969: the old processes are started without it.
const SETTINGS: &[(&str, &str)] = &[
    ("ONCEBOT__NOTIFY__ENABLED", "true"),
    ("ONCEBOT__NOTIFY__CHATS", "1001"),
    ("ONCEBOT__NOTIFY__POLL_INTERVAL_SECS", "1"),
    ("ONCEBOT__NOTIFY__MIN_POLL_GAP_MS", "100"),
    ("ONCEBOT__NOTIFY__HEARTBEAT_INTERVAL_MS", "200"),
    ("ONCEBOT__NOTIFY__LIVENESS_TTL_MS", "2500"),
    ("ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS", "0"),
    ("ONCEBOT__DISPATCHER__GROUP_INTERVAL_MS", "0"),
    ("ONCEBOT__DISPATCHER__GLOBAL_PER_SECOND", "1000"),
    ("ONCEBOT__DISPATCHER__SET_COMMANDS", "false"),
    ("ONCEBOT__DISPATCHER__READ_BLOCK_MS", "200"),
    ("ONCEBOT__MOVIEPILOT__DOWNLOAD_SETTLE_SECS", "2"),
    ("RUST_LOG", "info"),
];

/// One `oncebot serve --role <role>` of one release.
struct Process {
    what: String,
    child: Oncebot,
}

impl Process {
    /// Starts `release`'s `role` and waits for `ready`, its log line of having started.
    async fn start(rig: &Rig, release: &Release, role: &str, ready: &str) -> Process {
        let env = release.env(&rig.env);
        let child = Oncebot::spawn_exe(release.exe(), &["serve", "--role", role], &env);
        child.wait_for_stderr(ready, PHASE).await;
        Process {
            what: format!("{role} of {}", release.name),
            child,
        }
    }

    /// An ingress, once `/readyz` answers 200; returns it and its webhook's URL.
    async fn ingress(rig: &Rig, release: &Release) -> (Process, String) {
        let env = release.env(&rig.env);
        let child = Oncebot::spawn_exe(release.exe(), &["serve", "--role", "ingress"], &env);
        let base = format!("http://{}", child.http_addr().await);
        let ready = format!("{base}/readyz");
        eventually("the ingress to be ready", PHASE, || async {
            let r = rig.http.get(&ready).send().await.ok()?;
            (r.status() == 200).then_some(())
        })
        .await;
        let what = format!("ingress of {}", release.name);
        (Process { what, child }, format!("{base}/telegram/webhook"))
    }

    /// The jobs this worker finished (its "job succeeded" lines).
    fn jobs_done(&self) -> usize {
        self.child.stderr().matches("job succeeded").count()
    }

    /// Whether this worker is in the middle of a job (it started more than it finished).
    fn mid_job(&self) -> bool {
        let stderr = self.child.stderr();
        stderr.matches("job started").count() > stderr.matches("job succeeded").count()
    }

    /// SIGTERM, as `docker stop` sends it; waits until it has exited.
    async fn stop(mut self) {
        self.child.sigterm();
        let status = self.child.wait_exit(PHASE).await;
        assert!(status.success(), "{} stopped with {status}", self.what);
    }

    /// SIGKILL: a process that had no chance to finish anything.
    async fn kill(mut self) {
        self.child.sigkill().await;
    }
}

/// A failing run shows what each process still running said.
impl Drop for Process {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let stderr = self.child.stderr();
            let tail: Vec<&str> = stderr.lines().rev().take(40).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            eprintln!(
                "--- {} (last lines of stderr)\n{}",
                self.what,
                tail.join("\n")
            );
        }
    }
}

/// Waits until the relay has read MoviePilot's history once (its position is set).
async fn relay_position(rig: &Rig) {
    let store = &rig.store;
    eventually("the relay's position", PHASE, || async move {
        let mut conn = store.conn().await;
        let fields: usize = redis::AsyncCommands::hlen(&mut conn, store.keys.notify_position())
            .await
            .unwrap();
        (fields > 0).then_some(())
    })
    .await;
}

/// Waits until the load has had `n` more updates taken than now.
async fn more_updates(load: &Load, n: usize) {
    let target = load.admitted().len() + n;
    eventually(&format!("{n} more updates taken"), PHASE, || async {
        (load.admitted().len() >= target).then_some(())
    })
    .await;
}

#[tokio::test]
#[ignore = "run by scripts/upgrade-test, which builds the old release"]
async fn a_rolling_upgrade_under_load_loses_nothing_and_does_nothing_twice() {
    let (old, new) = (Release::old(), Release::new());
    eprintln!("upgrading from {} to {}", old.name, new.name);
    let rig = Arc::new(Rig::with_sim(SimOptions::v2_5_6(), SETTINGS).await);

    // The old release, every role, as a deployment runs it.
    let (old_ingress, webhook) = Process::ingress(&rig, &old).await;
    let old_a = Process::start(&rig, &old, "worker", "worker started").await;
    let old_b = Process::start(&rig, &old, "worker", "worker started").await;
    let old_dispatcher = Process::start(&rig, &old, "dispatcher", "dispatcher started").await;
    let old_relay = Process::start(&rig, &old, "notify", "now polls").await;
    // Rows older than its first poll are not news: notifications start after it.
    relay_position(&rig).await;
    let load = Load::new(rig.clone(), webhook);
    let flows = load.start();
    more_updates(&load, 40).await;

    // The ingress: a new one beside the old, Telegram's route moved to it, the old stopped.
    let (new_ingress, webhook) = Process::ingress(&rig, &new).await;
    load.route_to(webhook);
    more_updates(&load, 20).await;
    old_ingress.stop().await;

    // The workers: a new one beside the two old ones until each has finished jobs with the
    // other at work; then the old ones go, one stopped and one killed.
    let new_worker = Process::start(&rig, &new, "worker", "worker started").await;
    let (a0, b0) = (old_a.jobs_done(), old_b.jobs_done());
    eventually("old and new workers both finishing jobs", PHASE, || async {
        let old_done = old_a.jobs_done() + old_b.jobs_done() - a0 - b0;
        (old_done >= SIDE_BY_SIDE && new_worker.jobs_done() >= SIDE_BY_SIDE).then_some(())
    })
    .await;
    old_a.stop().await;
    eventually(
        "the last old worker in the middle of a job",
        PHASE,
        || async { old_b.mid_job().then_some(()) },
    )
    .await;
    old_b.kill().await;
    let old_workers_gone = Instant::now();
    more_updates(&load, 20).await;

    // The dispatcher and the relay, each a new one beside the old, the old stopped.
    let new_dispatcher = Process::start(&rig, &new, "dispatcher", "dispatcher started").await;
    more_updates(&load, 20).await;
    old_dispatcher.stop().await;
    let new_relay = Process::start(&rig, &new, "notify", "notification relay started").await;
    old_relay.stop().await;
    new_relay.child.wait_for_stderr("now polls", PHASE).await;
    let notes = load.notes();
    eventually("two notifications through the new relay", PHASE, || async {
        (load.notes() >= notes + 2).then_some(())
    })
    .await;

    // `/version` is answered by a job once no old worker is left.
    eventually("a /version answered by a job", PHASE, || async {
        for a in load
            .admitted()
            .into_iter()
            .filter(|a| a.at > old_workers_gone)
        {
            if let load::Sent::Text { text, .. } = &a.sent
                && text == "/version"
                && rig
                    .store
                    .update(a.update_id)
                    .await
                    .is_some_and(|r| r != "-")
            {
                return Some(());
            }
        }
        None
    })
    .await;
    more_updates(&load, 8).await;

    load.stop();
    for flow in flows {
        flow.await.expect("a flow of the load failed");
    }
    checks::quiescence(&load).await;
    let jobs = checks::each_update_once(&load).await;
    checks::each_job_one_effect(&rig, &jobs);
    checks::each_reply_delivered_once(&rig, &jobs);
    checks::each_notification_once(&load);
    checks::version_across_the_upgrade(&load, &jobs, old_workers_gone).await;
    assert!(load.redelivered().len() > 1, "the load redelivered updates");
    let mut commands = std::collections::BTreeMap::new();
    for job in jobs.values() {
        *commands.entry(job["command"].as_str()).or_insert(0) += 1;
    }
    let taken_over = jobs
        .values()
        .filter(|j| j.get("recoveries").is_some_and(|n| n != "0"))
        .count();
    eprintln!(
        "{} updates taken ({} redelivered), jobs {commands:?} ({taken_over} taken over from a \
         killed worker), {} notifications",
        load.admitted().len(),
        load.redelivered().len(),
        load.notes()
    );
    drop((new_ingress, new_worker, new_dispatcher, new_relay));
}
