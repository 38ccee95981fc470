//! The relay of MoviePilot's notifications as real processes: the MoviePilot simulator writes
//! its message history (duplicates, purges that reuse ids, a long outage), the relay forwards
//! through the replies stream, and the Bot API simulator shows what each chat got. Crashes are
//! SIGKILLs at the relay's and the dispatcher's named crash points.

use std::collections::BTreeMap;
use std::time::Duration;

use oncebot::vocabulary::NotificationType::{self, Download, Organize, SiteMessage};
use oncebot_tools::sim::moviepilot::{
    Fault as MpFault, SimNotification, SimOptions, download_added_payload, notice_payload, routes,
    send_webhook,
};
use redis::AsyncCommands as _;

use crate::support::child::Oncebot;
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, GROUP, eventually};

/// `notify.webhook_secret` in these tests.
const WAKE_SECRET: &str = "wake-secret_0123456789";

/// The operator page's password in the cookie test (at least 16 characters).
const ADMIN_PASSWORD: &str = "admin-page-password-0123";

/// A site cookie as `download.added` carries it: it must appear nowhere oncebot writes.
const COOKIE: &str = "uid=4242; pass=cookie-marker-5f3a9c";

/// A rig for the relay: MoviePilot `opts`, admin chat ALICE, short poll, lease and limits.
async fn relay_rig(opts: SimOptions, overrides: &[(&str, &str)]) -> Rig {
    let mut env = vec![
        ("ONCEBOT__NOTIFY__ENABLED", "true"),
        ("ONCEBOT__NOTIFY__POLL_INTERVAL_SECS", "1"),
        ("ONCEBOT__NOTIFY__HEARTBEAT_INTERVAL_MS", "200"),
        ("ONCEBOT__NOTIFY__LIVENESS_TTL_MS", "2500"),
        ("ONCEBOT__NOTIFY__WEBHOOK_SECRET", WAKE_SECRET),
        ("ONCEBOT__FOLLOW__PROGRESS_POLL_SECS", "1"),
        ("ONCEBOT__TELEGRAM__ADMIN_CHATS", "1001"),
        ("ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS", "0"),
        ("ONCEBOT__DISPATCHER__GROUP_INTERVAL_MS", "0"),
        ("ONCEBOT__DISPATCHER__GLOBAL_PER_SECOND", "1000"),
        ("ONCEBOT__DISPATCHER__SET_COMMANDS", "false"),
        ("ONCEBOT__DISPATCHER__READ_BLOCK_MS", "200"),
    ];
    env.extend_from_slice(overrides);
    Rig::with_sim(opts, &env).await
}

/// A process with `roles` (on a port of its own, as the rig's settings say port 0), once it
/// logs `ready_line`.
async fn spawn(rig: &Rig, roles: &[&str], failpoint: Option<&str>, ready_line: &str) -> Oncebot {
    let mut env = rig.env.clone();
    if let Some(point) = failpoint {
        env.push(("FAILPOINTS".into(), format!("{point}=return")));
    }
    let mut args = vec!["serve"];
    for role in roles {
        args.extend(["--role", role]);
    }
    let child = Oncebot::spawn(&args, &env);
    child
        .wait_for_stderr(ready_line, Duration::from_secs(15))
        .await;
    child
}

/// The relay alone, once its first poll has set (or found) the position.
async fn relay(rig: &Rig) -> Oncebot {
    let bot = spawn(rig, &["notify"], None, "this process now polls").await;
    position(rig).await;
    bot
}

async fn dispatcher(rig: &Rig) -> Oncebot {
    spawn(rig, &["dispatcher"], None, "dispatcher started").await
}

/// Waits until the relay's position exists; returns it.
async fn position(rig: &Rig) -> std::collections::BTreeMap<String, String> {
    let store = rig.store.clone();
    eventually("the relay's position", RECOVERY_DEADLINE, || {
        let store = store.clone();
        async move {
            let mut conn = store.conn().await;
            let h: std::collections::BTreeMap<String, String> =
                conn.hgetall(store.keys.notify_position()).await.unwrap();
            h.contains_key("reg_time").then_some(h)
        }
    })
    .await
}

