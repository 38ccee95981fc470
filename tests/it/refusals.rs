//! Issue 41, item 3: oncebot's doors under a flood of wrong secrets. Every refusal is counted
//! (`oncebot_http_rejected_total{route, reason}`), but the log gets at most one line a second per
//! peer, with how many refusals it left out: two runs of about 13,000 guesses in 2 s used to
//! write 1.8 and 1.5 MB of WARN lines.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use oncebot::moviepilot::Dialect;

use crate::support::child::Oncebot;
use crate::support::rig::Rig;
use crate::support::{ALICE, eventually, private_text};

/// Guesses per door, sent 64 at a time.
const GUESSES: usize = 3000;

/// The relay's wake-up secret in these tests (at least 16 characters).
const WAKE_SECRET: &str = "wake-secret_0123456789";

/// `oncebot_http_rejected_total{route="<route>",reason="<reason>"}` on the process's /metrics.
async fn rejected(rig: &Rig, route: &str, reason: &str) -> f64 {
    let sample = format!("oncebot_http_rejected_total{{route=\"{route}\",reason=\"{reason}\"}}");
    rig.metric(&sample)
        .await
        .map_or(0.0, |v| v.parse().unwrap())
}

/// Sends `GUESSES` requests made by `request`, 64 in flight; each must be answered `status`.
/// Returns how long the flood took.
async fn flood(
    rig: &Rig,
    status: u16,
    request: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
) -> Duration {
    let started = Instant::now();
    let answers: Vec<u16> = futures::stream::iter(0..GUESSES)
        .map(|_| {
            let req = request(&rig.http);
            async move { req.send().await.unwrap().status().as_u16() }
        })
        .buffer_unordered(64)
        .collect()
        .await;
    assert!(answers.iter().all(|&s| s == status), "{answers:?}");
    started.elapsed()
}

/// The log lines holding `needle`, and the `unlogged=` counts they carry.
fn lines_with(bot: &Oncebot, needle: &str) -> (usize, u64) {
    let log = bot.stderr();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains(needle)).collect();
    let unlogged = lines
        .iter()
        .map(|l| {
            l.split("unlogged=")
                .nth(1)
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("no unlogged count in {l}"))
        })
        .sum();
    (lines.len(), unlogged)
}

/// At most one line per second of flood, plus the first; and once the flood is a second old,
/// one more refusal is logged with every refusal left out before it: the lines and what they say
/// was left out add up to every refusal.
async fn assert_quiet(bot: &Oncebot, needle: &str, took: Duration, one_more: impl AsyncFnOnce()) {
    let (lines, _) = lines_with(bot, needle);
    assert!(
        (1..=took.as_secs() as usize + 2).contains(&lines),
        "{lines} lines for a flood of {took:?}"
    );
    // A line goes out at most once a second after the last one, which may have gone out as the
    // flood ended (a flood slowed by a loaded machine spans several seconds): wait a whole one.
    tokio::time::sleep(refusals_window()).await;
    one_more().await;
    eventually("the next line", Duration::from_secs(10), || async {
        (lines_with(bot, needle).0 > lines).then_some(())
    })
    .await;
    let (lines, unlogged) = lines_with(bot, needle);
    assert_eq!(lines as u64 + unlogged, GUESSES as u64 + 1, "{lines} lines");
}

/// oncebot logs a peer's refusals at most once per this long.
fn refusals_window() -> Duration {
    oncebot::refusals::LOG_EVERY + Duration::from_millis(100)
}

#[tokio::test]
async fn a_flood_of_wrong_webhook_secrets_is_counted_and_logged_once_a_second() {
    let rig = Rig::new(Dialect::V2).await;
    let bot = rig.start_roles(&["ingress"], None).await;
    let url = rig.url("/telegram/webhook");
    let body = serde_json::to_vec(&private_text(1, ALICE, "/jobs")).unwrap();
    let took = flood(&rig, 401, |http| {
        http.post(&url)
            .header(
                "x-telegram-bot-api-secret-token",
                "not-the-secret-0123456789",
            )
            .header("content-type", "application/json")
            .body(body.clone())
    })
    .await;
    assert_eq!(rejected(&rig, "webhook", "secret").await, GUESSES as f64);
    assert_quiet(
        &bot,
        "missing or wrong secret token refused",
        took,
        async || {
            let resp = rig
                .http
                .post(&url)
                .header(
                    "x-telegram-bot-api-secret-token",
                    "not-the-secret-0123456789",
                )
                .body(body.clone())
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 401);
        },
    )
    .await;
    assert!(bot.stderr().contains("peer=127.0.0.1"), "{}", bot.stderr());
    rig.store.assert_pristine().await;
}

#[tokio::test]
async fn a_flood_of_wrong_wake_up_secrets_is_counted_and_logged_once_a_second() {
    let rig = Rig::with(
        Dialect::V2,
        &[
            ("ONCEBOT__NOTIFY__ENABLED", "true"),
            ("ONCEBOT__NOTIFY__WEBHOOK_SECRET", WAKE_SECRET),
            ("ONCEBOT__TELEGRAM__ADMIN_CHATS", "1001"),
        ],
    )
    .await;
    let bot = rig.start_roles(&["ingress"], None).await;
    let url = rig.url("/moviepilot/notify/not-the-secret-0123456789");
    let took = flood(&rig, 404, |http| http.post(&url).body("{}")).await;
    assert_eq!(rejected(&rig, "wake", "secret").await, GUESSES as f64);
    assert_quiet(&bot, "wrong secret refused (404", took, async || {
        let resp = rig.http.post(&url).body("{}").send().await.unwrap();
        assert_eq!(resp.status(), 404);
    })
    .await;
}
