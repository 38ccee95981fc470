//! Slow and idle connections against the real process (issue 25, item 1): `oncebot serve --role
//! ingress` as a child, raw TCP sockets on loopback. A half-sent request is closed after
//! `http.header_read_timeout_secs`, an idle kept-alive connection after `http.idle_timeout_secs`
//! (not the head's deadline), and past `http.max_connections` connections wait in the backlog, so
//! a few hundred idle sockets neither exhaust the open-files limit nor stop `/healthz`.

use std::time::Duration;

use oncebot_tools::redis_server::{Persistence, RedisServer};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::support::app::child_env;
use crate::support::child::Oncebot;
use crate::support::{DEADLINE, eventually};

struct Served {
    _redis: RedisServer,
    bot: Oncebot,
    base: String,
    addr: String,
}

/// An ingress process with `extra` settings, answering `/healthz`; `open_files` (soft, hard)
/// as a service manager would set them.
async fn serve(extra: &[(&str, &str)], open_files: Option<(u64, u64)>) -> Served {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let env = child_env(&redis.url(), extra);
    let args = ["serve", "--role", "ingress"];
    let bot = match open_files {
        None => Oncebot::spawn(&args, &env),
        Some((soft, hard)) => Oncebot::spawn_with_open_files(&args, &env, soft, hard),
    };
    let addr = bot.http_addr().await;
    Served {
        _redis: redis,
        bot,
        base: format!("http://{addr}"),
        addr: addr.to_string(),
    }
}

/// Waits until the server closes `sock` (end of file, or a reset), returning how long it took.
async fn closed_within(sock: &mut TcpStream, deadline: Duration) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(started + deadline, sock.read(&mut buf)).await {
            Err(_) => panic!("the connection is still open after {deadline:?}"),
            Ok(Ok(0)) | Ok(Err(_)) => return started.elapsed(),
            Ok(Ok(_)) => {}
        }
    }
}

