//! What a caller without credentials can send and learn on `http.listen` (issue 25: "the earlier
//! attacks still hold"): request smuggling through conflicting or disguised framing headers is
//! refused or cut off with nothing smuggled in, a gzip-encoded body is not inflated, an oversized
//! form under `/admin` is refused, and `/readyz` and `/metrics` give a fixed reason while Redis's
//! own words (here: its auth state) stay in the log.

use std::io::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use oncebot_tools::redis_server::{Persistence, RedisServer};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::support::app::{child_env, spawn_app};
use crate::support::child::Oncebot;
use crate::support::{ALICE, DEADLINE, SECRET, Store, eventually, private_text};

/// Writes `raw` on a fresh connection and reads until the server closes it (or 5 s pass):
/// every answer it gave, as text.
async fn exchange(addr: SocketAddr, raw: &[u8]) -> String {
    let mut sock = TcpStream::connect(addr).await.unwrap();
    sock.write_all(raw).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(5), sock.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => panic!(
                "the connection stayed open after {:?}",
                String::from_utf8_lossy(&got)
            ),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

fn chunked(body: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n0\r\n\r\n");
    out
}

fn webhook_head(extra: &str) -> String {
    format!(
        "POST /telegram/webhook HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
         X-Telegram-Bot-Api-Secret-Token: {SECRET}\r\n{extra}\r\n"
    )
}

/// A whole second webhook call, to be hidden in the first one's body.
fn smuggled(update_id: i64) -> Vec<u8> {
    let body = serde_json::to_vec(&private_text(update_id, ALICE, "/subscribe Smuggled")).unwrap();
    let mut out = webhook_head(&format!("Content-Length: {}\r\n", body.len())).into_bytes();
    out.extend_from_slice(&body);
    out
}

fn answers(text: &str) -> usize {
    text.matches("HTTP/1.1 ").count()
}

#[tokio::test]
async fn content_length_beside_transfer_encoding_smuggles_no_second_request() {
    let app = spawn_app().await;
    let first = serde_json::to_vec(&private_text(1, ALICE, "/subscribe Dune")).unwrap();
    let mut tail = chunked(&first);
    tail.extend_from_slice(&smuggled(2));
    // CL.TE: a front that trusts Content-Length sees one request; chunked ends earlier, and the
    // rest would be a second request on the same connection. Both orders of the headers.
    for extra in [
        format!(
            "Content-Length: {}\r\nTransfer-Encoding: chunked\r\n",
            tail.len()
        ),
        format!(
            "Transfer-Encoding: chunked\r\nContent-Length: {}\r\n",
            tail.len()
        ),
    ] {
        let mut raw = webhook_head(&extra).into_bytes();
        raw.extend_from_slice(&tail);
        let got = exchange(app.addr, &raw).await;
        assert_eq!(
            answers(&got),
            1,
            "one answer, then the connection closed: {got}"
        );
    }
    assert!(
        app.store.update(2).await.is_none(),
        "the smuggled update was never admitted"
    );
    assert!(app.store.update(1).await.is_some(), "the framed one was");
}

#[tokio::test]
async fn a_disguised_or_doubled_framing_header_is_400_and_writes_nothing() {
    let app = spawn_app().await;
    let body = serde_json::to_vec(&private_text(1, ALICE, "/subscribe Dune")).unwrap();
    let len = body.len();
    for (what, extra, payload) in [
        (
            "chunked not last",
            "Transfer-Encoding: chunked, identity\r\n".to_string(),
            chunked(&body),
        ),
        (
            "an unknown coding",
            "Transfer-Encoding: xchunked\r\n".to_string(),
            chunked(&body),
        ),
        (
            "two different lengths",
            format!("Content-Length: {len}\r\nContent-Length: {}\r\n", len + 40),
            body.clone(),
        ),
        (
            "a space before the colon",
            "Transfer-Encoding : chunked\r\n".to_string(),
            chunked(&body),
        ),
    ] {
        let mut raw = webhook_head(&extra).into_bytes();
        raw.extend_from_slice(&payload);
        raw.extend_from_slice(&smuggled(2));
        let got = exchange(app.addr, &raw).await;
        assert!(got.starts_with("HTTP/1.1 400"), "{what}: {got}");
        assert_eq!(answers(&got), 1, "{what}: {got}");
    }
    app.store.assert_pristine().await;
}

#[tokio::test]
async fn a_gzip_encoded_body_is_not_inflated_and_writes_nothing() {
    let app = spawn_app().await;
    // An update that would be admitted, gzipped, and a small bomb (64 MiB of zeros).
    let update = serde_json::to_vec(&private_text(1, ALICE, "/subscribe Dune")).unwrap();
    let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..64 {
        bomb.write_all(&zeros).unwrap();
    }
    let bomb = bomb.finish().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&update).unwrap();
    for body in [gz.finish().unwrap(), bomb] {
        let resp = app
            .http
            .post(app.url("/telegram/webhook"))
            .header("x-telegram-bot-api-secret-token", SECRET)
            .header("content-type", "application/json")
            .header("content-encoding", "gzip")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400, "read as sent, not inflated");
    }
    app.store.assert_pristine().await;
}

#[tokio::test]
async fn a_form_over_16_kib_under_admin_is_413_and_settles_nothing() {
    let d = crate::admin_web::deploy(&[]).await;
    let job = d.job_in(1, ALICE, "needs_review").await;
    let csrf = crate::admin_web::csrf_of(&d.get("/admin/").await.1);
    let note = "x".repeat(17 * 1024);
    let resp = d
        .http
        .post(d.page(&format!("/admin/jobs/{job}/resolve")))
        .basic_auth(crate::admin_web::USER, Some(crate::admin_web::PASSWORD))
        .header("origin", d.origin())
        .form(&[
            ("csrf", csrf.as_str()),
            ("decision", "succeeded"),
            ("note", &note),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    assert_eq!(d.store.job(job).await["status"], "needs_review");
}

#[tokio::test]
async fn readyz_and_metrics_give_a_fixed_reason_and_keep_redis_words_in_the_log() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let env = child_env(&redis.url(), &[]);
    let bot = Oncebot::spawn(&["serve", "--role", "ingress"], &env);
    let base = bot.url("").await;
    let http = reqwest::Client::new();
    eventually("/readyz to answer 200", DEADLINE, || async {
        let r = http.get(format!("{base}/readyz")).send().await.ok()?;
        (r.status() == 200).then_some(())
    })
    .await;
    // Redis now wants a password oncebot does not have: every new connection is refused with
    // Redis's words about its auth state.
    let store = Store::new(&redis.url(), "oncebot");
    let mut conn = store.conn().await;
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("redis-pw-MARKER")
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .arg("SKIPME")
        .arg("yes")
        .query_async(&mut conn)
        .await
        .unwrap();
    let body = eventually("/readyz to answer 503", DEADLINE, || async {
        let r = http.get(format!("{base}/readyz")).send().await.ok()?;
        if r.status() != 503 {
            return None;
        }
        r.text().await.ok()
    })
    .await;
    assert_eq!(body, "not ready: redis unavailable\n");
    let metrics = http.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(metrics.status(), 503);
    assert_eq!(
        metrics.text().await.unwrap(),
        "metrics unavailable: redis unavailable\n"
    );
    // The detail is for the operator, in the log (never the password itself).
    bot.wait_for_stderr("uthentication", DEADLINE).await;
    assert!(!bot.stderr().contains("redis-pw-MARKER"));
}
