//! What Redis does when it runs out of memory: `maxmemory` and `maxmemory-policy`, read with
//! `CONFIG GET` on every master (the one server, or each master of a cluster: a ledger that
//! lives on one slot today may live on another after a resharding, so every master counts).
//!
//! Reading only: the ledger never changes Redis's settings. What the values mean for "once" is
//! `redis_policy`'s judgement; here a node's answer is only told apart from its refusal, because
//! the operator's next step differs: a renamed `CONFIG` (managed Redis hides it) cannot be
//! asked at all, a refused one (ACL `NOPERM`) could be with more rights.

use std::collections::HashMap;

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

impl Ledger {
    /// `CONFIG GET maxmemory*` on every master. An error is Redis not answering at all (or the
    /// cluster having no master reachable); a node that answers with an error is a value.
    pub async fn memory_config(&self) -> Result<Vec<NodeMemory>, LedgerError> {
        const DOING: &str = "reading maxmemory and maxmemory-policy";
        let mut cmd = redis::cmd("CONFIG");
        cmd.arg("GET").arg("maxmemory*");
        match self.conn.clone() {
            Conn::Cluster(mut c, _) => {
                let every_master =
                    RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None));
                let answer = c
                    .route_command(cmd, every_master)
                    .await
                    .map_err(LedgerError::redis(DOING))?;
                per_node(answer).map_err(|detail| LedgerError::Corrupt {
                    doing: DOING,
                    detail,
                })
            }
            mut conn => {
                let answer: redis::RedisResult<Value> = cmd.query_async(&mut conn).await;
                let config = match answer {
                    Ok(value) => read(value),
                    Err(e) => match e.code() {
                        Some(code) if e.kind() != redis::ErrorKind::Io => refusal(code, e.detail()),
                        _ => return Err(LedgerError::redis(DOING)(e)),
                    },
                };
                Ok(vec![NodeMemory { node: None, config }])
            }
        }
    }
}

/// A cluster's fan-out answer: a map of node address to that node's answer (or error).
fn per_node(answer: Value) -> Result<Vec<NodeMemory>, String> {
    let Value::Map(nodes) = answer else {
        return Err(format!("CONFIG GET on every master answered {answer:?}"));
    };
    let mut found = Vec::with_capacity(nodes.len());
    for (node, value) in nodes {
        let node = String::from_redis_value(node).map_err(|e| e.to_string())?;
        found.push(NodeMemory {
            node: Some(node),
            config: read(value),
        });
    }
    found.sort_by(|a, b| a.node.cmp(&b.node));
    Ok(found)
}

/// One node's answer to `CONFIG GET maxmemory*`: pairs of name and value (a map in RESP3).
fn read(value: Value) -> MemoryConfig {
    if let Value::ServerError(e) = &value {
        return refusal(e.code(), e.details());
    }
    let Ok(pairs) = HashMap::<String, String>::from_redis_value(value) else {
        return MemoryConfig::Refused {
            code: "unexpected answer".into(),
        };
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

/// An error answer: `ERR unknown command` is a renamed `CONFIG`; anything else a refusal.
fn refusal(code: &str, detail: Option<&str>) -> MemoryConfig {
    let unknown = detail.is_some_and(|d| d.starts_with("unknown command"));
    if code == "ERR" && unknown {
        MemoryConfig::Renamed
    } else {
        MemoryConfig::Refused { code: code.into() }
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
        assert_eq!(read(resp2), read_lru);
        let resp3 = Value::Map(vec![
            (bulk("maxmemory-policy"), bulk("allkeys-lru")),
            (bulk("maxmemory"), bulk("104857600")),
        ]);
        assert_eq!(read(resp3), read_lru);
        assert_eq!(
            refusal(
                "ERR",
                Some("unknown command 'CONFIG', with args beginning with: ")
            ),
            MemoryConfig::Renamed
        );
        assert_eq!(
            refusal("NOPERM", Some("this user has no permissions")),
            MemoryConfig::Refused {
                code: "NOPERM".into()
            }
        );
        assert!(matches!(
            read(Value::Array(vec![])),
            MemoryConfig::Refused { .. }
        ));
    }
}
