//! What a user and an operator see when MoviePilot is the trouble, as real MoviePilot servers
//! showed it: a changed API token (the operator's to fix: jobs wait, admins are told once, the
//! jobs run once it works again) and a routine restart that refuses connections for a while.

use std::time::Duration;

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::moviepilot::{SimOptions, routes};

use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{GROUP, eventually};

/// The settings of an operator who gave oncebot only MoviePilot's API token (late v2 and v3
/// accept it everywhere), with `GROUP` as the admin chat.
async fn key_only_rig(opts: SimOptions, extra: &[(&str, &str)]) -> Rig {
    let key = opts.api_token.clone();
    let admins = GROUP.to_string();
    let mut settings = vec![
        ("ONCEBOT__MOVIEPILOT__USERNAME", ""),
        ("ONCEBOT__MOVIEPILOT__PASSWORD", ""),
        ("ONCEBOT__MOVIEPILOT__API_KEY", key.as_str()),
        ("ONCEBOT__TELEGRAM__ADMIN_CHATS", admins.as_str()),
    ];
    settings.extend_from_slice(extra);
    Rig::with_sim(opts, &settings).await
}

async fn readyz(rig: &Rig) -> (u16, String) {
    let resp = rig.http.get(rig.url("/readyz")).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test]
async fn a_changed_api_token_makes_jobs_wait_tells_the_admins_once_and_they_run_once_it_works() {
    for opts in [SimOptions::late_v2(), SimOptions::v3()] {
        let rig = key_only_rig(opts, &[]).await;
        run_rotation(rig).await;
    }
}

