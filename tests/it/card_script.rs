//! card.lua and the card's side of reply_begin.lua, called through the ledger against a real
//! Redis (issue 45): every outcome card.lua's header lists, the pace of progress edits, a
//! closed card never changing, and an edit older than the card's newest dropped when it comes
//! to be sent.

use std::time::Duration;

use oncebot::ledger::{Begin, CardStep, ReplyEntry, ReplyKind};
use oncebot::vocabulary::CardState;
use redis::AsyncCommands as _;

use crate::support::Store;
use crate::support::app::spawn_ledger;

const MINUTE: Duration = Duration::from_secs(60);

/// A card as include/cards.lua opens it, already showing message `message_id`.
async fn seed(store: &Store, id: u64, chat: i64, message_id: i64) {
    let mut conn = store.conn().await;
    let member = format!("0|{chat}|{id}");
    let _: () = conn
        .hset_multiple(
            store.keys.card(id),
            &[
                ("kind", "download".to_string()),
                ("chat_id", chat.to_string()),
                ("job", id.to_string()),
                ("state", "started".to_string()),
                ("seq", "0".to_string()),
                ("queued", "0".to_string()),
                ("message_id", message_id.to_string()),
                ("follow_digest", "d".to_string()),
                ("follow_member", member.clone()),
            ],
        )
        .await
        .unwrap();
    let _: () = conn.zadd(store.keys.cards_open(), id, 1).await.unwrap();
    let _: () = conn
        .zadd(store.keys.following("d"), &member, 1)
        .await
        .unwrap();
}

fn step(state: CardState, text: &str) -> CardStep {
    CardStep {
        state: Some(state),
        text: text.into(),
        ..CardStep::default()
    }
}

/// The replies entries of card `id`, read into the dispatchers' group (so they are pending, as
/// a dispatcher holds them).
async fn taken(
    store: &Store,
    id: u64,
) -> Vec<(String, std::collections::BTreeMap<String, String>)> {
    let mut conn = store.conn().await;
    let read: redis::streams::StreamReadReply = conn
        .xread_options(
            &[store.keys.replies_stream()],
            &[">"],
            &redis::streams::StreamReadOptions::default()
                .group("dispatchers", "d1")
                .count(100),
        )
        .await
        .unwrap();
    read.keys
        .into_iter()
        .flat_map(|k| k.ids)
        .map(|e| {
            let fields = e
                .map
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        redis::from_redis_value::<String>(v.clone()).unwrap(),
                    )
                })
                .collect::<std::collections::BTreeMap<_, _>>();
            (e.id, fields)
        })
        .filter(|(_, f)| {
            f.get("card").map(String::as_str) == Some(&id.to_string())
                || f.get("kind").map(String::as_str) == Some("card_end")
        })
        .collect()
}

#[tokio::test]
async fn a_cards_steps_are_ordered_paced_and_final() {
    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;
    seed(&store, 7, 42, 500).await;
    let card = ledger.cards(&[7]).await.unwrap().remove(0);

    // A new state: seq 1, its edit queued.
    let done = ledger
        .card_step(&card, &step(CardState::Downloading, "t1"), MINUTE, "")
        .await
        .unwrap();
    assert_eq!((done.outcome.as_str(), done.seq), ("changed", 1));
    // A step computed from the card as it was before: refused.
    let stale = ledger
        .card_step(&card, &step(CardState::Downloaded, "x"), MINUTE, "")
        .await
        .unwrap();
    assert_eq!(stale.outcome, "stale");
    // Only the percent moved, within a minute of the last change: held, nothing queued.
    let card = ledger.cards(&[7]).await.unwrap().remove(0);
    let progress = CardStep {
        progress: true,
        ..step(CardState::Downloading, "t2")
    };
    let held = ledger
        .card_step(&card, &progress, MINUTE, "")
        .await
        .unwrap();
    assert_eq!((held.outcome.as_str(), held.seq), ("held", 1));
    // The same text again: nothing new.
    let same = ledger
        .card_step(&card, &step(CardState::Downloading, "t1"), MINUTE, "")
        .await
        .unwrap();
    assert_eq!(same.outcome, "same");
    let first = taken(&store, 7).await;
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0].1["kind"], "card");
    assert_eq!(first[0].1["edit_message_id"], "500");
    assert_eq!(first[0].1["card_seq"], "1");

    // The end: its last edit and a notice in reply to the card; closed, and never again.
    let fin = CardStep {
        notice: "n".into(),
        ..step(CardState::InLibrary, "t3")
    };
    let done = ledger.card_step(&card, &fin, MINUTE, "").await.unwrap();
    assert_eq!((done.outcome.as_str(), done.seq), ("changed", 2));
    let last = taken(&store, 7).await;
    assert_eq!(last.len(), 2, "{last:?}");
    assert_eq!(last[0].1["card_seq"], "2");
    assert_eq!(last[1].1["kind"], "card_end");
    assert_eq!(last[1].1["reply_to"], "500");
    let mut conn = store.conn().await;
    let open: Vec<u64> = conn.zrange(store.keys.cards_open(), 0, -1).await.unwrap();
    assert!(open.is_empty());
    let following: Vec<String> = conn.zrange(store.keys.following("d"), 0, -1).await.unwrap();
    assert!(following.is_empty());
    let ttl: i64 = conn.ttl(store.keys.card(7)).await.unwrap();
    assert!(ttl > 0, "a closed card expires");
    let card = ledger.cards(&[7]).await.unwrap().remove(0);
    let after = ledger
        .card_step(&card, &step(CardState::Downloading, "t4"), MINUTE, "")
        .await
        .unwrap();
    assert_eq!(after.outcome, "closed");

    // The seq-1 edit, sent after the seq-2 one was queued: dropped unsent.
    let edit = |entry: &str, seq: u64| ReplyEntry {
        entry: entry.to_string(),
        chat_id: 42,
        kind: Some(ReplyKind::Card),
        text: "t".into(),
        edit_message_id: Some(500),
        card: Some((7, seq)),
        ..ReplyEntry::default()
    };
    let old = ledger
        .reply_begin(&edit(&first[0].0, 1), "d1", MINUTE)
        .await
        .unwrap();
    assert!(
        matches!(old, Begin::Done { ref state } if state == "stale"),
        "{old:?}"
    );
    let new = ledger
        .reply_begin(&edit(&last[0].0, 2), "d1", MINUTE)
        .await
        .unwrap();
    assert!(matches!(new, Begin::Send { .. }), "{new:?}");
}

