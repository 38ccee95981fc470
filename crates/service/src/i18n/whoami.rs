//! `/whoami`: who the asker is to the bot (their Telegram id, role, MoviePilot name, where the
//! role comes from) and where to set the id in MoviePilot to be mapped there; and the words for
//! roles and their sources `/users` shares.

use super::{About, Listed, Render, Usage};
use crate::untrusted::clean_line;
use crate::users::{Identity, Source};
use crate::vocabulary::Role;

impl Render {
    /// A role in words: 只读 / 申请者 / 用户 / 管理员, viewer / requester / user / admin.
    pub fn role_name(&self, role: Role) -> &'static str {
        match role {
            Role::Viewer => zh_en!(self.zh(), "只读", "viewer"),
            Role::Requester => zh_en!(self.zh(), "申请者", "requester"),
            Role::User => zh_en!(self.zh(), "用户", "user"),
            Role::Admin => zh_en!(self.zh(), "管理员", "admin"),
        }
    }

    /// Where a role comes from, and so where it is changed.
    pub fn role_source(&self, source: Source) -> &'static str {
        match source {
            Source::Setting => zh_en!(
                self.zh(),
                "机器人的用户设置（由管理服务器的人修改）",
                "the bot's user settings (changed by whoever runs the server)"
            ),
            Source::MoviePilot => zh_en!(
                self.zh(),
                "MoviePilot 中的 Telegram 绑定（在 MoviePilot 中修改）",
                "the Telegram binding in MoviePilot (changed in MoviePilot)"
            ),
            Source::Granted => zh_en!(
                self.zh(),
                "聊天中的授权（管理员可用 /users 撤销）",
                "a grant given in the chat (an admin can revoke it with /users)"
            ),
            Source::Unmapped => zh_en!(
                self.zh(),
                "机器人的允许名单，未绑定 MoviePilot 用户",
                "the bot's allow-list, not bound to a MoviePilot user"
            ),
            Source::NobodyMapped => zh_en!(
                self.zh(),
                "机器人的允许名单（还没有人绑定，所以每个人都是管理员）",
                "the bot's allow-list (nobody is bound yet, so everyone is an admin)"
            ),
        }
    }

    /// Where a MoviePilot user sets a Telegram id to be bound to it.
    pub fn where_to_bind(&self, user_id: i64) -> String {
        zh_en!(
            self.zh(),
            ("要绑定 MoviePilot 用户：在 MoviePilot 中打开 用户 → 编辑 → 消息账号绑定 → Telegram用户，或 个人信息 → 账号绑定，填入 {user_id}。"),
            ("To be bound to a MoviePilot user: in MoviePilot open 用户 → 编辑 → 消息账号绑定 → Telegram用户 (Users → Edit → message account binding → Telegram user), or 个人信息 → 账号绑定 (Profile → account binding), and enter {user_id}.")
        )
    }

    /// `/whoami`'s answer.
    pub fn whoami(&self, user_id: i64, identity: &Identity) -> String {
        let zh = self.zh();
        let name = match identity.requester.as_deref() {
            Some(name) => clean_line(name).into_owned(),
            None => zh_en!(
                zh,
                "无（使用机器人自己的账号）",
                "none (the bot's own account)"
            )
            .into(),
        };
        let role = self.role_name(identity.role);
        let source = self.role_source(identity.source);
        let head = zh_en!(
            zh,
            ("你的 Telegram ID：{user_id}\n角色：{role}\nMoviePilot 用户：{name}\n角色来自：{source}"),
            ("Your Telegram id: {user_id}\nRole: {role}\nMoviePilot user: {name}\nThe role comes from: {source}")
        );
        format!("{head}\n\n{}", self.where_to_bind(user_id))
    }
}

/// `/whoami`: no arguments; everyone's.
pub const WHOAMI: About = About {
    usage: Usage::Help,
    listed: Listed::Everyone {
        menu: |zh| zh_en!(zh, "我的身份与角色", "Who I am to the bot"),
        help: Some(|zh| {
            zh_en!(
                zh,
                "/whoami 我的 Telegram ID、角色和来源",
                "/whoami your Telegram id, role and where it comes from"
            )
        }),
    },
};
