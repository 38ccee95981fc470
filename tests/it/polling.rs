//! Long polling (`serve --poll`) as a real process against a fake Bot API.
//!
//! The offset advances only after an update's admission committed, so a crash in between makes
//! the next process read the update again, and the update_id layer absorbs it. The crash is a
//! failpoint (`FAILPOINTS=poll.after_enqueue=return`, feature `failpoints`) followed by SIGKILL.

use oncebot::redis_server::{Persistence, RedisServer};

use crate::support::app::{ServeChild, free_port};
use crate::support::telegram::FakeBotApi;
use crate::support::{ALICE, DEADLINE, Store, eventually, private_text};

const TOKEN: &str = "123456:TEST-token_for-oncebot";

fn poll_env(redis_url: &str, api_url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("ONCEBOT__REDIS__URL", redis_url.to_string()),
        (
            "ONCEBOT__HTTP__LISTEN",
            format!("127.0.0.1:{}", free_port()),
        ),
        ("ONCEBOT__TELEGRAM__TOKEN", TOKEN.into()),
        ("ONCEBOT__TELEGRAM__API_URL", api_url.to_string()),
        ("ONCEBOT__TELEGRAM__ALLOWED_USERS", ALICE.to_string()),
        ("ONCEBOT__TELEGRAM__POLL_TIMEOUT_SECS", "1".into()),
    ]
}

fn refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_crash_between_enqueue_and_offset_commit_rereads_without_a_second_job() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let store = Store::new(&redis.url(), "oncebot");
    let api = FakeBotApi::start(TOKEN).await;
    api.push(private_text(41, ALICE, "/subscribe Dune"));
    let env = poll_env(&redis.url(), &api.url());
    let args = ["serve", "--role", "ingress", "--poll"];

    // First process: admits update 41, then freezes before it commits the offset.
    let mut crashing = env.clone();
    crashing.push(("FAILPOINTS", "poll.after_enqueue=return".into()));
    let mut first = ServeChild::spawn(&args, &refs(&crashing));
    eventually("the crash point to be reached", DEADLINE, || {
        let reached = first
            .stderr()
            .contains("oncebot: crash point poll.after_enqueue reached");
        async move { reached.then_some(()) }
    })
    .await;
    assert_eq!(store.jobs_on_stream().await, vec![1]);
    assert_eq!(store.get(&store.keys.poll_offset()).await, None);
    first.signal("KILL");
    first.wait(DEADLINE).await;

    // Second process: reads update 41 again (offset still 0), absorbs it, commits past it.
    let mut second = ServeChild::spawn(&args, &refs(&env));
    eventually("the offset to move past update 41", DEADLINE, || async {
        (store.get(&store.keys.poll_offset()).await.as_deref() == Some("42")).then_some(())
    })
    .await;
    let offsets = api.offsets();
    assert_eq!(
        offsets.iter().filter(|o| **o == 0).count(),
        2,
        "both processes asked from offset 0: {offsets:?}"
    );

    assert_eq!(store.jobs_on_stream().await, vec![1]);
    assert_eq!(
        store.get(&store.keys.update(41)).await.as_deref(),
        Some("1")
    );
    assert!(
        store.replies().await.is_empty(),
        "a re-read is not a user's duplicate"
    );

    second.signal("TERM");
    let status = second.wait(DEADLINE).await;
    assert_eq!(
        status.code(),
        Some(0),
        "stderr:\n{}",
        second.final_stderr().await
    );
}

#[tokio::test]
async fn polling_admits_each_update_once_and_confirms_it() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let store = Store::new(&redis.url(), "oncebot");
    let api = FakeBotApi::start(TOKEN).await;
    let env = poll_env(&redis.url(), &api.url());
    let mut child = ServeChild::spawn(&["serve", "--role", "ingress", "--poll"], &refs(&env));

    api.push(private_text(7, ALICE, "/subscribe Dune"));
    api.push(private_text(8, ALICE, "/subscribe Dune"));
    eventually("both updates to be confirmed", DEADLINE, || async {
        (store.get(&store.keys.poll_offset()).await.as_deref() == Some("9")).then_some(())
    })
    .await;

    // Same layers as the webhook: one job, the second update a duplicate of it.
    assert_eq!(store.jobs_on_stream().await, vec![1]);
    let replies = store.replies().await;
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0]["kind"], "duplicate");

    child.signal("TERM");
    assert_eq!(child.wait(DEADLINE).await.code(), Some(0));
}
