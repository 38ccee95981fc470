//! Whether Redis may evict oncebot's keys, and what oncebot does about it.
//!
//! Many images and hosting defaults run Redis as a cache: with `maxmemory` set and a policy
//! such as `allkeys-lru`, Redis silently drops keys under memory pressure. For oncebot a dropped
//! job, duplicate key (`cmd:`) or reply record is "once" gone without a word: a command could run
//! twice, or be lost. So the ledger's `maxmemory` and `maxmemory-policy` (`Ledger::memory_config`,
//! every master of a cluster) are judged here ([`judge`], pure):
//!
//! - `maxmemory` > 0 and any policy but `noeviction`: start-up stops with one line
//!   ([`EvictionRefused`], exit 2) naming the policy, why it breaks "once" and the fix; found
//!   while running ([`run`], every `redis.policy_check_secs`), the [`Watch`] makes ingress answer
//!   503 (Telegram keeps the updates, polling does not advance) and `/readyz` say why, until it
//!   is fixed. `redis.allow_eviction` turns both into a warning at each start.
//! - `maxmemory` 0 with an evicting policy: nothing is evicted yet; a warning.
//! - `CONFIG` renamed or refused (managed Redis): a warning, and oncebot goes on.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::{RedisSettings, env_name};
use crate::ledger::{Ledger, MemoryConfig, NodeMemory};
use crate::shutdown::sleep_or_stop;

/// The one policy under which Redis never drops a key: writes are refused instead.
pub const NOEVICTION: &str = "noeviction";

/// A node whose settings let Redis evict oncebot's keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evicting {
    pub policy: String,
    pub maxmemory: u64,
    /// The master's address on a cluster; `None` for the one Redis.
    pub node: Option<String>,
}

impl Evicting {
    /// `maxmemory-policy allkeys-lru, maxmemory 100mb, on node 10.0.0.2:7001`
    pub fn settings(&self) -> String {
        let mut s = format!(
            "maxmemory-policy {}, maxmemory {}",
            self.policy,
            size(self.maxmemory)
        );
        if let Some(node) = &self.node {
            s.push_str(&format!(", on node {node}"));
        }
        s
    }

    /// What the operator runs: on the node named, where there are several.
    pub fn fix(&self) -> String {
        let on = if self.node.is_some() {
            " on that node"
        } else {
            ""
        };
        format!(
            "run `CONFIG SET maxmemory-policy noeviction` and `CONFIG REWRITE`{on} (with \
             docker-compose.yml: `--maxmemory-policy noeviction` in the redis service's command)"
        )
    }

    /// The reason `/readyz` gives: fixed words, the policy only when it is one of Redis's
    /// (the probe needs no auth, so no node address).
    pub fn public_reason(&self) -> String {
        let policy = if is_policy_name(&self.policy) {
            self.policy.as_str()
        } else {
            "not noeviction"
        };
        format!("Redis may evict oncebot's keys (maxmemory-policy {policy}): set it to noeviction")
    }
}

/// Start-up stops on a Redis that may evict: the one line `main` prints (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Redis may evict oncebot's keys ({}): under memory pressure it silently drops keys, and a lost \
     job, duplicate key or reply record lets a command run twice or be lost. Fix: {}; or set {}=true \
     to go on anyway",
    .0.settings(),
    .0.fix(),
    env_name("redis.allow_eviction")
)]
pub struct EvictionRefused(pub Evicting);

/// What the memory settings of every master mean for oncebot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Judgement {
    /// The first node (by address) that may evict.
    pub evicting: Option<Evicting>,
    /// A line each for what does not stop oncebot but an operator should know.
    pub warnings: Vec<String>,
}

/// Judges every master's answer (pure).
pub fn judge(nodes: &[NodeMemory]) -> Judgement {
    let mut judgement = Judgement::default();
    for n in nodes {
        let on = n
            .node
            .as_ref()
            .map_or_else(String::new, |node| format!(" on node {node}"));
        match &n.config {
            MemoryConfig::Read { policy, .. } if policy == NOEVICTION => {}
            MemoryConfig::Read {
                maxmemory: 0,
                policy,
            } => judgement.warnings.push(format!(
                "Redis's maxmemory-policy is {policy}{on} with maxmemory 0: nothing is evicted \
                 while maxmemory is 0, but if someone sets it, Redis may drop oncebot's keys and a \
                 command could run twice or be lost; set maxmemory-policy to noeviction \
                 (`CONFIG SET maxmemory-policy noeviction` and `CONFIG REWRITE`)"
            )),
            MemoryConfig::Read { maxmemory, policy } => {
                judgement.evicting.get_or_insert_with(|| Evicting {
                    policy: policy.clone(),
                    maxmemory: *maxmemory,
                    node: n.node.clone(),
                });
            }
            MemoryConfig::Renamed => judgement.warnings.push(unreadable(&on, "renamed")),
            MemoryConfig::Refused { code } => {
                judgement
                    .warnings
                    .push(unreadable(&on, &format!("refused ({code})")));
            }
        }
    }
    judgement
}

