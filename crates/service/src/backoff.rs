//! Every wait before trying again, in one place: each schedule is a `backon` exponential
//! builder (doubling from its first delay up to its cap), named for what it retries, and read
//! either as a `Backoff` that a loop steps and resets, or by failure count with `nth`. A call
//! tried a bounded number of times counts its failures with `Retry` (or `retry` when nothing
//! but an error can end it early).

use std::time::Duration;

use backon::{BackoffBuilder as _, ExponentialBuilder};
use tokio_util::sync::CancellationToken;

use crate::shutdown::sleep_or_stop;

/// Doubling from `first` up to `max`, without end and without jitter.
pub(crate) const fn doubling(first: Duration, max: Duration) -> ExponentialBuilder {
    ExponentialBuilder::new()
        .with_min_delay(first)
        .with_max_delay(max)
        .with_factor(2.0)
        .without_max_times()
}

/// Reaching Redis again (a stream reader's connection, recording an outcome): 200 ms, 400 ms,
/// ... up to 6.4 s.
pub(crate) const REDIS: ExponentialBuilder =
    doubling(Duration::from_millis(200), Duration::from_millis(6400));

/// A failed `getUpdates` or a Redis failure of the poller: 1 s, 2 s, ... up to 30 s.
pub(crate) const POLLING: ExponentialBuilder =
    doubling(Duration::from_secs(1), Duration::from_secs(30));

/// A MoviePilot that was unreachable at start-up: 1 s, 2 s, ... up to 60 s.
pub(crate) const MOVIEPILOT_CONNECT: ExponentialBuilder =
    doubling(Duration::from_secs(1), Duration::from_secs(60));

/// A network failure of answerCallbackQuery: 200 ms, then 400 ms (a callback query expires
/// within seconds, so there are no more tries).
pub(crate) const CALLBACK_ANSWER: ExponentialBuilder =
    doubling(Duration::from_millis(200), Duration::from_millis(400));

/// A job's or a reply's retry schedule from its settings: doubling from `min` up to `max`, each
/// delay plus a random part below itself, so that retries of jobs that failed together spread.
pub(crate) const fn jittered(min: Duration, max: Duration) -> ExponentialBuilder {
    doubling(min, max).with_jitter()
}

/// The delay after the `failures`-th failure in a row (1 for the first) of `schedule`, read as
/// a schedule without end (past its cap every delay is the cap).
pub(crate) fn nth(schedule: ExponentialBuilder, failures: u32) -> Duration {
    schedule
        .without_max_times()
        .build()
        .nth(failures.saturating_sub(1) as usize)
        .unwrap_or_default()
}

/// A schedule a loop steps through: `next_delay` after each failure, `reset` after a success.
/// Read without end: past its cap every delay is the cap.
pub(crate) struct Backoff {
    schedule: ExponentialBuilder,
    delays: backon::ExponentialBackoff,
}

impl Backoff {
    pub(crate) fn new(schedule: ExponentialBuilder) -> Backoff {
        let schedule = schedule.without_max_times();
        Backoff {
            schedule,
            delays: schedule.build(),
        }
    }

    /// The wait before the next try.
    pub(crate) fn next_delay(&mut self) -> Duration {
        self.delays.next().unwrap_or_default()
    }

    /// Starts again from the first delay.
    pub(crate) fn reset(&mut self) {
        self.delays = self.schedule.build();
    }
}

/// The tries of one call: at most `tries` of them, `schedule`'s delays between them (by failure
/// count, as `nth`), and with `until` a wait that ends at shutdown.
pub(crate) struct Retry<'a> {
    schedule: ExponentialBuilder,
    tries: u32,
    failures: u32,
    stop: Option<&'a CancellationToken>,
}

impl<'a> Retry<'a> {
    /// Up to `tries` calls in all (the first included).
    pub(crate) fn new(schedule: ExponentialBuilder, tries: u32) -> Retry<'a> {
        Retry {
            schedule,
            tries,
            failures: 0,
            stop: None,
        }
    }

    /// Waits end when `stop` is cancelled (`wait` then says so).
    pub(crate) fn until(self, stop: &'a CancellationToken) -> Retry<'a> {
        Retry {
            stop: Some(stop),
            ..self
        }
    }

    /// Counts a failed try: the delay before the next one, `None` when no try is left.
    pub(crate) fn failed(&mut self) -> Option<Duration> {
        self.failures += 1;
        (self.failures < self.tries).then(|| nth(self.schedule, self.failures))
    }

    /// Sleeps `d` (the delay `failed` gave, or one the other side asked for); false if stopped
    /// meanwhile.
    pub(crate) async fn wait(&self, d: Duration) -> bool {
        match self.stop {
            Some(stop) => !sleep_or_stop(d, stop).await,
            None => {
                tokio::time::sleep(d).await;
                true
            }
        }
    }
}

