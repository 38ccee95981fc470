//! Every wait before trying again, in one place: each schedule is a `backon` exponential
//! builder (doubling from its first delay up to its cap), named for what it retries, and read
//! either as a `Backoff` that a loop steps and resets, or by failure count with `nth`.

use std::time::Duration;

use backon::{BackoffBuilder as _, ExponentialBuilder};

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