/// Texts (or captions) Telegram accepted for `chat`, in order.
fn delivered(rig: &Rig, chat: i64) -> Vec<String> {
    rig.tg
        .calls()
        .into_iter()
        .filter(|c| {
            matches!(c.method.as_str(), "sendMessage" | "sendPhoto")
                && c.status() == Some(200)
                && c.params.get("chat_id").and_then(|v| v.as_i64()) == Some(chat)
        })
        .map(|c| {
            c.params
                .get("text")
                .or_else(|| c.params.get("caption"))
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// How many of `chat`'s deliveries contain `needle`.
fn got(rig: &Rig, chat: i64, needle: &str) -> usize {
    delivered(rig, chat)
        .iter()
        .filter(|t| t.contains(needle))
        .count()
}

/// Waits until `chat` got at least `n` messages containing `needle`.
async fn wait_got(rig: &Rig, chat: i64, needle: &str, n: usize) {
    eventually(
        &format!("{n} × {needle:?} to {chat}"),
        RECOVERY_DEADLINE,
        || async move { (got(rig, chat, needle) >= n).then_some(()) },
    )
    .await;
}

/// Waits until the relay has read MoviePilot's history twice more: whatever it would forward
/// by then has been forwarded.
pub async fn two_more_polls(rig: &Rig) {
    let polled = rig.mp.calls(routes::MESSAGE_WEB);
    eventually("two more polls", RECOVERY_DEADLINE, || async {
        (rig.mp.calls(routes::MESSAGE_WEB) >= polled + 2).then_some(())
    })
    .await;
}

fn note(kind: NotificationType, title: &str) -> SimNotification {
    SimNotification::new(kind, title, "来自 MoviePilot")
}

#[tokio::test]
async fn each_notification_reaches_each_routed_chat_once() {
    let rig = relay_rig(
        SimOptions::v2_5_6(),
        &[
            // ALICE named by a route twice and as a default: still once per notification.
            (
                "ONCEBOT__NOTIFY__ROUTES",
                "整理入库=-1001234567890,1001,1001;Download=1002",
            ),
            ("ONCEBOT__NOTIFY__CHATS", "1001"),
        ],
    )
    .await;
    let _relay = relay(&rig).await;
    let _dispatcher = dispatcher(&rig).await;
    rig.mp.notify(note(Organize, "沙丘2 已入库"));
    rig.mp.notify(note(Download, "沙丘2 开始下载"));
    rig.mp.notify(note(SiteMessage, "站点签到成功"));
    rig.mp.user_message("/subscriptions");
    wait_got(&rig, GROUP, "已入库", 1).await;
    wait_got(&rig, ALICE, "已入库", 1).await;
    wait_got(&rig, BOB, "开始下载", 1).await;
    wait_got(&rig, ALICE, "站点签到成功", 1).await;
    // Let later polls run: nothing more arrives.
    two_more_polls(&rig).await;
    assert_eq!(
        got(&rig, ALICE, "已入库"),
        1,
        "{:#?}",
        delivered(&rig, ALICE)
    );
    assert_eq!(got(&rig, GROUP, "已入库"), 1);
    assert_eq!(got(&rig, BOB, "开始下载"), 1);
    assert_eq!(
        got(&rig, ALICE, "开始下载"),
        0,
        "a route replaces the default"
    );
    assert_eq!(got(&rig, BOB, "站点签到成功"), 0);
    assert!(
        delivered(&rig, ALICE)
            .iter()
            .all(|t| !t.contains("/subscriptions")),
        "a user's own message is not a notification"
    );
}

#[tokio::test]
async fn a_type_without_route_or_default_goes_nowhere_and_is_counted() {
    let rig = relay_rig(
        SimOptions::late_v2(),
        &[
            ("ONCEBOT__NOTIFY__ROUTES", "Download=1002"),
            ("ONCEBOT__TELEGRAM__ADMIN_CHATS", ""),
        ],
    )
    .await;
    let _relay = relay(&rig).await;
    let _dispatcher = dispatcher(&rig).await;
    rig.mp.notify(note(SiteMessage, "站点签到成功"));
    rig.mp.notify(note(Download, "开始下载 沙丘2"));
    wait_got(&rig, BOB, "开始下载", 1).await;
    let p = position(&rig).await;
    assert_eq!(p["unrouted"], "1", "{p:?}");
    assert_eq!(p["forwarded"], "1");
}

/// MoviePilot's own repeat (the same 开始下载 notice twice) is one message, with its poster; a
/// row whose id MoviePilot gave again after a purge is a new notification.
#[tokio::test]
async fn repeats_collapse_and_an_id_reused_after_a_purge_is_forwarded_as_new() {
    let posters = oncebot_tools::sim::posters::PosterServer::start()
        .await
        .unwrap();
    let rig = relay_rig(SimOptions::v3(), &[]).await;
    let _relay = relay(&rig).await;
    let _dispatcher = dispatcher(&rig).await;
    let poster = posters.poster("dune2");
    let first = rig
        .mp
        .notify(note(Download, "沙丘2 开始下载").with_image(&poster));
    rig.mp
        .notify(note(Download, "沙丘2 开始下载").with_image(&poster));
    rig.mp.notify(note(Organize, "marker-after-the-repeat"));
    wait_got(&rig, ALICE, "marker-after-the-repeat", 1).await;
    assert_eq!(
        got(&rig, ALICE, "沙丘2 开始下载"),
        1,
        "{:#?}",
        delivered(&rig, ALICE)
    );
    let p = position(&rig).await;
    assert_eq!(p["collapsed"], "1", "{p:?}");
    let entry = rig
        .store
        .replies()
        .await
        .into_iter()
        .find(|r| r.get("text").is_some_and(|t| t.contains("沙丘2 开始下载")));
    if let Some(entry) = entry {
        assert_eq!(entry["photo"], poster, "the poster goes with it");
    }

    // The newest row is deleted and its id given again, to different content.
    rig.mp.purge_newest_messages(1);
    let reused = rig.mp.notify(note(Organize, "reused-id-notice"));
    assert_eq!(reused, first + 2, "MoviePilot gives the deleted id again");
    wait_got(&rig, ALICE, "reused-id-notice", 1).await;
}

#[tokio::test]
async fn the_first_start_does_not_flood_and_backfill_forwards_the_newest_once() {
    let rig = relay_rig(SimOptions::v2_5_6(), &[("ONCEBOT__NOTIFY__BACKFILL", "2")]).await;
    for i in 1..=5 {
        rig.mp.notify(note(Organize, &format!("old-{i}")));
    }
    let _dispatcher = dispatcher(&rig).await;
    let mut relay1 = relay(&rig).await;
    wait_got(&rig, ALICE, "old-5", 1).await;
    wait_got(&rig, ALICE, "old-4", 1).await;
    relay1.sigkill().await;
    let _relay2 = relay(&rig).await;
    rig.mp.notify(note(Organize, "new-after-restart"));
    wait_got(&rig, ALICE, "new-after-restart", 1).await;
    let texts = delivered(&rig, ALICE);
    assert_eq!(
        texts.iter().filter(|t| t.contains("old-")).count(),
        2,
        "{texts:#?}"
    );
    assert_eq!(got(&rig, ALICE, "old-5"), 1, "backfill happens once");
}

/// Three pages behind with a limit of one: the newest page is forwarded, the rest counted and
/// announced once to the admin chats, nothing silently.
#[tokio::test]
async fn a_long_outage_over_max_pages_is_counted_and_announced_once() {
    let rig = relay_rig(
        SimOptions::late_v2(),
        &[("ONCEBOT__NOTIFY__MAX_PAGES", "1")],
    )
    .await;
    rig.mp.notify(note(Organize, "before"));
    let mut first = relay(&rig).await;
    first.sigkill().await;
    for i in 1..=120 {
        rig.mp.notify(note(Organize, &format!("outage-{i:03}")));
    }
    let _relay = relay(&rig).await;
    let _dispatcher = dispatcher(&rig).await;
    wait_got(&rig, ALICE, "outage-120", 1).await;
    wait_got(&rig, ALICE, "70", 1).await;
    let p = position(&rig).await;
    assert_eq!(p["skipped"], "70", "{p:?}");
    assert_eq!(p["forwarded"], "50");
    let texts = delivered(&rig, ALICE);
    assert_eq!(texts.iter().filter(|t| t.contains("outage-")).count(), 50);
    assert_eq!(
        got(&rig, ALICE, "outage-071"),
        1,
        "the newest page, oldest first"
    );
    assert_eq!(got(&rig, ALICE, "outage-070"), 0);
    let notices: Vec<_> = texts
        .iter()
        .filter(|t| t.contains("70") && !t.contains("outage-"))
        .collect();
    assert_eq!(notices.len(), 1, "one admin notice: {notices:#?}");
}

#[tokio::test]
async fn a_burst_of_200_is_delivered_once_each() {
    let rig = relay_rig(SimOptions::v3(), &[]).await;
    let _relay = relay(&rig).await;
    let _dispatcher = dispatcher(&rig).await;
    for i in 1..=200 {
        rig.mp.notify(note(Organize, &format!("burst-{i:03}")));
    }
    wait_got(&rig, ALICE, "burst-", 200).await;
    let texts = delivered(&rig, ALICE);
    for i in 1..=200 {
        let t = format!("burst-{i:03}");
        assert_eq!(texts.iter().filter(|x| x.contains(&t)).count(), 1, "{t}");
    }
}

/// MoviePilot refusing connections (a restart) and answering 500: polls fail and are counted,
/// nothing advances, and everything written meanwhile arrives afterwards.
#[tokio::test]
async fn moviepilot_down_then_every_notification_arrives_after() {
    let rig = relay_rig(SimOptions::v2_5_6(), &[]).await;
    let _relay = relay(&rig).await;
    let _dispatcher = dispatcher(&rig).await;
    rig.mp.fail_next(
        routes::MESSAGE_WEB,
        MpFault::Status(500, "Internal Server Error".into()),
    );
    rig.mp
        .restart_refusing_connections_for(Duration::from_secs(3));
    for i in 1..=5 {
        rig.mp.notify(note(Organize, &format!("while-down-{i}")));
    }
    for i in 1..=5 {
        wait_got(&rig, ALICE, &format!("while-down-{i}"), 1).await;
    }
    assert_eq!(got(&rig, ALICE, "while-down-"), 5);
}

/// The wake-up endpoint: the right secret answers 204 whatever the body and a poll follows at
/// once (the interval here is a minute); anything else 404. The Webhook plugin's site cookie is
/// then found nowhere: logs, Redis, replies, metrics, the operator's page.
#[tokio::test]
async fn the_wake_up_endpoint_polls_now_and_the_site_cookie_is_found_nowhere() {
    let rig = relay_rig(
        SimOptions::v2_5_6(),
        &[
            ("ONCEBOT__NOTIFY__POLL_INTERVAL_SECS", "60"),
            ("ONCEBOT__ADMIN__PASSWORD", ADMIN_PASSWORD),
        ],
    )
    .await;
    let bot = rig
        .start_roles(&["ingress", "dispatcher", "notify"], None)
        .await;
    position(&rig).await;
    let base = rig.url("/moviepilot/notify");
    let id = rig.mp.notify(note(Download, "woken-up-notice"));
    let m = rig.mp.messages().into_iter().find(|m| m.id == id).unwrap();
    assert_eq!(
        send_webhook(&format!("{base}/{WAKE_SECRET}"), &notice_payload(&m), false)
            .await
            .unwrap(),
        204
    );
    // Delivered long before the minute's poll.
    tokio::time::timeout(
        Duration::from_secs(20),
        wait_got(&rig, ALICE, "woken-up-notice", 1),
    )
    .await
    .expect("the wake-up call made the relay poll at once");
    let cookie = download_added_payload(COOKIE);
    for get in [false, true] {
        let right = send_webhook(&format!("{base}/{WAKE_SECRET}"), &cookie, get)
            .await
            .unwrap();
        assert_eq!(right, 204, "get: {get}");
        let wrong = send_webhook(&format!("{base}/not-the-secret"), &cookie, get)
            .await
            .unwrap();
        assert_eq!(wrong, 404);
    }
    assert_eq!(
        send_webhook(&format!("{base}/"), &cookie, false)
            .await
            .unwrap(),
        404
    );
    let big = serde_json::json!({"type": "x", "data": "a".repeat(200 * 1024)});
    assert_eq!(
        send_webhook(&format!("{base}/{WAKE_SECRET}"), &big, false)
            .await
            .unwrap(),
        204,
        "whatever the body"
    );

    let needle = "cookie-marker";
    assert!(!bot.stderr().contains(needle), "the log holds the cookie");
    assert!(
        !bot.stderr().contains(WAKE_SECRET),
        "the log holds the secret"
    );
    for (key, value) in every_value(&rig).await {
        assert!(!value.contains(needle), "{key} holds the cookie");
    }
    for text in delivered(&rig, ALICE) {
        assert!(!text.contains(needle));
    }
    let metrics = rig.metrics().await;
    assert!(!metrics.contains(needle) && !metrics.contains(WAKE_SECRET));
    assert!(
        metrics.contains("oncebot_notify_forwarded_total"),
        "{metrics}"
    );
    let page = rig
        .http
        .get(rig.url("/admin/"))
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!page.contains(needle) && !page.contains(WAKE_SECRET));
    assert!(page.contains("MoviePilot notifications (relay)"), "{page}");
    assert!(
        page.contains("history row "),
        "the relay's position is shown"
    );
}

/// Every key of the rig's Redis (SCAN) with its whole value as text, by type.
async fn every_value(rig: &Rig) -> Vec<(String, String)> {
    let mut conn = rig.store.conn().await;
    let mut keys: Vec<String> = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut conn)
            .await
            .unwrap();
        keys.extend(batch);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    let mut out = Vec::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        // Each type's whole-value read; one query below.
        let mut read = match kind.as_str() {
            "string" => redis::cmd("GET"),
            "hash" => redis::cmd("HGETALL"),
            "list" => redis::cmd("LRANGE"),
            "set" => redis::cmd("SMEMBERS"),
            "zset" => redis::cmd("ZRANGE"),
            "stream" => redis::cmd("XRANGE"),
            other => panic!("{key} is a {other}"),
        };
        read.arg(&key);
        match kind.as_str() {
            "list" | "zset" => read.arg(0).arg(-1),
            "stream" => read.arg("-").arg("+"),
            _ => &mut read,
        };
        let value: redis::Value = read.query_async(&mut conn).await.unwrap();
        out.push((key, format!("{value:?}")));
    }
    out
}

