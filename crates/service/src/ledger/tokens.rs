//! One-time buttons: storing a group of tokens, and a tap on one (`lua/tap.lua`).
//!
//! Policy, in one place:
//! - **A token is bound.** A user's button works only for that user in that chat; a review
//!   button works only in the admin chat it was sent to, for a user on the allow-list. A tap by
//!   anyone else is answered "not for you" and leaves the button usable.
//! - **Siblings are used together.** Buttons offered together form a group; a tap that uses one
//!   uses the group, so Confirm after Cancel (or a second search result) does nothing.
//! - **Everything expires.** A group's tokens share one expiry: `telegram.confirm_ttl_secs`
//!   for a user's buttons, `telegram.review_ttl_secs` for review buttons. A group's key is
//!   written only by the tap that uses it and kept a second longer than its tokens, so a second
//!   tap can be told what the first one did; until then the tokens alone are the open group.
//! - **One answer per tap**, written with the decision, for the dispatcher's fast lane.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use super::scripts::{OrEmpty, ScriptCall};
use super::{JobSpec, JobState, Ledger, LedgerError, LedgerTexts, Resolution, keys, scripts};
use crate::telegram::keyboard::{self, Keyboard};
use crate::vocabulary::{ChatTarget, Role};

/// Who may use a button.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The user who asked, in the chat they asked in.
    User { chat_id: i64, user_id: i64 },
    /// Any allowed user, in this admin chat.
    Admins { chat_id: i64 },
}

/// What a button does when its owner taps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenAction {
    /// Create this job, exactly as if the owner had typed the command (same business key and
    /// duplicate window, same recovery policy).
    Run(JobSpec),
    /// Create this house command's job even inside its window (an admin's button under a
    /// repeat's answer): the new job takes the window over and records who forced it.
    Force(JobSpec),
    /// Use the group and do nothing else.
    Cancel,
    /// Settle a `needs_review` job, as `oncebot jobs resolve` does.
    Review { job_id: u64, decision: Resolution },
    /// Show page `page` (1-based) of the list job `list` stored (`Keys::pages`) in the tapped
    /// message: read-only, reusable until the list expires, never part of a group (it uses
    /// nothing up and nothing used stops it).
    Page { list: u64, page: usize },
    /// `/mine`'s **Show** (issue 45): card `card`'s current text sent again as a new message,
    /// in reply to the card's message when that is in the tapped chat and still there (private
    /// chats have no message links). Read-only and reusable as a page button: no job, no group,
    /// no MoviePilot call; `text` is what is sent while the card has no text of its own yet
    /// (nothing stepped it since it opened: the list's own rendering of it).
    Show { card: u64, text: String },
    /// A stranger's **Ask for access** (access.lua, behind `a:` callback data).
    Ask,
    /// An admin's Allow (`decision`: a role's name) or Decline (`decline`) on the card of
    /// `person`'s request (access.lua, behind `a:` callback data).
    Access { person: i64, decision: &'static str },
    /// An admin's Approve (`approve`), Approve as best version (`best`) or Decline
    /// (`decline`) on the card of `person`'s media request (request.lua, behind `r:` callback
    /// data): `request` `None` on a card (the script making the request sets its id), the
    /// request's id on an admin's `/requests` list.
    Decide {
        person: i64,
        decision: &'static str,
        request: Option<u64>,
    },
    /// The requester's Withdraw of their pending request (request.lua, behind `r:`): `None`
    /// when the script making the request sets its id.
    Withdraw { request: Option<u64> },
}

/// What a run button made for a requester carries, for the request its tap makes instead of
/// the job (issue 44): the card's description and poster, and for a subscription the business
/// key and window of the same ask as `/best` (Approve as best version).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Asking {
    pub what: String,
    pub poster: Option<String>,
    pub best: Option<(String, Duration)>,
}

