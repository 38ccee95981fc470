//! The house's costly jobs (issue 23): each starts one of MoviePilot's scheduler jobs, whose
//! repeat costs the whole house (every site searched or signed in to again), so each is an
//! admin's and runs once per window for everyone (`POLICIES`: `house_wide`). A repeat inside the
//! window is answered with when the first started and an admin's button that runs it again
//! anyway ([`admission`]).

use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::{Command, House, Spec, args};
use crate::config::CommandSettings;
use crate::i18n::{self, Texts, house_names};
use crate::ledger::{AdmissionAction, Owner, TokenAction, TokenGroup};
use crate::moviepilot::{MpError, SchedulerRun};
use crate::telegram::keyboard::Keyboard;
use crate::worker::context::{Context, Done};

/// A house command's spec: no arguments, its scheduler job and what it starts in words.
const fn house(
    name: &'static str,
    about: &'static i18n::About,
    scheduler_job: &'static str,
    words: i18n::Words,
) -> Spec {
    Spec {
        name,
        about,
        check: Some(args::none),
        run: Some(|cx, job, _| Box::pin(run(cx, &job.command))),
        house: Some(House {
            scheduler_job,
            name: words,
        }),
    }
}

pub(super) const SUBSCRIBE_SEARCH: Spec = house(
    "subscribe_search",
    &i18n::SUBSCRIBE_SEARCH,
    "subscribe_search",
    house_names::SUBSCRIBE_SEARCH,
);
pub(super) const SUBSCRIBE_REFRESH: Spec = house(
    "subscribe_refresh",
    &i18n::SUBSCRIBE_REFRESH,
    "subscribe_refresh",
    house_names::SUBSCRIBE_REFRESH,
);
pub(super) const SITE_SIGNIN: Spec = house(
    "site_signin",
    &i18n::SITE_SIGNIN,
    "AutoSignIn_AutoSignIn",
    house_names::SITE_SIGNIN,
);
pub(super) const TRANSFER: Spec = house(
    "transfer",
    &i18n::TRANSFER,
    "transfer",
    house_names::TRANSFER,
);
pub(super) const MEDIASERVER_SYNC: Spec = house(
    "mediaserver_sync",
    &i18n::MEDIASERVER_SYNC,
    "mediaserver_sync",
    house_names::MEDIASERVER_SYNC,
);
pub(super) const COOKIECLOUD: Spec = house(
    "cookiecloud",
    &i18n::COOKIECLOUD,
    "cookiecloud",
    house_names::COOKIECLOUD,
);

/// A house command's job: its scheduler job started once (its window is admission's).
/// `/site_signin`'s job is `commands.site_signin_job`.
async fn run(cx: &Context<'_>, name: &str) -> Result<Done, MpError> {
    let Some(command) = Command::from_name(name) else {
        return Err(MpError::Permanent(format!("/{name} is no house command")));
    };
    let job_id = match command {
        Command::SiteSignin => cx.settings.commands.site_signin_job.as_str(),
        _ => command
            .scheduler_job()
            .ok_or_else(|| MpError::Permanent(format!("/{name} is no house command")))?,
    };
    let run = cx.mp.run_scheduler(job_id).await?;
    let mut fields = vec![
        ("mp_scheduler_job".into(), job_id.to_string()),
        run.outcome().field(),
    ];
    if let SchedulerRun::Started { detail } = &run {
        fields.push(("mp_call".into(), detail.clone()));
    }
    Ok(Done {
        fields,
        ..Done::new(
            cx.render.house_job_ran(command.house_name(), &run),
            format!("{job_id}: {}", run.outcome()),
        )
    })
}

/// Where a house command was asked, for its admission.
pub struct Asked<'a> {
    pub settings: &'a CommandSettings,
    pub zone: &'a TimeZone,
    pub texts: Texts,
    /// `telegram.confirm_ttl_secs`: how long the force button lives (at most to the day's end).
    pub confirm_ttl: std::time::Duration,
    /// Who asked, in which chat: the force button is theirs.
    pub owner: Owner,
    pub message_id: i64,
}

/// A house command's admission at `now`: its window (the rest of the day for a calendar-day
/// one), the answer a repeat gets, and the force button under that answer.
pub fn admission(command: Command, asked: &Asked<'_>, now: Timestamp) -> AdmissionAction {
    let window = command.window_at(asked.settings, asked.zone, now);
    // A calendar day's force button ends with the day: after midnight the command runs again
    // anyway, and a button from yesterday would force yesterday's key.
    let ttl = match window.day {
        Some(_) => asked.confirm_ttl.min(window.length),
        None => asked.confirm_ttl,
    };
    let mut force = TokenGroup::new(ttl);
    let label = asked.texts.force_button();
    let data = force.add(
        asked.owner,
        label,
        TokenAction::Force(window.forced_job(command)),
        Some(asked.message_id),
    );
    let force_markup = Keyboard::new()
        .row(vec![(label.to_string(), data)])
        .to_json();
    AdmissionAction::HouseJob {
        job: window.house_job(command),
        repeat: asked.texts.house_repeat(
            command.house_name(),
            window.day.is_none().then_some(window.length),
        ),
        utc_offset_secs: asked.zone.to_offset(now).seconds(),
        force,
        force_markup,
    }
}