/// Two relay processes: one polls; when it is killed the other takes over within the lease, and
/// every notification is forwarded once.
#[tokio::test]
async fn two_relays_poll_one_at_a_time_and_the_survivor_takes_over() {
    let rig = relay_rig(SimOptions::v3(), &[]).await;
    let _dispatcher = dispatcher(&rig).await;
    let mut a = relay(&rig).await;
    let b = spawn(&rig, &["notify"], None, "notification relay started").await;
    rig.mp.notify(note(Organize, "with-two-relays"));
    wait_got(&rig, ALICE, "with-two-relays", 1).await;
    assert!(a.stderr().contains("this process now polls"));
    assert!(
        !b.stderr().contains("this process now polls"),
        "only one polls"
    );
    a.sigkill().await;
    b.wait_for_stderr("this process now polls", Duration::from_secs(10))
        .await;
    rig.mp.notify(note(Organize, "after-the-takeover"));
    wait_got(&rig, ALICE, "after-the-takeover", 1).await;
    assert_eq!(got(&rig, ALICE, "with-two-relays"), 1);
    assert_eq!(got(&rig, ALICE, "after-the-takeover"), 1);
}

/// SIGKILL after the history was read and before the script: the restart reads it again and
/// forwards it once.
#[tokio::test]
async fn a_crash_after_reading_the_history_loses_nothing_and_repeats_nothing() {
    crash_then_restart("notify.after_read").await;
}

