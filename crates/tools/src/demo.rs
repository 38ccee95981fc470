//! `oncebot demo`: the whole pipeline on one machine, with no Telegram account and no MoviePilot.
//!
//! It starts the simulated Bot API and MoviePilot (`sim`), runs oncebot's webhook and dispatcher
//! in this process and its worker as a child process (`serve --role worker`, so that it can be
//! killed the way a crash kills it), plays a short script through oncebot's real front door, and
//! prints what the user saw, what happened in between and why, and the final ledger.
//!
//! Policy:
//! - **Never touch another deployment.** The configured Redis is used only if it answers PING
//!   within a second, and then only under a fresh key prefix `oncebot-demo-<random hex>`.
//!   Otherwise a private `redis-server` is started on a unix socket in a temporary directory;
//!   with neither, one line says how to get one.
//! - **Leave nothing behind.** At exit, also after an error or Ctrl-C, the roles and worker
//!   processes are stopped first (so nothing writes again), then every key under the demo's
//!   prefix is deleted with SCAN + UNLINK, or the private server and its directory go. A demo
//!   that could not clean up (SIGKILLed) is swept by the next one: each run keeps a liveness key
//!   `{oncebot-demo-<hex>}:v1:demo:alive` that expires 30 s after it stops renewing it, and prefixes
//!   `oncebot-demo-*` without one are deleted. Other prefixes are never scanned for deletion.
//! - **Never hang.** Every wait has a deadline and says what it was waiting for and what it saw.
//! - **Check, don't just tell.** Every claim the narration makes (one job, one create call,
//!   `verified_existing`) is checked against the ledger and the simulators first; a broken
//!   promise ends the demo with an error.
//!
//! Why the webhook and not long polling: the first scene is Telegram delivering an update twice,
//! which is what a webhook sees whenever its 200 arrives late; a poller only sees a repeat after
//! crashing between admission and saving its offset. The demo posts updates to oncebot's webhook
//! on 127.0.0.1 as Telegram would (no TLS involved), and the dispatcher sends the replies to the
//! simulated Bot API, where the transcript reads them back, edits included.

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::redis_server::{Persistence, RedisServer};
use crate::rig::{Oncebot, OncebotCommand, OncebotEnv, wait};
use crate::sim::moviepilot::{
    Fault, MoviePilotSim, SimNotification, SimOptions, SimRelease, routes,
};
use crate::sim::telegram::{Call, Outcome, SIM_BOT_USERNAME, TelegramSim, callback_update};
use oncebot::app::{self, Role, Running, ServeOptions};
use oncebot::config::{Locale, Settings};
use oncebot::ledger::{Job, JobFilter, Keys, Ledger, Resolution};
use oncebot::moviepilot::Dialect;
use oncebot::shutdown::Signals;
use oncebot::vocabulary::{MpOutcome, NotificationType};

/// The user in the story: a private chat, so the chat id is the user id.
const YOU: i64 = 5_550_001;
/// The deadline of any single wait. Generous: a normal run takes about ten seconds in all.
const STEP: Duration = Duration::from_secs(20);
/// The whole demo, as a last resort behind the per-step deadlines.
const WHOLE: Duration = Duration::from_secs(120);
/// How long the configured Redis has to answer PING.
const PING_WITHIN: Duration = Duration::from_secs(1);
/// How long MoviePilot takes over the call that the crash interrupts: long enough to kill the
/// worker while the call is in flight.
const SLOW_CALL: Duration = Duration::from_secs(2);
/// `worker.progress_after_ms`: the slow job's "working on it" message comes this soon.
const PROGRESS_AFTER_MS: u64 = 300;
/// The liveness key's lifetime and how often it is renewed.
const ALIVE_TTL: Duration = Duration::from_secs(30);
const ALIVE_EVERY: Duration = Duration::from_secs(10);

/// Titles in the simulated MoviePilot's built-in catalogue.
const DUNE: u64 = 438631;
const THREE_BODY: u64 = 108545;
const EXPANSE: u64 = 63639;

/// Runs the demo: picks a Redis, plays the script, cleans up. `settings` are the operator's; the
/// demo takes only `redis.url` and `telegram.locale` from them.
pub async fn run(settings: &Settings) -> anyhow::Result<()> {
    let started = Instant::now();
    // Listening from the start: Ctrl-C at any point after this cleans up instead of killing us.
    let mut interrupt = Signals::install();
    let redis = tokio::select! {
        r = DemoRedis::open(settings.redis.url.expose()) => r?,
        _ = interrupt.recv() => return Err(Interrupted.into()),
    };
    let locale = settings.telegram.locale;
    let outcome = match Stage::new(&redis, locale).await {
        Ok(mut stage) => {
            let played = tokio::select! {
                r = tokio::time::timeout(WHOLE, stage.play(&redis)) => r.unwrap_or_else(|_| {
                    Err(anyhow::anyhow!("the demo did not finish within {WHOLE:?}"))
                }),
                _ = interrupt.recv() => Err(Interrupted.into()),
            };
            if let Err(e) = &played
                && !e.is::<Interrupted>()
            {
                stage.print_worker_logs();
            }
            stage.stop().await;
            played
        }
        Err(e) => Err(e),
    };
    let cleaned = tokio::time::timeout(STEP, redis.close())
        .await
        .unwrap_or_else(|_| {
            Err(anyhow::anyhow!(
                "Redis did not finish the clean-up within {STEP:?}; demo keys may remain (the \
                 next demo deletes them)"
            ))
        });
    match (&outcome, &cleaned) {
        (Ok(()), Ok(what)) => {
            println!();
            println!(
                "Done in {:.1} s; {what}. Run it again any time.",
                started.elapsed().as_secs_f64()
            );
        }
        (Err(_), Ok(what)) => eprintln!("oncebot demo: {what}"),
        (_, Err(e)) => eprintln!("oncebot demo: cleaning up failed: {e:#}"),
    }
    outcome?;
    cleaned.map(|_| ())
}

/// Ctrl-C or SIGTERM ended the demo (after its clean-up).
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
struct Interrupted;

// ----- Redis: the configured one under a fresh prefix, or a private one -----

/// Where the demo's ledger lives, and how to get rid of it.
struct DemoRedis {
    backend: Backend,
    /// `oncebot-demo-<hex>`, the demo's `redis.key_prefix`.
    prefix: String,
    /// Leftovers of earlier demos that died before cleaning up, deleted at start.
    swept: u64,
}

enum Backend {
    /// The configured Redis; `alive` renews this run's liveness key.
    Shared {
        url: String,
        alive: JoinHandle<()>,
    },
    Private(RedisServer),
}

