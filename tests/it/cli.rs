//! The `oncebot` binary as an operator meets it: a real process, its exit code, stdout (a
//! command's output only, so `--json` pipes) and stderr (logs and the one-line error).
//!
//! Exit codes: 0 done, 1 a failure while running (e.g. no such job), 2 a setting is missing or
//! invalid.

use std::time::Duration;

use oncebot::commands::Command;
use oncebot::ledger::{Admission, AdmissionAction, JobState, Ledger};
use oncebot_tools::redis_server::{Persistence, RedisServer};
use oncebot_tools::sim::moviepilot::{MoviePilotSim, SimOptions};
use oncebot_tools::sim::telegram::TelegramSim;
use redis::AsyncCommands as _;
use serde_json::Value;

use crate::support::app::{run_oncebot, spawn_ledger};
use crate::support::child::Oncebot;
use crate::support::{ALICE, BOB, DEADLINE, SECRET, Store, eventually, private_text};

/// The fields `jobs list --json` and `jobs show --json` promise (the seed's bot_jobs columns,
/// plus id and attempts).
const JOB_FIELDS: [&str; 13] = [
    "id",
    "idempotency_key",
    "update_id",
    "chat_id",
    "user_id",
    "command",
    "args",
    "status",
    "created_at",
    "updated_at",
    "result",
    "error",
    "attempts",
];

async fn admit(ledger: &Ledger, update_id: i64, user: i64, command: Command, args: &str) {
    let a = Admission {
        update_id,
        chat_id: user,
        user_id: user,
        message_id: Some(1),
        thread_id: None,
        requester: None,
        role: oncebot::vocabulary::Role::Admin,
        action: AdmissionAction::Job(command.job(
            oncebot::commands::Asker::of(user, user, None),
            args,
            Duration::from_secs(60),
        )),
    };
    ledger.admit(&a).await.unwrap();
}

fn assert_job_object(v: &Value) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"));
    for field in JOB_FIELDS {
        assert!(obj.contains_key(field), "{field} missing from {v}");
    }
}

/// Three jobs: 1 and 2 from ALICE, 3 from BOB.
async fn three_jobs() -> (RedisServer, Store) {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    admit(&ledger, 11, ALICE, Command::Subscribe, "Dune").await;
    admit(&ledger, 12, ALICE, Command::Search, "Arrival").await;
    admit(&ledger, 13, BOB, Command::Subscriptions, "").await;
    (redis, store)
}

