//! Asking for access from the chat (`household.access_requests`, issue 43): a stranger's
//! message in a private chat answered with their id and an Ask button, and the taps on `a:`
//! buttons (Ask, an admin's Allow / Decline). Ingress builds what the answer and the cards need
//! (the buttons' tokens, the texts, who decides now); lua/access.lua decides, in one step.

use std::time::Duration;

use serde_json::json;

use super::{Handled, Ingress, REFUSAL_WINDOW, once_key};
use crate::commands::{self, ChatKind, Parsed};
use crate::config::Settings;
use crate::ledger::TokenGroup;
use crate::ledger::{AccessLimits, AccessStep, Admitted, LedgerError, Owner, TokenAction};
use crate::metrics::METRICS;
use crate::telegram::keyboard::{self, Keyboard};
use crate::telegram::types::{CallbackQuery, Message, Update, User};
use crate::untrusted::clean_line;
use crate::vocabulary::ChatTarget;
use crate::vocabulary::{ReplyKind, Role};

/// How often a process with an ingress looks for requests whose window passed.
const EXPIRE_EVERY: Duration = Duration::from_secs(30);

/// What asking for access runs under.
pub(super) struct AccessSettings {
    /// `household.access_requests`: strangers are offered the Ask button.
    on: bool,
    window: Duration,
    cap: u32,
    /// `telegram.admin_chats`: where the cards go; empty: each admin's private chat.
    admin_chats: Vec<ChatTarget>,
    /// `household.media_requests`: a card also offers Allow as requester (issue 44).
    requester: bool,
}

impl AccessSettings {
    pub(super) fn new(settings: &Settings) -> AccessSettings {
        let h = &settings.household;
        AccessSettings {
            on: h.access_requests,
            window: h.access_request_window(),
            cap: h.max_pending_access_requests,
            admin_chats: settings.telegram.admin_chats.clone(),
            requester: h.media_requests,
        }
    }
}

