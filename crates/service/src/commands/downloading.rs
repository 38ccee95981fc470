//! `/downloading`: what MoviePilot's downloader is fetching now, one line per torrent. Reads
//! only, takes no arguments.

use super::{Spec, args};
use crate::i18n;
use crate::ledger::Job;
use crate::moviepilot::MpError;
use crate::worker::context::{Context, Done};

pub(super) const DOWNLOADING: Spec = Spec {
    name: "downloading",
    about: &i18n::DOWNLOADING,
    check: Some(args::none),
    run: Some(|cx, job, _| Box::pin(run(cx, job))),
    house: None,
};

async fn run(cx: &Context<'_>, _job: &Job) -> Result<Done, MpError> {
    let downloads = cx.mp.downloading().await?;
    Ok(Done::new(
        cx.render.downloading(&downloads),
        format!("{} downloads", downloads.len()),
    ))
}
