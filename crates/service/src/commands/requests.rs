//! Media requests (issue 44), the part every maker of one shares: a requester's subscription,
//! best version or download becomes a request an admin decides, never a job of its own. The
//! admins' cards with their buttons, the requester's Withdraw button, and what ingress (a tap,
//! tap.lua's ARGV[20]) and a worker (a typed command, request.lua's `ask`) hand the scripts.
//! Which commands a requester's ask turns into a request: [`Command::requestable`].

use std::time::Duration;

use serde_json::{Value, json};

use super::Command;
use crate::i18n::Texts;
use crate::ledger::{
    Asking, Job, JobSpec, Owner, QuotaState, RequestLimits, RequestStep, TokenAction, TokenGroup,
};
use crate::moviepilot::MpError;
use crate::telegram::keyboard::{self, Keyboard};
use crate::vocabulary::{ChatTarget, Role};
use crate::worker::context::{
    Buttons, Context, Done, Settle, directory_now, ledger_error, owner, reply_to,
};

impl Command {
    /// Whether a requester's ask of it becomes a request (a subscription, a best version, a
    /// download, ⚡ Auto): the commands with an effect a requester may ask for.
    pub fn requestable(self) -> bool {
        matches!(
            self,
            Command::Subscribe | Command::Best | Command::Grab | Command::Auto
        )
    }
}

/// Where a request's cards go, and how long their buttons and the request live.
#[derive(Debug, Clone)]
pub struct RequestRoute {
    /// `telegram.admin_chats` (a chat or a forum topic), else each admin's private chat
    /// (deduplicated).
    pub chats: Vec<ChatTarget>,
    /// `household.request_ttl_secs`.
    pub ttl: Duration,
    /// `household.max_pending_requests_per_person`.
    pub max_pending: u32,
}

impl RequestRoute {
    pub fn new(
        admin_chats: &[ChatTarget],
        admins: Vec<i64>,
        ttl: Duration,
        max_pending: u32,
    ) -> Self {
        let mut chats: Vec<ChatTarget> = match admin_chats.is_empty() {
            true => admins.into_iter().map(ChatTarget::chat).collect(),
            false => admin_chats.to_vec(),
        };
        let mut seen = std::collections::HashSet::new();
        chats.retain(|c| seen.insert(*c));
        RequestRoute {
            chats,
            ttl,
            max_pending,
        }
    }

    /// Every admin chat's card buttons for `person`'s request: `{"tokens", "messages":
    /// [{"chat_id", "markup", "markup_best"}]}` (include/requests.lua sets each token's request).
    pub fn cards(&self, texts: &Texts, person: i64) -> Value {
        let mut group = TokenGroup::new(self.ttl);
        let [approve, best, decline] = texts.request_buttons();
        let messages: Vec<Value> = self
            .chats
            .iter()
            .map(|&target| {
                let chat_id = target.chat;
                let mut button = |(label, decision): (&str, &'static str)| {
                    let action = TokenAction::Decide {
                        person,
                        decision,
                        request: None,
                    };
                    let data = group.add(Owner::Admins { chat_id }, label, action, None);
                    (label.to_string(), keyboard::as_request(&data))
                };
                let (a, d) = (button(approve), button(decline));
                let b = button(best);
                let markup = Keyboard::new().row(vec![a.clone(), d.clone()]).to_json();
                let markup_best = Keyboard::new().row(vec![a, b]).row(vec![d]).to_json();
                json!({"chat_id": chat_id.to_string(), "thread_id": target.thread_arg(),
                       "markup": markup, "markup_best": markup_best})
            })
            .collect();
        json!({"tokens": group.spec(), "messages": messages})
    }

    /// What tap.lua needs to turn a requester's tap into a request (its ARGV[20]): `who` is
    /// `quota`: the requester's weekly limit and the answer when it is used up.
    /// the requester as the cards name them.
    pub fn tap_detail(
        &self,
        texts: &Texts,
        (chat_id, user_id): (i64, i64),
        who: &str,
        quota: Option<(u32, &str)>,
    ) -> String {
        let mut t = texts.request_texts();
        let (group, markup) = withdraw_button(texts, (chat_id, user_id), self.ttl, None);
        let mut detail = json!({
            "ttl_ms": self.ttl.as_millis().to_string(),
            "max_pending": self.max_pending.to_string(),
            "who": who,
            "texts": {"card": t["card"].take(), "sent": t["sent"].take(), "same": t["same"].take(),
                "many": t["many"].take(), "nobody": t["nobody"].take(),
                "quota": quota.map(|(_, text)| text).unwrap_or_default()},
            "cards": self.cards(texts, user_id),
            "withdraw": {"tokens": group.spec(), "markup": markup},
        });
        if let Some((limit, _)) = quota {
            detail["quota"] = json!({"limit": limit.to_string()});
        }
        detail.to_string()
    }
}

