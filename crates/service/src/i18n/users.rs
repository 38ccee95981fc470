//! `/users` (an admin's): everyone who may use the bot, with their role and where it comes from,
//! paged, with a Revoke button on each grant; and the answer of that button's job.

use std::ops::Range;

use super::{About, Listed, Render, Usage};
use crate::untrusted::clean_line;
use crate::users::{Source, UserRow};

impl Render {
    /// One page of `/users`: the rows in `range` (numbered in the whole list) under a header.
    pub fn users_page(&self, rows: &[UserRow], range: Range<usize>) -> String {
        let zh = self.zh();
        let n = rows.len();
        let mut out = zh_en!(
            zh,
            ("可以使用机器人的人（{n}）：\n"),
            ("Everyone who may use the bot ({n}):\n")
        );
        for i in range {
            out.push_str(&self.user_line(i + 1, &rows[i]));
            out.push('\n');
        }
        out.trim_end().to_string()
    }

    /// `n. <id> · <role> · MoviePilot <name> · <where it comes from>`, and a grant under a
    /// mapping that wins over it.
    fn user_line(&self, n: usize, row: &UserRow) -> String {
        let zh = self.zh();
        let source = Source::named(row.source).unwrap_or(Source::Unmapped);
        let role = row.role.parse().map_or(row.role, |r| self.role_name(r));
        let name = row
            .requester
            .as_deref()
            .map(|m| format!(" · MoviePilot {}", clean_line(m)))
            .unwrap_or_default();
        let mut line = format!(
            "{n}. {} · {role}{name} · {}",
            row.user_id,
            self.role_source(source)
        );
        if let Some(g) = &row.grant {
            let by = clean_line(&g.by);
            line.push_str(&match (source, zh) {
                (Source::Granted, true) => format!("（由 {by} 授予）"),
                (Source::Granted, false) => format!(" (granted by {by})"),
                (_, true) => format!("；另有 {by} 授予的授权（{}）", self.role_name(g.role)),
                (_, false) => format!("; also granted {} by {by}", self.role_name(g.role)),
            });
        }
        line
    }

    /// The Revoke button of the grant of `user_id`.
    pub fn revoke_button(&self, user_id: i64) -> String {
        zh_en!(self.zh(), ("撤销 {user_id}"), ("Revoke {user_id}"))
    }

    /// The Revoke button's job: what was taken back, and what the person is now (`now`: their
    /// role and its source, `None`: they may no longer use the bot).
    pub fn revoked(
        &self,
        user_id: i64,
        was: Option<crate::vocabulary::Role>,
        now: Option<(crate::vocabulary::Role, Source)>,
    ) -> String {
        let zh = self.zh();
        let Some(was) = was else {
            return zh_en!(
                zh,
                ("{user_id} 没有授权（可能已被撤销），没有任何改变。"),
                ("{user_id} has no grant (it may have been revoked already); nothing changed.")
            );
        };
        let was = self.role_name(was);
        let first = zh_en!(
            zh,
            ("已撤销 {user_id} 的授权（{was}）。"),
            ("Revoked the grant of {user_id} ({was}).")
        );
        let now = match now {
            None => zh_en!(
                zh,
                "此人不能再使用机器人。",
                "They can no longer use the bot."
            )
            .to_string(),
            Some((role, source)) => {
                let (role, source) = (self.role_name(role), self.role_source(source));
                zh_en!(
                    zh,
                    ("此人仍可使用机器人：{role}，来自{source}。"),
                    ("They may still use the bot: {role}, from {source}.")
                )
            }
        };
        format!("{first}{}{now}", if zh { "" } else { " " })
    }
}

/// `/users`: no arguments; an admin's.
pub const USERS: About = About {
    usage: Usage::AdminHelp,
    listed: Listed::Admins {
        menu: |zh| zh_en!(zh, "可以使用机器人的人", "Who may use the bot"),
        help: |zh| {
            zh_en!(
                zh,
                "/users 可以使用机器人的人、角色和来源（可撤销授权）",
                "/users who may use the bot, their roles and sources (grants can be revoked)"
            )
        },
    },
};

/// The Revoke button's job: nobody types it.
pub const REVOKE: About = About {
    usage: Usage::AdminHelp,
    listed: Listed::Hidden,
};