impl DemoRedis {
    async fn open(configured: &str) -> anyhow::Result<DemoRedis> {
        let prefix = format!("oncebot-demo-{:08x}", rand::random::<u32>());
        if let Some(mut conn) = connect_within(configured, PING_WITHIN).await {
            // The liveness key goes in before any other key of this prefix, so a sweep by a
            // demo starting at the same moment never mistakes this one for a leftover.
            let _: () = redis::cmd("SET")
                .arg(alive_key(&prefix))
                .arg(1)
                .arg("PX")
                .arg(ALIVE_TTL.as_millis() as u64)
                .query_async(&mut conn)
                .await
                .context("writing the demo's liveness key to the configured Redis")?;
            let swept = sweep_abandoned(&mut conn, &prefix)
                .await
                .context("removing the keys of earlier demos")?;
            let alive = tokio::spawn(renew_alive(conn, prefix.clone()));
            return Ok(DemoRedis {
                backend: Backend::Shared {
                    url: configured.to_string(),
                    alive,
                },
                prefix,
                swept,
            });
        }
        if !RedisServer::available() {
            anyhow::bail!(
                "no Redis answered at ONCEBOT__REDIS__URL within {} s and redis-server is not \
                 installed: install it (`apt-get install redis-server`) or point \
                 ONCEBOT__REDIS__URL at a running Redis",
                PING_WITHIN.as_secs()
            );
        }
        let server = tokio::task::spawn_blocking(|| RedisServer::start(Persistence::None))
            .await
            .context("starting a private redis-server")??;
        Ok(DemoRedis {
            backend: Backend::Private(server),
            prefix,
            swept: 0,
        })
    }

    fn url(&self) -> String {
        match &self.backend {
            Backend::Shared { url, .. } => url.clone(),
            Backend::Private(server) => server.url(),
        }
    }

    /// One line for the transcript's header. Never the URL: it may hold a password.
    fn describe(&self) -> String {
        match &self.backend {
            Backend::Shared { .. } => format!(
                "the one at ONCEBOT__REDIS__URL, under its own key prefix {{{}}} (deleted at exit)",
                self.prefix
            ),
            Backend::Private(server) => format!(
                "a private redis-server in {} (nothing answered at ONCEBOT__REDIS__URL; \
                 removed at exit)",
                server.dir().display()
            ),
        }
    }

    /// Deletes the demo's keys (and any abandoned demo's), or stops the private server and
    /// removes its directory. Says what it did.
    async fn close(self) -> anyhow::Result<String> {
        match self.backend {
            Backend::Shared { url, alive } => {
                alive.abort();
                let _ = alive.await;
                let mut conn = connect_within(&url, STEP)
                    .await
                    .context("the configured Redis stopped answering; demo keys may remain")?;
                let ours = delete_matching(&mut conn, &format!("{{{}}}*", self.prefix)).await?;
                let others = sweep_abandoned(&mut conn, &self.prefix).await?;
                let mut what = format!("deleted the {ours} demo keys under {{{}}}", self.prefix);
                if others > 0 {
                    what.push_str(&format!(" and {others} left by an earlier demo"));
                }
                Ok(what)
            }
            Backend::Private(mut server) => {
                let dir = server.dir().display().to_string();
                server.kill();
                drop(server);
                Ok(format!(
                    "stopped the private redis-server and removed {dir}"
                ))
            }
        }
    }
}

/// `{<prefix>}:v1:demo:alive`: under the layout version like every other key, and the only key
/// the demo adds to a deployment's layout.
pub fn alive_key(prefix: &str) -> String {
    format!("{}demo:alive", Keys::new(prefix).base())
}

/// A connection that answered PING within `within`, or none.
async fn connect_within(url: &str, within: Duration) -> Option<redis::aio::MultiplexedConnection> {
    let client = oncebot::ledger::open_client(url).ok()?;
    let connect = async {
        let mut conn = client.get_multiplexed_async_connection().await?;
        redis::cmd("PING").query_async::<String>(&mut conn).await?;
        Ok::<_, redis::RedisError>(conn)
    };
    tokio::time::timeout(within, connect).await.ok()?.ok()
}

async fn renew_alive(mut conn: redis::aio::MultiplexedConnection, prefix: String) {
    loop {
        tokio::time::sleep(ALIVE_EVERY).await;
        let renewed: redis::RedisResult<()> = redis::cmd("SET")
            .arg(alive_key(&prefix))
            .arg(1)
            .arg("PX")
            .arg(ALIVE_TTL.as_millis() as u64)
            .query_async(&mut conn)
            .await;
        if let Err(e) = renewed {
            tracing::warn!(error = %e, "could not renew the demo's liveness key");
        }
    }
}

/// SCAN + UNLINK of every key matching `pattern`; how many were deleted.
async fn delete_matching(
    conn: &mut redis::aio::MultiplexedConnection,
    pattern: &str,
) -> anyhow::Result<u64> {
    let mut cursor: u64 = 0;
    let mut deleted = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(500)
            .query_async(conn)
            .await
            .with_context(|| format!("scanning Redis for {pattern}"))?;
        if !keys.is_empty() {
            let n: u64 = redis::cmd("UNLINK")
                .arg(&keys)
                .query_async(conn)
                .await
                .with_context(|| format!("deleting keys matching {pattern}"))?;
            deleted += n;
        }
        if next == 0 {
            return Ok(deleted);
        }
        cursor = next;
    }
}

/// Deletes the keys of every other `oncebot-demo-*` prefix whose liveness key has expired: a
/// demo that was killed before it could clean up.
async fn sweep_abandoned(
    conn: &mut redis::aio::MultiplexedConnection,
    ours: &str,
) -> anyhow::Result<u64> {
    let mut prefixes = BTreeSet::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg("{oncebot-demo-*}*")
            .arg("COUNT")
            .arg(500)
            .query_async(conn)
            .await
            .context("scanning Redis for earlier demos' keys")?;
        for key in keys {
            let prefix = key
                .strip_prefix('{')
                .and_then(|rest| rest.split_once('}'))
                .map(|(p, _)| p);
            // Only prefixes the demo could have made; anything with a glob character in it
            // would make the pattern below match more than that prefix.
            if let Some(p) = prefix
                && p != ours
                && p.starts_with("oncebot-demo-")
                && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            {
                prefixes.insert(p.to_string());
            }
        }
        if next == 0 {
            break;
        }
        cursor = next;
    }
    let mut deleted = 0;
    for p in prefixes {
        let alive: bool = redis::cmd("EXISTS")
            .arg(alive_key(&p))
            .query_async(conn)
            .await
            .context("checking an earlier demo's liveness key")?;
        if !alive {
            deleted += delete_matching(conn, &format!("{{{p}}}*")).await?;
        }
    }
    Ok(deleted)
}

// ----- the stage: simulators, oncebot's roles, the worker processes -----

