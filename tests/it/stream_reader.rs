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
        .arg(keys::JOBS_GROUP)
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
