//! What finished work leaves in Redis is bounded: after a run of jobs, with buttons among their
//! replies, the streams are empty, the indexes are trimmed to their settings, and every other
//! key a job left behind expires. A key of a kind this test does not know fails it, so a new
//! key cannot grow without a bound unnoticed.

use std::time::Duration;

use oncebot::moviepilot::Dialect;
use redis::AsyncCommands as _;

use crate::support::rig::Rig;
use crate::support::{ALICE, eventually};

const JOBS: i64 = 40;
const CHAT_INDEX_LEN: usize = 5;
const JOBS_INDEX_LEN: usize = 12;

#[tokio::test]
async fn a_run_of_jobs_leaves_empty_streams_trimmed_indexes_and_keys_that_expire() {
    let (chat_len, jobs_len) = (CHAT_INDEX_LEN.to_string(), JOBS_INDEX_LEN.to_string());
    let rig = Rig::with(
        Dialect::V2,
        &[
            ("ONCEBOT__LEDGER__CHAT_INDEX_LEN", chat_len.as_str()),
            ("ONCEBOT__LEDGER__JOBS_INDEX_LEN", jobs_len.as_str()),
            ("ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS", "0"),
            ("ONCEBOT__DISPATCHER__GLOBAL_PER_SECOND", "100000"),
        ],
    )
    .await;
    let _bot = rig.start_pipeline().await;
    // Searches are read-only, so none is a duplicate of another; "Dune" finds results with
    // Subscribe buttons (tokens and their group), the other title finds nothing.
    for id in 1..JOBS {
        let title = if id % 2 == 0 { "Dune" } else { "no such title" };
        rig.send(id, &format!("/search {title}")).await;
    }
    // A resource search stores its release list (with the sites' cookies) for its buttons, and
    // its progress message keeps a `reply:` delivery record.
    rig.send(JOBS, "/download tmdb:438631").await;
    let store = &rig.store;
    eventually("every reply sent", Duration::from_secs(30), || async move {
        let mut all = true;
        for id in 1..=JOBS as u64 {
            all &= store.job(id).await.get("reply_state").map(String::as_str) == Some("sent");
        }
        all.then_some(())
    })
    .await;

    let k = &store.keys;
    for stream in [k.jobs_stream(), k.replies_stream(), k.callbacks_stream()] {
        assert_eq!(store.stream_len(&stream).await, 0, "{stream} is empty");
    }
    assert_eq!(rig.pending_entries().await, 0, "nothing pending");
    let mut conn = store.conn().await;
    let chat_len: usize = conn.llen(k.chat_jobs(ALICE)).await.unwrap();
    assert_eq!(chat_len, CHAT_INDEX_LEN, "the chat index is trimmed");
    let recent_len: usize = conn.llen(k.jobs_index()).await.unwrap();
    assert_eq!(recent_len, JOBS_INDEX_LEN, "the global index is trimmed");

    let mut expiring = std::collections::BTreeMap::<String, usize>::new();
    for key in store.every_key().await {
        if key == k.layout() {
            // The layout guard, outside the versioned names: one key holding a number.
            continue;
        }
        let rest = key
            .strip_prefix(k.base())
            .unwrap_or_else(|| panic!("{key} is outside the deployment's prefix"));
        let kind = rest.split(':').next().unwrap_or(rest);
        // The kinds are the first parts of the documented layout's names (docs/redis.md),
        // spelled out on purpose: each is judged here, and a kind not listed fails the test.
        match kind {
            // Bounded without a TTL: a counter, trimmed lists, empty streams, MoviePilot's user
            // mapping (one HASH, as many fields as MoviePilot has mapped users).
            "seq" | "stream" => {}
            "users" => assert_eq!(
                key,
                k.users_moviepilot(),
                "{key}: a users key this test does not know"
            ),
            // One HASH, a field per subscription oncebot created for a named user on v3,
            // removed when oncebot cancels it.
            "owners" => assert_eq!(key, k.owners()),
            // One HASH of a few fields: oncebot's own MoviePilot account, as the last worker
            // to reach MoviePilot found it.
            "mp_account" => assert_eq!(key, k.mp_account()),
            "chat" | "index" => assert!(
                rest.ends_with(":jobs") || key == k.jobs_index(),
                "{key}: an index this test does not know"
            ),
            // One per running consumer process (bounded by the processes that run): its
            // name is in the group's list while its liveness key lives, and liveness.lua removes
            // both once it is dead with nothing pending.
            "consumers" | "processes" => {
                let listed: usize = conn.scard(&key).await.unwrap();
                assert!(
                    listed <= 2,
                    "{key} lists only the running processes: {listed}"
                );
            }
            "job" | "updates" | "token" | "tgroup" | "cmd" | "releases" | "pages" | "reply"
            | "alive" | "notice" | "lock" | "asked" | "library" | "probe" => {
                let ttl: i64 = conn.ttl(&key).await.unwrap();
                assert!(ttl > 0, "{key} must expire (TTL {ttl})");
                *expiring.entry(kind.to_string()).or_default() += 1;
            }
            _ => panic!("{key}: a key of a kind this test does not know"),
        }
    }
    assert_eq!(expiring.get("job"), Some(&(JOBS as usize)), "{expiring:?}");
    assert!(expiring.contains_key("updates"), "{expiring:?}");
    // Their groups have no key: none of the buttons was tapped (tap.lua writes a group when it
    // is used).
    assert!(
        expiring.contains_key("token") && !expiring.contains_key("tgroup"),
        "the Dune searches left buttons: {expiring:?}"
    );
    assert_eq!(expiring.get("releases"), Some(&1), "{expiring:?}");
    // The library check's answers (here: no media server), one per media asked about.
    assert!(expiring.contains_key("library"), "{expiring:?}");
    // The search's list is paged: its pages live beside its releases, as long.
    assert_eq!(expiring.get("pages"), Some(&1), "{expiring:?}");
}