/// Everything the script drives and watches.
struct Stage {
    tg: TelegramSim,
    mp: MoviePilotSim,
    /// The demo's settings as `ONCEBOT__*` variables: the in-process roles load them, and each
    /// worker process gets them as its environment, so both sides agree by construction.
    env: OncebotEnv,
    settings: Settings,
    ledger: Ledger,
    http: reqwest::Client,
    webhook_secret: String,
    webhook_url: String,
    running: Option<Running>,
    workers: Vec<Oncebot>,
    /// How many of the Bot API sim's calls the transcript has shown.
    shown: usize,
    next_update_id: i64,
    next_message_id: i64,
}

impl Stage {
    async fn new(redis: &DemoRedis, locale: Locale) -> anyhow::Result<Stage> {
        let tg = TelegramSim::start().await?;
        let mp = MoviePilotSim::try_start(SimOptions::v2_5_6()).await?;
        let webhook_secret = hex::encode(rand::random::<[u8; 16]>());
        let env = demo_env(redis, &tg, &mp, &webhook_secret, locale);
        let settings = env.settings()?;
        let ledger = Ledger::connect(
            &settings,
            oncebot::i18n::Texts::new(settings.telegram.locale).for_ledger(),
        )?;
        Ok(Stage {
            tg,
            mp,
            env,
            settings,
            ledger,
            // Only ever 127.0.0.1: an HTTP_PROXY in the environment must not take it elsewhere.
            http: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(10))
                .build()?,
            webhook_secret,
            webhook_url: String::new(),
            running: None,
            workers: Vec::new(),
            shown: 0,
            next_update_id: 1001,
            next_message_id: 1,
        })
    }

    /// The script.
    async fn play(&mut self, redis: &DemoRedis) -> anyhow::Result<()> {
        let running = app::start(
            self.settings.clone(),
            ServeOptions {
                roles: vec![Role::Ingress, Role::Dispatcher, Role::Notify],
                poll: false,
            },
        )
        .await?;
        let addr = running
            .http_addr
            .context("the ingress role did not listen")?;
        self.running = Some(running);
        self.webhook_url = format!("http://{addr}/telegram/webhook");
        self.workers.push(spawn_worker(&self.env)?);

        println!(
            "oncebot demo: the whole pipeline on this machine, with a simulated Telegram and MoviePilot."
        );
        println!();
        println!("  Redis       {}", redis.describe());
        if redis.swept > 0 {
            println!(
                "              (deleted {} keys left by an earlier demo that did not finish)",
                redis.swept
            );
        }
        println!("  Telegram    a simulated Bot API on {}", self.tg.url());
        println!(
            "  MoviePilot  a simulated v{} on {}",
            self.mp.options().version.trim_start_matches('v'),
            self.mp.url()
        );
        println!(
            "  oncebot     webhook and reply dispatcher in this process (http://{addr}),\n\
             \x20             the worker in a process of its own (pid {})",
            self.worker_pid()
        );
        println!(
            "  Replies     in {} (ONCEBOT__TELEGRAM__LOCALE=zh|en); oncebot's own logs with RUST_LOG=info",
            match self.settings.telegram.locale {
                Locale::Zh => "Chinese",
                Locale::En => "English",
            }
        );

        self.duplicate_delivery().await?;
        self.double_tap().await?;
        self.crash_mid_subscribe().await?;
        self.crash_mid_search().await?;
        self.crash_mid_download().await?;
        self.repeated_notice().await?;
        self.final_ledger().await
    }

    /// Scene 1: Telegram delivers one update twice.
    async fn duplicate_delivery(&mut self) -> anyhow::Result<()> {
        scene(
            "1. Telegram delivers the same update twice",
            "Telegram sends an update again when oncebot's 200 did not reach it in time (a slow\n\
             network, a restart). The copy has the same update_id, which oncebot remembers for a\n\
             week: the first layer of the three.",
        );
        let creates = self.mp.calls(routes::SUBSCRIBE_CREATE);
        let text = format!("/subscribe tmdb:{DUNE}");
        let (update_id, update) = self.message(&text);
        you(&text);
        let first = self.deliver(&update).await?;
        narrate(&format!(
            "Telegram → oncebot: update {update_id} (POST /telegram/webhook → {first})"
        ));
        let again = self.deliver(&update).await?;
        narrate(&format!(
            "Telegram → oncebot: update {update_id} again, the same bytes (→ {again})"
        ));
        let job_id = self.job_of(update_id).await?;
        let job = self.settled(job_id, "succeeded").await?;
        self.show_bot_messages();
        let jobs = self.job_count().await?;
        let created = self.mp.calls(routes::SUBSCRIBE_CREATE) - creates;
        anyhow::ensure!(jobs == 1, "the ledger should hold 1 job, not {jobs}");
        anyhow::ensure!(created == 1, "MoviePilot got {created} create calls, not 1");
        check(&format!(
            "update {update_id} reached oncebot twice and became one job (#{}): the ledger holds\n\
             {jobs} job, and MoviePilot got {created} create call",
            job.id
        ));
        Ok(())
    }

    /// Scene 2: the same command sent twice, as two updates.
    async fn double_tap(&mut self) -> anyhow::Result<()> {
        scene(
            "2. You send the same command twice",
            "A double tap, or sending it again because the bot looked slow: two updates with two\n\
             update_ids, so the first layer lets both in. The second layer is a key made of chat,\n\
             user, command and arguments, kept for the command's window (60 s for /subscribe):\n\
             inside it, the same command is the same job.",
        );
        let creates = self.mp.calls(routes::SUBSCRIBE_CREATE);
        let text = format!("/subscribe tmdb:{THREE_BODY} S1");
        let mut jobs_of = Vec::new();
        for _ in 0..2 {
            let (update_id, update) = self.message(&text);
            you(&text);
            self.deliver(&update).await?;
            jobs_of.push(self.job_of(update_id).await?);
        }
        anyhow::ensure!(
            jobs_of[0] == jobs_of[1],
            "the two updates became jobs {jobs_of:?}, not one"
        );
        let job = self.settled(jobs_of[0], "succeeded").await?;
        self.show_bot_messages();
        let jobs = self.job_count().await?;
        let created = self.mp.calls(routes::SUBSCRIBE_CREATE) - creates;
        anyhow::ensure!(jobs == 2, "the ledger should hold 2 jobs, not {jobs}");
        anyhow::ensure!(
            job.duplicates == 1,
            "job #{} should count 1 duplicate, not {}",
            job.id,
            job.duplicates
        );
        anyhow::ensure!(created == 1, "MoviePilot got {created} create calls, not 1");
        check(&format!(
            "one job (#{}, duplicates = {}); the second message got a pointer to it; MoviePilot got\n\
             {created} create call",
            job.id, job.duplicates
        ));
        Ok(())
    }

    /// Scene 3: a worker SIGKILLed while MoviePilot creates a subscription.
    async fn crash_mid_subscribe(&mut self) -> anyhow::Result<()> {
        scene(
            "3. The worker dies in the middle of a job",
            &format!(
                "The worker runs in its own process (pid {}). MoviePilot is made to take {} s over\n\
                 the next \"create subscription\" call, so the call is still in flight when the\n\
                 process is killed. The third layer: every job lives in the ledger, and a job\n\
                 whose worker vanished is recovered by its command's policy, never blindly re-run.",
                self.worker_pid(),
                SLOW_CALL.as_secs()
            ),
        );
        let creates = self.mp.calls(routes::SUBSCRIBE_CREATE);
        self.mp
            .fail_next(routes::SUBSCRIBE_CREATE, Fault::Delay(SLOW_CALL));
        let text = format!("/subscribe tmdb:{EXPANSE} S2");
        let job_id = self
            .send_until_called(&text, routes::SUBSCRIBE_CREATE, creates, "create")
            .await?;
        narrate("MoviePilot is creating the subscription (POST /api/v1/subscribe/ in flight)");
        self.kill_worker(job_id).await?;
        let mp = &self.mp;
        let sub = wait("MoviePilot to finish the create it was given", STEP)
            .until_seen(|| async {
                Ok(match mp.find_subscription(EXPANSE, Some(2)) {
                    Some(s) => ControlFlow::Break(s),
                    None => ControlFlow::Continue("no subscription yet".to_string()),
                })
            })
            .await?;
        narrate(&format!(
            "MoviePilot finishes the create anyway: subscription #{} exists, and nobody recorded it",
            sub.id
        ));
        self.start_worker(
            "the dead worker stopped renewing its liveness key (alive:<consumer>), which expires\n\
             within 3.5 s; the new worker finds it gone, takes its entry at once (liveness.lua) and\n\
             recovers the job by the /subscribe policy: look in MoviePilot before creating. The\n\
             look finds the subscription, so nothing is created twice.",
        )?;
        let job = self.settled(job_id, "succeeded").await?;
        self.show_bot_messages();
        self.subscribe_recovered_checked(&job, creates)
    }

    /// Scene 3's end: the interrupted create was found in MoviePilot, not made twice.
    fn subscribe_recovered_checked(&self, job: &Job, creates: u64) -> anyhow::Result<()> {
        let job_id = job.id;
        let outcome = job.extra.get(MpOutcome::FIELD).map(String::as_str);
        let recoveries = job.extra.get("recoveries").map(String::as_str);
        let subs = self
            .mp
            .subscriptions()
            .into_iter()
            .filter(|s| s.tmdb_id == EXPANSE && s.season == Some(2))
            .count();
        let created = self.mp.calls(routes::SUBSCRIBE_CREATE) - creates;
        anyhow::ensure!(
            outcome == Some(MpOutcome::VerifiedExisting.as_str()),
            "job #{job_id} should be verified_existing, not {outcome:?}"
        );
        anyhow::ensure!(
            subs == 1 && created == 1,
            "MoviePilot should have 1 subscription and 1 create call, not {subs} and {created}"
        );
        check(&format!(
            "job #{job_id} ended {} with mp_outcome = verified_existing after {} recovery ({} attempts);\n\
             MoviePilot has {subs} subscription to The Expanse S2 and got {created} create call",
            job.status,
            recoveries.unwrap_or("?"),
            job.attempts
        ));
        Ok(())
    }

    /// Scene 3, continued: the same crash during /searchnow, which cannot be verified.
    async fn crash_mid_search(&mut self) -> anyhow::Result<()> {
        let sub = self
            .mp
            .find_subscription(THREE_BODY, Some(1))
            .context("the subscription of scene 2 is gone")?;
        let route = match self.mp.options().dialect {
            Dialect::V2 => routes::SUBSCRIBE_SEARCH_V2,
            Dialect::V3 => routes::SUBSCRIBE_SEARCH_V3,
        };
        println!();
        narrate(&format!(
            "The same crash during /searchnow (pid {} this time). MoviePilot answers \"ok\" to a\n\
             search request whether or not a search ran, so afterwards nobody can tell whether the\n\
             dead worker's call arrived. Sending it again could search twice; so by policy such a\n\
             job waits for a person.",
            self.worker_pid()
        ));
        self.mp.fail_next(route, Fault::Delay(SLOW_CALL));
        let calls = self.mp.calls(route);
        let text = format!("/searchnow {}", sub.id);
        let job_id = self
            .send_until_called(&text, route, calls, "search")
            .await?;
        narrate("MoviePilot is starting the search (its call in flight)");
        self.kill_worker(job_id).await?;
        let mp = &self.mp;
        wait("MoviePilot to run the search it was given", STEP)
            .until_seen(|| async {
                let n = mp.searches(sub.id);
                Ok(if n > 0 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue("no search ran yet".to_string())
                })
            })
            .await?;
        self.start_worker(
            "it takes the job back as before, sees an interrupted /searchnow, and holds it\n\
             (needs_review) instead of searching again; the user is told.",
        )?;
        let job = self.settled(job_id, "needs_review").await?;
        self.show_bot_messages();
        let searches = self.mp.searches(sub.id);
        anyhow::ensure!(searches == 1, "MoviePilot ran {searches} searches, not 1");
        check(&format!(
            "job #{job_id} waits in {}; MoviePilot ran {searches} search (the dead worker's), not two",
            job.status
        ));
        self.resolved_by_a_person(job_id).await
    }

    /// The held /searchnow settled as an operator would, with `oncebot jobs resolve`.
    async fn resolved_by_a_person(&mut self, job_id: u64) -> anyhow::Result<()> {
        narrate(
            "A person looks in MoviePilot, sees that the search ran, and settles the job, as an\n\
             operator would with the CLI:",
        );
        let note = "checked in MoviePilot: the search ran";
        println!("$ oncebot jobs resolve {job_id} --as succeeded --note \"{note}\"");
        oncebot::admin::resolve(
            &self.ledger,
            &self.settings,
            job_id,
            Resolution::Succeeded,
            note,
            false,
        )
        .await?;
        self.settled(job_id, "succeeded").await?;
        self.show_bot_messages();
        Ok(())
    }

    /// Scene 3, last: a release picked from a resource search, tapped twice, then another
    /// release whose add is interrupted by a SIGKILL and verified from MoviePilot's history.
    async fn crash_mid_download(&mut self) -> anyhow::Result<()> {
        scene(
            "3c. A download, tapped twice, and a worker killed mid-download",
            "MoviePilot cannot look a download up and does not refuse a second one: it downloads\n\
             the same torrent again. oncebot's buttons work once, and a download whose answer was\n\
             lost is looked for in MoviePilot's download history before anything is sent again.",
        );
        // Posters MoviePilot names, on an image host the simulated Bot API fetches from.
        let posters = crate::sim::posters::PosterServer::start().await?;
        let (list_message, data) = self.release_list(&posters).await?;
        let adds = self.mp.calls(routes::DOWNLOAD_ADD);
        self.tapped_twice(list_message, &data[0], adds).await?;
        self.download_killed(list_message, &data[1], adds).await
    }

    /// `/download` of a film with six releases: the list (a photo, its poster from `posters`),
    /// turned to page 2 and back. The list's message and its buttons' data.
    async fn release_list(
        &mut self,
        posters: &crate::sim::posters::PosterServer,
    ) -> anyhow::Result<(i64, Vec<String>)> {
        self.mp.set_poster_host(Some(&posters.host()));
        // Three more releases than the catalogue's: two pages, five and one.
        self.mp.add_releases((4..=6).map(|n| {
            SimRelease::movie(
                DUNE,
                &format!("PTSite{n}"),
                &format!("Dune 2021 1080p BluRay x264-PACK{n}"),
                "",
            )
        }));
        let text = format!("/download tmdb:{DUNE}");
        let (update_id, update) = self.message(&text);
        you(&text);
        self.deliver(&update).await?;
        let search = self.job_of(update_id).await?;
        let job = self.settled(search, "succeeded").await?;
        self.show_bot_messages();
        let list_message: i64 = job
            .extra
            .get("reply_message_id")
            .and_then(|m| m.parse().ok())
            .context("the release list has no message id")?;
        self.poster_list_checked(list_message)?;
        self.mp.set_poster_host(None);
        let keyboard = self.tg.observe(|o| {
            o.calls()
                .iter()
                .rev()
                .find_map(|c| c.params.get("reply_markup").cloned())
        });
        let data: Vec<String> = keyboard
            .as_ref()
            .and_then(|k| k["inline_keyboard"].as_array())
            .into_iter()
            .flatten()
            .flat_map(|row| row.as_array().cloned().unwrap_or_default())
            .filter_map(|b| b["callback_data"].as_str().map(str::to_string))
            .collect();
        anyhow::ensure!(
            data.len() >= 2,
            "the list should have two buttons or more: {data:?}"
        );
        self.page_turn(list_message, keyboard.as_ref()).await?;
        Ok((list_message, data))
    }

    /// 下载 1 tapped twice before the bot answered: one job, one add.
    async fn tapped_twice(
        &mut self,
        list_message: i64,
        first_button: &str,
        adds: u64,
    ) -> anyhow::Result<()> {
        narrate("you tap 下载 1, and tap it again before the bot has answered");
        let mut first = None;
        for _ in 0..2 {
            let tap = self.tap(list_message, first_button);
            self.deliver(&tap).await?;
            if first.is_none() {
                first = Some(self.job_of(self.next_update_id - 1).await?);
            }
        }
        let grab = first.context("no job from the tap")?;
        let job = self.settled(grab, "succeeded").await?;
        self.show_bot_messages();
        let sent = self.mp.calls(routes::DOWNLOAD_ADD) - adds;
        anyhow::ensure!(sent == 1, "two taps should send one add, not {sent}");
        check(&format!(
            "two taps on 下载 1 made one job (#{grab}, {}), and MoviePilot got {sent} add",
            job.extra.get(MpOutcome::FIELD).map_or("?", String::as_str)
        ));
        Ok(())
    }

    /// 下载 2 tapped, and the worker killed while MoviePilot adds it: the add is verified from
    /// MoviePilot's download history.
    async fn download_killed(
        &mut self,
        list_message: i64,
        second_button: &str,
        adds: u64,
    ) -> anyhow::Result<()> {
        self.mp.set_add_delay(SLOW_CALL);
        let tap = self.tap(list_message, second_button);
        narrate("you tap 下载 2; MoviePilot takes 2 s over this add, as it does over qBittorrent");
        self.deliver(&tap).await?;
        let job_id = self.job_of(self.next_update_id - 1).await?;
        let mp = &self.mp;
        wait("MoviePilot to receive the add", STEP)
            .until_seen(|| async {
                Ok(if mp.calls(routes::DOWNLOAD_ADD) - adds > 1 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue("no add yet".to_string())
                })
            })
            .await?;
        narrate("MoviePilot is adding the download (POST /api/v1/download/ in flight)");
        self.kill_worker(job_id).await?;
        let rows = self.mp.download_history().len();
        let mp = &self.mp;
        wait("MoviePilot to finish the add", STEP)
            .until_seen(|| async {
                Ok(if mp.download_history().len() > 1 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(format!("{rows} history rows"))
                })
            })
            .await?;
        self.mp.set_add_delay(Duration::ZERO);
        narrate("MoviePilot finishes the add anyway and writes its download-history row");
        self.start_worker(
            "it recovers the job by the download's policy: the attempt had noted the release and\n\
             the history rows that matched it before the add; a new matching row is the proof.",
        )?;
        let job = self.settled(job_id, "succeeded").await?;
        self.show_bot_messages();
        let outcome = job.extra.get(MpOutcome::FIELD).map(String::as_str);
        let sent = self.mp.calls(routes::DOWNLOAD_ADD) - adds;
        anyhow::ensure!(
            outcome == Some(MpOutcome::VerifiedExisting.as_str()) && sent == 2,
            "job #{job_id} should be verified_existing after 2 adds in all, not {outcome:?} after {sent}"
        );
        check(&format!(
            "job #{job_id} ended succeeded with mp_outcome = verified_existing, from the history;\n\
             MoviePilot got {sent} adds for 2 releases and holds {} torrents",
            self.mp.torrents()
        ));
        Ok(())
    }

    /// A tap on the button carrying `data` under message `message_id`, as a fresh update.
    fn tap(&mut self, message_id: i64, data: &str) -> Value {
        let mut tap = callback_update(YOU, YOU, message_id, data);
        tap["update_id"] = json!(self.next_update_id);
        self.next_update_id += 1;
        tap
    }

    /// You send `text`; once MoviePilot has received the job's `call` (`route` called more than
    /// `before` times), the job's progress message is shown. The job's id.
    async fn send_until_called(
        &mut self,
        text: &str,
        route: &str,
        before: u64,
        call: &str,
    ) -> anyhow::Result<u64> {
        let (update_id, update) = self.message(text);
        you(text);
        self.deliver(&update).await?;
        let job_id = self.job_of(update_id).await?;
        let mp = &self.mp;
        wait(&format!("MoviePilot to receive the {call} call"), STEP)
            .until_seen(|| async {
                Ok(if mp.calls(route) > before {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(format!("no {call} call yet"))
                })
            })
            .await?;
        self.show_progress(job_id).await;
        Ok(job_id)
    }

    /// ▶ under the release list: page 2 in the same message, from the stored list (no job, no
    /// MoviePilot request), then ◀ back to page 1, whose `下载 1` the scene taps next.
    async fn page_turn(
        &mut self,
        list_message: i64,
        keyboard: Option<&Value>,
    ) -> anyhow::Result<()> {
        let next =
            button(keyboard, "▶").context("the list of six releases should have a ▶ button")?;
        let (jobs, requests) = (self.job_count().await?, self.mp.requests());
        narrate("you tap ▶ under the list");
        let tap = self.tap(list_message, &next);
        self.deliver(&tap).await?;
        let shows = |needle: &'static str| {
            // Every call answered, so the transcript shows the edit in its place.
            move |o: &crate::sim::telegram::Observed<'_>| {
                o.message(YOU, list_message)
                    .is_some_and(|m| m.text.contains(needle))
                    && o.calls().iter().all(|c| c.outcome != Outcome::InFlight)
            }
        };
        self.tg
            .wait_for(STEP, shows("\n6. "))
            .await
            .map_err(|e| anyhow::anyhow!("page 2 never showed: {e:?}"))?;
        self.show_bot_messages();
        let page_2 = self
            .tg
            .observe(|o| o.message(YOU, list_message).cloned())
            .and_then(|m| m.reply_markup);
        let previous = button(page_2.as_ref(), "◀").context("page 2 should have a ◀ button")?;
        narrate("you tap ◀");
        let tap = self.tap(list_message, &previous);
        self.deliver(&tap).await?;
        self.tg
            .wait_for(STEP, shows("\n1. "))
            .await
            .map_err(|e| anyhow::anyhow!("page 1 never came back: {e:?}"))?;
        self.show_bot_messages();
        let (made, asked) = (
            self.job_count().await? - jobs,
            self.mp.requests() - requests,
        );
        anyhow::ensure!(
            made == 0 && asked == 0,
            "page turns should make no job and ask MoviePilot nothing, not {made} jobs and {asked} requests"
        );
        check("two page turns edited the list in place: no job, no MoviePilot request");
        Ok(())
    }

    /// Scene 3, after the commands: MoviePilot's own notice, sent twice by MoviePilot.
    /// The release list came as one photo (its media's poster) with the list as its caption,
    /// and the "searching" message before it was deleted: one message in the chat.
    fn poster_list_checked(&self, list_message: i64) -> anyhow::Result<()> {
        let (photo, deleted) = self.tg.observe(|o| {
            let photo = o
                .received(YOU)
                .into_iter()
                .find(|m| m.message_id == list_message)
                .and_then(|m| m.photo.clone());
            (photo, o.deleted().to_vec())
        });
        anyhow::ensure!(
            photo.is_some(),
            "the release list should have come with its poster"
        );
        anyhow::ensure!(
            deleted.iter().any(|(chat, _)| *chat == YOU),
            "the \"searching\" message should have been deleted: {deleted:?}"
        );
        check(
            "the list came as one photo, its poster with the list as caption, and replaced the \"searching\" message",
        );
        Ok(())
    }

    async fn repeated_notice(&mut self) -> anyhow::Result<()> {
        scene(
            "3d. MoviePilot sends the same 开始下载 notice twice",
            "MoviePilot stores every notification in its message history before it sends it, and\n\
             it repeats itself (an operator who is also the admin gets pairs). oncebot's relay reads\n\
             that history: each row once, and the same type, title and text within 120 s is one\n\
             message.",
        );
        let title = "沙丘2 (2024) 开始下载";
        // A poster the simulated Bot API can fetch, as Telegram fetches a notification's image.
        let posters = crate::sim::posters::PosterServer::start().await?;
        let poster = posters.poster("dune2");
        for _ in 0..2 {
            let id = self.mp.notify(
                SimNotification::new(
                    NotificationType::Download,
                    title,
                    "站点：SimSite\n大小：20.0G",
                )
                .with_image(&poster),
            );
            narrate(&format!("MoviePilot writes history row {id}: {title}"));
        }
        let sent = self.notice_sent(title).await?;
        let ledger = &self.ledger;
        let position = wait("the repeat counted", Duration::from_secs(20))
            .until(|| async move {
                ledger
                    .notify_position()
                    .await
                    .ok()
                    .flatten()
                    .filter(|p| p.collapsed >= 1)
            })
            .await?;
        show_notices(&sent);
        self.shown = self.tg.calls().len();
        anyhow::ensure!(
            sent.len() == 1,
            "the notice arrived {} times, not once",
            sent.len()
        );
        let with_poster = sent[0].method == "sendPhoto";
        check(&format!(
            "MoviePilot wrote the notice twice; you got it once{}, and the relay counted {} repeat",
            if with_poster { ", with its poster" } else { "" },
            position.collapsed
        ));
        Ok(())
    }

    /// The messages that delivered the notice titled `title`, once there is one.
    async fn notice_sent(&self, title: &str) -> anyhow::Result<Vec<Call>> {
        let tg = &self.tg;
        wait("the notice delivered", Duration::from_secs(20))
            .until(|| async move {
                let got: Vec<_> = tg
                    .calls()
                    .into_iter()
                    .filter(|c| {
                        c.status() == Some(200)
                            && matches!(c.method.as_str(), "sendMessage" | "sendPhoto")
                            && [c.params.get("text"), c.params.get("caption")]
                                .into_iter()
                                .flatten()
                                .any(|t| t.as_str().is_some_and(|t| t.contains(title)))
                    })
                    .collect();
                (!got.is_empty()).then_some(got)
            })
            .await
    }

    /// Scene 4: the ledger as `oncebot jobs list` shows it.
    async fn final_ledger(&mut self) -> anyhow::Result<()> {
        scene(
            "4. The ledger",
            "Every job, its state and how many attempts it took, as `oncebot jobs list` shows it\n\
             (`oncebot jobs show ID` has every field).",
        );
        println!("$ oncebot jobs list");
        let filter = JobFilter {
            limit: 20,
            ..JobFilter::default()
        };
        oncebot::admin::list(&self.ledger, &filter, false).await?;
        let sent = self.tg.observe(|o| {
            o.calls()
                .iter()
                .filter(|c| c.status() == Some(200))
                .filter(|c| {
                    matches!(
                        c.method.as_str(),
                        "sendMessage" | "sendPhoto" | "editMessageText" | "editMessageCaption"
                    )
                })
                .count()
        });
        println!();
        check(&format!(
            "{} updates from you (one of them delivered twice) made {} jobs; MoviePilot holds {}\n\
             subscriptions from {} create calls and ran 1 search; the bot sent or edited {sent}\n\
             messages. Every command took effect once.",
            self.next_update_id - 1001,
            self.job_count().await?,
            self.mp.subscriptions().len(),
            self.mp.calls(routes::SUBSCRIBE_CREATE),
        ));
        Ok(())
    }

    // ----- the steps the scenes are made of -----

    /// A text message from you, as Telegram's update carries it, and its update_id.
    fn message(&mut self, text: &str) -> (i64, Value) {
        let update_id = self.next_update_id;
        let message_id = self.next_message_id;
        self.next_update_id += 1;
        self.next_message_id += 1;
        let mut message = json!({
            "message_id": message_id,
            "from": {"id": YOU, "is_bot": false, "first_name": "You", "language_code": "zh-hans"},
            "chat": {"id": YOU, "first_name": "You", "type": "private"},
            "date": std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            "text": text,
        });
        if let Some(command) = text.strip_prefix('/') {
            let len = 1 + command.find(' ').unwrap_or(command.len());
            message["entities"] = json!([{"offset": 0, "length": len, "type": "bot_command"}]);
        }
        (
            update_id,
            json!({"update_id": update_id, "message": message}),
        )
    }

    /// Posts `update` to oncebot's webhook as Telegram does; the HTTP status it answered. The
    /// simulated Bot API learns of it first, as Telegram knows every update it delivers, so a
    /// tap's callback query can be answered.
    async fn deliver(&self, update: &Value) -> anyhow::Result<u16> {
        let update = self.tg.webhook_update(update.clone());
        let resp = self
            .http
            .post(&self.webhook_url)
            .header("x-telegram-bot-api-secret-token", &self.webhook_secret)
            .json(&update)
            .send()
            .await
            .context("posting an update to oncebot's webhook")?;
        let status = resp.status().as_u16();
        anyhow::ensure!(
            status == 200,
            "oncebot's webhook answered {status}, not 200"
        );
        Ok(status)
    }

    /// Waits until job `id` is in `status` and every queued reply has reached Telegram.
    async fn settled(&self, id: u64, status: &str) -> anyhow::Result<Job> {
        let ledger = &self.ledger;
        let replies = ledger.keys().replies_stream();
        let replies = &replies;
        wait(
            &format!("job #{id} to be {status} and its replies sent"),
            STEP,
        )
        .until_seen(|| async move {
            let Some(job) = ledger.job(id).await? else {
                return Ok(ControlFlow::Continue(format!("job #{id} does not exist")));
            };
            if job.status.as_str() != status {
                return Ok(ControlFlow::Continue(format!(
                    "job #{id} is {}",
                    job.status
                )));
            }
            let mut conn = ledger.connection();
            // Entries leave the replies stream once Telegram took them (or refused for good).
            let queued: u64 = redis::cmd("XLEN")
                .arg(replies)
                .query_async(&mut conn)
                .await?;
            // Read again: a reply that ended between the first read and XLEN moved its
            // record (reply_message_id, ...) into the job after that read.
            Ok(if queued == 0 {
                ControlFlow::Break(ledger.job(id).await?.unwrap_or(job))
            } else {
                ControlFlow::Continue(format!("{queued} replies not sent yet"))
            })
        })
        .await
    }

    /// Shows the job's "working on it" message if it arrives before the slow call ends (it
    /// normally does, a few hundred milliseconds in; the scene does not depend on it).
    async fn show_progress(&mut self, job_id: u64) {
        let ledger = &self.ledger;
        let within = SLOW_CALL / 2;
        let _ = wait("the progress message", within)
            .until_seen(|| async move {
                let job = ledger.job(job_id).await?;
                Ok(
                    match job.filter(|j| j.extra.contains_key("progress_message_id")) {
                        Some(_) => ControlFlow::Break(()),
                        None => ControlFlow::Continue(String::new()),
                    },
                )
            })
            .await;
        self.show_bot_messages();
    }

    /// SIGKILLs the current worker and shows that the ledger still has the job running.
    async fn kill_worker(&mut self, job_id: u64) -> anyhow::Result<()> {
        let worker = self
            .workers
            .last_mut()
            .context("no worker process to kill")?;
        let pid = worker.pid().unwrap_or(0);
        worker
            .sigkill()
            .await
            .with_context(|| format!("killing the worker process {pid}"))?;
        println!("  💥 SIGKILL to the worker (pid {pid}): no goodbye, no clean-up");
        let job = self
            .ledger
            .job(job_id)
            .await?
            .with_context(|| format!("job #{job_id} is missing"))?;
        anyhow::ensure!(
            job.status == oncebot::ledger::JobState::Running,
            "job #{job_id} is {}, not running: the worker finished it before it was killed \
             (an unusually slow machine?)",
            job.status
        );
        narrate(&format!(
            "the ledger still says job #{job_id} is running (attempt {}), for a worker that is gone",
            job.attempts
        ));
        Ok(())
    }

    fn start_worker(&mut self, what_it_does: &str) -> anyhow::Result<()> {
        self.workers.push(spawn_worker(&self.env)?);
        narrate(&format!(
            "a new worker process starts (pid {})",
            self.worker_pid()
        ));
        narrate(what_it_does);
        Ok(())
    }

    fn worker_pid(&self) -> u32 {
        self.workers.last().and_then(Oncebot::pid).unwrap_or(0)
    }

    /// The job an admitted update became: its entry in `{p}:v1:updates:<n>` says so.
    async fn job_of(&self, update_id: i64) -> anyhow::Result<u64> {
        let mut conn = self.ledger.connection();
        let job: Option<String> = redis::cmd("HGET")
            .arg(self.ledger.keys().updates(update_id))
            .arg(update_id)
            .query_async(&mut conn)
            .await?;
        job.as_deref()
            .and_then(|j| j.parse().ok())
            .with_context(|| format!("update {update_id} became no job (its key holds {job:?})"))
    }

    async fn job_count(&self) -> anyhow::Result<usize> {
        let filter = JobFilter {
            limit: 1000,
            ..JobFilter::default()
        };
        Ok(self.ledger.list_jobs(&filter).await?.len())
    }

    /// Prints the messages the bot sent to you (and its edits) since the last call, in the
    /// order the simulated Bot API received them.
    fn show_bot_messages(&mut self) {
        let calls = self.tg.calls();
        let mut next = self.shown;
        for call in &calls[self.shown.min(calls.len())..] {
            if call.outcome == Outcome::InFlight {
                break;
            }
            next += 1;
            let to_you = call.params.get("chat_id").and_then(Value::as_i64) == Some(YOU);
            if call.status() != Some(200) || !to_you {
                continue;
            }
            let text = ["text", "caption"]
                .into_iter()
                .find_map(|k| call.params.get(k).and_then(Value::as_str))
                .unwrap_or_default();
            let id = call.params.get("message_id").cloned().unwrap_or_default();
            match call.method.as_str() {
                "sendMessage" => speak("bot → you: ", text),
                "sendPhoto" => speak("bot → you (📷 poster + caption): ", text),
                "editMessageText" => {
                    speak(&format!("bot → you (edits its message {id}): "), text);
                }
                "editMessageCaption" => {
                    speak(&format!("bot → you (edits the caption of {id}): "), text);
                }
                "deleteMessage" => println!("bot → you (deletes its message {id})"),
                _ => {}
            }
        }
        self.shown = next;
    }

    /// Stops the in-process roles (so nothing writes to Redis any more) and kills the workers.
    async fn stop(&mut self) {
        if let Some(running) = self.running.take() {
            let stopped = tokio::time::timeout(STEP, running.stop()).await;
            match stopped {
                Ok(Ok(())) => {}
                Ok(Err(e)) => eprintln!("oncebot demo: a role stopped with an error: {e:#}"),
                Err(_) => eprintln!("oncebot demo: the roles did not stop within {STEP:?}"),
            }
        }
        for worker in &mut self.workers {
            if let Err(e) = worker.sigkill().await {
                eprintln!("oncebot demo: {e:#}");
            }
        }
    }

    /// After a failure: what the worker processes said (unless it went to stderr already).
    fn print_worker_logs(&self) {
        for w in &self.workers {
            let log = w.stderr();
            if !log.is_empty() && std::env::var_os("RUST_LOG").is_none() {
                let pid = w.pid().map_or_else(|| "(exited)".into(), |p| p.to_string());
                eprintln!("oncebot demo: the worker with pid {pid} logged:\n{log}");
            }
        }
    }
}

