//! Look before you fetch (issue 24, "Library check"): what MoviePilot's media server holds of a
//! media, asked before a subscription or a tracker search and shown in match lists, through
//! Telegram (the webhook) to the reply, against the simulator's media server in each state: in
//! the library, partly (which episodes), not, no media server, routes missing (404), slow.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::moviepilot::{MediaServer, SimMedia, routes};
use oncebot_tools::sim::telegram::callback_update;
use serde_json::{Value, json};

use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, buttons, eventually};

const DUNE: u64 = 438631;
const THREE_BODY: u64 = 108545;
const EXPANSE: u64 = 63639;
/// The message with the buttons (the dispatcher is not running here).
const MESSAGE: i64 = 92_001;

/// A rig whose media server holds Dune, 三体 season 1 but E05–E08, and all of The Expanse's
/// first season; nothing of Dune: Part Two.
async fn rig(dialect: Dialect, overrides: &[(&str, &str)]) -> Rig {
    let rig = Rig::with(dialect, overrides).await;
    rig.mp.set_media_server(MediaServer::Configured);
    rig.mp.library_add_movie(DUNE);
    rig.mp
        .library_add_episodes(THREE_BODY, 1, (1..=4).chain(9..=30));
    rig.mp.library_add_episodes(EXPANSE, 1, 1..=10);
    rig
}

fn tap(update_id: i64, data: &str) -> Value {
    let mut update = callback_update(ALICE, ALICE, MESSAGE, data);
    update["update_id"] = json!(update_id);
    update
}

fn button(reply: &BTreeMap<String, String>, text: &str) -> String {
    buttons(reply)
        .into_iter()
        .find(|(t, _)| t == text)
        .unwrap_or_else(|| panic!("no button {text:?} in {reply:?}"))
        .1
}

/// Job `job`'s answer (its `result` reply), once it succeeded.
async fn answer(rig: &Rig, job: u64) -> BTreeMap<String, String> {
    rig.job_in(job, "succeeded", RECOVERY_DEADLINE).await;
    eventually(
        &format!("job {job}'s answer"),
        RECOVERY_DEADLINE,
        || async move {
            rig.replies_for(job)
                .await
                .into_iter()
                .find(|r| r["kind"] == "result")
        },
    )
    .await
}

fn library_calls(rig: &Rig) -> u64 {
    rig.mp.calls(routes::MEDIASERVER_NOTEXISTS)
}

#[tokio::test]
async fn match_lines_say_what_the_library_holds_in_both_dialects() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = rig(dialect, &[]).await;
        let _bot = rig.start(None).await;
        rig.send(1, "/search dune").await;
        let text = answer(&rig, 1).await["text"].clone();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines.contains(&"1. Dune (2021) · movie · in your library"),
            "{dialect:?}: {text}"
        );
        assert!(
            lines.contains(&"2. Dune: Part Two (2024) · movie"),
            "not in the library says nothing: {text}"
        );
        // The checks of one list: one per match, side by side.
        assert_eq!(library_calls(&rig), 2, "{dialect:?}");

        rig.send(2, "/download 三体").await;
        let text = answer(&rig, 2).await["text"].clone();
        assert!(
            text.contains("1. 三体 (2023) · series · season 1 is missing E05–E08"),
            "{dialect:?}: {text}"
        );

        // A series of several seasons is checked whole: the seasons missing whole, as a range.
        rig.send(3, "/search expanse").await;
        let text = answer(&rig, 3).await["text"].clone();
        assert!(
            text.contains("1. The Expanse (2015) · series · seasons 2–6 missing"),
            "{dialect:?}: {text}"
        );
    }
}

/// Every page of a list is rendered when the job runs, so every match is checked, and a later
/// page shows its own matches' notes.
#[tokio::test]
async fn every_page_of_a_match_list_says_what_the_library_holds() {
    let rig = Rig::new(Dialect::V2).await;
    rig.mp.set_media_server(MediaServer::Configured);
    for n in 1..=12u64 {
        rig.mp.add_media(SimMedia::movie(
            900_000 + n,
            &format!("Pager {n:02}"),
            "2020",
        ));
    }
    rig.mp.library_add_movie(900_007);
    let _bot = rig.start(None).await;
    rig.send(1, "/search Pager").await;
    let list = answer(&rig, 1).await;
    assert_eq!(library_calls(&rig), 12, "every match checked");
    let next = buttons(&list).into_iter().find(|b| b.0 == "▶").unwrap().1;
    rig.post(&tap(2, &next)).await;
    let page2 = eventually("page 2", RECOVERY_DEADLINE, || async {
        rig.store
            .replies()
            .await
            .into_iter()
            .find(|r| r["kind"] == "page")
    })
    .await;
    let lines: Vec<&str> = page2["text"].lines().collect();
    let seven = lines
        .iter()
        .find(|l| l.contains("Pager 07"))
        .unwrap_or_else(|| panic!("Pager 07 on page 2: {page2:?}"));
    assert!(seven.ends_with("· movie · in your library"), "{seven}");
    let others = lines
        .iter()
        .filter(|l| l.contains("Pager ") && !l.contains("Pager 07"))
        .count();
    assert!(others > 0, "{page2:?}");
    assert_eq!(
        page2["text"].matches("in your library").count(),
        1,
        "only Pager 07 is in the library: {page2:?}"
    );
}

