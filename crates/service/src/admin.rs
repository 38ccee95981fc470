//! `oncebot jobs ...`: read the ledger with nothing but Redis (Telegram and MoviePilot may be
//! down). Tables for people, `--json` for scripts; the output goes to stdout only.

use std::borrow::Cow;
use std::io::Write;
use std::time::{Duration, UNIX_EPOCH};

use crate::config::Settings;
use crate::i18n::Render;
use crate::ledger::{
    GrantChange, GrantChanged, Job, JobFilter, Ledger, Resolution, Resolved, StoredDirectory,
};
use crate::vocabulary::Role;
use crate::vocabulary::job_field as field;

/// Prints jobs as a table, or as one JSON array.
pub async fn list(ledger: &Ledger, filter: &JobFilter, json: bool) -> anyhow::Result<()> {
    let jobs = ledger.list_jobs(filter).await?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &jobs)?;
        writeln!(out)?;
        return Ok(());
    }
    if jobs.is_empty() {
        writeln!(out, "no jobs")?;
        return Ok(());
    }
    writeln!(
        out,
        "{:>6}  {:<12}  {:<13}  {:<24}  {:>14}  {:>8}  {:<20}",
        "ID", "STATUS", "COMMAND", "ARGS", "CHAT", "ATTEMPTS", "CREATED (UTC)"
    )?;
    for j in &jobs {
        writeln!(
            out,
            "{:>6}  {:<12}  {:<13}  {:<24}  {:>14}  {:>8}  {:<20}",
            j.id,
            j.status,
            j.command,
            truncate(&j.args, 24),
            j.chat_id,
            j.attempts,
            timestamp(j.created_at)
        )?;
    }
    Ok(())
}

/// `oncebot users`: every allowed user (the granted too) with their role, MoviePilot name and
/// its source (`setting`, `moviepilot`, `granted`, `unmapped`, `nobody_mapped`), the MoviePilot
/// permissions MoviePilot's mapping read for them (`moviepilot_permissions`), the grants and
/// MoviePilot's side read from Redis (`users:granted`; `users:moviepilot` unless
/// `moviepilot.users_refresh_secs` is 0). A bad `telegram.users` is the `SettingError` (exit
/// status 2). Redis not answering: the setting's view is still printed, with the reason on
/// stderr, and the command fails (exit status 1), since users granted or mapped by MoviePilot
/// may be missing from it.
pub async fn users(settings: &Settings, json: bool) -> anyhow::Result<()> {
    let base = settings.directory()?;
    let moviepilot = settings.moviepilot.users_refresh().is_some();
    let read = match ledger_of(settings) {
        Ok(ledger) => ledger
            .stored_directory(moviepilot)
            .await
            .map_err(anyhow::Error::from),
        Err(e) => Err(e),
    };
    let (stored, unread) = match read {
        Ok(stored) => (stored, None),
        Err(e) => (StoredDirectory::default(), Some(e)),
    };
    let directory = crate::users_sync::directory_of(&base, &stored);
    let rows = directory.rows();
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else {
        write_user_rows(&mut out, &rows)?;
        if unread.is_none() {
            let note = crate::users_sync::describe(stored.moviepilot.as_ref(), &directory);
            writeln!(out, "{note}")?;
        }
    }
    drop(out);
    if let Some(e) = unread {
        return Err(e.context(
            "the grants and MoviePilot's user mapping could not be read from Redis, so the list \
             above is the settings alone (users granted are missing, users MoviePilot maps are \
             shown as unmapped)",
        ));
    }
    Ok(())
}

fn ledger_of(settings: &Settings) -> anyhow::Result<Ledger> {
    Ledger::connect(
        settings,
        crate::i18n::Texts::new(settings.telegram.locale).for_ledger(),
    )
}

fn write_user_rows(out: &mut impl Write, rows: &[crate::users::UserRow]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:>14}  {:<9}  {:<20}  {:<14}  {:<10}  MOVIEPILOT PERMISSIONS",
        "TELEGRAM ID", "ROLE", "MOVIEPILOT NAME", "SOURCE", "GRANTED BY"
    )?;
    for r in rows {
        let by = r.grant.as_ref().map_or("-", |g| g.by.as_str());
        writeln!(
            out,
            "{:>14}  {:<9}  {:<20}  {:<14}  {by:<10}  {}",
            r.user_id,
            r.role,
            r.requester.as_deref().unwrap_or("-"),
            r.source,
            r.moviepilot_permissions
                .map_or_else(|| "-".to_string(), |p| p.summary())
        )?;
    }
    Ok(())
}

