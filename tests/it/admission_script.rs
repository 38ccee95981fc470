//! The admission script is sent as a bare EVALSHA; Redis forgetting its scripts (a restart, or
//! SCRIPT FLUSH) must cost a reload, not a failed update.

use std::time::Duration;

use oncebot::commands::Command;
use oncebot::config::Settings;
use oncebot::ledger::{Admission, AdmissionAction, Admitted, Ledger};
use oncebot_tools::redis_server::{Persistence, RedisServer};

fn search(update_id: i64) -> Admission {
    Admission {
        update_id,
        chat_id: 42,
        user_id: 42,
        message_id: Some(update_id),
        requester: None,
        role: oncebot::vocabulary::Role::Admin,
        action: AdmissionAction::Job {
            command: Command::Search,
            args: "Arrival".into(),
            window: Duration::ZERO,
        },
    }
}

#[tokio::test]
async fn an_update_is_admitted_after_redis_forgot_the_scripts() {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let settings =
        Settings::load_from(None, [("ONCEBOT__REDIS__URL".to_string(), redis.url())]).unwrap();
    let ledger = Ledger::connect(&settings).unwrap();
    ledger.prepare().await.unwrap();
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
