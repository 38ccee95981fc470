//! `[redis]`: where the ledger's Redis is, and what its URL setting says (one URL, or a
//! cluster's seed nodes). The two pure readings of the URL live here rather than in the ledger,
//! so the settings check needs nothing from the ledger (the ledger uses them from here).

use serde::Deserialize;

use super::{Secret, SettingError, env_name, nonzero};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisSettings {
    /// A URL may carry a password, so it is a secret as far as logs are concerned.
    pub url: Secret,
    /// The hash tag all keys share; see `ledger::keys`.
    pub key_prefix: String,
    /// Bounds every non-blocking command, so a hung Redis turns into a 503, not a hung webhook.
    pub command_timeout_ms: u64,
    /// `url` names seed nodes of a Redis Cluster (comma-separated); see `ledger::conn`.
    pub cluster: bool,
    /// How many replicas must confirm an admission or an outcome record (`WAIT`) before it
    /// counts as done; 0 trusts the master alone, as without replicas.
    pub wait_replicas: u32,
    /// How long such a `WAIT` may take before the write counts as not confirmed (503).
    pub wait_timeout_ms: u64,
    /// Go on with a Redis whose `maxmemory-policy` may evict oncebot's keys (a warning at each
    /// start instead of the refusal, and no 503s while it is so): see `redis_policy`.
    pub allow_eviction: bool,
    /// How often every process reads `maxmemory` and `maxmemory-policy` again while running.
    pub policy_check_secs: u64,
}

impl RedisSettings {
    pub(super) fn validate(&self) -> Result<(), SettingError> {
        self.validate_key_prefix()?;
        self.validate_url()?;
        if self.wait_replicas > 0 && self.wait_timeout_ms == 0 {
            return Err(SettingError::new(
                "redis.wait_timeout_ms",
                "is 0 while redis.wait_replicas is not (WAIT 0 would block for ever)",
                format!("set {} to e.g. 500", env_name("redis.wait_timeout_ms")),
            ));
        }
        nonzero(
            &[("redis.command_timeout_ms", self.command_timeout_ms)],
            "",
            "e.g. 2000",
        )?;
        nonzero(
            &[("redis.policy_check_secs", self.policy_check_secs)],
            "",
            "e.g. 300",
        )
    }

    /// Every key starts with the prefix and its hash tag: letters, digits, `_`, `-` and `.`.
    fn validate_key_prefix(&self) -> Result<(), SettingError> {
        let prefix = &self.key_prefix;
        if prefix.is_empty()
            || !prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(SettingError::new(
                "redis.key_prefix",
                format!("is {prefix:?}, which is not a valid prefix"),
                format!(
                    "set {} to letters, digits, '_', '-' or '.' (e.g. oncebot)",
                    env_name("redis.key_prefix")
                ),
            ));
        }
        Ok(())
    }

    /// One Redis URL, or with `redis.cluster` a comma-separated list of its nodes.
    fn validate_url(&self) -> Result<(), SettingError> {
        if self.cluster {
            let nodes = cluster_nodes(self.url.expose());
            if nodes.is_empty() || !nodes.iter().all(|n| is_redis_url(n)) {
                return Err(SettingError::new(
                    "redis.url",
                    "is not a comma-separated list of Redis URLs (redis.cluster is on)",
                    format!(
                        "set {} to e.g. redis://10.0.0.1:7000,redis://10.0.0.2:7000",
                        env_name("redis.url")
                    ),
                ));
            }
        } else if !is_redis_url(self.url.expose()) {
            let hint = if self.url.expose().contains(',') {
                format!(
                    " (several nodes of a Redis Cluster need {}=true)",
                    env_name("redis.cluster")
                )
            } else {
                String::new()
            };
            return Err(SettingError::new(
                "redis.url",
                "is not a valid Redis URL",
                format!(
                    "set {} to e.g. redis://127.0.0.1:6379 or redis+unix:///run/redis.sock{hint}",
                    env_name("redis.url")
                ),
            ));
        }
        Ok(())
    }
}

/// `redis.url` as a list of seed nodes: comma-separated, blanks ignored.
pub fn cluster_nodes(url: &str) -> Vec<&str> {
    url.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect()
}

/// Whether `url` is one Redis URL the ledger can connect to (`redis://`, `rediss://`,
/// `redis+unix://`, `unix://`): what the settings check asks before anything connects.
pub fn is_redis_url(url: &str) -> bool {
    ::redis::IntoConnectionInfo::into_connection_info(url).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Needs;
    use crate::config::test_env::load;

    #[test]
    fn seed_nodes_are_comma_separated() {
        assert_eq!(
            cluster_nodes(" redis://a:1, redis://b:2 ,,"),
            ["redis://a:1", "redis://b:2"]
        );
    }

    #[test]
    fn cluster_urls_and_replica_waits_are_checked() {
        let one = load(&[]).unwrap();
        assert!(!one.redis.cluster, "standalone is the default");
        assert_eq!(one.redis.wait_replicas, 0, "no WAIT by default");
        let seeds = "redis://10.0.0.1:7000, redis://10.0.0.2:7000";
        load(&[
            ("ONCEBOT__REDIS__URL", seeds),
            ("ONCEBOT__REDIS__CLUSTER", "true"),
        ])
        .unwrap()
        .validate(Needs::default())
        .unwrap();
        // Several nodes without the setting: the fix names it.
        let e = load(&[("ONCEBOT__REDIS__URL", seeds)])
            .unwrap()
            .validate(Needs::default())
            .unwrap_err();
        assert_eq!(e.key, "redis.url");
        assert!(
            e.to_string().contains("ONCEBOT__REDIS__CLUSTER=true"),
            "{e}"
        );
        let e = load(&[
            ("ONCEBOT__REDIS__URL", "redis://a:1,nowhere"),
            ("ONCEBOT__REDIS__CLUSTER", "true"),
        ])
        .unwrap()
        .validate(Needs::default())
        .unwrap_err();
        assert_eq!(e.key, "redis.url");
        let e = load(&[
            ("ONCEBOT__REDIS__WAIT_REPLICAS", "1"),
            ("ONCEBOT__REDIS__WAIT_TIMEOUT_MS", "0"),
        ])
        .unwrap()
        .validate(Needs::default())
        .unwrap_err();
        assert_eq!(e.key, "redis.wait_timeout_ms");
    }

    #[test]
    fn eviction_is_refused_by_default_and_the_check_interval_is_at_least_a_second() {
        let defaults = load(&[]).unwrap();
        assert!(!defaults.redis.allow_eviction);
        assert_eq!(defaults.redis.policy_check_secs, 300);
        let e = load(&[("ONCEBOT__REDIS__POLICY_CHECK_SECS", "0")])
            .unwrap()
            .validate(Needs::default())
            .unwrap_err();
        assert_eq!(e.key, "redis.policy_check_secs");
    }
}
