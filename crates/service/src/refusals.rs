//! Refused requests at oncebot's doors, logged at most once a second per peer with how many went
//! unlogged, and counted (`oncebot_http_rejected_total{route, reason}`).
//!
//! Why: every wrong secret on the webhook and the relay's wake-up path used to write its own
//! WARN line: two runs of about 13,000 guesses in 2 s wrote 1.8 and 1.5 MB of log, which buries
//! what an operator needs at 3 a.m. and fills a small disk. The count stays exact in the metric.
//!
//! A peer is the connection's address (an IPv6 one by its /64, which one host usually has whole);
//! behind a proxy every client shares the proxy's. The table holds at most [`MAX_PEERS`]; when it
//! is full of recent entries, new peers share one, so memory stays bounded and a flood of
//! addresses gains nothing.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::metrics::METRICS;

/// Peers remembered at once.
pub const MAX_PEERS: usize = 4096;
/// Least time between two log lines about one peer's refusals.
pub const LOG_EVERY: Duration = Duration::from_secs(1);

/// Who a refusal is counted against: an IPv4 address, an IPv6 /64, or everyone once a table is
/// full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeerKey {
    V4(u32),
    V6(u64),
    Unknown,
    Overflow,
}

impl PeerKey {
    pub fn of(peer: Option<IpAddr>) -> PeerKey {
        match peer.map(|ip| ip.to_canonical()) {
            Some(IpAddr::V4(v4)) => PeerKey::V4(u32::from(v4)),
            Some(IpAddr::V6(v6)) => PeerKey::V6((u128::from(v6) >> 64) as u64),
            None => PeerKey::Unknown,
        }
    }
}

/// Why a door refused a request: the `reason` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A missing or wrong secret (401 on the webhook, 404 on the wake-up path).
    Secret,
    /// A body over the limit (413).
    TooLarge,
    /// A body that is no Telegram update, or broke off (400).
    BadRequest,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Secret => "secret",
            Reason::TooLarge => "too_large",
            Reason::BadRequest => "bad_request",
        }
    }
}

/// One peer's log lines, at most one a [`LOG_EVERY`]: whether the next refusal is logged, and
/// how many since the last line were not.
#[derive(Debug, Default)]
pub struct LogGate {
    last_logged: Option<Instant>,
    unlogged: u64,
}

impl LogGate {
    /// `Some(unlogged)` when a line is to be logged at `now`, with how many went unlogged since
    /// the last one; `None` (counted) inside [`LOG_EVERY`] of it.
    pub fn pass(&mut self, now: Instant) -> Option<u64> {
        if self.logged_within(now) {
            self.unlogged += 1;
            return None;
        }
        self.last_logged = Some(now);
        Some(std::mem::take(&mut self.unlogged))
    }

    /// A line went out less than [`LOG_EVERY`] before `now`.
    fn logged_within(&self, now: Instant) -> bool {
        self.last_logged
            .is_some_and(|at| now.duration_since(at) < LOG_EVERY)
    }
}

/// The key `peer` is kept under in a table of at most [`MAX_PEERS`] entries: its own, unless
/// it has none and the table is full of entries `live` keeps (the others are dropped first),
/// when it shares [`PeerKey::Overflow`].
pub fn table_key<E>(
    peers: &mut HashMap<PeerKey, E>,
    peer: PeerKey,
    live: impl Fn(&E) -> bool,
) -> PeerKey {
    if peers.contains_key(&peer) || peers.len() < MAX_PEERS {
        return peer;
    }
    peers.retain(|_, e| live(e));
    if peers.len() >= MAX_PEERS {
        PeerKey::Overflow
    } else {
        peer
    }
}

/// One door's refusals (`route`, the metric's label), shared by its requests.
#[derive(Debug)]
pub struct RefusalLog {
    route: &'static str,
    peers: Mutex<HashMap<PeerKey, LogGate>>,
}

impl RefusalLog {
    pub fn new(route: &'static str) -> RefusalLog {
        RefusalLog {
            route,
            peers: Mutex::default(),
        }
    }

    /// Counts a refusal from `peer`; `Some(unlogged)` when a line is to be logged now, with how
    /// many of this peer's refusals since the last line were not.
    pub fn refused(&self, peer: Option<IpAddr>, reason: Reason) -> Option<u64> {
        METRICS.http_rejected(self.route, reason.as_str());
        let now = Instant::now();
        // Plain counters: a panic elsewhere cannot leave them inconsistent.
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        let key = table_key(&mut peers, PeerKey::of(peer), |gate| {
            gate.logged_within(now)
        });
        peers.entry(key).or_default().pass(now)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.peers.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    const A: Option<IpAddr> = Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)));
    const B: Option<IpAddr> = Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)));

    #[tokio::test(start_paused = true)]
    async fn one_line_a_second_per_peer_with_the_rest_counted() {
        let log = RefusalLog::new("test");
        assert_eq!(log.refused(A, Reason::Secret), Some(0));
        for _ in 0..7 {
            assert_eq!(log.refused(A, Reason::Secret), None);
        }
        assert_eq!(log.refused(B, Reason::Secret), Some(0), "per peer");
        tokio::time::advance(LOG_EVERY).await;
        assert_eq!(log.refused(A, Reason::TooLarge), Some(7));
        assert_eq!(log.refused(A, Reason::Secret), None);
    }

    #[tokio::test(start_paused = true)]
    async fn the_table_stays_bounded_and_a_flood_of_addresses_shares_one_entry() {
        let log = RefusalLog::new("test");
        for n in 0..(MAX_PEERS as u32 + 100) {
            log.refused(
                Some(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n))),
                Reason::Secret,
            );
        }
        assert_eq!(log.len(), MAX_PEERS + 1);
        // Once the old entries are a second old they make room again.
        tokio::time::advance(LOG_EVERY).await;
        assert_eq!(log.refused(B, Reason::Secret), Some(0));
        assert!(log.len() <= 2, "{}", log.len());
    }

    #[test]
    fn an_ipv6_peer_is_its_64_and_a_mapped_ipv4_is_the_ipv4() {
        let one: Ipv6Addr = "2001:db8:1:2::1".parse().unwrap();
        let two: Ipv6Addr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other: Ipv6Addr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(PeerKey::of(Some(one.into())), PeerKey::of(Some(two.into())));
        assert_ne!(
            PeerKey::of(Some(one.into())),
            PeerKey::of(Some(other.into()))
        );
        let mapped: Ipv6Addr = "::ffff:192.0.2.1".parse().unwrap();
        assert_eq!(PeerKey::of(Some(mapped.into())), PeerKey::of(A));
    }
}
