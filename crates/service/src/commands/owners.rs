//! Whose a subscription is: MoviePilot's `username` on the row, or, where MoviePilot made the
//! service account the owner (v3 keeps it whatever it is sent), the requester oncebot recorded
//! for it (`ledger::owners`). `/subscriptions`, `/unsubscribe` and the subscribe flow ask here.

use crate::ledger::Job;
use crate::moviepilot::{MpError, Subscription};
use crate::vocabulary::Role;
use crate::worker::context::{Context, ledger_error};

/// Whether MoviePilot's owner of `sub` is oncebot's service account (any row, with an API key
/// alone: oncebot does not know the name MoviePilot gives it then).
pub(super) fn service_owned(cx: &Context<'_>, sub: &Subscription) -> bool {
    match cx.mp.service_username() {
        Some(service) => sub.username.as_deref() == Some(service),
        None => true,
    }
}

/// Each of `subs` with its owner as a person sees it: MoviePilot's, except that a row the
/// service account owns and oncebot gave to a requester in its own record (v3) is theirs.
pub(super) async fn resolve_owners(
    cx: &Context<'_>,
    subs: &mut [Subscription],
) -> Result<(), MpError> {
    let ask = service_owned_rows(cx, subs);
    if ask.is_empty() || !any_recorded_owner(cx).await? {
        return Ok(());
    }
    fill_recorded_owners(cx, subs, ask).await
}

/// The positions of the rows MoviePilot says the service account owns.
pub(super) fn service_owned_rows(cx: &Context<'_>, subs: &[Subscription]) -> Vec<usize> {
    (0..subs.len())
        .filter(|&i| service_owned(cx, &subs[i]))
        .collect()
}

/// [`resolve_owners`] once it is known that some owner is recorded: the rows at `ask` (those
/// the service account owns) take their recorded owner.
pub(super) async fn fill_recorded_owners(
    cx: &Context<'_>,
    subs: &mut [Subscription],
    ask: Vec<usize>,
) -> Result<(), MpError> {
    let keys: Vec<(u64, Option<u64>, Option<u32>)> = ask
        .iter()
        .map(|&i| (subs[i].id, subs[i].tmdb_id, subs[i].season))
        .collect();
    let owners = cx
        .ledger
        .recorded_owners(&keys)
        .await
        .map_err(ledger_error)?;
    for (i, owner) in ask.into_iter().zip(owners) {
        if let Some(owner) = owner {
            subs[i].username = Some(owner);
        }
    }
    Ok(())
}

pub(super) async fn any_recorded_owner(cx: &Context<'_>) -> Result<bool, MpError> {
    cx.ledger.any_recorded_owner().await.map_err(ledger_error)
}

/// The owner of `sub` when that is someone other than the asker (the job's MoviePilot user, or
/// the service account for an asker without one); `None` for the asker's own and for a row that
/// names nobody.
pub(super) fn someone_elses<'s>(
    cx: &Context<'_>,
    job: &Job,
    sub: &'s Subscription,
) -> Option<&'s str> {
    let owner = sub.username.as_deref()?;
    let asker = job.requester.as_deref().or(cx.mp.service_username())?;
    (owner != asker).then_some(owner)
}

/// Refuses a `user` another's subscription (MoviePilot's own bot lets anyone cancel anyone's,
/// #5098); for an admin, the words that name its owner (empty for the asker's own).
pub(super) fn ownership_check(
    cx: &Context<'_>,
    job: &Job,
    sub: &Subscription,
) -> Result<String, MpError> {
    match someone_elses(cx, job, sub) {
        None => Ok(String::new()),
        Some(owner) if job.role < Role::Admin => Err(MpError::Declined(
            cx.render.not_your_subscription(sub.id, owner),
        )),
        Some(owner) => Ok(cx.render.owned_by(owner)),
    }
}