/// One button's token.
#[derive(Debug, Clone)]
pub struct Token {
    pub token: String,
    pub owner: Owner,
    /// The button's text, kept for operators reading the ledger.
    pub label: String,
    pub action: TokenAction,
    /// The message a job made by this button replies to (the user's command).
    pub reply_to: Option<i64>,
    /// A button that is not a sibling of the others (see [`Solo`]); `None` for most.
    pub solo: Option<Solo>,
    /// A requester's run button: what their tap asks for (see [`Asking`]).
    pub asking: Option<Asking>,
    /// A request button on a `/requests` or `/mine` list (see [`Listed`]).
    pub listed: Option<Listed>,
    /// A run button whose job's answer takes the tapped message's place (`/notify`'s menu):
    /// tap.lua gives the job that message as its `progress_message_id`, so the reply edits it.
    pub in_place: bool,
}

/// A request button (Decide, Withdraw) on a `/requests` or `/mine` list (issue 44): the list
/// job whose message shows it (request.lua leaves that message as it is shown: the list is a
/// snapshot, the tap's answer says what happened), and how long the button lives (its
/// request's remaining time, not the group's: the page buttons beside it live as the list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listed {
    pub list: u64,
    pub ttl: Duration,
}

/// A button with a group of its own: a tap uses it alone and leaves the others working (the
/// `下载 k` buttons of a release list, the download buttons under search matches).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Solo {
    /// The resource-search job whose stored list keyboard a tap edits (`Keys::releases`).
    pub list: Option<u64>,
    /// The button's text once it is used (e.g. `✓ 下载 1`).
    pub used_label: String,
    /// The page of the list the button is on (1-based), whose stored keyboard gets the `✓`.
    pub page: Option<usize>,
}

/// Buttons offered together: using one uses them all.
#[derive(Debug, Clone)]
pub struct TokenGroup {
    pub id: String,
    pub ttl: Duration,
    pub tokens: Vec<Token>,
}

impl TokenGroup {
    pub fn new(ttl: Duration) -> Self {
        Self {
            id: keyboard::new_group_id(),
            ttl,
            tokens: Vec::new(),
        }
    }

    /// Adds a button with a fresh token and returns its callback data (`t:<token>`).
    pub fn add(
        &mut self,
        owner: Owner,
        label: &str,
        action: TokenAction,
        reply_to: Option<i64>,
    ) -> String {
        let token = keyboard::new_token();
        let data = keyboard::callback_data(&token);
        self.tokens.push(Token {
            token,
            owner,
            label: label.to_string(),
            action,
            reply_to,
            solo: None,
            asking: None,
            listed: None,
            in_place: false,
        });
        data
    }

    /// Marks the last button added as a requester's (see [`Asking`]).
    pub fn asking(&mut self, asking: Asking) {
        if let Some(t) = self.tokens.last_mut() {
            t.asking = Some(asking);
        }
    }

    /// Marks the last button added as answered in place of its message (see [`Token`]).
    pub fn in_place(&mut self) {
        if let Some(t) = self.tokens.last_mut() {
            t.in_place = true;
        }
    }

    /// Marks the last button added as a request button on a list (see [`Listed`]).
    pub fn listed(&mut self, listed: Listed) {
        if let Some(t) = self.tokens.last_mut() {
            t.listed = Some(listed);
        }
    }

    /// [`Self::add`] for a button that is not a sibling of the others (see [`Solo`]).
    pub fn add_solo(
        &mut self,
        owner: Owner,
        label: &str,
        action: TokenAction,
        reply_to: Option<i64>,
        solo: Solo,
    ) -> String {
        let data = self.add(owner, label, action, reply_to);
        if let Some(t) = self.tokens.last_mut() {
            t.solo = Some(solo);
        }
        data
    }

    /// The JSON include/tokens.lua reads (`to_string()`, or embedded in other JSON). Every id
    /// is a string: Lua's numbers are doubles, and printing one loses digits of a 52-bit id.
    /// Empty fields are left out, which the script reads as empty.
    pub fn spec(&self) -> GroupSpec<'_> {
        GroupSpec {
            group: &self.id,
            ttl: self.ttl.as_secs().max(1).to_string(),
            tokens: self.tokens.iter().map(token_spec).collect(),
        }
    }
}

/// A [`TokenGroup`] as include/tokens.lua reads it: plain structs serialised straight to text,
/// since this is built for every reply with buttons (a `serde_json::Value` tree of maps cost
/// about a twentieth of the worker's instructions in the bench's drain).
#[derive(Debug, serde::Serialize)]
pub struct GroupSpec<'a> {
    group: &'a str,
    /// Seconds, as a string: include/tokens.lua passes it to EXPIRE as it is.
    ttl: String,
    tokens: Vec<TokenSpec<'a>>,
}

