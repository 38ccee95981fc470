//! A right is checked when it is used: before a job of an admin's command runs, the worker asks
//! who its user is *now*, not what the job recorded when it was admitted.
//!
//! Why: a button made while someone was an admin (`/restart`'s Confirm, `/redo`'s) outlives their
//! demotion, and a job admitted a minute before a demotion, or held for review and retried days
//! later, would otherwise still run with the rights of then. tap.lua checks the tapper's role
//! at the tap; this is the same check at the last moment before the effect.
//!
//! The directory is the one an ingress decides with: `telegram.users` and the allow-list from
//! the settings, and the grants and MoviePilot's own mapping as stored in Redis (read at the
//! check, one round trip, only for an admin's command).

use crate::commands::Command;
use crate::config::Settings;
use crate::i18n::Texts;
use crate::ledger::{Job, Ledger};
use crate::moviepilot::MpError;
use crate::users::Directory;
use crate::users_sync::read_directory;
use crate::vocabulary::Role;

pub(super) struct Rights {
    ledger: Ledger,
    /// The settings' side of the directory (allow-list, `telegram.users`).
    base: Directory,
    /// Whether MoviePilot's own mapping is on (`moviepilot.users_refresh_secs` > 0).
    moviepilot_mapping: bool,
    texts: Texts,
}

impl Rights {
    pub(super) fn new(settings: &Settings, ledger: Ledger) -> Rights {
        Rights {
            ledger,
            // Checked at start (`Settings::validate`); were it not, nobody would be an admin.
            base: settings.directory().unwrap_or_default(),
            moviepilot_mapping: settings.moviepilot.users_refresh().is_some(),
            texts: Texts::new(settings.telegram.locale),
        }
    }

    /// `Ok` when `job`'s user may still run it: always for a command below an admin's; for an
    /// admin's, when the directory ranks them an admin now. `Declined` (the job fails, the user
    /// is told in plain words) when not; `Transient` when Redis cannot say.
    pub(super) async fn still_allowed(&self, job: &Job, command: Command) -> Result<(), MpError> {
        let needs = command.least_role(&job.args);
        // An approved request's job (issue 44) acts on its approving admin's rights: they must
        // still have them when it runs.
        let approver = job
            .extra
            .get(crate::vocabulary::job_field::APPROVED_BY)
            .and_then(|a| a.parse::<i64>().ok());
        if needs < Role::Admin && approver.is_none() {
            return Ok(());
        }
        let now = self.role_now(approver.unwrap_or(job.user_id)).await?;
        if now.is_some_and(|role| role >= needs) {
            return Ok(());
        }
        tracing::warn!(
            user_id = job.user_id,
            recorded = %job.role,
            now = now.map_or("not allowed", Role::as_str),
            needs = %needs,
            "the job's user no longer has the role its command needs; declined"
        );
        Err(MpError::Declined(self.texts.forbidden(needs).to_string()))
    }

    /// `user_id`'s role as the directory has it now; `None` for someone no longer allowed.
    async fn role_now(&self, user_id: i64) -> Result<Option<Role>, MpError> {
        let directory = read_directory(&self.ledger, &self.base, self.moviepilot_mapping)
            .await
            .map_err(|e| MpError::Transient(format!("reading who the job's user is now: {e}")))?;
        Ok(directory.identify(user_id).map(|i| i.role))
    }
}
