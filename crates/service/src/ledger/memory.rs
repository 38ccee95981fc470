//! Redis's own settings, as oncebot judges them: what Redis does when it runs out of memory
//! (`maxmemory` and `maxmemory-policy`) and whether it keeps its data on disk (`save`,
//! `appendonly`), read with `CONFIG GET` on every master (the one server, or each master of a
//! cluster: a ledger that lives on one slot today may live on another after a resharding, so
//! every master counts); and the server's version (`INFO server`).
//!
//! Reading only: the ledger never changes Redis's settings. What the values mean for "once" is
//! `redis_policy`'s judgement (and `oncebot doctor`'s); here a node's answer is only told apart
//! from its refusal, because the operator's next step differs: a renamed `CONFIG` (managed
//! Redis hides it) cannot be asked at all, a refused one (ACL `NOPERM`) could be with more
//! rights.

use std::collections::{BTreeMap, HashMap};

use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
use redis::{FromRedisValue as _, Value};

use super::{Conn, Ledger, LedgerError};

/// One master's memory settings, or why they could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeMemory {
    /// The node's address on a cluster (`host:port`, as the cluster names it); `None` for the
    /// one Redis of a standalone deployment.
    pub node: Option<String>,
    pub config: MemoryConfig,
}

/// What `CONFIG GET maxmemory*` told of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryConfig {
    /// `maxmemory` in bytes (0: no limit) and `maxmemory-policy` as Redis spells it.
    Read { maxmemory: u64, policy: String },
    /// The node does not know `CONFIG`: renamed or disabled (`rename-command CONFIG ""`), as
    /// managed Redis services do.
    Renamed,
    /// The node refused it: `NOPERM` (an ACL without `+config|get`) or another error, whose
    /// code (never the node's text, which may name users) is kept; or an answer without the
    /// two settings (a proxy's), said in a few fixed words.
    Refused { code: String },
}

/// One master's persistence settings, or why they could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePersistence {
    /// As [`NodeMemory::node`].
    pub node: Option<String>,
    pub config: PersistenceConfig,
}

/// What `CONFIG GET save` and `CONFIG GET appendonly` told of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PersistenceConfig {
    /// `save` as Redis spells it (`3600 1 300 100 60 10000`; empty: no RDB snapshots) and
    /// whether the append-only file is on.
    Read { save: String, appendonly: bool },
    /// As [`MemoryConfig::Renamed`].
    Renamed,
    /// As [`MemoryConfig::Refused`].
    Refused { code: String },
}

impl PersistenceConfig {
    /// Redis keeps its data across a restart: RDB snapshots or the AOF are on.
    pub fn persists(&self) -> Option<bool> {
        match self {
            PersistenceConfig::Read { save, appendonly } => {
                Some(*appendonly || !save.trim().is_empty())
            }
            _ => None,
        }
    }
}

/// One node's answer to a `CONFIG GET`: its pairs, or why it gave none.
type Answer = Result<HashMap<String, String>, Unread>;

/// Why a node did not say its settings.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unread {
    Renamed,
    Refused { code: String },
}

impl Ledger {
    /// `CONFIG GET maxmemory*` on every master. An error is Redis not answering at all (or the
    /// cluster having no master reachable); a node that answers with an error is a value.
    pub async fn memory_config(&self) -> Result<Vec<NodeMemory>, LedgerError> {
        let nodes = self
            .config_get("maxmemory*", "reading maxmemory and maxmemory-policy")
            .await?;
        Ok(nodes
            .into_iter()
            .map(|(node, answer)| NodeMemory {
                node,
                config: memory_of(answer),
            })
            .collect())
    }

    /// `CONFIG GET save` and `CONFIG GET appendonly` on every master (two commands: Redis
    /// before 7 takes one name per `CONFIG GET`). Errors as for [`Ledger::memory_config`].
    pub async fn persistence_config(&self) -> Result<Vec<NodePersistence>, LedgerError> {
        const DOING: &str = "reading save and appendonly";
        let save = self.config_get("save", DOING).await?;
        let mut aof: BTreeMap<Option<String>, Answer> = self
            .config_get("appendonly", DOING)
            .await?
            .into_iter()
            .collect();
        Ok(save
            .into_iter()
            .map(|(node, save)| {
                let appendonly = aof.remove(&node).unwrap_or(Err(Unread::Refused {
                    code: "no answer".into(),
                }));
                let config = persistence_of(save, appendonly);
                NodePersistence { node, config }
            })
            .collect())
    }

    /// The server's version (`redis_version` from `INFO server`; on a cluster, the home slot's
    /// master's). `None` when the answer does not say it.
    pub async fn redis_version(&self) -> Result<Option<String>, LedgerError> {
        let mut cmd = redis::cmd("INFO");
        cmd.arg("server");
        let info: String = cmd
            .query_async(&mut self.conn.clone())
            .await
            .map_err(LedgerError::redis("reading the server's version"))?;
        Ok(info.lines().find_map(|line| {
            let version = line.trim().strip_prefix("redis_version:")?;
            Some(
                crate::untrusted::clean_line(version)
                    .chars()
                    .take(32)
                    .collect(),
            )
        }))
    }

