//! The `oncebot` binary as a child process, for what only a process shows: a SIGKILL is the only
//! honest crash, failpoints are global to a process, and exit codes and stderr are the
//! operator's view. The tests run `target/.../oncebot`; the demo and the bench run themselves
//! (`std::env::current_exe`).

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::Context as _;
use oncebot::servers::{ADMIN_LISTENING, HTTP_LISTENING};
use tokio::io::AsyncBufReadExt as _;
use tokio::process::{Child, Command};
use tokio::sync::Notify;

use super::OncebotEnv;

/// How to start one `oncebot`: the binary, its arguments and its whole environment.
pub struct OncebotCommand {
    exe: PathBuf,
    args: Vec<OsString>,
    env: Vec<(String, String)>,
    forward_stderr: Option<String>,
    open_files: Option<(u64, u64)>,
}

impl OncebotCommand {
    /// `exe` with no arguments and an environment of PATH alone: nothing from the caller's
    /// shell (ONCEBOT__*, RUST_LOG, FAILPOINTS) changes what the child does unless passed on.
    pub fn new(exe: impl AsRef<Path>) -> OncebotCommand {
        OncebotCommand {
            exe: exe.as_ref().to_path_buf(),
            args: Vec::new(),
            env: Vec::new(),
            forward_stderr: None,
            open_files: None,
        }
    }

    /// `oncebot serve --role R ...` (every role when `roles` is empty).
    pub fn serve(exe: impl AsRef<Path>, roles: &[&str]) -> OncebotCommand {
        let mut cmd = OncebotCommand::new(exe).args(["serve"]);
        for role in roles {
            cmd = cmd.args(["--role", role]);
        }
        cmd
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds these variables (later ones win).
    pub fn envs<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.env
            .extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// Adds the whole settings environment.
    pub fn oncebot_env(self, env: &OncebotEnv) -> Self {
        self.envs(env.vars().iter().cloned())
    }

    /// Also copies each stderr line to this process's stderr, behind `[prefix]`.
    pub fn forward_stderr(mut self, prefix: impl Into<String>) -> Self {
        self.forward_stderr = Some(prefix.into());
        self
    }

    /// Starts it with these open-files limits (RLIMIT_NOFILE, soft and hard), as a service
    /// manager's `LimitNOFILE=` would: through `sh -c 'ulimit ...; exec ...'`, since setting a
    /// limit between fork and exec needs unsafe code.
    pub fn open_files_limit(mut self, soft: u64, hard: u64) -> Self {
        self.open_files = Some((soft, hard));
        self
    }

    /// Starts it; stderr is read line by line as it comes (so the pipe never fills and blocks
    /// the child) and kept for [`Oncebot::stderr`].
    pub fn spawn(self) -> anyhow::Result<Oncebot> {
        let mut cmd = match self.open_files {
            None => Command::new(&self.exe),
            Some((soft, hard)) => {
                let mut sh = Command::new("sh");
                sh.arg("-c")
                    .arg(format!(
                        "ulimit -S -n {soft} && ulimit -H -n {hard} && exec \"$0\" \"$@\""
                    ))
                    .arg(&self.exe);
                sh
            }
        };
        cmd.args(&self.args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {} {:?}", self.exe.display(), self.args))?;
        let pid = child.id().unwrap_or_default();
        let stderr = Arc::new(Captured::default());
        let pipe = child.stderr.take().context("the child's stderr is piped")?;
        let sink = stderr.clone();
        let forward = self.forward_stderr;
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(pipe).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(prefix) = &forward {
                    eprintln!("[{prefix} {pid}] {line}");
                }
                let mut text = sink.text();
                text.push_str(&line);
                text.push('\n');
                drop(text);
                sink.changed.notify_waiters();
            }
            sink.closed.store(true, Ordering::SeqCst);
            sink.changed.notify_waiters();
        });
        Ok(Oncebot { child, stderr })
    }
}

/// A running `oncebot`; killed when dropped.
pub struct Oncebot {
    child: Child,
    stderr: Arc<Captured>,
}

#[derive(Default)]
struct Captured {
    text: Mutex<String>,
    /// Set at end of file: the process closed stderr (it exited), every line is in `text`.
    closed: AtomicBool,
    /// Woken for every line and at end of file.
    changed: Notify,
}

impl Captured {
    fn text(&self) -> MutexGuard<'_, String> {
        self.text.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Oncebot {
    /// Everything written to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.text().clone()
    }

    /// Waits until stderr contains `needle` (an event: woken by every line, no polling).
    pub async fn wait_for_stderr(&self, needle: &str, deadline: Duration) -> anyhow::Result<()> {
        self.wait_for(&format!("{needle:?}"), deadline, |text| {
            text.contains(needle).then_some(())
        })
        .await
    }

    /// The address `http.listen` bound (with port 0, the port the system chose), read from its
    /// listening line (`oncebot::servers::HTTP_LISTENING`); waits for the line.
    pub async fn http_addr(&self, deadline: Duration) -> anyhow::Result<SocketAddr> {
        self.listening(HTTP_LISTENING, deadline).await
    }