/// `oncebot users grant <telegram id> <role>` (`role` set) and `oncebot users revoke <telegram
/// id>` (`None`): the same records the chat writes (grants.lua), by `cli`. A revoke of an id
/// without a grant changes nothing and says so (exit status 0: the id has no grant, as asked).
/// `telegram.allowed_users` is a floor: a revoke never removes anyone from it.
pub async fn change_grant(
    settings: &Settings,
    user_id: i64,
    role: Option<Role>,
    json: bool,
) -> anyhow::Result<()> {
    let ledger = ledger_of(settings)?;
    let change = match role {
        Some(role) => GrantChange::Grant {
            user_id,
            role,
            by: crate::users::GRANTED_BY_CLI.into(),
        },
        None => GrantChange::Revoke { user_id },
    };
    let changed = ledger.change_grant(&change).await?;
    let base = settings.directory()?;
    let moviepilot = settings.moviepilot.users_refresh().is_some();
    let now = crate::users_sync::read_directory(&ledger, &base, moviepilot).await?;
    let row = now.rows().into_iter().find(|r| r.user_id == user_id);
    let (outcome, previous) = match &changed {
        GrantChanged::Granted { previous } => ("granted", previous),
        GrantChanged::Revoked { previous } => ("revoked", previous),
        GrantChanged::NoGrant => ("no_grant", &None),
    };
    let mut out = std::io::stdout().lock();
    if json {
        let body = serde_json::json!({
            "user_id": user_id,
            "outcome": outcome,
            "previous": previous,
            "now": row,
        });
        serde_json::to_writer_pretty(&mut out, &body)?;
        writeln!(out)?;
        return Ok(());
    }
    let now = match &row {
        Some(r) => format!("now {} ({})", r.role, r.source),
        None => "now not allowed".to_string(),
    };
    let what = match changed {
        GrantChanged::Granted { .. } => format!("{user_id}: granted, {now}"),
        GrantChanged::Revoked { .. } => format!("{user_id}: grant revoked, {now}"),
        GrantChanged::NoGrant => format!("{user_id}: had no grant, nothing changed; {now}"),
    };
    writeln!(out, "{what}")?;
    if row.as_ref().is_some_and(|r| r.source != "granted") && role.is_some() {
        writeln!(
            out,
            "(the role comes from {} while that maps this id; the grant counts once it does not)",
            row.as_ref().map_or("", |r| r.source)
        )?;
    }
    Ok(())
}

/// Prints one job; an unknown id is an error (exit status 1).
pub async fn show(ledger: &Ledger, id: u64, json: bool) -> anyhow::Result<()> {
    let Some(job) = ledger.job(id).await? else {
        anyhow::bail!("job {id} not found (it never existed, or its retention expired)");
    };
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &job)?;
        writeln!(out)?;
        return Ok(());
    }
    print_job(&mut out, &job)?;
    Ok(())
}

/// Settles a `needs_review` job; refused (exit status 1) for a job in any other state.
pub async fn resolve(
    ledger: &Ledger,
    settings: &Settings,
    id: u64,
    decision: Resolution,
    note: &str,
    json: bool,
) -> anyhow::Result<()> {
    let reply = Render::new(settings.telegram.locale).resolved(decision);
    let retention = Duration::from_secs(settings.worker.job_retention_secs);
    match ledger
        .resolve(id, decision, note, &reply, retention)
        .await?
    {
        Resolved::Settled(status) => {
            let mut out = std::io::stdout().lock();
            if json {
                let doc = serde_json::json!({"id": id, "status": status, "resolved_as": decision.as_str()});
                writeln!(out, "{doc}")?;
            } else {
                writeln!(out, "job {id} is now {status}")?;
            }
            Ok(())
        }
        Resolved::Missing => anyhow::bail!("job {id} not found"),
        Resolved::NotWaiting(status) => anyhow::bail!(
            "job {id} is {status}, not needs_review: only jobs waiting for a person can be resolved"
        ),
    }
}

