//! `/subscriptions`, `/unsubscribe` and `/searchnow`: the subscriptions a person may see, one
//! deleted once (asked first, naming it and its owner), and one searched for now.

use super::args::{self, SubscriptionMedia, id};
use super::owners::{
    any_recorded_owner, fill_recorded_owners, ownership_check, resolve_owners, service_owned_rows,
};
use super::{Command, Spec, run_button};
use crate::i18n::{self, Whose};
use crate::ledger::Job;
use crate::moviepilot::{MpError, Subscription};
use crate::vocabulary::MpOutcome;
use crate::worker::context::{Context, Done, confirm_or_cancel};

pub(super) const SUBSCRIPTIONS: Spec = Spec {
    name: "subscriptions",
    about: &i18n::SUBSCRIPTIONS,
    // `/subscriptions all`: everyone's, an admin's (see `Command::least_role`); anything else
    // is dropped.
    check: Some(|args| {
        Some(
            if args.eq_ignore_ascii_case("all") {
                "all"
            } else {
                ""
            }
            .into(),
        )
    }),
    run: Some(|cx, job, _| {
        Box::pin(async move {
            let (subs, whose) = list(cx, job, job.args.trim() == "all").await?;
            Ok(Done::new(
                cx.render.subscriptions(&subs, whose),
                format!("{} subscriptions", subs.len()),
            ))
        })
    }),
    house: None,
};

pub(super) const UNSUBSCRIBE: Spec = Spec {
    name: "unsubscribe",
    about: &i18n::UNSUBSCRIBE,
    check: Some(args::one_id),
    run: Some(|cx, job, recovered| {
        Box::pin(async move {
            match parse_unsubscribe(&job.args).ok_or_else(|| super::not_runnable(job))? {
                Unsubscribe::Ask(id) => ask_unsubscribe(cx, job, id).await,
                Unsubscribe::Delete(id, media) => unsubscribe(cx, job, id, &media, recovered).await,
            }
        })
    }),
    house: None,
};

/// What an `/unsubscribe` job's arguments ask.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unsubscribe {
    /// `/unsubscribe <id>` as typed: look the subscription up and ask, with Confirm / Cancel
    /// naming what would be deleted. Changes nothing.
    Ask(u64),
    /// The Confirm button's job: delete subscription `id`, but only while that id still names
    /// the media (MoviePilot reuses ids).
    Delete(u64, SubscriptionMedia),
}

/// A bare id asks; the Confirm button's job (`<id> <media>`) names the media the id must still
/// be.
fn parse_unsubscribe(args: &str) -> Option<Unsubscribe> {
    let args = args.trim();
    Some(match args.split_once(' ') {
        None => Unsubscribe::Ask(id(args)?),
        Some((sub, media)) => Unsubscribe::Delete(id(sub)?, SubscriptionMedia::parse(media)?),
    })
}

pub(super) const SEARCHNOW: Spec = Spec {
    name: "searchnow",
    about: &i18n::SEARCHNOW,
    check: Some(args::one_id),
    run: Some(|cx, job, _| {
        Box::pin(async move {
            let sub = id(job.args.trim()).ok_or_else(|| super::not_runnable(job))?;
            cx.mp.search_subscription_now(sub).await?;
            Ok(Done {
                fields: vec![("mp_subscription_id".into(), sub.to_string())],
                ..Done::new(
                    cx.render.search_now(sub),
                    format!("search requested for subscription {sub}"),
                )
            })
        })
    }),
    house: None,
};

/// `/subscriptions`: the asker's own (MoviePilot's "my subscriptions", plus the ones oncebot
/// recorded as theirs), every one with owners for `all`, every one for an asker without a name.
async fn list(
    cx: &Context<'_>,
    job: &Job,
    all: bool,
) -> Result<(Vec<Subscription>, Whose), MpError> {
    match job.requester.as_deref() {
        Some(me) if !all => {
            if !any_recorded_owner(cx).await? {
                return Ok((cx.mp.user_subscriptions(me).await?, Whose::Own));
            }
            let mut subs = cx.mp.list_subscriptions().await?;
            let ask = service_owned_rows(cx, &subs);
            fill_recorded_owners(cx, &mut subs, ask).await?;
            subs.retain(|s| s.username.as_deref() == Some(me));
            Ok((subs, Whose::Own))
        }
        _ => {
            let mut subs = cx.mp.list_subscriptions().await?;
            resolve_owners(cx, &mut subs).await?;
            Ok((subs, if all { Whose::Everyone } else { Whose::Unsplit }))
        }
    }
}