    /// The operator page's own address (`admin.listen`), as [`Oncebot::http_addr`].
    pub async fn admin_addr(&self, deadline: Duration) -> anyhow::Result<SocketAddr> {
        self.listening(ADMIN_LISTENING, deadline).await
    }

    /// The `addr` of the first stderr line with `message`, in either log format.
    async fn listening(&self, message: &str, deadline: Duration) -> anyhow::Result<SocketAddr> {
        let what = format!("a line {message:?} with its addr");
        self.wait_for(&what, deadline, |text| {
            text.lines()
                .filter(|line| line.contains(message))
                .find_map(addr_field)
        })
        .await
    }

    /// Waits until `find` finds something in stderr so far (woken by every line, no polling);
    /// the error names `what` and holds the stderr.
    async fn wait_for<T>(
        &self,
        what: &str,
        deadline: Duration,
        find: impl Fn(&str) -> Option<T>,
    ) -> anyhow::Result<T> {
        let until = tokio::time::Instant::now() + deadline;
        loop {
            let changed = self.stderr.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if let Some(found) = find(&self.stderr()) {
                return Ok(found);
            }
            if self.stderr.closed.load(Ordering::SeqCst) {
                anyhow::bail!(
                    "oncebot exited without writing {what} to stderr; stderr:\n{}",
                    self.stderr()
                );
            }
            if tokio::time::timeout_at(until, changed).await.is_err() {
                anyhow::bail!(
                    "oncebot did not write {what} to stderr within {deadline:?}; stderr:\n{}",
                    self.stderr()
                );
            }
        }
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Sends `signal` ("TERM", "INT", "STOP", ...) with the system's `kill`.
    pub fn signal(&self, signal: &str) -> anyhow::Result<()> {
        let pid = self.pid().context("the child has exited")?;
        send_signal(pid, signal)
    }

    /// SIGKILL: a crash, no chance to clean up; waits until it is gone. A child that already
    /// exited is fine.
    pub async fn sigkill(&mut self) -> anyhow::Result<()> {
        if self.child.try_wait()?.is_some() {
            return Ok(());
        }
        self.child.kill().await.context("SIGKILL oncebot")
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits for the process to exit and for the last of its stderr.
    pub async fn wait_exit(&mut self, deadline: Duration) -> anyhow::Result<ExitStatus> {
        let until = tokio::time::Instant::now() + deadline;
        let Ok(status) = tokio::time::timeout_at(until, self.child.wait()).await else {
            anyhow::bail!(
                "oncebot did not exit within {deadline:?}; stderr:\n{}",
                self.stderr()
            );
        };
        // The reader task may still hold the last lines; wait for end of file.
        loop {
            let changed = self.stderr.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.stderr.closed.load(Ordering::SeqCst) {
                break;
            }
            if tokio::time::timeout_at(until, changed).await.is_err() {
                anyhow::bail!("oncebot exited but its stderr did not close within {deadline:?}");
            }
        }
        status.context("waiting for oncebot")
    }

    /// A graceful stop, as `docker stop` does it: SIGTERM, then SIGKILL after `grace`.
    pub async fn stop(&mut self, grace: Duration) -> anyhow::Result<ExitStatus> {
        if let Some(pid) = self.pid() {
            send_signal(pid, "TERM")?;
        }
        match self.wait_exit(grace).await {
            Ok(status) => Ok(status),
            Err(_) => {
                self.sigkill().await?;
                self.child.wait().await.context("waiting for oncebot")
            }
        }
    }
}

/// The field `addr` of a log line: `addr=127.0.0.1:43123` in the text format, or
/// `"addr":"127.0.0.1:43123"` in JSON.
fn addr_field(line: &str) -> Option<SocketAddr> {
    let (_, rest) = line
        .split_once(" addr=")
        .or_else(|| line.split_once("\"addr\":\""))?;
    rest.split([' ', '"']).next()?.parse().ok()
}

/// `kill -<signal> <pid>`.
pub fn send_signal(pid: u32, signal: &str) -> anyhow::Result<()> {
    let status = std::process::Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .context("running kill")?;
    anyhow::ensure!(status.success(), "kill -{signal} {pid} failed");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_address_is_read_from_either_log_format() {
        let text = "2026-01-01T00:00:00.000000Z  INFO oncebot::servers: HTTP listening \
                    (/healthz, /readyz, /metrics) addr=127.0.0.1:43123 webhook=true";
        let json = r#"{"timestamp":"2026-01-01T00:00:00Z","level":"INFO","message":"HTTP listening (/healthz, /readyz, /metrics)","addr":"[::1]:8080","webhook":true}"#;
        assert_eq!(addr_field(text), Some("127.0.0.1:43123".parse().unwrap()));
        assert_eq!(addr_field(json), Some("[::1]:8080".parse().unwrap()));
        assert_eq!(addr_field("INFO worker started"), None);
    }
}
