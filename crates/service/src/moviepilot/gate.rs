//! Where the processes of one deployment agree on who may log in to MoviePilot next.
//!
//! Why: a refused login is a failed login in MoviePilot's log, and a fail2ban in front of
//! MoviePilot locks the account after a few of them. So while MoviePilot refuses the username or
//! password, the deployment makes one login attempt at a time and backs off between them (the
//! first retry after [`LOGIN_BACKOFF_FIRST`], doubling, at most [`LOGIN_BACKOFF_MAX`]), however
//! many jobs and processes are waiting. The client keeps the same backoff in the process, so it
//! holds without a gate too; the gate (the ledger's, in Redis) makes it hold across processes.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The wait before the first login after a refused one.
pub const LOGIN_BACKOFF_FIRST: Duration = Duration::from_secs(5);
/// The longest wait between two logins while they are refused (the worker's one-minute cap on
/// a job's wait for its credentials).
pub const LOGIN_BACKOFF_MAX: Duration = Duration::from_secs(60);

/// A boxed future, so that the gate can be a trait object.
pub type GateFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The gate's answer to a process that wants to log in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// Log in now; the caller holds the login lease until it reports the result.
    Go,
    /// A login was refused and its backoff runs for `wait` more: `reason` is that refusal
    /// (operator text, naming the setting to fix).
    Refused { wait: Duration, reason: String },
    /// Another process is logging in now (its lease ends within `wait`).
    Busy { wait: Duration },
}

/// The deployment-wide login gate (implemented by the ledger). Errors are texts for the log:
/// the client then goes by its own backoff alone.
pub trait LoginGate: Send + Sync {
    /// May `holder` log in now? On [`Turn::Go`] it holds the lease for `lease`.
    fn begin<'a>(
        &'a self,
        holder: &'a str,
        lease: Duration,
    ) -> GateFuture<'a, Result<Turn, String>>;
    /// `holder`'s login was refused for `reason`: no login anywhere before the returned backoff
    /// (`first`, doubling per refusal in a row, at most `max`); the refusals are counted for
    /// `remember`.
    fn refused<'a>(
        &'a self,
        holder: &'a str,
        reason: &'a str,
        first: Duration,
        max: Duration,
        remember: Duration,
    ) -> GateFuture<'a, Result<Duration, String>>;
    /// A login was accepted: the backoff is over, everyone may log in.
    fn accepted(&self) -> GateFuture<'_, Result<(), String>>;
    /// `holder`'s login ended without a verdict (MoviePilot unreachable): the lease is free.
    fn release<'a>(&'a self, holder: &'a str) -> GateFuture<'a, Result<(), String>>;
}

/// The backoff after `refusals` refused logins in a row (1: the first).
pub fn login_backoff(refusals: u32) -> Duration {
    let doublings = refusals.saturating_sub(1).min(16);
    (LOGIN_BACKOFF_FIRST * 2u32.pow(doublings)).min(LOGIN_BACKOFF_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_backoff_starts_at_five_seconds_and_doubles_up_to_a_minute() {
        let secs: Vec<u64> = (1..=6).map(|n| login_backoff(n).as_secs()).collect();
        assert_eq!(secs, [5, 10, 20, 40, 60, 60]);
        assert_eq!(login_backoff(1000), LOGIN_BACKOFF_MAX);
    }
}
