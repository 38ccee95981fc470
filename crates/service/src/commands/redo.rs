//! `/redo <record>`: one of MoviePilot's transfer history records filed again, once.
//!
//! MoviePilot deletes what the record filed before it files the source again, so a second redo
//! would delete the first one's file. The typed command only asks, naming both paths; its
//! Confirm button makes the job, which reads the record again, notes the paths in the job (what
//! a person sees if it is held) and sends the redo. After a crash it is never sent again: the
//! policy holds it for a person.

use super::args::{RESTART_CONFIRMED, id};
use super::{Command, Spec, args, run_button};
use crate::i18n;
use crate::ledger::Job;
use crate::moviepilot::MpError;
use crate::vocabulary::MpOutcome;
use crate::worker::context::{Context, Done, confirm_or_cancel, note, refused};

/// `/redo <record>` asks; its Confirm button's job (`<record> confirmed`) files it again.
pub(super) const REDO: Spec = Spec {
    name: "redo",
    about: &i18n::REDO,
    check: Some(args::one_id),
    run: Some(|cx, job, _| {
        Box::pin(async move {
            match job.args.trim().split_once(' ') {
                None => {
                    ask(
                        cx,
                        job,
                        id(job.args.trim()).ok_or_else(|| super::not_runnable(job))?,
                    )
                    .await
                }
                Some((record, RESTART_CONFIRMED)) => {
                    redo(cx, job, id(record).ok_or_else(|| super::not_runnable(job))?).await
                }
                Some(_) => Err(super::not_runnable(job)),
            }
        })
    }),
    house: None,
};

/// `/redo <record>`: the question, naming the file deleted and the one filed again.
async fn ask(cx: &Context<'_>, job: &Job, record: u64) -> Result<Done, MpError> {
    let r = &cx.render;
    let Some(found) = cx.mp.transfer_record(record).await? else {
        return Ok(Done::new(
            r.no_such_record(record),
            format!("no transfer record {record}"),
        ));
    };
    let confirm = run_button(
        job,
        Command::Redo,
        format!("{record} {RESTART_CONFIRMED}"),
        Command::Redo.window(&cx.settings.commands),
    );
    Ok(Done {
        reply: r.confirm_redo(&found),
        result: format!("asked to confirm a redo of transfer record {record}"),
        buttons: confirm_or_cancel(cx, job, confirm),
        ..Done::default()
    })
}

/// The Confirm button's job: the record again, its paths noted, then the redo.
async fn redo(cx: &Context<'_>, job: &Job, record: u64) -> Result<Done, MpError> {
    let r = &cx.render;
    let Some(found) = cx.mp.transfer_record(record).await? else {
        return Err(MpError::Declined(r.no_such_record(record)));
    };
    note(
        cx,
        &[
            ("mp_redo_src", found.src.clone()),
            ("mp_redo_dest", found.dest.clone()),
        ],
    )
    .await?;
    let sent = cx.mp.redo_transfer(record).await;
    crate::crash_point!("worker.after_redo_call");
    match sent {
        Ok(()) => Ok(Done {
            fields: vec![MpOutcome::Redone.field()],
            ..Done::new(
                r.redo_done(&found),
                format!("transfer record {record} filed again"),
            )
        }),
        Err(MpError::Declined(why)) => {
            let error = format!("MoviePilot did not file record {record} again: {why}");
            Ok(refused(cx, job, &r.redo_refused(record), error))
        }
        Err(e) => Err(e),
    }
}
