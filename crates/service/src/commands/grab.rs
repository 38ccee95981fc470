//! A `下载 k` button's job: one release of a stored list downloaded once, verified before it is
//! ever sent again.
//!
//! A download's verification, in one place (`moviepilot-download-flow.md` §3, §7):
//! - MoviePilot has no idempotency and no lookup by hash, so before the add the attempt notes
//!   in the job (note.lua, under its fence) the release (site, title, subtitle), the ids of the
//!   matching manual rows of the download history that exist already, and when it began.
//! - Whoever runs the job after that (a crash, an uncertain answer) first reads the whole
//!   history for a matching row that is not one of those ids; a magnet's hash is also looked
//!   for among the active downloads. Found: `succeeded`, `mp_outcome = verified_existing`.
//! - Not found: it waits until `moviepilot.download_settle_secs` after that attempt began (a
//!   request whose caller died still runs to its end at MoviePilot), looks again, and only then
//!   sends the add again. What cannot be decided (the list expired, a magnet refused after an
//!   earlier send, too many sends) goes to `needs_review`.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use super::Spec;
use super::args::parse_release;
use crate::asked::AskedMedia;
use crate::i18n;
use crate::ledger::{Job, StoredList};
use crate::moviepilot::{MpError, Release, ReleaseIdentity};
use crate::vocabulary::MpOutcome;
use crate::worker::context::{
    Context, Done, Followed, Settle, ask_before_call, ledger_error, refused,
};

/// A `下载 k` button's job (`<list> <k>`): never typed.
pub(super) const GRAB: Spec = Spec {
    name: "grab",
    about: &i18n::GRAB,
    check: None,
    run: Some(|cx, job, _| {
        Box::pin(async move {
            let (list, index) = parse_release(&job.args).ok_or_else(|| super::not_runnable(job))?;
            grab(cx, job, list, index).await
        })
    }),
    house: None,
};

/// What a download's business key digests instead of its arguments: the release (site,
/// title, subtitle), so it is one job whichever list or button it came from (the ⚡ Auto job's
/// download takes the same key, `worker::auto`).
pub(super) fn grab_key_args(id: &ReleaseIdentity) -> String {
    format!("{}\n{}\n{}", id.site, id.title, id.description)
}

/// Sends of one download after which a still-unverified add is held for a person.
const MAX_SENDS: u64 = 3;

/// What an earlier attempt of this download noted before its add.
#[derive(Debug, Default)]
struct Noted {
    identity: Option<ReleaseIdentity>,
    before: BTreeSet<u64>,
    began_ms: Option<u64>,
    magnet: Option<String>,
    sends: u64,
}

impl Noted {
    /// What the job's earlier attempts noted (the claim hands over only the fields a worker
    /// always needs; the notes are read here).
    async fn of(cx: &Context<'_>, job: &Job) -> Result<Noted, MpError> {
        let full = cx.ledger.job(job.id).await.map_err(ledger_error)?;
        Ok(Noted::read(full.as_ref().unwrap_or(job)))
    }

    fn read(job: &Job) -> Noted {
        let field = |name: &str| job.extra.get(name).cloned().unwrap_or_default();
        let identity = job
            .extra
            .contains_key("grab_site")
            .then(|| ReleaseIdentity {
                site: field("grab_site"),
                title: field("grab_title"),
                description: field("grab_description"),
            });
        Noted {
            identity,
            before: field("grab_before")
                .split(',')
                .filter_map(|id| id.trim().parse().ok())
                .collect(),
            began_ms: field("grab_began_ms").parse().ok(),
            magnet: Some(field("grab_magnet")).filter(|m| !m.is_empty()),
            sends: field("grab_sends").parse().unwrap_or(0),
        }
    }
}

/// The release `下载 1` of list `list` downloads, as the ⚡ Auto job names it for its business
/// key: from the stored list, or (after it expired) from what an earlier attempt of `job`
/// noted before its add; `None` when neither has it.
pub(super) async fn best_identity(
    cx: &Context<'_>,
    job: &Job,
    list: u64,
) -> Result<Option<ReleaseIdentity>, MpError> {
    let stored = cx.ledger.releases(list).await.map_err(ledger_error)?;
    let release = stored
        .and_then(|l| l.releases.into_iter().next())
        .and_then(Release::from_torrent_info);
    match release {
        Some(release) => Ok(Some(release.identity())),
        None => Ok(Noted::of(cx, job).await?.identity),
    }
}

