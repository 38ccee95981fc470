//! The release registry and the layout guard (docs/releases.md).
//!
//! Every process says in Redis which release it is, the key layout it knows, its roles and the
//! job kinds it understands: its [`Registration`], the value of its `alive:<id>` key, so a
//! process killed outright drops out with its liveness key, within seconds. A worker or a
//! dispatcher writes it with every heartbeat (liveness.lua, no command of its own: an idle
//! process's Redis commands are counted, issue 27); a process with neither role writes it with
//! a plain `SET PX` of its own and is listed in `processes`. Neither write carries job state.
//! A release before 0.2.0 wrote `1` there: a live worker whose key holds no registration is of
//! such a release, and fails a job of a kind it does not know.
//!
//! The layout guard: `{P}:layout`, outside the versioned names, holds the newest key layout any
//! process used; a release that finds a larger one than its own refuses to start.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::keys::Stream;
use super::{Ledger, LedgerError};

/// The number in [`keys::LAYOUT`] (`v1`): what `{P}:layout` holds for this release.
pub const LAYOUT_NUMBER: u32 = 1;

/// What a process says about itself in its liveness key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// Its release, `CARGO_PKG_VERSION`.
    pub version: String,
    /// The key layout it knows ([`LAYOUT_NUMBER`]).
    pub layout: u32,
    /// Its roles: `ingress`, `worker`, `dispatcher`, `notify`.
    pub roles: Vec<String>,
    /// The job kinds its worker runs (empty without a worker).
    #[serde(default)]
    pub kinds: Vec<String>,
    /// The roles a job of its worker may carry (empty without a worker, and from 0.2.0, which
    /// fails a job whose `role` it cannot read: it knows viewer, user and admin). Issue 44's
    /// `requester` is admitted only while every live worker lists it.
    #[serde(default)]
    pub job_roles: Vec<String>,
}

impl Registration {
    /// The value of the liveness key.
    pub fn to_value(&self) -> String {
        // A struct of strings and numbers always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A liveness key's value read back; `None` for a release that registers nothing (`1`).
    pub fn from_value(value: &str) -> Option<Registration> {
        serde_json::from_str(value).ok()
    }
}

/// One live process as the registry shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveProcess {
    /// Its consumer name (or, without a consumer role, the name it registered under).
    pub id: String,
    /// Whether it is a live consumer of the `workers` group.
    pub worker: bool,
    /// What it registered; `None`: a release before 0.2.0, which registers nothing.
    pub registration: Option<Registration>,
}

/// What `{P}:layout` says about this release's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutCheck {
    /// The same as ours (or it was missing and now is ours, or older and now ours).
    Ours,
    /// A newer release wrote a layout this one does not know.
    Newer(u32),
}

impl Ledger {
    /// The layout guard at start: `{P}:layout` set to ours where it is missing (or smaller);
    /// [`LayoutCheck::Newer`] where a newer release wrote a larger one.
    pub async fn check_layout(&self) -> Result<LayoutCheck, LedgerError> {
        let mut conn = self.conn.clone();
        let key = self.keys.layout();
        let stored: Option<String> = redis::cmd("GET")
            .arg(key)
            .query_async(&mut conn)
            .await
            .map_err(LedgerError::redis("reading the key layout"))?;
        match stored.as_deref().map(str::parse::<u32>) {
            Some(Ok(n)) if n > LAYOUT_NUMBER => Ok(LayoutCheck::Newer(n)),
            Some(Ok(n)) if n == LAYOUT_NUMBER => Ok(LayoutCheck::Ours),
            Some(Err(_)) => Err(LedgerError::Corrupt {
                doing: "reading the key layout",
                detail: format!("{key} holds {stored:?}, not a number"),
            }),
            _ => {
                let _: () = redis::cmd("SET")
                    .arg(key)
                    .arg(LAYOUT_NUMBER)
                    .query_async(&mut conn)
                    .await
                    .map_err(LedgerError::redis("writing the key layout"))?;
                Ok(LayoutCheck::Ours)
            }
        }
    }

    /// A process with neither a worker nor a dispatcher says it is alive and what it is, for
    /// `ttl` (its liveness key, as liveness.lua writes a consumer's); listed in `processes`
    /// when its key was gone.
    pub async fn register_process(
        &self,
        id: &str,
        registration: &str,
        ttl: Duration,
    ) -> Result<(), LedgerError> {
        let mut conn = self.conn.clone();
        let was: Option<String> = redis::cmd("SET")
            .arg(self.keys.alive(id))
            .arg(registration)
            .arg("PX")
            .arg(ttl.as_millis() as u64)
            .arg("GET")
            .query_async(&mut conn)
            .await
            .map_err(LedgerError::redis("registering the process"))?;
        if was.is_none() {
            let _: () = redis::cmd("SADD")
                .arg(self.keys.processes())
                .arg(id)
                .query_async(&mut conn)
                .await
                .map_err(LedgerError::redis("listing the process"))?;
        }
        Ok(())
    }