impl std::fmt::Display for GroupSpec<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| std::fmt::Error)?;
        f.write_str(&text)
    }
}

#[derive(Debug, serde::Serialize)]
struct TokenSpec<'a> {
    token: &'a str,
    chat_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    user_id: String,
    #[serde(skip_serializing_if = "str::is_empty")]
    scope: &'static str,
    label: &'a str,
    #[serde(skip_serializing_if = "String::is_empty")]
    reply_to: String,
    action: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    command: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    args: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    idem: &'a str,
    #[serde(skip_serializing_if = "String::is_empty")]
    window_ms: String,
    #[serde(skip_serializing_if = "str::is_empty")]
    recovery: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    job_id: String,
    #[serde(skip_serializing_if = "str::is_empty")]
    decision: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    solo: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    list: String,
    #[serde(skip_serializing_if = "str::is_empty")]
    used_label: &'a str,
    #[serde(skip_serializing_if = "String::is_empty")]
    page: String,
    /// The least role a tap must have (tap.lua compares ranks): the command's, an admin's for
    /// a review or force button; none for Cancel and page buttons, which act on nothing.
    #[serde(skip_serializing_if = "str::is_empty")]
    least_role: &'static str,
    /// An access card's: whose request; a request card's: the requester.
    #[serde(skip_serializing_if = "String::is_empty")]
    person: String,
    /// A request button's request (a card's is set by the script, a list's here).
    #[serde(skip_serializing_if = "String::is_empty")]
    request: String,
    #[serde(skip_serializing_if = "str::is_empty")]
    ask: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    poster: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    best_idem: &'a str,
    #[serde(skip_serializing_if = "String::is_empty")]
    best_window_ms: String,
    /// This token's own lifetime, seconds, instead of the group's (a listed request button).
    #[serde(skip_serializing_if = "String::is_empty")]
    ttl: String,
    /// A Show button's text for a card that has none yet.
    #[serde(skip_serializing_if = "str::is_empty")]
    text: &'a str,
    /// "1": the job's answer edits the tapped message (tap.lua).
    #[serde(skip_serializing_if = "str::is_empty")]
    in_place: &'static str,
}

fn token_spec(t: &Token) -> TokenSpec<'_> {
    let (chat_id, user_id, scope) = match t.owner {
        // A user's button stores no scope (tap.lua's default, the stricter check).
        Owner::User { chat_id, user_id } => (chat_id, user_id.to_string(), ""),
        Owner::Admins { chat_id } => (chat_id, String::new(), "admin"),
    };
    let mut spec = TokenSpec {
        token: &t.token,
        chat_id: chat_id.to_string(),
        user_id,
        scope,
        label: &t.label,
        reply_to: t.reply_to.map(|m| m.to_string()).unwrap_or_default(),
        action: "",
        command: "",
        args: "",
        idem: "",
        window_ms: String::new(),
        recovery: "",
        job_id: String::new(),
        decision: "",
        solo: "",
        list: String::new(),
        used_label: "",
        page: String::new(),
        least_role: "",
        person: String::new(),
        request: String::new(),
        ask: "",
        poster: "",
        best_idem: "",
        best_window_ms: String::new(),
        ttl: String::new(),
        text: "",
        in_place: if t.in_place { "1" } else { "" },
    };
    match &t.action {
        TokenAction::Run(job) | TokenAction::Force(job) => {
            spec.action = match t.action {
                TokenAction::Force(_) => "force",
                _ => "run",
            };
            spec.command = job.command;
            spec.args = &job.args;
            spec.idem = &job.idem;
            spec.window_ms = job.window.as_millis().to_string();
            spec.recovery = job.recovery.as_str();
            spec.least_role = job.least_role.as_str();
        }
        TokenAction::Cancel => spec.action = "cancel",
        TokenAction::Review { job_id, decision } => {
            spec.least_role = Role::Admin.as_str();
            spec.action = "review";
            spec.job_id = job_id.to_string();
            spec.decision = decision.as_str();
        }
        TokenAction::Page { .. } | TokenAction::Show { .. } => read_only_spec(&mut spec, &t.action),
        TokenAction::Ask | TokenAction::Access { .. } => access_spec(&mut spec, &t.action),
        TokenAction::Decide { .. } | TokenAction::Withdraw { .. } => {
            request_spec(&mut spec, &t.action)
        }
    }
    if let Some(a) = &t.asking {
        asking_spec(&mut spec, a);
    }
    if let Some(listed) = &t.listed {
        spec.list = listed.list.to_string();
        spec.ttl = listed.ttl.as_secs().max(1).to_string();
    }
    if let Some(solo) = &t.solo {
        spec.solo = "1";
        spec.list = solo.list.map(|l| l.to_string()).unwrap_or_default();
        spec.used_label = &solo.used_label;
        spec.page = solo.page.map(|p| p.to_string()).unwrap_or_default();
    }
    spec
}

