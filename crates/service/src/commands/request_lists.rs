//! The lists of media requests (issue 44): `/requests`, an admin's, the pending requests oldest
//! first, each with the card's buttons (Approve, Approve as best version for a subscription,
//! Decline); and `/mine`, anyone's, their own requests newest first with their state, a pending
//! one with its Withdraw button. Both read the ledger only, paged as `/users` is.
//!
//! A list's buttons are request.lua's, as the card's and the requester's own are (`r:` data,
//! the same `decide` and `withdraw` token actions), so a tap on a list decides or withdraws
//! exactly as one on a card: once, every card edited, the requester told. Each lives as long as
//! its request (`Listed`), bound to the chat the list was shown in. The list itself is a
//! snapshot: a tap leaves it as shown and its answer says what happened (a later tap on it is
//! told the request was decided); the command shows the list again.

use std::time::Duration;

use super::pages;
use super::{Spec, args};
use crate::i18n::{self, Render};
use crate::ledger::{Job, Listed, Owner, StoredRequest, TokenAction, TokenGroup};
use crate::moviepilot::MpError;
use crate::telegram::keyboard;
use crate::worker::context::{Context, Done, ledger_error, now_ms};

pub(super) const REQUESTS: Spec = Spec {
    name: "requests",
    about: &i18n::REQUESTS,
    check: Some(args::none),
    run: Some(|cx, job, _| Box::pin(pending(cx, job))),
    house: None,
};

pub(super) const MINE: Spec = Spec {
    name: "mine",
    about: &i18n::MINE,
    check: Some(args::none),
    run: Some(|cx, job, _| Box::pin(mine(cx, job))),
    house: None,
};

/// The most requests a list shows: a person keeps at most 50 (include/requests.lua's
/// KEEP_PER_PERSON), and ten pages of pending ones are more than a household decides at once.
const LISTED_MOST: usize = 50;

/// The pending requests an admin may decide, oldest first, each with its buttons.
async fn pending(cx: &Context<'_>, job: &Job) -> Result<Done, MpError> {
    let now = now_ms() as i64;
    let mut all = cx
        .ledger
        .pending_requests(LISTED_MOST + 1)
        .await
        .map_err(ledger_error)?;
    // Past its time but not yet swept (within 30 s): expired, not decidable.
    all.retain(|r| live(r, now));
    let more = all.len() > LISTED_MOST;
    all.truncate(LISTED_MOST);
    if all.is_empty() {
        return Ok(Done::new(
            cx.render.no_pending_requests(),
            "0 requests".into(),
        ));
    }
    let paged = pages::paged(
        cx,
        job,
        all.len(),
        |range| cx.render.pending_requests_page(&all, range, more),
        |group, i| decide_row(&cx.render, job, group, &all[i], now),
    )
    .await?;
    Ok(listed(paged, all.len()))
}

/// The asker's own requests, newest first, each with its state; a pending one with Withdraw.
async fn mine(cx: &Context<'_>, job: &Job) -> Result<Done, MpError> {
    let now = now_ms() as i64;
    let all = cx
        .ledger
        .requests_of(job.user_id, LISTED_MOST)
        .await
        .map_err(ledger_error)?;
    if all.is_empty() {
        return Ok(Done::new(
            cx.render.no_requests_of_mine(),
            "0 requests".into(),
        ));
    }
    let paged = pages::paged(
        cx,
        job,
        all.len(),
        |range| cx.render.my_requests_page(&all, range, now),
        |group, i| withdraw_row(&cx.render, job, group, &all[i], now),
    )
    .await?;
    Ok(listed(paged, all.len()))
}

/// Whether `r` may still be decided or withdrawn at `now` (ms).
fn live(r: &StoredRequest, now: i64) -> bool {
    r.state == "pending" && r.expires_at > now
}

/// How long `r`'s buttons live: its remaining time.
fn remaining(r: &StoredRequest, now: i64) -> Duration {
    Duration::from_millis(r.expires_at.saturating_sub(now).max(1000) as u64)
}

/// Approve, Approve as best version (a subscription's), Decline of `r`, for any admin in the
/// list's chat: the card's decisions.
fn decide_row(
    render: &Render,
    job: &Job,
    group: &mut TokenGroup,
    r: &StoredRequest,
    now: i64,
) -> Vec<(String, String)> {
    let listed = Listed {
        list: job.id,
        ttl: remaining(r, now),
    };
    let [approve, best, decline] = render.texts().request_buttons();
    let mut decisions = vec![approve];
    if r.best {
        decisions.push(best);
    }
    decisions.push(decline);
    decisions
        .into_iter()
        .map(|(_, decision)| {
            let label = render.listed_request_button(decision, r.id);
            let action = TokenAction::Decide {
                person: r.user_id,
                decision,
                request: Some(r.id),
            };
            let owner = Owner::Admins {
                chat_id: job.chat_id,
            };
            let data = group.add(owner, &label, action, None);
            group.listed(listed);
            (label, keyboard::as_request(&data))
        })
        .collect()
}

/// A pending request's Withdraw, for its requester in the list's chat; none for the others.
fn withdraw_row(
    render: &Render,
    job: &Job,
    group: &mut TokenGroup,
    r: &StoredRequest,
    now: i64,
) -> Vec<(String, String)> {
    if !live(r, now) {
        return Vec::new();
    }
    let label = render.listed_request_button("withdraw", r.id);
    let owner = Owner::User {
        chat_id: job.chat_id,
        user_id: job.user_id,
    };
    let action = TokenAction::Withdraw {
        request: Some(r.id),
    };
    let data = group.add(owner, &label, action, None);
    group.listed(Listed {
        list: job.id,
        ttl: remaining(r, now),
    });
    vec![(label, keyboard::as_request(&data))]
}

/// A list of `n` requests as its reply: its first page, with the buttons of them all.
fn listed(paged: pages::Paged, n: usize) -> Done {
    Done {
        reply: paged.first_text(),
        result: format!("{n} requests"),
        buttons: paged.buttons(),
        ..Done::default()
    }
}
