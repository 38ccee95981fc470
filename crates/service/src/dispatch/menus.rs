//! The command menus Telegram shows (`setMyCommands`): everyone's without the admin commands,
//! and in each admin's private chat (scope `chat`) the menu with them. Who is an admin changes
//! while oncebot runs (MoviePilot's own mapping is read later and refreshed, a grant is given or
//! taken back: `users_sync`), so the admins' menus follow the process's one directory, the one
//! its ingress decides with (`app` runs one `users_sync::Follower` a process): a new admin gets
//! the menu,
//! someone who is no longer one gets it deleted (`deleteMyCommands` for their chat, which shows
//! everyone's again). A menu only offers: the commands are refused to a non-admin whatever it shows.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::{Locale, Settings};
use crate::i18n::Texts;
use crate::shutdown::sleep_or_stop;
use crate::telegram::api::BotApi;
use crate::users::Live;
use crate::users_sync::FOLLOW_EVERY;

use super::CALL_TIMEOUT;

pub(super) struct Menus {
    api: BotApi,
    locale: Locale,
    /// The process's directory, kept current by its follower.
    live: Live,
    /// The chats whose admin menu Telegram has now.
    shown: BTreeSet<i64>,
    /// Chats Telegram refused a menu for, and when: tried again after [`RETRY_REFUSED`], not at
    /// every turn (an admin who never opened a chat with the bot is "chat not found" until they do).
    refused: BTreeMap<i64, Instant>,
}

/// How long a chat Telegram refused a menu for waits before the next try.
const RETRY_REFUSED: Duration = Duration::from_secs(600);

impl Menus {
    pub fn new(settings: &Settings, live: Live, api: BotApi) -> Menus {
        Menus {
            api,
            locale: settings.telegram.locale,
            live,
            shown: BTreeSet::new(),
            refused: BTreeMap::new(),
        }
    }

    /// Registers everyone's menu, then keeps the admins' menus in step until `stop`.
    pub async fn run(mut self, stop: CancellationToken) {
        let everyone = json!({ "commands": self.menu(false) });
        match self.call("setMyCommands", &everyone).await {
            Ok(()) => tracing::info!("command list registered with Telegram"),
            Err(e) => {
                tracing::warn!(error = %e, "setMyCommands failed; the command menu may be stale")
            }
        }
        loop {
            self.follow_admins().await;
            if sleep_or_stop(FOLLOW_EVERY, &stop).await {
                return;
            }
        }
    }

    /// Gives each admin's chat the admin menu and takes it from those who are no longer admins.
    async fn follow_admins(&mut self) {
        let admins: BTreeSet<i64> = self.live.current().admins().into_iter().collect();
        let menu = json!(self.menu(true));
        let due = |chat: &i64| {
            self.refused
                .get(chat)
                .is_none_or(|at| at.elapsed() >= RETRY_REFUSED)
        };
        let missing: Vec<i64> = admins
            .difference(&self.shown)
            .copied()
            .filter(due)
            .collect();
        for chat in missing {
            let body = json!({"commands": menu, "scope": chat_scope(chat)});
            match self.call("setMyCommands", &body).await {
                Ok(()) => {
                    self.shown.insert(chat);
                    self.refused.remove(&chat);
                    tracing::info!(chat_id = chat, "admin command menu registered");
                }
                Err(e) => {
                    self.refused.insert(chat, Instant::now());
                    tracing::warn!(
                        chat_id = chat,
                        error = %e,
                        retry_in = ?RETRY_REFUSED,
                        "setMyCommands for an admin's chat failed (an admin who never opened a \
                         chat with the bot is 'chat not found')"
                    );
                }
            }
        }
        for chat in self.shown.difference(&admins).copied().collect::<Vec<_>>() {
            let body = json!({"scope": chat_scope(chat)});
            match self.call("deleteMyCommands", &body).await {
                Ok(()) => {
                    self.shown.remove(&chat);
                    tracing::info!(
                        chat_id = chat,
                        "admin command menu removed (no longer an admin)"
                    );
                }
                Err(e) => {
                    tracing::warn!(chat_id = chat, error = %e, "deleteMyCommands failed; tried again shortly")
                }
            }
        }
    }

    /// Everyone's menu, or an admin's (everyone's and the admin commands).
    fn menu(&self, admin: bool) -> Vec<Value> {
        let texts = Texts::new(self.locale);
        let commands = crate::commands::Command::listing();
        let mut list = texts.command_list(&commands);
        if admin {
            list.extend(texts.admin_command_list(&commands));
        }
        list.into_iter()
            .map(|(command, description)| json!({"command": command, "description": description}))
            .collect()
    }

    async fn call(&self, method: &str, body: &Value) -> Result<(), crate::telegram::api::ApiError> {
        self.api
            .call::<Value>(method, body, CALL_TIMEOUT)
            .await
            .map(|_| ())
    }
}

fn chat_scope(chat: i64) -> Value {
    json!({"type": "chat", "chat_id": chat})
}
