//! `/whoami`: the asker's Telegram id, role, MoviePilot name and where the role comes from, as
//! the directory has it when the job runs (the grants and MoviePilot's mapping as stored), and
//! where in MoviePilot to set the id to be bound to a MoviePilot user. Reads Redis only.

use super::{Spec, args};
use crate::i18n;
use crate::ledger::Job;
use crate::moviepilot::MpError;
use crate::worker::context::{Context, Done, directory_now};

pub(super) const WHOAMI: Spec = Spec {
    name: "whoami",
    about: &i18n::WHOAMI,
    check: Some(args::none),
    run: Some(|cx, job, _| Box::pin(run(cx, job))),
    house: None,
};

async fn run(cx: &Context<'_>, job: &Job) -> Result<Done, MpError> {
    let directory = directory_now(cx).await?;
    // Revoked between the message and the run: no longer anyone to the bot.
    let Some(identity) = directory.identify(job.user_id) else {
        return Err(MpError::Declined(
            i18n::Texts::new(cx.settings.telegram.locale)
                .refusal()
                .into(),
        ));
    };
    let result = format!("{} ({})", identity.role, identity.source.as_str());
    Ok(Done::new(cx.render.whoami(job.user_id, &identity), result))
}
