//! `/notify` (issue 45): each person's own notices, shown and set with buttons. Per category
//! (下载, 入库, 订阅, 站点, 其它): everything their private chat is routed, only their own (their
//! cards' endings and the notices matched to what they asked), or nothing; and quiet hours in
//! `commands.day_zone`, during which notices come silently, at most `QUIET_NIGHT_MAX` a night,
//! the rest summed up when the hours end. The settings are the asker's own (the job's
//! `user_id`: a button is its asker's, so nobody's tap changes another's) and apply to their
//! private chat; groups stay the operator's routes. Reads and writes Redis only.
//!
//! A tap's answer edits the menu it was tapped on (`in_place` tokens), so changing five
//! settings leaves one message, not five.
//!
//! Arguments, as the job keeps them: "" (show), `<category> <all|mine|off>`,
//! `quiet <HH:MM-HH:MM>`, `quiet off`.

use super::{Command, Spec, run_button};
use crate::i18n;
use crate::ledger::{Job, TokenGroup};
use crate::moviepilot::MpError;
use crate::telegram::keyboard::Keyboard;
use crate::vocabulary::{NoticeCategory, NoticeMode, NoticePrefs, QuietHours};
use crate::worker::context::{Context, Done, buttons, ledger_error, owner, reply_to};

pub(super) const NOTIFY: Spec = Spec {
    name: "notify",
    about: &i18n::NOTIFY,
    check: Some(|args| Change::parse(args).map(|c| c.args())),
    run: Some(|cx, job, _| Box::pin(run(cx, job))),
    house: None,
};

/// Quiet hours a button offers (typed ones may be any).
const OFFERED_QUIET: [&str; 2] = ["23:00-07:00", "22:00-08:00"];

/// What one `/notify` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Show,
    Mode(NoticeCategory, NoticeMode),
    Quiet(Option<QuietHours>),
}

impl Change {
    fn parse(args: &str) -> Option<Change> {
        let words: Vec<&str> = args.split_whitespace().collect();
        match words.as_slice() {
            [] => Some(Change::Show),
            [q, "off" | "关闭" | "关"] if is_quiet(q) => Some(Change::Quiet(None)),
            [q, hours] if is_quiet(q) => QuietHours::parse(hours).map(|h| Change::Quiet(Some(h))),
            [category, mode] => Some(Change::Mode(
                NoticeCategory::parse(category)?,
                NoticeMode::parse(mode)?,
            )),
            _ => None,
        }
    }

    /// The job's arguments: one spelling per change.
    fn args(self) -> String {
        match self {
            Change::Show => String::new(),
            Change::Mode(c, m) => format!("{} {}", c.as_str(), m.as_str()),
            Change::Quiet(None) => "quiet off".into(),
            Change::Quiet(Some(h)) => format!("quiet {h}"),
        }
    }
}

fn is_quiet(word: &str) -> bool {
    word.eq_ignore_ascii_case("quiet") || word == "免打扰"
}

async fn run(cx: &Context<'_>, job: &Job) -> Result<Done, MpError> {
    // A private chat's id is its person's; a group's is negative.
    if job.chat_id != job.user_id {
        return Ok(Done::new(
            cx.render.notify_private_only(),
            "not a private chat".into(),
        ));
    }
    let change = Change::parse(&job.args).ok_or_else(|| super::not_runnable(job))?;
    match change {
        Change::Show => {}
        Change::Mode(category, mode) => cx
            .ledger
            .set_notice_mode(job.user_id, category, mode)
            .await
            .map_err(ledger_error)?,
        Change::Quiet(quiet) => cx
            .ledger
            .set_quiet_hours(job.user_id, quiet)
            .await
            .map_err(ledger_error)?,
    }
    if change != Change::Show {
        tracing::info!(telegram_id = job.user_id, change = %change.args(), "notice settings changed");
    }
    let prefs = cx
        .ledger
        .notice_prefs(job.user_id)
        .await
        .map_err(ledger_error)?;
    let text = cx.render.notify_menu(
        &prefs,
        &cx.settings.commands.day_zone,
        change != Change::Show,
    );
    Ok(Done {
        reply: text,
        result: match change {
            Change::Show => "shown".into(),
            other => other.args(),
        },
        buttons: menu_buttons(cx, job, &prefs),
        ..Done::default()
    })
}

/// A row per category (its three modes, the current one marked) and a row of quiet hours; one
/// group: a tap makes the job that sets it, whose answer is the menu again.
fn menu_buttons(
    cx: &Context<'_>,
    job: &Job,
    prefs: &NoticePrefs,
) -> Option<crate::worker::context::Buttons> {
    let window = Command::Notify.window(&cx.settings.commands);
    let mut group = TokenGroup::new(cx.button_ttl());
    let mut keyboard = Keyboard::new();
    let button = |group: &mut TokenGroup, label: String, change: Change| {
        let action = run_button(job, Command::Notify, change.args(), window);
        let data = group.add(owner(job), &label, action, reply_to(job));
        // The answer is the menu again: it takes this message's place, not a new one.
        group.in_place();
        (label, data)
    };
    for category in NoticeCategory::ALL {
        let current = prefs.mode(category);
        let row = NoticeMode::ALL
            .into_iter()
            .map(|mode| {
                let label = cx.render.notify_button(category, mode, mode == current);
                button(&mut group, label, Change::Mode(category, mode))
            })
            .collect();
        keyboard = keyboard.row(row);
    }
    let mut quiet_row = Vec::new();
    for offered in OFFERED_QUIET.iter().filter_map(|q| QuietHours::parse(q)) {
        if prefs.quiet != Some(offered) {
            let label = cx.render.quiet_button(Some(offered));
            quiet_row.push(button(&mut group, label, Change::Quiet(Some(offered))));
        }
    }
    if prefs.quiet.is_some() {
        let label = cx.render.quiet_button(None);
        quiet_row.push(button(&mut group, label, Change::Quiet(None)));
    }
    keyboard = keyboard.row(quiet_row);
    buttons(&group, keyboard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_have_one_spelling() {
        let cases = [
            ("", ""),
            ("下载 仅我的", "download mine"),
            ("Transfer OFF", "transfer off"),
            ("站点 全部", "site all"),
            ("quiet 23:00–07:30", "quiet 23:00-07:30"),
            ("免打扰 关闭", "quiet off"),
            ("quiet 1-6", "quiet 01:00-06:00"),
        ];
        for (typed, kept) in cases {
            assert_eq!(
                Change::parse(typed).map(Change::args).as_deref(),
                Some(kept),
                "{typed}"
            );
            assert_eq!(
                Change::parse(kept),
                Change::parse(typed),
                "a kept form reads back"
            );
        }
        for bad in [
            "download",
            "下载 maybe",
            "quiet 25:00-07:00",
            "quiet",
            "a b c",
        ] {
            assert_eq!(Change::parse(bad), None, "{bad}");
        }
    }
}
