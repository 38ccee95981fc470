//! The Redis checks: it answers, it keeps its data on disk (RDB snapshots or the AOF), and it
//! may not evict oncebot's keys (`redis_policy`'s judgement of `maxmemory` and
//! `maxmemory-policy`). Reads only (`INFO`, `CONFIG GET`): no script loaded, no key written.

use std::time::Duration;

use super::{Check, within};
use crate::config::{Settings, env_name};
use crate::ledger::{Ledger, MemoryConfig, NodeMemory, NodePersistence, PersistenceConfig};
use crate::redis_policy::{self, NOEVICTION};

const REACHABLE: &str = "redis.reachable";
const PERSISTENCE: &str = "redis.persistence";
const EVICTION: &str = "redis.eviction";

/// Reachable, persistence, eviction; the last two "not checked" when Redis does not answer.
pub(super) async fn checks(settings: &Settings, timeout: Duration) -> Vec<Check> {
    let skipped = |first: Check| {
        let because = "Redis did not answer";
        vec![
            first,
            Check::not_checked(PERSISTENCE, because),
            Check::not_checked(EVICTION, because),
        ]
    };
    let texts = crate::i18n::Texts::new(settings.telegram.locale).for_ledger();
    let ledger = match Ledger::connect(settings, texts) {
        Ok(ledger) => ledger,
        Err(e) => return skipped(Check::fail(REACHABLE, format!("{e:#}"), url_fix())),
    };
    let reachable = match within(timeout, ledger.redis_version()).await {
        Ok(Ok(version)) => {
            let version = version.unwrap_or_else(|| "(version not said)".into());
            let cluster = if settings.redis.cluster {
                " (cluster)"
            } else {
                ""
            };
            Check::pass(REACHABLE, format!("Redis {version}{cluster} answers"))
        }
        Ok(Err(e)) => return skipped(Check::fail(REACHABLE, format!("{e:#}"), url_fix())),
        Err(late) => {
            return skipped(Check::fail(
                REACHABLE,
                format!("Redis gave {late}"),
                url_fix(),
            ));
        }
    };
    let (persistence, eviction) = tokio::join!(
        async {
            match within(timeout, ledger.persistence_config()).await {
                Ok(Ok(nodes)) => persistence(&nodes),
                Ok(Err(e)) => Check::fail(PERSISTENCE, format!("{e:#}"), url_fix()),
                Err(late) => Check::fail(PERSISTENCE, format!("Redis gave {late}"), url_fix()),
            }
        },
        async {
            match within(timeout, ledger.memory_config()).await {
                Ok(Ok(nodes)) => eviction(&nodes, settings.redis.allow_eviction),
                Ok(Err(e)) => Check::fail(EVICTION, format!("{e:#}"), url_fix()),
                Err(late) => Check::fail(EVICTION, format!("Redis gave {late}"), url_fix()),
            }
        },
    );
    vec![reachable, persistence, eviction]
}

fn url_fix() -> String {
    format!(
        "start Redis, or set {} to where it runs (redis://host:6379; with docker-compose.yml: \
         redis://redis:6379)",
        env_name("redis.url")
    )
}

/// ` on node 10.0.0.2:7001` on a cluster, nothing for the one Redis.
fn on(node: Option<&String>) -> String {
    node.map_or_else(String::new, |node| format!(" on node {node}"))
}

/// Every master keeps its data on disk.
fn persistence(nodes: &[NodePersistence]) -> Check {
    let mut kept = Vec::new();
    for n in nodes {
        let on = on(n.node.as_ref());
        match &n.config {
            PersistenceConfig::Read { save, appendonly } => {
                if !appendonly && save.trim().is_empty() {
                    return Check::fail(
                        PERSISTENCE,
                        format!(
                            "Redis keeps nothing on disk{on} (save is empty and appendonly is \
                             no): a restart loses every job, duplicate key and reply record"
                        ),
                        format!(
                            "run `CONFIG SET appendonly yes` and `CONFIG REWRITE`{on} (with \
                             docker-compose.yml: `--appendonly yes` in the redis service's \
                             command)"
                        ),
                    );
                }
                kept.push(match (appendonly, save.trim()) {
                    (true, "") => format!("the append-only file{on}"),
                    (true, save) => format!("the append-only file and snapshots (save {save}){on}"),
                    (false, save) => format!("snapshots (save {save}){on}"),
                });
            }
            PersistenceConfig::Renamed | PersistenceConfig::Refused { .. } => {
                let how = match &n.config {
                    PersistenceConfig::Refused { code } => format!("refused ({code})"),
                    _ => "renamed".to_string(),
                };
                return Check::fail(
                    PERSISTENCE,
                    format!("could not read save and appendonly{on} (CONFIG is {how})"),
                    "make sure Redis keeps its data on disk (RDB snapshots or appendonly yes; on \
                     managed Redis, in its settings): doctor cannot see it here",
                );
            }
        }
    }
    Check::pass(
        PERSISTENCE,
        format!("Redis keeps its data in {}", kept.join("; ")),
    )
}

