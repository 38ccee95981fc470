//! Wires the roles together and owns shutdown.
//!
//! Shutdown order: a signal cancels the token; the HTTP server stops accepting and finishes the
//! requests in flight; the poller stops before its next getUpdates; then the process exits 0.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::backoff::{self, Backoff};
use crate::config::{Needs, Settings};
use crate::dispatch::Dispatcher;
use crate::ingress::{Ingress, polling, webhook};
use crate::ledger::Ledger;
use crate::liveness::Liveness;
use crate::metrics::METRICS;
use crate::moviepilot::{MoviePilot, Unreachable};
use crate::notify::Relay;
use crate::redis_health::WriteHealth;
use crate::redis_policy;
use crate::servers;
use crate::shutdown::{Signals, sleep_or_stop};
use crate::telegram::api::BotApi;
use crate::worker::Worker;

/// A part of oncebot that can run in its own process (`serve --role`, spelled by the binary's
/// `RoleArg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Receives updates (webhook, or long polling with --poll) and records them.
    Ingress,
    /// Runs jobs against MoviePilot.
    Worker,
    /// Delivers replies to Telegram.
    Dispatcher,
    /// Relays MoviePilot's notifications (needs notify.enabled).
    Notify,
}

/// What `oncebot serve` was asked to run.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Empty means every role.
    pub roles: Vec<Role>,
    /// Take updates with getUpdates instead of the webhook.
    pub poll: bool,
}

impl ServeOptions {
    fn runs(&self, role: Role) -> bool {
        self.roles.is_empty() || self.roles.contains(&role)
    }

    /// Whether the relay runs: asked for (or every role), and `notify.enabled`.
    fn runs_notify(&self, settings: &Settings) -> bool {
        settings.notify.enabled && self.runs(Role::Notify)
    }

    /// The settings these roles need (`notify_enabled`: `notify.enabled`, without which a plain
    /// `serve` does not relay).
    pub fn needs(&self, notify_enabled: bool) -> Needs {
        let ingress = self.runs(Role::Ingress);
        Needs {
            ingress,
            webhook: ingress && !self.poll,
            bot_api: (ingress && self.poll) || self.runs(Role::Dispatcher),
            moviepilot: self.runs(Role::Worker),
            dispatcher: self.runs(Role::Dispatcher),
            notify: notify_enabled && self.runs(Role::Notify),
        }
    }
}

/// A started oncebot: where it listens, and how to stop it.
pub struct Running {
    /// The HTTP address actually bound (port 0 in the settings picks a free one).
    pub http_addr: Option<SocketAddr>,
    /// The operator page's own address, when `admin.listen` is set (else it is on `http_addr`).
    pub admin_addr: Option<SocketAddr>,
    pub shutdown: CancellationToken,
    handle: Task,
}

impl Running {
    /// Waits until every role has stopped.
    pub async fn wait(self) -> anyhow::Result<()> {
        self.handle.await.context("a role panicked")?
    }

    /// Requests shutdown and waits for it.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        self.wait().await
    }
}

/// A role or server of a running process; the first to fail stops the others.
type Task = JoinHandle<anyhow::Result<()>>;

