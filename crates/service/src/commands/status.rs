//! `/status [job]` and `/jobs`: a job's state as a user reads it, and this chat's recent jobs.
//! Both read the ledger only; a user sees only their own chat's jobs.

use super::{Spec, args};
use crate::i18n;
use crate::ledger::{Job, JobFilter};
use crate::moviepilot::MpError;
use crate::worker::context::{Context, Done, ledger_error};

pub(super) const STATUS: Spec = Spec {
    name: "status",
    about: &i18n::STATUS,
    check: Some(|args| (args.is_empty() || args::is_id(args)).then(|| args.to_string())),
    run: Some(|cx, job, _| {
        Box::pin(async move {
            let asked = match job.args.trim() {
                "" => None,
                id => Some(args::id(id).ok_or_else(|| super::not_runnable(job))?),
            };
            let reply = status(cx, job, asked).await?;
            Ok(Done::new(reply, "status".into()))
        })
    }),
    house: None,
};

pub(super) const JOBS: Spec = Spec {
    name: "jobs",
    about: &i18n::JOBS,
    check: Some(args::none),
    run: Some(|cx, job, _| Box::pin(jobs(cx, job))),
    house: None,
};

/// `/jobs`: this chat's last ten jobs but this one.
async fn jobs(cx: &Context<'_>, job: &Job) -> Result<Done, MpError> {
    let filter = JobFilter {
        chat_id: Some(job.chat_id),
        limit: 11,
        status: None,
    };
    let jobs: Vec<Job> = cx
        .ledger
        .list_jobs(&filter)
        .await
        .map_err(ledger_error)?
        .into_iter()
        .filter(|j| j.id != job.id)
        .take(10)
        .collect();
    Ok(Done::new(
        cx.render.jobs(&jobs),
        format!("{} jobs", jobs.len()),
    ))
}

async fn status(cx: &Context<'_>, job: &Job, asked: Option<u64>) -> Result<String, MpError> {
    let r = &cx.render;
    let target = match asked {
        Some(id) => cx.ledger.job(id).await.map_err(ledger_error)?,
        None => cx
            .ledger
            .list_jobs(&JobFilter {
                chat_id: Some(job.chat_id),
                limit: 2,
                status: None,
            })
            .await
            .map_err(ledger_error)?
            .into_iter()
            .find(|j| j.id != job.id),
    };
    // A user sees only their own chat's jobs; another chat's job is "not found", not "forbidden",
    // so ids of other chats' jobs leak nothing.
    Ok(match target.filter(|j| j.chat_id == job.chat_id) {
        Some(j) => r.job_status(&j),
        None => r.job_not_found(asked),
    })
}
