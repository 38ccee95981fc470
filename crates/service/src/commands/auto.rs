//! The ⚡ Auto button under a release list (issue 24, MoviePilot's 自动选择下载): one job that
//! runs two existing steps in order, each through its own command's code, and reports both in
//! one message.
//!
//! Policy, in one place:
//! - **The best release is release 1.** MoviePilot answers a resource search sorted by its own
//!   priority rules (site priority, rule priority, seeders: `TorrentHelper.sort_torrents`), and
//!   the stored list keeps that order, so its first release is MoviePilot's best. It is
//!   downloaded exactly as `下载 1` downloads it (`releases::grab`: the intent noted before the
//!   add, verified in the download history after a crash, never blindly sent again).
//! - **One download across the two buttons.** Before the download the job takes `下载 1`'s own
//!   business key (the release's, `lua/step_key.lua`, atomic and fenced): held by a `下载 1` job
//!   that has not failed, that job is the download and nothing is sent; taken, a `下载 1` tapped
//!   afterwards is answered as this job's duplicate. A refused download gives the key back.
//! - **For one season, then the season is subscribed** as `/subscribe tmdb:<id> S<n>` does
//!   (looked for under the media lock first, the library checked: its confirmation lists what is
//!   missing; one that exists is "already"); MoviePilot's subscription then fetches the episodes
//!   the release did not bring. A movie has no second step; a list of every season subscribes
//!   to none (which season is the user's choice).
//! - **Each step's outcome stands alone.** A refused download does not stop the subscription,
//!   and a subscription MoviePilot does not make (after one more look) does not undo the
//!   download; the report says which step did what. The job fails only when neither did
//!   anything, and is held for a person when the download cannot be decided.
//! - **Recovery** is the job's policy (`VerifyThenRetry`): a later attempt runs both steps
//!   again, and each verifies first (the download from the job's notes, the subscription by
//!   looking), so a SIGKILL anywhere re-runs nothing blindly.

use super::args::{ReleaseTarget, id, parse_release_target};
use super::grab::{best_identity, grab_key_args};
use super::{Asker, Command, Spec, idempotency_key};
use crate::i18n;
use crate::ledger::{Job, JobState, StepKey};
use crate::moviepilot::{MediaKind, MpError, ReleaseIdentity};
use crate::vocabulary::MpOutcome;
use crate::worker::context::{Context, Done, Settle, ledger_error, note, noted};

/// The ⚡ Auto button's job (`<list> tmdb:<id> [S<n> | tv]`, the search's media): never typed.
pub(super) const AUTO: Spec = Spec {
    name: "auto",
    about: &i18n::AUTO,
    check: None,
    run: Some(|cx, job, recovered| {
        Box::pin(async move {
            let (list, media) = parse(&job.args).ok_or_else(|| super::not_runnable(job))?;
            auto(cx, job, list, media, recovered).await
        })
    }),
    house: None,
};

/// A ⚡ Auto job's arguments: the list's job id, and the search's media.
fn parse(args: &str) -> Option<(u64, ReleaseTarget)> {
    let (list, media) = args.trim().split_once(' ')?;
    Some((id(list)?, parse_release_target(media)?))
}

/// The job field that names the job whose download this is (this one, or a `下载 1` tapped
/// first).
const HOLDER_FIELD: &str = "auto_download_job";

/// The job field noted (fenced) when MoviePilot refused the download: an attempt after a crash
/// in the subscription step reports the refusal again instead of sending the add again.
const REFUSED_FIELD: &str = "auto_download_refused";

/// One step's outcome: its line in the report, and what it produced.
struct Step {
    line: String,
    /// The step did what it was for (a download started or verified, a subscription made or
    /// found, or the library already holding the season).
    ok: bool,
    done: Done,
}

impl Step {
    fn failed(line: String, error: String) -> Step {
        Step {
            line: format!("✗ {line}"),
            ok: false,
            done: Done {
                settle: Some(Settle::Failed { error }),
                ..Done::default()
            },
        }
    }
}

