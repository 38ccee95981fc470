//! MoviePilot's `system` area (`app/api/endpoints/system.py`): starting one of its scheduler
//! jobs (the house commands), restarting it, and asking whether it answers at all; with the
//! scheduler's state from its `dashboard` area (`app/api/endpoints/dashboard.py`), which says
//! whether a job runs already. `/system/global` is asked without credentials: a login does not
//! survive the restart it watches.
//!
//! Routes: `GET /api/v1/system/runscheduler`, `GET /api/v1/system/restart`,
//! `GET /api/v1/system/global`, `GET /api/v1/dashboard/schedule`.

use std::time::Duration;

use serde_json::Value;

use super::client::{Call, Credential, GLOBAL_TOKEN, MoviePilot, short};
use super::error::MpError;
use crate::vocabulary::MpOutcome;

/// What starting one of MoviePilot's scheduler jobs came to (`MoviePilot::run_scheduler`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedulerRun {
    /// MoviePilot answered: it ran the job to its end. (It answers the same when it skipped
    /// the run because the job was already running, or has no such job: its answer cannot tell.)
    Finished,
    /// The request went out and no answer came within the call's time: MoviePilot answers only
    /// when the job ends, which for a search of every subscription takes hours. `detail` says
    /// what happened to the call.
    Started { detail: String },
    /// MoviePilot's scheduler listed the job as running already: nothing was started.
    AlreadyRunning,
}

impl SchedulerRun {
    /// The job's `mp_outcome`.
    pub fn outcome(&self) -> MpOutcome {
        match self {
            SchedulerRun::Finished => MpOutcome::Finished,
            SchedulerRun::Started { .. } => MpOutcome::Started,
            SchedulerRun::AlreadyRunning => MpOutcome::AlreadyRunning,
        }
    }
}

/// A row of `GET /api/v1/dashboard/schedule` (v2.5.6 `app/api/endpoints/dashboard.py`
/// `schedule`, a bare list of `ScheduleInfo`): only what tells a running job.
#[derive(Debug, serde::Deserialize)]
struct WireSchedule {
    #[serde(default)]
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    status: String,
}

/// The house commands (issue 23): MoviePilot's scheduler jobs, started once.
impl MoviePilot {
    /// Starts scheduler job `job_id` (`GET /api/v1/system/runscheduler?jobid=`, a superuser's;
    /// v2.5.6 `app/api/endpoints/system.py` L538-547, the same route in the newest v2 and in
    /// v3). Looks first whether the scheduler lists it as running (`GET
    /// /api/v1/dashboard/schedule`, status 正在运行): then nothing is sent. MoviePilot runs the
    /// job inside the request, so a call that goes out and gets no answer in time is a job
    /// under way, not a failure; one that never left (refused, unreachable) is transient.
    pub async fn run_scheduler(&self, job_id: &str) -> Result<SchedulerRun, MpError> {
        if self.scheduler_running(job_id).await {
            return Ok(SchedulerRun::AlreadyRunning);
        }
        let what = format!("starting MoviePilot's scheduler job {job_id}");
        let call = Call::get(what, "/api/v1/system/runscheduler")
            .query("jobid", job_id)
            .side_effect();
        let answer = match self.inner.call(&call).await {
            Ok(answer) => answer,
            Err(MpError::Uncertain(detail)) => return Ok(SchedulerRun::Started { detail }),
            Err(e) => return Err(e),
        };
        let answer = match self.inner.check_status(&call, answer) {
            Ok(answer) => answer,
            // A proxy's 502/504 while MoviePilot works on the request: under way as well.
            Err(MpError::Uncertain(detail)) => return Ok(SchedulerRun::Started { detail }),
            Err(e) => return Err(e),
        };
        let _: Option<Value> = self.inner.accepted(&call, &answer)?;
        Ok(SchedulerRun::Finished)
    }

    /// Restarts MoviePilot (`GET /api/v1/system/restart`, a superuser's; v2.5.6
    /// `app/api/endpoints/system.py` L524-535, the same route in the newest v2 and v3). It
    /// refuses with `success: false` and a reason where it cannot restart itself (not in Docker:
    /// 当前运行环境不支持重启操作！ / 非Docker环境，无法重启！): that is `Declined`, with its words.
    /// An answer lost on the way is `Uncertain`: MoviePilot may be going down already.
    pub async fn restart(&self) -> Result<(), MpError> {
        let call = Call::get("restarting MoviePilot", "/api/v1/system/restart").side_effect();
        let answer = self.inner.call(&call).await?;
        // MoviePilot stops its own work before it restarts: an error after that is no proof
        // that nothing happened, so the restart is watched, not sent again.
        self.inner.uncertain_on_server_error(
            &call,
            &answer,
            "MoviePilot may be restarting already",
        )?;
        let answer = self.inner.check_status(&call, answer)?;
        self.inner.done_or_declined(&call, &answer)
    }

    /// Whether MoviePilot answers at all now (`GET /api/v1/system/global`, no credentials: a
    /// login does not survive a restart), within `within`. What a restart is watched with.
    pub async fn is_answering(&self, within: Duration) -> bool {
        let call = Call::get("asking whether MoviePilot answers", "/api/v1/system/global")
            .query("token", GLOBAL_TOKEN)
            .within(within);
        let up = matches!(self.inner.send(&call, &Credential::None).await, Ok(a) if a.status.is_success());
        if !up {
            self.inner.saw_unreachable();
        }
        up
    }

    /// The scheduler jobs MoviePilot is running now, by name (best effort: empty when the
    /// scheduler cannot be read). What a restart would cut off.
    pub async fn running_scheduler_jobs(&self) -> Vec<String> {
        match self.schedule().await {
            Ok(rows) => rows
                .into_iter()
                .filter(|r| r.status == "正在运行")
                .map(|r| {
                    let name = if r.name.is_empty() { r.id } else { r.name };
                    short(&crate::untrusted::clean_line(&name), 60)
                })
                .collect(),
            Err(e) => {
                tracing::info!(error = %e, "could not read MoviePilot's scheduler");
                Vec::new()
            }
        }
    }

    /// The scheduler's jobs with their state (`GET /api/v1/dashboard/schedule`).
    async fn schedule(&self) -> Result<Vec<WireSchedule>, MpError> {
        let call = Call::get(
            "reading MoviePilot's scheduler",
            "/api/v1/dashboard/schedule",
        );
        self.inner.fetch_list(&call).await
    }

    /// Whether the scheduler lists `job_id` as running now. Best effort: a MoviePilot that
    /// does not list it (v2.5.6 lists only jobs with a timer) or cannot be asked reads as "not
    /// running", and the start goes ahead (MoviePilot itself skips a job already running).
    async fn scheduler_running(&self, job_id: &str) -> bool {
        match self.schedule().await {
            Ok(rows) => rows
                .iter()
                .any(|r| r.id == job_id && r.status == "正在运行"),
            Err(e) => {
                tracing::info!(error = %e, "could not read MoviePilot's scheduler; starting the job anyway");
                false
            }
        }
    }
}
