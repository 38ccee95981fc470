//! Crash points for the crash tests: named places where a test can freeze the process and then
//! SIGKILL it, to prove that a crash at exactly that line loses nothing and repeats nothing.
//!
//! Compiled in only with the `failpoints` feature; otherwise [`crash_point!`] is nothing.
//! Enable one at run time with `FAILPOINTS=<name>=return` (the `fail` crate's syntax). When
//! reached, the process prints `oncebot: crash point <name> reached` to stderr and freezes the
//! thread, so the test can kill it at that instant.
//!
//! Points: `poll.after_enqueue`, `worker.after_claim`, `worker.before_call`, `worker.after_call`,
//! `worker.before_download` (a download's intent is noted in the job, the add not yet sent),
//! `worker.after_subscribe_create` (MoviePilot created the subscription, its owner not yet set),
//! `worker.before_restart_call` (the restart noted as going out, not yet sent),
//! `worker.after_restart_call` (MoviePilot took the restart, not yet watched),
//! `worker.after_redo_call` (MoviePilot answered the redo, its outcome not yet recorded),
//! `worker.after_complete`, `dispatch.after_send`, `notify.after_read` (the relay read MoviePilot's
//! history, notify.lua not yet run), `notify.after_record` (recorded and queued, not yet sent).

/// Freezes here if the crash point `name` is enabled (feature `failpoints`).
#[macro_export]
macro_rules! crash_point {
    ($name:literal) => {
        $crate::failpoints::hit($name)
    };
}

/// See [`crash_point!`].
pub fn hit(name: &str) {
    #[cfg(feature = "failpoints")]
    if fail::eval(name, |_| ()).is_some() {
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "oncebot: crash point {name} reached");
        let freeze = || loop {
            std::thread::park();
        };
        // Hand this worker thread's queued tasks to another thread first: the rest of the
        // process keeps running (other jobs, other replies) while this line stays frozen.
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(freeze),
            _ => freeze(),
        }
    }
    #[cfg(not(feature = "failpoints"))]
    let _ = name;
}