/// Whether `job`'s asker is a requester whose ask of `command` becomes a request: their role
/// ranks below the command's, and the command is one a requester may ask for. An approved
/// job carries its approving admin's role, so it runs.
pub(super) fn asks(job: &Job, command: Command) -> bool {
    job.role == Role::Requester && command.requestable() && job.role < command.policy().least_role
}

/// What a requester's button for `spec` carries (tap.lua makes the request from it), and for a
/// subscription the `/best` twin an admin may approve instead.
pub(super) fn asking(
    cx: &Context<'_>,
    job: &Job,
    spec: &JobSpec,
    what: String,
    poster: Option<&str>,
) -> Asking {
    let best = (spec.command == Command::Subscribe.name()).then(|| {
        let best = best_twin(cx, job, &spec.args);
        (best.idem, best.window)
    });
    Asking {
        what,
        poster: poster.map(str::to_string),
        best,
    }
}

/// The `/best` job with a subscription's arguments, for `job`'s asker.
fn best_twin(cx: &Context<'_>, job: &Job, args: &str) -> JobSpec {
    let window = Command::Best.window(&cx.settings.commands);
    Command::Best.button(owner(job), job.requester.as_deref(), args, window)
}

/// A requester's typed ask, looked up by their worker where it would act: a request and its
/// cards (request.lua's `ask`), answered "sent for approval" with a Withdraw button, or why
/// none was made. Nothing happens at MoviePilot.
pub(super) async fn ask(
    cx: &Context<'_>,
    job: &Job,
    spec: JobSpec,
    (what, poster): (String, Option<&str>),
) -> Result<Done, MpError> {
    let texts = cx.render.texts();
    let h = &cx.settings.household;
    let admins = directory_now(cx).await?.admins();
    let route = RequestRoute::new(
        &cx.settings.telegram.admin_chats,
        admins,
        h.request_ttl(),
        h.max_pending_requests_per_person,
    );
    let mut fields = ask_fields(cx, job, &spec, (what, poster));
    let mut all = texts.request_texts();
    let mut detail = json!({"cards": route.cards(texts, job.user_id)});
    if let Some((limit, used, text)) = quota_of(cx, job).await? {
        all["quota"] = json!(text);
        let who = fields["who"].as_str().unwrap_or_default();
        fields["who"] = json!(format!("{who}\n{}", texts.quota_line(limit, used)));
        detail["quota"] = json!({"limit": limit.to_string()});
    }
    detail["fields"] = fields;
    // This job's reply is the request's answer: the decision edits it (issue 45).
    detail["answer_job"] = json!(job.id.to_string());
    let detail = detail.to_string();
    let limits = RequestLimits {
        ttl: route.ttl,
        max_pending: route.max_pending,
        texts: &all.to_string(),
    };
    let (outcome, id) = cx
        .ledger
        .request(&RequestStep::Ask { detail: &detail }, limits)
        .await
        .map_err(ledger_error)?;
    let text = |key: &str| all[key].as_str().unwrap_or_default().replace("{id}", &id);
    let mut done = Done::new(text(&outcome), format!("request {outcome} {id}"));
    done.fields = vec![("request".into(), id.clone())];
    // No request made: the job failed, so the same ask again is not its repeat (a failed job
    // absorbs none) and is tried anew once a slot or an admin is there.
    if matches!(outcome.as_str(), "quota" | "many" | "nobody") {
        done.settle = Some(Settle::Failed {
            error: format!("no request made: {outcome}"),
        });
    }
    if outcome == "sent"
        && let Ok(request) = id.parse::<u64>()
    {
        let (group, markup) =
            withdraw_button(texts, (job.chat_id, job.user_id), route.ttl, Some(request));
        done.buttons = Some(Buttons {
            markup,
            tokens: group.spec().to_string(),
        });
    }
    Ok(done)
}

/// `job`'s asker's weekly quota as it stands: their limit, the slots held or used, and the day
/// zone a slot's time is told in; `None` (and nothing read): not limited.
pub(super) async fn quota_now(
    cx: &Context<'_>,
    job: &Job,
) -> Result<Option<(u32, QuotaState, jiff::tz::TimeZone)>, MpError> {
    let Some(limit) = cx.settings.household.quotas().limit(job.user_id, job.role) else {
        return Ok(None);
    };
    let zone = cx.settings.commands.zone();
    let now = jiff::Timestamp::now().as_millisecond();
    let state = cx
        .ledger
        .quota_state(job.user_id, now)
        .await
        .map_err(ledger_error)?;
    Ok(Some((limit, state, zone)))
}

/// `job`'s asker's weekly quota: their limit, the slots used, and the answer when it is used
/// up; `None`: not limited.
async fn quota_of(cx: &Context<'_>, job: &Job) -> Result<Option<(u32, u32, String)>, MpError> {
    Ok(quota_now(cx, job).await?.map(|(limit, state, zone)| {
        let text = cx.render.texts().quota_used_up(limit, state, &zone);
        (limit, state.used, text)
    }))
}