async fn run_rotation(rig: Rig) {
    let _bot = rig.start(None).await;
    rig.send(1, "/subscriptions").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;

    // The operator changes MoviePilot's API_TOKEN and forgets oncebot.
    rig.mp.rotate_api_token("a-new-token-nobody-told-oncebot");
    rig.send(2, "/subscriptions").await;
    rig.send(3, "/downloading").await;
    let store = &rig.store;
    let waiting = eventually(
        "both jobs waiting several rounds",
        RECOVERY_DEADLINE,
        || async move {
            let (a, b) = (store.job(2).await, store.job(3).await);
            let rounds = |j: &std::collections::BTreeMap<String, String>| {
                j.get("auth_waits")
                    .and_then(|w| w.parse::<u32>().ok())
                    .unwrap_or(0)
            };
            (rounds(&a) >= 8 && rounds(&b) >= 8).then_some((a, b))
        },
    )
    .await;
    for job in [&waiting.0, &waiting.1] {
        assert_ne!(job["status"], "failed", "{job:?}");
        assert_eq!(job["mp_error_kind"], "credentials", "{job:?}");
        // More rounds than worker.max_attempts (6): none of them spent an attempt.
        let attempts: u64 = job["attempts"].parse().unwrap();
        let base: u64 = job["attempt_base"].parse().unwrap();
        assert!(attempts > 6, "{job:?}");
        assert!(attempts - base <= 1, "{job:?}");
    }
    // The user (both jobs are ALICE's): one plain sentence, at the first job that waited.
    // Admins: one notice, naming the setting to fix.
    let mut told = Vec::new();
    for job in [2, 3] {
        told.extend(
            rig.replies_for(job)
                .await
                .into_iter()
                .map(|r| (job, r["text"].clone())),
        );
    }
    assert_eq!(told.len(), 1, "{told:?}");
    let (job, text) = &told[0];
    assert_eq!(
        text,
        &format!(
            "MoviePilot does not accept the bot's login for now; its administrators have been told. Job #{job} is kept and will go on by itself once that is fixed; no need to send it again."
        )
    );
    let notices: Vec<_> = rig
        .store
        .replies()
        .await
        .into_iter()
        .filter(|r| r["kind"] == "notice")
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0]["chat_id"], GROUP.to_string());
    assert!(
        notices[0]["text"].contains("ONCEBOT__MOVIEPILOT__API_KEY"),
        "{notices:?}"
    );
    assert!(!notices[0]["text"].contains(&rig.mp.options().api_token));
    // The process runs ingress: still ready (the webhook records updates), and it says why jobs wait.
    let (status, body) = readyz(&rig).await;
    assert_eq!(status, 200);
    assert!(
        body.contains("MoviePilot refuses oncebot's credentials"),
        "{body}"
    );

    // MoviePilot takes the token oncebot has again: the waiting jobs run by themselves.
    let original = rig.mp.options().api_token.clone();
    rig.mp.rotate_api_token(&original);
    rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    rig.job_in(3, "succeeded", RECOVERY_DEADLINE).await;
    let (status, body) = readyz(&rig).await;
    assert_eq!((status, body.as_str()), (200, "ready\n"));
    // The condition is over: its next occurrence is told again.
    let notice = rig.store.keys.notice("credentials");
    let store = &rig.store;
    eventually("the notice ended", RECOVERY_DEADLINE, || async {
        store.get(&notice).await.is_none().then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_job_waits_for_its_credentials_at_most_auth_wait_secs_then_fails_in_plain_words() {
    let rig = key_only_rig(
        SimOptions::v3(),
        &[("ONCEBOT__MOVIEPILOT__AUTH_WAIT_SECS", "1")],
    )
    .await;
    let bot = rig.start(None).await;
    // Connected with the key that works (a key refused at start-up stops the process instead).
    bot.wait_for_stderr("worker started", Duration::from_secs(10))
        .await;
    rig.mp.rotate_api_token("changed");
    rig.send(1, "/subscriptions").await;
    let job = rig.job_in(1, "failed", RECOVERY_DEADLINE).await;
    assert_eq!(job["mp_error_kind"], "credentials");
    assert!(
        job["error"].contains("ONCEBOT__MOVIEPILOT__API_KEY"),
        "{job:?}"
    );
    let last = rig.replies_for(1).await.pop().unwrap();
    assert_eq!(
        last["text"],
        "Job #1 did not go through: MoviePilot does not accept the bot's login for now; its administrators have been told. Please send the command again later; if it keeps happening, tell the bot's administrator."
    );
}

/// MoviePilot v2.14.0 refuses connections for 20 to 27 s while it restarts and forgets every
/// token. A job in that gap waits and then runs; the user reads a plain sentence.
#[tokio::test]
async fn a_moviepilot_restart_that_refuses_connections_is_waited_out() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = Rig::new(dialect).await;
        let _bot = rig.start(None).await;
        rig.send(1, "/subscriptions").await;
        rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
        let logins = rig.mp.logins();
        let listed = rig.mp.calls(routes::SUBSCRIBE_LIST);

        rig.mp
            .restart_refusing_connections_for(Duration::from_secs(2));
        assert!(
            tokio::net::TcpStream::connect(rig.mp.addr()).await.is_err(),
            "nothing listens while it restarts"
        );
        rig.send(2, "/subscriptions").await;
        let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
        assert!(job["attempts"].parse::<u32>().unwrap() >= 2, "{job:?}");
        assert!(!job["last_attempt_error"].is_empty(), "{job:?}");
        assert!(!job.contains_key("error"), "{job:?}");
        assert_eq!(rig.mp.logins(), logins + 1, "one login after the restart");
        // Once with the token the restart forgot, once more after the login; nothing while it
        // was down.
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_LIST) - listed, 2);
        let texts: Vec<_> = rig
            .replies_for(2)
            .await
            .into_iter()
            .map(|r| r["text"].clone())
            .collect();
        assert!(
            texts[0].starts_with(
                "MoviePilot cannot be reached or had a problem for now; job #2 will be retried in"
            ),
            "{texts:?}"
        );
    }
}

/// A wrong `moviepilot.url` (in compose: a host name the container cannot resolve, or 127.0.0.1,
/// which is the container itself) must be obvious from outside: the webhook still admits, while
/// `/readyz` and the metric say that MoviePilot is not reached and jobs wait; once it answers,
/// both clear and the waiting job runs.
#[tokio::test]
async fn a_moviepilot_unreachable_at_start_shows_in_readyz_and_metrics_until_it_answers() {
    let rig = Rig::new(Dialect::V2).await;
    rig.mp
        .restart_refusing_connections_for(Duration::from_secs(4));
    let bot = rig.start(None).await;
    bot.wait_for_stderr("MoviePilot is not reachable yet", Duration::from_secs(10))
        .await;
    rig.send(1, "/subscriptions").await;
    let (status, body) = readyz(&rig).await;
    assert_eq!(status, 200, "admission works: {body}");
    assert!(
        body.contains("MoviePilot is not reachable at moviepilot.url yet"),
        "{body}"
    );
    assert_eq!(
        rig.metric("oncebot_moviepilot_unreachable")
            .await
            .as_deref(),
        Some("1")
    );

    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let (status, body) = readyz(&rig).await;
    assert_eq!((status, body.as_str()), (200, "ready\n"));
    assert_eq!(
        rig.metric("oncebot_moviepilot_unreachable")
            .await
            .as_deref(),
        Some("0")
    );
}