/// Validates the settings for the chosen roles and starts them.
pub async fn start(settings: Settings, opts: ServeOptions) -> anyhow::Result<Running> {
    check(&settings, &opts)?;
    let ledger = Ledger::connect(
        &settings,
        crate::i18n::Texts::new(settings.telegram.locale).for_ledger(),
    )?;
    wait_for_redis(&ledger).await;
    crate::versions::check_layout(&ledger).await?;
    let policy_at_start =
        redis_policy::check_at_start(&ledger, &settings.redis, Duration::from_secs(2)).await?;
    let shutdown = CancellationToken::new();
    let mut tasks: Vec<Task> = Vec::new();

    // Every process serves /healthz, /readyz and /metrics; only ingress adds the webhook.
    let runs_ingress = opts.runs(Role::Ingress);
    let ingress = Ingress::new(&settings, ledger.clone());
    // The process's one view of whether Redis takes writes (`redis_health`): the ingress's.
    let health = ingress.write_health().clone();
    crate::users_sync::set_gauges(&ingress.directory().current());
    tasks.extend(watch_redis_policy(
        &settings,
        &ingress,
        policy_at_start,
        &shutdown,
    ));
    // One follower a process: the ingress and the dispatcher's menus decide with one directory.
    if runs_ingress || opts.runs(Role::Dispatcher) {
        tasks.push(follow_users(&settings, &ingress, &shutdown).await);
    }
    if runs_ingress {
        tasks.push(expire_requests(&ingress, &shutdown));
    }
    let hook = (runs_ingress && !opts.poll).then(|| webhook::WebhookConfig {
        secret: settings.telegram.webhook_secret.clone(),
        max_body_bytes: settings.http.max_body_bytes,
    });
    let http = servers::start(&settings, ingress.clone(), hook, runs_ingress, &shutdown).await?;
    tasks.extend(http.tasks);
    if runs_ingress && opts.poll {
        tasks.push(start_poller(&settings, ingress.clone(), &shutdown)?);
    }
    // One liveness key and one heartbeat for the process's worker and dispatcher.
    let (worker, dispatcher) = (opts.runs(Role::Worker), opts.runs(Role::Dispatcher));
    let liveness = Liveness::for_process(&settings, ledger.clone(), worker, dispatcher);
    tasks.extend(register(&settings, &opts, &ledger, &liveness, &shutdown));
    // Whether Redis takes writes: one watcher a process, whatever its roles (`redis_health`).
    liveness.renew_when_writes_return(health.clone());
    tasks.push(watch_writes(
        &settings,
        &ledger,
        &health,
        liveness.consumer(),
        &shutdown,
    ));
    if worker {
        let liveness = liveness.clone();
        let (ledger, health) = (ledger.clone(), health.clone());
        tasks.push(start_worker(&settings, ledger, liveness, health, shutdown.clone()).await?);
    }
    if dispatcher {
        let api = BotApi::new(&settings.telegram.api_url, &settings.telegram.token)?;
        let directory = ingress.directory().clone();
        let dispatcher =
            Dispatcher::new(&settings, ledger.clone(), api, liveness, health, directory);
        tasks.push(tokio::spawn(dispatcher.run(shutdown.clone())));
    }
    if opts.runs_notify(&settings) {
        tasks.push(start_relay(&settings, ledger.clone(), shutdown.clone()).await?);
    }
    let handle = tokio::spawn(wait_all(tasks, shutdown.clone()));
    Ok(Running {
        http_addr: Some(http.http_addr),
        admin_addr: http.admin_addr,
        shutdown,
        handle,
    })
}

/// The process's registration (`versions`): written by its heartbeat when it runs a worker or a
/// dispatcher, else by a task of its own, returned.
fn register(
    settings: &Settings,
    opts: &ServeOptions,
    ledger: &Ledger,
    liveness: &Liveness,
    shutdown: &CancellationToken,
) -> Option<Task> {
    let roles: Vec<&str> = [
        (Role::Ingress, "ingress"),
        (Role::Worker, "worker"),
        (Role::Dispatcher, "dispatcher"),
        (Role::Notify, "notify"),
    ]
    .into_iter()
    .filter(|(role, _)| match role {
        Role::Notify => opts.runs_notify(settings),
        role => opts.runs(*role),
    })
    .map(|(_, name)| name)
    .collect();
    let registration = crate::versions::registration(&roles);
    if opts.runs(Role::Worker) || opts.runs(Role::Dispatcher) {
        liveness.register(registration.to_value(), true);
        return None;
    }
    let w = &settings.worker;
    let timing = (
        Duration::from_millis(w.heartbeat_interval_ms),
        Duration::from_millis(w.liveness_ttl_ms),
    );
    let keep = crate::versions::keep_registered(
        ledger.clone(),
        liveness.consumer().to_string(),
        registration,
        timing,
        shutdown.clone(),
    );
    Some(tokio::spawn(async move {
        keep.await;
        Ok(())
    }))
}

/// The process's write watcher (`redis_health`), as a task of the process that ends with it.
fn watch_writes(
    settings: &Settings,
    ledger: &Ledger,
    health: &WriteHealth,
    process: &str,
    shutdown: &CancellationToken,
) -> Task {
    let watcher = health.watch(
        settings,
        ledger.clone(),
        process.to_string(),
        shutdown.clone(),
    );
    tokio::spawn(async move {
        let _ = watcher.await;
        Ok(())
    })
}

/// The settings the chosen roles need, and `--role notify` only with `notify.enabled`.
fn check(settings: &Settings, opts: &ServeOptions) -> anyhow::Result<()> {
    if opts.roles.contains(&Role::Notify) && !settings.notify.enabled {
        return Err(crate::config::SettingError {
            key: "notify.enabled",
            problem: "is false, but --role notify was asked for".into(),
            fix: format!(
                "set {}=true to relay MoviePilot's notifications",
                crate::config::env_name("notify.enabled")
            ),
        }
        .into());
    }
    settings.validate(opts.needs(settings.notify.enabled))?;
    Ok(())
}

/// Loads the scripts, waiting at most 5 s: a Redis that does not answer yet does not stop
/// start-up (the webhook answers 503 until it does).
async fn wait_for_redis(ledger: &Ledger) {
    match tokio::time::timeout(Duration::from_secs(5), ledger.prepare()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(
            error = %e,
            "Redis is not answering yet; the webhook answers 503 until it does"
        ),
        Err(_) => {
            tracing::warn!("Redis did not answer within 5 s; the webhook answers 503 until it does")
        }
    }
}

