//! Issue 43, part 2: oncebot's own MoviePilot account. When a worker first reaches MoviePilot
//! it finds out whether its account is a superuser (the API key is one; a login is what its
//! answer's `super_user` says, else `GET /api/v1/user/current`). On MoviePilot v3 a plain
//! account would see only its own subscriptions, so the worker claims nothing and exits 1 with
//! one line naming the settings, and the `/readyz` of every process says so (the finding is in
//! Redis, `mp_account`); on v2 it warns once and runs.

use std::collections::BTreeMap;
use std::time::Duration;

use oncebot::config::Secret;
use oncebot::moviepilot::{MoviePilot, OwnAccount};
use oncebot_tools::sim::moviepilot::{Fault, MoviePilotSim, SimOptions, routes};
use redis::AsyncCommands as _;

use crate::support::child::Oncebot;
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{bare_settings, login_settings};

/// The start of the line a worker stops with (`worker::account`).
const STOPS: &str = "oncebot's MoviePilot account \"admin\" is not a superuser, and MoviePilot";

/// The start of the warning a v2 worker logs once.
const WARNS: &str = "oncebot's MoviePilot account is not a superuser";

async fn readyz(rig: &Rig) -> (u16, String) {
    let resp = rig.http.get(rig.url("/readyz")).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// `mp_account` as stored.
async fn finding(rig: &Rig) -> BTreeMap<String, String> {
    let mut conn = rig.store.conn().await;
    conn.hgetall(rig.store.keys.mp_account()).await.unwrap()
}

/// The one line `oncebot: ...` the process printed when it exited, which says why.
fn exit_line(bot: &Oncebot) -> String {
    let log = bot.stderr();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains(STOPS)).collect();
    assert_eq!(lines.len(), 1, "one line says it: {log}");
    assert!(lines[0].starts_with("oncebot: "), "{log}");
    lines[0].to_string()
}

/// A split deployment on MoviePilot v3 whose login is no superuser: the worker claims nothing
/// (the job waits, MoviePilot is asked nothing but the start-up probe) and exits 1 with one line
/// naming the settings; the ingress-only process's `/readyz` says why (it still admits: 200).
/// Made a superuser in MoviePilot, the next worker runs the job and `/readyz` is plain again.
#[tokio::test]
async fn on_v3_a_plain_account_stops_the_worker_and_every_readyz_says_so() {
    let opts = SimOptions {
        superuser: false,
        ..SimOptions::v3()
    };
    let rig = Rig::with_sim(opts, &[]).await;
    let _ingress = rig.start_roles(&["ingress"], None).await;
    rig.send(1, "/subscriptions").await;
    let mut worker = Oncebot::spawn(&["serve", "--role", "worker"], &rig.env);
    let status = worker.wait_exit(Duration::from_secs(20)).await;
    assert_eq!(status.code(), Some(1), "{}", worker.stderr());
    let line = exit_line(&worker);
    for setting in [
        "ONCEBOT__MOVIEPILOT__API_KEY",
        "ONCEBOT__MOVIEPILOT__USERNAME",
        "ONCEBOT__MOVIEPILOT__PASSWORD",
    ] {
        assert!(line.contains(setting), "{line}");
    }
    assert!(
        !worker.stderr().contains("worker started"),
        "{}",
        worker.stderr()
    );
    let job = rig.store.job(1).await;
    assert_eq!(
        job.get("status").map(String::as_str),
        Some("pending"),
        "{job:?}"
    );
    assert_eq!(
        rig.mp.calls(routes::SUBSCRIBE_LIST),
        1,
        "the start-up probe only"
    );

    let (status, body) = readyz(&rig).await;
    assert_eq!(status, 200, "admission works: {body}");
    assert!(
        body.contains("moviepilot: oncebot's MoviePilot account is not a superuser"),
        "{body}"
    );
    assert!(body.contains("moviepilot.api_key"), "{body}");
    let found = finding(&rig).await;
    for (field, value) in [
        ("state", "not_superuser"),
        ("dialect", "v3"),
        ("via", "login"),
        ("user", "admin"),
    ] {
        assert_eq!(
            found.get(field).map(String::as_str),
            Some(value),
            "{found:?}"
        );
    }

    rig.mp.set_superuser("admin", true);
    let _worker = rig.start_worker_only().await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let (status, body) = readyz(&rig).await;
    assert_eq!((status, body.as_str()), (200, "ready\n"));
    assert_eq!(finding(&rig).await["state"], "superuser");
}