    /// A process registered with [`Self::register_process`] leaves (a graceful stop).
    pub async fn unregister_process(&self, id: &str) -> Result<(), LedgerError> {
        let mut conn = self.conn.clone();
        let _: () = redis::cmd("DEL")
            .arg(self.keys.alive(id))
            .query_async(&mut conn)
            .await
            .map_err(LedgerError::redis("unregistering the process"))?;
        let _: () = redis::cmd("SREM")
            .arg(self.keys.processes())
            .arg(id)
            .query_async(&mut conn)
            .await
            .map_err(LedgerError::redis("unlisting the process"))?;
        Ok(())
    }

    /// Every live process: the consumers of both groups and the other registered processes
    /// whose liveness key is there, each with its registration. A listed process whose key is
    /// gone is removed from `processes` (a SIGKILLed ingress leaves nobody else to do it).
    pub async fn live_processes(&self) -> Result<Vec<LiveProcess>, LedgerError> {
        let workers = self
            .members(&self.keys.consumers(Stream::Jobs.group()))
            .await?;
        let mut ids = workers.clone();
        let others = [
            self.keys.consumers(Stream::Replies.group()),
            self.keys.processes(),
        ];
        for list in &others {
            for id in self.members(list).await? {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
        ids.sort();
        let values = self.alive_values(&ids).await?;
        let mut live = Vec::with_capacity(ids.len());
        let mut gone = Vec::new();
        for (id, value) in ids.into_iter().zip(values) {
            match value {
                Some(value) => live.push(LiveProcess {
                    worker: workers.contains(&id),
                    registration: Registration::from_value(&value),
                    id,
                }),
                None => gone.push(id),
            }
        }
        if !gone.is_empty() {
            let mut conn = self.conn.clone();
            let _: () = redis::cmd("SREM")
                .arg(self.keys.processes())
                .arg(&gone)
                .query_async(&mut conn)
                .await
                .map_err(LedgerError::redis("unlisting dead processes"))?;
        }
        Ok(live)
    }

    /// Whether a live consumer of the `workers` group registered nothing: a worker of a
    /// release before 0.2.0, which fails a job of a kind it does not know. Two reads.
    pub async fn older_worker_alive(&self) -> Result<bool, LedgerError> {
        let workers = self
            .members(&self.keys.consumers(Stream::Jobs.group()))
            .await?;
        let values = self.alive_values(&workers).await?;
        Ok(values
            .into_iter()
            .flatten()
            .any(|v| Registration::from_value(&v).is_none()))
    }

    /// Whether a live worker cannot run a job carrying `role` (it registered no such role:
    /// 0.2.0, or a release before it).
    pub async fn worker_without_job_role(&self, role: &str) -> Result<bool, LedgerError> {
        let workers = self
            .members(&self.keys.consumers(Stream::Jobs.group()))
            .await?;
        let values = self.alive_values(&workers).await?;
        Ok(values.into_iter().flatten().any(|v| {
            Registration::from_value(&v).is_none_or(|r| !r.job_roles.iter().any(|j| j == role))
        }))
    }

    async fn members(&self, set: &str) -> Result<Vec<String>, LedgerError> {
        let mut conn = self.conn.clone();
        redis::cmd("SMEMBERS")
            .arg(set)
            .query_async(&mut conn)
            .await
            .map_err(LedgerError::redis("reading the registry"))
    }

    /// The liveness keys' values of `ids`, in order (`None`: gone), in one MGET.
    async fn alive_values(&self, ids: &[String]) -> Result<Vec<Option<String>>, LedgerError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn.clone();
        let keys: Vec<String> = ids.iter().map(|id| self.keys.alive(id)).collect();
        redis::cmd("MGET")
            .arg(&keys)
            .query_async(&mut conn)
            .await
            .map_err(LedgerError::redis("reading the registry"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_number_is_the_one_in_every_key_name() {
        assert_eq!(crate::ledger::keys::LAYOUT, format!("v{LAYOUT_NUMBER}"));
    }

    #[test]
    fn a_registration_reads_back_and_an_older_release_value_reads_as_none() {
        let r = Registration {
            version: "0.2.0".into(),
            layout: 1,
            roles: vec!["worker".into()],
            kinds: vec!["search".into(), "version".into()],
            job_roles: vec!["viewer".into(), "requester".into()],
        };
        assert_eq!(Registration::from_value(&r.to_value()), Some(r));
        assert_eq!(Registration::from_value("1"), None);
        // 0.2.0's registration names no job roles: it cannot run a requester's job.
        let old = r#"{"version":"0.2.0","layout":1,"roles":["worker"],"kinds":["search"]}"#;
        assert!(Registration::from_value(old).unwrap().job_roles.is_empty());
    }
}