#[tokio::test]
async fn a_group_cards_progress_is_never_edited_but_its_states_are() {
    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;
    seed(&store, 8, -100_123, 600).await;
    let card = ledger.cards(&[8]).await.unwrap().remove(0);
    let state = ledger
        .card_step(
            &card,
            &step(CardState::Downloading, "0%"),
            Duration::ZERO,
            "",
        )
        .await
        .unwrap();
    assert_eq!(state.outcome, "changed");
    let card = ledger.cards(&[8]).await.unwrap().remove(0);
    let progress = CardStep {
        progress: true,
        ..step(CardState::Downloading, "50%")
    };
    let held = ledger
        .card_step(&card, &progress, Duration::ZERO, "")
        .await
        .unwrap();
    assert_eq!(
        held.outcome, "held",
        "no pace allows a group's progress edit"
    );
}

/// follow_turn.lua: no poll while no card is open (nothing written), and one per interval for
/// the whole deployment once one is.
#[tokio::test]
async fn one_poll_per_interval_for_the_deployment_and_none_without_an_open_card() {
    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;
    assert_eq!(ledger.follow_turn("w1", MINUTE).await.unwrap(), 0);
    assert_eq!(
        store.get(&store.keys.follow_lock()).await,
        None,
        "no lock taken"
    );
    seed(&store, 9, 42, 700).await;
    assert_eq!(ledger.follow_turn("w1", MINUTE).await.unwrap(), 1);
    assert_eq!(
        ledger.follow_turn("w2", MINUTE).await.unwrap(),
        0,
        "w1 polled"
    );
    assert_eq!(
        ledger.follow_turn("w1", MINUTE).await.unwrap(),
        0,
        "within the interval"
    );
    let left: i64 = store
        .conn()
        .await
        .pttl(store.keys.follow_lock())
        .await
        .unwrap();
    assert!(left > 0 && left <= 60_000, "{left}");
}

/// A card's closing notice is its person's own (`/notify`): in their quiet hours it is queued
/// with `silent`, with 入库 turned off it is not queued at all (the card still closes with its
/// last edit), and in a group it is sent whatever anyone chose.
#[tokio::test]
async fn the_closing_notice_follows_its_persons_notice_settings() {
    use oncebot::vocabulary::{NoticeCategory, NoticeMode, QuietHours};
    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;
    ledger
        .set_quiet_hours(42, QuietHours::parse("23:00-07:00"))
        .await
        .unwrap();
    ledger
        .set_notice_mode(43, NoticeCategory::Transfer, NoticeMode::Off)
        .await
        .unwrap();
    ledger
        .set_notice_mode(-100, NoticeCategory::Transfer, NoticeMode::Off)
        .await
        .unwrap();
    let clock = "1410|2026-12-07|2026-12-06|1765150200000|50";
    let fin = CardStep {
        notice: "in the library".into(),
        ..step(CardState::InLibrary, "t")
    };
    for (id, chat) in [(7, 42), (8, 43), (9, -100)] {
        seed(&store, id, chat, 500).await;
        let card = ledger.cards(&[id]).await.unwrap().remove(0);
        let done = ledger.card_step(&card, &fin, MINUTE, clock).await.unwrap();
        assert_eq!(done.outcome, "changed");
    }
    let ends = |entries: Vec<(String, std::collections::BTreeMap<String, String>)>| {
        entries
            .into_iter()
            .filter(|(_, f)| f["kind"] == "card_end")
            .map(|(_, f)| (f["chat_id"].clone(), f.get("silent").cloned()))
            .collect::<Vec<_>>()
    };
    // `taken` keeps every card_end: read once, for all three cards.
    let all = ends(taken(&store, 7).await);
    assert_eq!(
        all,
        [
            ("42".to_string(), Some("1".to_string())),
            ("-100".to_string(), None)
        ],
        "quiet hours: silent; 入库 off: none; a group: as always"
    );
    let mut conn = store.conn().await;
    let open: Vec<u64> = conn.zrange(store.keys.cards_open(), 0, -1).await.unwrap();
    assert!(open.is_empty(), "every card closed: {open:?}");
}
