//! `/quota`: where the asker stands against their weekly quota (`household.quotas`, issue 44):
//! slots used in the last 7 days, what is left, when the next one frees. Reads Redis only.

use super::{Spec, args};
use crate::i18n;
use crate::ledger::Job;
use crate::moviepilot::MpError;
use crate::worker::context::{Context, Done, ledger_error};

pub(super) const QUOTA: Spec = Spec {
    name: "quota",
    about: &i18n::QUOTA,
    check: Some(args::none),
    run: Some(|cx, job, _| Box::pin(run(cx, job))),
    house: None,
};

async fn run(cx: &Context<'_>, job: &Job) -> Result<Done, MpError> {
    let limit = cx.settings.household.quotas().limit(job.user_id, job.role);
    let zone = cx
        .settings
        .commands
        .day_zone()
        .unwrap_or(jiff::tz::TimeZone::UTC);
    let now = jiff::Timestamp::now().as_millisecond();
    let state = cx
        .ledger
        .quota_state(job.user_id, now)
        .await
        .map_err(ledger_error)?;
    let result = match limit {
        Some(limit) => format!("{} of {limit} used", state.used),
        None => "not limited".into(),
    };
    let text = cx.render.texts().quota_report(limit, state, &zone);
    Ok(Done::new(text, result))
}