#[tokio::test]
async fn chinese_match_lines_name_the_missing_episodes_compactly() {
    let rig = rig(Dialect::V2, &[("ONCEBOT__TELEGRAM__LOCALE", "zh")]).await;
    let _bot = rig.start(None).await;
    rig.send(1, "订阅 三体").await;
    let text = answer(&rig, 1).await["text"].clone();
    assert!(
        text.contains("1. 三体 (2023) · 电视剧 · 第 1 季缺 E05–E08"),
        "{text}"
    );
}

#[tokio::test]
async fn a_subscription_to_media_in_the_library_stops_and_subscribe_anyway_subscribes_once() {
    let rig = rig(Dialect::V2, &[]).await;
    let _bot = rig.start(None).await;
    rig.send(1, &format!("/subscribe tmdb:{DUNE}")).await;
    let stopped = answer(&rig, 1).await;
    assert_eq!(
        stopped["text"],
        "\"Dune\" is already in your library, so no subscription was made. Tap \"Subscribe \
         anyway\" to subscribe all the same."
    );
    assert_eq!(rig.store.job(1).await["mp_outcome"], "in_library");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 0);
    assert!(rig.mp.find_subscription(DUNE, None).is_none());

    // Tapped twice at once: one job, one subscription.
    let anyway = button(&stopped, "Subscribe anyway");
    let (a, b) = (tap(2, &anyway), tap(3, &anyway));
    futures::future::join(rig.post(&a), rig.post(&b)).await;
    let done = answer(&rig, 2).await;
    assert!(
        done["text"].starts_with("Subscribed to \"Dune\""),
        "{done:?}"
    );
    let job = rig.store.job(2).await;
    assert_eq!(job["command"], "subscribe");
    assert_eq!(job["args"], format!("tmdb:{DUNE} anyway"));
    assert_eq!(job["mp_outcome"], "created");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1);
    assert!(rig.mp.find_subscription(DUNE, None).is_some());
    assert_eq!(
        rig.store.job_ids().await.len(),
        2,
        "the second tap made no job"
    );
}

#[tokio::test]
async fn a_season_partly_in_the_library_is_subscribed_and_its_confirmation_lists_what_is_missing() {
    let rig = rig(Dialect::V3, &[]).await;
    let _bot = rig.start(None).await;
    rig.send(1, &format!("/subscribe tmdb:{THREE_BODY} S1"))
        .await;
    let done = answer(&rig, 1).await;
    assert!(
        done["text"].starts_with("Subscribed to \"三体\" season 1"),
        "{done:?}"
    );
    assert!(
        done["text"].ends_with("\nMissing from your library: season 1 is missing E05–E08"),
        "{done:?}"
    );
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1);
}

#[tokio::test]
async fn a_resource_search_of_media_in_the_library_stops_and_download_anyway_searches_once() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = rig(dialect, &[]).await;
        let _bot = rig.start(None).await;
        rig.send(1, &format!("/download tmdb:{DUNE}")).await;
        let stopped = answer(&rig, 1).await;
        assert_eq!(
            stopped["text"],
            "Dune (2021) is already in your library, so the sites were not searched. Tap \
             \"Download anyway\" to search all the same."
        );
        assert_eq!(rig.mp.resource_searches(), 0, "{dialect:?}");

        let anyway = button(&stopped, "Download anyway");
        let (a, b) = (tap(2, &anyway), tap(3, &anyway));
        futures::future::join(rig.post(&a), rig.post(&b)).await;
        let list = answer(&rig, 2).await;
        let header: Vec<&str> = list["text"].lines().take(2).collect();
        assert_eq!(header[1], "Library: already there", "{dialect:?}: {list:?}");
        assert_eq!(rig.mp.resource_searches(), 1, "{dialect:?}");
        assert_eq!(
            rig.store.job_ids().await.len(),
            2,
            "the second tap made no job"
        );

        // Nothing found for media the library has reads differently from a plain "nothing".
        rig.send(4, &format!("/download tmdb:{EXPANSE} S1")).await;
        let stopped = answer(&rig, 3).await;
        rig.post(&tap(5, &button(&stopped, "Download anyway")))
            .await;
        let none = answer(&rig, 4).await;
        assert_eq!(
            none["text"],
            "No releases found for The Expanse (2015) S01; it is already in your library.",
            "{dialect:?}"
        );
    }
}

#[tokio::test]
async fn a_release_list_header_says_what_the_library_lacks() {
    let rig = rig(Dialect::V2, &[]).await;
    let _bot = rig.start(None).await;
    rig.send(1, &format!("/download tmdb:{THREE_BODY} S1"))
        .await;
    let list = answer(&rig, 1).await;
    let second = list["text"].lines().nth(1).unwrap_or_default().to_string();
    assert_eq!(second, "Library: season 1 is missing E05–E08", "{list:?}");
    assert_eq!(rig.mp.resource_searches(), 1);
}

