//! The operator page's HTML, pure: data in, markup out. maud escapes every value it is given,
//! so a job's args (typed by a Telegram user) can never become markup; nothing here sees a
//! setting, so no secret can be rendered. Labels are the ledger's own state names, in English.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use maud::{DOCTYPE, Markup, html};

use crate::admin::{FieldValue, job_fields};
use crate::ledger::{ConsumerInfo, Job, JobState, NotifyPosition, QueueStats, StateCounts};
use crate::vocabulary::Resolution;

/// The decisions a person may take on a `needs_review` job: form value and button label.
pub const DECISIONS: [(Resolution, &str); 3] = [
    (Resolution::Succeeded, "Mark succeeded"),
    (Resolution::Failed, "Mark failed"),
    (Resolution::Retry, "Retry"),
];

/// Job fields whose names say they could carry a credential. None of today's does (torrent
/// data with its site cookie lives in `releases:<job>`, which the page never reads), but a
/// field added later with such a name is hidden rather than shown.
const SECRET_WORDS: [&str; 6] = [
    "cookie", "password", "secret", "token", "torrent", "api_key",
];

/// What every page shows in its header, and whether it may offer actions.
pub struct Frame<'a> {
    pub user: &'a str,
    pub read_only: bool,
}

/// Everything the main page shows.
pub struct Dashboard<'a> {
    pub counts: &'a StateCounts,
    pub queues: &'a QueueStats,
    pub consumers: &'a [ConsumerInfo],
    /// The notification relay's position (`None`: it never polled).
    pub relay: Option<&'a NotifyPosition>,
    pub review: &'a [Job],
    pub recent: &'a [Job],
    /// Each allowed user's role, MoviePilot name and its source (`oncebot users`).
    pub users: &'a [crate::users::UserRow],
    /// Where MoviePilot's own mapping stands (`users_sync::describe`).
    pub users_note: &'a str,
    pub filter: &'a FilterForm,
    /// A filter value that could not be used, said plainly.
    pub filter_error: Option<&'a str>,
    /// The CSRF field of every action form.
    pub csrf: &'a str,
}

/// The filter form's fields as the operator typed them (shown back as typed).
#[derive(Debug, Default, Clone)]
pub struct FilterForm {
    pub state: String,
    pub chat: String,
    pub id: String,
}

fn page(frame: &Frame, title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · oncebot" }
                link rel="stylesheet" href="/admin/assets/admin.css";
                script src="/admin/assets/admin.js" defer {}
            }
            body {
                header {
                    a.brand href="/admin/" { "oncebot" }
                    span.who { "signed in as " (frame.user) }
                    @if frame.read_only {
                        span.badge.read-only title="ONCEBOT__ADMIN__READ_ONLY is set" { "read-only" }
                    }
                    span #refreshed .muted { "as of " (clock(now_ms())) " UTC" }
                }
                main { (body) }
            }
        }
    }
}

/// The main page: counts, the jobs waiting for a person, streams, consumers, recent jobs.
pub fn dashboard(frame: &Frame, d: &Dashboard) -> Markup {
    let body = html! {
        (counts_section(d.counts, d.queues))
        (review_section(frame, d.review, d.csrf))
        (streams_section(d.queues))
        (consumers_section(d.consumers))
        (relay_section(d.relay))
        (users_section(d.users, d.users_note))
        (recent_section(d))
    };
    page(frame, "operator", body)
}

/// How many jobs are in each state, and the ledger's totals of those waiting.
fn counts_section(counts: &StateCounts, queues: &QueueStats) -> Markup {
    html! {
        section #counts data-refresh="counts" {
            h2 { "Jobs by state" }
            p.muted { "The " (counts.counted) " most recent jobs of the ledger's index." }
            table.counts {
                tr { @for (state, _) in &counts.by_state { th { (state) } } }
                tr {
                    @for (state, n) in &counts.by_state {
                        td data-state=(state) class=(state_class(state, *n)) { (n) }
                    }
                }
            }
            p {
                "In the whole ledger: "
                strong #needs-review-total { (queues.needs_review) } " needs_review, "
                strong { (queues.retry_scheduled) } " retry_wait (scheduled)."
            }
        }
    }
}