/// No master may evict oncebot's keys: `maxmemory` set with a policy but `noeviction`.
fn eviction(nodes: &[NodeMemory], allow_eviction: bool) -> Check {
    for n in nodes {
        let how = match &n.config {
            MemoryConfig::Read { .. } => continue,
            MemoryConfig::Renamed => "renamed".to_string(),
            MemoryConfig::Refused { code } => format!("refused ({code})"),
        };
        return Check::fail(
            EVICTION,
            format!(
                "could not read maxmemory-policy{} (CONFIG is {how})",
                on(n.node.as_ref())
            ),
            "make sure maxmemory-policy is noeviction (on managed Redis, in its settings): \
             doctor cannot see it here",
        );
    }
    let judgement = redis_policy::judge(nodes);
    if let Some(evicting) = judgement.evicting {
        let allowed = if allow_eviction {
            " (redis.allow_eviction is on, so oncebot starts anyway)"
        } else {
            ""
        };
        return Check::fail(
            EVICTION,
            format!(
                "Redis may evict oncebot's keys ({}): under memory pressure it drops keys, and a \
                 lost job, duplicate key or reply record lets a command run twice or be lost{allowed}",
                evicting.settings()
            ),
            evicting.fix(),
        );
    }
    Check::pass(EVICTION, never_evicts(nodes))
}

/// A passed eviction check's detail: each master's settings, and a word where only the missing
/// `maxmemory` keeps Redis from evicting.
fn never_evicts(nodes: &[NodeMemory]) -> String {
    let settings: Vec<String> = nodes
        .iter()
        .filter_map(|n| match &n.config {
            MemoryConfig::Read { maxmemory, policy } => Some(format!(
                "maxmemory-policy {policy}, {}{}",
                match maxmemory {
                    0 => "no maxmemory".to_string(),
                    m => format!("maxmemory {}", redis_policy::size(*m)),
                },
                on(n.node.as_ref())
            )),
            _ => None,
        })
        .collect();
    let mut detail = format!(
        "Redis never evicts oncebot's keys ({})",
        settings.join("; ")
    );
    let evicting_policy = |n: &NodeMemory| !matches!(&n.config, MemoryConfig::Read { policy, .. } if policy == NOEVICTION);
    if nodes.iter().any(evicting_policy) {
        detail.push_str(
            "; set maxmemory-policy to noeviction too, or a maxmemory set later lets it evict",
        );
    }
    detail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(maxmemory: u64, policy: &str) -> NodeMemory {
        NodeMemory {
            node: None,
            config: MemoryConfig::Read {
                maxmemory,
                policy: policy.into(),
            },
        }
    }

    fn kept(save: &str, appendonly: bool) -> NodePersistence {
        NodePersistence {
            node: None,
            config: PersistenceConfig::Read {
                save: save.into(),
                appendonly,
            },
        }
    }

    #[test]
    fn an_evicting_policy_fails_with_its_fix_and_no_limit_passes() {
        let lru = eviction(&[memory(100 << 20, "allkeys-lru")], false);
        assert!(!lru.ok);
        assert!(
            lru.detail
                .contains("maxmemory-policy allkeys-lru, maxmemory 100mb"),
            "{lru:?}"
        );
        assert!(
            lru.fix
                .unwrap()
                .contains("CONFIG SET maxmemory-policy noeviction")
        );
        let fine = eviction(&[memory(100 << 20, NOEVICTION)], false);
        assert!(fine.ok, "{fine:?}");
        let unlimited = eviction(&[memory(0, "allkeys-lru")], false);
        assert!(unlimited.ok, "{unlimited:?}");
        assert!(
            unlimited.detail.contains("allkeys-lru, no maxmemory"),
            "{unlimited:?}"
        );
        assert!(
            unlimited
                .detail
                .contains("set maxmemory-policy to noeviction too")
        );
        let renamed = NodeMemory {
            node: Some("10.0.0.1:7000".into()),
            config: MemoryConfig::Renamed,
        };
        let unread = eviction(&[renamed], false);
        assert!(!unread.ok);
        assert!(
            unread.detail.contains("on node 10.0.0.1:7000"),
            "{unread:?}"
        );
    }

    #[test]
    fn persistence_needs_snapshots_or_the_aof_on_every_master() {
        assert!(persistence(&[kept("3600 1", false)]).ok);
        assert!(persistence(&[kept("", true)]).ok);
        let lost = persistence(&[kept("", false)]);
        assert!(!lost.ok);
        assert!(lost.fix.unwrap().contains("CONFIG SET appendonly yes"));
    }
}