/// SIGKILL after the script and before the send: the restart knows the row; the dispatcher
/// delivers the queued entry once.
#[tokio::test]
async fn a_crash_after_recording_repeats_nothing() {
    crash_then_restart("notify.after_record").await;
}

async fn crash_then_restart(point: &str) {
    let rig = relay_rig(SimOptions::v2_5_6(), &[]).await;
    let mut first = relay(&rig).await;
    first.sigkill().await;
    for i in 1..=3 {
        rig.mp.notify(note(Organize, &format!("crash-{i}")));
    }
    let mut frozen = spawn(&rig, &["notify"], Some(point), "this process now polls").await;
    frozen
        .wait_for_stderr(
            &format!("crash point {point} reached"),
            Duration::from_secs(15),
        )
        .await;
    frozen.sigkill().await;
    let _relay = relay(&rig).await;
    let _dispatcher = dispatcher(&rig).await;
    for i in 1..=3 {
        wait_got(&rig, ALICE, &format!("crash-{i}"), 1).await;
    }
    two_more_polls(&rig).await;
    for i in 1..=3 {
        assert_eq!(got(&rig, ALICE, &format!("crash-{i}")), 1, "crash-{i}");
    }
}

/// SIGKILL of the dispatcher between Telegram's answer and its record: the one documented
/// extra copy at most, and it shows in the reply's delivery record.
#[tokio::test]
async fn a_dispatcher_crash_after_the_send_repeats_at_most_the_last_hop() {
    let rig = relay_rig(SimOptions::late_v2(), &[]).await;
    let _relay = relay(&rig).await;
    let mut frozen = spawn(
        &rig,
        &["dispatcher"],
        Some("dispatch.after_send"),
        "dispatcher started",
    )
    .await;
    rig.mp.notify(note(Organize, "last-hop"));
    frozen
        .wait_for_stderr(
            "crash point dispatch.after_send reached",
            Duration::from_secs(15),
        )
        .await;
    frozen.sigkill().await;
    let _dispatcher = dispatcher(&rig).await;
    wait_got(&rig, ALICE, "last-hop", 1).await;
    let store = rig.store.clone();
    let record = eventually("the reply's delivery record", RECOVERY_DEADLINE, || {
        let store = store.clone();
        async move {
            let mut conn = store.conn().await;
            let keys: Vec<String> = conn.keys(store.keys.reply("*")).await.unwrap();
            for key in keys {
                let h: std::collections::BTreeMap<String, String> =
                    conn.hgetall(&key).await.unwrap();
                if h.get("state").map(String::as_str) == Some("sent") {
                    return Some(h);
                }
            }
            None
        }
    })
    .await;
    let copies = got(&rig, ALICE, "last-hop");
    assert!((1..=2).contains(&copies), "{copies}");
    let attempts: u64 = record
        .get("attempts")
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    assert_eq!(
        attempts as usize, copies,
        "each copy is an attempt in the record: {record:?}"
    );
}