/// The jobs waiting for a person, each with its decisions unless the page is read-only.
fn review_section(frame: &Frame, review: &[Job], csrf: &str) -> Markup {
    html! {
        section #review data-refresh="review" {
            h2 { "needs_review: waiting for a person (" (review.len()) ")" }
            @if review.is_empty() {
                p.muted { "No job is waiting for a person." }
            }
            @for job in review {
                article.review data-job=(job.id) {
                    h3 {
                        a href={ "/admin/jobs/" (job.id) } { "job " (job.id) }
                        " · " code { (job.command) } " " (job.args)
                    }
                    dl {
                        dt { "chat / user" } dd { (job.chat_id) " / " (job.user_id) }
                        dt { "for" } dd { (requester_of(job)) }
                        dt { "attempts" } dd { (job.attempts) }
                        dt { "since" } dd { (when(job.updated_at)) }
                        dt { "what happened" } dd.said { (what_was_said(job)) }
                    }
                    @if !frame.read_only { (resolve_form(job.id, csrf)) }
                }
            }
        }
    }
}

/// Each stream's length and what is pending in it.
fn streams_section(queues: &QueueStats) -> Markup {
    html! {
        section #streams data-refresh="streams" {
            h2 { "Streams" }
            table {
                tr { th { "stream" } th { "length" } th { "pending" } th { "oldest pending" } }
                @for s in &queues.streams {
                    tr data-stream=(s.name) {
                        td { (s.name) } td { (s.length) } td { (s.pending) }
                        td { @if s.pending == 0 { "-" } @else { (age(s.oldest_pending)) } }
                    }
                }
            }
        }
    }
}