/// `/unsubscribe <id>`: looks the subscription up in the list (v2.5.6 answers 500 to
/// `GET /api/v1/subscribe/<id>` for a missing id) and asks, naming it, with Confirm / Cancel.
/// Confirm runs `/unsubscribe <id> <media>`, so a later subscription that MoviePilot gives the
/// same id is a different command with buttons of its own. A missing id gets no buttons.
async fn ask_unsubscribe(cx: &Context<'_>, job: &Job, id: u64) -> Result<Done, MpError> {
    let r = &cx.render;
    let mut subs = cx.mp.list_subscriptions().await?;
    resolve_owners(cx, &mut subs).await?;
    let Some(sub) = subs.iter().find(|s| s.id == id) else {
        return Ok(Done::new(
            r.no_such_subscription(id),
            format!("no subscription {id}"),
        ));
    };
    let whose = ownership_check(cx, job, sub)?;
    let media = SubscriptionMedia::of(sub.tmdb_id, sub.season, &sub.name);
    let confirm = run_button(
        job,
        Command::Unsubscribe,
        format!("{id} {}", media.args()),
        Command::Unsubscribe.window(&cx.settings.commands),
    );
    Ok(Done {
        reply: r.confirm_unsubscribe(id, &sub.name, sub.season) + &whose,
        result: format!("asked to confirm deleting subscription {id}"),
        fields: vec![("mp_subscription_id".into(), id.to_string())],
        buttons: confirm_or_cancel(cx, job, confirm),
        ..Done::default()
    })
}

/// The Confirm button's delete: only while `id` still names `media`, and (for a `user`) is
/// theirs. Looking first is also how a crashed delete is verified: gone means done.
async fn unsubscribe(
    cx: &Context<'_>,
    job: &Job,
    id: u64,
    media: &SubscriptionMedia,
    recovered: bool,
) -> Result<Done, MpError> {
    let r = &cx.render;
    let mut subs = cx.mp.list_subscriptions().await?;
    resolve_owners(cx, &mut subs).await?;
    let fields = |outcome: MpOutcome| {
        vec![
            ("mp_subscription_id".into(), id.to_string()),
            outcome.field(),
        ]
    };
    let Some(sub) = subs.iter().find(|s| s.id == id) else {
        let (reply, outcome) = if recovered {
            (r.unsubscribe_verified(id), MpOutcome::VerifiedDeleted)
        } else {
            (r.subscription_gone(id), MpOutcome::AlreadyGone)
        };
        return Ok(Done {
            fields: fields(outcome),
            ..Done::new(reply, format!("subscription {id} is gone"))
        });
    };
    if SubscriptionMedia::of(sub.tmdb_id, sub.season, &sub.name) != *media {
        return Err(MpError::Declined(r.subscription_replaced(id, &sub.name)));
    }
    let whose = ownership_check(cx, job, sub)?;
    cx.mp.delete_subscription(id).await?;
    if let Err(e) = cx.ledger.forget_owner(id, sub.tmdb_id, sub.season).await {
        tracing::warn!(error = %e, "could not forget the deleted subscription's recorded owner");
    }
    Ok(Done {
        fields: fields(MpOutcome::Deleted),
        ..Done::new(
            r.unsubscribed(id, &sub.name, sub.season) + &whose,
            format!("deleted subscription {id}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_id_asks_and_an_id_with_its_media_deletes() {
        assert_eq!(parse_unsubscribe("7"), Some(Unsubscribe::Ask(7)));
        let three_body = SubscriptionMedia::Tmdb {
            tmdb_id: 108545,
            season: Some(1),
        };
        assert_eq!(
            parse_unsubscribe(&format!("7 {}", three_body.args())),
            Some(Unsubscribe::Delete(7, three_body))
        );
        let named = SubscriptionMedia::Name("流浪地球 2".into());
        assert_eq!(named.args(), "name:流浪地球 2");
        assert_eq!(
            parse_unsubscribe("7 name:流浪地球 2"),
            Some(Unsubscribe::Delete(7, named))
        );
        assert_eq!(parse_unsubscribe("7 tmdb:x"), None);
        assert_eq!(parse_unsubscribe("0"), None);
    }
}
