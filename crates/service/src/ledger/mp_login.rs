//! The deployment's MoviePilot login gate in Redis (`lua/login_gate.lua`): the ledger's side of
//! [`LoginGate`]. One login at a time across every process, none while a refusal's backoff runs,
//! so a changed password costs MoviePilot one failed login per backoff, not one per waiting job.

use std::time::Duration;

use redis::Value;

use super::scripts::{self, ScriptCall};
use super::{Ledger, LedgerError};
use crate::moviepilot::{GateFuture, LoginGate, Turn};

impl Ledger {
    /// login_gate.lua `begin`: may `holder` log in now (then it holds the lease for `lease`)?
    pub async fn login_begin(&self, holder: &str, lease: Duration) -> Result<Turn, LedgerError> {
        let call = self.login_begin_call(holder, lease);
        let answer: Vec<Value> = self
            .send(&call, "asking for a MoviePilot login turn")
            .await?;
        let number = |v: Option<&Value>| match v {
            Some(Value::Int(n)) => u64::try_from(*n).unwrap_or(0),
            _ => 0,
        };
        let wait = Duration::from_millis(number(answer.get(1)));
        Ok(match number(answer.first()) {
            1 => Turn::Go,
            2 => Turn::Busy { wait },
            _ => Turn::Refused {
                wait,
                reason: match answer.get(2) {
                    Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
                    _ => String::new(),
                },
            },
        })
    }

    pub(super) fn login_begin_call(&self, holder: &str, lease: Duration) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::LOGIN_GATE, 1, 3, 64);
        call.key("gate key", self.keys.mp_login())
            .arg("begin | refused | accepted | release", "begin")
            .arg("holder", holder)
            .arg("lease or first backoff", lease.as_millis() as u64);
        call
    }

    /// login_gate.lua `refused`: `holder`'s login was refused; returns the backoff before the
    /// deployment's next login.
    pub async fn login_refused(
        &self,
        holder: &str,
        reason: &str,
        first: Duration,
        max: Duration,
        remember: Duration,
    ) -> Result<Duration, LedgerError> {
        let call = self.login_refused_call(holder, reason, first, max, remember);
        let ms: u64 = self
            .send(&call, "noting a refused MoviePilot login")
            .await?;
        Ok(Duration::from_millis(ms))
    }

    pub(super) fn login_refused_call(
        &self,
        holder: &str,
        reason: &str,
        first: Duration,
        max: Duration,
        remember: Duration,
    ) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::LOGIN_GATE, 1, 6, 64 + reason.len());
        call.key("gate key", self.keys.mp_login())
            .arg("begin | refused | accepted | release", "refused")
            .arg("holder", holder)
            .arg("lease or first backoff", first.as_millis() as u64)
            .arg("refused: the longest backoff", max.as_millis() as u64)
            .arg("refused: the reason", reason)
            .arg(
                "refused: how long refusals in a row are remembered",
                remember.as_millis() as u64,
            );
        call
    }

    /// login_gate.lua `accepted` (every process may log in again) or `release` (`holder`'s
    /// login ended without a verdict).
    pub async fn login_ended(&self, holder: &str, accepted: bool) -> Result<(), LedgerError> {
        let call = self.login_ended_call(holder, accepted);
        let _: i64 = self.send(&call, "ending a MoviePilot login turn").await?;
        Ok(())
    }

    pub(super) fn login_ended_call(&self, holder: &str, accepted: bool) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::LOGIN_GATE, 1, 2, 64);
        call.key("gate key", self.keys.mp_login())
            .arg(
                "begin | refused | accepted | release",
                if accepted { "accepted" } else { "release" },
            )
            .arg("holder", holder);
        call
    }
}

impl LoginGate for Ledger {
    fn begin<'a>(
        &'a self,
        holder: &'a str,
        lease: Duration,
    ) -> GateFuture<'a, Result<Turn, String>> {
        Box::pin(async move {
            self.login_begin(holder, lease)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn refused<'a>(
        &'a self,
        holder: &'a str,
        reason: &'a str,
        first: Duration,
        max: Duration,
        remember: Duration,
    ) -> GateFuture<'a, Result<Duration, String>> {
        Box::pin(async move {
            self.login_refused(holder, reason, first, max, remember)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn accepted(&self) -> GateFuture<'_, Result<(), String>> {
        Box::pin(async move { self.login_ended("", true).await.map_err(|e| e.to_string()) })
    }

    fn release<'a>(&'a self, holder: &'a str) -> GateFuture<'a, Result<(), String>> {
        Box::pin(async move {
            self.login_ended(holder, false)
                .await
                .map_err(|e| e.to_string())
        })
    }
}
