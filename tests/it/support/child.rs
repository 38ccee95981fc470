//! The `oncebot` binary as a child process: the rig's [`oncebot_tools::rig::Oncebot`] with a
//! test's manners (a failure panics with the child's stderr, so the test's own message says
//! what went wrong).
//!
//! Crash tests need a process of their own: failpoints are global, and a SIGKILL is the only
//! honest crash.

use std::net::SocketAddr;
use std::process::ExitStatus;
use std::time::Duration;

use oncebot_tools::rig::{self, OncebotCommand};

/// How long a child may take to bind its listeners: start-up waits up to 7 s on a Redis that
/// does not answer (`app::wait_for_redis`, the user mapping) before it binds.
const STARTUP: Duration = Duration::from_secs(20);

/// A running `oncebot`; killed when dropped.
pub struct Oncebot(rig::Oncebot);

impl Oncebot {
    /// Starts `oncebot <args>` with only `env` (plus PATH) in its environment, so nothing from
    /// the developer's shell (ONCEBOT__*, RUST_LOG) changes what the test sees.
    pub fn spawn(args: &[&str], env: &[(String, String)]) -> Oncebot {
        Oncebot::spawn_exe(env!("CARGO_BIN_EXE_oncebot"), args, env)
    }

    /// [`Oncebot::spawn`] of another build of oncebot: the upgrade test runs the old release's
    /// binary beside this one.
    pub fn spawn_exe(
        exe: impl AsRef<std::path::Path>,
        args: &[&str],
        env: &[(String, String)],
    ) -> Oncebot {
        let exe = exe.as_ref();
        let child = OncebotCommand::new(exe)
            .args(args)
            .envs(env.iter().cloned())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e:#}", exe.display()));
        Oncebot(child)
    }

    /// [`Oncebot::spawn`] with these open-files limits (soft, hard), as `LimitNOFILE=` gives them.
    pub fn spawn_with_open_files(
        args: &[&str],
        env: &[(String, String)],
        soft: u64,
        hard: u64,
    ) -> Oncebot {
        let child = OncebotCommand::new(env!("CARGO_BIN_EXE_oncebot"))
            .args(args)
            .envs(env.iter().cloned())
            .open_files_limit(soft, hard)
            .spawn()
            .expect("starting the oncebot binary");
        Oncebot(child)
    }

    /// Everything written to stderr so far.
    pub fn stderr(&self) -> String {
        self.0.stderr()
    }

    /// Waits until stderr contains `needle`; panics with the stderr so far after `deadline`.
    pub async fn wait_for_stderr(&self, needle: &str, deadline: Duration) {
        if let Err(e) = self.0.wait_for_stderr(needle, deadline).await {
            panic!("{e:#}");
        }
    }

    /// The address `http.listen` bound, read from its log line; the test settings listen on
    /// port 0, so the system picks a free port and nothing can take it before the child binds.
    /// Panics with the stderr if the line does not come.
    pub async fn http_addr(&self) -> SocketAddr {
        match self.0.http_addr(STARTUP).await {
            Ok(addr) => addr,
            Err(e) => panic!("{e:#}"),
        }
    }

    /// `http://<http_addr><path>`.
    pub async fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.http_addr().await)
    }

    /// The operator page's own address (`admin.listen`), as [`Oncebot::http_addr`].
    pub async fn admin_addr(&self) -> SocketAddr {
        match self.0.admin_addr(STARTUP).await {
            Ok(addr) => addr,
            Err(e) => panic!("{e:#}"),
        }
    }

    pub fn pid(&self) -> u32 {
        self.0.pid().expect("the child is still running")
    }

    /// Asks for a graceful shutdown, as `docker stop` or systemd would.
    pub fn sigterm(&self) {
        self.signal("TERM");
    }

    /// SIGKILL: a crash, no chance to clean up.
    pub async fn sigkill(&mut self) {
        self.0.sigkill().await.expect("SIGKILL oncebot");
    }

    /// Sends `signal` (e.g. "TERM"): a graceful stop, unlike [`Oncebot::sigkill`].
    pub fn signal(&self, signal: &str) {
        self.0.signal(signal).expect("signalling oncebot");
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.0.is_running()
    }

    /// Waits for the process to exit and for the last of its stderr; panics with its stderr
    /// after `deadline`.
    pub async fn wait_exit(&mut self, deadline: Duration) -> ExitStatus {
        match self.0.wait_exit(deadline).await {
            Ok(status) => status,
            Err(e) => panic!("{e:#}"),
        }
    }
}