/// One of a job's values, as its renderers need it (each shows times and stored fields its way).
pub(crate) enum FieldValue<'a> {
    Text(Cow<'a, str>),
    /// Not set: shown as `-` (a job without `requester` acts as the service account).
    Missing,
    /// Milliseconds since the Unix epoch; 0: never.
    Time(u64),
    /// A field of the HASH the `Job` type does not name, as stored.
    Stored(&'a str),
}

/// Every field of a job, named as in its HASH (redis-cli HGETALL), in the order both
/// `oncebot jobs show` and the operator page's job view list them.
pub(crate) fn job_fields(j: &Job) -> Vec<(&str, FieldValue<'_>)> {
    use FieldValue::{Stored, Text, Time};
    let mut rows = vec![
        (field::ID, Text(j.id.to_string().into())),
        (field::STATUS, Text(j.status.as_str().into())),
        (field::COMMAND, Text(j.command.as_str().into())),
        (field::ARGS, Text(j.args.as_str().into())),
        (field::CHAT_ID, Text(j.chat_id.to_string().into())),
        (field::USER_ID, Text(j.user_id.to_string().into())),
        (field::REQUESTER, optional(&j.requester)),
        (field::ROLE, Text(j.role.as_str().into())),
        (field::UPDATE_ID, Text(j.update_id.to_string().into())),
        (
            field::IDEMPOTENCY_KEY,
            Text(j.idempotency_key.as_str().into()),
        ),
        (field::ATTEMPTS, Text(j.attempts.to_string().into())),
        (field::DUPLICATES, Text(j.duplicates.to_string().into())),
        (field::CREATED_AT, Time(j.created_at)),
        (field::UPDATED_AT, Time(j.updated_at)),
        (field::RESULT, optional(&j.result)),
        (field::ERROR, optional(&j.error)),
    ];
    rows.extend(j.extra.iter().map(|(k, v)| (k.as_str(), Stored(v))));
    rows
}

fn optional(v: &Option<String>) -> FieldValue<'_> {
    v.as_deref()
        .map_or(FieldValue::Missing, |v| FieldValue::Text(v.into()))
}

fn print_job(out: &mut impl Write, j: &Job) -> std::io::Result<()> {
    for (name, value) in job_fields(j) {
        let value = match value {
            FieldValue::Text(v) => v,
            FieldValue::Missing => Cow::Borrowed("-"),
            FieldValue::Time(ms) => Cow::Owned(timestamp(ms)),
            FieldValue::Stored(v) => Cow::Borrowed(v),
        };
        writeln!(out, "{name:<16} {value}")?;
    }
    Ok(())
}

fn timestamp(ms: u64) -> String {
    if ms == 0 {
        return "-".into();
    }
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max - 1).collect();
    t.push('…');
    t
}

fn bot_api(settings: &Settings) -> anyhow::Result<crate::telegram::api::BotApi> {
    crate::telegram::api::BotApi::new(&settings.telegram.api_url, &settings.telegram.token)
}

const BOT_API_TIMEOUT: Duration = Duration::from_secs(15);

/// setWebhook with the configured URL and secret, then prints getWebhookInfo.
pub async fn webhook_set(
    settings: &Settings,
    max_connections: u8,
    drop_pending_updates: bool,
) -> anyhow::Result<()> {
    let url = &settings.telegram.webhook_url;
    if !url.starts_with("https://") {
        anyhow::bail!(
            "telegram.webhook_url is {url:?}: set ONCEBOT__TELEGRAM__WEBHOOK_URL to the public \
             https:// URL of /telegram/webhook (Telegram calls only HTTPS on ports 443, 80, 88, 8443)"
        );
    }
    let body = serde_json::json!({
        "url": url,
        "secret_token": settings.telegram.webhook_secret.expose(),
        "allowed_updates": ["message", "callback_query"],
        "max_connections": max_connections,
        "drop_pending_updates": drop_pending_updates,
    });
    let _: bool = bot_api(settings)?
        .call("setWebhook", &body, BOT_API_TIMEOUT)
        .await
        .map_err(|e| anyhow::anyhow!("setWebhook failed: {e}"))?;
    eprintln!("webhook set to {url}");
    webhook_info(settings).await
}

/// Prints getWebhookInfo as JSON.
pub async fn webhook_info(settings: &Settings) -> anyhow::Result<()> {
    let info: serde_json::Value = bot_api(settings)?
        .call("getWebhookInfo", &serde_json::json!({}), BOT_API_TIMEOUT)
        .await
        .map_err(|e| anyhow::anyhow!("getWebhookInfo failed: {e}"))?;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &info)?;
    writeln!(out)?;
    Ok(())
}

/// deleteWebhook, then prints getWebhookInfo.
pub async fn webhook_delete(settings: &Settings, drop_pending_updates: bool) -> anyhow::Result<()> {
    let body = serde_json::json!({ "drop_pending_updates": drop_pending_updates });
    let _: bool = bot_api(settings)?
        .call("deleteWebhook", &body, BOT_API_TIMEOUT)
        .await
        .map_err(|e| anyhow::anyhow!("deleteWebhook failed: {e}"))?;
    eprintln!("webhook deleted; `oncebot serve --poll` can take updates now");
    webhook_info(settings).await
}
