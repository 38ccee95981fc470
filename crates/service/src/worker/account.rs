//! oncebot's own MoviePilot account, checked once when a worker first reaches MoviePilot (at
//! start, or later when MoviePilot was away), before it claims anything.
//!
//! Policy:
//! - **The API key is a superuser** (MoviePilot runs it as one); a login is what its answer's
//!   `super_user` says, else `GET /api/v1/user/current` (`MoviePilot::own_account`).
//! - **MoviePilot v3 and a plain account: the worker stops.** v3 shows a non-superuser only their
//!   own subscriptions and checks duplicates among them alone (`owner_scope`), so oncebot's
//!   lookups would miss the household's subscriptions and its creates would duplicate them. The
//!   worker claims nothing and the process exits 1 with one line naming the settings.
//! - **MoviePilot v2 and a plain account: one warning.** v2 lists every subscription to anyone;
//!   what such an account cannot do (its users, the house commands, a restart) is refused and
//!   said where it happens.
//! - **The finding goes to Redis** (`mp_account`), whatever it is, so the `/readyz` of every
//!   process (ingress-only ones too) says when the workers stopped, and the next worker that
//!   reaches MoviePilot with a better account clears it.

use anyhow::anyhow;

use crate::config::env_name;
use crate::ledger::{
    ACCOUNT_NOT_SUPERUSER, ACCOUNT_SUPERUSER, ACCOUNT_UNKNOWN, AccountFinding, Ledger,
};
use crate::moviepilot::{Dialect, MoviePilot, OwnAccount};

/// Finds out whether oncebot's MoviePilot account is a superuser, records it for every
/// process, and answers an error (the one line the process exits 1 with) when MoviePilot v3
/// would show it only its own subscriptions. `process` is this process's consumer name.
pub async fn check_own_account(
    ledger: &Ledger,
    mp: &MoviePilot,
    process: &str,
) -> anyhow::Result<()> {
    let account = mp.own_account().await;
    let finding = finding(&account, mp, process);
    if let Err(e) = ledger.record_mp_account(&finding).await {
        tracing::warn!(error = %e, "could not record what oncebot's MoviePilot account may see");
    }
    let user = match &account {
        OwnAccount::ApiKey => return Ok(()),
        OwnAccount::Login { username, .. } => username.as_str(),
    };
    match (account.is_superuser(), mp.dialect()) {
        (Some(true), _) => Ok(()),
        (Some(false), Dialect::V3) => Err(anyhow!(not_superuser_on_v3(user, mp.version()))),
        (Some(false), Dialect::V2) => {
            tracing::warn!(
                user,
                version = mp.version(),
                "oncebot's MoviePilot account is not a superuser: MoviePilot refuses it its \
                 list of users (their Telegram ids), the house commands and /restart; set {} \
                 (it acts as the superuser where MoviePilot takes it), or {} and {} to a \
                 superuser",
                env_name("moviepilot.api_key"),
                env_name("moviepilot.username"),
                env_name("moviepilot.password")
            );
            Ok(())
        }
        (None, _) => {
            tracing::warn!(
                user,
                "could not tell whether oncebot's MoviePilot account is a superuser (neither \
                 the login's answer nor GET /api/v1/user/current said); going on as if it were"
            );
            Ok(())
        }
    }
}

/// What is stored of `account` (`mp_account`).
fn finding(account: &OwnAccount, mp: &MoviePilot, process: &str) -> AccountFinding {
    let (via, user) = match account {
        OwnAccount::ApiKey => ("api_key", String::new()),
        OwnAccount::Login { username, .. } => ("login", username.clone()),
    };
    AccountFinding {
        state: match account.is_superuser() {
            Some(true) => ACCOUNT_SUPERUSER,
            Some(false) => ACCOUNT_NOT_SUPERUSER,
            None => ACCOUNT_UNKNOWN,
        },
        dialect: mp.dialect().to_string(),
        version: mp.version().to_string(),
        via,
        user,
        by: process.to_string(),
    }
}

/// The one line a worker stops with on MoviePilot v3 when its login is no superuser.
fn not_superuser_on_v3(user: &str, version: &str) -> String {
    format!(
        "oncebot's MoviePilot account {user:?} is not a superuser, and MoviePilot {version} (v3) \
         shows a plain user only their own subscriptions: oncebot's lookups would miss the \
         household's subscriptions and its creates would duplicate them, so this worker claims \
         no jobs; set moviepilot.api_key ({}) to MoviePilot's API_TOKEN (it acts as the \
         superuser), or moviepilot.username and moviepilot.password ({}, {}) to a superuser, \
         or make {user:?} a superuser in MoviePilot",
        env_name("moviepilot.api_key"),
        env_name("moviepilot.username"),
        env_name("moviepilot.password")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_why_and_names_every_setting_that_fixes_it() {
        let line = not_superuser_on_v3("bot", "v3.1.0");
        assert!(!line.contains('\n'));
        for needle in [
            "\"bot\" is not a superuser",
            "v3.1.0 (v3)",
            "duplicate",
            "ONCEBOT__MOVIEPILOT__API_KEY",
            "ONCEBOT__MOVIEPILOT__USERNAME",
            "ONCEBOT__MOVIEPILOT__PASSWORD",
            "moviepilot.api_key",
        ] {
            assert!(line.contains(needle), "{needle}: {line}");
        }
    }
}
