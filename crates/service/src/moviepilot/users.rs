//! MoviePilot's `user` area (`app/api/endpoints/user.py`): its users, each with the Telegram
//! id MoviePilot maps to them, which `users_sync` turns into oncebot's own mapping. Only a
//! superuser may list them, and the error for anyone else says how to fix it.
//!
//! Route: `GET /api/v1/user/`.

use super::client::{Call, MoviePilot, detail_suffix};
use super::error::ListUsersError;
use super::types::{MpUser, WireUser};
use crate::config::env_name;

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
}
