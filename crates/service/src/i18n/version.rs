//! `/version`: this worker's release and the live processes by role and release; and the
//! answer to a command of a kind an older worker still alive would fail (docs/releases.md).

use super::{About, Listed, Render, Texts, Usage};
use crate::ledger::LiveProcess;
use crate::untrusted::clean_line;

impl Texts {
    /// A command newer than a worker still running (an upgrade under way): not admitted.
    pub fn upgrading(&self) -> &'static str {
        zh_en!(
            self.zh(),
            "机器人正在升级，升级完成后才能使用这个命令。请几分钟后再试。",
            "The bot is being upgraded; this command works once the upgrade is finished. \
             Try again in a few minutes."
        )
    }
}

impl Render {
    /// This worker's release, then one line per live process: its roles and release
    /// (`older` names the first release that registers, for a process that says nothing).
    pub fn version(&self, this: &str, processes: &[LiveProcess], older: &str) -> String {
        let zh = self.zh();
        let mut out = match zh {
            true => format!("oncebot {this}（执行此命令的 worker）\n运行中的进程：\n"),
            false => format!("oncebot {this} (the worker answering)\nRunning processes:\n"),
        };
        if processes.is_empty() {
            out.push_str(zh_en!(zh, "（无）", "(none)"));
        }
        for p in processes {
            let (roles, version) = match &p.registration {
                Some(r) => (r.roles.join(", "), clean_line(&r.version).into_owned()),
                None => (
                    String::from(if p.worker { "worker" } else { "dispatcher" }),
                    match zh {
                        true => format!("早于 {older}"),
                        false => format!("older than {older}"),
                    },
                ),
            };
            out.push_str(&format!(
                "• {} · {} · {version}\n",
                clean_line(&p.id),
                clean_line(&roles)
            ));
        }
        out.trim_end().to_string()
    }
}

/// `/version`: no arguments; an admin's.
pub const VERSION: About = About {
    usage: Usage::AdminHelp,
    listed: Listed::Admins {
        menu: |zh| zh_en!(zh, "版本与运行中的进程", "Release and running processes"),
        help: |zh| {
            zh_en!(
                zh,
                "/version 版本与运行中的进程",
                "/version this release and the running processes"
            )
        },
    },
};
