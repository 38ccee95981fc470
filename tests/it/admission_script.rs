//! The admission script is sent as a bare EVALSHA; Redis forgetting its scripts (a restart, or
//! SCRIPT FLUSH) must cost a reload, not a failed update.

use oncebot::ledger::{Admission, Admitted};

fn search(update_id: i64) -> Admission {
    crate::support::search_admission(update_id, "Arrival")
}

#[tokio::test]
async fn an_update_is_admitted_after_redis_forgot_the_scripts() {
    let (_redis, ledger) = crate::support::fresh_ledger().await;
    assert!(matches!(
        ledger.admit(&search(1)).await.unwrap(),
        Admitted::New { .. }
    ));

    let mut conn = ledger.connection();
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut conn)
        .await
        .unwrap();

    assert!(matches!(
        ledger.admit(&search(2)).await.unwrap(),
        Admitted::New { .. }
    ));
    // And the transport layer still holds: the first update again changes nothing.
    assert!(matches!(
        ledger.admit(&search(1)).await.unwrap(),
        Admitted::DuplicateUpdate { .. }
    ));
}