/// `call` until it succeeds or `tries` runs out (or stops), with `again(&error)` before each
/// wait; the last answer.
pub(crate) async fn retry<T, E, Fut>(
    mut tries: Retry<'_>,
    mut call: impl FnMut() -> Fut,
    mut again: impl FnMut(&E),
) -> Result<T, E>
where
    Fut: Future<Output = Result<T, E>>,
{
    loop {
        let e = match call().await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let Some(delay) = tries.failed() else {
            return Err(e);
        };
        again(&e);
        if !tries.wait(delay).await {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(schedule: ExponentialBuilder, n: usize) -> Vec<Duration> {
        let mut b = Backoff::new(schedule);
        (0..n).map(|_| b.next_delay()).collect()
    }

    fn ms(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&m| Duration::from_millis(m)).collect()
    }

    /// The schedules the hand-written loops had: rounding of backon's f32 factor aside, the
    /// same delays.
    #[test]
    fn schedules_double_up_to_their_cap() {
        let close = |a: Vec<Duration>, b: Vec<Duration>| {
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert!(x.abs_diff(*y) < Duration::from_micros(10), "{a:?} != {b:?}");
            }
        };
        close(
            steps(REDIS, 8),
            ms(&[200, 400, 800, 1600, 3200, 6400, 6400, 6400]),
        );
        close(
            steps(POLLING, 7),
            ms(&[1000, 2000, 4000, 8000, 16000, 30000, 30000]),
        );
        close(
            steps(MOVIEPILOT_CONNECT, 8),
            ms(&[1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]),
        );
        close(steps(CALLBACK_ANSWER, 3), ms(&[200, 400, 400]));
        close(
            (1..=8).map(|f| nth(REDIS, f)).collect(),
            ms(&[200, 400, 800, 1600, 3200, 6400, 6400, 6400]),
        );
    }

    #[test]
    fn reset_starts_again_and_a_schedule_never_ends() {
        let mut b = Backoff::new(REDIS);
        b.next_delay();
        b.next_delay();
        b.reset();
        assert_eq!(b.next_delay(), Duration::from_millis(200));

        let mut limited = Backoff::new(REDIS.with_max_times(1));
        limited.next_delay();
        let second = limited.next_delay();
        assert!(second.abs_diff(Duration::from_millis(400)) < Duration::from_micros(10));
        assert_eq!(nth(REDIS.with_max_times(1), 9), Duration::from_millis(6400));
    }

    #[tokio::test(start_paused = true)]
    async fn retry_stops_after_its_tries_or_at_shutdown() {
        let start = tokio::time::Instant::now();
        let mut calls = 0;
        let mut retried = 0;
        let answer: Result<(), u32> = retry(
            Retry::new(REDIS, 3),
            || {
                calls += 1;
                std::future::ready(Err(calls))
            },
            |_| retried += 1,
        )
        .await;
        assert_eq!((answer, calls, retried), (Err(3), 3, 2));
        let waited = start.elapsed();
        assert!(
            waited.abs_diff(Duration::from_millis(600)) < Duration::from_millis(5),
            "{waited:?}"
        );

        let stop = CancellationToken::new();
        stop.cancel();
        let mut calls = 0;
        let answer: Result<(), u32> = retry(
            Retry::new(REDIS, 8).until(&stop),
            || {
                calls += 1;
                std::future::ready(Err(calls))
            },
            |_| {},
        )
        .await;
        assert_eq!((answer, calls), (Err(1), 1));

        let mut ok = Retry::new(REDIS, 2);
        assert_eq!(ok.failed(), Some(nth(REDIS, 1)));
        assert_eq!(ok.failed(), None);
    }

    #[test]
    fn jitter_adds_less_than_one_delay() {
        let (min, max) = (Duration::from_millis(100), Duration::from_millis(800));
        for _ in 0..50 {
            let d = nth(jittered(min, max), 2);
            assert!(d >= Duration::from_millis(200) && d < Duration::from_millis(400));
            assert!(nth(jittered(min, max), 30) < 2 * max);
        }
    }
}