// ----- a worker process -----

/// `oncebot serve --role worker` as a child process, with the demo's settings. The operator's
/// own ONCEBOT__* settings (another Redis, a real MoviePilot) do not reach it; RUST_LOG does, and
/// then its log lines are shown as they come.
fn spawn_worker(env: &OncebotEnv) -> anyhow::Result<Oncebot> {
    let exe = std::env::current_exe().context("finding the oncebot binary to run a worker")?;
    let mut cmd = OncebotCommand::serve(exe, &["worker"]).oncebot_env(env);
    if let Ok(filter) = std::env::var("RUST_LOG") {
        cmd = cmd.envs([("RUST_LOG", filter)]).forward_stderr("worker");
    }
    cmd.spawn()
        .context("starting a worker process (oncebot serve --role worker)")
}

/// The demo's settings as `ONCEBOT__*` variables: quick retries, pacing and relay polling, so
/// each scene takes seconds.
fn demo_env(
    redis: &DemoRedis,
    tg: &TelegramSim,
    mp: &MoviePilotSim,
    webhook_secret: &str,
    locale: Locale,
) -> OncebotEnv {
    let locale = match locale {
        Locale::Zh => "zh",
        Locale::En => "en",
    };
    OncebotEnv::new(&redis.url())
        .telegram(tg)
        .moviepilot(mp)
        .set_all([
            ("ONCEBOT__REDIS__KEY_PREFIX", redis.prefix.clone()),
            (
                "ONCEBOT__TELEGRAM__WEBHOOK_SECRET",
                webhook_secret.to_string(),
            ),
            ("ONCEBOT__TELEGRAM__ALLOWED_USERS", YOU.to_string()),
            ("ONCEBOT__TELEGRAM__BOT_USERNAME", SIM_BOT_USERNAME.into()),
            ("ONCEBOT__TELEGRAM__LOCALE", locale.into()),
            ("ONCEBOT__MOVIEPILOT__TIMEOUT_SECS", "10".into()),
            // A crashed download is looked for again this soon after it began (90 s for real).
            ("ONCEBOT__MOVIEPILOT__DOWNLOAD_SETTLE_SECS", "3".into()),
            (
                "ONCEBOT__WORKER__PROGRESS_AFTER_MS",
                PROGRESS_AFTER_MS.to_string(),
            ),
            ("ONCEBOT__WORKER__READ_BLOCK_MS", "200".into()),
            ("ONCEBOT__WORKER__RETRY_MIN_DELAY_MS", "200".into()),
            ("ONCEBOT__WORKER__RETRY_MAX_DELAY_MS", "1000".into()),
            ("ONCEBOT__WORKER__SHUTDOWN_GRACE_SECS", "1".into()),
            // Telegram's one message a second per chat, scaled down for a simulated chat.
            ("ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS", "100".into()),
            ("ONCEBOT__DISPATCHER__READ_BLOCK_MS", "200".into()),
            // The relay of MoviePilot's notifications, polling every second, to your chat.
            ("ONCEBOT__NOTIFY__ENABLED", "true".into()),
            ("ONCEBOT__NOTIFY__POLL_INTERVAL_SECS", "1".into()),
            ("ONCEBOT__NOTIFY__CHATS", YOU.to_string()),
            // The worker processes log warnings only, unless RUST_LOG (passed on) says more.
            ("ONCEBOT__LOG__LEVEL", "warn".into()),
        ])
}

