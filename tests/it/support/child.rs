//! The `oncebot` binary as a child process: a clean environment, stderr captured line by line
//! so a test can wait for a message, and signals (SIGTERM for shutdown, SIGKILL for a crash).
//!
//! Crash tests need a process of their own: failpoints are global, and a SIGKILL is the only
//! honest crash.

use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncBufReadExt as _;
use tokio::process::{Child, Command};
use tokio::sync::Notify;

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

impl Oncebot {
    /// Starts `oncebot <args>` with only `env` (plus PATH) in its environment, so nothing from
    /// the developer's shell (ONCEBOT__*, RUST_LOG) changes what the test sees.
    pub fn spawn(args: &[&str], env: &[(String, String)]) -> Oncebot {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_oncebot"));
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("starting the oncebot binary");
        let stderr = Arc::new(Captured::default());
        let pipe = child.stderr.take().expect("stderr is piped");
        let sink = stderr.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(pipe).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut text = sink.text.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
                drop(text);
                sink.changed.notify_waiters();
            }
            sink.closed.store(true, Ordering::SeqCst);
            sink.changed.notify_waiters();
        });
        Oncebot { child, stderr }
    }

    /// Everything written to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.text.lock().unwrap().clone()
    }

    /// Waits until stderr contains `needle`; panics with the stderr so far after `deadline`.
    pub async fn wait_for_stderr(&self, needle: &str, deadline: Duration) {
        let until = tokio::time::Instant::now() + deadline;
        loop {
            let changed = self.stderr.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.stderr().contains(needle) {
                return;
            }
            if tokio::time::timeout_at(until, changed).await.is_err() {
                panic!(
                    "oncebot did not write {needle:?} to stderr within {deadline:?}; stderr:\n{}",
                    self.stderr()
                );
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("the child is still running")
    }

    /// Asks for a graceful shutdown, as `docker stop` or systemd would.
    pub fn sigterm(&self) {
        let status = std::process::Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -TERM failed");
    }

    /// SIGKILL: a crash, no chance to clean up.
    // Only the crash tests use it, and they need the `failpoints` feature.
    #[cfg_attr(not(feature = "failpoints"), allow(dead_code))]
    pub async fn sigkill(&mut self) {
        self.child.kill().await.expect("SIGKILL oncebot");
    }

    /// Sends `signal` (e.g. "TERM"): a graceful stop, unlike [`Oncebot::sigkill`].
    pub fn signal(&self, signal: &str) {
        super::send_signal(self.child.id().expect("the child is still running"), signal);
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("polling the child").is_none()
    }

    /// Waits for the process to exit and for the last of its stderr; panics with its stderr
    /// after `deadline`.
    pub async fn wait_exit(&mut self, deadline: Duration) -> ExitStatus {
        let until = tokio::time::Instant::now() + deadline;
        let Ok(status) = tokio::time::timeout_at(until, self.child.wait()).await else {
            panic!(
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
                panic!("oncebot exited but its stderr did not close within {deadline:?}");
            }
        }
        status.expect("waiting for oncebot")
    }
}
