//! The MoviePilot checks: its version and the API dialect oncebot speaks with it, the
//! credentials accepted (what a worker's start-up checks), oncebot's account a superuser (it
//! may list MoviePilot's users, which only a superuser may), and the library routes answering.
//! Reads only; the login is the process's own (no login gate shared through Redis).

use std::time::Duration;

use super::{Check, within};
use crate::config::{MoviePilotSettings, env_name};
use crate::moviepilot::{Announced, ListUsersError, MoviePilot, Unreachable};

const VERSION: &str = "moviepilot.version";
const CREDENTIALS: &str = "moviepilot.credentials";
const SUPERUSER: &str = "moviepilot.superuser";
const LIBRARY: &str = "moviepilot.library";

/// Version, credentials, superuser, library; the later ones "not checked" after a failure.
pub(super) async fn checks(settings: &MoviePilotSettings, timeout: Duration) -> Vec<Check> {
    let skipped = |mut done: Vec<Check>, because: &str| {
        let rest = [VERSION, CREDENTIALS, SUPERUSER, LIBRARY];
        for name in &rest[done.len()..] {
            done.push(Check::not_checked(*name, because));
        }
        done
    };
    let announced = match within(timeout, MoviePilot::announced(settings)).await {
        Ok(Ok(announced)) => announced,
        Ok(Err(e)) => return skipped(vec![unannounced(&e)], "MoviePilot's version is not known"),
        Err(late) => {
            let check = Check::fail(VERSION, format!("MoviePilot gave {late}"), url_fix());
            return skipped(vec![check], "MoviePilot did not answer");
        }
    };
    let mp = match within(timeout, MoviePilot::connect(settings)).await {
        Ok(Ok(mp)) => mp,
        Ok(Err(e)) => {
            let version = version(&announced, None);
            let refused = Check::fail(CREDENTIALS, format!("{e:#}"), credentials_fix());
            return skipped(
                vec![version, refused],
                "oncebot's credentials were not accepted",
            );
        }
        Err(late) => {
            let version = version(&announced, None);
            let late = Check::fail(CREDENTIALS, format!("MoviePilot gave {late}"), url_fix());
            return skipped(vec![version, late], "MoviePilot did not answer");
        }
    };
    let credentials = Check::pass(
        CREDENTIALS,
        match (settings.api_key.is_empty(), mp.service_username()) {
            (true, Some(user)) => format!("MoviePilot accepts user {user:?}'s login"),
            (false, Some(user)) => {
                format!("MoviePilot accepts the API key, or else user {user:?}'s login")
            }
            (_, None) => "MoviePilot accepts the API key".to_string(),
        },
    );
    let (superuser, library) = tokio::join!(superuser(&mp, timeout), library(&mp, timeout));
    vec![
        version(&announced, Some(&mp)),
        credentials,
        superuser,
        library,
    ]
}

fn url_fix() -> String {
    format!(
        "start MoviePilot, or set {} to the URL oncebot reaches it at (from a container, \
         http://host.docker.internal:3001 for a MoviePilot published on the host)",
        env_name("moviepilot.url")
    )
}

fn credentials_fix() -> String {
    format!(
        "correct the setting the line names: {} (MoviePilot's API_TOKEN), or {} and {} (a \
         MoviePilot user's login)",
        env_name("moviepilot.api_key"),
        env_name("moviepilot.username"),
        env_name("moviepilot.password")
    )
}

/// The version could not be read: nothing answered, or a version oncebot does not speak.
fn unannounced(e: &anyhow::Error) -> Check {
    if e.downcast_ref::<Unreachable>().is_some() {
        return Check::fail(VERSION, format!("{e:#}"), url_fix());
    }
    Check::fail(
        VERSION,
        format!("{e:#}"),
        "run MoviePilot v2 or v3 (the lines oncebot speaks)",
    )
}

/// The version and dialect: the dialect as connecting chose it, or as the version implies.
fn version(announced: &Announced, connected: Option<&MoviePilot>) -> Check {
    let dialect = match (connected.map(MoviePilot::dialect), announced.dialect) {
        (Some(d), Some(_)) => format!("API dialect {d}"),
        (Some(d), None) => format!("API dialect {d}, told by its answers"),
        (None, Some(d)) => format!("API dialect {d}"),
        (None, None) => "API dialect not known until the credentials are accepted".to_string(),
    };
    Check::pass(
        VERSION,
        format!(
            "MoviePilot {} at {} ({dialect})",
            announced.version, announced.url
        ),
    )
}

/// Only a superuser may list MoviePilot's users: oncebot's account needs to (the mapping of
/// Telegram ids, and on v3 the subscriptions of everyone).
async fn superuser(mp: &MoviePilot, timeout: Duration) -> Check {
    let fix = match mp.service_username() {
        Some(user) => format!(
            "make MoviePilot user {user:?} a superuser (MoviePilot: 用户 → edit → 超级管理员), or \
             set {} (the API key acts as the superuser)",
            env_name("moviepilot.api_key")
        ),
        None => format!(
            "set {} and {} to a MoviePilot superuser's login",
            env_name("moviepilot.username"),
            env_name("moviepilot.password")
        ),
    };
    match within(timeout, mp.list_users()).await {
        Ok(Ok(users)) => Check::pass(
            SUPERUSER,
            format!(
                "oncebot's account may list MoviePilot's users ({}): it is a superuser",
                users.len()
            ),
        ),
        Ok(Err(ListUsersError::NotSuperuser(why))) => Check::fail(SUPERUSER, why, fix),
        Ok(Err(ListUsersError::Failed(e))) => Check::fail(SUPERUSER, e.to_string(), fix),
        Err(late) => Check::fail(SUPERUSER, format!("MoviePilot gave {late}"), url_fix()),
    }
}

/// The library routes: the media servers, and `notexists` answering when there is one.
async fn library(mp: &MoviePilot, timeout: Duration) -> Check {
    let fix = "until they answer, replies do not say what the library already holds: check \
               MoviePilot's media server (设定 → 媒体服务器), or upgrade a MoviePilot without \
               /api/v1/mediaserver/";
    match within(timeout, mp.library_routes(timeout)).await {
        Ok(Ok(0)) => Check::pass(
            LIBRARY,
            "no media server is enabled in MoviePilot: the library check is off (it holds \
             nothing up)",
        ),
        Ok(Ok(servers)) => Check::pass(
            LIBRARY,
            format!("{servers} media server(s) enabled; the library routes answer"),
        ),
        Ok(Err(e)) => Check::fail(LIBRARY, e.to_string(), fix),
        Err(late) => Check::fail(LIBRARY, format!("MoviePilot gave {late}"), fix),
    }
}
