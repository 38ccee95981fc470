//! Wires the roles together and owns shutdown.
//!
//! Shutdown order: a signal cancels the token; the HTTP server stops accepting and finishes the
//! requests in flight; the poller stops before its next getUpdates; then the process exits 0.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::{Needs, Settings};
use crate::ingress::{Ingress, polling, webhook};
use crate::ledger::Ledger;
use crate::telegram::api::BotApi;

/// A part of oncebot that can run in its own process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Role {
    /// Receives updates (webhook, or long polling with --poll) and records them.
    Ingress,
    /// Runs jobs against MoviePilot.
    Worker,
    /// Delivers replies to Telegram.
    Dispatcher,
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

    /// The settings these roles need.
    pub fn needs(&self) -> Needs {
        let ingress = self.runs(Role::Ingress);
        Needs {
            ingress,
            webhook: ingress && !self.poll,
            bot_api: (ingress && self.poll) || self.runs(Role::Dispatcher),
        }
    }
}

/// A started oncebot: where it listens, and how to stop it.
pub struct Running {
    /// The HTTP address actually bound (port 0 in the settings picks a free one).
    pub http_addr: Option<SocketAddr>,
    pub shutdown: CancellationToken,
    handle: JoinHandle<anyhow::Result<()>>,
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

/// Validates the settings for the chosen roles and starts them.
pub async fn start(settings: Settings, opts: ServeOptions) -> anyhow::Result<Running> {
    settings.validate(opts.needs())?;
    let ledger = Ledger::connect(&settings)?;
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
    let shutdown = CancellationToken::new();
    let mut tasks: Vec<JoinHandle<anyhow::Result<()>>> = Vec::new();
    let mut http_addr = None;

    if opts.runs(Role::Ingress) {
        let ingress = Ingress::new(&settings, ledger.clone());
        let listen = settings
            .listen_addr()
            .context("http.listen is not an address (ONCEBOT__HTTP__LISTEN)")?;
        let listener = webhook::bind(listen).await?;
        http_addr = Some(listener.local_addr()?);
        let hook = (!opts.poll).then(|| webhook::WebhookConfig {
            secret: settings.telegram.webhook_secret.clone(),
            max_body_bytes: settings.http.max_body_bytes,
        });
        let stop = shutdown.clone();
        let server = webhook::serve(listener, ingress.clone(), hook, async move {
            stop.cancelled().await
        });
        tasks.push(tokio::spawn(async move {
            server.await;
            Ok(())
        }));
        tracing::info!(
            addr = %http_addr.expect("set just above"),
            mode = if opts.poll { "long polling" } else { "webhook" },
            "ingress listening"
        );
        if opts.poll {
            let api = BotApi::new(&settings.telegram.api_url, &settings.telegram.token)?;
            let timeout = Duration::from_secs(settings.telegram.poll_timeout_secs);
            let stop = shutdown.clone();
            tasks.push(tokio::spawn(async move {
                let result = polling::run(ingress, api, timeout, stop.clone()).await;
                if result.is_err() {
                    // A poller that cannot go on (bad token) takes the process down with it.
                    stop.cancel();
                }
                result
            }));
        }
    }
    for role in [Role::Worker, Role::Dispatcher] {
        if opts.runs(role) {
            tracing::warn!(
                role = ?role,
                "this role is not part of this release yet; jobs wait in the ledger until it is"
            );
        }
    }

    let stop = shutdown.clone();
    let handle = tokio::spawn(async move {
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
    });
    Ok(Running {
        http_addr,
        shutdown,
        handle,
    })
}

/// Runs until SIGTERM or SIGINT, then shuts down gracefully.
pub async fn serve(settings: Settings, opts: ServeOptions) -> anyhow::Result<()> {
    // The handlers go in before anything listens: a SIGTERM between the first accepted request
    // and their installation would otherwise take the default action and kill the process
    // mid-request, without the graceful shutdown and exit status 0.
    let signals = Signals::install();
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

/// SIGTERM and SIGINT, listened for from the moment this is built.
struct Signals {
    term: Option<tokio::signal::unix::Signal>,
    int: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn install() -> Signals {
        use tokio::signal::unix::{SignalKind, signal};
        let listen = |kind: SignalKind, name: &str| match signal(kind) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for {name}; it will stop oncebot abruptly");
                None
            }
        };
        Signals {
            term: listen(SignalKind::terminate(), "SIGTERM"),
            int: listen(SignalKind::interrupt(), "SIGINT"),
        }
    }

    /// Resolves at the first SIGTERM or SIGINT.
    async fn recv(mut self) {
        async fn next(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            _ = next(&mut self.term) => {}
            _ = next(&mut self.int) => {}
        }
    }
}
