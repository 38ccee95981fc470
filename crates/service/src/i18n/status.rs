//! `/status` and `/jobs`: a job's state, attempts and outcome as a user reads them.

use super::{About, Listed, Render, Usage};
use crate::ledger::Job;
use crate::untrusted::clean_line;
use crate::vocabulary::{ErrorKind, JobState};

impl Render {
    pub(super) fn state_label(&self, status: JobState) -> &'static str {
        self.texts.state_label(status)
    }

    pub fn job_status(&self, j: &Job) -> String {
        let state = self.state_label(j.status);
        let detail = self
            .status_detail(j)
            .map(|d| format!("\n{d}"))
            .unwrap_or_default();
        zh_en!(
            self.zh(),
            (
                "任务 #{}：/{} {} · {state}（尝试 {} 次）{detail}",
                j.id,
                j.command,
                j.args,
                j.attempts
            ),
            (
                "Job #{}: /{} {} · {state} ({} attempts){detail}",
                j.id,
                j.command,
                j.args,
                j.attempts
            )
        )
    }

    /// What `/status` says under a job: its result, or what went wrong in the user's words
    /// (the recorded error itself is for operators).
    pub(super) fn status_detail(&self, j: &Job) -> Option<String> {
        if let Some(result) = &j.result {
            // It may quote MoviePilot (a download's hash).
            return Some(clean_line(result).into_owned());
        }
        j.error.as_ref()?;
        let kind = j.extra.get(ErrorKind::FIELD).map(|k| {
            // A kind this release does not know (a newer one's) reads as a refusal.
            k.parse().unwrap_or(ErrorKind::Permanent)
        });
        Some(match kind {
            Some(ErrorKind::Declined) => {
                crate::untrusted::clean(j.error.as_deref().unwrap_or_default()).into_owned()
            }
            Some(kind) => self.error_sentence(kind).to_string(),
            // Held or failed by claim.lua after its worker stopped: the state says it.
            None => return None,
        })
    }

    pub fn job_not_found(&self, asked: Option<u64>) -> String {
        match (asked, self.zh()) {
            (Some(id), true) => format!("没有找到任务 #{id}。"),
            (Some(id), false) => format!("No job #{id} here."),
            (None, true) => "这个会话还没有任务。".into(),
            (None, false) => "No jobs in this chat yet.".into(),
        }
    }

    pub fn jobs(&self, jobs: &[Job]) -> String {
        if jobs.is_empty() {
            return self.job_not_found(None);
        }
        let mut out = String::from(zh_en!(self.zh(), "最近的任务：\n", "Recent jobs:\n"));
        for j in jobs {
            out.push_str(&format!(
                "#{} /{} {} · {}\n",
                j.id,
                j.command,
                j.args,
                self.state_label(j.status)
            ));
        }
        out.trim_end().to_string()
    }
}

/// `/status [job]`.
pub const STATUS: About = About {
    usage: Usage::Line(|zh| zh_en!(zh, "用法：/status [任务编号]", "Usage: /status [job id]")),
    listed: Listed::Everyone {
        menu: |zh| zh_en!(zh, "任务状态", "How a job is doing"),
        help: Some(|zh| {
            zh_en!(
                zh,
                "/status [任务编号] 任务状态",
                "/status [job id] how a job is doing"
            )
        }),
    },
};

/// `/jobs`: no arguments.
pub const JOBS: About = About {
    usage: Usage::Help,
    listed: Listed::Everyone {
        menu: |zh| zh_en!(zh, "最近的任务", "Recent jobs"),
        help: Some(|zh| zh_en!(zh, "/jobs 最近的任务", "/jobs your recent jobs")),
    },
};