/// The workers and dispatchers that read a stream, and whether they live.
fn consumers_section(consumers: &[ConsumerInfo]) -> Markup {
    html! {
        section #consumers data-refresh="consumers" {
            h2 { "Consumers" }
            @if consumers.is_empty() {
                p.muted { "No worker or dispatcher has read a stream yet." }
            } @else {
                table {
                    tr { th { "group" } th { "stream" } th { "consumer" } th { "pending" } th { "idle" } th { "liveness" } }
                    @for c in consumers {
                        tr data-consumer=(c.name) {
                            td { (c.group) } td { (c.stream) } td { code { (c.name) } }
                            td { (c.pending) }
                            td { @match c.idle { Some(idle) => (age(idle)), None => "-" } }
                            td class=(if c.alive { "alive" } else { "dead" }) {
                                @if c.alive { "alive" } @else { "dead" }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Where the notification relay stands.
fn relay_section(relay: Option<&NotifyPosition>) -> Markup {
    html! {
        section #relay data-refresh="relay" {
            h2 { "MoviePilot notifications (relay)" }
            @match relay {
                None => p.muted { "The relay has not polled MoviePilot yet (notify.enabled)." },
                Some(r) => dl {
                    dt { "position" }
                    dd #relay-position {
                        @if r.reg_time.is_empty() { "before the first row" }
                        @else { "history row " (r.id) " of " (r.reg_time) }
                    }
                    dt { "last poll" } dd #relay-polled { (when(r.polled_at.unwrap_or(0))) }
                    dt { "lag" }
                    dd #relay-lag {
                        @match r.polled_at {
                            Some(at) => (age(Duration::from_millis(now_ms().saturating_sub(at)))),
                            None => "-",
                        }
                    }
                    dt { "forwarded / collapsed / unrouted / skipped" }
                    dd #relay-totals {
                        (r.forwarded) " / " (r.collapsed) " / " (r.unrouted) " / " (r.skipped)
                    }
                },
            }
        }
    }
}

/// Each allowed user's role, MoviePilot name and the MoviePilot permissions read for them, and
/// where MoviePilot's mapping stands.
fn users_section(users: &[crate::users::UserRow], note: &str) -> Markup {
    html! {
        section #users {
            h2 { "Users" }
            table {
                thead { tr { th { "Telegram id" } th { "role" } th { "MoviePilot name" } th { "source" } th { "grant" } th { "MoviePilot permissions" } } }
                tbody {
                    @for u in users {
                        tr {
                            td { (u.user_id) }
                            td { (u.role) }
                            td { (u.requester.as_deref().unwrap_or("-")) }
                            td { (u.source) }
                            td { (grant_cell(u.grant.as_ref())) }
                            td.permissions { (u.moviepilot_permissions.map_or_else(|| "-".to_string(), |p| p.summary())) }
                        }
                    }
                }
            }
            p #users-moviepilot { (note) }
        }
    }
}

/// A grant as the users table shows it: its role, who gave it and when (UTC); "-" for none.
fn grant_cell(grant: Option<&crate::users::Grant>) -> String {
    grant.map_or_else(
        || "-".to_string(),
        |g| format!("{} by {} at {}", g.role, g.by, clock(g.at)),
    )
}

/// The recent jobs, with the filter form.
fn recent_section(d: &Dashboard) -> Markup {
    html! {
        section #recent {
            h2 { "Recent jobs" }
            form.filter method="get" action="/admin/" {
                label { "state "
                    select name="state" {
                        option value="" selected[d.filter.state.is_empty()] { "any" }
                        @for s in JobState::ALL {
                            option value=(s.as_str()) selected[d.filter.state == s.as_str()] { (s.as_str()) }
                        }
                    }
                }
                label { "chat " input type="text" name="chat" value=(d.filter.chat) size="16" inputmode="numeric"; }
                label { "id " input type="text" name="id" value=(d.filter.id) size="8" inputmode="numeric"; }
                button type="submit" { "Filter" }
                " " a href="/admin/" { "clear" }
            }
            @if let Some(e) = d.filter_error { p.error role="alert" { (e) } }
            (jobs_table(d.recent))
        }
    }
}

fn jobs_table(jobs: &[Job]) -> Markup {
    html! {
        @if jobs.is_empty() {
            p.muted { "No job matches." }
        } @else {
            table.jobs {
                tr { th { "id" } th { "status" } th { "command" } th { "args" } th { "chat" } th { "attempts" } th { "created (UTC)" } }
                @for j in jobs {
                    tr data-job=(j.id) {
                        td { a href={ "/admin/jobs/" (j.id) } { (j.id) } }
                        td.status class=(j.status) { (j.status) }
                        td { code { (j.command) } }
                        td.args { (j.args) }
                        td { (j.chat_id) }
                        td { (j.attempts) }
                        td { (when(j.created_at)) }
                    }
                }
            }
        }
    }
}

/// The three decisions on one job, one plain POST form: it works without JavaScript.
fn resolve_form(id: u64, csrf: &str) -> Markup {
    html! {
        form.resolve method="post" action={ "/admin/jobs/" (id) "/resolve" } {
            input type="hidden" name="csrf" value=(csrf);
            label { "note " input type="text" name="note" maxlength="200" size="28" placeholder="why (kept in the job)"; }
            @for (value, label) in DECISIONS {
                button type="submit" name="decision" value=(value.as_str()) class=(value.as_str()) { (label) }
            }
        }
    }
}

/// One job: every field, its timeline, and the decision buttons while it waits for a person.
pub fn job_page(frame: &Frame, job: &Job, csrf: &str, resolved: Option<&str>) -> Markup {
    let body = html! {
        p { a href="/admin/" { "← all jobs" } }
        h2 { "job " (job.id) " · " span.status class=(job.status) { (job.status) } }
        @if let Some(decision) = resolved {
            p.notice role="status" { "Resolved as " (decision) "; the user was told." }
        }
        @if job.status == JobState::NeedsReview {
            section.review data-job=(job.id) {
                p { "This job waits for a person: " (what_was_said(job)) }
                @if !frame.read_only { (resolve_form(job.id, csrf)) }
            }
        }
        section {
            h3 { "Fields" }
            table.fields {
                @for (name, value) in fields(job) {
                    tr { th { (name) } td { (value) } }
                }
            }
        }
        section {
            h3 { "Timeline" }
            ol.timeline {
                @for (at, name) in timeline(job) {
                    li { time { (clock(at)) } " " (name) }
                }
            }
        }
    };
    page(frame, &format!("job {}", job.id), body)
}

/// A page that says one thing (an error, a refusal), with the way back.
pub fn message(frame: &Frame, title: &str, text: &str) -> Markup {
    let body = html! {
        h2 { (title) }
        p.message role="alert" { (text) }
        p { a href="/admin/" { "back to the operator page" } }
    };
    page(frame, title, body)
}

/// Who a job acts for, as a person reads it: the MoviePilot user and the asker's role.
fn requester_of(job: &Job) -> String {
    match &job.requester {
        Some(name) => format!("{name} ({})", job.role),
        None => format!("the service account ({})", job.role),
    }
}

/// The job's own account of its outcome: its error, the last attempt's error, or its result.
fn what_was_said(job: &Job) -> String {
    let last = job
        .extra
        .get("last_attempt_error")
        .filter(|v| !v.is_empty());
    match (&job.error, last, &job.result) {
        (Some(e), _, _) => e.clone(),
        (None, Some(e), _) => e.clone(),
        (None, None, Some(r)) => r.clone(),
        _ => "nothing recorded".into(),
    }
}

/// Every field, in `oncebot jobs show`'s order (`admin::job_fields`): times readable with
/// their number, secret-looking stored fields hidden.
fn fields(job: &Job) -> Vec<(&str, String)> {
    job_fields(job)
        .into_iter()
        .map(|(name, value)| {
            let shown = match value {
                FieldValue::Text(v) => v.into_owned(),
                FieldValue::Missing => "-".into(),
                FieldValue::Time(ms) => stamp(ms),
                FieldValue::Stored(_) if looks_secret(name) => "[hidden]".into(),
                FieldValue::Stored(v) => epoch_ms(name, v).map_or_else(|| v.to_string(), stamp),
            };
            (name, shown)
        })
        .collect()
}

fn looks_secret(field: &str) -> bool {
    let f = field.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| f.contains(w))
}

