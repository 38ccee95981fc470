//! Issue 22, "Who asked": MoviePilot's own Telegram mapping (each MoviePilot user's
//! `telegram_userid`) through a real oncebot, the fake MoviePilot's user table and a private
//! Redis: the roles it gives, the setting winning, the allow-list deciding, a removal reaching
//! every process at the next refresh, and a service account that is no superuser.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use oncebot::moviepilot::{Dialect, ListUsersError, MoviePilot, MpPermissions};
use oncebot_tools::sim::moviepilot::{
    Fault, MoviePilotSim, SimOptions, migrated_permissions, routes,
};
use serde_json::{Value, json};

use crate::support::app::run_oncebot;
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, MALLORY, eventually, login_settings, private_text};

/// A refresh every second, so a change in MoviePilot shows within a few.
const FAST_REFRESH: (&str, &str) = ("ONCEBOT__MOVIEPILOT__USERS_REFRESH_SECS", "1");

/// How long a change in MoviePilot may take to reach the ingress: a refresh (1 s, its turn
/// asked every 250 ms) plus a follow (2 s), with room for a loaded machine.
const REACHES_INGRESS: Duration = Duration::from_secs(15);

/// `oncebot users --json` against the rig's Redis, by Telegram id: (role, requester, source).
async fn users_listed(rig: &Rig) -> BTreeMap<i64, (String, Option<String>, String)> {
    let env: Vec<(&str, &str)> = rig
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let out = run_oncebot(&["users", "--json"], &env).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let rows: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    rows.iter()
        .map(|r| {
            (
                r["user_id"].as_i64().unwrap(),
                (
                    r["role"].as_str().unwrap().to_string(),
                    r["requester"].as_str().map(str::to_string),
                    r["source"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

fn row(role: &str, requester: Option<&str>, source: &str) -> (String, Option<String>, String) {
    (
        role.to_string(),
        requester.map(str::to_string),
        source.to_string(),
    )
}

/// Waits until `oncebot users --json` lists exactly `want`.
async fn users_become(rig: &Rig, want: &BTreeMap<i64, (String, Option<String>, String)>) {
    eventually(
        "oncebot users to list the mapping",
        REACHES_INGRESS,
        || async {
            let got = users_listed(rig).await;
            (&got == want).then_some(())
        },
    )
    .await;
}

/// `oncebot_users_mapped{source}` as the serving process's `/metrics` says it: what its
/// ingress decides with.
async fn mapped_in_ingress(rig: &Rig, source: &str) -> Option<f64> {
    let text = rig
        .http
        .get(rig.url("/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let key = format!("oncebot_users_mapped{{source=\"{source}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&key))
        .and_then(|v| v.trim().parse().ok())
}

/// Waits until the ingress maps `n` users by MoviePilot's mapping.
async fn ingress_maps(rig: &Rig, n: f64) {
    eventually(
        "the ingress to follow the mapping",
        REACHES_INGRESS,
        || async { (mapped_in_ingress(rig, "moviepilot").await == Some(n)).then_some(()) },
    )
    .await;
}

/// Waits until `user` was told `text`.
async fn told(rig: &Rig, user: i64, text: &str) {
    eventually(
        &format!("{user} to be told {text:?}"),
        RECOVERY_DEADLINE,
        || {
            let sent = rig.tg.sent();
            async move {
                sent.iter()
                    .any(|m| m.chat_id == user && m.text.contains(text))
                    .then_some(())
            }
        },
    )
    .await;
}

/// A MoviePilot superuser is an admin, any other user a `user`, each acting as their MoviePilot
/// name; shown as `moviepilot` by `oncebot users`, and the roles hold at admission: the mapped
/// `user` is refused `/subscriptions all`, the mapped admin runs it.
#[tokio::test]
async fn moviepilot_users_map_superusers_to_admin_and_others_to_user() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = Rig::with(dialect, &[FAST_REFRESH]).await;
        rig.mp.add_user("alice", false, Some(&ALICE.to_string()));
        rig.mp.add_user("bob", true, Some(&BOB.to_string()));
        let _bot = rig.start_pipeline().await;
        users_become(
            &rig,
            &BTreeMap::from([
                (ALICE, row("user", Some("alice"), "moviepilot")),
                (BOB, row("admin", Some("bob"), "moviepilot")),
            ]),
        )
        .await;
        ingress_maps(&rig, 2.0).await;
        rig.send(1, "/subscriptions all").await;
        told(&rig, ALICE, "Only an admin can do that.").await;
        assert!(rig.store.jobs_on_stream().await.is_empty(), "{dialect}");
        rig.post(&private_text(2, BOB, "/subscriptions all")).await;
        let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
        // The job records whom it acts for, as MoviePilot's mapping named him.
        assert_eq!(
            job.get("requester").map(String::as_str),
            Some("bob"),
            "{job:?}"
        );
        assert_eq!(
            job.get("role").map(String::as_str),
            Some("admin"),
            "{job:?}"
        );
        assert!(rig.mp.calls(routes::USERS) >= 1);
    }
}

/// Issue 43, rights from MoviePilot and never above them: a MoviePilot user whose `subscribe` is
/// off is a `viewer` (refused a subscription and a resource search, MoviePilot never asked), one
/// whose `permissions` is `{}` (as an older web UI or the API saves it) a `user` who subscribes,
/// and `manage` alone makes a `user`, not an admin. `oncebot users --json` shows the permissions
/// read, in a field of their own.
#[tokio::test]
async fn moviepilots_permissions_decide_the_role_never_above_them() {
    const CAROL: i64 = 1003;
    let allowed = format!("{ALICE},{BOB},{CAROL}");
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = Rig::with(
            dialect,
            &[FAST_REFRESH, ("ONCEBOT__TELEGRAM__ALLOWED_USERS", &allowed)],
        )
        .await;
        rig.mp.add_user("kid", false, Some(&ALICE.to_string()));
        let mut kid = migrated_permissions();
        kid["subscribe"] = json!(false);
        rig.mp.set_user_permissions("kid", kid);
        rig.mp.add_user("plain", false, Some(&BOB.to_string()));
        rig.mp.add_user("manager", false, Some(&CAROL.to_string()));
        rig.mp
            .set_user_permissions("manager", json!({"manage": true}));
        let _bot = rig.start_pipeline().await;
        users_become(
            &rig,
            &BTreeMap::from([
                (ALICE, row("viewer", Some("kid"), "moviepilot")),
                (BOB, row("user", Some("plain"), "moviepilot")),
                (CAROL, row("user", Some("manager"), "moviepilot")),
            ]),
        )
        .await;
        ingress_maps(&rig, 3.0).await;

        rig.send(1, "/subscribe tmdb:108545 S1").await;
        rig.send(2, "/download tmdb:108545 S1").await;
        eventually("both refused", RECOVERY_DEADLINE, || {
            let sent = rig.tg.sent();
            async move {
                let refused = sent
                    .iter()
                    .filter(|m| m.chat_id == ALICE && m.text.contains("You can only look"))
                    .count();
                (refused == 2).then_some(())
            }
        })
        .await;
        assert!(rig.store.jobs_on_stream().await.is_empty(), "{dialect}");

        rig.post(&private_text(3, BOB, "/subscribe tmdb:108545 S1"))
            .await;
        let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(job.get("role").map(String::as_str), Some("user"), "{job:?}");
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1, "{dialect}");
        assert_eq!(rig.mp.calls(routes::RESOURCE_SEARCH), 0, "{dialect}");
        rig.post(&private_text(4, CAROL, "/subscriptions all"))
            .await;
        told(&rig, CAROL, "Only an admin can do that.").await;

        let listed = listed_permissions(&rig).await;
        assert_eq!(listed[&ALICE]["subscribe"], json!(false), "{listed:?}");
        assert_eq!(listed[&ALICE]["superuser"], json!(false), "{listed:?}");
        assert_eq!(listed[&BOB]["subscribe"], json!(true), "{listed:?}");
        assert_eq!(listed[&CAROL]["manage"], json!(true), "{listed:?}");
    }
}

/// `oncebot users --json`'s `moviepilot_permissions` by Telegram id.
async fn listed_permissions(rig: &Rig) -> BTreeMap<i64, Value> {
    let env: Vec<(&str, &str)> = rig
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let out = run_oncebot(&["users", "--json"], &env).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let rows: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    rows.into_iter()
        .map(|r| {
            (
                r["user_id"].as_i64().unwrap(),
                r["moviepilot_permissions"].clone(),
            )
        })
        .collect()
}

/// Both sources agree where they map different ids, and the setting wins where both map one;
/// an id MoviePilot maps that is not in `telegram.allowed_users` stays refused.
#[tokio::test]
async fn the_setting_wins_over_moviepilot_which_adds_nobody_to_the_allowed_users() {
    let users = format!("{ALICE}=alice:viewer");
    let rig = Rig::with(
        Dialect::V2,
        &[FAST_REFRESH, ("ONCEBOT__TELEGRAM__USERS", &users)],
    )
    .await;
    // MoviePilot maps Alice too (as a superuser), Bob, and Mallory, who is not allowed.
    rig.mp.add_user("alice-mp", true, Some(&ALICE.to_string()));
    rig.mp.add_user("bob", true, Some(&BOB.to_string()));
    rig.mp.add_user("mallory", true, Some(&MALLORY.to_string()));
    let _bot = rig.start_pipeline().await;
    users_become(
        &rig,
        &BTreeMap::from([
            (ALICE, row("viewer", Some("alice"), "setting")),
            (BOB, row("admin", Some("bob"), "moviepilot")),
        ]),
    )
    .await;
    ingress_maps(&rig, 1.0).await;
    assert_eq!(mapped_in_ingress(&rig, "setting").await, Some(1.0));
    // The setting's viewer may not subscribe, whatever MoviePilot says of her.
    rig.send(1, "/subscribe tmdb:108545 S1").await;
    told(&rig, ALICE, "You can only look").await;
    // Mallory is a MoviePilot superuser, and still not allowed.
    rig.post(&private_text(2, MALLORY, "/subscriptions all"))
        .await;
    told(&rig, MALLORY, "not allowed to use this bot").await;
    assert!(rig.store.jobs_on_stream().await.is_empty());
}

/// A MoviePilot user removed while oncebot runs, or whose `telegram_userid` is cleared, loses
/// the mapping at the next refresh: in `oncebot users` and at admission.
#[tokio::test]
async fn a_moviepilot_user_removed_while_running_loses_the_mapping_at_the_next_refresh() {
    // Someone stays mapped by the setting, so the unmapped are `user`s (not everyone an admin).
    let users = format!("{BOB}=bob:viewer");
    let rig = Rig::with(
        Dialect::V2,
        &[FAST_REFRESH, ("ONCEBOT__TELEGRAM__USERS", &users)],
    )
    .await;
    rig.mp.add_user("alice", true, Some(&ALICE.to_string()));
    let bot = rig.start_pipeline().await;
    ingress_maps(&rig, 1.0).await;
    rig.send(1, "/subscriptions all").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;

    rig.mp.remove_user("alice");
    let unmapped = BTreeMap::from([
        (ALICE, row("user", None, "unmapped")),
        (BOB, row("viewer", Some("bob"), "setting")),
    ]);
    users_become(&rig, &unmapped).await;
    ingress_maps(&rig, 0.0).await;
    bot.wait_for_stderr("MoviePilot's mapping: removed", REACHES_INGRESS)
        .await;
    rig.send(2, "/subscriptions all").await;
    told(&rig, ALICE, "Only an admin can do that.").await;

    // Back, then her telegram_userid cleared in MoviePilot: the same.
    rig.mp.add_user("alice", true, Some(&ALICE.to_string()));
    ingress_maps(&rig, 1.0).await;
    rig.mp.set_telegram_userid("alice", None);
    users_become(&rig, &unmapped).await;
    ingress_maps(&rig, 0.0).await;
    // A disabled MoviePilot user maps nobody either.
    rig.mp
        .set_telegram_userid("alice", Some(&ALICE.to_string()));
    ingress_maps(&rig, 1.0).await;
    rig.mp.set_user_active("alice", false);
    ingress_maps(&rig, 0.0).await;
}

/// MoviePilot failing (502s) while oncebot runs leaves the last mapping standing; the failure
/// is logged at warn once for the run of them, and the next good read says it is over.
#[tokio::test]
async fn moviepilot_failing_leaves_the_last_mapping_standing() {
    let rig = Rig::with(Dialect::V2, &[FAST_REFRESH]).await;
    rig.mp.add_user("bob", true, Some(&BOB.to_string()));
    let bot = rig.start_pipeline().await;
    ingress_maps(&rig, 1.0).await;
    for _ in 0..3 {
        rig.mp.fail_next(
            routes::USERS,
            Fault::Status(502, "<html>Bad Gateway</html>".into()),
        );
    }
    bot.wait_for_stderr("MoviePilot's users are readable again", REACHES_INGRESS)
        .await;
    let failed = "reading MoviePilot's users failed; the mapping stays as it was";
    let log = bot.stderr();
    assert_eq!(log.matches(failed).count(), 1, "{log}");
    assert!(!log.contains("MoviePilot's mapping: removed"), "{log}");
    assert_eq!(mapped_in_ingress(&rig, "moviepilot").await, Some(1.0));
    // The next good read after a removal does remove.
    rig.mp.remove_user("bob");
    ingress_maps(&rig, 0.0).await;
}

/// Roles in separate processes: an ingress of its own and two workers. The workers read
/// MoviePilot's users one at a time, once per interval between them (not once each), and a
/// change reaches the ingress through Redis.
#[tokio::test]
async fn a_split_deployment_reads_once_per_interval_and_the_ingress_follows_through_redis() {
    let rig = Rig::with(Dialect::V2, &[FAST_REFRESH]).await;
    rig.mp.add_user("alice", false, Some(&ALICE.to_string()));
    let _ingress = rig.start_roles(&["ingress"], None).await;
    let _w1 = rig.start_worker_only().await;
    let _w2 = rig.start_worker_only().await;
    ingress_maps(&rig, 1.0).await;
    // Each read begins at least an interval (1 s, Redis's clock) after the one before, whoever
    // makes it: four more reads span at least three intervals. Two workers reading each on
    // their own would make them in about half that.
    let first = rig.mp.calls(routes::USERS);
    let began = std::time::Instant::now();
    eventually("four more reads", REACHES_INGRESS, || async {
        (rig.mp.calls(routes::USERS) >= first + 4).then_some(())
    })
    .await;
    assert!(
        began.elapsed() >= Duration::from_millis(2_500),
        "{:?} for four reads",
        began.elapsed()
    );
    rig.mp.remove_user("alice");
    ingress_maps(&rig, 0.0).await;
    rig.send(1, "/subscriptions all").await;
    // Nobody is mapped any more: every allowed user is an admin again, as before.
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
}

/// oncebot's MoviePilot account is no superuser: MoviePilot refuses the list, the worker says
/// why once at warn (not at every refresh), and `telegram.users` alone maps users.
#[tokio::test]
async fn a_service_account_that_is_no_superuser_leaves_the_setting_alone_and_warns_once() {
    let users = format!("{BOB}=bob:admin");
    let opts = SimOptions {
        superuser: false,
        ..SimOptions::v2_5_6()
    };
    let rig = Rig::with_sim(opts, &[FAST_REFRESH, ("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    rig.mp.add_user("alice", true, Some(&ALICE.to_string()));
    let bot = rig.start_pipeline().await;
    let warning = "MoviePilot's own user mapping cannot be read";
    bot.wait_for_stderr(warning, REACHES_INGRESS).await;
    // Several refreshes later, still one warning.
    let calls = rig.mp.calls(routes::USERS);
    eventually("three more refreshes", REACHES_INGRESS, || async {
        (rig.mp.calls(routes::USERS) >= calls + 3).then_some(())
    })
    .await;
    assert_eq!(bot.stderr().matches(warning).count(), 1, "{}", bot.stderr());
    assert!(bot.stderr().contains("not a superuser"), "{}", bot.stderr());
    assert_eq!(
        users_listed(&rig).await,
        BTreeMap::from([
            (ALICE, row("user", None, "unmapped")),
            (BOB, row("admin", Some("bob"), "setting")),
        ])
    );
    let env: Vec<(&str, &str)> = rig
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let table = run_oncebot(&["users"], &env).await;
    assert!(table.stdout.contains("not a superuser"), "{table:?}");
    assert_eq!(mapped_in_ingress(&rig, "moviepilot").await, Some(0.0));
}

/// The client reads `GET /api/v1/user/` in both dialects (a bare array; v3's envelope) and
/// tells a refusal to a non-superuser apart from any other failure.
#[tokio::test]
async fn list_users_reads_both_dialects_and_names_a_non_superuser_refusal() {
    for opts in [SimOptions::v2_5_6(), SimOptions::v3()] {
        let sim = MoviePilotSim::start(opts.clone()).await;
        sim.add_user("bob", false, Some("222"));
        sim.add_user("carol", false, Some(""));
        sim.set_user_permissions("carol", json!({"subscribe": false, "manage": null}));
        sim.add_user("dave", false, None);
        sim.set_user_permissions("dave", Value::Null);
        let mp = MoviePilot::connect(&login_settings(&sim)).await.unwrap();
        let users = mp.list_users().await.unwrap();
        let got: Vec<_> = users
            .iter()
            .map(|u| (u.name.as_str(), u.is_superuser, u.telegram_userid))
            .collect();
        assert_eq!(
            got,
            vec![
                ("admin", true, None),
                ("bob", false, Some(222)),
                ("carol", false, None),
                ("dave", false, None)
            ],
            "{:?}",
            opts.dialect
        );
        // `permissions` over the wire, as MoviePilot's web UI reads it: `{}` and `null` the
        // defaults, a key left out or `null` its default.
        let permissions: Vec<_> = users.iter().map(|u| u.permissions).collect();
        let no_subscribe = MpPermissions {
            subscribe: false,
            ..MpPermissions::DEFAULT
        };
        assert_eq!(
            permissions,
            vec![
                MpPermissions::DEFAULT,
                MpPermissions::DEFAULT,
                no_subscribe,
                MpPermissions::DEFAULT
            ]
        );

        let plain = MoviePilotSim::start(SimOptions {
            superuser: false,
            ..opts.clone()
        })
        .await;
        let mp = MoviePilot::connect(&login_settings(&plain)).await.unwrap();
        match mp.list_users().await {
            Err(ListUsersError::NotSuperuser(why)) => {
                assert!(why.contains("not a superuser"), "{why}");
                assert!(why.contains("telegram.users"), "{why}");
            }
            other => panic!("{:?}: {other:?}", opts.dialect),
        }
    }
}

/// Issue 41, item 1: a MoviePilot user name goes into oncebot's MoviePilot calls as one path
/// segment (everything but RFC 3986's unreserved characters percent-encoded), never as a path
/// of its own: `..\..\system\restart` once made `/subscriptions` restart MoviePilot. A name
/// that cannot be one segment (`.`, `..`) is skipped with one warning naming the user, and
/// never sent. MoviePilot's own log shows each usable name only as
/// `/api/v1/subscribe/user/<encoded>`.
#[tokio::test]
async fn a_moviepilot_name_is_one_segment_of_oncebots_calls_never_a_path() {
    let long = "n".repeat(300);
    // (name, its segment as it must reach MoviePilot; None: never sent)
    let names: [(&str, Option<&str>); 9] = [
        (
            "..\\..\\system\\restart",
            Some("..%5C..%5Csystem%5Crestart"),
        ),
        ("..", None),
        (".", None),
        ("a/b", Some("a%2Fb")),
        ("a\\b", Some("a%5Cb")),
        ("a?b", Some("a%3Fb")),
        ("a#b", Some("a%23b")),
        ("%2e%2e", Some("%252e%252e")),
        (&long, Some(&long)),
    ];
    let ids: Vec<i64> = (0..names.len() as i64).map(|i| 5000 + i).collect();
    let allowed: Vec<String> = ids.iter().map(ToString::to_string).collect();
    let allowed = allowed.join(",");
    let rig = Rig::with(
        Dialect::V2,
        &[FAST_REFRESH, ("ONCEBOT__TELEGRAM__ALLOWED_USERS", &allowed)],
    )
    .await;
    for ((name, _), id) in names.iter().zip(&ids) {
        rig.mp.add_user(name, false, Some(&id.to_string()));
    }
    let bot = rig.start_pipeline().await;
    let want: BTreeMap<_, _> = names
        .iter()
        .zip(&ids)
        .map(|((name, segment), id)| {
            let listed = match segment {
                Some(_) => row("user", Some(name), "moviepilot"),
                None => row("user", None, "unmapped"),
            };
            (*id, listed)
        })
        .collect();
    users_become(&rig, &want).await;
    ingress_maps(&rig, 7.0).await;
    for (i, id) in ids.iter().enumerate() {
        rig.post(&private_text(i as i64 + 1, *id, "/subscriptions"))
            .await;
    }
    for job in 1..=ids.len() as u64 {
        rig.job_in(job, "succeeded", RECOVERY_DEADLINE).await;
    }
    let paths = rig.mp.paths();
    assert_eq!(
        rig.mp.calls(routes::RESTART),
        0,
        "a name reached the restart route: {paths:#?}"
    );
    let sent: BTreeSet<&str> = paths
        .iter()
        .filter_map(|p| p.strip_prefix("GET /api/v1/subscribe/user/"))
        .collect();
    let expected: BTreeSet<&str> = names.iter().filter_map(|(_, s)| *s).collect();
    assert_eq!(sent, expected);
    // Every request went to a route MoviePilot has, under /api/v1: no name escaped its segment.
    assert_eq!(rig.mp.unrouted(), Vec::<String>::new(), "{paths:#?}");
    // One warning per skipped user, naming them, however many refreshes run.
    let calls = rig.mp.calls(routes::USERS);
    eventually("three more refreshes", REACHES_INGRESS, || async {
        (rig.mp.calls(routes::USERS) >= calls + 3).then_some(())
    })
    .await;
    let log = bot.stderr();
    let skipped: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("MoviePilot's mapping entry skipped"))
        .collect();
    assert_eq!(skipped.len(), 2, "{log}");
    assert!(skipped.iter().any(|l| l.contains("moviepilot_user=\"..\"")));
    assert!(skipped.iter().any(|l| l.contains("moviepilot_user=\".\"")));
}
