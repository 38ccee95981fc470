//! Asking for access from the chat (issue 43): a stranger's answer and its Ask button, the
//! admins' cards and their buttons, and every answer access.lua gives ("{id}", "{what}",
//! "{who}", "{role}" filled in by the script). What a person chose to call themselves is
//! cleaned (`untrusted`) and marked as their own choice.

use super::Texts;
use crate::untrusted::clean_line;
use crate::vocabulary::Role;

impl Texts {
    /// The Ask button under a stranger's answer.
    pub fn ask_button(&self) -> &'static str {
        zh_en!(self.zh(), "申请使用", "Ask for access")
    }

    /// A card's Allow buttons, least role first, with their decisions: viewer, requester (only
    /// with `household.media_requests`, issue 44), user, admin.
    pub fn access_allow_buttons(&self, requester: bool) -> Vec<(&'static str, &'static str)> {
        let zh = self.zh();
        Role::ALL
            .into_iter()
            .filter(|r| requester || *r != Role::Requester)
            .map(|r| {
                let label = match r {
                    Role::Viewer => zh_en!(zh, "允许：只读", "Allow: viewer"),
                    Role::Requester => zh_en!(zh, "允许：申请者", "Allow: requester"),
                    Role::User => zh_en!(zh, "允许：用户", "Allow: user"),
                    Role::Admin => zh_en!(zh, "允许：管理员", "Allow: admin"),
                };
                (label, r.as_str())
            })
            .collect()
    }

    /// A card's Decline button and its decision.
    pub fn access_decline_button(&self) -> (&'static str, &'static str) {
        (zh_en!(self.zh(), "拒绝", "Decline"), "decline")
    }

    /// An admin's card: the Telegram id first, then the name and @username they chose.
    pub fn access_card(&self, id: i64, name: &str, username: &str) -> String {
        let none = zh_en!(self.zh(), "（无）", "(none)");
        let name = if name.is_empty() { none } else { name };
        let username = if username.is_empty() {
            none.to_string()
        } else {
            format!("@{username}")
        };
        zh_en!(
            self.zh(),
            ("有人申请使用机器人\nTelegram ID：{id}\n名字（本人自填）：{name}\n用户名（本人自填）：{username}"),
            ("Someone asks to use the bot\nTelegram id: {id}\nName (their own choice): {name}\nUsername (their own choice): {username}")
        )
    }

    /// A name as a card or a decision line shows it: first and last name, cleaned.
    pub fn person_name(&self, first: Option<&str>, last: Option<&str>) -> String {
        let name = [first, last]
            .into_iter()
            .flatten()
            .map(|part| clean_line(part).into_owned())
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        name.chars().take(64).collect()
    }

    /// Every text access.lua writes (JSON, lua/access.lua's ARGV[13]).
    pub fn access_texts(&self) -> String {
        let zh = self.zh();
        serde_json::json!({
            "offer": zh_en!(zh,
                "你的 Telegram ID：{id}\n这个机器人只供家庭成员使用。点「申请使用」请管理员允许你使用。",
                "Your Telegram id: {id}\nThis bot is for its household only. Tap \"Ask for access\" to ask an admin to let you in."),
            "waiting": zh_en!(zh,
                "你的 Telegram ID：{id}\n你的申请正在等待管理员处理。",
                "Your Telegram id: {id}\nYour request is waiting for an admin."),
            "declined": zh_en!(zh,
                "你的 Telegram ID：{id}\n你的申请没有通过，暂时不能再次申请。",
                "Your Telegram id: {id}\nYour request was declined; you cannot ask again for now."),
            "asked": zh_en!(zh,
                "申请已发给管理员，结果会在这里告诉你。",
                "Your request went to the admins; you will be told here."),
            "pending": zh_en!(zh, "你的申请正在等待处理。", "Your request is waiting for an admin."),
            "was_declined": zh_en!(zh, "你的申请没有通过。", "Your request was declined."),
            "full": zh_en!(zh,
                "现在等待处理的申请太多，请稍后再试。",
                "Too many requests are waiting; try again later."),
            "nobody": zh_en!(zh,
                "现在没有可以处理申请的管理员，请稍后再试。",
                "No admin can take a request now; try again later."),
            "already_allowed": zh_en!(zh, "你已经可以使用这个机器人了。", "You may use the bot already."),
            "expired": zh_en!(zh, "这个申请已过期。", "This request has expired."),
            "foreign": zh_en!(zh, "这个按钮不是给你的", "This button is not for you."),
            "forbidden": zh_en!(zh, "只有管理员可以处理申请。", "Only an admin can decide a request."),
            "decided": zh_en!(zh, "已经处理过了：{what}", "Already decided: {what}"),
            "done": zh_en!(zh, "已处理：{what}", "Done: {what}"),
            "card_allowed": zh_en!(zh, "✅ {who} 已允许，角色：{role}", "✅ Allowed as {role} by {who}"),
            "card_declined": zh_en!(zh, "❌ {who} 已拒绝", "❌ Declined by {who}"),
            "card_expired": zh_en!(zh, "⌛ 申请已过期，没有人处理", "⌛ Expired without a decision"),
            "person_allowed": zh_en!(zh,
                "你的申请已通过：现在可以使用这个机器人了（角色：{role}）。发送 /help 查看命令，/whoami 查看你的身份。",
                "Your request was accepted: you may use the bot now (role: {role}). Send /help for the commands, /whoami for who you are to it."),
            "person_declined": zh_en!(zh, "你的申请没有通过。", "Your request was declined."),
            "roles": {
                "viewer": zh_en!(zh, "只读", "viewer"),
                "requester": zh_en!(zh, "申请者", "requester"),
                "user": zh_en!(zh, "用户", "user"),
                "admin": zh_en!(zh, "管理员", "admin"),
            },
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Locale;

    /// Every text in both languages, with the placeholders access.lua fills; a card leads with
    /// the id and marks the name as the person's own, cleaned of direction overrides.
    #[test]
    fn the_texts_exist_in_both_languages_and_a_card_leads_with_the_id() {
        let (zh, en) = (Texts::new(Locale::Zh), Texts::new(Locale::En));
        let (z, e): (serde_json::Value, serde_json::Value) = (
            serde_json::from_str(&zh.access_texts()).unwrap(),
            serde_json::from_str(&en.access_texts()).unwrap(),
        );
        for (key, value) in e.as_object().unwrap() {
            assert_ne!(z[key], *value, "{key}: one text for two languages");
        }
        for (key, hole) in [
            ("offer", "{id}"),
            ("card_allowed", "{who}"),
            ("decided", "{what}"),
        ] {
            assert!(z[key].as_str().unwrap().contains(hole), "{key}");
            assert!(e[key].as_str().unwrap().contains(hole), "{key}");
        }
        let name = en.person_name(Some("Mal\u{202e}lory"), Some("X"));
        assert_eq!(name, "Mallory X");
        let card = en.access_card(6666, &name, "m");
        assert!(
            card.contains("Telegram id: 6666\nName (their own choice): Mallory X"),
            "{card}"
        );
        assert!(zh.access_card(6666, "", "").contains("（无）"));
    }

    /// Issue 44: Allow as requester only with `household.media_requests`, in the role's
    /// place; access.lua has a name for every role a card may grant.
    #[test]
    fn a_card_offers_requester_only_when_media_requests_are_on() {
        for texts in [Texts::new(Locale::Zh), Texts::new(Locale::En)] {
            let decisions = |on| {
                texts
                    .access_allow_buttons(on)
                    .into_iter()
                    .map(|(_, d)| d)
                    .collect::<Vec<_>>()
            };
            assert_eq!(decisions(false), ["viewer", "user", "admin"]);
            assert_eq!(decisions(true), ["viewer", "requester", "user", "admin"]);
            let all: serde_json::Value = serde_json::from_str(&texts.access_texts()).unwrap();
            for r in Role::ALL {
                assert!(all["roles"][r.as_str()].is_string(), "{r}");
            }
        }
        let zh = Texts::new(Locale::Zh).access_allow_buttons(true);
        assert_eq!(zh[1].0, "允许：申请者");
        assert_eq!(
            Texts::new(Locale::En).access_allow_buttons(true)[1].0,
            "Allow: requester"
        );
    }
}