/// A read-only button's fields (tap.lua answers it without a group): a page of a stored list,
/// or a live card's Show.
fn read_only_spec<'a>(spec: &mut TokenSpec<'a>, action: &'a TokenAction) {
    match action {
        TokenAction::Page { list, page } => {
            spec.action = "page";
            spec.list = list.to_string();
            spec.page = page.to_string();
        }
        TokenAction::Show { card, text } => {
            spec.action = "show";
            spec.job_id = card.to_string();
            spec.text = text;
        }
        _ => {}
    }
}

/// A media request's button's fields (request.lua's, behind `r:` callback data): an admin's
/// decision on a card, or the requester's Withdraw.
fn request_spec(spec: &mut TokenSpec<'_>, action: &TokenAction) {
    match *action {
        TokenAction::Decide {
            person,
            decision,
            request,
        } => {
            spec.action = "decide";
            spec.least_role = Role::Admin.as_str();
            spec.person = person.to_string();
            spec.decision = decision;
            spec.request = request.map(|r| r.to_string()).unwrap_or_default();
        }
        TokenAction::Withdraw { request } => {
            spec.action = "withdraw";
            spec.request = request.map(|r| r.to_string()).unwrap_or_default();
        }
        _ => {}
    }
}

/// A requester's run button's request card (tap.lua makes the request from it).
fn asking_spec<'a>(spec: &mut TokenSpec<'a>, a: &'a Asking) {
    spec.ask = &a.what;
    spec.poster = a.poster.as_deref().unwrap_or("");
    if let Some((idem, window)) = &a.best {
        spec.best_idem = idem;
        spec.best_window_ms = window.as_millis().to_string();
    }
}

/// An access button's fields (access.lua's, behind `a:` callback data): an Ask, or an
/// admin's card naming whose request and the decision.
fn access_spec(spec: &mut TokenSpec<'_>, action: &TokenAction) {
    match *action {
        TokenAction::Access { person, decision } => {
            spec.action = "access";
            spec.least_role = Role::Admin.as_str();
            spec.person = person.to_string();
            spec.decision = decision;
        }
        _ => spec.action = "ask",
    }
}