/// The live check of Redis's `maxmemory-policy` (every process; none with
/// `redis.allow_eviction`), into the watch that ingress's doors and `/readyz` read.
fn watch_redis_policy(
    settings: &Settings,
    ingress: &Ingress,
    at_start: redis_policy::AtStart,
    shutdown: &CancellationToken,
) -> Option<Task> {
    if settings.redis.allow_eviction {
        return None;
    }
    let check = redis_policy::run(
        ingress.ledger().clone(),
        ingress.redis_policy().clone(),
        Duration::from_secs(settings.redis.policy_check_secs),
        at_start,
        shutdown.clone(),
    );
    Some(tokio::spawn(async move {
        check.await;
        Ok(())
    }))
}

/// Every 30 s, access and media requests whose time passed get their cards told
/// (`ingress::access`, `ingress::requests`).
fn expire_requests(ingress: &Ingress, shutdown: &CancellationToken) -> Task {
    let sweep = ingress.clone().expire_requests_until(shutdown.clone());
    tokio::spawn(async move {
        sweep.await;
        Ok(())
    })
}

/// Reads MoviePilot's user mapping and the grants as stored before anything is admitted (until
/// then, MoviePilot maps nobody and nobody is granted: see `users_sync`), then follows them.
/// Redis not answering bounds this wait, as in [`wait_for_redis`]; admission needs Redis too, so
/// nothing is decided with them unread for long.
async fn follow_users(
    settings: &Settings,
    ingress: &Ingress,
    shutdown: &CancellationToken,
) -> Task {
    let mut follower = crate::users_sync::Follower::new(
        ingress.ledger().clone(),
        ingress.directory().clone(),
        settings.moviepilot.users_refresh().is_some(),
    )
    .with_claims();
    let why = match tokio::time::timeout(Duration::from_secs(2), follower.read_once()).await {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(_) => Some("Redis did not answer within 2 s".to_string()),
    };
    if let Some(why) = why {
        tracing::warn!(
            error = %why,
            "MoviePilot's user mapping and the grants are not readable yet; they count for nobody until they are"
        );
    }
    let stop = shutdown.clone();
    tokio::spawn(async move {
        follower.run(stop).await;
        Ok(())
    })
}

/// Takes updates with getUpdates (`--poll`). A poller that cannot go on (bad token) takes the
/// process down with it.
fn start_poller(
    settings: &Settings,
    ingress: Ingress,
    shutdown: &CancellationToken,
) -> anyhow::Result<Task> {
    let api = BotApi::new(&settings.telegram.api_url, &settings.telegram.token)?;
    let poll = polling::PollOptions::from_settings(&settings.telegram);
    let stop = shutdown.clone();
    Ok(tokio::spawn(async move {
        let result = polling::run(ingress, api, poll, stop.clone()).await;
        if result.is_err() {
            stop.cancel();
        }
        result
    }))
}

