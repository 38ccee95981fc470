//! Issue 45, item 6: each person's own notices (`/notify`). Through the ledger: what notify.lua
//! does with a row for a private chat under its person's settings (only mine, off, quiet hours
//! with the night's allowance, the rest held and summed up once by quiet_end.lua), groups never
//! affected. Through real processes: the menu and its buttons set the asker's own settings, a
//! forged tap changes nobody's, and the relay's notices follow them (only mine; quiet hours
//! sent with `disable_notification`).

use std::collections::BTreeMap;
use std::time::Duration;

use oncebot::ledger::{NotifyMode, NotifyRow, QuietSummary, Skipped};
use oncebot::vocabulary::{
    ChatTarget, NoticeCategory, NoticeMode, NotificationType, QUIET_NIGHT_MAX, QuietHours,
};
use oncebot_tools::sim::moviepilot::{SimNotification, SimOptions};
use redis::AsyncCommands as _;

use crate::grants::{button, message_in, tap};
use crate::notify::two_more_polls;
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, GROUP, eventually, tap_answer};

/// A third person, with quiet hours.
const CAROL: i64 = 1003;

fn row(id: u64, category: NoticeCategory, chats: &[i64], mine: &[i64]) -> NotifyRow {
    NotifyRow {
        identity: format!("{id}|2026-12-07 23:30:00|r{id}"),
        digest: format!("digest-{id}"),
        reg_secs: 1_765_150_200 + id as i64,
        id,
        reg_time: "2026-12-07 23:30:00".into(),
        text: format!("row-{id}"),
        photo: None,
        chats: chats.iter().map(|&c| ChatTarget::chat(c)).collect(),
        category,
        mine: mine.to_vec(),
        seen_only: false,
    }
}

fn words() -> QuietSummary {
    QuietSummary {
        text: "held {n}: {types}".into(),
        labels: NoticeCategory::ALL.map(|c| c.as_str().to_string()),
        separator: ", ".into(),
    }
}

/// The replies queued for `chat`: (text, silent).
async fn queued(store: &crate::support::Store, chat: i64) -> Vec<(String, bool)> {
    store
        .replies()
        .await
        .into_iter()
        .filter(|r| r["chat_id"] == chat.to_string())
        .map(|r| (r["text"].clone(), r.get("silent").is_some_and(|s| s == "1")))
        .collect()
}