fn unreadable(on: &str, how: &str) -> String {
    format!(
        "could not read Redis's maxmemory-policy{on} (CONFIG is {how}, as on managed Redis): make \
         sure maxmemory-policy is noeviction, or Redis may drop oncebot's keys under memory \
         pressure; going on without the check"
    )
}

/// `maxmemory` as Redis's own units write it where they fit (`100mb`), else in bytes.
pub fn size(bytes: u64) -> String {
    const MB: u64 = 1024 * 1024;
    match bytes {
        b if b >= 1024 * MB && b % (1024 * MB) == 0 => format!("{}gb", b / (1024 * MB)),
        b if b >= MB && b % MB == 0 => format!("{}mb", b / MB),
        b => format!("{b} bytes"),
    }
}

/// A name as Redis spells its policies (`allkeys-lru`, `volatile-ttl`): nothing else is shown
/// on an unauthenticated probe.
fn is_policy_name(policy: &str) -> bool {
    !policy.is_empty()
        && policy.len() <= 32
        && policy.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
}

/// What this process last found live: shared by the live check ([`run`]), ingress's doors and
/// `/readyz`. Nothing found (or `redis.allow_eviction`): `None`.
#[derive(Clone, Default)]
pub struct Watch(Arc<RwLock<Option<Evicting>>>);

impl Watch {
    /// The node that may evict, while one does (and eviction is not allowed).
    pub fn evicting(&self) -> Option<Evicting> {
        self.0.read().map_or(None, |e| e.clone())
    }

    /// Records what the last read found; the previous finding.
    fn set(&self, now: Option<Evicting>) -> Option<Evicting> {
        match self.0.write() {
            Ok(mut found) => std::mem::replace(&mut *found, now),
            Err(_) => None,
        }
    }
}

/// How the start-up check ended, for the live check to go on from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtStart {
    /// The settings were read (and allowed).
    Read,
    /// Redis did not answer: the live check reads at once.
    NotRead,
}

/// The check at start-up: a Redis that may evict stops it ([`EvictionRefused`]) unless
/// `redis.allow_eviction`; every other finding is a warning. A Redis that does not answer
/// within `wait` is left to the live check.
pub async fn check_at_start(
    ledger: &Ledger,
    settings: &RedisSettings,
    wait: Duration,
) -> Result<AtStart, EvictionRefused> {
    let nodes = match tokio::time::timeout(wait, ledger.memory_config()).await {
        Ok(Ok(nodes)) => nodes,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "could not read Redis's maxmemory-policy yet; checking again while running");
            return Ok(AtStart::NotRead);
        }
        Err(_) => {
            tracing::warn!(
                "Redis did not say its maxmemory-policy in time; checking again while running"
            );
            return Ok(AtStart::NotRead);
        }
    };
    let judgement = judge(&nodes);
    for warning in &judgement.warnings {
        tracing::warn!("{warning}");
    }
    match judgement.evicting {
        Some(evicting) if !settings.allow_eviction => Err(EvictionRefused(evicting)),
        Some(evicting) => {
            tracing::warn!(
                "Redis may evict oncebot's keys ({}), and {}=true goes on anyway: under memory \
                 pressure a command could run twice or be lost",
                evicting.settings(),
                env_name("redis.allow_eviction")
            );
            Ok(AtStart::Read)
        }
        None => Ok(AtStart::Read),
    }
}

/// How soon the live check tries again while it has never read the settings (Redis was down at
/// start): an evicting Redis should not go unseen for a whole `redis.policy_check_secs`.
const UNREAD_RETRY: Duration = Duration::from_secs(5);