/// Runs the ⚡ Auto job of list `list` for `media` (see the module's doc).
async fn auto(
    cx: &Context<'_>,
    job: &Job,
    list: u64,
    (tmdb_id, kind, season): (u64, MediaKind, Option<u32>),
    recovered: bool,
) -> Result<Done, MpError> {
    let r = &cx.render;
    let first = download(cx, job, list).await?;
    crate::crash_point!("worker.auto_between_steps");
    let second = match (kind, season) {
        (MediaKind::Tv, Some(n)) => {
            tell_progress(cx, &first.line).await;
            Some(subscribe(cx, job, (tmdb_id, n), recovered).await?)
        }
        (MediaKind::Tv, None) => Some(Step {
            line: format!("· {}", r.auto_no_season()),
            ok: false,
            done: Done::default(),
        }),
        (MediaKind::Movie, _) => None,
    };
    Ok(report(cx, first, second))
}

/// Step 1: release 1 of the list, downloaded once across `下载 1` and this button.
async fn download(cx: &Context<'_>, job: &Job, list: u64) -> Result<Step, MpError> {
    let r = &cx.render;
    let Some(identity) = best_identity(cx, job, list).await? else {
        return Ok(Step::failed(
            r.release_list_expired(),
            "the release list expired".into(),
        ));
    };
    if let Some(reason) = noted(cx, job.id, REFUSED_FIELD).await? {
        let line = r.download_refused(&identity.title, &identity.site);
        return Ok(Step::failed(line, reason));
    }
    let asker = Asker::for_command(
        Command::Grab,
        job.chat_id,
        job.user_id,
        job.requester.as_deref(),
    );
    let key_args = grab_key_args(&identity);
    let digest = idempotency_key(asker, Command::Grab, &key_args);
    let window = Command::Grab.window(&cx.settings.commands);
    let taken = cx
        .ledger
        .take_step_key(cx.attempt, &digest, window, HOLDER_FIELD)
        .await
        .map_err(ledger_error)?;
    match taken {
        StepKey::Stale => Err(MpError::Transient(
            "this attempt no longer owns the job; not downloading".into(),
        )),
        StepKey::Held(id, state) => {
            tracing::info!(holder = id, "release 1 is another job's download; not sent");
            let state = state.parse().unwrap_or(JobState::Pending);
            Ok(Step {
                line: format!("✓ {}", r.auto_download_is_job(id, state)),
                ok: true,
                done: Done::default(),
            })
        }
        StepKey::Taken(_) => grab(cx, job, list, (&identity, &digest)).await,
    }
}

/// Step 1 once this job holds the download's key: `下载 1`'s own download (`releases::grab`),
/// its outcome as a line; a refused one gives the key back.
async fn grab(
    cx: &Context<'_>,
    job: &Job,
    list: u64,
    (identity, digest): (&ReleaseIdentity, &str),
) -> Result<Step, MpError> {
    let refused = |error: String| {
        let line = cx.render.download_refused(&identity.title, &identity.site);
        Step::failed(line, error)
    };
    let step = match super::grab::grab(cx, job, list, 1).await {
        Ok(done) => match done.settle.clone() {
            None => Step {
                line: format!("✓ {}", done.reply),
                ok: true,
                done,
            },
            Some(Settle::Failed { error }) => refused(error),
            Some(Settle::Held { .. }) => Step {
                line: format!("⚠ {}", done.reply),
                ok: false,
                done,
            },
        },
        Err(MpError::Permanent(reason)) => refused(reason),
        Err(e) => return Err(e),
    };
    if let Some(Settle::Failed { error }) = &step.done.settle {
        // Nothing was downloaded: a `下载 1` tapped later may try; this job does not again.
        note(cx, &[(REFUSED_FIELD, error.clone())]).await?;
        if let Err(e) = cx.ledger.release_step_key(cx.attempt, digest).await {
            tracing::warn!(error = %e, "could not give back the download's key; it expires with its window");
        }
    }
    Ok(step)
}

