//! `/users` (an admin's): everyone who may use the bot (`telegram.allowed_users` and the
//! grants) with their role and where it comes from, paged, a **Revoke** button on every grant;
//! and `revoke`, that button's job (grants.lua: the grant taken back once, by the admin who
//! tapped). A setting or MoviePilot's mapping is not revoked from the chat: its line says where
//! it is changed. `telegram.allowed_users` is a floor: revoking a grant never removes anyone on
//! it.

use super::pages;
use super::{Command, Spec, args, run_button};
use crate::i18n;
use crate::ledger::{GrantChange, GrantChanged, Job, Solo, TokenGroup};
use crate::moviepilot::MpError;
use crate::users::UserRow;
use crate::worker::context::{Context, Done, directory_now, ledger_error, owner, reply_to};

pub(super) const USERS: Spec = Spec {
    name: "users",
    about: &i18n::USERS,
    check: Some(args::none),
    run: Some(|cx, job, _| Box::pin(list(cx, job))),
    house: None,
};

pub(super) const REVOKE: Spec = Spec {
    name: "revoke",
    about: &i18n::REVOKE,
    // Only the Revoke button makes it: its argument is the Telegram id oncebot wrote.
    check: None,
    run: Some(|cx, job, _| Box::pin(revoke(cx, job))),
    house: None,
};

/// Every allowed person, page by page; a grant's line has its Revoke button (a solo one: a tap
/// takes back that grant alone and leaves the others' buttons working).
async fn list(cx: &Context<'_>, job: &Job) -> Result<Done, MpError> {
    let rows = directory_now(cx).await?.rows();
    let paged = pages::paged(
        cx,
        job,
        rows.len(),
        |range| cx.render.users_page(&rows, range),
        |group, i| revoke_button(cx, job, group, &rows[i]),
    )
    .await?;
    Ok(Done {
        reply: paged.first_text(),
        result: format!("{} users", rows.len()),
        buttons: paged.buttons(),
        ..Done::default()
    })
}

/// The Revoke button of `row`'s grant; none for a row without one.
fn revoke_button(
    cx: &Context<'_>,
    job: &Job,
    group: &mut TokenGroup,
    row: &UserRow,
) -> Vec<(String, String)> {
    if row.grant.is_none() {
        return Vec::new();
    }
    let label = cx.render.revoke_button(row.user_id);
    let window = Command::Revoke.window(&cx.settings.commands);
    let action = run_button(job, Command::Revoke, row.user_id.to_string(), window);
    let data = group.add_solo(owner(job), &label, action, reply_to(job), Solo::default());
    vec![(label, data)]
}

/// Takes the grant of the job's Telegram id back (again: nothing changes, and says so), then
/// says what the person is now.
async fn revoke(cx: &Context<'_>, job: &Job) -> Result<Done, MpError> {
    let user_id: i64 = job
        .args
        .trim()
        .parse()
        .map_err(|_| super::not_runnable(job))?;
    let changed = cx
        .ledger
        .change_grant(&GrantChange::Revoke { user_id })
        .await
        .map_err(ledger_error)?;
    let was = match &changed {
        GrantChanged::Revoked { previous } => previous.as_ref().map(|g| g.role),
        _ => None,
    };
    let now = directory_now(cx).await?.identify(user_id);
    tracing::info!(
        telegram_id = user_id,
        by = job.user_id,
        was = was.map(|r| r.as_str()),
        now = now.as_ref().map(|i| i.role.as_str()),
        "grant revoked from the chat"
    );
    let result = match was {
        Some(_) => "revoked",
        None => "no grant",
    };
    Ok(Done::new(
        cx.render
            .revoked(user_id, was, now.map(|i| (i.role, i.source))),
        result.into(),
    ))
}