/// The messages admin chats get when a job enters `needs_review`, with their buttons. Built
/// before every claim and every `needs_review` completion (tokens are cheap; only the script
/// knows whether the job is held), and used only if it is.
#[derive(Debug, Clone)]
pub(crate) struct ReviewNotices {
    /// Each `chat` or `chat/topic`: the card goes to the topic, its buttons are the chat's.
    pub admin_chats: Vec<ChatTarget>,
    pub ttl: Duration,
    /// The notice, with "{job}", "{command}", "{args}", "{attempts}" and "{error}" to fill.
    pub template: &'static str,
    /// The buttons' labels, in `Resolution::ALL`'s order.
    pub buttons: [&'static str; 3],
}

impl ReviewNotices {
    /// The notice for `job_id` as include/tokens.lua's `notify_review` reads it ("" when there
    /// is no admin chat).
    pub fn for_job(&self, job_id: u64) -> String {
        if self.admin_chats.is_empty() {
            return String::new();
        }
        let mut group = TokenGroup::new(self.ttl);
        let labels = self.buttons;
        let decisions = Resolution::ALL;
        let messages: Vec<_> = self
            .admin_chats
            .iter()
            .map(|&target| {
                let chat_id = target.chat;
                let row = labels
                    .iter()
                    .zip(decisions)
                    .map(|(label, decision)| {
                        let data = group.add(
                            Owner::Admins { chat_id },
                            label,
                            TokenAction::Review { job_id, decision },
                            None,
                        );
                        (label.to_string(), data)
                    })
                    .collect();
                let markup = Keyboard::new().row(row).to_json();
                json!({"chat_id": chat_id.to_string(), "thread_id": target.thread_arg(),
                       "markup": markup})
            })
            .collect();
        json!({
            "text": self.template,
            "group": group.spec(),
            "messages": messages,
        })
        .to_string()
    }
}

/// One tap on a button, as ingress read it.
#[derive(Debug, Clone)]
pub struct Tap {
    pub update_id: i64,
    pub callback_query_id: String,
    pub user_id: i64,
    /// The user is on `telegram.allowed_users`.
    pub allowed: bool,
    /// Their role (`users::Directory`; `Admin` for everyone while nobody is mapped).
    pub role: crate::vocabulary::Role,
    /// The MoviePilot user they act for (`None`: the service account): a job the tap makes
    /// acts for them.
    pub requester: Option<String>,
    /// Where the button's message is (`None`: Telegram did not say).
    pub chat_id: Option<i64>,
    pub message_id: Option<i64>,
    /// The forum topic the button's message is in (`ButtonMessage::topic`): the job, repeat
    /// answer or request the tap makes stays there.
    pub thread_id: Option<i64>,
    /// The token in the callback data (`None`: not one of oncebot's buttons).
    pub token: Option<String>,
    /// For a requester, the request their tap makes on a button they may not run (tap.lua's
    /// ARGV[20], built by ingress); `None` for anyone else.
    pub request: Option<String>,
    /// The tapper's weekly quota (tap.lua's ARGV[21]: `{"limit", "text"}`); `None`: unlimited.
    pub quota: Option<String>,
}

/// What tap.lua decided. Every variant but `DuplicateUpdate` put one answer on the callbacks
/// stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tapped {
    /// The button's job was created.
    New { job_id: u64 },
    /// The same command is inside its duplicate window as this job; no new job.
    DuplicateCommand { job_id: u64, state: JobState },
    /// Cancel: the buttons are used, nothing runs.
    Cancelled,
    /// A page button: the page was queued as an edit of the tapped message; no job.
    Page,
    /// A Show button: the card's text was queued as a new message; no job.
    Show,
    /// A review button settled the job; it is now `state`.
    Resolved { job_id: u64, state: JobState },
    /// A review button for a job that was settled meanwhile; nothing changed on it.
    Settled {
        job_id: u64,
        state: Option<JobState>,
    },
    /// The buttons were used before (a second tap, or a sibling).
    Used {
        job_id: Option<u64>,
        state: Option<JobState>,
    },
    /// No such button any more (expired), or never one.
    Expired,
    /// Someone else's button; it stays usable for its owner.
    Foreign,
    /// The tapper's role does not allow this button (a review button for a non-admin, a
    /// viewer's tap that would run a job); it stays usable.
    Forbidden,
    /// Not one of oncebot's buttons.
    Unknown,
    /// A button whose job is of a kind held back during an upgrade (docs/releases.md); it
    /// stays usable.
    Upgrading,
    /// Telegram delivered this update before; nothing was written.
    DuplicateUpdate {
        job_id: Option<u64>,
        state: Option<JobState>,
    },
    /// The tapper's weekly quota has no room for the button's job; it stays usable.
    Quota,
    /// A requester's tap made a request (`sent`), or found theirs pending (`same`), or none was
    /// made (`many`, `nobody`): include/requests.lua's outcome.
    Request {
        request: Option<u64>,
        outcome: String,
    },
}

impl Tapped {
    /// A short name for logs and metrics.
    pub fn outcome(&self) -> &'static str {
        match self {
            Tapped::New { .. } => "new",
            Tapped::DuplicateCommand { .. } => "duplicate_command",
            Tapped::Cancelled => "cancelled",
            Tapped::Page => "page",
            Tapped::Show => "show",
            Tapped::Resolved { .. } => "resolved",
            Tapped::Settled { .. } => "settled",
            Tapped::Used { .. } => "used",
            Tapped::Expired => "expired",
            Tapped::Foreign => "foreign",
            Tapped::Forbidden => "forbidden",
            Tapped::Unknown => "unknown",
            Tapped::Upgrading => "upgrading",
            Tapped::DuplicateUpdate { .. } => "duplicate_update",
            Tapped::Request { .. } => "request",
            Tapped::Quota => "quota",
        }
    }
}