impl Ingress {
    fn access_limits<'t>(&self, texts: &'t str) -> AccessLimits<'t> {
        let a = &self.inner.access;
        AccessLimits {
            window: a.window,
            cap: a.cap,
            texts,
        }
    }

    /// A stranger's message in a private chat, while strangers may ask.
    pub(super) fn asks_access<'u>(&self, update: &'u Update) -> Option<(&'u Message, &'u User)> {
        let inner = &self.inner;
        if !inner.access.on {
            return None;
        }
        let (message, from, text, chat) = super::command_message(update).ok()?;
        if chat != ChatKind::Private || inner.directory.current().is_allowed(from.id) {
            return None;
        }
        let parsed = commands::parse(text, chat, &inner.bot_username);
        (parsed != Parsed::NotForUs).then_some((message, from))
    }

    /// Their Telegram id and the Ask button (at most once an hour), unless they wait or were
    /// declined (access.lua's offer).
    pub(super) async fn offer_access(
        &self,
        update_id: i64,
        message: &Message,
        from: &User,
    ) -> Result<Handled, LedgerError> {
        let inner = &self.inner;
        let chat_id = message.chat.id;
        let mut group = TokenGroup::new(REFUSAL_WINDOW);
        let label = inner.texts.ask_button();
        let owner = Owner::User {
            chat_id,
            user_id: from.id,
        };
        let data = group.add(owner, label, TokenAction::Ask, None);
        let markup = Keyboard::new()
            .row(vec![(label.to_string(), keyboard::as_access(&data))])
            .to_json();
        let detail = json!({
            "once": once_key(ReplyKind::Access, chat_id, from.id),
            "once_ms": REFUSAL_WINDOW.as_millis().to_string(),
            "tokens": group.spec(),
            "markup": markup,
        })
        .to_string();
        let step = AccessStep::Offer {
            update_id,
            user_id: from.id,
            chat_id,
            message_id: message.message_id,
            detail: &detail,
        };
        let texts = inner.texts.access_texts();
        let outcome = inner
            .ledger
            .access(&step, self.access_limits(&texts))
            .await?;
        METRICS.update("unauthorised");
        tracing::debug!(update_id, user_id = from.id, outcome, "a stranger answered");
        Ok(Handled::Admitted(match outcome.as_str() {
            "suppressed" => Admitted::Suppressed,
            "duplicate_update" => Admitted::DuplicateUpdate {
                job_id: None,
                state: None,
            },
            _ => Admitted::Replied,
        }))
    }

    /// A tap on an `a:` button: the Ask (a request and its cards) or an admin's card (the
    /// decision), as the token says (access.lua's tap).
    pub(super) async fn access_tap(
        &self,
        update_id: i64,
        query: &CallbackQuery,
        token: &str,
    ) -> Result<Handled, LedgerError> {
        let Some(message) = &query.message else {
            // No message to bind the button to: not one oncebot sent.
            return self.tap(update_id, query).await;
        };
        let detail = self.tap_detail(&query.from);
        let step = AccessStep::Tap {
            update_id,
            user_id: query.from.id,
            chat_id: message.chat.id,
            message_id: message.message_id,
            callback_query_id: &query.id,
            token,
            detail: &detail,
        };
        let texts = self.inner.texts.access_texts();
        let outcome = self
            .inner
            .ledger
            .access(&step, self.access_limits(&texts))
            .await?;
        METRICS.update("callback");
        tracing::info!(
            update_id,
            user_id = query.from.id,
            chat_id = message.chat.id,
            outcome,
            "access button tapped"
        );
        Ok(Handled::Admitted(Admitted::Replied))
    }

    /// What access.lua needs of a tap: whether the tapper may use the bot and decide now, their
    /// name for a card's last line, and (for an Ask) the card with its buttons for every admin
    /// chat: `telegram.admin_chats`, else each admin's private chat.
    fn tap_detail(&self, from: &User) -> String {
        let inner = &self.inner;
        let directory = inner.directory.current();
        let identity = directory.identify(from.id).filter(|_| !from.is_bot);
        let may_decide = identity.as_ref().is_some_and(|i| i.role >= Role::Admin);
        let texts = inner.texts;
        let name = texts.person_name(from.first_name.as_deref(), from.last_name.as_deref());
        let username: String = from
            .username
            .as_deref()
            .map(|u| clean_line(u).chars().take(64).collect())
            .unwrap_or_default();
        let who = match name.is_empty() {
            true => from.id.to_string(),
            false => format!("{name} ({})", from.id),
        };
        let chats: Vec<ChatTarget> = match inner.access.admin_chats.is_empty() {
            true => directory
                .admins()
                .into_iter()
                .map(ChatTarget::chat)
                .collect(),
            false => inner.access.admin_chats.clone(),
        };
        let mut group = TokenGroup::new(inner.access.window);
        let messages: Vec<_> = chats
            .into_iter()
            .map(|target| {
                let chat_id = target.chat;
                let mut button = |(label, decision): (&'static str, &'static str)| {
                    let action = TokenAction::Access {
                        person: from.id,
                        decision,
                    };
                    let data = group.add(Owner::Admins { chat_id }, label, action, None);
                    (label.to_string(), keyboard::as_access(&data))
                };
                let allow: Vec<_> = texts
                    .access_allow_buttons(inner.access.requester)
                    .into_iter()
                    .map(&mut button)
                    .collect();
                let decline = button(texts.access_decline_button());
                // Three Allow buttons fit a row; four go two by two.
                let per_row = if allow.len() > 3 { 2 } else { 3 };
                let mut keyboard = Keyboard::new();
                for row in allow.chunks(per_row) {
                    keyboard = keyboard.row(row.to_vec());
                }
                let markup = keyboard.row(vec![decline]).to_json();
                json!({"chat_id": chat_id.to_string(), "thread_id": target.thread_arg(),
                       "markup": markup})
            })
            .collect();
        json!({
            "allowed": if identity.is_some() { "1" } else { "0" },
            "may_decide": if may_decide { "1" } else { "0" },
            "who": who,
            "card": texts.access_card(from.id, &name, &username),
            "name": name,
            "username": username,
            "tokens": group.spec(),
            "messages": messages,
        })
        .to_string()
    }

    /// Requests whose window passed: their cards told (access.lua's expire), the number.
    pub async fn expire_access_requests(&self) -> Result<String, LedgerError> {
        let texts = self.inner.texts.access_texts();
        self.inner
            .ledger
            .access(&AccessStep::Expire, self.access_limits(&texts))
            .await
    }

    /// Whether strangers may ask (`household.access_requests`).
    pub fn access_requests(&self) -> bool {
        self.inner.access.on
    }

    /// Every [`EXPIRE_EVERY`] until `stop`: access requests (when strangers may ask) and media
    /// requests whose time passed get their cards told (a card says "expired" at most that
    /// long after its time).
    pub async fn expire_requests_until(self, stop: tokio_util::sync::CancellationToken) {
        while !crate::shutdown::sleep_or_stop(EXPIRE_EVERY, &stop).await {
            if self.access_requests()
                && let Err(e) = self.expire_access_requests().await
            {
                tracing::debug!(error = %e, "expiring access requests failed; tried again")
            }
            if let Err(e) = self.expire_requests().await {
                tracing::debug!(error = %e, "expiring media requests failed; tried again")
            }
        }
    }
}
