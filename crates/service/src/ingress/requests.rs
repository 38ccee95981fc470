//! Media requests (issue 44) at the door: what a requester's tap hands tap.lua (the cards of
//! the request it makes instead of a job), the taps on `r:` buttons (an admin's decision, the
//! requester's Withdraw) handed to request.lua with who decides and whether the requester may
//! still use the bot, and the sweep that expires requests nobody decided.

use std::time::Duration;

use serde_json::json;

use super::{Handled, Ingress};
use crate::commands::RequestRoute;
use crate::config::{Quotas, Settings};
use crate::ledger::{Admitted, LedgerError, RequestLimits, RequestStep, Tap};
use crate::metrics::METRICS;
use crate::telegram::types::{CallbackQuery, User};
use crate::vocabulary::ChatTarget;
use crate::vocabulary::Role;

/// What media requests run under.
pub(super) struct RequestSettings {
    ttl: Duration,
    max_pending: u32,
    /// `telegram.admin_chats`: where the cards go; empty: each admin's private chat.
    admin_chats: Vec<ChatTarget>,
    /// `household.quotas`.
    quotas: Quotas,
    /// `commands.day_zone`: when a quota's next slot frees, as a person reads it.
    zone: jiff::tz::TimeZone,
}

impl RequestSettings {
    pub(super) fn new(settings: &Settings) -> RequestSettings {
        let h = &settings.household;
        RequestSettings {
            ttl: h.request_ttl(),
            max_pending: h.max_pending_requests_per_person,
            admin_chats: settings.telegram.admin_chats.clone(),
            quotas: h.quotas(),
            zone: settings.commands.zone(),
        }
    }
}

impl Ingress {
    fn request_route(&self) -> RequestRoute {
        let r = &self.inner.requests;
        let admins = self.inner.directory.current().admins();
        RequestRoute::new(&r.admin_chats, admins, r.ttl, r.max_pending)
    }

    fn request_limits<'t>(&self, texts: &'t str) -> RequestLimits<'t> {
        RequestLimits {
            ttl: self.inner.requests.ttl,
            max_pending: self.inner.requests.max_pending,
            texts,
        }
    }

    /// A tapper's name as a card shows it: their name and Telegram id.
    fn who(&self, from: &User) -> String {
        let texts = self.inner.texts;
        let name = texts.person_name(from.first_name.as_deref(), from.last_name.as_deref());
        texts.requester_line(&name, from.id)
    }

    /// What tap.lua needs of a tap besides the token: the tapper's weekly quota (its ARGV[21],
    /// with the answer when it is used up; read only for someone limited) and, for a
    /// requester, the request their tap makes instead of a job (ARGV[20]).
    pub(super) async fn quota_and_request(
        &self,
        tap: &mut Tap,
        from: &User,
    ) -> Result<(), LedgerError> {
        let r = &self.inner.requests;
        let mut quota = None;
        if let Some(limit) = r.quotas.limit(tap.user_id, tap.role) {
            let now = jiff::Timestamp::now().as_millisecond();
            let state = self.inner.ledger.quota_state(tap.user_id, now).await?;
            let text = self.inner.texts.quota_used_up(limit, state, &r.zone);
            quota = Some((limit, text, state.used));
        }
        if let Some((limit, text, _)) = &quota
            && tap.role != Role::Requester
        {
            tap.quota = Some(json!({"limit": limit.to_string(), "text": text}).to_string());
        }
        if let (Some(chat_id), Role::Requester, false) = (tap.chat_id, tap.role, from.is_bot) {
            let texts = &self.inner.texts;
            let mut who = self.who(from);
            if let Some((limit, _, used)) = &quota {
                who = format!("{who}\n{}", texts.quota_line(*limit, *used));
            }
            let detail = self.request_route().tap_detail(
                texts,
                (chat_id, from.id),
                &who,
                quota.as_ref().map(|(l, t, _)| (*l, t.as_str())),
            );
            tap.request = Some(detail);
        }
        Ok(())
    }

    /// A tap on an `r:` button: an admin's Approve / Approve as best version / Decline, or the
    /// requester's Withdraw (request.lua's tap).
    pub(super) async fn request_tap(
        &self,
        update_id: i64,
        query: &CallbackQuery,
        token: &str,
    ) -> Result<Handled, LedgerError> {
        let Some(message) = &query.message else {
            // No message to bind the button to: not one oncebot sent.
            return self.tap(update_id, query).await;
        };
        let inner = &self.inner;
        let directory = inner.directory.current();
        let identity = directory
            .identify(query.from.id)
            .filter(|_| !query.from.is_bot);
        let may_decide = identity.as_ref().is_some_and(|i| i.role == Role::Admin);
        // Whether the requester may still use the bot: read only for an admin's tap.
        let person_allowed = match may_decide {
            true => inner
                .ledger
                .token_person(token)
                .await?
                .is_some_and(|person| directory.is_allowed(person)),
            false => false,
        };
        let detail = json!({
            "may_decide": if may_decide { "1" } else { "0" },
            "who": self.who(&query.from),
            "role": identity.map_or(Role::Viewer, |i| i.role).as_str(),
            "person_allowed": if person_allowed { "1" } else { "0" },
        })
        .to_string();
        let step = RequestStep::Tap {
            update_id,
            user_id: query.from.id,
            chat_id: message.chat.id,
            message_id: message.message_id,
            callback_query_id: &query.id,
            token,
            detail: &detail,
        };
        let texts = inner.texts.request_texts().to_string();
        let (outcome, id) = inner
            .ledger
            .request(&step, self.request_limits(&texts))
            .await?;
        METRICS.update("callback");
        tracing::info!(
            update_id,
            user_id = query.from.id,
            chat_id = message.chat.id,
            outcome,
            id,
            "request button tapped"
        );
        Ok(Handled::Admitted(Admitted::Replied))
    }

    /// Requests nobody decided in time: expired, their cards and requesters told; the number.
    pub async fn expire_requests(&self) -> Result<String, LedgerError> {
        let texts = self.inner.texts.request_texts().to_string();
        let (_, n) = self
            .inner
            .ledger
            .request(&RequestStep::Expire, self.request_limits(&texts))
            .await?;
        Ok(n)
    }
}