/// Answers to taps on buttons, for tap.lua (with the labels and resolved replies
/// `tap_texts_json` adds).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct TapTexts {
    pub expired: &'static str,
    pub foreign: &'static str,
    pub unknown: &'static str,
    pub received: &'static str,
    pub duplicate: &'static str,
    pub already: &'static str,
    pub already_done: &'static str,
    pub cancelled: &'static str,
    pub resolved: &'static str,
    pub settled: &'static str,
    /// A tap the user's role does not allow.
    pub forbidden: &'static str,
    /// A button whose job is of a kind an older worker still alive would fail.
    pub upgrading: &'static str,
}

/// The texts tap.lua answers with, as the JSON it reads (ARGV[15]).
pub(crate) fn tap_texts_json(texts: &LedgerTexts) -> String {
    let labels: BTreeMap<&str, &str> = texts
        .state_labels
        .iter()
        .map(|(s, label)| (s.as_str(), *label))
        .collect();
    let resolved: BTreeMap<&str, &str> = texts
        .resolved
        .iter()
        .map(|(d, reply)| (d.as_str(), *reply))
        .collect();
    let mut doc = serde_json::to_value(texts.taps).unwrap_or_default();
    doc["labels"] = json!(labels);
    doc["resolved_reply"] = json!(resolved);
    doc.to_string()
}

impl Ledger {
    pub(super) fn tap_call(&self, tap: &Tap, held_kinds: &str) -> ScriptCall {
        let k = &self.keys;
        let (mode, token) = match &tap.token {
            Some(t) => ("token", t.as_str()),
            None => ("unknown", "-"),
        };
        let request = tap.request.as_deref().unwrap_or("");
        let quota = tap.quota.as_deref().unwrap_or("");
        let bytes = 512 + self.tap_texts.len() + request.len() + quota.len();
        let mut call = ScriptCall::new(&scripts::TAP, 18, 22, bytes);
        call.key("updates HASH", k.updates(tap.update_id))
            .key("token key", k.token(token))
            .key("token-group pfx", k.token_group_prefix())
            .key("command-key pfx", k.command_prefix())
            .key("job id sequence", k.job_seq())
            .key("job key prefix", k.job_prefix())
            .key("jobs stream", k.jobs_stream())
            .key("replies stream", k.replies_stream())
            .key("callbacks stream", k.callbacks_stream())
            .key("chat index", k.chat_jobs(tap.chat_id.unwrap_or(0)))
            .key("jobs index", k.jobs_index())
            .key("review index", k.review_index())
            .key("request prefix", k.request_prefix())
            .key("request sequence", k.request_seq())
            .key("pending requests", k.requests_pending())
            .key("person prefix", k.requests_of_prefix())
            .key("pointer prefix", k.requests_key_prefix())
            .key("quota prefix", k.quota_prefix())
            .arg("mode", mode)
            .arg("update_id", tap.update_id)
            .arg("update retention", self.update_retention_secs)
            .arg("callback_query_id", &tap.callback_query_id)
            .arg("id of the user who tapped", tap.user_id)
            .arg("id of the chat", OrEmpty(tap.chat_id))
            .arg("id of the button's message", OrEmpty(tap.message_id))
            .arg("\"1\" if the user", if tap.allowed { "1" } else { "0" })
            .arg("chat index length", self.chat_index_len)
            .arg("jobs index length", self.jobs_index_len)
            .arg("jobs consumer group", keys::Stream::Jobs.group())
            .arg("replies consumer group", keys::Stream::Replies.group())
            .arg("callbacks consumer group", keys::Stream::Callbacks.group())
            .arg("retention", self.job_retention_secs)
            .arg("texts", &self.tap_texts)
            .arg("role of the user who tapped", tap.role.as_str())
            .arg(
                "the MoviePilot user the tapper acts for",
                tap.requester.as_deref().unwrap_or(""),
            )
            .arg("every role", Role::ranked())
            .arg("job kinds a tap must not make now", held_kinds)
            .arg("a requester's request", request)
            .arg("the tapper's weekly quota", quota)
            .arg("the forum topic", OrEmpty(tap.thread_id));
        call
    }