/// The request's fields as include/requests.lua stores them: the job approval makes
/// (`spec`, and a subscription's `/best` twin), who asked, and the card's description.
fn ask_fields(
    cx: &Context<'_>,
    job: &Job,
    spec: &JobSpec,
    (what, poster): (String, Option<&str>),
) -> Value {
    let texts = cx.render.texts();
    let best = (spec.command == Command::Subscribe.name()).then(|| best_twin(cx, job, &spec.args));
    let (best_idem, best_window_ms) = best
        .map(|b| (b.idem, b.window.as_millis().to_string()))
        .unwrap_or_default();
    let who = texts.requester_line(job.requester.as_deref().unwrap_or(""), job.user_id);
    json!({
            "user_id": job.user_id.to_string(),
            "chat_id": job.chat_id.to_string(),
            "reply_to": reply_to(job).map(|m| m.to_string()).unwrap_or_default(),
            "thread_id": job.extra.get(crate::vocabulary::job_field::THREAD_ID).cloned().unwrap_or_default(),
            "requester": job.requester.clone().unwrap_or_default(),
            "who": who,
            "command": spec.command,
            "args": spec.args,
            "idem": spec.idem,
            "window_ms": spec.window.as_millis().to_string(),
            "recovery": spec.recovery.as_str(),
            "best_idem": best_idem,
            "best_window_ms": best_window_ms,
            "list": "",
            "what": what,
            "poster": poster.unwrap_or(""),
    })
}

/// A user's typed subscription about to be made, under their weekly quota: its slot taken
/// (quota.lua: with the job's `quota` field, once; a button's job took it at its tap), or the
/// answer that the quota is used up, and nothing is made. `None`: go on.
pub(super) async fn over_quota(cx: &Context<'_>, job: &Job) -> Result<Option<Done>, MpError> {
    let Some(limit) = cx.settings.household.quotas().limit(job.user_id, job.role) else {
        return Ok(None);
    };
    let (outcome, _) = cx
        .ledger
        .take_quota((job.user_id, job.id), limit, 1)
        .await
        .map_err(ledger_error)?;
    if outcome != "full" {
        return Ok(None);
    }
    let Some((_, _, text)) = quota_of(cx, job).await? else {
        return Ok(None);
    };
    // Failed, so the same ask again is not its repeat once a slot frees.
    Ok(Some(Done {
        settle: Some(Settle::Failed {
            error: "weekly quota used up; nothing made".into(),
        }),
        ..Done::new(text, "weekly quota used up; nothing made".into())
    }))
}

/// The requester's Withdraw button for `request` (`None`: the script making the request sets
/// it), and its keyboard.
pub fn withdraw_button(
    texts: &Texts,
    (chat_id, user_id): (i64, i64),
    ttl: Duration,
    request: Option<u64>,
) -> (TokenGroup, String) {
    let mut group = TokenGroup::new(ttl);
    let label = texts.withdraw_button();
    let data = group.add(
        Owner::User { chat_id, user_id },
        label,
        TokenAction::Withdraw { request },
        None,
    );
    let markup = Keyboard::new()
        .row(vec![(label.to_string(), keyboard::as_request(&data))])
        .to_json();
    (group, markup)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Locale;

    /// One card per admin chat, however often a chat is named; a subscription's card offers
    /// Approve as best version, every button is `r:` data of its own token.
    #[test]
    fn one_card_per_chat_with_request_buttons() {
        let route = RequestRoute::new(&[], vec![5, 6, 5], Duration::from_secs(60), 10);
        assert_eq!(route.chats, vec![ChatTarget::chat(5), ChatTarget::chat(6)]);
        let cards = route.cards(&Texts::new(Locale::En), 42);
        let messages = cards["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2);
        let best = messages[0]["markup_best"].as_str().unwrap();
        assert!(best.contains("Approve as best version"), "{best}");
        assert!(
            !messages[0]["markup"]
                .as_str()
                .unwrap()
                .contains("best version")
        );
        assert!(best.contains("\"r:"), "{best}");
        let tokens = cards["tokens"]["tokens"].as_array().unwrap();
        assert_eq!(tokens.len(), 6);
        assert!(
            tokens
                .iter()
                .all(|t| t["person"] == "42" && t["action"] == "decide")
        );
        let topic = ChatTarget::in_thread(-100, Some(7));
        let route = RequestRoute::new(&[topic], vec![5], Duration::from_secs(60), 10);
        assert_eq!(route.chats, vec![topic]);
        // A forum topic's card goes to the topic; its buttons are the chat's.
        let cards = route.cards(&Texts::new(Locale::En), 42);
        let card = &cards["messages"][0];
        assert_eq!(
            (&card["chat_id"], &card["thread_id"]),
            (&json!("-100"), &json!("7"))
        );
    }
}
