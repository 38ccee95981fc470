//! `/restart`: MoviePilot restarted once, and known to be back.
//!
//! Asked first, naming what a restart cuts off (the scheduler jobs MoviePilot is running and
//! oncebot's own jobs under way); its Confirm button makes the job. That job notes that the call
//! is going out (`restart_sent`) before it sends it, so an attempt after a crash never sends it
//! again: it only watches. A restart is done when MoviePilot was seen failing at least once and
//! then answering again; the user is told how long it was gone. After a crash, MoviePilot seen
//! not answering by the new process (at its start, before it could connect) counts as seen gone. MoviePilot that keeps answering
//! after it accepted the restart did not restart (#2495: "系统正在重启", then nothing): the job
//! fails and may be asked again. What cannot be told (a crash, then MoviePilot answering
//! throughout; or MoviePilot gone for longer than `commands.restart_watch_secs`) is held for a
//! person.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::args::RESTART_CONFIRMED;
use super::{Command, Spec, args, run_button};
use crate::i18n;
use crate::ledger::{Job, JobFilter};
use crate::moviepilot::MpError;
use crate::vocabulary::{JobState, MpOutcome};
use crate::worker::context::{
    Context, Done, Settle, confirm_or_cancel, ledger_error, note, noted, refused,
};

/// Typed, it takes no arguments and always asks first: only its Confirm button's job says
/// "confirmed".
pub(super) const RESTART: Spec = Spec {
    name: "restart",
    about: &i18n::RESTART,
    check: Some(args::none),
    run: Some(|cx, job, _| {
        Box::pin(async move {
            match job.args.trim() {
                "" => ask(cx, job).await,
                RESTART_CONFIRMED => restart(cx, job).await,
                _ => Err(super::not_runnable(job)),
            }
        })
    }),
    house: None,
};

/// The job field noting the restart call: when it was about to go out (ms since the epoch);
/// empty once a call that never left has been given up.
const RESTART_SENT: &str = "restart_sent";

/// How long one probe may take, and the pause between probes.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
const PROBE_EVERY: Duration = Duration::from_millis(500);

/// `/restart`: the question, with what a restart would cut off, and Confirm / Cancel.
async fn ask(cx: &Context<'_>, job: &Job) -> Result<Done, MpError> {
    let r = &cx.render;
    let running = cx.mp.running_scheduler_jobs().await;
    let filter = JobFilter {
        status: Some(JobState::Running),
        chat_id: None,
        limit: 100,
    };
    let ours = match cx.ledger.list_jobs(&filter).await {
        Ok(jobs) => jobs.iter().filter(|j| j.id != job.id).count(),
        Err(e) => return Err(ledger_error(e)),
    };
    let confirm = run_button(
        job,
        Command::Restart,
        RESTART_CONFIRMED,
        Command::Restart.window(&cx.settings.commands),
    );
    Ok(Done {
        reply: r.confirm_restart(&running, ours),
        result: "asked to confirm a restart".into(),
        buttons: confirm_or_cancel(cx, job, confirm),
        ..Done::default()
    })
}

/// The Confirm button's job: send the restart unless an earlier attempt did, then watch.
async fn restart(cx: &Context<'_>, job: &Job) -> Result<Done, MpError> {
    let sent_at = sent_at(cx, job).await?;
    let sent_before = sent_at.is_some();
    if let Some(at) = sent_at
        && cx.mp.last_unreachable().is_some_and(|down| down > at)
        && cx.mp.is_answering(PROBE_TIMEOUT).await
    {
        // This process found MoviePilot gone after the restart went out (at its start, while
        // the previous one had died), and it answers now: it restarted.
        let gone = at.elapsed().map_or(1, |d| d.as_secs().max(1));
        return Ok(back(cx, gone));
    }
    if sent_before {
        tracing::info!(
            "an earlier attempt sent the restart; watching MoviePilot, not sending it again"
        );
    } else {
        note(cx, &[(RESTART_SENT, crate::worker::now_ms().to_string())]).await?;
        crate::crash_point!("worker.before_restart_call");
        match cx.mp.restart().await {
            // An answer lost on the way: MoviePilot may be going down already. Watch.
            Ok(()) | Err(MpError::Uncertain(_)) => {}
            Err(MpError::Transient(e)) => {
                // The call never left: a later attempt may send it.
                note(cx, &[(RESTART_SENT, String::new())]).await?;
                return Err(MpError::Transient(e));
            }
            Err(MpError::Declined(why)) => {
                let error = format!("MoviePilot would not restart: {why}");
                return Ok(refused(cx, job, cx.render.restart_refused(), error));
            }
            Err(e) => return Err(e),
        }
        crate::crash_point!("worker.after_restart_call");
    }
    Ok(watch(cx, sent_before).await)
}

/// Watches MoviePilot go and come back, for `commands.restart_watch_secs` at most.
async fn watch(cx: &Context<'_>, sent_before: bool) -> Done {
    let r = &cx.render;
    let limit = Duration::from_secs(cx.settings.commands.restart_watch_secs);
    let start = Instant::now();
    let mut gone_since: Option<Instant> = None;
    while start.elapsed() < limit {
        match (cx.mp.is_answering(PROBE_TIMEOUT).await, gone_since) {
            (false, None) => gone_since = Some(Instant::now()),
            (true, Some(at)) => return back(cx, at.elapsed().as_secs().max(1)),
            _ => {}
        }
        tokio::time::sleep(PROBE_EVERY).await;
    }
    let watched = limit.as_secs();
    let (settle, outcome, reply) = match (gone_since, sent_before) {
        (Some(_), _) => (
            Settle::Held {
                error: format!(
                    "MoviePilot went down after the restart and has not answered for {watched} s"
                ),
            },
            MpOutcome::NotBack,
            r.restart_not_back(watched),
        ),
        (None, true) => (
            Settle::Held {
                error: "the restart was sent before oncebot stopped, and MoviePilot answered \
                        throughout the check: whether it restarted cannot be told"
                    .into(),
            },
            MpOutcome::Unknown,
            r.restart_unknown(),
        ),
        (None, false) => (
            Settle::Failed {
                error: format!(
                    "MoviePilot accepted the restart but kept answering for {watched} s"
                ),
            },
            MpOutcome::NotRestarted,
            r.restart_not_seen(watched),
        ),
    };
    Done {
        fields: vec![outcome.field()],
        settle: Some(settle),
        ..Done::new(reply, outcome.to_string())
    }
}

/// MoviePilot restarted and was gone about `down` seconds.
fn back(cx: &Context<'_>, down: u64) -> Done {
    Done {
        fields: vec![
            MpOutcome::Restarted.field(),
            ("mp_down_secs".into(), down.to_string()),
        ],
        ..Done::new(
            cx.render.restart_back(down),
            format!("restarted; gone about {down} s"),
        )
    }
}

/// When an earlier attempt of this job sent (or was about to send) the restart; `None` if none
/// did.
async fn sent_at(cx: &Context<'_>, job: &Job) -> Result<Option<SystemTime>, MpError> {
    Ok(noted(cx, job.id, RESTART_SENT)
        .await?
        .and_then(|v| v.parse::<u64>().ok())
        .map(|ms| UNIX_EPOCH + Duration::from_millis(ms)))
}