/// A MoviePilot v3 away when oncebot starts does not stop it (the webhook admits meanwhile);
/// once MoviePilot answers, the worker finds its plain account and the process exits 1.
#[tokio::test]
async fn on_v3_moviepilot_away_at_start_does_not_stop_oncebot_until_the_account_is_seen() {
    let opts = SimOptions {
        superuser: false,
        ..SimOptions::v3()
    };
    let rig = Rig::with_sim(opts, &[]).await;
    rig.mp
        .restart_refusing_connections_for(Duration::from_secs(3));
    let mut bot = rig.start(None).await;
    bot.wait_for_stderr("MoviePilot is not reachable yet", Duration::from_secs(10))
        .await;
    rig.send(1, "/subscriptions").await;
    let status = bot.wait_exit(Duration::from_secs(30)).await;
    assert_eq!(status.code(), Some(1), "{}", bot.stderr());
    exit_line(&bot);
    assert_eq!(rig.store.job(1).await["status"], "pending");
}

/// On MoviePilot v2 a plain account lists every subscription: the worker warns once, naming the
/// settings, and runs; `/readyz` stays plain, the finding is stored all the same.
#[tokio::test]
async fn on_v2_a_plain_account_warns_once_and_the_worker_runs() {
    let opts = SimOptions {
        superuser: false,
        ..SimOptions::v2_5_6()
    };
    let rig = Rig::with_sim(opts, &[]).await;
    let bot = rig.start_pipeline().await;
    rig.send(1, "/subscriptions").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let log = bot.stderr();
    assert_eq!(log.matches(WARNS).count(), 1, "{log}");
    assert!(log.contains("ONCEBOT__MOVIEPILOT__API_KEY"), "{log}");
    let (status, body) = readyz(&rig).await;
    assert_eq!((status, body.as_str()), (200, "ready\n"));
    let found = finding(&rig).await;
    assert_eq!(found["state"], "not_superuser");
    assert_eq!(found["dialect"], "v2");
}

/// The client's view of its own account: the API key is a superuser; a login is what its
/// answer says; a login answer that does not say is settled by `GET /api/v1/user/current`.
#[tokio::test]
async fn the_own_account_is_the_api_key_or_what_moviepilot_says_of_the_login() {
    for opts in [SimOptions::late_v2(), SimOptions::v3()] {
        let sim = MoviePilotSim::start(opts.clone()).await;
        let keyed = MoviePilot::connect(&oncebot::config::MoviePilotSettings {
            api_key: Secret::new(opts.api_token.clone()),
            ..bare_settings(&sim)
        })
        .await
        .unwrap();
        assert_eq!(keyed.own_account().await, OwnAccount::ApiKey);
        let admin = MoviePilot::connect(&login_settings(&sim)).await.unwrap();
        assert_eq!(admin.own_account().await.is_superuser(), Some(true));

        sim.set_superuser("admin", false);
        let plain = MoviePilot::connect(&login_settings(&sim)).await.unwrap();
        assert_eq!(
            plain.own_account().await,
            OwnAccount::Login {
                username: "admin".into(),
                superuser: Some(false)
            }
        );
        assert_eq!(
            sim.calls(routes::CURRENT_USER),
            0,
            "the login's answer said"
        );

        // A login answer without `super_user`: the token is a real one, the rest left out.
        let token = login_token(&sim).await;
        sim.fail_next(
            routes::LOGIN,
            Fault::Status(
                200,
                format!(r#"{{"access_token":"{token}","token_type":"bearer"}}"#),
            ),
        );
        let unsaid = MoviePilot::connect(&login_settings(&sim)).await.unwrap();
        assert_eq!(unsaid.own_account().await.is_superuser(), Some(false));
        assert_eq!(sim.calls(routes::CURRENT_USER), 1);
    }
}

/// A token the simulator issued, by logging in as its user.
async fn login_token(sim: &MoviePilotSim) -> String {
    let form = [
        ("username", sim.options().username.as_str()),
        ("password", sim.options().password.as_str()),
    ];
    let answer: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/api/v1/login/access-token", sim.url()))
        .form(&form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["access_token"].as_str().unwrap().to_string()
}