// ----- notify.lua through the ledger: every answer of its header -----

fn ledger_row(id: u64, text: &str, chats: &[i64]) -> oncebot::ledger::NotifyRow {
    oncebot::ledger::NotifyRow {
        identity: format!("{id}|2026-01-01 10:00:00|{text}"),
        digest: format!("digest-{text}"),
        reg_secs: 1_767_261_600,
        id,
        reg_time: "2026-01-01 10:00:00".into(),
        text: text.into(),
        photo: None,
        chats: chats
            .iter()
            .map(|&c| oncebot::vocabulary::ChatTarget::chat(c))
            .collect(),
        category: oncebot::vocabulary::NoticeCategory::Download,
        mine: Vec::new(),
        seen_only: false,
    }
}

/// "ok" and "exists": a start that meets a position changes nothing; a row recorded twice (two
/// pollers at once) is queued once, and a chat named twice in a row gets one entry.
#[tokio::test]
async fn the_script_queues_each_row_once_per_chat_however_often_it_is_recorded() {
    use oncebot::ledger::{NotifyMode, Skipped};
    let (_redis, ledger, store, _) =
        crate::support::app::spawn_ledger(&[("ONCEBOT__TELEGRAM__ADMIN_CHATS", "1001")]).await;
    let window = Duration::from_secs(120);
    let newest = ledger_row(7, "newest", &[]);
    let first = ledger
        .notify_record(NotifyMode::Start { newest: &newest }, &[], None, window, "")
        .await
        .unwrap();
    assert!(!first.position_existed);
    let again = ledger
        .notify_record(
            NotifyMode::Start {
                newest: &ledger_row(9, "other", &[]),
            },
            &[],
            None,
            window,
            "",
        )
        .await
        .unwrap();
    assert!(again.position_existed, "a second start changes nothing");
    assert_eq!(ledger.notify_position().await.unwrap().unwrap().id, 7);

    let rows = [ledger_row(8, "a", &[ALICE, ALICE, BOB])];
    let (one, two) = tokio::join!(
        ledger.notify_record(NotifyMode::Rows, &rows, None, window, ""),
        ledger.notify_record(NotifyMode::Rows, &rows, None, window, ""),
    );
    let (one, two) = (one.unwrap(), two.unwrap());
    assert_eq!(one.forwarded + two.forwarded, 1, "{one:?} {two:?}");
    assert_eq!(one.seen_before + two.seen_before, 1);
    assert_eq!(one.messages + two.messages, 2, "ALICE once, BOB once");
    let replies = store.replies().await;
    assert_eq!(replies.len(), 2, "{replies:#?}");
    assert!(replies.iter().all(|r| r["kind"] == "notification"));

    // A repeat within the window is collapsed; a row with no chat is unrouted; a skip queues
    // one notice per admin chat.
    let more = [ledger_row(10, "a", &[ALICE]), ledger_row(11, "b", &[])];
    let skipped = Skipped {
        count: 5,
        notice: "5 skipped",
    };
    let r = ledger
        .notify_record(NotifyMode::Rows, &more, Some(skipped), window, "")
        .await
        .unwrap();
    assert_eq!(
        (r.forwarded, r.collapsed, r.unrouted, r.messages),
        (0, 1, 1, 0)
    );
    let p = ledger.notify_position().await.unwrap().unwrap();
    assert_eq!((p.id, p.skipped, p.collapsed, p.unrouted), (11, 5, 1, 1));
    let notices: Vec<_> = store
        .replies()
        .await
        .into_iter()
        .filter(|r| r["kind"] == "notice")
        .collect();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0]["chat_id"], ALICE.to_string());
}

/// A notification with a poster goes as one photo; one whose poster cannot be fetched goes as
/// text: once each, never both forms, never none.
#[tokio::test]
async fn a_poster_that_fails_still_delivers_the_notification_once_as_text() {
    let posters = oncebot_tools::sim::posters::PosterServer::start()
        .await
        .unwrap();
    let rig = relay_rig(SimOptions::v2_5_6(), &[]).await;
    let _relay = relay(&rig).await;
    let _dispatcher = dispatcher(&rig).await;
    rig.mp
        .notify(note(Download, "poster-loads").with_image(&posters.poster("dune2")));
    rig.mp
        .notify(note(Download, "poster-missing").with_image(&posters.missing("gone")));
    wait_got(&rig, ALICE, "poster-loads", 1).await;
    wait_got(&rig, ALICE, "poster-missing", 1).await;
    let ok = |method: &str, needle: &str| {
        rig.tg
            .calls()
            .into_iter()
            .filter(|c| c.method == method && c.status() == Some(200))
            .filter(|c| {
                [c.params.get("caption"), c.params.get("text")]
                    .into_iter()
                    .flatten()
                    .any(|t| t.as_str().is_some_and(|t| t.contains(needle)))
            })
            .count()
    };
    assert_eq!(ok("sendPhoto", "poster-loads"), 1, "{:#?}", rig.tg.calls());
    assert_eq!(ok("sendMessage", "poster-loads"), 0, "never both forms");
    assert_eq!(ok("sendPhoto", "poster-missing"), 0);
    assert_eq!(ok("sendMessage", "poster-missing"), 1, "the text fallback");
}

