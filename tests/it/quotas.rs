//! Issue 44: weekly quotas (`household.quotas`) through a real oncebot, the fake MoviePilot, the
//! fake Bot API and a private Redis. With `requester=2`, a third request is refused with when
//! the next slot frees and makes nothing; a declined request and a failed job free their slots;
//! a made subscription keeps one; `/quota` says where one stands; the cards show it.

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::moviepilot::{Fault, SimMedia, routes};

use crate::grants::{button, message_in, tap};
use crate::requests::{CAROL, DUNE};
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, eventually, private_text, tap_answer};

const DUNE_TWO: u64 = 693134;
const FIGHT_CLUB: u64 = 550;

async fn household() -> Rig {
    let allowed = format!("{ALICE},{BOB},{CAROL}");
    let users = format!("{ALICE}=:admin,{BOB}=:admin,{CAROL}=carol:requester");
    let rig = Rig::with(
        Dialect::V2,
        &[
            ("ONCEBOT__TELEGRAM__ALLOWED_USERS", &allowed),
            ("ONCEBOT__TELEGRAM__USERS", &users),
            ("ONCEBOT__HOUSEHOLD__QUOTAS", "requester=2"),
            ("ONCEBOT__COMMANDS__DAY_ZONE", "Asia/Shanghai"),
        ],
    )
    .await;
    rig.mp
        .add_media(SimMedia::movie(FIGHT_CLUB, "Fight Club", "1999"));
    rig
}

/// Carol types `/subscribe tmdb:<id>` as update `update_id`; what she is answered.
async fn carol_asks(rig: &Rig, update_id: i64, tmdb: u64, answer: &str) {
    rig.post(&private_text(
        update_id,
        CAROL,
        &format!("/subscribe tmdb:{tmdb}"),
    ))
    .await;
    message_in(rig, CAROL, answer).await;
}

/// Carol's `/quota` as update `update_id`: its answer, once it came.
async fn quota(rig: &Rig, update_id: i64, says: &str) {
    rig.post(&private_text(update_id, CAROL, "/quota")).await;
    message_in(rig, CAROL, says).await;
}

/// The newest job's id.
async fn newest_job(rig: &Rig) -> u64 {
    rig.store.job_ids().await.into_iter().max().unwrap_or(0)
}

/// The id of the first job made after job `before`, once there is one.
async fn job_after(rig: &Rig, before: u64) -> u64 {
    eventually("the approval's job", RECOVERY_DEADLINE, || async {
        Some(newest_job(rig).await).filter(|id| *id > before)
    })
    .await
}