#[tokio::test]
async fn media_not_in_the_library_is_searched_and_its_list_says_so() {
    let rig = Rig::new(Dialect::V3).await;
    rig.mp.set_media_server(MediaServer::Configured);
    let _bot = rig.start(None).await;
    rig.send(1, &format!("/download tmdb:{DUNE}")).await;
    let list = answer(&rig, 1).await;
    let second = list["text"].lines().nth(1).unwrap_or_default().to_string();
    assert_eq!(second, "Library: not there yet", "{list:?}");
    assert_eq!(rig.mp.resource_searches(), 1);
    assert_eq!(rig.store.job(1).await["command"], "releases");
}

#[tokio::test]
async fn the_check_is_cached_across_restarts_and_asked_again_after_it_expires() {
    let rig = rig(
        Dialect::V2,
        &[("ONCEBOT__MOVIEPILOT__LIBRARY_CACHE_SECS", "3")],
    )
    .await;
    let bot = rig.start(None).await;
    rig.send(1, "/search dune").await;
    answer(&rig, 1).await;
    assert_eq!(library_calls(&rig), 2);
    let keys = rig.store.keys.clone();
    let cached = keys.library("movie", DUNE, None);
    assert!(rig.store.all_keys().await.contains(&cached), "{cached}");

    // Another process (a restart) within the window: answered from Redis.
    drop(bot);
    let _bot = rig.start(None).await;
    rig.send(2, "/search dune").await;
    let text = answer(&rig, 2).await["text"].clone();
    assert!(
        text.contains("Dune (2021) · movie · in your library"),
        "{text}"
    );
    assert_eq!(library_calls(&rig), 2, "the second search used the cache");

    // Once the answers expire, the next search asks again.
    let store = &rig.store;
    eventually(
        "the cached answers to expire",
        Duration::from_secs(10),
        || {
            let cached = cached.clone();
            async move { (!store.all_keys().await.contains(&cached)).then_some(()) }
        },
    )
    .await;
    rig.send(3, "/search dune").await;
    answer(&rig, 3).await;
    assert_eq!(library_calls(&rig), 4);
}

#[tokio::test]
async fn a_cache_of_zero_asks_every_time() {
    let rig = rig(
        Dialect::V2,
        &[("ONCEBOT__MOVIEPILOT__LIBRARY_CACHE_SECS", "0")],
    )
    .await;
    let _bot = rig.start(None).await;
    for id in 1..=2 {
        rig.send(id as i64, "/search dune").await;
        answer(&rig, id).await;
    }
    assert_eq!(library_calls(&rig), 4);
    let base = rig.store.keys.base().to_string();
    assert!(
        !rig.store
            .all_keys()
            .await
            .iter()
            .any(|k| k.starts_with(&format!("{base}library:"))),
        "nothing cached"
    );
}

/// No media server, routes MoviePilot does not have, and a media server slower than the
/// check's timeout: the check says nothing, and the command runs as without it.
#[tokio::test]
async fn no_missing_or_slow_media_server_never_blocks_or_fails_a_command() {
    for server in [
        MediaServer::None,
        MediaServer::Missing,
        MediaServer::Slow(Duration::from_secs(30)),
    ] {
        let rig = rig(Dialect::V2, &[]).await;
        rig.mp.set_media_server(server);
        let _bot = rig.start(None).await;
        let began = Instant::now();
        rig.send(1, &format!("/subscribe tmdb:{DUNE}")).await;
        let done = answer(&rig, 1).await;
        assert!(
            done["text"].starts_with("Subscribed to \"Dune\""),
            "{server:?}: {done:?}"
        );
        assert!(!done["text"].contains("library"), "{server:?}: {done:?}");
        assert!(
            began.elapsed() < Duration::from_secs(15),
            "{server:?}: the check has its own short timeout ({:?})",
            began.elapsed()
        );
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1, "{server:?}");

        rig.send(2, "/search dune").await;
        let text = answer(&rig, 2).await["text"].clone();
        assert!(!text.contains("library"), "{server:?}: {text}");
        assert_eq!(rig.store.job(2).await["status"], "succeeded");
        // Nothing learnt from a failure is kept: the next command asks again.
        // What the subscription's check learnt (an answer, or for a minute none) is kept: the
        // search asks only about Part Two.
        assert_eq!(rig.mp.calls(routes::MEDIASERVER_CLIENTS), 2, "{server:?}");
        let cached = rig.store.keys.library("movie", DUNE, None);
        let ttl: i64 = redis::AsyncCommands::pttl(&mut rig.store.conn().await, &cached)
            .await
            .unwrap();
        match server {
            MediaServer::None => assert!(ttl > 60_000, "{server:?}: {ttl} ms"),
            _ => assert!(ttl > 0 && ttl <= 60_000, "{server:?}: no answer, {ttl} ms"),
        }
    }
}