/// MoviePilot refusing the relay's credentials (its API key changed): the admin chats are told
/// once, nothing advances, and once the key works again the notification written meanwhile
/// arrives and the notice ends.
#[tokio::test]
async fn refused_credentials_are_announced_and_the_relay_catches_up_once_they_work() {
    let opts = SimOptions::late_v2();
    let key = opts.api_token.clone();
    let rig = relay_rig(
        opts,
        &[
            ("ONCEBOT__MOVIEPILOT__API_KEY", key.as_str()),
            ("ONCEBOT__MOVIEPILOT__USERNAME", ""),
            ("ONCEBOT__MOVIEPILOT__PASSWORD", ""),
        ],
    )
    .await;
    // ALICE is the admin chat here: the notice names settings, for the operator.
    rig.tg.operator_chat(ALICE);
    let _relay = relay(&rig).await;
    let _dispatcher = dispatcher(&rig).await;
    rig.mp.rotate_api_token("a-new-api-token");
    rig.mp.notify(note(Organize, "while-refused"));
    wait_got(&rig, ALICE, "API", 1).await;
    assert_eq!(
        got(&rig, ALICE, "while-refused"),
        0,
        "nothing while refused"
    );
    let notice = rig.store.get(&rig.store.keys.notice("credentials")).await;
    assert!(
        notice.is_some(),
        "the deployment's credentials notice is raised"
    );
    rig.mp.rotate_api_token(&key);
    wait_got(&rig, ALICE, "while-refused", 1).await;
    let store = rig.store.clone();
    eventually("the notice ended", RECOVERY_DEADLINE, || {
        let store = store.clone();
        async move {
            store
                .get(&store.keys.notice("credentials"))
                .await
                .is_none()
                .then_some(())
        }
    })
    .await;
}

/// `notify.to_requester`: a notification about media someone asked for through oncebot also
/// reaches the chat they asked in: matched by MoviePilot's `title_year` and season at the start
/// of its title; another season, another media or another type does not; a requester whose
/// chat is a target anyway gets one copy.
#[tokio::test]
async fn a_notification_about_media_someone_asked_for_reaches_their_chat_once() {
    let rig = relay_rig(SimOptions::v2_5_6(), &[]).await;
    let _bot = rig.start_pipeline().await;
    let _relay = relay(&rig).await;
    // Bob asks in his private chat; Alice's private chat is also the admin chat.
    rig.post(&crate::support::private_text(
        1,
        BOB,
        "/subscribe tmdb:108545 S1",
    ))
    .await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    rig.send(2, "/subscribe tmdb:438631").await;
    rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    // Every `asked:<digest>` key starts as the empty digest's name does.
    let asked_prefix = rig.store.keys.asked("");
    let asked: Vec<String> = rig
        .store
        .all_keys()
        .await
        .into_iter()
        .filter(|k| k.starts_with(&asked_prefix))
        .collect();
    assert_eq!(asked.len(), 2, "{asked:?}");

    rig.mp.notify(note(
        NotificationType::Subscribe,
        "三体 (2023) S02 已添加订阅",
    ));
    rig.mp.notify(note(SiteMessage, "三体 (2023) S01 站点消息"));
    rig.mp
        .notify(note(NotificationType::Subscribe, "Dune (2021) 已添加订阅"));
    rig.mp
        .notify(note(Download, "三体 (2023) S01 E01-E08 开始下载"));
    wait_got(&rig, ALICE, "开始下载", 1).await;
    wait_got(&rig, ALICE, "S02", 1).await;
    two_more_polls(&rig).await;
    // Issue 45: each asker has a live card of their media, which says what these would.
    assert_eq!(got(&rig, BOB, "开始下载"), 0, "{:#?}", delivered(&rig, BOB));
    assert_eq!(got(&rig, BOB, "S02"), 0, "another season is not bob's");
    assert_eq!(
        got(&rig, BOB, "站点消息"),
        0,
        "a site message is about no media"
    );
    assert_eq!(got(&rig, BOB, "Dune"), 0, "alice asked for Dune, not bob");
    assert_eq!(
        got(&rig, ALICE, "Dune (2021) 已添加订阅"),
        0,
        "the asker's card says it, also where her chat is the admin chat"
    );
    assert_eq!(got(&rig, ALICE, "S02"), 1, "the admin chat gets every row");

    // Bob's card ends (MoviePilot completed the subscription): from then on the title guess
    // brings him that media's notices again.
    let sub: u64 = rig.store.job(1).await["mp_subscription_id"]
        .parse()
        .unwrap();
    assert!(rig.mp.complete_subscription(sub));
    eventually("bob's card to close", RECOVERY_DEADLINE, || async {
        let mut conn = rig.store.conn().await;
        let open: Vec<u64> = conn
            .zrange(rig.store.keys.cards_open(), 0, -1)
            .await
            .unwrap();
        (!open.contains(&1)).then_some(())
    })
    .await;
    rig.mp
        .notify(note(Download, "三体 (2023) S01 E09 开始下载"));
    wait_got(&rig, BOB, "E09 开始下载", 1).await;
}

