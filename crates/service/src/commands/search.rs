//! `/search <title>`, plain text in a private chat, and the title searches of `订阅 X` /
//! `洗版 X` (`subscribe::Subscribe::Title`): MoviePilot's matches, paged, each with what the
//! library holds of it, and, for someone who may act, its Subscribe button (and a plain search's
//! resource-search button).

use super::{Command, Spec, args, run_button};
use crate::i18n;
use crate::ledger::{Job, TokenAction, TokenGroup};
use crate::moviepilot::{Library, MediaItem, MpError};
use crate::worker::context::{Context, Done, owner, reply_to};

pub(super) const SEARCH: Spec = Spec {
    name: "search",
    about: &i18n::SEARCH,
    check: Some(args::title),
    run: Some(|cx, job, _| {
        Box::pin(async move {
            let title = args::non_empty(job.args.trim()).ok_or_else(|| super::not_runnable(job))?;
            search(cx, job, &title, None).await
        })
    }),
    house: None,
};

/// The command a subscription's buttons run: `/best` (洗版) or `/subscribe`.
pub(super) fn verb(best: bool) -> Command {
    if best {
        Command::Best
    } else {
        Command::Subscribe
    }
}

/// `/search` (`choose`: `订阅 X` / `洗版 X`, which offer the matches to subscribe to with
/// that command).
pub(super) async fn search(
    cx: &Context<'_>,
    job: &Job,
    title: &str,
    choose: Option<Command>,
) -> Result<Done, MpError> {
    let items = cx.mp.search_media(title).await?;
    let library = super::library::check_items(cx, &items).await;
    let r = &cx.render;
    let text = |page, kept| match choose {
        Some(Command::Best) => r.best_results(title, (&items, &library), page, kept),
        _ => r.search_results(title, (&items, &library), page, kept, choose.is_some()),
    };
    let row = |group: &mut TokenGroup, i| {
        subscribe_row(cx, job, group, (i, &items[i], library.get(i)), choose)
    };
    super::pages::matches(cx, job, &items, text, row).await
}

/// What a requester's Subscribe on this match asks for (the request its tap makes), or `None`
/// when the tap runs a job: media the library has runs the look as anyone's (a job that says
/// it is there, with the anyway button that asks), so no request is made unless they insist.
fn requester_asking(
    cx: &Context<'_>,
    job: &Job,
    action: &mut TokenAction,
    (item, library): (&MediaItem, Option<&Library>),
    command: Command,
) -> Option<crate::ledger::Asking> {
    let TokenAction::Run(spec) = action else {
        return None;
    };
    if command == Command::Subscribe && matches!(library, Some(Library::Present)) {
        spec.least_role = spec.least_role.min(crate::vocabulary::Role::Requester);
    }
    if job.role >= spec.least_role {
        return None;
    }
    let texts = cx.render.texts();
    let named = texts.asked_media(&item.title, item.year.as_deref(), None);
    let line = library.and_then(|l| cx.render.library_line(l));
    let what =
        texts.asking_subscription(&named, command == Command::Best, &line.unwrap_or_default());
    Some(super::requests::asking(
        cx,
        job,
        spec,
        what,
        item.poster.as_deref(),
    ))
}

/// The Subscribe button of search result `i` (0-based) when it has a TMDB id, bound to the
/// user who searched; it runs `/subscribe <args>` (`choose`: that command, `/best` for 洗版)
/// as if typed (see `i18n::subscribe_args`). Siblings, on every page: one tap uses them all.
/// None for a viewer (a button they could not use would only be refused). A plain search's row
/// (`choose` none) also has a solo button that starts a resource search for that match (it
/// uses nothing else up).
fn subscribe_row(
    cx: &Context<'_>,
    job: &Job,
    group: &mut TokenGroup,
    (i, item, library): (usize, &MediaItem, Option<&Library>),
    choose: Option<Command>,
) -> Vec<(String, String)> {
    let command = choose.unwrap_or(Command::Subscribe);
    let Some(args) = i18n::subscribe_args(item) else {
        return Vec::new();
    };
    // A requester's Subscribe asks an admin (issue 44); a series' season choice only looks.
    let requesting = super::requests::asks(job, command);
    if job.role < command.least_role(&args) && !requesting {
        return Vec::new();
    }
    let owner = owner(job);
    let label = match command {
        Command::Best => cx.render.best_button(i + 1, item),
        _ => cx.render.subscribe_button(i + 1, item),
    };
    let mut action = run_button(job, command, args, command.window(&cx.settings.commands));
    let asking = requesting
        .then(|| requester_asking(cx, job, &mut action, (item, library), command))
        .flatten();
    let data = group.add(owner, &label, action, reply_to(job));
    if let Some(asking) = asking {
        group.asking(asking);
    }
    let mut row = vec![(label, data)];
    if choose.is_none()
        && let Some(button) =
            super::releases::release_search_button(cx, job, group, i + 1, item, true)
    {
        row.push(button);
    }
    row
}
