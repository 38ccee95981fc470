//! The house commands (issue 23): an admin's commands that each start one of MoviePilot's
//! scheduler jobs, whose repeat costs the whole house. Against the simulated MoviePilot, whose
//! scheduler runs a job inside the request (as v2.5.6's `runscheduler` does), counts its runs
//! and skips a start while the job runs.

use std::collections::BTreeMap;
use std::time::Duration;

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::moviepilot::routes;
use oncebot_tools::sim::telegram::callback_update;
use redis::AsyncCommands as _;
use serde_json::{Value, json};

use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, buttons, eventually, private_text, tap_answer};

/// Each house command and the scheduler job it starts.
const HOUSE: [(&str, &str); 6] = [
    ("subscribe_search", "subscribe_search"),
    ("subscribe_refresh", "subscribe_refresh"),
    ("site_signin", "AutoSignIn_AutoSignIn"),
    ("transfer", "transfer"),
    ("mediaserver_sync", "mediaserver_sync"),
    ("cookiecloud", "cookiecloud"),
];

/// The answer to a repeat of job `id`, once it is queued.
async fn repeat_answer(rig: &Rig, id: u64) -> BTreeMap<String, String> {
    let id = id.to_string();
    eventually("the answer to the repeat", RECOVERY_DEADLINE, || {
        let store = rig.store.clone();
        let id = id.clone();
        async move {
            store
                .replies()
                .await
                .into_iter()
                .find(|r| r["kind"] == "duplicate" && r["job_id"] == id)
        }
    })
    .await
}

/// Job `id`'s result reply.
async fn result_of(rig: &Rig, id: u64) -> BTreeMap<String, String> {
    rig.replies_for(id)
        .await
        .into_iter()
        .find(|r| r["kind"] == "result")
        .unwrap_or_else(|| panic!("job {id} has no result reply"))
}

/// A tap by `user` on the button with `data` (its message id does not matter here).
fn tap(update_id: i64, user: i64, data: &str) -> Value {
    let mut update = callback_update(user, user, 999, data);
    update["update_id"] = json!(update_id);
    update
}

/// A double tap, and the same command from another admin, start each job once.
#[tokio::test]
async fn each_house_command_starts_its_job_once_however_often_it_is_asked() {
    for dialect in [Dialect::V2, Dialect::V3] {
        each_house_command_once(dialect).await;
    }
}