#[tokio::test]
async fn jobs_list_json_prints_one_array_of_jobs_newest_first() {
    let (redis, _store) = three_jobs().await;
    let url = redis.url();

    let out = run_oncebot(
        &["jobs", "list", "--json"],
        &[("ONCEBOT__REDIS__URL", &url)],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let jobs: Value = serde_json::from_str(&out.stdout).unwrap();
    let jobs = jobs.as_array().unwrap();
    let ids: Vec<u64> = jobs.iter().map(|j| j["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, vec![3, 2, 1]);
    jobs.iter().for_each(assert_job_object);
    assert_eq!(jobs[2]["command"], "subscribe");
    assert_eq!(jobs[2]["args"], "Dune");
    assert_eq!(jobs[2]["status"], "pending");
    assert_eq!(jobs[2]["chat_id"], ALICE);
    assert_eq!(jobs[2]["update_id"], 11);
}

#[tokio::test]
async fn jobs_list_filters_by_status_chat_and_limit() {
    let (redis, store) = three_jobs().await;
    let mut conn = store.conn().await;
    let _: () = conn
        .hset(store.keys.job(1), "status", JobState::Failed.as_str())
        .await
        .unwrap();
    let env = [("ONCEBOT__REDIS__URL", &*redis.url())];
    let ids = |out: &str| -> Vec<u64> {
        let v: Value = serde_json::from_str(out).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|j| j["id"].as_u64().unwrap())
            .collect()
    };

    let failed = run_oncebot(&["jobs", "list", "--json", "--status", "failed"], &env).await;
    assert_eq!(ids(&failed.stdout), vec![1]);
    let alice = format!("{ALICE}");
    let chat = run_oncebot(&["jobs", "list", "--json", "--chat", &alice], &env).await;
    assert_eq!(ids(&chat.stdout), vec![2, 1]);
    let one = run_oncebot(&["jobs", "list", "--json", "--limit", "1"], &env).await;
    assert_eq!(ids(&one.stdout), vec![3]);
    let none = run_oncebot(&["jobs", "list", "--json", "--status", "running"], &env).await;
    assert_eq!(ids(&none.stdout), Vec::<u64>::new());
}

#[tokio::test]
async fn jobs_list_without_json_prints_a_table() {
    let (redis, _store) = three_jobs().await;
    let out = run_oncebot(&["jobs", "list"], &[("ONCEBOT__REDIS__URL", &redis.url())]).await;
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", out.stdout);
    assert!(lines[0].contains("STATUS"));
    assert!(lines[3].contains("subscribe") && lines[3].contains("Dune"));
    // Issue 41: the columns line up, the header's and every row's (STATUS and COMMAND were
    // printed without their padding).
    for header in ["STATUS", "COMMAND", "ARGS", "CREATED (UTC)"] {
        let at = lines[0].find(header).unwrap();
        for row in &lines[1..] {
            assert!(
                row[..at].ends_with("  "),
                "{header:?} at {at} in\n{}",
                out.stdout
            );
        }
    }
}

#[tokio::test]
async fn jobs_show_json_prints_one_job_object() {
    let (redis, _store) = three_jobs().await;
    let out = run_oncebot(
        &["jobs", "show", "2", "--json"],
        &[("ONCEBOT__REDIS__URL", &redis.url())],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let job: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_job_object(&job);
    assert_eq!(job["id"], 2);
    assert_eq!(job["command"], "search");
    assert_eq!(job["args"], "Arrival");
    assert_eq!(job["attempts"], 0);
    assert_eq!(job["result"], Value::Null);
}

#[tokio::test]
async fn jobs_show_of_an_unknown_id_exits_1_with_the_reason_on_stderr_only() {
    let (redis, _store) = three_jobs().await;
    let out = run_oncebot(
        &["jobs", "show", "999", "--json"],
        &[("ONCEBOT__REDIS__URL", &redis.url())],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(out.stdout, "");
    assert!(out.stderr.contains("job 999 not found"), "{}", out.stderr);
}

#[tokio::test]
async fn a_bad_setting_exits_2_with_one_line_naming_its_variable() {
    let (redis, _store) = three_jobs().await;
    let out = run_oncebot(
        &["jobs", "list", "--json"],
        &[
            ("ONCEBOT__REDIS__URL", &redis.url()),
            ("ONCEBOT__REDIS__KEY_PREFIX", "a b"),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("ONCEBOT__REDIS__KEY_PREFIX"),
        "{}",
        out.stderr
    );
}

/// MoviePilot's own mapping off: `oncebot users` reads no Redis.
const NO_MP_MAPPING: (&str, &str) = ("ONCEBOT__MOVIEPILOT__USERS_REFRESH_SECS", "0");

/// Issue 22: `oncebot users --json` lists every allowed user with the source of their identity
/// (with MoviePilot's mapping off it needs no Redis), and a bad `telegram.users` exits 2 naming
/// the entry.
#[tokio::test]
async fn users_json_lists_each_allowed_user_and_a_bad_mapping_exits_2() {
    let out = run_oncebot(
        &["users", "--json"],
        &[
            ("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1,2"),
            ("ONCEBOT__TELEGRAM__USERS", "1=alice:viewer"),
            NO_MP_MAPPING,
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let rows: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        rows,
        serde_json::json!([
            {"user_id": 1, "role": "viewer", "requester": "alice", "source": "setting",
             "moviepilot_permissions": null},
            {"user_id": 2, "role": "user", "requester": null, "source": "unmapped",
             "moviepilot_permissions": null},
        ])
    );
    let nobody = run_oncebot(
        &["users", "--json"],
        &[("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1"), NO_MP_MAPPING],
    )
    .await;
    assert!(nobody.stdout.contains("\"nobody_mapped\""), "{nobody:?}");
    let bad = run_oncebot(
        &["users"],
        &[
            ("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1"),
            ("ONCEBOT__TELEGRAM__USERS", "1=alice:boss"),
            NO_MP_MAPPING,
        ],
    )
    .await;
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert_eq!(bad.stdout, "");
    assert!(bad.stderr.contains("\"1=alice:boss\""), "{}", bad.stderr);
}

/// Issue 41, item 1: a `telegram.users` name that cannot be one segment of MoviePilot's paths
/// (`.`, `..`) stops `serve` and `users` at start, exit 2, naming the entry and why; any other
/// name is taken (it is sent percent-encoded).
#[tokio::test]
async fn a_name_that_cannot_be_one_path_segment_exits_2_naming_the_entry() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    for entry in [format!("{ALICE}=..:user"), format!("{ALICE}=.:admin")] {
        for args in [&["users"][..], &["serve"][..]] {
            let mut env = serve_env(&redis.url());
            env.push(("ONCEBOT__TELEGRAM__USERS", entry.clone()));
            env.push((NO_MP_MAPPING.0, NO_MP_MAPPING.1.into()));
            let out = run_oncebot(args, &as_refs(&env)).await;
            assert_eq!(out.status.code(), Some(2), "{args:?} {entry}: {out:?}");
            assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
            assert!(out.stderr.contains(&format!("{entry:?}")), "{}", out.stderr);
            assert!(out.stderr.contains("one segment"), "{}", out.stderr);
        }
    }
    let fine = run_oncebot(
        &["users", "--json"],
        &[
            ("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1"),
            ("ONCEBOT__TELEGRAM__USERS", "1=..\\..\\system\\restart:user"),
            NO_MP_MAPPING,
        ],
    )
    .await;
    assert_eq!(fine.status.code(), Some(0), "{fine:?}");
    assert!(fine.stdout.contains("system"), "{}", fine.stdout);
}

#[tokio::test]
async fn jobs_list_with_redis_unreachable_exits_1_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redis+unix://{}/absent.sock", dir.path().display());
    let out = run_oncebot(&["jobs", "list"], &[("ONCEBOT__REDIS__URL", &url)]).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("Redis is unavailable"),
        "{}",
        out.stderr
    );
    // The cause is said once, not once per layer that carries it.
    assert_eq!(
        out.stderr.matches("(os error 2)").count(),
        1,
        "{}",
        out.stderr
    );
}

/// Issue 22: with Redis not answering, `oncebot users` still prints the setting's view and
/// fails, saying MoviePilot's mapping could not be read.
#[tokio::test]
async fn users_with_redis_unreachable_lists_the_setting_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redis+unix://{}/absent.sock", dir.path().display());
    let out = run_oncebot(
        &["users", "--json"],
        &[
            ("ONCEBOT__REDIS__URL", &url),
            ("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1,2"),
            ("ONCEBOT__TELEGRAM__USERS", "1=alice:viewer"),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let rows: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(rows[0]["source"], "setting", "{rows}");
    assert_eq!(rows[1]["source"], "unmapped", "{rows}");
    assert!(
        out.stderr
            .contains("MoviePilot's user mapping could not be read from Redis"),
        "{}",
        out.stderr
    );
}

/// The environment `oncebot serve` needs, against `redis_url`, listening on port 0 (the child's
/// log says which port it got: `Oncebot::http_addr`).
fn serve_env(redis_url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("ONCEBOT__REDIS__URL", redis_url.to_string()),
        ("ONCEBOT__HTTP__LISTEN", "127.0.0.1:0".into()),
        (
            "ONCEBOT__TELEGRAM__TOKEN",
            "123456:TEST-token_for-oncebot".into(),
        ),
        ("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", SECRET.into()),
        ("ONCEBOT__TELEGRAM__ALLOWED_USERS", format!("{ALICE},{BOB}")),
    ]
}

/// `serve_env` plus simulated MoviePilot and Bot API servers for the worker and dispatcher
/// roles (all roles run).
async fn full_serve_env(
    redis_url: &str,
) -> ((MoviePilotSim, TelegramSim), Vec<(&'static str, String)>) {
    let sim = MoviePilotSim::start(SimOptions::v2_5_6()).await;
    let tg = TelegramSim::start().await.unwrap();
    let mut env = serve_env(redis_url);
    env.retain(|(k, _)| *k != "ONCEBOT__TELEGRAM__TOKEN");
    env.push(("ONCEBOT__TELEGRAM__TOKEN", tg.token()));
    env.push(("ONCEBOT__TELEGRAM__API_URL", tg.url()));
    env.push(("ONCEBOT__MOVIEPILOT__URL", sim.url()));
    env.push((
        "ONCEBOT__MOVIEPILOT__USERNAME",
        sim.options().username.clone(),
    ));
    env.push((
        "ONCEBOT__MOVIEPILOT__PASSWORD",
        sim.options().password.clone(),
    ));
    ((sim, tg), env)
}

fn owned(env: &[(&'static str, String)]) -> Vec<(String, String)> {
    env.iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn as_refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[tokio::test]
async fn serve_answers_its_probes_admits_updates_and_exits_0_on_sigterm() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let (_mp, env) = full_serve_env(&redis.url()).await;
    let mut child = Oncebot::spawn(&["serve"], &owned(&env));
    let base = child.url("").await;
    let http = reqwest::Client::new();

    eventually("/healthz to answer 200", DEADLINE, || {
        let req = http.get(format!("{base}/healthz")).send();
        async move { req.await.ok().filter(|r| r.status() == 200).map(|_| ()) }
    })
    .await;
    let ready = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);

    let resp = http
        .post(format!("{base}/telegram/webhook"))
        .header("x-telegram-bot-api-secret-token", SECRET)
        .json(&private_text(1, ALICE, "/subscribe Dune"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "");
    let store = Store::new(&redis.url(), "oncebot");
    // The worker role may already have run it; the ledger has it either way.
    assert_eq!(store.job_ids().await, [1].into());

    child.signal("TERM");
    let status = child.wait_exit(DEADLINE).await;
    assert_eq!(status.code(), Some(0), "stderr:\n{}", child.stderr());
    assert!(
        http.get(format!("{base}/healthz")).send().await.is_err(),
        "nothing listens after shutdown"
    );
}

#[tokio::test]
async fn serve_finishes_a_request_in_flight_on_sigterm_then_exits_0() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let mut env = serve_env(&redis.url());
    // The request is held in Redis below; it must not time out meanwhile.
    env.push(("ONCEBOT__REDIS__COMMAND_TIMEOUT_MS", "10000".into()));
    let mut child = Oncebot::spawn(&["serve", "--role", "ingress"], &owned(&env));
    let addr = child.http_addr().await;
    let base = format!("http://{addr}");
    let http = reqwest::Client::new();
    wait_ready(&http, &base).await;

    // Hold every write in Redis, so the next admission is provably in flight.
    let store = Store::new(&redis.url(), "oncebot");
    let mut conn = store.conn().await;
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(30_000)
        .arg("WRITE")
        .query_async(&mut conn)
        .await
        .unwrap();
    let request = http
        .post(format!("{base}/telegram/webhook"))
        .header("x-telegram-bot-api-secret-token", SECRET)
        .json(&private_text(1, ALICE, "/subscribe Dune"))
        .send();
    let in_flight = tokio::spawn(request);
    eventually(
        "the admission script to wait in Redis",
        DEADLINE,
        || async {
            let clients: String = redis::cmd("CLIENT")
                .arg("LIST")
                .query_async(&mut store.conn().await)
                .await
                .unwrap();
            clients
                .lines()
                .any(|c| c.contains("cmd=evalsha") && c.contains(" flags=b"))
                .then_some(())
        },
    )
    .await;

    child.signal("TERM");
    // It stops accepting at once...
    eventually("the listener to close", DEADLINE, || async move {
        tokio::net::TcpStream::connect(addr)
            .await
            .is_err()
            .then_some(())
    })
    .await;
    // ...but the request in flight is finished and answered once Redis takes it.
    let _: () = redis::cmd("CLIENT")
        .arg("UNPAUSE")
        .query_async(&mut conn)
        .await
        .unwrap();
    let resp = in_flight.await.unwrap().unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "");
    let status = child.wait_exit(DEADLINE).await;
    assert_eq!(status.code(), Some(0), "stderr:\n{}", child.stderr());
    assert_eq!(store.jobs_on_stream().await, vec![1]);
}

#[tokio::test]
async fn serve_exits_0_on_sigint() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let (_mp, env) = full_serve_env(&redis.url()).await;
    let mut child = Oncebot::spawn(&["serve"], &owned(&env));
    wait_ready(&reqwest::Client::new(), &child.url("").await).await;

    child.signal("INT");
    let status = child.wait_exit(DEADLINE).await;
    assert_eq!(status.code(), Some(0), "stderr:\n{}", child.stderr());
}

async fn wait_ready(http: &reqwest::Client, base: &str) {
    eventually("/readyz to answer 200", DEADLINE, || {
        let req = http.get(format!("{base}/readyz")).send();
        async move { req.await.ok().filter(|r| r.status() == 200).map(|_| ()) }
    })
    .await;
}

#[tokio::test]
async fn serve_without_a_webhook_secret_exits_2_with_one_line_naming_it() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let mut env = serve_env(&redis.url());
    env.retain(|(k, _)| *k != "ONCEBOT__TELEGRAM__WEBHOOK_SECRET");
    let out = run_oncebot(&["serve"], &as_refs(&env)).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("ONCEBOT__TELEGRAM__WEBHOOK_SECRET"),
        "{}",
        out.stderr
    );
}

/// Issue 41, item 3: at `RUST_LOG=trace`, with every door used (the webhook with its secret and
/// a wrong one, the relay's wake-up path with its secret by POST and by GET, a site cookie in
/// the body and the query, the operator page signed in to, MoviePilot logged in to), no secret
/// of the configuration and no cookie reaches the log. warp's path filters logged the wake-up
/// secret 30,049 times.
/// Issue 41, item 3: a webhook secret (Telegram's or the relay's) under 16 characters stops
/// `serve` with one line naming the variable and how to make one.
#[tokio::test]
async fn a_secret_under_16_characters_exits_2_naming_it_and_the_fix() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    for (var, extra) in [
        ("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", vec![]),
        (
            "ONCEBOT__NOTIFY__WEBHOOK_SECRET",
            vec![
                ("ONCEBOT__NOTIFY__ENABLED", "true".to_string()),
                ("ONCEBOT__TELEGRAM__ADMIN_CHATS", ALICE.to_string()),
                ("ONCEBOT__MOVIEPILOT__URL", "http://127.0.0.1:9".to_string()),
                ("ONCEBOT__MOVIEPILOT__API_KEY", "key".to_string()),
            ],
        ),
    ] {
        let mut env = serve_env(&redis.url());
        env.extend(extra);
        env.retain(|(k, _)| *k != var);
        env.push((var, "x".repeat(15)));
        let out = run_oncebot(&["serve"], &as_refs(&env)).await;
        assert_eq!(out.status.code(), Some(2), "{var}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(var), "{}", out.stderr);
        assert!(out.stderr.contains("fewer than the 16"), "{}", out.stderr);
        assert!(
            out.stderr.contains("openssl rand -hex 32"),
            "{}",
            out.stderr
        );
    }
}

#[tokio::test]
async fn serve_never_prints_its_secrets() {
    const WAKE: &str = "wake-secret_for-the-trace-test-01";
    const ADMIN: &str = "admin-page-password-for-trace-02";
    const COOKIE: &str = "uid=4242; pass=trace-cookie-marker-7c1e";
    let redis = RedisServer::start(Persistence::None).unwrap();
    let (_mp, mut env) = full_serve_env(&redis.url()).await;
    env.push(("RUST_LOG", "trace".into()));
    env.push(("ONCEBOT__NOTIFY__ENABLED", "true".into()));
    env.push(("ONCEBOT__NOTIFY__WEBHOOK_SECRET", WAKE.into()));
    env.push(("ONCEBOT__TELEGRAM__ADMIN_CHATS", ALICE.to_string()));
    env.push(("ONCEBOT__ADMIN__PASSWORD", ADMIN.into()));
    let mut child = Oncebot::spawn(&["serve"], &owned(&env));
    let base = child.url("").await;
    let http = reqwest::Client::new();
    wait_ready(&http, &base).await;
    for secret in ["guess-guess-guess-guess", SECRET] {
        let resp = http
            .post(format!("{base}/telegram/webhook"))
            .header("x-telegram-bot-api-secret-token", secret)
            .json(&private_text(1, ALICE, "/jobs"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), if secret == SECRET { 200 } else { 401 });
    }
    let cookie = oncebot_tools::sim::moviepilot::download_added_payload(COOKIE);
    for (secret, want) in [(WAKE, 204), ("not-the-wake-secret-0", 404)] {
        for get in [false, true] {
            let url = format!("{base}/moviepilot/notify/{secret}");
            let got = oncebot_tools::sim::moviepilot::send_webhook(&url, &cookie, get)
                .await
                .unwrap();
            assert_eq!(got, want, "{secret} get={get}");
        }
    }
    let page = http
        .get(format!("{base}/admin/"))
        .basic_auth("admin", Some(ADMIN))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    // The reply to /jobs went out through the Bot API (its URL holds the token).
    child.wait_for_stderr("reply sent", DEADLINE).await;

    child.signal("TERM");
    assert_eq!(child.wait_exit(DEADLINE).await.code(), Some(0));
    let stderr = child.stderr();
    // Trace logging is on, down to warp's path filters: the test would see a secret there.
    assert!(
        stderr.contains("warp::filters::path"),
        "no trace lines of warp's"
    );
    for (k, v) in &env {
        if k.contains("SECRET") || k.contains("TOKEN") || k.contains("PASSWORD") {
            assert!(
                !stderr.contains(v.as_str()),
                "{k} appears in the logs:\n{stderr}"
            );
        }
    }
    assert!(
        !stderr.contains("trace-cookie-marker"),
        "the site cookie appears in the logs"
    );
}