/// Step 2: the season, subscribed as `/subscribe tmdb:<id> S<n>` does. An answer that did not
/// come (or may have been lost) is looked for once more, under the media lock, before the
/// step is reported as not done; a refusal credentials need goes up (the job waits).
async fn subscribe(
    cx: &Context<'_>,
    job: &Job,
    (tmdb_id, season): (u64, u32),
    recovered: bool,
) -> Result<Step, MpError> {
    let mut result =
        super::subscribe::subscribe_season(cx, job, (tmdb_id, season), recovered).await;
    if let Err(e @ (MpError::Transient(_) | MpError::Uncertain(_))) = &result {
        tracing::warn!(reason = %e, "the season's subscription did not answer; looking again");
        result = super::subscribe::subscribe_season(cx, job, (tmdb_id, season), true).await;
    }
    match result {
        Ok(done) => Ok(Step {
            line: format!("✓ {}", done.reply),
            ok: true,
            done,
        }),
        Err(e @ MpError::CredentialsRefused(_)) => Err(e),
        Err(MpError::Declined(text)) => Ok(Step::failed(text.clone(), text)),
        Err(e) => Ok(Step::failed(
            cx.render.auto_subscribe_failed(tmdb_id, season),
            e.to_string(),
        )),
    }
}

/// The progress message (if the job is slow enough to have one) says the download's outcome
/// and that the season is being subscribed. Best effort: the result replaces it either way.
async fn tell_progress(cx: &Context<'_>, download: &str) {
    let text = cx.render.auto_subscribing(download);
    if let Err(e) = cx.ledger.queue_step(cx.attempt, &text).await {
        tracing::warn!(error = %e, "could not edit the progress message");
    }
}

/// The one message: each step's line; the job's fields of both (the subscription's outcome as
/// `mp_subscribe_outcome`); succeeded unless neither step did anything, held when the download
/// cannot be decided.
fn report(cx: &Context<'_>, first: Step, second: Option<Step>) -> Done {
    let mut lines = vec![first.line.clone()];
    let mut fields = first.done.fields.clone();
    let mut results = vec![format!("download: {}", first.done.result)];
    let (mut buttons, mut asked) = (None, first.done.asked.clone());
    if let Some(second) = &second {
        lines.push(second.line.clone());
        results.push(format!("subscription: {}", second.done.result));
        fields.extend(second.done.fields.iter().map(|(k, v)| match k.as_str() {
            MpOutcome::FIELD => ("mp_subscribe_outcome".to_string(), v.clone()),
            _ => (k.clone(), v.clone()),
        }));
        buttons = second.done.buttons.clone();
        asked = second.done.asked.clone().or(asked);
    }
    let settle = match (&first.done.settle, second.as_ref()) {
        (Some(held @ Settle::Held { .. }), _) => Some(held.clone()),
        (_, Some(s)) if s.ok || first.ok => None,
        (_, None) if first.ok => None,
        (Some(Settle::Failed { error }), _) => Some(Settle::Failed {
            error: error.clone(),
        }),
        _ => Some(Settle::Failed {
            error: "neither step was done".into(),
        }),
    };
    Done {
        reply: cx.render.auto_report(&lines),
        result: results.join("; "),
        fields,
        buttons,
        settle,
        asked,
        ..Done::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_auto_job_names_its_list_and_the_searchs_media() {
        assert_eq!(
            parse("12 tmdb:108545 S1"),
            Some((12, (108545, MediaKind::Tv, Some(1))))
        );
        assert_eq!(
            parse("12 tmdb:438631"),
            Some((12, (438631, MediaKind::Movie, None)))
        );
        assert_eq!(parse("12"), None);
        assert_eq!(parse("0 tmdb:1"), None);
    }
}