#[tokio::test]
async fn a_quota_of_two_refuses_the_third_until_a_decline_or_a_failure_frees_a_slot() {
    let rig = household().await;
    let _bot = rig.start_pipeline().await;
    carol_asks(&rig, 1, DUNE, "Sent for approval (request #1)").await;
    let card = message_in(&rig, ALICE, "Media request #1").await;
    assert!(
        card.text.contains("Quota: 0 of 2 used this week"),
        "{card:?}"
    );
    carol_asks(&rig, 2, DUNE_TWO, "Sent for approval (request #2)").await;
    let second = message_in(&rig, BOB, "Media request #2").await;

    // The third: no request, no card, and when a slot frees, in the day zone.
    carol_asks(
        &rig,
        3,
        FIGHT_CLUB,
        "Weekly quota used (2/2); the next slot frees on ",
    )
    .await;
    // Failed: the same ask once a slot frees is no repeat of it.
    rig.job_in(3, "failed", RECOVERY_DEADLINE).await;
    assert!(
        !rig.tg
            .received(ALICE)
            .iter()
            .any(|m| m.text.contains("Media request #3")),
        "no card for a request over quota"
    );
    assert_eq!(rig.store.job_ids().await.len(), 3, "lookups only");
    quota(&rig, 4, "Weekly quota: 2 of 2 used, 0 left").await;

    // A decline frees its slot: the same ask now goes through.
    rig.post(&tap(5, BOB, &second, &button(&second, "Decline")))
        .await;
    message_in(&rig, CAROL, "Request #2 was declined").await;
    carol_asks(&rig, 6, FIGHT_CLUB, "Sent for approval (request #3)").await;

    // #1 approved and made: its slot stays. #3 approved, and MoviePilot refuses the create for
    // good: its slot is freed with the failed job.
    let first = message_in(&rig, ALICE, "Media request #1").await;
    let before = newest_job(&rig).await;
    rig.post(&tap(7, ALICE, &first, &button(&first, "Approve")))
        .await;
    let made = job_after(&rig, before).await;
    let job = rig.job_in(made, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["quota"], "1", "{job:?}");
    assert_eq!(job["quota_used"], "1", "{job:?}");
    rig.mp.fail_next(
        routes::SUBSCRIBE_CREATE,
        Fault::Status(422, r#"{"detail":"refused"}"#.into()),
    );
    let third = message_in(&rig, ALICE, "Media request #3").await;
    rig.post(&tap(8, ALICE, &third, &button(&third, "Approve")))
        .await;
    let failed = job_after(&rig, made).await;
    let job = rig.job_in(failed, "failed", RECOVERY_DEADLINE).await;
    assert_eq!(job["quota_used"], "0", "{job:?}");
    quota(&rig, 9, "Weekly quota: 1 of 2 used, 1 left").await;
    assert_eq!(rig.mp.subscriptions().len(), 1);
}

/// A user's own buttons and typed commands count too (`user=1`): the first download takes the
/// slot and keeps it once added; the next `Download k` tap is answered with the quota and makes
/// no job (its button stays usable), and a typed `/subscribe` of a media makes nothing at
/// MoviePilot. An admin is never limited.
#[tokio::test]
async fn a_users_taps_and_typed_subscriptions_count_against_their_quota() {
    let users = format!("{ALICE}=:admin,{BOB}=bob:user");
    let rig = Rig::with(
        Dialect::V2,
        &[
            ("ONCEBOT__TELEGRAM__USERS", &users),
            ("ONCEBOT__HOUSEHOLD__QUOTAS", "user=1,admin=0"),
        ],
    )
    .await;
    let _bot = rig.start_pipeline().await;
    rig.post(&private_text(1, BOB, &format!("/download tmdb:{DUNE}")))
        .await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let list = eventually("Bob's release list", RECOVERY_DEADLINE, || {
        let found = rig.tg.received(BOB).into_iter().rev().find(|m| {
            m.reply_markup
                .as_ref()
                .is_some_and(|k| k.to_string().contains("Download 2"))
        });
        async move { found }
    })
    .await;
    rig.post(&tap(2, BOB, &list, &button(&list, "Download 1")))
        .await;
    let grab = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(grab["quota"], "1", "{grab:?}");
    assert_eq!(grab["quota_used"], "1", "{grab:?}");

    let second = tap(3, BOB, &list, &button(&list, "Download 2"));
    rig.post(&second).await;
    let answer = tap_answer(&rig, &second).await;
    assert!(
        answer.starts_with("Weekly quota used (1/1); the next slot frees on "),
        "{answer}"
    );
    assert_eq!(rig.store.job_ids().await.len(), 2, "no job over quota");

    rig.post(&private_text(
        4,
        BOB,
        &format!("/subscribe tmdb:{DUNE_TWO}"),
    ))
    .await;
    message_in(&rig, BOB, "Weekly quota used (1/1)").await;
    assert_eq!(rig.mp.subscriptions().len(), 0);
    assert_eq!(rig.mp.calls(routes::DOWNLOAD_ADD), 1);

    // An admin is never limited, whatever the setting says of admins.
    rig.send(5, &format!("/subscribe tmdb:{DUNE_TWO}")).await;
    rig.job_in(4, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(rig.mp.subscriptions().len(), 1);
}