/// The live check (every process, unless `redis.allow_eviction`): reads the settings every
/// `every` (at once first when start-up could not, then every few seconds until a read works)
/// into `watch`, with one log line when an evicting policy is found and one when it is gone. A
/// Redis that does not answer changes nothing: the last finding holds until a read says
/// otherwise.
pub async fn run(
    ledger: Ledger,
    watch: Watch,
    every: Duration,
    at_start: AtStart,
    stop: CancellationToken,
) {
    let mut read_once = at_start == AtStart::Read;
    let mut wait = if read_once { every } else { Duration::ZERO };
    loop {
        if sleep_or_stop(wait, &stop).await {
            return;
        }
        let nodes = match ledger.memory_config().await {
            Ok(nodes) => nodes,
            Err(e) => {
                tracing::debug!(error = %e, "could not read Redis's maxmemory-policy; trying again later");
                wait = if read_once {
                    every
                } else {
                    every.min(UNREAD_RETRY)
                };
                continue;
            }
        };
        read_once = true;
        wait = every;
        let now = judge(&nodes).evicting;
        let before = watch.set(now.clone());
        match (before, now) {
            (before, Some(now)) if before.as_ref() != Some(&now) => tracing::warn!(
                "Redis may evict oncebot's keys ({}): the webhook answers 503 and polling waits \
                 until it is fixed: {}",
                now.settings(),
                now.fix()
            ),
            (Some(_), None) => tracing::info!(
                "Redis's maxmemory-policy no longer evicts oncebot's keys: admitting updates again"
            ),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(node: Option<&str>, maxmemory: u64, policy: &str) -> NodeMemory {
        NodeMemory {
            node: node.map(str::to_string),
            config: MemoryConfig::Read {
                maxmemory,
                policy: policy.into(),
            },
        }
    }

    #[test]
    fn a_limit_with_any_policy_but_noeviction_evicts() {
        let j = judge(&[node(None, 100 << 20, "allkeys-lru")]);
        let e = j.evicting.clone().unwrap();
        assert_eq!((e.policy.as_str(), e.maxmemory), ("allkeys-lru", 100 << 20));
        assert!(j.warnings.is_empty());
        let line = EvictionRefused(e).to_string();
        for words in [
            "maxmemory-policy allkeys-lru, maxmemory 100mb",
            "run twice or be lost",
            "CONFIG SET maxmemory-policy noeviction",
            "CONFIG REWRITE",
            "--maxmemory-policy noeviction",
            "ONCEBOT__REDIS__ALLOW_EVICTION=true",
        ] {
            assert!(line.contains(words), "{words:?} not in {line}");
        }
        assert!(!line.contains('\n'));
        for policy in [
            "volatile-lru",
            "allkeys-random",
            "volatile-ttl",
            "allkeys-lfu",
        ] {
            assert!(
                judge(&[node(None, 1, policy)]).evicting.is_some(),
                "{policy}"
            );
        }
        assert_eq!(
            judge(&[node(None, 100 << 20, NOEVICTION)]),
            Judgement::default()
        );
        assert_eq!(judge(&[node(None, 0, NOEVICTION)]), Judgement::default());
    }

    #[test]
    fn no_limit_warns_and_unreadable_settings_warn_saying_which() {
        let j = judge(&[node(None, 0, "allkeys-lru")]);
        assert_eq!(j.evicting, None);
        assert!(j.warnings[0].contains("nothing is evicted while maxmemory is 0"));
        let j = judge(&[
            NodeMemory {
                node: None,
                config: MemoryConfig::Renamed,
            },
            NodeMemory {
                node: Some("10.0.0.3:7002".into()),
                config: MemoryConfig::Refused {
                    code: "NOPERM".into(),
                },
            },
        ]);
        assert_eq!(j.evicting, None);
        assert!(
            j.warnings[0].contains("CONFIG is renamed"),
            "{:?}",
            j.warnings
        );
        assert!(
            j.warnings[1].contains("CONFIG is refused (NOPERM)"),
            "{:?}",
            j.warnings
        );
        assert!(j.warnings[1].contains("on node 10.0.0.3:7002"));
        assert!(j.warnings[1].contains("make sure maxmemory-policy is noeviction"));
    }

    #[test]
    fn on_a_cluster_the_line_names_the_node_and_the_probe_does_not() {
        let j = judge(&[
            node(Some("10.0.0.1:7000"), 0, NOEVICTION),
            node(Some("10.0.0.2:7001"), 1 << 30, "volatile-lru"),
        ]);
        let e = j.evicting.unwrap();
        let line = EvictionRefused(e.clone()).to_string();
        assert!(
            line.contains("maxmemory 1gb, on node 10.0.0.2:7001"),
            "{line}"
        );
        assert!(line.contains("on that node"), "{line}");
        assert_eq!(
            e.public_reason(),
            "Redis may evict oncebot's keys (maxmemory-policy volatile-lru): set it to noeviction"
        );
        let odd = Evicting {
            policy: "<b>".into(),
            ..e
        };
        assert!(!odd.public_reason().contains("<b>"));
    }

    #[test]
    fn sizes_read_as_redis_writes_them() {
        assert_eq!(size(100 << 20), "100mb");
        assert_eq!(size(2 << 30), "2gb");
        assert_eq!(size(1000), "1000 bytes");
    }
}
