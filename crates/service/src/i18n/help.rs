//! `/help` and `/start`, and what the dispatcher registers with setMyCommands: assembled from what
//! each command says about itself ([`About`]), in the order of `commands::Command::ALL`, so a new
//! command is listed by writing its `About`, nowhere else.

use super::{About, Listed, Texts, Usage, Words};
use crate::vocabulary::Role;

/// `/help`: it takes no arguments and is in everyone's menu, without a line of its own.
pub const HELP: About = About {
    usage: Usage::Help,
    listed: Listed::Everyone {
        menu: |zh| zh_en!(zh, "帮助", "Help"),
        help: None,
    },
};

/// `/start`: what Telegram's own Start button sends; the menu offers its twin, `/help`.
pub const START: About = About {
    usage: Usage::Help,
    listed: Listed::Hidden,
};

/// The first line of everyone's help.
const HEADER: Words = |zh| {
    zh_en!(
        zh,
        "我可以帮你操作 MoviePilot，每条命令只会执行一次：",
        "I drive MoviePilot for you, and every command takes effect once:"
    )
};

/// The last line of everyone's help.
const FOOTER: Words = |zh| {
    zh_en!(
        zh,
        "直接发送片名即可搜索；“订阅 X”“搜索 X”“下载 X”“洗版 X”也可以。",
        "Plain text is a search."
    )
};

/// The first line of the admins' part.
const ADMIN_HEADER: Words = |zh| {
    zh_en!(
        zh,
        "管理员命令（全家共用，窗口内只执行一次）：",
        "Admin commands (one run per window for the whole house):"
    )
};

/// Every command by its name, in `commands::Command::ALL`'s order.
pub type Commands<'a> = &'a [(&'static str, &'static About)];

impl Texts {
    /// How a command is called, for the answer to arguments it cannot use.
    pub fn usage(&self, about: &About, commands: Commands<'_>) -> String {
        match about.usage {
            Usage::Line(words) => words(self.zh()).to_string(),
            Usage::Help => self.help(commands),
            Usage::AdminHelp => self.admin_help(commands),
        }
    }

    /// The help for someone of `role`: an admin's adds the house commands.
    pub fn help_for(&self, role: Role, commands: Commands<'_>) -> String {
        if role >= Role::Admin {
            format!("{}\n\n{}", self.help(commands), self.admin_help(commands))
        } else {
            self.help(commands)
        }
    }

    /// Everyone's help: a line per command in everyone's menu that has one.
    pub fn help(&self, commands: Commands<'_>) -> String {
        let lines = commands.iter().filter_map(|(_, about)| match about.listed {
            Listed::Everyone { help, .. } => help,
            _ => None,
        });
        self.lines(HEADER, lines, Some(FOOTER))
    }

    /// The help's part for admins: the house commands and what a repeat does.
    pub fn admin_help(&self, commands: Commands<'_>) -> String {
        let lines = commands.iter().filter_map(|(_, about)| match about.listed {
            Listed::Admins { help, .. } => Some(help),
            _ => None,
        });
        self.lines(ADMIN_HEADER, lines, None)
    }

    fn lines(
        &self,
        header: Words,
        lines: impl Iterator<Item = Words>,
        footer: Option<Words>,
    ) -> String {
        let zh = self.zh();
        let mut out = header(zh).to_string();
        for line in lines.chain(footer) {
            out.push('\n');
            out.push_str(line(zh));
        }
        out
    }

    /// The command menu registered with setMyCommands: (command, description).
    pub fn command_list(&self, commands: Commands<'_>) -> Vec<(&'static str, &'static str)> {
        let zh = self.zh();
        commands
            .iter()
            .filter_map(|(name, about)| match about.listed {
                Listed::Everyone { menu, .. } => Some((*name, menu(zh))),
                _ => None,
            })
            .collect()
    }

    /// The house commands, an admin's, for the menu Telegram shows in an admin's chat.
    pub fn admin_command_list(&self, commands: Commands<'_>) -> Vec<(&'static str, &'static str)> {
        let zh = self.zh();
        commands
            .iter()
            .filter_map(|(name, about)| match about.listed {
                Listed::Admins { menu, .. } => Some((*name, menu(zh))),
                _ => None,
            })
            .collect()
    }
}