/// With `notify.to_requester` off only the configured chats get notifications, and nothing
/// about who asked is kept.
#[tokio::test]
async fn with_to_requester_off_only_the_configured_chats_get_notifications() {
    let rig = relay_rig(
        SimOptions::v2_5_6(),
        &[("ONCEBOT__NOTIFY__TO_REQUESTER", "false")],
    )
    .await;
    let _bot = rig.start_pipeline().await;
    let _relay = relay(&rig).await;
    rig.post(&crate::support::private_text(
        1,
        BOB,
        "/subscribe tmdb:108545 S1",
    ))
    .await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    rig.mp
        .notify(note(Download, "三体 (2023) S01 E01-E08 开始下载"));
    wait_got(&rig, ALICE, "开始下载", 1).await;
    two_more_polls(&rig).await;
    assert_eq!(got(&rig, BOB, "开始下载"), 0);
    // Every `asked:<digest>` key starts as the empty digest's name does.
    let asked_prefix = rig.store.keys.asked("");
    assert!(
        rig.store
            .all_keys()
            .await
            .iter()
            .all(|k| !k.starts_with(&asked_prefix))
    );
}

/// Issue 41, item 5: wake-up calls as fast as a client can send them make at most one read of
/// MoviePilot's history per `notify.min_poll_gap_ms` (14,164 wake-ups once made 88 reads back to
/// back, 22 a second); and a notification whose wake-up arrives inside the gap is served when the
/// gap has passed, not at the next interval.
#[tokio::test]
async fn wake_ups_make_at_most_one_read_per_gap_and_one_inside_it_is_served_at_its_end() {
    let rig = relay_rig(
        SimOptions::v2_5_6(),
        &[
            ("ONCEBOT__NOTIFY__POLL_INTERVAL_SECS", "60"),
            ("ONCEBOT__NOTIFY__MIN_POLL_GAP_MS", "1000"),
        ],
    )
    .await;
    let _bot = rig
        .start_roles(&["ingress", "dispatcher", "notify"], None)
        .await;
    position(&rig).await;
    let wake = format!("{}/{WAKE_SECRET}", rig.url("/moviepilot/notify"));
    let payload = serde_json::json!({"type": "system.test"});
    let before = rig.mp.calls(routes::MESSAGE_WEB);
    let started = std::time::Instant::now();
    let mut sent = 0;
    while started.elapsed() < Duration::from_secs(3) {
        let calls = (0..16).map(|_| send_webhook(&wake, &payload, false));
        for status in futures::future::join_all(calls).await {
            assert_eq!(status.unwrap(), 204);
        }
        sent += 16;
    }
    let took = started.elapsed();
    let reads = rig.mp.calls(routes::MESSAGE_WEB) - before;
    assert!(sent > 200, "only {sent} wake-ups in {took:?}");
    assert!(
        (1..=took.as_secs() + 2).contains(&reads),
        "{reads} reads for {sent} wake-ups in {took:?}"
    );

    // A read, then at once a notification and its wake-up: inside the gap, served at its end.
    let read = rig.mp.calls(routes::MESSAGE_WEB);
    assert_eq!(send_webhook(&wake, &payload, false).await.unwrap(), 204);
    eventually("a read", RECOVERY_DEADLINE, || async {
        (rig.mp.calls(routes::MESSAGE_WEB) > read).then_some(())
    })
    .await;
    rig.mp.notify(note(Download, "inside-the-gap"));
    assert_eq!(send_webhook(&wake, &payload, false).await.unwrap(), 204);
    tokio::time::timeout(
        Duration::from_secs(20),
        wait_got(&rig, ALICE, "inside-the-gap", 1),
    )
    .await
    .expect("served at the gap's end, long before the minute's poll");
}

/// Issue 41, item 6: MoviePilot writes "已添加订阅" during the subscribe request, and its Webhook
/// plugin wakes the relay from inside it; the relay forwarded the notice about 30 ms before the
/// worker recorded who asked (real v2.5.6 and v2.14.0, 4 of 4). The ask is now recorded before
/// the create is sent, with the asker's card to come (issue 45): 10 of 10 notices are left to the
/// asker's cards and reach the admin chat once each.
#[tokio::test]
async fn the_notice_moviepilot_sends_during_the_create_is_left_to_the_askers_card() {
    let rig = relay_rig(
        SimOptions::v2_5_6(),
        // No gap: the relay reads the moment the plugin wakes it, as fast as it can lose the race.
        &[("ONCEBOT__NOTIFY__MIN_POLL_GAP_MS", "0")],
    )
    .await;
    let films: Vec<u64> = (1..=10).map(|i| 900_000 + i).collect();
    for (i, id) in films.iter().enumerate() {
        rig.mp
            .add_media(oncebot_tools::sim::moviepilot::SimMedia::movie(
                *id,
                &format!("Race Film {i}"),
                "2020",
            ));
    }
    let _bot = rig.start_pipeline().await;
    let _relay = relay(&rig).await;
    let wake = format!("{}/{WAKE_SECRET}", rig.url("/moviepilot/notify"));
    rig.mp.set_webhook_plugin(Some(&wake));
    for (i, id) in films.iter().enumerate() {
        let update = i as i64 + 1;
        rig.post(&crate::support::private_text(
            update,
            BOB,
            &format!("/subscribe tmdb:{id}"),
        ))
        .await;
        rig.job_in(update as u64, "succeeded", RECOVERY_DEADLINE)
            .await;
    }
    // Issue 45: the card to come is noted with the ask, before the create: the notice
    // MoviePilot sends during it is left to the card, which is the asker's one message.
    for i in 0..films.len() {
        wait_got(&rig, ALICE, &format!("Race Film {i} (2020) 已添加订阅"), 1).await;
    }
    two_more_polls(&rig).await;
    for i in 0..films.len() {
        assert_eq!(
            got(&rig, BOB, &format!("Race Film {i} (2020) 已添加订阅")),
            0,
            "{:#?}",
            delivered(&rig, BOB)
        );
        let job = i as u64 + 1;
        let card: BTreeMap<String, String> = rig
            .store
            .conn()
            .await
            .hgetall(rig.store.keys.card(job))
            .await
            .unwrap();
        assert_eq!(
            card.get("kind").map(String::as_str),
            Some("subscription"),
            "{card:?}"
        );
    }
}

