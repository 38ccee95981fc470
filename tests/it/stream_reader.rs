//! A consumer group that vanished (Redis lost its data, or someone deleted it) is the reader's
//! to make again: the read that finds it missing yields nothing, and the next one reads on.

use std::time::Duration;

use oncebot::ledger::{Admission, Admitted, keys};

fn search(update_id: i64) -> Admission {
    crate::support::search_admission(update_id, &format!("Arrival {update_id}"))
}

#[tokio::test]
async fn a_reader_whose_group_was_deleted_makes_it_again_and_reads_on() {
    let (_redis, ledger) = crate::support::fresh_ledger().await;
    let mut conn = ledger.connection();
    let _: () = redis::cmd("XGROUP")
        .arg("DESTROY")
        .arg(ledger.keys().jobs_stream())
        .arg(keys::Stream::Jobs.group())
        .query_async(&mut conn)
        .await
        .unwrap();

    let mut reader = ledger.reader();
    let block = Duration::from_millis(50);
    let first = reader.jobs("c1", 10, block).await.unwrap();
    assert!(first.is_empty(), "the missing group's read yields nothing");

    assert!(matches!(
        ledger.admit(&search(1)).await.unwrap(),
        Admitted::New { .. }
    ));
    let read = reader.jobs("c1", 10, block).await.unwrap();
    assert_eq!(
        read.len(),
        1,
        "the group was made again and the job is read"
    );
}

/// Issue 42: one name per thing at every seam. The callbacks stream's group is the one a tap
/// creates it under (tap.lua, given `Stream::Callbacks.group()`), and the one the dispatcher
/// reads, reclaims and acknowledges it under: after a tap's answer is read and acknowledged the
/// stream has exactly that one group, with the entry read and nothing pending. Reading it under
/// another group (the bug reported twice before: created under one constant, read under another)
/// makes the reader create a second group, which starts after the answer and never sees it.
#[tokio::test]
async fn the_callbacks_stream_is_created_and_read_under_one_group() {
    use oncebot::ledger::{Lane, LaneEntry, Tap, Tapped};
    let (_redis, ledger) = crate::support::fresh_ledger().await;
    let tap = Tap {
        update_id: 1,
        callback_query_id: "q1".into(),
        user_id: 1,
        allowed: true,
        chat_id: Some(1),
        message_id: Some(2),
        thread_id: None,
        role: oncebot::vocabulary::Role::Admin,
        requester: None,
        token: None,
        request: None,
        quota: None,
    };
    assert_eq!(ledger.tap(&tap).await.unwrap(), Tapped::Unknown);
    let mut reader = ledger.reader();
    let read = reader
        .lane(Lane::Callbacks, "d1", 10, Duration::from_millis(50))
        .await
        .unwrap();
    let [LaneEntry::Callback(answer)] = read.as_slice() else {
        panic!("the tap's answer is read: {read:?}");
    };
    assert_eq!(answer.callback_query_id, "q1");
    let reclaimed = ledger
        .reclaim_lane(Lane::Callbacks, "d2", Duration::ZERO, 10)
        .await
        .unwrap();
    assert_eq!(reclaimed.len(), 1, "reclaimed under the same group");
    ledger.callback_done(&answer.entry).await.unwrap();

    let mut conn = ledger.connection();
    let groups: Vec<redis::Value> = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg(ledger.keys().callbacks_stream())
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        groups.len(),
        1,
        "one group on the callbacks stream: {groups:?}"
    );
    let fields: std::collections::BTreeMap<String, redis::Value> =
        redis::from_redis_value(groups[0].clone()).unwrap();
    let name: String = redis::from_redis_value(fields["name"].clone()).unwrap();
    let pending: i64 = redis::from_redis_value(fields["pending"].clone()).unwrap();
    assert_eq!(name, keys::Stream::Callbacks.group());
    assert_eq!(pending, 0);
    // liveness.lua reaps a role's streams in one group: the dispatcher's two lanes share it.
    assert_eq!(
        keys::Stream::Callbacks.group(),
        keys::Stream::Replies.group()
    );
}