    /// tap.lua for one callback query: dedupe, token checks, the action and the answer in one
    /// step.
    pub async fn tap(&self, tap: &Tap) -> Result<Tapped, LedgerError> {
        self.tap_holding(tap, "").await
    }

    /// [`Self::tap`], but a button whose job is of one of `held_kinds` (each between two `|`:
    /// kinds an older worker still alive would fail, docs/releases.md) makes no job: it is
    /// answered [`Tapped::Upgrading`] and stays usable.
    pub async fn tap_holding(&self, tap: &Tap, held_kinds: &str) -> Result<Tapped, LedgerError> {
        let call = self.tap_call(tap, held_kinds);
        // Durable, as an admission: the webhook answers 200 only once replicas have the tap.
        let (outcome, job, state): (String, String, String) =
            self.send_durable(&call, "recording a button tap").await?;
        let corrupt = |detail: String| LedgerError::Corrupt {
            doing: "recording a button tap",
            detail,
        };
        let job_id = || {
            job.parse::<u64>()
                .map_err(|_| corrupt(format!("job id {job:?}")))
        };
        let opt_job = || job.parse::<u64>().ok();
        let opt_state = || state.parse::<JobState>().ok();
        let job_state = || {
            state
                .parse::<JobState>()
                .map_err(|e| corrupt(format!("job {job}: {e}")))
        };
        Ok(match outcome.as_str() {
            "new" => Tapped::New { job_id: job_id()? },
            "duplicate_command" => Tapped::DuplicateCommand {
                job_id: job_id()?,
                state: job_state()?,
            },
            "cancelled" => Tapped::Cancelled,
            "page" => Tapped::Page,
            "show" => Tapped::Show,
            "resolved" => Tapped::Resolved {
                job_id: job_id()?,
                state: job_state()?,
            },
            "settled" => Tapped::Settled {
                job_id: job_id()?,
                state: opt_state(),
            },
            "used" => Tapped::Used {
                job_id: opt_job(),
                state: opt_state(),
            },
            "expired" => Tapped::Expired,
            "foreign" => Tapped::Foreign,
            "forbidden" => Tapped::Forbidden,
            "unknown" => Tapped::Unknown,
            "upgrading" => Tapped::Upgrading,
            "duplicate_update" => Tapped::DuplicateUpdate {
                job_id: opt_job(),
                state: opt_state(),
            },
            "quota" => Tapped::Quota,
            "request" => Tapped::Request {
                request: opt_job(),
                outcome: state.clone(),
            },
            other => return Err(corrupt(format!("tap outcome {other:?}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request button on a list names its request and its list, and lives as its request
    /// (its own `ttl`), while the page buttons beside it live as the group; a card's names
    /// neither (the script making the request sets it).
    #[test]
    fn a_listed_request_button_carries_its_request_list_and_own_ttl() {
        let mut group = TokenGroup::new(Duration::from_secs(600));
        let owner = Owner::Admins { chat_id: -5 };
        let decide = |request| TokenAction::Decide {
            person: 42,
            decision: "approve",
            request,
        };
        group.add(owner, "Approve", decide(None), None);
        group.add(owner, "Approve #7", decide(Some(7)), None);
        group.listed(Listed {
            list: 9,
            ttl: Duration::from_millis(86_400_500),
        });
        let spec: serde_json::Value = serde_json::from_str(&group.spec().to_string()).unwrap();
        assert_eq!(spec["ttl"], "600");
        let [card, listed] = [&spec["tokens"][0], &spec["tokens"][1]];
        assert_eq!(card["action"], "decide");
        assert!(card.get("request").is_none() && card.get("ttl").is_none());
        assert!(card.get("list").is_none());
        assert_eq!(listed["request"], "7");
        assert_eq!(listed["list"], "9");
        assert_eq!(listed["ttl"], "86400");
        assert_eq!(listed["person"], "42");
    }
}