/// Downloads release `index` of list `list`, once (see the module's doc): an earlier attempt's
/// add is looked for first, then the intent is noted, then the add is sent.
pub(super) async fn grab(
    cx: &Context<'_>,
    job: &Job,
    list: u64,
    index: usize,
) -> Result<Done, MpError> {
    let r = &cx.render;
    let noted = Noted::of(cx, job).await?;
    let Picked {
        stored,
        release,
        identity,
        magnet,
        asked,
    } = picked(cx, &noted, list, index).await?;
    let started = |hash: &str, outcome: MpOutcome| started(cx, (&identity, &asked), hash, outcome);
    let undecided =
        |error: String| hold(r.download_undecided(&identity.title, &identity.site), error);

    if let Some(began) = noted.began_ms {
        // An earlier attempt may have sent the add: look before anything is sent again.
        if let Some(hash) = look_again(cx, &identity, &noted, magnet.as_deref(), began).await? {
            return Ok(started(&hash, MpOutcome::VerifiedExisting));
        }
        if noted.sends >= MAX_SENDS {
            return Ok(undecided(format!(
                "sent {} times and never seen in MoviePilot's download history",
                noted.sends
            )));
        }
        tracing::warn!("download not in MoviePilot's history after settling; sending it again");
    }

    let (Some(stored), Some(release)) = (stored, release) else {
        if noted.began_ms.is_some() {
            return Ok(undecided(
                "the release list expired before the download could be verified or sent again"
                    .into(),
            ));
        }
        return Err(MpError::Permanent(r.release_list_expired()));
    };
    let sends = noted.sends + 1;
    note_intent(cx, &identity, magnet.as_deref(), sends).await?;
    ask_before_call(cx, job, asked.as_ref()).await;
    crate::crash_point!("worker.before_download");
    let downloader = release.site_downloader.as_deref();
    match cx
        .mp
        .add_download(&stored.media_info, &release.torrent_info.0, downloader)
        .await
    {
        Ok(hash) => Ok(started(&hash, MpOutcome::Added)),
        // qBittorrent refuses a magnet it already has: after an earlier send that may have
        // reached it, a refusal says nothing.
        Err(MpError::Permanent(reason)) if magnet.is_some() && sends > 1 => Ok(undecided(format!(
            "a magnet sent again was refused ({reason}); the first send may have added it"
        ))),
        Err(MpError::Permanent(reason)) => Ok(download_refused(cx, job, &identity, reason)),
        Err(e) => Err(e),
    }
}

/// The release a grab is for, from its stored list or, once the list expired, from what an
/// earlier attempt noted.
struct Picked {
    stored: Option<StoredList>,
    /// `None` once the list expired.
    release: Option<Release>,
    identity: ReleaseIdentity,
    magnet: Option<String>,
    asked: Option<AskedMedia>,
}

/// Release `index` of list `list`: refused when neither the list nor an earlier attempt's note
/// still names it.
async fn picked(
    cx: &Context<'_>,
    noted: &Noted,
    list: u64,
    index: usize,
) -> Result<Picked, MpError> {
    let stored = cx.ledger.releases(list).await.map_err(ledger_error)?;
    let release = stored
        .as_ref()
        .and_then(|l| l.releases.get(index - 1))
        .cloned()
        .and_then(Release::from_torrent_info);
    let Some(identity) = release
        .as_ref()
        .map(Release::identity)
        .or_else(|| noted.identity.clone())
    else {
        return Err(MpError::Permanent(cx.render.release_list_expired()));
    };
    let magnet = release
        .as_ref()
        .and_then(|rel| rel.magnet_hash.clone())
        .or_else(|| noted.magnet.clone());
    let asked = stored.as_ref().and_then(|l| asked_media(&l.media_info));
    Ok(Picked {
        stored,
        release,
        identity,
        magnet,
        asked,
    })
}

/// The download is in MoviePilot (`outcome`: `added`, `verified_existing`), with its hash; its
/// live card follows the hash under the media's name (MoviePilot's `title_year`), else the
/// release's own.
fn started(
    cx: &Context<'_>,
    (identity, asked): (&ReleaseIdentity, &Option<AskedMedia>),
    hash: &str,
    outcome: MpOutcome,
) -> Done {
    let title = asked
        .as_ref()
        .map_or(identity.title.as_str(), |m| &m.title_year);
    let follow = cx.follow_field(Followed::Download { hash }, title, asked.as_ref());
    Done {
        reply: cx.render.download_started(&identity.title, &identity.site),
        result: format!("download {hash} {outcome}"),
        fields: vec![
            ("mp_download_hash".into(), hash.to_string()),
            outcome.field(),
            follow,
        ],
        asked: asked.clone(),
        ..Done::default()
    }
}

