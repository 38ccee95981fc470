//! Online guessing of the page's password, slowed per peer: the first [`FREE_MISSES`] misses
//! are answered at once (a person mistyping), after that the peer gets at most
//! [`VERDICTS_PER_SECOND`] verdicts on its credentials, right or wrong (a right one must not
//! answer faster than a wrong one, or the speed would tell), each delayed to its turn or, past
//! [`MAX_DELAY`] of waiting, refused with 429 and `Retry-After`. The slow-down ends
//! [`FORGET_AFTER`] after the peer's last miss. Misses are logged with the peer, at most once a
//! second per peer, with how many were not logged.
//!
//! A peer is the connection's address (an IPv6 one by its /64, which one host usually has
//! whole); behind a proxy every client shares the proxy's, so they are slowed together. The
//! table holds at most [`MAX_PEERS`]; when it is full of live entries, new peers share one
//! entry, so memory stays bounded and a flood of addresses gains nothing.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::refusals::{LogGate, PeerKey, table_key};

/// Misses answered at once before the slow-down starts.
pub const FREE_MISSES: u32 = 5;
/// Verdicts a slowed peer gets per second.
pub const VERDICTS_PER_SECOND: u32 = 10;
/// The slow-down ends this long after the peer's last miss.
pub const FORGET_AFTER: Duration = Duration::from_secs(10);
/// The longest a request waits for its turn; past it the answer is 429.
pub const MAX_DELAY: Duration = Duration::from_secs(1);
/// Peers remembered at once.
pub const MAX_PEERS: usize = crate::refusals::MAX_PEERS;
#[derive(Debug)]
struct Entry {
    misses: u32,
    last_miss: Instant,
    /// The earliest a slowed peer's next verdict may be given.
    next_verdict: Instant,
    log: LogGate,
}

impl Entry {
    fn live(&self, now: Instant) -> bool {
        now.duration_since(self.last_miss) <= FORGET_AFTER
    }
}

/// When a request with credentials may have its verdict.
#[derive(Debug, PartialEq, Eq)]
pub enum Turn {
    Now,
    After(Duration),
    /// Too many waiting already: 429, try again after this.
    Refused(Duration),
}

/// A miss to log now: the peer's misses inside the slow-down, and how many since the last line
/// went unlogged.
#[derive(Debug, PartialEq, Eq)]
pub struct LogMiss {
    pub misses: u32,
    pub unlogged: u64,
}

/// The per-peer table, shared by every request of one page.
#[derive(Debug, Default)]
pub struct Throttle {
    peers: Mutex<HashMap<PeerKey, Entry>>,
}

impl Throttle {
    fn peers(&self) -> std::sync::MutexGuard<'_, HashMap<PeerKey, Entry>> {
        self.peers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes `peer`'s turn for a verdict on its credentials.
    pub fn turn(&self, peer: Option<IpAddr>) -> Turn {
        let now = Instant::now();
        let mut peers = self.peers();
        let key = resolve(&peers, PeerKey::of(peer), now);
        let Some(entry) = peers.get_mut(&key) else {
            return Turn::Now;
        };
        if !entry.live(now) {
            peers.remove(&key);
            return Turn::Now;
        }
        if entry.misses < FREE_MISSES {
            return Turn::Now;
        }
        let slot = entry.next_verdict.max(now);
        let wait = slot - now;
        if wait > MAX_DELAY {
            return Turn::Refused(wait - MAX_DELAY + Duration::from_secs(1));
        }
        entry.next_verdict = slot + Duration::from_secs(1) / VERDICTS_PER_SECOND;
        if wait.is_zero() {
            Turn::Now
        } else {
            Turn::After(wait)
        }
    }

