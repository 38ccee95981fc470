//! The lists of media requests (issue 44): `/requests`, an admin's, the pending requests oldest
//! first, each with the card's buttons (Approve, Approve as best version for a subscription,
//! Decline); and `/mine`, anyone's, their own requests and live cards (issue 45) newest first
//! with their state, a pending request with its Withdraw button, a card with Show (its text
//! sent again, in reply to the card: private chats have no message links; tap.lua, no job).
//! Both read the ledger only, paged as `/users` is.
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
use crate::i18n::{self, Mine, Render};
use crate::ledger::{Card, Job, Listed, Owner, StoredRequest, TokenAction, TokenGroup};
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

/// The asker's own requests and live cards, newest first, each with its state; a pending
/// request with Withdraw, a card with Show.
async fn mine(cx: &Context<'_>, job: &Job) -> Result<Done, MpError> {
    let now = now_ms() as i64;
    let requests = cx
        .ledger
        .requests_of(job.user_id, LISTED_MOST)
        .await
        .map_err(ledger_error)?;
    let cards = cx
        .ledger
        .cards_of(job.user_id, LISTED_MOST)
        .await
        .map_err(ledger_error)?;
    let all = newest_first(&requests, &cards);
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
        |group, i| match all[i] {
            Mine::Request(r) => withdraw_row(&cx.render, job, group, r, now),
            Mine::Card(c, _) => show_row(&cx.render, job, group, c),
        },
    )
    .await?;
    Ok(listed(paged, all.len()))
}

/// Requests (by when they were asked) and cards (by when they opened) in one list, newest
/// first, at most [`LISTED_MOST`]: each input is newest first already. An approved request
/// whose job has a card is that card's line (its answer became the card): one line, not two.
fn newest_first<'a>(requests: &'a [StoredRequest], cards: &'a [Card]) -> Vec<Mine<'a>> {
    let opened = |c: &Card| c.number::<i64>("started_at").unwrap_or_default();
    let carried = |c: &Card| {
        requests
            .iter()
            .find(|r| r.job_id == Some(c.id))
            .map(|r| r.id)
    };
    let carded = |r: &StoredRequest| r.job_id.is_some_and(|j| cards.iter().any(|c| c.id == j));
    let mut all: Vec<(i64, Mine<'a>)> = requests
        .iter()
        .filter(|r| !carded(r))
        .map(|r| (r.asked_at, Mine::Request(r)))
        .chain(cards.iter().map(|c| (opened(c), Mine::Card(c, carried(c)))))
        .collect();
    // Stable: two at the same millisecond keep their order (requests first).
    all.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    all.truncate(LISTED_MOST);
    all.into_iter().map(|(_, item)| item).collect()
}

/// A card's Show, for its person in the list's chat: its text sent again (tap.lua), in reply
/// to the card when it is in that chat. Read-only and reusable, as a page button: no job.
fn show_row(
    render: &Render,
    job: &Job,
    group: &mut TokenGroup,
    card: &Card,
) -> Vec<(String, String)> {
    let label = render.show_card_button(card.id);
    let owner = Owner::User {
        chat_id: job.chat_id,
        user_id: job.user_id,
    };
    // Sent only while the card has no text yet: then its message still says the job's reply,
    // and the list's words for its opening state are as true.
    let text = render.card(
        card.text("title"),
        &render.card_state(card.state, card.number("percent")),
    );
    let action = TokenAction::Show {
        card: card.id,
        text,
    };
    let data = group.add(owner, &label, action, None);
    vec![(label, data)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::CardState;

    fn request(id: u64, asked_at: i64) -> StoredRequest {
        StoredRequest {
            id,
            asked_at,
            ..StoredRequest::default()
        }
    }

    fn card(id: u64, started_at: i64) -> Card {
        Card {
            id,
            state: CardState::Started,
            seq: 0,
            chat_id: 1,
            fields: [("started_at".to_string(), started_at.to_string())].into(),
        }
    }

    fn ids(all: &[Mine<'_>]) -> Vec<String> {
        all.iter()
            .map(|m| match m {
                Mine::Request(r) => format!("r{}", r.id),
                Mine::Card(c, None) => format!("c{}", c.id),
                Mine::Card(c, Some(r)) => format!("c{}/r{r}", c.id),
            })
            .collect()
    }

    /// Requests by their asking, cards by their opening, interleaved newest first, at most
    /// LISTED_MOST of them (the oldest left out).
    #[test]
    fn requests_and_cards_interleave_newest_first_within_the_bound() {
        let requests = [request(3, 300), request(2, 200), request(1, 100)];
        let cards = [card(9, 250), card(8, 50)];
        assert_eq!(
            ids(&newest_first(&requests, &cards)),
            ["r3", "c9", "r2", "r1", "c8"]
        );
        // Request 2 was approved and its job opened card 9: one line, the card's.
        let approved = [
            request(3, 300),
            StoredRequest {
                job_id: Some(9),
                ..request(2, 200)
            },
        ];
        assert_eq!(ids(&newest_first(&approved, &cards)), ["r3", "c9/r2", "c8"]);
        let many: Vec<StoredRequest> = (0..40).map(|i| request(i, 1_000 - i as i64)).collect();
        let cards: Vec<Card> = (0..40).map(|i| card(100 + i, 500 - i as i64)).collect();
        let all = newest_first(&many, &cards);
        assert_eq!(all.len(), LISTED_MOST);
        assert_eq!(ids(&all[39..41]), ["r39", "c100"]);
    }
}
