//! Redis Cluster (issue 16): a real local cluster of three masters with one replica each
//! (`support::cluster`), oncebot's processes against it with `redis.cluster`, failovers under
//! load with `redis.wait_replicas = 1`, and a standalone connection that meets MOVED.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oncebot::ledger::Keys;
use oncebot_tools::sim::moviepilot::{MoviePilotSim, SimMedia, SimOptions};
use oncebot_tools::sim::telegram::TelegramSim;
use tokio_util::sync::CancellationToken;

use crate::support::app::{app, run_oncebot};
use crate::support::child::Oncebot;
use crate::support::cluster::{CLUSTER_DEADLINE, Cluster};
use crate::support::{ALICE, BOB, SECRET, eventually, private_text};

/// Where a job's keys live: the deployment's hash tag decides the slot.
fn tagged_key() -> String {
    Keys::new("oncebot").jobs_stream()
}
/// Films the MoviePilot simulator knows, from this tmdb id up (one subscription each).
const FIRST_TMDB: u64 = 900_000;
const FILMS: u64 = 1500;

/// A cluster, the simulators, and the environment of an `oncebot serve` using them.
struct ClusterRig {
    cluster: Cluster,
    mp: MoviePilotSim,
    tg: TelegramSim,
    /// Where the oncebot [`ClusterRig::spawn`] started last listens (each binds port 0).
    addr: Mutex<Option<SocketAddr>>,
    http: reqwest::Client,
}

impl ClusterRig {
    async fn new() -> ClusterRig {
        let cluster = Cluster::start().await;
        let mp = MoviePilotSim::start(SimOptions::v2_5_6()).await;
        for i in 0..FILMS {
            mp.add_media(SimMedia::movie(
                FIRST_TMDB + i,
                &format!("Film {i}"),
                "2001",
            ));
        }
        ClusterRig {
            cluster,
            mp,
            tg: TelegramSim::start().await.unwrap(),
            addr: Mutex::new(None),
            http: reqwest::Client::new(),
        }
    }