/// Issue 41, item 6: an ask recorded before the call is undone when the job ends `failed` (a
/// failed ask draws no notices of that media for months), and kept while its outcome is open
/// (a retry waits).
#[tokio::test]
async fn a_failed_asks_record_is_removed_and_an_open_ones_kept() {
    // A retry waits long enough to be looked at.
    let rig = relay_rig(
        SimOptions::v2_5_6(),
        &[
            ("ONCEBOT__WORKER__RETRY_MIN_DELAY_MS", "60000"),
            ("ONCEBOT__WORKER__RETRY_MAX_DELAY_MS", "60000"),
        ],
    )
    .await;
    let _bot = rig.start_pipeline().await;
    let _relay = relay(&rig).await;
    let askers = |title: &str, year: &str| {
        let key = rig.store.keys.asked(
            &oncebot::asked::AskedMedia::new(title, Some(year), None)
                .unwrap()
                .digest(),
        );
        let store = rig.store.clone();
        async move {
            let mut conn = store.conn().await;
            let members: Vec<String> = conn.zrange(&key, 0, -1).await.unwrap();
            members
        }
    };
    // Refused for good: the job fails, the ask made before the call is gone.
    rig.mp.fail_next(
        routes::SUBSCRIBE_CREATE,
        MpFault::Status(
            200,
            r#"{"success": false, "message": "订阅失败", "data": {}}"#.into(),
        ),
    );
    rig.post(&crate::support::private_text(
        1,
        BOB,
        "/subscribe tmdb:438631",
    ))
    .await;
    let row = rig.job_in(1, "failed", RECOVERY_DEADLINE).await;
    assert!(!row.contains_key("asked_member"), "{row:?}");
    assert!(askers("Dune", "2021").await.is_empty());
    rig.mp
        .notify(note(NotificationType::Subscribe, "Dune (2021) 已添加订阅"));
    wait_got(&rig, ALICE, "Dune (2021) 已添加订阅", 1).await;
    two_more_polls(&rig).await;
    assert_eq!(got(&rig, BOB, "Dune"), 0, "{:#?}", delivered(&rig, BOB));

    // MoviePilot answers 503: the job waits to retry, its ask stays.
    for _ in 0..10 {
        rig.mp.fail_next(
            routes::SUBSCRIBE_CREATE,
            MpFault::Status(503, "Service Unavailable".into()),
        );
    }
    rig.post(&crate::support::private_text(
        2,
        BOB,
        "/subscribe tmdb:693134",
    ))
    .await;
    let row = rig.job_in(2, "retry_wait", RECOVERY_DEADLINE).await;
    assert_eq!(row["asked_member"], format!("0|{BOB}"), "{row:?}");
    assert_eq!(
        askers("Dune: Part Two", "2024").await,
        vec![format!("0|{BOB}")]
    );
}

/// Issue 41, item 7: per-chat order across a dispatcher's crash (real v2.14.0: a 60-notice
/// backlog for one chat, the dispatcher SIGKILLed mid-send; after the restart 17 older notices
/// arrived after 7-23 newer ones). The restarted dispatcher reads the newer notices while the
/// dead one's are still pending under its name (its liveness has not expired); they wait behind
/// those, which are taken over and sent first. The chat gets every notice in stream order, the
/// one in flight at the kill at most twice.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_chats_notices_keep_their_order_across_a_dispatcher_killed_mid_send() {
    let rig = relay_rig(
        SimOptions::v2_5_6(),
        &[
            ("ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS", "20"),
            ("ONCEBOT__DISPATCHER__RECLAIM_IDLE_MS", "60000"),
        ],
    )
    .await;
    let _relay = relay(&rig).await;
    let title = |n: usize| format!("order-notice-{n:03}");
    for n in 1..=60 {
        rig.mp.notify(note(Download, &title(n)));
    }
    let replies = rig.store.keys.replies_stream();
    eventually("60 notices queued", RECOVERY_DEADLINE, || async {
        (rig.store.stream_len(&replies).await >= 60).then_some(())
    })
    .await;
    let mut first = spawn(
        &rig,
        &["dispatcher"],
        Some("dispatch.after_send"),
        "dispatcher started",
    )
    .await;
    first
        .wait_for_stderr(
            "crash point dispatch.after_send reached",
            Duration::from_secs(10),
        )
        .await;
    first.sigkill().await;
    for n in 61..=80 {
        rig.mp.notify(note(Download, &title(n)));
    }
    eventually("80 notices queued", RECOVERY_DEADLINE, || async {
        (rig.store.stream_len(&replies).await >= 80).then_some(())
    })
    .await;
    // At once: the dead dispatcher's liveness has not expired yet.
    let _second = dispatcher(&rig).await;
    wait_got(&rig, ALICE, &title(80), 1).await;
    eventually("every notice", RECOVERY_DEADLINE, || async {
        (1..=80)
            .all(|n| got(&rig, ALICE, &title(n)) >= 1)
            .then_some(())
    })
    .await;
    let got_in_order: Vec<usize> = delivered(&rig, ALICE)
        .iter()
        .filter_map(|t| {
            let at = t.find("order-notice-")?;
            t[at + 13..at + 16].parse().ok()
        })
        .collect();
    let mut seen = got_in_order.clone();
    seen.dedup();
    assert_eq!(seen, (1..=80).collect::<Vec<_>>(), "{got_in_order:?}");
    assert!(
        got_in_order.len() <= 81,
        "only the one in flight may come twice: {got_in_order:?}"
    );
}
