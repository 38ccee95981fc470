//! Issue 43, "Claim the bot": a deployment whose directory gives nobody `admin` has one claim
//! code (SET NX: one for every process), logged once at WARN by the process that made it and kept
//! in Redis only as a digest; `/claim <code>` in a private chat makes the sender an admin grant,
//! once; wrong codes are counted per Telegram id, five an hour.

use std::time::Duration;

use oncebot::moviepilot::Dialect;

use crate::grants::{listed, message_in, post_to};
use crate::support::child::Oncebot;
use crate::support::rig::Rig;
use crate::support::{MALLORY, private_text};

/// Another stranger.
const EVE: i64 = 7777;

/// A deployment that starts with nobody allowed (`household.access_requests` on).
async fn unclaimed() -> Rig {
    Rig::with(
        Dialect::V2,
        &[
            ("ONCEBOT__TELEGRAM__ALLOWED_USERS", ""),
            ("ONCEBOT__HOUSEHOLD__ACCESS_REQUESTS", "true"),
        ],
    )
    .await
}

/// The code in a process's "send /claim <code>" line, if it logged one.
fn logged_code(stderr: &str) -> Option<String> {
    let at = stderr.find("send /claim ")? + "send /claim ".len();
    Some(stderr[at..].split_whitespace().next()?.to_string())
}

/// A second ingress-only process and its base URL, once it listens.
async fn second(rig: &Rig) -> (Oncebot, String) {
    let child = Oncebot::spawn(&["serve", "--role", "ingress"], &rig.env);
    let url = format!("http://{}", child.http_addr().await);
    (child, url)
}

/// Two processes, one code: the one that made it logs it, the other that one is waiting; the
/// code (in a private chat, to either process) makes its sender an admin once, and a second
/// claim is told the bot is claimed. Redis holds only the code's digest, and no reply, metric or
/// later log line holds the code.
#[tokio::test]
async fn the_logged_code_claims_the_bot_once_across_two_processes() {
    let rig = unclaimed().await;
    let a = rig.start_pipeline().await;
    let (b, b_url) = second(&rig).await;
    let waiting = "a claim code is waiting";
    let code = crate::support::eventually(
        "one process to log the code",
        Duration::from_secs(10),
        || {
            let (a, b) = (a.stderr(), b.stderr());
            async move {
                match (logged_code(&a), logged_code(&b)) {
                    (Some(code), None) if b.contains(waiting) => Some(code),
                    (None, Some(code)) if a.contains(waiting) => Some(code),
                    _ => None,
                }
            }
        },
    )
    .await;
    assert!(code.len() >= 10, "{code}");
    let stored = rig.store.get(&rig.store.keys.claim_code()).await.unwrap();
    assert_eq!(stored, oncebot::claim::digest(&code));
    assert_eq!(stored.len(), 64, "a SHA-256 digest, hex: {stored}");
    assert!(
        !rig.store
            .snapshot()
            .await
            .values()
            .any(|v| { String::from_utf8_lossy(v).contains(&code) }),
        "the code in Redis in clear"
    );

    // Not even a stranger's answer once an hour stops a claim; a wrong code is told so.
    rig.post(&private_text(1, MALLORY, "hello")).await;
    message_in(&rig, MALLORY, "Your Telegram id: 6666").await;
    rig.post(&private_text(2, MALLORY, "/claim ABCDEFGHJK"))
        .await;
    message_in(&rig, MALLORY, "That is not the claim code").await;
    // Typed in lower case, to the other process: claimed.
    let typed = format!("/claim {}", code.to_lowercase());
    post_to(&rig, &b_url, &private_text(3, MALLORY, &typed)).await;
    message_in(&rig, MALLORY, "Claimed: you are now this bot's admin").await;
    assert_eq!(
        rig.store.get(&rig.store.keys.claim_code()).await,
        None,
        "spent"
    );
    let rows = listed(&rig).await;
    assert_eq!(rows, vec![(MALLORY, "admin".into(), "granted".into())]);
    // The same code again, by someone else: the bot is claimed.
    rig.post(&private_text(4, EVE, &format!("/claim {code}")))
        .await;
    message_in(&rig, EVE, "has an admin already").await;
    // Within 2 s every ingress has her as an admin.
    let next = std::sync::atomic::AtomicI64::new(5);
    crate::support::eventually("Mallory's /whoami", Duration::from_secs(10), || async {
        let update_id = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        rig.post(&private_text(update_id, MALLORY, "/whoami")).await;
        rig.tg
            .received(MALLORY)
            .iter()
            .find(|m| m.text.contains("Role: admin"))
            .map(|_| ())
    })
    .await;

    for (name, log) in [("a", a.stderr()), ("b", b.stderr())] {
        assert!(
            log.matches(code.as_str()).count() <= 1,
            "{name} logged the code twice"
        );
    }
    assert_eq!(
        a.stderr().matches(&code).count() + b.stderr().matches(&code).count(),
        1
    );
    for m in rig.tg.sent() {
        assert!(
            !m.text.contains(&code),
            "a reply holds the code: {}",
            m.text
        );
    }
    assert!(!rig.metrics().await.contains(&code));
}

/// Five answers an hour per Telegram id that did not claim the bot, then one "too many", then
/// silence: even the right code is refused to that id, while another id may still claim.
#[tokio::test]
async fn wrong_codes_are_counted_per_telegram_id_five_an_hour() {
    let rig = unclaimed().await;
    let bot = rig.start_pipeline().await;
    let code = crate::support::eventually("the code", Duration::from_secs(10), || {
        let log = bot.stderr();
        async move { logged_code(&log) }
    })
    .await;
    for i in 0..7 {
        rig.post(&private_text(10 + i, MALLORY, "/claim 0000000000000000"))
            .await;
    }
    rig.post(&private_text(20, MALLORY, &format!("/claim {code}")))
        .await;
    rig.post(&private_text(21, EVE, &format!("/claim {code}")))
        .await;
    message_in(&rig, EVE, "Claimed").await;
    let told = |text: &str| {
        rig.tg
            .received(MALLORY)
            .iter()
            .filter(|m| m.text.contains(text))
            .count()
    };
    crate::support::eventually("Mallory's answers", Duration::from_secs(20), || {
        let done = told("Too many tries") == 1;
        async move { done.then_some(()) }
    })
    .await;
    assert_eq!(told("That is not the claim code"), 5);
    assert_eq!(told("Claimed"), 0);
    assert_eq!(rig.tg.received(MALLORY).len(), 6, "silence after the sixth");
    let tries = rig
        .store
        .get(&format!("{}{MALLORY}", rig.store.keys.claim_tries_prefix()))
        .await;
    assert_eq!(tries.as_deref(), Some("8"));
    let rows = listed(&rig).await;
    assert_eq!(rows, vec![(EVE, "admin".into(), "granted".into())]);
}
