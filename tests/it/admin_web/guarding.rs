//! The page against a guesser and a forger (issue 25, items 4 to 6): a short password stops
//! start-up, guesses from one peer are slowed after five misses (another peer is not), misses
//! are logged with the peer at most once a second, credentials are checked before a form body is
//! read, and a decision's origin must match in scheme, host and port (`admin.public_url` behind
//! a TLS proxy).

use std::net::IpAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::{PASSWORD, USER, csrf_of, deploy};
use crate::support::app::{child_env, run_oncebot};
use crate::support::child::Oncebot;
use crate::support::{ALICE, DEADLINE, SECRET, eventually};

#[tokio::test]
async fn a_password_shorter_than_16_characters_stops_start_up_saying_how_to_make_one() {
    let redis = oncebot_tools::redis_server::RedisServer::start(
        oncebot_tools::redis_server::Persistence::None,
    )
    .unwrap();
    let url = redis.url();
    // It stops at the password, before it would bind.
    let out = run_oncebot(
        &["serve", "--role", "ingress"],
        &[
            ("ONCEBOT__REDIS__URL", &url),
            ("ONCEBOT__HTTP__LISTEN", "127.0.0.1:0"),
            ("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", SECRET),
            ("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1001"),
            ("ONCEBOT__ADMIN__PASSWORD", "short-pw-MARKER"),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    for said in [
        "ONCEBOT__ADMIN__PASSWORD",
        "16 characters",
        "openssl rand -base64 24",
    ] {
        assert!(out.stderr.contains(said), "{said}: {}", out.stderr);
    }
    assert!(!out.stderr.contains("short-pw-MARKER"), "{}", out.stderr);
}

/// Reads until the end of a response head (or the connection's end).
async fn read_head(sock: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(5), sock.read(&mut buf))
            .await
            .expect("an answer without the body")
            .unwrap();
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test]
async fn credentials_are_checked_on_the_headers_before_a_form_body_is_read() {
    let d = deploy(&[]).await;
    let job = d.job_in(1, ALICE, "needs_review").await;
    let addr = d.http_addr;
    let wrong = base64_basic(USER, "not-the-password");
    for auth in [String::new(), format!("Authorization: Basic {wrong}\r\n")] {
        let mut sock = TcpStream::connect(addr).await.unwrap();
        // A 16 KiB form announced, none of it sent: the answer must not wait for it.
        let head = format!(
            "POST /admin/jobs/{job}/resolve HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 16000\r\n{auth}\r\n"
        );
        sock.write_all(head.as_bytes()).await.unwrap();
        let answer = read_head(&mut sock).await;
        assert!(answer.starts_with("HTTP/1.1 401"), "{auth:?}: {answer}");
    }
    assert_eq!(d.store.job(job).await["status"], "needs_review");
}

fn base64_basic(user: &str, password: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
}

#[tokio::test]
async fn guesses_from_one_peer_are_slowed_after_five_misses_and_another_peer_is_not() {
    let d = deploy(&[]).await;
    let url = d.page("/admin/");
    let guess = |client: &reqwest::Client, password: &str| {
        client
            .get(&url)
            .basic_auth(USER, Some(password.to_string()))
            .send()
    };
    let started = Instant::now();
    for n in 0..5 {
        let resp = guess(&d.http, &format!("wrong-{n}")).await.unwrap();
        assert_eq!(resp.status(), 401);
    }
    let free = started.elapsed();
    assert!(
        free < Duration::from_millis(400),
        "five misses at once: {free:?}"
    );
    let slowed = Instant::now();
    for n in 0..10 {
        let resp = guess(&d.http, &format!("wrong-again-{n}")).await.unwrap();
        assert_eq!(resp.status(), 401);
    }
    let took = slowed.elapsed();
    assert!(
        took >= Duration::from_millis(900),
        "ten verdicts after the fifth miss took only {took:?}"
    );
    // Twenty at once, the right password among them: those past a second of waiting get 429
    // with Retry-After and no verdict; the others wait their turn.
    let burst = futures::future::join_all((0..20).map(|_| guess(&d.http, PASSWORD))).await;
    let mut refused = 0;
    for resp in burst {
        let resp = resp.unwrap();
        match resp.status().as_u16() {
            429 => {
                refused += 1;
                let retry: u64 = resp.headers()["retry-after"]
                    .to_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert!((1..=2).contains(&retry), "Retry-After {retry}");
                assert!(!resp.text().await.unwrap().contains("Jobs by state"));
            }
            200 => {}
            other => panic!("answered {other}"),
        }
    }
    assert!(refused >= 5, "only {refused} of 20 refused");
    // Another address is another peer: its own five misses, then the page, at once.
    let other = reqwest::Client::builder()
        .local_address(IpAddr::from([127, 0, 0, 2]))
        .build()
        .unwrap();
    let started = Instant::now();
    for n in 0..5 {
        assert_eq!(
            guess(&other, &format!("other-{n}")).await.unwrap().status(),
            401
        );
    }
    assert_eq!(guess(&other, PASSWORD).await.unwrap().status(), 200);
    let quick = started.elapsed();
    assert!(quick < Duration::from_millis(500), "{quick:?}");
}

#[tokio::test]
async fn misses_are_logged_with_the_peer_at_most_once_a_second() {
    let redis = oncebot_tools::redis_server::RedisServer::start(
        oncebot_tools::redis_server::Persistence::None,
    )
    .unwrap();
    let env = child_env(
        &redis.url(),
        &[
            ("ONCEBOT__ADMIN__USER", USER),
            ("ONCEBOT__ADMIN__PASSWORD", PASSWORD),
        ],
    );
    let bot = Oncebot::spawn(&["serve", "--role", "ingress"], &env);
    let page = bot.url("/admin/").await;
    let http = reqwest::Client::new();
    // Five free misses and fifteen slowed ones: about 1.5 s of guessing.
    for n in 0..20 {
        let resp = http
            .get(&page)
            .basic_auth(USER, Some(format!("guess-MARKER-{n}")))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 401);
    }
    let lines = || {
        bot.stderr()
            .lines()
            .filter(|l| l.contains("wrong user or password refused"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let logged = eventually("a second line about the misses", DEADLINE, || async {
        let lines = lines();
        (lines.len() >= 2).then_some(lines)
    })
    .await;
    assert!(logged.len() <= 3, "{logged:#?}");
    for line in &logged {
        assert!(line.contains("peer=127.0.0.1"), "{line}");
    }
    assert!(logged[0].contains("misses=1 ") && logged[0].contains("unlogged=0"));
    let unlogged: u32 = logged[1]
        .split("unlogged=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", logged[1]));
    assert!(unlogged >= 5, "{}", logged[1]);
    assert!(!bot.stderr().contains("MARKER"), "no guess is logged");
}

#[tokio::test]
async fn behind_a_tls_proxy_a_decision_must_come_from_the_configured_https_origin() {
    let d = deploy(&[("ONCEBOT__ADMIN__PUBLIC_URL", "https://bot.example.org")]).await;
    let job = d.job_in(1, ALICE, "needs_review").await;
    let csrf = csrf_of(&d.get("/admin/").await.1);
    let post = |origin: &str| {
        d.http
            .post(d.page(&format!("/admin/jobs/{job}/resolve")))
            .basic_auth(USER, Some(PASSWORD))
            .header("origin", origin)
            .form(&[("csrf", csrf.as_str()), ("decision", "succeeded")])
            .send()
    };
    for wrong in [
        d.origin(),
        "http://bot.example.org".to_string(),
        "https://bot.example.org:8443".to_string(),
    ] {
        let resp = post(&wrong).await.unwrap();
        assert_eq!(resp.status(), 403, "{wrong}");
        assert_eq!(d.store.job(job).await["status"], "needs_review");
    }
    let resp = post("https://bot.example.org").await.unwrap();
    assert_eq!(resp.status(), 303);
    assert_eq!(d.store.job(job).await["status"], "succeeded");
}