    /// Records a wrong user or password from `peer`; says whether to log it now.
    pub fn missed(&self, peer: Option<IpAddr>) -> Option<LogMiss> {
        let now = Instant::now();
        let mut peers = self.peers();
        let key = resolve(&peers, PeerKey::of(peer), now);
        let key = table_key(&mut peers, key, |e| e.live(now));
        let entry = peers.entry(key).or_insert(Entry {
            misses: 0,
            last_miss: now,
            next_verdict: now,
            log: LogGate::default(),
        });
        if !entry.live(now) {
            entry.misses = 0;
        }
        entry.misses += 1;
        entry.last_miss = now;
        let unlogged = entry.log.pass(now)?;
        Some(LogMiss {
            misses: entry.misses,
            unlogged,
        })
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.peers().len()
    }
}

/// A peer without an entry of its own shares the overflow entry while that one lives (the
/// table was full when it first missed).
fn resolve(peers: &HashMap<PeerKey, Entry>, key: PeerKey, now: Instant) -> PeerKey {
    if !peers.contains_key(&key)
        && peers.len() >= MAX_PEERS
        && peers.get(&PeerKey::Overflow).is_some_and(|e| e.live(now))
    {
        PeerKey::Overflow
    } else {
        key
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::refusals::LOG_EVERY;

    const A: Option<IpAddr> = Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)));
    const B: Option<IpAddr> = Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)));

    #[tokio::test(start_paused = true)]
    async fn five_misses_are_free_then_ten_verdicts_a_second_then_429() {
        let t = Throttle::default();
        for _ in 0..FREE_MISSES {
            assert_eq!(t.turn(A), Turn::Now);
            t.missed(A);
        }
        // Slowed: one verdict now, the next ones 100 ms apart, up to a second of waiting.
        assert_eq!(t.turn(A), Turn::Now);
        for n in 1..=10 {
            assert_eq!(t.turn(A), Turn::After(Duration::from_millis(100 * n)));
        }
        assert!(matches!(t.turn(A), Turn::Refused(_)));
        // Another peer is not slowed.
        assert_eq!(t.turn(B), Turn::Now);
    }

    #[tokio::test(start_paused = true)]
    async fn the_slow_down_ends_ten_seconds_after_the_last_miss() {
        let t = Throttle::default();
        for _ in 0..FREE_MISSES {
            t.missed(A);
        }
        tokio::time::advance(FORGET_AFTER - Duration::from_secs(1)).await;
        t.missed(A);
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(t.turn(A), Turn::Now);
        assert_eq!(
            t.turn(A),
            Turn::After(Duration::from_millis(100)),
            "still slowed 9 s after the last miss"
        );
        tokio::time::advance(Duration::from_millis(1100)).await;
        assert_eq!(t.turn(A), Turn::Now);
        assert_eq!(t.turn(A), Turn::Now, "forgotten");
        assert_eq!(t.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn misses_are_logged_at_most_once_a_second_per_peer_with_the_rest_counted() {
        let t = Throttle::default();
        assert_eq!(
            t.missed(A),
            Some(LogMiss {
                misses: 1,
                unlogged: 0
            })
        );
        for _ in 0..7 {
            assert_eq!(t.missed(A), None);
        }
        assert!(t.missed(B).is_some(), "per peer");
        tokio::time::advance(LOG_EVERY).await;
        assert_eq!(
            t.missed(A),
            Some(LogMiss {
                misses: 9,
                unlogged: 7
            })
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_table_stays_bounded_and_a_flood_of_addresses_shares_one_entry() {
        let t = Throttle::default();
        for n in 0..(MAX_PEERS as u32 + 100) {
            t.missed(Some(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n))));
        }
        assert_eq!(
            t.len(),
            MAX_PEERS + 1,
            "the full table and the shared entry"
        );
        // The 100 addresses past the table share one entry, which is slowed after five misses.
        let late = Some(IpAddr::V4(Ipv4Addr::from(0x0b00_0000)));
        assert_eq!(t.turn(late), Turn::Now);
        assert_eq!(t.turn(late), Turn::After(Duration::from_millis(100)));
        // Once the entries are forgotten, room is made again.
        tokio::time::advance(FORGET_AFTER + Duration::from_secs(1)).await;
        t.missed(late);
        assert_eq!(t.len(), 1);
    }
}