    /// `CONFIG GET <pattern>` on every master, by node (sorted; `None` for the one Redis).
    async fn config_get(
        &self,
        pattern: &str,
        doing: &'static str,
    ) -> Result<Vec<(Option<String>, Answer)>, LedgerError> {
        let mut cmd = redis::cmd("CONFIG");
        cmd.arg("GET").arg(pattern);
        match self.conn.clone() {
            Conn::Cluster(mut c, _) => {
                let every_master =
                    RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None));
                let answer = c
                    .route_command(cmd, every_master)
                    .await
                    .map_err(LedgerError::redis(doing))?;
                per_node(answer).map_err(|detail| LedgerError::Corrupt { doing, detail })
            }
            mut conn => {
                let answer: redis::RedisResult<Value> = cmd.query_async(&mut conn).await;
                let answer = match answer {
                    Ok(value) => read(value),
                    Err(e) => match e.code() {
                        Some(code) if e.kind() != redis::ErrorKind::Io => {
                            Err(refusal(code, e.detail()))
                        }
                        _ => return Err(LedgerError::redis(doing)(e)),
                    },
                };
                Ok(vec![(None, answer)])
            }
        }
    }
}

/// A cluster's fan-out answer: a map of node address to that node's answer (or error).
fn per_node(answer: Value) -> Result<Vec<(Option<String>, Answer)>, String> {
    let Value::Map(nodes) = answer else {
        return Err(format!("CONFIG GET on every master answered {answer:?}"));
    };
    let mut found = Vec::with_capacity(nodes.len());
    for (node, value) in nodes {
        let node = String::from_redis_value(node).map_err(|e| e.to_string())?;
        found.push((Some(node), read(value)));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}

/// One node's answer to `CONFIG GET`: pairs of name and value (a map in RESP3).
fn read(value: Value) -> Answer {
    if let Value::ServerError(e) = &value {
        return Err(refusal(e.code(), e.details()));
    }
    HashMap::<String, String>::from_redis_value(value).map_err(|_| Unread::Refused {
        code: "unexpected answer".into(),
    })
}

/// The memory settings in one node's answer.
fn memory_of(answer: Answer) -> MemoryConfig {
    let pairs = match answer {
        Ok(pairs) => pairs,
        Err(Unread::Renamed) => return MemoryConfig::Renamed,
        Err(Unread::Refused { code }) => return MemoryConfig::Refused { code },
    };
    let maxmemory = pairs.get("maxmemory").and_then(|m| m.parse().ok());
    match (maxmemory, pairs.get("maxmemory-policy")) {
        (Some(maxmemory), Some(policy)) => MemoryConfig::Read {
            maxmemory,
            policy: policy.clone(),
        },
        _ => MemoryConfig::Refused {
            code: "no maxmemory in the answer".into(),
        },
    }
}

/// The persistence settings in one node's answers to `save` and `appendonly`.
fn persistence_of(save: Answer, appendonly: Answer) -> PersistenceConfig {
    let unread = |u: Unread| match u {
        Unread::Renamed => PersistenceConfig::Renamed,
        Unread::Refused { code } => PersistenceConfig::Refused { code },
    };
    let (save, aof) = match (save, appendonly) {
        (Ok(save), Ok(aof)) => (save, aof),
        (Err(u), _) | (_, Err(u)) => return unread(u),
    };
    match (save.get("save"), aof.get("appendonly")) {
        (Some(save), Some(aof)) => PersistenceConfig::Read {
            save: save.clone(),
            appendonly: aof.eq_ignore_ascii_case("yes"),
        },
        _ => PersistenceConfig::Refused {
            code: "no save or appendonly in the answer".into(),
        },
    }
}

/// An error answer: `ERR unknown command` is a renamed `CONFIG`; anything else a refusal.
fn refusal(code: &str, detail: Option<&str>) -> Unread {
    let unknown = detail.is_some_and(|d| d.starts_with("unknown command"));
    if code == "ERR" && unknown {
        Unread::Renamed
    } else {
        Unread::Refused { code: code.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn an_answer_in_either_protocol_is_read_and_an_error_told_apart() {
        let resp2 = Value::Array(vec![
            bulk("maxmemory"),
            bulk("104857600"),
            bulk("maxmemory-policy"),
            bulk("allkeys-lru"),
            bulk("maxmemory-samples"),
            bulk("5"),
        ]);
        let read_lru = MemoryConfig::Read {
            maxmemory: 104_857_600,
            policy: "allkeys-lru".into(),
        };
        assert_eq!(memory_of(read(resp2)), read_lru);
        let resp3 = Value::Map(vec![
            (bulk("maxmemory-policy"), bulk("allkeys-lru")),
            (bulk("maxmemory"), bulk("104857600")),
        ]);
        assert_eq!(memory_of(read(resp3)), read_lru);
        assert_eq!(
            refusal(
                "ERR",
                Some("unknown command 'CONFIG', with args beginning with: ")
            ),
            Unread::Renamed
        );
        assert_eq!(
            refusal("NOPERM", Some("this user has no permissions")),
            Unread::Refused {
                code: "NOPERM".into()
            }
        );
        assert!(matches!(
            memory_of(read(Value::Array(vec![]))),
            MemoryConfig::Refused { .. }
        ));
    }

    #[test]
    fn persistence_is_on_with_snapshots_or_the_append_only_file() {
        let pair = |name: &str, value: &str| read(Value::Array(vec![bulk(name), bulk(value)]));
        let judged = |save: &str, aof: &str| {
            persistence_of(pair("save", save), pair("appendonly", aof)).persists()
        };
        assert_eq!(judged("3600 1 300 100", "no"), Some(true));
        assert_eq!(judged("", "yes"), Some(true));
        assert_eq!(judged("", "no"), Some(false));
        assert_eq!(judged(" ", "no"), Some(false));
        let renamed = persistence_of(Err(Unread::Renamed), pair("appendonly", "yes"));
        assert_eq!(renamed, PersistenceConfig::Renamed);
        assert_eq!(renamed.persists(), None);
        assert!(matches!(
            persistence_of(pair("save", ""), read(Value::Array(vec![]))),
            PersistenceConfig::Refused { .. }
        ));
    }
}