/// One whole `GET /healthz` on `sock` (kept alive), read up to its body.
async fn healthz_on(sock: &mut TcpStream) {
    sock.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.ends_with(b"ok\n") {
        let n = tokio::time::timeout(DEADLINE, sock.read(&mut buf))
            .await
            .expect("an answer")
            .unwrap();
        assert!(
            n > 0,
            "closed before the answer: {:?}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    }
    assert!(
        got.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
}

async fn healthz(http: &reqwest::Client, base: &str) -> u16 {
    http.get(format!("{base}/healthz"))
        .send()
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_half_sent_request_is_closed_after_the_header_timeout_while_healthz_answers() {
    let s = serve(&[("ONCEBOT__HTTP__HEADER_READ_TIMEOUT_SECS", "1")], None).await;
    let http = reqwest::Client::new();
    // Half a request line; a connection that sends nothing; one that trickles a byte at a time
    // (each byte must not restart the deadline).
    let mut half = TcpStream::connect(&s.addr).await.unwrap();
    half.write_all(b"GET /heal").await.unwrap();
    let mut silent = TcpStream::connect(&s.addr).await.unwrap();
    let mut trickle = TcpStream::connect(&s.addr).await.unwrap();
    let trickling = tokio::spawn(async move {
        let started = Instant::now();
        for b in b"POST /telegram/webhook HTTP/1.1\r\nHost: t\r\n" {
            if trickle.write_all(&[*b]).await.is_err() {
                break;
            }
            // The attack itself: one byte every 200 ms, never the end of the head.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let closed = closed_within(&mut trickle, Duration::from_secs(5)).await;
        started.elapsed().max(closed)
    });
    assert_eq!(healthz(&http, &s.base).await, 200, "served meanwhile");
    let took = closed_within(&mut half, Duration::from_secs(5)).await;
    assert!(took >= Duration::from_millis(700), "closed after {took:?}");
    closed_within(&mut silent, Duration::from_secs(5)).await;
    let trickled = trickling.await.unwrap();
    assert!(
        trickled < Duration::from_secs(4),
        "a trickle is closed at the head's deadline, not kept alive by each byte: {trickled:?}"
    );
    assert_eq!(healthz(&http, &s.base).await, 200, "and afterwards");
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed_after_the_idle_timeout_not_the_header_timeout() {
    let s = serve(
        &[
            ("ONCEBOT__HTTP__HEADER_READ_TIMEOUT_SECS", "1"),
            ("ONCEBOT__HTTP__IDLE_TIMEOUT_SECS", "3"),
        ],
        None,
    )
    .await;
    let mut sock = TcpStream::connect(&s.addr).await.unwrap();
    healthz_on(&mut sock).await;
    // Idle for longer than the head's deadline: hyper's own header_read_timeout would have closed
    // it by now; the idle deadline keeps it.
    tokio::time::sleep(Duration::from_millis(1800)).await;
    healthz_on(&mut sock).await;
    let idle = closed_within(&mut sock, Duration::from_secs(10)).await;
    assert!(
        idle >= Duration::from_millis(2500) && idle < Duration::from_secs(6),
        "closed {idle:?} after the last answer"
    );
}

/// Opens `n` connections that each send half a request line, and keeps them.
async fn slow_sockets(addr: &str, n: usize) -> Vec<TcpStream> {
    let mut socks = Vec::with_capacity(n);
    for _ in 0..n {
        let mut sock = TcpStream::connect(addr).await.unwrap();
        // Into the kernel's buffer even while the connection waits in the backlog.
        sock.write_all(b"GET /healthz HTT").await.unwrap();
        socks.push(sock);
    }
    socks
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// The numbers: 128 open files, 150 slow connections (more than the limit).
const HARD: u64 = 128;
const SOCKETS: usize = 150;

#[tokio::test]
async fn past_max_connections_sockets_wait_in_the_backlog_and_healthz_still_answers() {
    let s = serve(
        &[
            ("ONCEBOT__HTTP__HEADER_READ_TIMEOUT_SECS", "1"),
            ("ONCEBOT__HTTP__MAX_CONNECTIONS", "30"),
        ],
        Some((64, HARD)),
    )
    .await;
    // The soft limit the service manager gave is raised to the hard one, and both are logged.
    let stderr = s.bot.stderr();
    assert!(
        stderr.contains("soft_before=64") && stderr.contains(&format!("soft={HARD} hard={HARD}")),
        "{stderr}"
    );
    let baseline = open_fds(s.bot.pid());
    let socks = slow_sockets(&s.addr, SOCKETS).await;
    s.bot
        .wait_for_stderr("every connection slot is taken", DEADLINE)
        .await;
    let held = open_fds(s.bot.pid());
    assert!(
        held <= baseline + 30 + 2,
        "{held} files open with the cap at 30 (baseline {baseline})"
    );
    // /healthz waits its turn behind them and is answered as the slow ones time out, while
    // every one of them is still open on this side.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let started = Instant::now();
    assert_eq!(healthz(&http, &s.base).await, 200);
    println!(
        "/healthz behind {SOCKETS} slow connections answered after {:?}",
        started.elapsed()
    );
    drop(socks);
    eventually("/healthz to answer at once", DEADLINE, || async {
        (healthz(&http, &s.base).await == 200).then_some(())
    })
    .await;
    let stderr = s.bot.stderr();
    assert!(!stderr.contains("Too many open files"), "{stderr}");
    assert!(
        stderr.contains("a connection slot is free again"),
        "{stderr}"
    );
}

/// The premise of the test above: without the cap, the same sockets do exhaust the limit.
#[tokio::test]
async fn without_the_cap_the_same_sockets_exhaust_the_open_files_limit() {
    let s = serve(
        &[("ONCEBOT__HTTP__HEADER_READ_TIMEOUT_SECS", "1")],
        Some((HARD, HARD)),
    )
    .await;
    s.bot
        .wait_for_stderr(
            "the open-files limit is below what http.max_connections allows",
            DEADLINE,
        )
        .await;
    let socks = slow_sockets(&s.addr, SOCKETS).await;
    s.bot
        .wait_for_stderr("Too many open files", Duration::from_secs(10))
        .await;
    drop(socks);
}

#[tokio::test]
async fn admin_listen_has_the_same_limits() {
    let s = serve(
        &[
            ("ONCEBOT__HTTP__HEADER_READ_TIMEOUT_SECS", "1"),
            ("ONCEBOT__HTTP__IDLE_TIMEOUT_SECS", "2"),
            ("ONCEBOT__ADMIN__PASSWORD", "admin-pw-0123456789"),
            ("ONCEBOT__ADMIN__LISTEN", "127.0.0.1:0"),
        ],
        None,
    )
    .await;
    let admin = s.bot.admin_addr().await;
    let mut half = TcpStream::connect(&admin).await.unwrap();
    half.write_all(b"GET /admin/ HT").await.unwrap();
    let took = closed_within(&mut half, Duration::from_secs(5)).await;
    assert!(took >= Duration::from_millis(700), "closed after {took:?}");
    let mut idle = TcpStream::connect(&admin).await.unwrap();
    idle.write_all(b"GET /admin/ HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 1024];
    let n = idle.read(&mut buf).await.unwrap();
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 401"),
        "{:?}",
        String::from_utf8_lossy(&buf[..n])
    );
    let idled = closed_within(&mut idle, Duration::from_secs(6)).await;
    assert!(idled >= Duration::from_millis(1500), "idle for {idled:?}");
}