/// Waits for every task; the first failure (an error or a panic) cancels the others and is
/// what the process ends with.
async fn wait_all(tasks: Vec<Task>, stop: CancellationToken) -> anyhow::Result<()> {
    let mut first_error = None;
    for task in tasks {
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                stop.cancel();
                first_error.get_or_insert(e);
            }
            Err(e) => {
                stop.cancel();
                first_error.get_or_insert(anyhow::anyhow!("a role panicked: {e}"));
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Connects to MoviePilot and runs a worker. A setting MoviePilot refuses (an API key v2.5.6
/// does not accept, an unsupported version) stops start-up; an unreachable MoviePilot is tried
/// again in the background, so the other roles (the webhook above all) keep working meanwhile.
async fn start_worker(
    settings: &Settings,
    ledger: Ledger,
    liveness: Arc<Liveness>,
    health: WriteHealth,
    shutdown: CancellationToken,
) -> anyhow::Result<Task> {
    let first = first_connect(settings, "jobs wait until it is").await?;
    // MoviePilot not answering at start-up is something a restart sent before a crash is
    // verified by (`worker::restart`): the client remembers it.
    let unreachable_at = first.is_none().then(std::time::SystemTime::now);
    let settings = settings.clone();
    Ok(tokio::spawn(async move {
        let Some(mp) = connect_eventually(&settings, first, &shutdown).await? else {
            return Ok(());
        };
        if let Some(at) = unreachable_at {
            mp.saw_unreachable_at(at);
        }
        tracing::info!(version = mp.version(), dialect = %mp.dialect(), "connected to MoviePilot");
        // Logins go through the deployment's gate: one at a time, none while refused.
        mp.share_logins(std::sync::Arc::new(ledger.clone()));
        // A plain account on MoviePilot v3 would miss subscriptions and duplicate them: stop.
        if let Err(e) = crate::worker::check_own_account(&ledger, &mp, liveness.consumer()).await {
            shutdown.cancel();
            return Err(e);
        }
        // MoviePilot's own user mapping: whichever worker's turn it is reads it into Redis.
        let refresher = crate::users_sync::Refresher::new(&settings, ledger.clone(), mp.clone())
            .map(|r| tokio::spawn(r.run(shutdown.clone())));
        // The live cards: whichever worker's turn it is polls MoviePilot for all of them.
        let follower = crate::follow::Follower::new(
            &settings,
            ledger.clone(),
            mp.clone(),
            liveness.consumer(),
        );
        let follower = tokio::spawn(follower.run(shutdown.clone()));
        let result = Worker::with_liveness(&settings, ledger, mp, liveness, health)
            .run(shutdown)
            .await;
        if let Some(r) = refresher {
            r.abort();
        }
        follower.abort();
        result
    }))
}

/// Connects to MoviePilot and runs the notification relay, as [`start_worker`] does.
async fn start_relay(
    settings: &Settings,
    ledger: Ledger,
    shutdown: CancellationToken,
) -> anyhow::Result<Task> {
    let first = first_connect(settings, "notifications are relayed once it is").await?;
    let settings = settings.clone();
    Ok(tokio::spawn(async move {
        let Some(mp) = connect_eventually(&settings, first, &shutdown).await? else {
            return Ok(());
        };
        Relay::new(&settings, ledger, mp)?.run(shutdown).await
    }))
}

/// The first connection, at start-up: `None` when MoviePilot is not reachable yet (`meanwhile`
/// says what waits), an error for a setting it refuses.
async fn first_connect(settings: &Settings, meanwhile: &str) -> anyhow::Result<Option<MoviePilot>> {
    match MoviePilot::connect(&settings.moviepilot).await {
        Ok(mp) => Ok(Some(mp)),
        Err(e) if e.downcast_ref::<Unreachable>().is_some() => {
            METRICS.moviepilot_unreachable(true);
            tracing::warn!(
                error = %e,
                hint = unreachable_hint(&settings.moviepilot.url),
                "MoviePilot is not reachable yet; {meanwhile}"
            );
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// What to check when MoviePilot cannot be reached at `url`: in a container, a loopback address
/// is the container itself, the most common mistake of a compose deployment.
fn unreachable_hint(url: &str) -> &'static str {
    let host = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .split(['/', '?'])
        .next()
        .unwrap_or_default();
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let loopback =
        host.starts_with("127.") || host.starts_with("localhost") || host.starts_with("[::1]");
    if loopback && std::path::Path::new("/.dockerenv").exists() {
        "this runs in a container, where 127.0.0.1 is the container itself: set \
         ONCEBOT__MOVIEPILOT__URL to http://host.docker.internal:<port> or to MoviePilot's \
         service name (README, \"Reaching MoviePilot\")"
    } else {
        "check ONCEBOT__MOVIEPILOT__URL: the host name, the port (MoviePilot's API is 3001, the \
         web UI 3000) and that this machine or container can reach it"
    }
}

/// `first`, or connections tried with backoff until one works; `None` when stopped first. A
/// setting MoviePilot refuses meanwhile stops the process.
async fn connect_eventually(
    settings: &Settings,
    first: Option<MoviePilot>,
    shutdown: &CancellationToken,
) -> anyhow::Result<Option<MoviePilot>> {
    if let Some(mp) = first {
        return Ok(Some(mp));
    }
    let mut backoff = Backoff::new(backoff::MOVIEPILOT_CONNECT);
    let mut wait = backoff.next_delay();
    loop {
        if sleep_or_stop(wait, shutdown).await {
            return Ok(None);
        }
        match MoviePilot::connect(&settings.moviepilot).await {
            Ok(mp) => {
                METRICS.moviepilot_unreachable(false);
                return Ok(Some(mp));
            }
            Err(e) if e.downcast_ref::<Unreachable>().is_some() => {
                wait = backoff.next_delay();
                tracing::warn!(error = %e, retry_in = ?wait, "MoviePilot still unreachable");
            }
            Err(e) => {
                shutdown.cancel();
                return Err(e);
            }
        }
    }
}

/// Runs until SIGTERM or SIGINT, then shuts down gracefully.
pub async fn serve(settings: Settings, opts: ServeOptions) -> anyhow::Result<()> {
    // The handlers go in before anything listens: a SIGTERM between the first accepted request
    // and their installation would otherwise take the default action and kill the process
    // mid-request, without the graceful shutdown and exit status 0.
    let mut signals = Signals::install();
    let running = start(settings, opts).await?;
    let stop = running.shutdown.clone();
    tokio::spawn(async move {
        signals.recv().await;
        tracing::info!("shutting down: finishing requests in flight");
        stop.cancel();
    });
    running.wait().await?;
    tracing::info!("stopped");
    Ok(())
}