async fn each_house_command_once(dialect: Dialect) {
    let rig = Rig::new(dialect).await;
    let _bot = rig.start(None).await;
    for (i, (command, job)) in HOUSE.iter().enumerate() {
        let first = i as i64 * 10 + 1;
        rig.send(first, &format!("/{command}")).await;
        rig.send(first + 1, &format!("/{command}")).await;
        rig.post(&private_text(first + 2, BOB, &format!("/{command}")))
            .await;
        let id = i as u64 + 1;
        let row = rig.job_in(id, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(row["command"], *command);
        assert_eq!(row["mp_outcome"], "finished", "/{command}");
        assert_eq!(row["mp_scheduler_job"], *job);
        assert_eq!(row["duplicates"], "2", "/{command}");
        assert_eq!(rig.mp.scheduler_runs(job), 1, "/{command}");
        let replies = rig.replies_for(id).await;
        let done: Vec<_> = replies.iter().filter(|r| r["kind"] == "result").collect();
        assert_eq!(done.len(), 1, "{replies:?}");
        assert!(
            done[0]["text"].starts_with("MoviePilot has run the "),
            "{replies:?}"
        );
    }
    assert_eq!(rig.mp.calls(routes::RUN_SCHEDULER), 6);
    assert_eq!(rig.store.job_ids().await.len(), 6);
}

/// A repeat is told when the first started and how long the window lasts, with one button that
/// runs it again anyway: once, recorded as forced, taking the window over.
#[tokio::test]
async fn the_force_button_runs_it_once_more_and_says_who_forced_it() {
    let rig = Rig::new(Dialect::V2).await;
    let _bot = rig.start(None).await;
    rig.send(1, "/subscribe_search").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    rig.send(2, "/subscribe_search").await;
    let answer = repeat_answer(&rig, 1).await;
    let text = &answer["text"];
    assert!(
        text.starts_with("The search of every subscription was started at "),
        "{text}"
    );
    assert!(
        text.contains("(job #1, succeeded); it will not run again within 30 minutes."),
        "{text}"
    );
    // The time is HH:MM in commands.day_zone (Asia/Shanghai, UTC+8).
    let created: u64 = rig.store.job(1).await["created_at"].parse().unwrap();
    let secs = created / 1000 + 8 * 3600;
    let hhmm = format!("{:02}:{:02}", secs % 86400 / 3600, secs % 3600 / 60);
    assert!(
        text.contains(&format!("started at {hhmm} ")),
        "{text} ({hhmm})"
    );
    let row = buttons(&answer);
    assert_eq!(row.len(), 1, "{row:?}");
    assert_eq!(row[0].0, "Run it again now");

    rig.post(&tap(3, ALICE, &row[0].1)).await;
    let forced = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(forced["forced_by"], ALICE.to_string());
    assert_eq!(rig.mp.scheduler_runs("subscribe_search"), 2);
    // The button worked once.
    rig.post(&tap(4, ALICE, &row[0].1)).await;
    // The forced job holds the window now: a repeat points at it.
    rig.send(5, "/subscribe_search").await;
    repeat_answer(&rig, 2).await;
    assert_eq!(rig.store.job_ids().await.len(), 2);
    assert_eq!(rig.mp.scheduler_runs("subscribe_search"), 2);
}

/// Only an admin may start a house job, and only an admin may force one.
#[tokio::test]
async fn a_non_admin_gets_one_sentence_and_no_job() {
    let users = format!("{ALICE}=alice:user,{BOB}=bob:admin");
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    let _bot = rig.start(None).await;
    rig.send(1, "/transfer").await;
    let refusal = eventually("the refusal", RECOVERY_DEADLINE, || async {
        rig.store
            .replies()
            .await
            .into_iter()
            .find(|r| r["kind"] == "forbidden")
    })
    .await;
    assert_eq!(refusal["text"], "Only an admin can do that.");
    assert!(rig.store.job_ids().await.is_empty());
    // An admin's is a job.
    rig.post(&private_text(2, BOB, "/transfer")).await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(rig.mp.scheduler_runs("transfer"), 1);
}

/// Telegram shows the house commands in each admin's chat only (setMyCommands, scope `chat`).
#[tokio::test]
async fn only_admins_see_the_house_commands_in_their_menu() {
    let users = format!("{ALICE}=alice:admin,{BOB}=bob:user");
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    let _bot = rig.start_pipeline().await;
    let names = |menu: Option<&Value>| -> Vec<String> {
        menu.and_then(Value::as_array)
            .map(|m| {
                m.iter()
                    .map(|c| c["command"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let (mut everyone, mut alice, mut bob) = (Vec::new(), Vec::new(), Vec::new());
    rig.tg
        .wait_for(RECOVERY_DEADLINE, |o| {
            alice = names(o.chat_commands(ALICE));
            everyone = names(o.commands());
            bob = names(o.chat_commands(BOB));
            !alice.is_empty() && !everyone.is_empty()
        })
        .await
        .unwrap();
    for (command, _) in HOUSE {
        assert!(
            !everyone.contains(&command.to_string()),
            "/{command} for everyone"
        );
        assert!(
            alice.contains(&command.to_string()),
            "/{command} not in the admin's menu"
        );
    }
    assert!(everyone.contains(&"subscribe".to_string()));
    assert!(alice.contains(&"subscribe".to_string()));
    assert!(
        bob.is_empty(),
        "a user's chat has no menu of its own: {bob:?}"
    );
}

/// Who is an admin changes while oncebot runs (MoviePilot's own mapping, refreshed): a new admin's
/// chat gets the admin menu, and loses it again when they are no longer one.
#[tokio::test]
async fn the_admin_menu_follows_moviepilots_mapping() {
    // Bob is mapped by the setting, so the unmapped are users, not everyone an admin.
    let users = format!("{BOB}=bob:viewer");
    let rig = Rig::with(
        Dialect::V2,
        &[
            ("ONCEBOT__MOVIEPILOT__USERS_REFRESH_SECS", "1"),
            ("ONCEBOT__TELEGRAM__USERS", &users),
        ],
    )
    .await;
    rig.mp.add_user("alice", true, Some(&ALICE.to_string()));
    let _bot = rig.start_pipeline().await;
    let has_menu = |o: &oncebot_tools::sim::telegram::Observed<'_>| {
        o.chat_commands(ALICE)
            .and_then(Value::as_array)
            .is_some_and(|m| m.iter().any(|c| c["command"] == "subscribe_search"))
    };
    rig.tg
        .wait_for(Duration::from_secs(20), has_menu)
        .await
        .expect("Alice, a MoviePilot superuser, gets the admin menu");
    rig.mp.remove_user("alice");
    rig.tg
        .wait_for(Duration::from_secs(20), |o| !has_menu(o))
        .await
        .expect("Alice, no longer mapped, loses it");
    let deletes = rig
        .tg
        .calls()
        .iter()
        .filter(|c| c.method == "deleteMyCommands")
        .count();
    assert!(deletes >= 1, "the admin menu was deleted, not overwritten");
}

/// MoviePilot answers a start only when the job ends; one that takes longer than a call may
/// wait is under way, not failed. A start while it runs is skipped at MoviePilot and said so.
#[tokio::test]
async fn a_job_still_running_at_moviepilot_is_under_way_and_not_started_twice() {
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__MOVIEPILOT__TIMEOUT_SECS", "1")]).await;
    rig.mp.set_scheduler_run_time(Duration::from_secs(8));
    let _bot = rig.start(None).await;
    rig.send(1, "/mediaserver_sync").await;
    let row = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(row["mp_outcome"], "started");
    assert!(rig.mp.scheduler_running("mediaserver_sync"));
    let replies = rig.replies_for(1).await;
    assert!(replies[0]["text"].contains("is still at it"), "{replies:?}");
    // Forced while MoviePilot still runs it: its scheduler lists it running, so nothing is sent.
    rig.send(2, "/mediaserver_sync").await;
    let answer = repeat_answer(&rig, 1).await;
    rig.post(&tap(3, ALICE, &buttons(&answer)[0].1)).await;
    let forced = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(forced["mp_outcome"], "already_running");
    let result = result_of(&rig, 2).await;
    assert!(result["text"].contains("already running"), "{result:?}");
    assert_eq!(rig.mp.scheduler_runs("mediaserver_sync"), 1);
    assert_eq!(rig.mp.calls(routes::RUN_SCHEDULER), 1);
}

/// /site_signin's window is the calendar day in commands.day_zone: its business key lives
/// until midnight there (Asia/Shanghai has no DST: UTC+8 all year), not a day from now.
#[tokio::test]
async fn a_site_signin_is_once_until_midnight_in_the_day_zone() {
    let rig = Rig::new(Dialect::V2).await;
    let _bot = rig.start(None).await;
    rig.send(1, "/site_signin").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    rig.send(2, "/site_signin").await;
    let answer = repeat_answer(&rig, 1).await;
    assert!(
        answer["text"].contains("it will not run again today."),
        "{answer:?}"
    );
    let keys = rig.store.command_keys().await;
    assert_eq!(keys.len(), 1, "{keys:?}");
    let ttl: i64 = rig.store.conn().await.pttl(&keys[0]).await.unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let to_midnight = 86_400_000 - (now + 8 * 3_600_000) % 86_400_000;
    assert!(
        // Redis's clock and this one may differ by a little.
        ttl <= to_midnight + 1_000 && ttl > to_midnight - 30_000,
        "key ttl {ttl} ms, midnight in Shanghai in {to_midnight} ms"
    );
    // Its force button ends with the day too: a button from before midnight cannot force
    // yesterday's sign-in into today.
    let data = &buttons(&answer)[0].1;
    let token = data.strip_prefix("t:").unwrap();
    let token_ttl: i64 = rig
        .store
        .conn()
        .await
        .pttl(rig.store.keys.token(token))
        .await
        .unwrap();
    assert!(
        token_ttl > 0 && token_ttl <= to_midnight.min(600_000) + 1_000,
        "force button ttl {token_ttl} ms, midnight in Shanghai in {to_midnight} ms"
    );
    assert_eq!(rig.mp.scheduler_runs("AutoSignIn_AutoSignIn"), 1);
}

/// SIGKILL right after MoviePilot took the start: what happens next is the table's. A search
/// of every subscription is held for a person (it cannot be verified and costs every site); a
/// transfer runs again (it files only what is not filed yet); a media server sync runs again
/// once.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_start_cut_off_by_a_crash_recovers_as_the_table_says() {
    for (command, job, status, runs) in [
        ("subscribe_search", "subscribe_search", "needs_review", 1),
        ("transfer", "transfer", "succeeded", 2),
        ("mediaserver_sync", "mediaserver_sync", "succeeded", 2),
    ] {
        let rig = Rig::new(Dialect::V2).await;
        let mut bot = rig.start(Some("worker.after_call")).await;
        rig.send(1, &format!("/{command}")).await;
        bot.wait_for_stderr(
            "crash point worker.after_call reached",
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(rig.mp.scheduler_runs(job), 1, "/{command}");
        bot.sigkill().await;
        let _bot = rig.start(None).await;
        let row = rig.job_in(1, status, RECOVERY_DEADLINE).await;
        assert_eq!(row["recoveries"], "1", "/{command}");
        assert_eq!(rig.mp.scheduler_runs(job), runs, "/{command}");
    }
}

/// The Confirm button under `/restart`'s question (job `ask`), once the question is stored.
async fn confirm_button(rig: &Rig, ask: u64) -> (String, BTreeMap<String, String>) {
    rig.job_in(ask, "succeeded", RECOVERY_DEADLINE).await;
    let question = result_of(rig, ask).await;
    let row = buttons(&question);
    assert_eq!(
        row.iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>(),
        ["Confirm", "Cancel"]
    );
    (row[0].1.clone(), question)
}

/// /restart asks first, naming what it cuts off; Confirm tapped twice restarts MoviePilot once,
/// and the job ends when MoviePilot was seen gone and back, saying for how long.
#[tokio::test]
async fn a_restart_asks_first_runs_once_and_says_how_long_moviepilot_was_gone() {
    let rig = Rig::new(Dialect::V2).await;
    rig.mp.set_restart(
        oncebot_tools::sim::moviepilot::RestartMode::Restarts,
        Duration::from_secs(2),
    );
    let _bot = rig.start(None).await;
    rig.send(1, "/restart").await;
    let (confirm, question) = confirm_button(&rig, 1).await;
    assert!(
        question["text"].starts_with("Restart MoviePilot? It does not answer while it restarts"),
        "{question:?}"
    );
    assert_eq!(rig.mp.restarts(), 0, "asking restarts nothing");
    rig.post(&tap(2, ALICE, &confirm)).await;
    rig.post(&tap(3, ALICE, &confirm)).await;
    let row = rig.job_in(2, "succeeded", Duration::from_secs(30)).await;
    assert_eq!(row["mp_outcome"], "restarted");
    let down: u64 = row["mp_down_secs"].parse().unwrap();
    assert!((1..=10).contains(&down), "{row:?}");
    assert_eq!(rig.mp.restarts(), 1);
    let result = result_of(&rig, 2).await;
    assert!(
        result["text"].starts_with("MoviePilot has restarted and is back; it was gone for about "),
        "{result:?}"
    );
    // Asked again inside the window: the Confirm of the new question is a repeat, not a restart.
    rig.send(4, "/restart").await;
    let (again, _) = confirm_button(&rig, 3).await;
    rig.post(&tap(5, ALICE, &again)).await;
    assert_eq!(rig.store.job_ids().await.len(), 3);
    assert_eq!(rig.mp.restarts(), 1);
}

/// A MoviePilot that cannot restart itself says why, and nothing is watched; one that says it
/// restarts and goes on answering did not restart (#2495): the job fails and may be asked again.
#[tokio::test]
async fn a_restart_moviepilot_refuses_or_ignores_is_not_taken_for_done() {
    use oncebot_tools::sim::moviepilot::RestartMode;
    let rig = Rig::with(
        Dialect::V2,
        &[("ONCEBOT__COMMANDS__RESTART_WATCH_SECS", "2")],
    )
    .await;
    rig.mp.set_restart(
        RestartMode::Refuses("当前运行环境不支持重启操作！".into()),
        Duration::ZERO,
    );
    let _bot = rig.start(None).await;
    rig.send(1, "/restart").await;
    let (confirm, _) = confirm_button(&rig, 1).await;
    rig.post(&tap(2, ALICE, &confirm)).await;
    let row = rig.job_in(2, "failed", RECOVERY_DEADLINE).await;
    assert_eq!(row["attempts"], "1");
    // The user reads oncebot's sentence; MoviePilot's own words stay in the job for the admins.
    assert_eq!(
        result_of(&rig, 2).await["text"],
        "Job #2 did not go through: MoviePilot would not restart itself (it can only in Docker, \
         with access to Docker); restart it by hand."
    );
    assert_eq!(
        row["error"],
        "MoviePilot would not restart: 当前运行环境不支持重启操作！"
    );
    rig.mp.set_restart(RestartMode::Ignores, Duration::ZERO);
    rig.send(3, "/restart").await;
    let (confirm, _) = confirm_button(&rig, 3).await;
    rig.post(&tap(4, ALICE, &confirm)).await;
    let row = rig.job_in(4, "failed", RECOVERY_DEADLINE).await;
    assert_eq!(
        row.get("mp_outcome").map(String::as_str),
        Some("not_restarted"),
        "{row:?}"
    );
    assert_eq!(rig.mp.restarts(), 0);
}

/// SIGKILL right after MoviePilot took the restart: the new process does not send it again; it
/// sees MoviePilot gone (it cannot even connect at start) and back, and the job succeeds.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_restart_cut_off_by_a_crash_is_verified_and_never_sent_twice() {
    let rig = Rig::new(Dialect::V2).await;
    rig.mp.set_restart(
        oncebot_tools::sim::moviepilot::RestartMode::Restarts,
        Duration::from_secs(4),
    );
    let mut bot = rig.start(Some("worker.after_restart_call")).await;
    rig.send(1, "/restart").await;
    let (confirm, _) = confirm_button(&rig, 1).await;
    rig.post(&tap(2, ALICE, &confirm)).await;
    bot.wait_for_stderr(
        "crash point worker.after_restart_call reached",
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(rig.mp.restarts(), 1);
    bot.sigkill().await;
    let _bot = rig.start(None).await;
    let row = rig.job_in(2, "succeeded", Duration::from_secs(40)).await;
    assert_eq!(row["mp_outcome"], "restarted", "{row:?}");
    assert_eq!(row["recoveries"], "1");
    assert!(!row["restart_sent"].is_empty());
    assert_eq!(rig.mp.restarts(), 1, "never sent twice");
}

/// The Confirm button under `/redo`'s question (job `ask`), and the question.
async fn redo_question(rig: &Rig, ask: u64) -> (String, BTreeMap<String, String>) {
    rig.job_in(ask, "succeeded", RECOVERY_DEADLINE).await;
    let question = result_of(rig, ask).await;
    let confirm = match question.contains_key("markup") {
        true => buttons(&question)
            .into_iter()
            .find(|(l, _)| l == "Confirm")
            .map(|(_, d)| d),
        false => None,
    };
    (confirm.unwrap_or_default(), question)
}

/// /redo asks first, naming the file MoviePilot deletes and the one it files again; Confirm
/// tapped twice files it once (a second redo would delete the first one's file).
#[tokio::test]
async fn a_redo_names_the_file_and_runs_once() {
    let rig = Rig::new(Dialect::V2).await;
    let record = rig.mp.insert_transfer(
        "/downloads/Dune.2021.2160p.mkv",
        "/media/movies/Dune (2021)/Dune (2021).mkv",
        "Dune",
    );
    let _bot = rig.start(None).await;
    rig.send(1, &format!("/redo {record}")).await;
    let (confirm, question) = redo_question(&rig, 1).await;
    let text = &question["text"];
    assert!(
        text.starts_with(&format!("File transfer record #{record} (\"Dune\") again?")),
        "{text}"
    );
    assert!(
        text.contains("/media/movies/Dune (2021)/Dune (2021).mkv"),
        "{text}"
    );
    assert!(text.contains("/downloads/Dune.2021.2160p.mkv"), "{text}");
    assert_eq!(rig.mp.redos().0, 0, "asking redoes nothing");
    rig.post(&tap(2, ALICE, &confirm)).await;
    rig.post(&tap(3, ALICE, &confirm)).await;
    let row = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(row["mp_outcome"], "redone");
    assert_eq!(
        row["mp_redo_dest"],
        "/media/movies/Dune (2021)/Dune (2021).mkv"
    );
    assert_eq!(
        rig.mp.redos(),
        (
            1,
            vec!["/media/movies/Dune (2021)/Dune (2021).mkv".to_string()]
        )
    );
    // The record is gone (MoviePilot filed it under a new id): asking again says so.
    rig.send(4, &format!("/redo {record}")).await;
    let (confirm, question) = redo_question(&rig, 3).await;
    assert!(confirm.is_empty(), "no buttons: {question:?}");
    assert!(
        question["text"].contains(&format!("has no record #{record}")),
        "{question:?}"
    );
    assert_eq!(rig.mp.redos().0, 1);
}

/// SIGKILL right after MoviePilot took the redo: never sent again; held for a person, who sees
/// which file in the job.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_redo_cut_off_by_a_crash_is_held_never_repeated() {
    let rig = Rig::new(Dialect::V2).await;
    let record = rig
        .mp
        .insert_transfer("/downloads/a.mkv", "/media/a/a.mkv", "A");
    let mut bot = rig.start(Some("worker.after_redo_call")).await;
    rig.send(1, &format!("/redo {record}")).await;
    let (confirm, _) = redo_question(&rig, 1).await;
    rig.post(&tap(2, ALICE, &confirm)).await;
    bot.wait_for_stderr(
        "crash point worker.after_redo_call reached",
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(rig.mp.redos().0, 1);
    bot.sigkill().await;
    let _bot = rig.start(None).await;
    let row = rig.job_in(2, "needs_review", RECOVERY_DEADLINE).await;
    assert_eq!(row["mp_redo_dest"], "/media/a/a.mkv");
    assert_eq!(rig.mp.redos().0, 1, "never sent twice");
}

/// A 5xx to the restart is no proof that nothing happened (MoviePilot stops its own work
/// before it restarts): the restart is watched, never sent again.
#[tokio::test]
async fn a_restart_answered_with_a_server_error_is_not_sent_again() {
    use oncebot_tools::sim::moviepilot::Fault;
    let rig = Rig::with(
        Dialect::V2,
        &[("ONCEBOT__COMMANDS__RESTART_WATCH_SECS", "2")],
    )
    .await;
    rig.mp.fail_next(
        routes::RESTART,
        Fault::Status(500, "Internal Server Error".into()),
    );
    let _bot = rig.start(None).await;
    rig.send(1, "/restart").await;
    let (confirm, _) = confirm_button(&rig, 1).await;
    rig.post(&tap(2, ALICE, &confirm)).await;
    let row = rig.job_in(2, "failed", RECOVERY_DEADLINE).await;
    assert_eq!(
        row.get("mp_outcome").map(String::as_str),
        Some("not_restarted"),
        "{row:?}"
    );
    assert_eq!(rig.mp.calls(routes::RESTART), 1, "never sent twice");
    assert_eq!(rig.mp.restarts(), 0);
}

/// MoviePilot refusing the redo: the user reads oncebot's sentence, MoviePilot's words stay in
/// the job for the admins, and nothing is sent again.
#[tokio::test]
async fn a_redo_moviepilot_refuses_fails_in_oncebots_words() {
    use oncebot_tools::sim::moviepilot::Fault;
    let rig = Rig::new(Dialect::V2).await;
    let record = rig
        .mp
        .insert_transfer("/downloads/b.mkv", "/media/b/b.mkv", "B");
    rig.mp.fail_next(
        routes::TRANSFER_MANUAL,
        Fault::Status(
            200,
            r#"{"success":false,"message":"/media/b/b.mkv 删除失败","data":{}}"#.into(),
        ),
    );
    let _bot = rig.start(None).await;
    rig.send(1, &format!("/redo {record}")).await;
    let (confirm, _) = redo_question(&rig, 1).await;
    rig.post(&tap(2, ALICE, &confirm)).await;
    let row = rig.job_in(2, "failed", RECOVERY_DEADLINE).await;
    assert_eq!(
        row["error"],
        format!("MoviePilot did not file record {record} again: /media/b/b.mkv 删除失败")
    );
    let text = &result_of(&rig, 2).await["text"];
    assert_eq!(
        text,
        &format!(
            "Job #2 did not go through: MoviePilot did not file record #{record} again; why is \
             kept in the job for the admins."
        )
    );
    assert_eq!(rig.mp.calls(routes::TRANSFER_MANUAL), 1);
}

/// A refresh of MoviePilot's users every second, so a demotion there shows within a few.
const FAST_REFRESH: (&str, &str) = ("ONCEBOT__MOVIEPILOT__USERS_REFRESH_SECS", "1");

/// Sends `user` `/subscriptions all` (update ids from `*update` on) until the ingress refuses
/// it as an admin's command (the update makes no job): the ingress then decides with a directory
/// that ranks `user` below admin. Each try is answered by the time the webhook's 200 comes.
async fn until_refused_an_admins_command(rig: &Rig, user: i64, update: &mut i64) {
    let next = std::cell::Cell::new(*update);
    eventually(
        &format!("{user} to be refused an admin's command"),
        RECOVERY_DEADLINE,
        || {
            let u = next.get() + 1;
            next.set(u);
            async move {
                rig.post(&private_text(u, user, "/subscriptions all")).await;
                (rig.store.update(u).await.as_deref() == Some("-")).then_some(())
            }
        },
    )
    .await;
    *update = next.get();
}

/// Issue 41, item 2: a right is checked when it is used. An admin (MoviePilot's superuser
/// `boss`) gets the Confirm buttons of `/restart` and `/redo`, is demoted in MoviePilot, and taps
/// them: each tap is refused ("Your role does not allow this button."), no job is made and
/// MoviePilot neither restarts nor files anything again.
#[tokio::test]
async fn an_admins_confirm_is_refused_once_they_are_demoted() {
    let rig = Rig::with(Dialect::V2, &[FAST_REFRESH]).await;
    rig.mp.add_user("boss", true, Some(&ALICE.to_string()));
    rig.mp.add_user("kid", false, Some(&BOB.to_string()));
    rig.mp.set_restart(
        oncebot_tools::sim::moviepilot::RestartMode::Restarts,
        Duration::from_secs(1),
    );
    let record = rig
        .mp
        .insert_transfer("/downloads/a.mkv", "/media/a.mkv", "A");
    let _bot = rig.start_pipeline().await;
    let mut update = 100;
    // Until the ingress follows MoviePilot's mapping, nobody is mapped and everyone is an admin.
    until_refused_an_admins_command(&rig, BOB, &mut update).await;
    let before = rig.store.job_ids().await.len() as u64;
    rig.send(1, "/restart").await;
    let (restart_confirm, _) = confirm_button(&rig, before + 1).await;
    rig.send(2, &format!("/redo {record}")).await;
    let (redo_confirm, _) = redo_question(&rig, before + 2).await;
    assert!(!redo_confirm.is_empty());

    rig.mp.set_superuser("boss", false);
    until_refused_an_admins_command(&rig, ALICE, &mut update).await;
    let jobs = rig.store.job_ids().await.len();
    for (i, data) in [restart_confirm, redo_confirm].iter().enumerate() {
        let tapped = tap(3 + i as i64, ALICE, data);
        rig.post(&tapped).await;
        assert_eq!(
            tap_answer(&rig, &tapped).await,
            "Your role does not allow this button."
        );
    }
    assert_eq!(rig.store.job_ids().await.len(), jobs, "no job");
    assert_eq!(rig.mp.restarts(), 0);
    assert_eq!(rig.mp.redos().0, 0);
}

/// Issue 41, item 2, at the worker: a job of an admin's command asks the directory for its
/// user's role when it runs, not the role it recorded. The Confirm of `/restart` tapped by an
/// admin makes the job; the operator makes them a `user` (`telegram.users`) before a worker
/// runs it: the job is declined, MoviePilot is not restarted, and the user is told why.
#[tokio::test]
async fn a_job_of_an_admins_command_is_declined_when_its_user_is_no_longer_one() {
    let rig = Rig::new(Dialect::V2).await;
    rig.mp.set_restart(
        oncebot_tools::sim::moviepilot::RestartMode::Restarts,
        Duration::from_secs(1),
    );
    let as_admin = format!("{ALICE}=:admin,{BOB}=:user");
    let mut env = rig.env.clone();
    env.push(("ONCEBOT__TELEGRAM__USERS".into(), as_admin));
    let mut first = rig
        .spawn(&["serve", "--role", "ingress", "--role", "worker"], &env)
        .await;
    rig.send(1, "/restart").await;
    let (confirm, _) = confirm_button(&rig, 1).await;
    first.signal("TERM");
    first.wait_exit(RECOVERY_DEADLINE).await;

    // The tap reaches an ingress that still knows ALICE as an admin; no worker runs yet.
    let ingress = rig.spawn(&["serve", "--role", "ingress"], &env).await;
    rig.post(&tap(2, ALICE, &confirm)).await;
    assert_eq!(rig.store.job(2).await["status"], "pending");
    assert_eq!(rig.store.job(2).await["role"], "admin");

    let as_user = format!("{ALICE}=:user,{BOB}=:admin");
    let mut env = rig.env.clone();
    env.push(("ONCEBOT__TELEGRAM__USERS".into(), as_user));
    let _worker = rig.spawn(&["serve", "--role", "worker"], &env).await;
    let row = rig.job_in(2, "failed", RECOVERY_DEADLINE).await;
    assert_eq!(row["mp_error_kind"], "declined", "{row:?}");
    assert_eq!(rig.mp.restarts(), 0);
    assert_eq!(rig.mp.calls(routes::RESTART), 0);
    let result = result_of(&rig, 2).await;
    assert!(
        result["text"].contains("Only an admin can do that."),
        "{result:?}"
    );
    drop(ingress);
}
