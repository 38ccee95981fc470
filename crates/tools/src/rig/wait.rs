//! The one way to wait for an event that has no notification of its own: poll a check until it
//! holds, and give up after a deadline with an error that says what was awaited and what was
//! last seen. Never a bare sleep.

use std::future::Future;
use std::ops::ControlFlow;
use std::time::Duration;

use tokio::time::Instant;

/// How long to wait for `what`, and how often to look (every 20 ms unless [`Wait::every`]).
#[must_use = "a Wait does nothing until `until` or `until_seen` is awaited"]
pub struct Wait<'a> {
    what: &'a str,
    within: Duration,
    every: Duration,
}

/// Waits up to `within` for `what` (the error message's subject: "the worker to start").
pub fn wait(what: &str, within: Duration) -> Wait<'_> {
    Wait {
        what,
        within,
        every: Duration::from_millis(20),
    }
}

impl Wait<'_> {
    /// Looks this often; the bench measures with a finer grain than a test needs.
    pub fn every(mut self, every: Duration) -> Self {
        self.every = every;
        self
    }

    /// Until `check` gives `Some`.
    pub async fn until<T, F, Fut>(self, mut check: F) -> anyhow::Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        self.until_seen(|| {
            let next = check();
            async move {
                Ok(match next.await {
                    Some(value) => ControlFlow::Break(value),
                    None => ControlFlow::Continue(String::from("not yet")),
                })
            }
        })
        .await
    }

    /// Until `check` breaks with a value; `Continue` carries what it saw, for the error. An
    /// error from `check` ends the wait at once.
    pub async fn until_seen<T, F, Fut>(self, mut check: F) -> anyhow::Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = anyhow::Result<ControlFlow<T, String>>>,
    {
        let deadline = Instant::now() + self.within;
        loop {
            let seen = match check().await? {
                ControlFlow::Break(value) => return Ok(value),
                ControlFlow::Continue(seen) => seen,
            };
            if Instant::now() >= deadline {
                anyhow::bail!(
                    "gave up after {:?} waiting for {} (last seen: {seen})",
                    self.within,
                    self.what
                );
            }
            tokio::time::sleep(self.every).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn gives_the_value_once_the_check_holds() {
        let mut calls = 0;
        let got = wait("three calls", Duration::from_secs(1))
            .until(|| {
                calls += 1;
                let n = calls;
                async move { (n == 3).then_some(n) }
            })
            .await
            .unwrap();
        assert_eq!(got, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_naming_what_and_the_last_state_seen() {
        let err = wait("the moon", Duration::from_millis(100))
            .until_seen(|| async {
                Ok::<_, anyhow::Error>(ControlFlow::<(), _>::Continue("cheese".into()))
            })
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("the moon") && err.contains("cheese"), "{err}");
    }
}