#[tokio::test]
async fn only_mine_off_and_quiet_hours_decide_each_private_notice_and_groups_keep_theirs() {
    // CAROL is also the admin chat: the relay's own notice to it is never muted.
    let (_redis, ledger, store, _) =
        crate::support::app::spawn_ledger(&[("ONCEBOT__TELEGRAM__ADMIN_CHATS", "1003")]).await;
    let window = Duration::ZERO;
    ledger
        .notify_record(
            NotifyMode::Start {
                newest: &row(1, NoticeCategory::Other, &[], &[]),
            },
            &[],
            None,
            window,
            "",
        )
        .await
        .unwrap();
    ledger
        .set_notice_mode(ALICE, NoticeCategory::Download, NoticeMode::Mine)
        .await
        .unwrap();
    ledger
        .set_notice_mode(BOB, NoticeCategory::Site, NoticeMode::Off)
        .await
        .unwrap();
    ledger
        .set_quiet_hours(CAROL, QuietHours::parse("23:00-07:00"))
        .await
        .unwrap();
    // Group routes are the operator's: settings never touch them (a group id is not a person's).
    ledger
        .set_notice_mode(GROUP, NoticeCategory::Download, NoticeMode::Off)
        .await
        .unwrap();

    // 23:30 on 2026-12-07 in the day zone; the minute began at `at`.
    let at: i64 = 1_765_150_200_000;
    let clock = format!("1410|2026-12-07|2026-12-06|{at}|{QUIET_NIGHT_MAX}");
    let mut rows = vec![
        row(2, NoticeCategory::Download, &[ALICE, GROUP], &[]),
        row(3, NoticeCategory::Download, &[ALICE], &[ALICE]),
        row(4, NoticeCategory::Site, &[BOB], &[]),
        row(5, NoticeCategory::Download, &[BOB], &[]),
    ];
    let night = QUIET_NIGHT_MAX as u64 + 2;
    rows.extend((0..night).map(|i| row(10 + i, NoticeCategory::Download, &[CAROL], &[])));
    let skipped = Skipped {
        count: 3,
        notice: "3 skipped",
    };
    for (i, chunk) in rows.chunks(20).enumerate() {
        let skip = (i == 0).then_some(skipped);
        ledger
            .notify_record(NotifyMode::Rows, chunk, skip, window, &clock)
            .await
            .unwrap();
    }
    assert_eq!(
        queued(&store, ALICE).await,
        [("row-3".to_string(), false)],
        "only mine: the row matched to ALICE, not the routed one"
    );
    assert_eq!(queued(&store, GROUP).await, [("row-2".to_string(), false)]);
    assert_eq!(queued(&store, BOB).await, [("row-5".to_string(), false)]);
    let mut carol = queued(&store, CAROL).await;
    let notice = carol.iter().position(|(t, _)| t == "3 skipped").unwrap();
    assert_eq!(
        carol.remove(notice),
        ("3 skipped".to_string(), false),
        "an admin notice in quiet hours: with a sound, not counted"
    );
    assert_eq!(
        carol.len(),
        QUIET_NIGHT_MAX as usize,
        "the night's allowance"
    );
    assert!(carol.iter().all(|(_, silent)| *silent), "{carol:?}");

    // The two past the allowance: held, due at 07:00 (450 minutes after 23:30).
    let mut conn = store.conn().await;
    let held: BTreeMap<String, String> = conn
        .hgetall(store.keys.notices_held_of(CAROL))
        .await
        .unwrap();
    assert_eq!(held, BTreeMap::from([("download".into(), "2".into())]));
    let end = at + 450 * 60_000;
    let due: Option<i64> = conn.zscore(store.keys.notices_held(), CAROL).await.unwrap();
    assert_eq!(due, Some(end));

    // Summed up once, when the hours end: not before, not twice.
    assert_eq!(ledger.quiet_end(end as u64 - 1, &words()).await.unwrap(), 0);
    let words = words();
    let (one, two) = tokio::join!(
        ledger.quiet_end(end as u64, &words),
        ledger.quiet_end(end as u64, &words)
    );
    assert_eq!(one.unwrap() + two.unwrap(), 1);
    let carol = queued(&store, CAROL).await;
    assert_eq!(
        carol.last().unwrap(),
        &("held 2: download 2".to_string(), false),
        "the summary makes a sound"
    );
    assert!(
        !conn
            .exists::<_, bool>(store.keys.notices_held_of(CAROL))
            .await
            .unwrap()
    );

    // The next night has an allowance of its own; outside the hours a notice rings again.
    let next_night = format!(
        "1381|2026-12-08|2026-12-07|{}|{QUIET_NIGHT_MAX}",
        at + 86_400_000
    );
    let daytime = format!(
        "720|2026-12-08|2026-12-07|{}|{QUIET_NIGHT_MAX}",
        at + 45_000_000
    );
    for (id, clock) in [(100, &next_night), (101, &daytime)] {
        let rows = [row(id, NoticeCategory::Site, &[CAROL], &[])];
        ledger
            .notify_record(NotifyMode::Rows, &rows, None, window, clock)
            .await
            .unwrap();
    }
    let carol = queued(&store, CAROL).await;
    let tail = &carol[carol.len() - 2..];
    assert_eq!(
        tail,
        [
            ("row-100".to_string(), true),
            ("row-101".to_string(), false)
        ]
    );
}

/// The rig for the relay with ALICE's private chat among `notify.chats` (she gets everything
/// routed there), the day zone UTC.
async fn relay_rig() -> Rig {
    let env = [
        ("ONCEBOT__NOTIFY__ENABLED", "true"),
        ("ONCEBOT__NOTIFY__POLL_INTERVAL_SECS", "1"),
        ("ONCEBOT__NOTIFY__HEARTBEAT_INTERVAL_MS", "200"),
        ("ONCEBOT__NOTIFY__LIVENESS_TTL_MS", "2500"),
        ("ONCEBOT__NOTIFY__CHATS", "1001"),
        ("ONCEBOT__COMMANDS__DAY_ZONE", "UTC"),
        // The followers' tick, which sums up what quiet hours held.
        ("ONCEBOT__FOLLOW__PROGRESS_POLL_SECS", "1"),
        ("ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS", "0"),
        ("ONCEBOT__DISPATCHER__GLOBAL_PER_SECOND", "1000"),
        ("ONCEBOT__DISPATCHER__SET_COMMANDS", "false"),
    ];
    Rig::with_sim(SimOptions::v2_5_6(), &env).await
}

/// Waits for a delivery to `chat` containing `needle`; whether it was silent.
async fn delivered_silently(rig: &Rig, chat: i64, needle: &str) -> bool {
    eventually(&format!("{needle:?} to {chat}"), RECOVERY_DEADLINE, || {
        let found = rig
            .tg
            .sent()
            .into_iter()
            .find(|m| m.chat_id == chat && m.text.contains(needle));
        async move { found.map(|m| m.silent) }
    })
    .await
}

