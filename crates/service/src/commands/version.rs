//! `/version`: the release of the worker that answers and every live process by role and
//! release, from the registry (`ledger::LiveProcess`; a worker that registers nothing is older
//! than 0.2.0). Reads the ledger only, takes no arguments. The one job kind 0.2.0 adds, so it is
//! admitted only once no such older worker is alive (`versions::Gate`).

use super::{Spec, args};
use crate::i18n;
use crate::ledger::Job;
use crate::moviepilot::MpError;
use crate::versions::{FIRST_REGISTERED, VERSION as THIS};
use crate::worker::context::{Context, Done, ledger_error};

pub(super) const VERSION: Spec = Spec {
    name: "version",
    about: &i18n::VERSION,
    check: Some(args::none),
    run: Some(|cx, job, _| Box::pin(run(cx, job))),
    house: None,
};

async fn run(cx: &Context<'_>, _job: &Job) -> Result<Done, MpError> {
    let processes = cx.ledger.live_processes().await.map_err(ledger_error)?;
    Ok(Done::new(
        cx.render.version(THIS, &processes, FIRST_REGISTERED),
        format!("{} processes", processes.len()),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::Command;
    use crate::versions::{BASE_KINDS, is_new_kind, worker_kinds};

    /// The kinds a worker says it runs are this release's commands, and 1170969's are among
    /// them: `version` is the kind 0.2.0 adds, `whoami`, `users` and `revoke` (issue 43),
    /// `requests`, `mine` and `quota` (issue 44) and `notify` (issue 45) the kinds of the
    /// release after it.
    #[test]
    fn the_worker_kinds_are_every_command_and_only_version_is_new() {
        let names: Vec<&str> = Command::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(worker_kinds().collect::<Vec<_>>(), names);
        for kind in BASE_KINDS {
            assert!(names.contains(&kind), "{kind}");
        }
        let new: Vec<&str> = names.into_iter().filter(|k| is_new_kind(k)).collect();
        assert_eq!(
            new,
            [
                "whoami", "version", "users", "revoke", "requests", "mine", "quota", "notify"
            ]
        );
    }
}
