//! A private, throwaway `redis-server` on a unix socket in a temporary directory.
//!
//! The bench, the demo and the tests use it, so they never touch an operator's Redis. It can be
//! stopped (SIGKILL, like a crash) and started again on the same socket and data directory,
//! which is how the tests prove that an acknowledged update survives a Redis restart.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;

/// How the private server keeps its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persistence {
    /// Nothing on disk (benchmarks, most tests).
    None,
    /// AOF with `appendfsync always`: every acknowledged write survives a kill.
    AofAlways,
    /// AOF with `appendfsync everysec`, the docker-compose setting.
    AofEverySec,
}

/// A running `redis-server`; killed when dropped.
pub struct RedisServer {
    dir: tempfile::TempDir,
    persistence: Persistence,
    /// Given after the usual arguments, so they win (`--maxmemory`, `--dir`, `--save`).
    extra_args: Vec<String>,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts one and waits until it answers PING.
    pub fn start(persistence: Persistence) -> anyhow::Result<Self> {
        Self::start_with(persistence, &[])
    }

    /// [`RedisServer::start`] with `extra_args` after the usual ones (a later `--dir` or
    /// `--save` wins; the socket and the log stay in the server's own directory).
    pub fn start_with(persistence: Persistence, extra_args: &[&str]) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("oncebot-redis-")
            .tempdir()
            .context("creating a temporary directory for redis-server")?;
        let mut server = Self {
            dir,
            persistence,
            extra_args: extra_args.iter().map(|a| a.to_string()).collect(),
            child: None,
        };
        server.restart()?;
        Ok(server)
    }

    /// Whether a `redis-server` binary is on the PATH.
    pub fn available() -> bool {
        Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("redis.sock")
    }

    /// `redis+unix:///.../redis.sock`
    pub fn url(&self) -> String {
        format!("redis+unix://{}", self.socket().display())
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// SIGKILLs the server, as a crash would. No-op if it is not running.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_file(self.socket());
    }

    /// (Re)starts the server on the same socket and data directory.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.kill();
        let mut cmd = Command::new("redis-server");
        cmd.arg("--port")
            .arg("0")
            .arg("--unixsocket")
            .arg(self.socket())
            .arg("--unixsocketperm")
            .arg("700")
            .arg("--dir")
            .arg(self.dir.path())
            .arg("--save")
            .arg("")
            .arg("--logfile")
            .arg(self.dir.path().join("redis.log"));
        match self.persistence {
            Persistence::None => {
                cmd.args(["--appendonly", "no"]);
            }
            Persistence::AofAlways => {
                cmd.args(["--appendonly", "yes", "--appendfsync", "always"]);
            }
            Persistence::AofEverySec => {
                cmd.args(["--appendonly", "yes", "--appendfsync", "everysec"]);
            }
        }
        cmd.args(&self.extra_args);
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context(
                "starting redis-server (install it: `apt-get install redis-server`, or point \
                 --redis-url / ONCEBOT__REDIS__URL at a running Redis)",
            )?;
        self.child = Some(child);
        self.wait_ready()
    }

    fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                anyhow::bail!(
                    "redis-server exited at start ({status}); see {}",
                    self.dir.path().join("redis.log").display()
                );
            }
            if let Ok(client) = oncebot::ledger::open_client(&self.url())
                && let Ok(mut conn) = client.get_connection()
            {
                let pong: redis::RedisResult<String> = redis::cmd("PING").query(&mut conn);
                // While loading the AOF Redis answers LOADING; wait until it answers PONG.
                if pong.is_ok() {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                anyhow::bail!("redis-server did not answer PING within 10 s");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