async fn prefs(rig: &Rig, user: i64) -> BTreeMap<String, String> {
    let mut conn = rig.store.conn().await;
    conn.hgetall(rig.store.keys.notice_prefs(user))
        .await
        .unwrap()
}

#[tokio::test]
async fn the_notify_menu_sets_only_mine_and_quiet_hours_and_a_forged_tap_changes_nothing() {
    let rig = relay_rig().await;
    let _bot = rig
        .start_roles(&["ingress", "worker", "dispatcher", "notify"], None)
        .await;
    // The relay's first poll sets its position: what MoviePilot writes after it is forwarded.
    eventually("the relay's position", RECOVERY_DEADLINE, || async {
        let mut conn = rig.store.conn().await;
        let at: Option<String> = conn
            .hget(rig.store.keys.notify_position(), "polled_at")
            .await
            .unwrap();
        at.map(|_| ())
    })
    .await;
    rig.send(100, "/notify").await;
    let menu = message_in(&rig, ALICE, "The MoviePilot notices you get").await;
    assert!(menu.text.contains("Downloads: all"), "{}", menu.text);
    rig.post(&tap(
        101,
        ALICE,
        &menu,
        &button(&menu, "Downloads·only mine"),
    ))
    .await;
    let saved = message_in(&rig, ALICE, "Saved.").await;
    assert!(
        saved.text.contains("Downloads: only mine"),
        "{}",
        saved.text
    );
    assert_eq!(
        (saved.message_id, rig.tg.count("sendMessage")),
        (menu.message_id, 1),
        "the answer edited the menu in place: one message in the chat"
    );
    assert_eq!(
        prefs(&rig, ALICE).await,
        BTreeMap::from([("download".into(), "mine".into())])
    );

    // BOB taps ALICE's button: the token is hers; nothing of anyone's changes.
    let forged = tap(102, BOB, &saved, &button(&saved, "Sites·off"));
    rig.post(&forged).await;
    let answer = tap_answer(&rig, &forged).await;
    assert!(answer.contains("not for you"), "{answer}");
    assert_eq!(prefs(&rig, ALICE).await.len(), 1);
    assert!(prefs(&rig, BOB).await.is_empty());

    // The relay: a download notice not hers stays away, a site notice comes, with a sound.
    rig.mp.notify(SimNotification::new(
        NotificationType::Download,
        "dl-not-hers",
        "x",
    ));
    rig.mp.notify(SimNotification::new(
        NotificationType::SiteMessage,
        "site-for-all",
        "x",
    ));
    assert!(!delivered_silently(&rig, ALICE, "site-for-all").await);
    two_more_polls(&rig).await;
    assert!(
        rig.tg
            .sent()
            .iter()
            .all(|m| !m.text.contains("dl-not-hers")),
        "only mine"
    );

    // Quiet hours around now (UTC): the next notice arrives silently.
    let epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let minute = (epoch.as_secs() % 86_400 / 60) as i64;
    let at = |m: i64| {
        let m = m.rem_euclid(1440);
        format!("{:02}:{:02}", m / 60, m % 60)
    };
    let hours = format!("{}-{}", at(minute - 60), at(minute + 60));
    rig.send(103, &format!("/notify quiet {hours}")).await;
    message_in(&rig, ALICE, &format!("Quiet hours: {hours} (UTC)")).await;
    rig.mp.notify(SimNotification::new(
        NotificationType::SiteMessage,
        "in-quiet-hours",
        "x",
    ));
    assert!(delivered_silently(&rig, ALICE, "in-quiet-hours").await);

    // Made-up callback data changes nothing either.
    let made_up = tap(104, ALICE, &saved, "t:0123456789abcdef0123456789abcdef");
    rig.post(&made_up).await;
    tap_answer(&rig, &made_up).await;
    assert_eq!(prefs(&rig, ALICE).await.len(), 2, "download and quiet");

    // What quiet hours held is summed up by a worker once the hours ended, with a sound.
    let mut conn = rig.store.conn().await;
    let _: () = conn
        .hset(rig.store.keys.notices_held_of(ALICE), "site", 3)
        .await
        .unwrap();
    let _: () = conn
        .zadd(rig.store.keys.notices_held(), ALICE, 1)
        .await
        .unwrap();
    let summary = "During your quiet hours 3 more notices were not pushed: Sites 3.";
    assert!(!delivered_silently(&rig, ALICE, summary).await);
    let held: Vec<i64> = conn
        .zrange(rig.store.keys.notices_held(), 0, -1)
        .await
        .unwrap();
    assert!(held.is_empty(), "{held:?}");
}