/// The job's moments, oldest first: every `*_at` / `*_ms` field holding a time.
fn timeline(job: &Job) -> Vec<(u64, String)> {
    let mut out = vec![
        (job.created_at, "created_at: admitted".to_string()),
        (
            job.updated_at,
            format!("updated_at: the last change, to {}", job.status),
        ),
    ];
    for (k, v) in &job.extra {
        if let Some(ms) = epoch_ms(k, v) {
            out.push((ms, k.clone()));
        }
    }
    out.retain(|(ms, _)| *ms > 0);
    out.sort();
    out
}

/// A field's value as a moment, when its name and size say it is one (milliseconds since the
/// epoch, between 2001 and 2286); a duration such as `window_ms` is too small to pass.
fn epoch_ms(name: &str, value: &str) -> Option<u64> {
    if !(name.ends_with("_at") || name.ends_with("_ms")) {
        return None;
    }
    value
        .parse::<u64>()
        .ok()
        .filter(|ms| (1_000_000_000_000..10_000_000_000_000).contains(ms))
}

fn state_class(state: &str, n: u64) -> String {
    if n == 0 {
        format!("{state} zero")
    } else {
        state.to_string()
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

/// `2026-01-01 12:00:00 (3m ago)`.
fn when(ms: u64) -> String {
    if ms == 0 {
        return "-".into();
    }
    let ago = Duration::from_millis(now_ms().saturating_sub(ms));
    format!("{} ({} ago)", clock(ms), age(ago))
}

fn stamp(ms: u64) -> String {
    if ms == 0 {
        "-".into()
    } else {
        format!("{} ({ms})", clock(ms))
    }
}

fn clock(ms: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms))
        .to_string()
        .replace('T', " ")
        .trim_end_matches('Z')
        .to_string()
}

/// A short age: `4s`, `3m 20s`, `2h 5m`, `3d 4h`.
fn age(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {}s", s / 60, s % 60),
        3600..86400 => format!("{}h {}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d {}h", s / 86400, (s % 86400) / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(args: &str) -> Job {
        Job {
            id: 7,
            status: JobState::NeedsReview,
            command: "searchnow".into(),
            args: args.into(),
            chat_id: 1,
            user_id: 1,
            update_id: 1,
            idempotency_key: "k".into(),
            attempts: 2,
            created_at: 1_767_225_600_000,
            updated_at: 1_767_225_660_000,
            result: None,
            error: None,
            duplicates: 0,
            requester: Some("alice".into()),
            role: crate::vocabulary::Role::User,
            extra: [
                (
                    "started_at".to_string(),
                    "1_767_225_630_000".replace('_', ""),
                ),
                ("window_ms".to_string(), "300000".to_string()),
                ("site_cookie".to_string(), "uid=1; pass=SECRET".to_string()),
            ]
            .into_iter()
            .collect(),
        }
    }

    #[test]
    fn a_jobs_fields_are_escaped_and_secret_looking_fields_hidden() {
        let frame = Frame {
            user: "admin",
            read_only: false,
        };
        let html = job_page(&frame, &job("<script>alert(1)</script>"), "c", None).into_string();
        assert!(!html.contains("<script>alert(1)"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!html.contains("pass=SECRET"));
        assert!(html.contains("[hidden]"));
        for (_, label) in DECISIONS {
            assert!(html.contains(label), "{label}");
        }
    }

    #[test]
    fn read_only_pages_offer_no_action() {
        let frame = Frame {
            user: "admin",
            read_only: true,
        };
        let html = job_page(&frame, &job("x"), "c", None).into_string();
        assert!(!html.contains("<form"), "{html}");
        assert!(html.contains("read-only"));
    }

    #[test]
    fn the_timeline_holds_moments_in_order_and_no_durations() {
        let t = timeline(&job("x"));
        let names: Vec<&str> = t.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "created_at: admitted",
                "started_at",
                "updated_at: the last change, to needs_review"
            ]
        );
    }

    #[test]
    fn ages_read_shortly() {
        assert_eq!(age(Duration::from_secs(4)), "4s");
        assert_eq!(age(Duration::from_secs(200)), "3m 20s");
        assert_eq!(age(Duration::from_secs(7500)), "2h 5m");
        assert_eq!(age(Duration::from_secs(3 * 86400 + 4 * 3600)), "3d 4h");
    }
}