/// The bot's messages that delivered a notice, as the transcript shows them.
fn show_notices(sent: &[Call]) {
    for call in sent {
        let text = [call.params.get("text"), call.params.get("caption")]
            .into_iter()
            .flatten()
            .find_map(Value::as_str)
            .unwrap_or_default();
        match call.method.as_str() {
            "sendPhoto" => speak("bot → you (the poster, with its caption): ", text),
            _ => speak("bot → you: ", text),
        }
    }
}

/// The callback data of the button labelled `label` in an inline keyboard.
fn button(keyboard: Option<&Value>, label: &str) -> Option<String> {
    keyboard
        .and_then(|k| k["inline_keyboard"].as_array())
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .find(|b| b["text"] == label)
        .and_then(|b| b["callback_data"].as_str().map(str::to_string))
}

// ----- waiting and printing -----

fn scene(title: &str, why: &str) {
    println!();
    println!(
        "── {title} {}",
        "─".repeat(72usize.saturating_sub(title.chars().count()))
    );
    narrate(why);
    println!();
}

fn you(text: &str) {
    speak("you → bot: ", text);
}

/// A narrator's line: what happens and why.
fn narrate(text: &str) {
    speak("  · ", text);
}

/// A fact the demo checked.
fn check(text: &str) {
    speak("  ✓ ", text);
}

/// Someone's message: the lead, then the text with its later lines under the first.
fn speak(lead: &str, text: &str) {
    let pad = " ".repeat(lead.chars().count());
    for (i, line) in text.lines().enumerate() {
        println!("{}{line}", if i == 0 { lead } else { &pad });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oncebot::moviepilot::MediaKind;

    #[test]
    fn media_kinds_of_the_script_are_in_the_simulators_catalogue() {
        let media = crate::sim::moviepilot::builtin_media();
        for (id, kind) in [
            (DUNE, MediaKind::Movie),
            (THREE_BODY, MediaKind::Tv),
            (EXPANSE, MediaKind::Tv),
        ] {
            assert!(
                media.iter().any(|m| m.tmdb_id == id && m.kind == kind),
                "{id} {kind:?}"
            );
        }
    }
}
