//! MoviePilot's `user` area (`app/api/endpoints/user.py`): its users, each with the Telegram
//! id MoviePilot maps to them, which `users_sync` turns into oncebot's own mapping. Only a
//! superuser may list them, and the error for anyone else says how to fix it. And oncebot's own
//! account: whether it is a superuser ([`MoviePilot::own_account`]).
//!
//! Routes: `GET /api/v1/user/`, `GET /api/v1/user/current`.

use super::client::{Call, MoviePilot, detail_suffix};
use super::error::{ListUsersError, MpError};
use super::types::{MpUser, WireUser};
use crate::config::env_name;

/// The MoviePilot account oncebot acts as, as far as what it may see goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnAccount {
    /// The API key: MoviePilot runs it as its superuser (v3 `verify_token`; v2.9.3 and later
    /// as the `SUPERUSER` account, `__create_superuser_token_payload`).
    ApiKey,
    /// A login as `username`; `superuser` as the login's answer said (`super_user`), else as
    /// `GET /api/v1/user/current` did; `None` when neither could say.
    Login {
        username: String,
        superuser: Option<bool>,
    },
}

impl OwnAccount {
    /// Whether MoviePilot treats the account as a superuser; `None`: unknown.
    pub fn is_superuser(&self) -> Option<bool> {
        match self {
            OwnAccount::ApiKey => Some(true),
            OwnAccount::Login { superuser, .. } => *superuser,
        }
    }
}

impl MoviePilot {
    /// Every MoviePilot user (`GET /api/v1/user/`: `list_users` in v2.5.6's
    /// `app/api/endpoints/user.py`, behind `get_current_active_superuser`; the newest line has
    /// the same route and dependency, its answer in the envelope). Only a superuser may list
    /// them: anyone else gets [`ListUsersError::NotSuperuser`].
    pub async fn list_users(&self) -> Result<Vec<MpUser>, ListUsersError> {
        let call = Call::get("listing MoviePilot's users", "/api/v1/user/");
        let answer = self.inner.call(&call).await?;
        if self.inner.refuses_non_superuser(&answer) {
            return Err(ListUsersError::NotSuperuser(format!(
                "{call}: HTTP {}{}: the MoviePilot account oncebot acts as is not a superuser, so \
                 MoviePilot's own mapping (each user's telegram_userid) cannot be read and only \
                 telegram.users maps users; make that account a superuser in MoviePilot, or use \
                 {} (the API key acts as the superuser where MoviePilot accepts it)",
                answer.status.as_u16(),
                detail_suffix(&answer.body),
                env_name("moviepilot.api_key")
            )));
        }
        let rows: Vec<WireUser> = self.inner.rows_of(&call, answer)?.0;
        Ok(rows.into_iter().map(WireUser::into_user).collect())
    }

    /// The account oncebot acts as now: the API key, or the login and whether it is a
    /// superuser (its login's answer, else `GET /api/v1/user/current`, which answers any logged
    /// in user with their own row: `read_current_user` in v2.5.6 and v2.14.0).
    pub async fn own_account(&self) -> OwnAccount {
        let Some((username, said)) = self.inner.login_account().await else {
            return OwnAccount::ApiKey;
        };
        let superuser = match said {
            Some(said) => Some(said),
            None => match self.current_user().await {
                Ok(user) => Some(user.is_superuser),
                Err(e) => {
                    tracing::debug!(error = %e, "reading oncebot's own MoviePilot account");
                    None
                }
            },
        };
        OwnAccount::Login {
            username,
            superuser,
        }
    }

    /// `GET /api/v1/user/current`: the user oncebot is logged in as.
    async fn current_user(&self) -> Result<MpUser, MpError> {
        let call = Call::get(
            "reading oncebot's own MoviePilot account",
            "/api/v1/user/current",
        );
        let answer = self.inner.call(&call).await?;
        let answer = self.inner.check_status(&call, answer)?;
        let user: Option<WireUser> = self.inner.decode(&call, &answer)?;
        user.map(WireUser::into_user)
            .ok_or_else(|| self.inner.unexpected_body(&call, &answer))
    }
}