/// MoviePilot refused the add: failed, not retried, the user told which release.
fn download_refused(
    cx: &Context<'_>,
    job: &Job,
    identity: &ReleaseIdentity,
    reason: String,
) -> Done {
    let reply = cx.render.download_refused(&identity.title, &identity.site);
    refused(cx, job, &reply, reason)
}

/// After an attempt that began an add (`began`, ms): the add's hash if MoviePilot shows it now
/// or once `moviepilot.download_settle_secs` after that attempt began (MoviePilot finishes a
/// request whose caller died); `None`: it never arrived.
async fn look_again(
    cx: &Context<'_>,
    identity: &ReleaseIdentity,
    noted: &Noted,
    magnet: Option<&str>,
    began: u64,
) -> Result<Option<String>, MpError> {
    if let Some(hash) = verify(cx, identity, &noted.before, magnet).await? {
        tracing::info!(hash = %hash, "download verified in MoviePilot's history; not sent again");
        return Ok(Some(hash));
    }
    let settle_at = began + cx.settings.moviepilot.download_settle_secs * 1000;
    let now = crate::worker::context::now_ms();
    if now >= settle_at {
        return Ok(None);
    }
    let wait = Duration::from_millis(settle_at - now);
    tracing::info!(
        wait_ms = wait.as_millis() as u64,
        "download not in the history yet; waiting for MoviePilot to settle before looking again"
    );
    tokio::time::sleep(wait).await;
    let found = verify(cx, identity, &noted.before, magnet).await?;
    if let Some(hash) = &found {
        tracing::info!(hash = %hash, "download verified after settling; not sent again");
    }
    Ok(found)
}

/// Notes the intent in the job before the add (note.lua, fenced): the release, the matching
/// history rows that exist already, when this attempt began, and how many sends this is.
async fn note_intent(
    cx: &Context<'_>,
    identity: &ReleaseIdentity,
    magnet: Option<&str>,
    sends: u64,
) -> Result<(), MpError> {
    let before: Vec<String> = cx
        .mp
        .download_history()
        .await?
        .iter()
        .filter(|row| identity.matches(row))
        .map(|row| row.id.to_string())
        .collect();
    let notes = [
        ("grab_site", identity.site.clone()),
        ("grab_title", identity.title.clone()),
        ("grab_description", identity.description.clone()),
        ("grab_before", before.join(",")),
        (
            "grab_began_ms",
            crate::worker::context::now_ms().to_string(),
        ),
        ("grab_magnet", magnet.unwrap_or_default().to_string()),
        ("grab_sends", sends.to_string()),
    ];
    if cx
        .ledger
        .note(cx.attempt, &notes)
        .await
        .map_err(ledger_error)?
    {
        Ok(())
    } else {
        Err(MpError::Transient(
            "this attempt no longer owns the job; not sending the download".into(),
        ))
    }
}

/// The media a release list is for, as its notifications will name it: MoviePilot's own
/// `title_year` where the stored media_info has one, and its season.
fn asked_media(media_info: &Value) -> Option<AskedMedia> {
    let text = |key: &str| media_info.get(key).and_then(Value::as_str);
    let year = match media_info.get("year") {
        Some(Value::Number(n)) => Some(n.to_string()),
        other => other.and_then(|v| v.as_str()).map(str::to_string),
    };
    let season = media_info
        .get("season")
        .and_then(Value::as_u64)
        .and_then(|s| u32::try_from(s).ok());
    AskedMedia::new(text("title")?, year.as_deref(), season)
}

fn hold(reply: String, error: String) -> Done {
    Done {
        reply,
        settle: Some(Settle::Held { error }),
        ..Done::default()
    }
}

/// A matching manual row of the history that was not there before the add (read whole, in no
/// particular order), or a magnet's hash among the active downloads: the hash, if found.
async fn verify(
    cx: &Context<'_>,
    identity: &ReleaseIdentity,
    before: &BTreeSet<u64>,
    magnet: Option<&str>,
) -> Result<Option<String>, MpError> {
    let rows = cx.mp.download_history().await?;
    if let Some(row) = rows
        .iter()
        .filter(|row| identity.matches(row) && !before.contains(&row.id))
        .max_by_key(|row| row.id)
    {
        return Ok(Some(row.download_hash.clone().unwrap_or_default()));
    }
    if let Some(hash) = magnet {
        let active = cx.mp.downloading_hashes().await?;
        if active.iter().any(|h| h.eq_ignore_ascii_case(hash)) {
            return Ok(Some(hash.to_string()));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grab_names_a_release_of_a_stored_list() {
        assert_eq!(parse_release("12 3"), Some((12, 3)));
        assert_eq!(parse_release("12"), None);
        assert_eq!(parse_release("12 0"), None);
    }
}