    fn env(&self, url: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = [
            ("ONCEBOT__REDIS__URL", url.to_string()),
            ("ONCEBOT__REDIS__CLUSTER", "true".into()),
            ("ONCEBOT__HTTP__LISTEN", "127.0.0.1:0".into()),
            ("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", SECRET.into()),
            ("ONCEBOT__TELEGRAM__ALLOWED_USERS", format!("{ALICE},{BOB}")),
            ("ONCEBOT__TELEGRAM__LOCALE", "en".into()),
            ("ONCEBOT__TELEGRAM__API_URL", self.tg.url()),
            ("ONCEBOT__TELEGRAM__TOKEN", self.tg.token()),
            ("ONCEBOT__MOVIEPILOT__URL", self.mp.url()),
            (
                "ONCEBOT__MOVIEPILOT__USERNAME",
                self.mp.options().username.clone(),
            ),
            (
                "ONCEBOT__MOVIEPILOT__PASSWORD",
                self.mp.options().password.clone(),
            ),
            ("ONCEBOT__WORKER__RECLAIM_IDLE_MS", "1000".into()),
            ("ONCEBOT__WORKER__RETRY_MIN_DELAY_MS", "100".into()),
            ("ONCEBOT__WORKER__RETRY_MAX_DELAY_MS", "400".into()),
            ("ONCEBOT__WORKER__READ_BLOCK_MS", "200".into()),
            ("ONCEBOT__WORKER__SHUTDOWN_GRACE_SECS", "2".into()),
            ("ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS", "0".into()),
            ("ONCEBOT__DISPATCHER__GROUP_INTERVAL_MS", "0".into()),
            ("RUST_LOG", "oncebot=debug,info".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        for (k, v) in extra {
            env.retain(|(key, _)| key != k);
            env.push((k.to_string(), v.to_string()));
        }
        env
    }

    /// `oncebot <args>` with `env`, once it listens; its address is the rig's from now on.
    async fn spawn(&self, args: &[&str], env: &[(String, String)]) -> Oncebot {
        let bot = Oncebot::spawn(args, env);
        let addr = bot.http_addr().await;
        *self.addr.lock().unwrap() = Some(addr);
        bot
    }

    /// `http://<addr><path>` on the oncebot started last.
    fn url(&self, path: &str) -> String {
        let addr = self.addr.lock().unwrap().expect("an oncebot started");
        format!("http://{addr}{path}")
    }

    /// `oncebot serve` with every role, once `/readyz` answers 200 and the dispatcher reads.
    async fn start_pipeline(&self, env: &[(String, String)]) -> Oncebot {
        let bot = self
            .spawn(
                &[
                    "serve",
                    "--role",
                    "ingress",
                    "--role",
                    "worker",
                    "--role",
                    "dispatcher",
                ],
                env,
            )
            .await;
        self.ready_is(200, Duration::from_secs(20)).await;
        bot.wait_for_stderr("dispatcher started", Duration::from_secs(10))
            .await;
        bot
    }

    async fn readyz(&self) -> Option<(u16, String)> {
        let resp = self
            .http
            .get(self.url("/readyz"))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .ok()?;
        Some((resp.status().as_u16(), resp.text().await.ok()?))
    }

    /// Waits until `/readyz` answers `status`; returns its body.
    async fn ready_is(&self, status: u16, deadline: Duration) -> String {
        eventually(&format!("/readyz to answer {status}"), deadline, || async {
            self.readyz()
                .await
                .filter(|(s, _)| *s == status)
                .map(|(_, body)| body)
        })
        .await
    }

    fn poster(&self) -> Poster {
        Poster {
            http: self.http.clone(),
            url: self.url("/telegram/webhook"),
        }
    }

    async fn post(&self, update_id: i64, user: i64, text: &str) -> Option<u16> {
        self.poster().post(update_id, user, text).await
    }

    /// Waits until job `id` is `status`.
    async fn job_is(&self, id: u64, status: &str, deadline: Duration) {
        eventually(&format!("job {id} to be {status}"), deadline, || async {
            let job = self.cluster.job(id).await;
            (job.get("status").map(String::as_str) == Some(status)).then_some(())
        })
        .await;
    }
}

/// The webhook, as Telegram calls it.
#[derive(Clone)]
struct Poster {
    http: reqwest::Client,
    /// The webhook's URL.
    url: String,
}

impl Poster {
    /// Posts an update once; the webhook's status.
    async fn post(&self, update_id: i64, user: i64, text: &str) -> Option<u16> {
        let resp = self
            .http
            .post(&self.url)
            .header("x-telegram-bot-api-secret-token", SECRET)
            .timeout(Duration::from_secs(10))
            .json(&private_text(update_id, user, text))
            .send()
            .await
            .ok()?;
        Some(resp.status().as_u16())
    }
}

fn subscribe(n: u64) -> String {
    format!("/subscribe tmdb:{}", FIRST_TMDB + n)
}

/// The first report: a standalone connection to a master that does not own the
/// `{oncebot}` slot meets MOVED. `/readyz` says so (503, naming the setting) instead of 200, and
/// `oncebot jobs list` fails with one line naming ONCEBOT__REDIS__CLUSTER. Then, with
/// `redis.cluster`, the whole pipeline works whichever node `redis.url` names: the slot's
/// master, another master, a replica, or all six as seeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_pipeline_works_whichever_node_the_url_names() {
    let rig = ClusterRig::new().await;
    let owner = rig.cluster.master_of(&tagged_key()).await;
    let other_master = rig
        .cluster
        .masters()
        .await
        .into_iter()
        .find(|i| *i != owner)
        .unwrap();
    let replica = rig.cluster.replica_of(owner).await;

    // Standalone, pointed at another master: not ready, and the CLI says what to set.
    let misrouted = rig.cluster.nodes[other_master].url();
    let mut env = rig.env(&misrouted, &[("ONCEBOT__REDIS__CLUSTER", "false")]);
    let mut bot = rig.spawn(&["serve", "--role", "ingress"], &env).await;
    let body = rig.ready_is(503, Duration::from_secs(10)).await;
    // A fixed hint, never Redis's MOVED with the node's address.
    assert_eq!(
        body,
        "not ready: redis cluster misconfigured: set ONCEBOT__REDIS__CLUSTER=true\n"
    );
    assert_eq!(rig.post(1, ALICE, &subscribe(0)).await, Some(503));
    bot.sigterm();
    bot.wait_exit(Duration::from_secs(10)).await;
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let listed = run_oncebot(&["jobs", "list"], &env_refs).await;
    assert_eq!(listed.status.code(), Some(1), "{listed:?}");
    assert_eq!(listed.stderr.lines().count(), 1, "{}", listed.stderr);
    assert!(
        listed.stderr.contains("ONCEBOT__REDIS__CLUSTER=true"),
        "{}",
        listed.stderr
    );

    // Cluster mode, each way of naming the cluster.
    let urls = [
        rig.cluster.nodes[owner].url(),
        misrouted,
        rig.cluster.nodes[replica].url(),
        rig.cluster.all_urls(),
    ];
    for (run, url) in urls.iter().enumerate() {
        let run = run as u64;
        env = rig.env(url, &[]);
        let mut bot = rig.start_pipeline(&env).await;
        let update_id = 10 + run as i64;
        assert_eq!(rig.post(update_id, ALICE, &subscribe(run)).await, Some(200));
        // The same update again: absorbed by the update_id layer, on whichever node.
        assert_eq!(rig.post(update_id, ALICE, &subscribe(run)).await, Some(200));
        let job = run + 1;
        rig.job_is(job, "succeeded", Duration::from_secs(15)).await;
        eventually(
            "the job's reply to be sent",
            Duration::from_secs(10),
            || async {
                let j = rig.cluster.job(job).await;
                (j.get("reply_state").map(String::as_str) == Some("sent")).then_some(())
            },
        )
        .await;
        let env_refs: Vec<(&str, &str)> =
            env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let listed = run_oncebot(&["jobs", "list", "--json"], &env_refs).await;
        assert!(listed.status.success(), "{url}: {listed:?}");
        let jobs: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
        assert_eq!(jobs.as_array().unwrap().len() as u64, job, "{url}");
        bot.sigterm();
        bot.wait_exit(Duration::from_secs(15)).await;
    }
    assert_eq!(rig.mp.subscriptions().len(), urls.len(), "one per update");
    assert_eq!(
        rig.cluster.job(urls.len() as u64 + 1).await.len(),
        0,
        "no extra job"
    );
}

/// What the load generator saw: the update ids answered 200.
#[derive(Default)]
struct Answered {
    ok: Mutex<Vec<u64>>,
    unavailable: Mutex<u64>,
}

/// Sends `/subscribe` updates on `lanes` parallel lanes until `stop`, each one again (as
/// Telegram does after a 503) until it is answered 200. Returns how many it sent.
async fn load(poster: Poster, lanes: u64, stop: CancellationToken, seen: Arc<Answered>) -> u64 {
    let mut tasks = Vec::new();
    for lane in 0..lanes {
        let (rig, stop, seen) = (poster.clone(), stop.clone(), seen.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = lane;
            while !stop.is_cancelled() && n < FILMS {
                let user = if lane % 2 == 0 { ALICE } else { BOB };
                loop {
                    match rig.post(1000 + n as i64, user, &subscribe(n)).await {
                        Some(200) => break,
                        _ => {
                            *seen.unavailable.lock().unwrap() += 1;
                            // Telegram's own pause before it sends again.
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
                seen.ok.lock().unwrap().push(n);
                n += lanes;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            n
        }));
    }
    let mut sent = 0;
    for t in tasks {
        let next = t.await.unwrap();
        sent = sent.max(next);
    }
    sent
}

/// The durability promise: with `redis.wait_replicas = 1`, a failover of the slot's
/// master under load (first `CLUSTER FAILOVER` on its replica, then a SIGKILL of the new
/// master) loses no update that was answered 200, makes no job or subscription twice, and the
/// same process carries on without a restart. While the promoted replica has no replica of its
/// own, `/readyz` is 503 (admission cannot be confirmed); it is 200 again once the killed node
/// rejoins as its replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_under_load_loses_and_repeats_nothing_acknowledged() {
    let mut rig = ClusterRig::new().await;
    let owner = rig.cluster.master_of(&tagged_key()).await;
    let replica = rig.cluster.replica_of(owner).await;
    let env = rig.env(
        &rig.cluster.nodes[(owner + 1) % 6].url(),
        &[
            ("ONCEBOT__REDIS__WAIT_REPLICAS", "1"),
            ("ONCEBOT__REDIS__WAIT_TIMEOUT_MS", "300"),
        ],
    );
    let mut bot = rig.start_pipeline(&env).await;
    let pid = bot.pid();

    let stop = CancellationToken::new();
    let seen = Arc::new(Answered::default());
    let loader = tokio::spawn(load(rig.poster(), 2, stop.clone(), seen.clone()));
    let answered = |n: usize| {
        let seen = seen.clone();
        async move {
            eventually(
                &format!("{n} updates answered 200"),
                CLUSTER_DEADLINE,
                || async { (seen.ok.lock().unwrap().len() >= n).then_some(()) },
            )
            .await;
        }
    };

    // A planned failover: the replica takes over, the old master becomes its replica.
    answered(20).await;
    rig.cluster.failover(replica).await;
    answered(50).await;

    // A crash of the new master: the old one is promoted after the node timeout, and has no
    // replica until the killed node comes back, so nothing can be confirmed meanwhile.
    rig.cluster.kill(replica).await;
    rig.cluster.wait_master(owner).await;
    eventually(
        "/readyz to say the replicas do not confirm",
        CLUSTER_DEADLINE,
        || async {
            let (status, body) = rig.readyz().await?;
            (status == 503 && body.contains("replicas did not confirm")).then_some(())
        },
    )
    .await;
    let stalled = seen.ok.lock().unwrap().len();
    rig.cluster.restart(replica).await;
    rig.ready_is(200, CLUSTER_DEADLINE).await;
    answered(stalled + 30).await;
    stop.cancel();
    loader.await.unwrap();
    assert!(bot.is_running(), "the process carried on");
    assert_eq!(bot.pid(), pid);
    assert!(
        *seen.unavailable.lock().unwrap() > 0,
        "the failover was felt"
    );

    // Every update answered 200 became exactly one job, ran once, and was answered.
    let mut ok = seen.ok.lock().unwrap().clone();
    ok.sort_unstable();
    ok.dedup();
    let jobs = ok.len() as u64;
    eventually("every job to be succeeded", CLUSTER_DEADLINE, || async {
        for id in 1..=jobs {
            if rig.cluster.job(id).await.get("status").map(String::as_str) != Some("succeeded") {
                return None;
            }
        }
        Some(())
    })
    .await;
    assert!(
        rig.cluster.job(jobs + 1).await.is_empty(),
        "no job more than updates"
    );
    let mut subscribed: Vec<u64> = rig
        .mp
        .subscriptions()
        .iter()
        .map(|s| s.tmdb_id - FIRST_TMDB)
        .collect();
    subscribed.sort_unstable();
    assert_eq!(
        subscribed, ok,
        "one subscription per acknowledged update, none twice"
    );
    eventually("every job's reply to be sent", CLUSTER_DEADLINE, || async {
        for id in 1..=jobs {
            if rig
                .cluster
                .job(id)
                .await
                .get("reply_state")
                .map(String::as_str)
                != Some("sent")
            {
                return None;
            }
        }
        Some(())
    })
    .await;
    // A reply sent just before the master died, whose `sent` record could not be written
    // in time, is sent again (the dispatcher's documented at-least-once window for messages):
    // counted here, not forbidden.
    let sent = rig.tg.sent().len() as u64;
    eprintln!(
        "{jobs} updates answered 200, {} answers not 200 on the way, {sent} messages for {jobs} \
         jobs",
        *seen.unavailable.lock().unwrap()
    );
    assert!(
        sent >= jobs,
        "every job answered: {sent} messages for {jobs} jobs"
    );
    bot.sigterm();
    bot.wait_exit(Duration::from_secs(15)).await;
}

/// `redis.wait_replicas` on a Redis with no replica: nothing can be confirmed, so the webhook
/// answers 503 (Telegram sends again) and `/readyz` is 503 saying why, although the admission
/// itself is on the master; with the default 0 the same Redis admits.
#[tokio::test]
async fn wait_replicas_without_a_replica_answers_503() {
    let waiting = app()
        .env("ONCEBOT__REDIS__WAIT_REPLICAS", "1")
        .env("ONCEBOT__REDIS__WAIT_TIMEOUT_MS", "50")
        .spawn()
        .await;
    let update = private_text(1, ALICE, "/subscribe tmdb:108545 S1");
    assert_eq!(waiting.post_update(&update).await.status(), 503);
    assert_eq!(
        waiting.post_update(&update).await.status(),
        503,
        "still unconfirmed"
    );
    let job = waiting.store.job(1).await;
    assert_eq!(
        job.get("update_id").map(String::as_str),
        Some("1"),
        "on the master"
    );
    assert!(
        waiting.store.job(2).await.is_empty(),
        "the repeat made no job"
    );
    let ready = waiting
        .http
        .get(waiting.url("/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 503);
    let body = ready.text().await.unwrap();
    assert_eq!(
        body,
        "not ready: redis replicas did not confirm the write in time (redis.wait_replicas)\n"
    );

    let plain = app().spawn().await;
    assert_eq!(plain.post_update(&update).await.status(), 200);
    let ready = plain.http.get(plain.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
}
