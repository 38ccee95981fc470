//! `/quota`: where the asker stands against their weekly quota (`household.quotas`, issue 44):
//! slots used in the last 7 days, what is left, when the next one frees. Reads Redis only.

use super::{Spec, args};
use crate::i18n;
use crate::ledger::Job;
use crate::moviepilot::MpError;
use crate::worker::context::{Context, Done};

pub(super) const QUOTA: Spec = Spec {
    name: "quota",
    about: &i18n::QUOTA,
    check: Some(args::none),
    run: Some(|cx, job, _| Box::pin(run(cx, job))),
    house: None,
};

async fn run(cx: &Context<'_>, job: &Job) -> Result<Done, MpError> {
    let quota = super::requests::quota_now(cx, job).await?;
    let result = match &quota {
        Some((limit, state, _)) => format!("{} of {limit} used", state.used),
        None => "not limited".into(),
    };
    let text = cx
        .render
        .texts()
        .quota_report(quota.as_ref().map(|(l, s, z)| (*l, *s, z)));
    Ok(Done::new(text, result))
}
