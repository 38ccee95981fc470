//! Issue 22, ownership: a subscription oncebot creates for a mapped user is that user's in
//! MoviePilot (create, then the whole row written back with the owner), also after a SIGKILL
//! between the two calls; `/subscriptions` lists the asker's own, `/subscriptions all` everyone's
//! with the owner.

use oncebot::moviepilot::{Dialect, MediaKind};
use oncebot_tools::sim::moviepilot::routes;
use oncebot_tools::sim::telegram::callback_update;
use redis::AsyncCommands as _;

use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, eventually, private_text};
use crate::worker::THREE_BODY;

fn alice_and_bob() -> String {
    format!("{ALICE}=alice:user,{BOB}=bob:admin")
}

/// v2 writes the owner it is sent (the row read and written back whole, so nothing else of it
/// changes); v3 keeps its own owner whatever it is sent, so oncebot sends nothing there and
/// records the requester itself.
#[tokio::test]
async fn a_mapped_users_subscription_is_theirs_in_moviepilot_on_v2_and_in_oncebots_record_on_v3() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let users = alice_and_bob();
        let rig = Rig::with(dialect, &[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
        let _bot = rig.start(None).await;
        rig.send(1, "/subscribe tmdb:108545 S1").await;
        let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(job["mp_outcome"], "created", "{dialect:?}");
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1);
        let subs = rig.mp.subscriptions();
        assert_eq!(subs.len(), 1, "{subs:?}");
        match dialect {
            Dialect::V2 => {
                assert_eq!(subs[0].username, "alice");
                assert_eq!(job["mp_owner"], "alice");
                assert_eq!(rig.mp.calls(routes::SUBSCRIBE_UPDATE), 1);
                // The whole row went back: a partial body would have reset these.
                assert_eq!(subs[0].total_episode, 30, "{subs:?}");
                assert_eq!(subs[0].season, Some(1));
                assert_eq!(subs[0].state, "N");
                assert!(!subs[0].date.is_empty());
            }
            Dialect::V3 => {
                // MoviePilot keeps the service account; oncebot records the requester.
                assert_eq!(subs[0].username, rig.mp.options().username);
                assert_eq!(job["mp_owner"], "alice");
                assert_eq!(rig.mp.calls(routes::SUBSCRIBE_UPDATE), 0);
                let recorded: Option<String> = rig
                    .store
                    .conn()
                    .await
                    .hget(
                        rig.store.keys.owners(),
                        format!("{}:{THREE_BODY}:1", subs[0].id),
                    )
                    .await
                    .unwrap();
                assert_eq!(recorded.as_deref(), Some("alice"));
            }
        }
    }
}

/// An unmapped asker acts as the service account: nothing to give, no update sent.
#[tokio::test]
async fn an_unmapped_askers_subscription_stays_the_service_accounts() {
    let users = format!("{BOB}=bob:admin");
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    let _bot = rig.start(None).await;
    rig.send(1, "/subscribe tmdb:108545 S1").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(rig.mp.subscriptions()[0].username, "admin");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_UPDATE), 0);
}

/// Someone else's existing subscription is not taken over: the asker is told it exists and its
/// owner stays.
#[tokio::test]
async fn an_existing_subscription_keeps_its_owner() {
    let users = alice_and_bob();
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    rig.mp
        .insert_subscription_for(THREE_BODY, MediaKind::Tv, Some(1), "carol")
        .unwrap();
    let _bot = rig.start(None).await;
    rig.send(1, "/subscribe tmdb:108545 S1").await;
    let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["mp_outcome"], "already_existed");
    assert_eq!(rig.mp.subscriptions()[0].username, "carol");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_UPDATE), 0);
}

/// SIGKILL between MoviePilot's create and the owner's update: the restarted worker finds the
/// subscription the job noted, gives it to the requester, and creates nothing again.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_crash_between_create_and_owner_ends_with_one_subscription_owned_by_the_requester() {
    let users = alice_and_bob();
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    let mut bot = rig.start(Some("worker.after_subscribe_create")).await;
    rig.send(1, "/subscribe tmdb:108545 S1").await;
    bot.wait_for_stderr(
        "crash point worker.after_subscribe_create reached",
        std::time::Duration::from_secs(10),
    )
    .await;
    let subs = rig.mp.subscriptions();
    assert_eq!(subs.len(), 1, "MoviePilot committed it");
    assert_eq!(subs[0].username, "admin", "not yet given");
    assert_eq!(
        rig.store.job(1).await["sub_created"],
        subs[0].id.to_string()
    );
    bot.sigkill().await;

    let _bot = rig.start(None).await;
    let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["mp_outcome"], "verified_existing");
    assert_eq!(job["mp_owner"], "alice");
    assert_eq!(job["recoveries"], "1");
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1);
    let subs = rig.mp.subscriptions();
    assert_eq!(subs.len(), 1, "{subs:?}");
    assert_eq!(subs[0].username, "alice");
    assert_eq!(subs[0].total_episode, 30);
    let replies = rig.replies_for(1).await;
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(rig.pending_entries().await, 0);
}

/// `/subscriptions` is the asker's own (MoviePilot's "my subscriptions" route); an admin's
/// `/subscriptions all` lists everyone's, each with its owner.
#[tokio::test]
async fn subscriptions_lists_the_askers_own_and_all_lists_everyones_with_owners() {
    let users = alice_and_bob();
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    rig.mp
        .insert_subscription_for(THREE_BODY, MediaKind::Tv, Some(1), "alice")
        .unwrap();
    rig.mp
        .insert_subscription_for(438631, MediaKind::Movie, None, "carol")
        .unwrap();
    let _bot = rig.start_pipeline().await;

    rig.send(1, "/subscriptions").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_USER), 1);
    let own = text_to(&rig, ALICE, "Your subscriptions").await;
    assert!(own.contains("#1"), "{own}");
    assert!(!own.contains("#2"), "only alice's: {own}");

    rig.post(&private_text(2, BOB, "/subscriptions all")).await;
    rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    let all = text_to(&rig, BOB, "All subscriptions").await;
    assert!(all.contains("#1") && all.contains("· alice"), "{all}");
    assert!(all.contains("#2") && all.contains("· carol"), "{all}");

    // Bob's own list has none of them.
    rig.post(&private_text(3, BOB, "/subscriptions")).await;
    rig.job_in(3, "succeeded", RECOVERY_DEADLINE).await;
    text_to(&rig, BOB, "You have no subscriptions.").await;
}

/// The text of the bot's first message to `chat` that contains `needle`.
async fn text_to(rig: &Rig, chat: i64, needle: &'static str) -> String {
    eventually("the reply is sent", RECOVERY_DEADLINE, || {
        let sent = rig.tg.sent();
        async move {
            sent.into_iter()
                .find(|m| m.chat_id == chat && m.text.contains(needle))
                .map(|m| m.text)
        }
    })
    .await
}

/// On v3, where MoviePilot keeps the service account as every oncebot subscription's owner,
/// oncebot's record decides: alice sees and may cancel her own, bob (a `user` too) may not
/// cancel hers, and the record goes with the subscription.
#[tokio::test]
async fn on_v3_the_recorded_owner_lists_and_cancels_their_own_and_nobody_elses() {
    let users = format!("{ALICE}=alice:user,{BOB}=bob:user");
    let rig = Rig::with(Dialect::V3, &[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    let _bot = rig.start_pipeline().await;
    rig.send(1, "/subscribe tmdb:108545 S1").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let id = rig.mp.subscriptions()[0].id;

    rig.send(2, "/subscriptions").await;
    rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    let own = text_to(&rig, ALICE, "Your subscriptions").await;
    assert!(own.contains(&format!("#{id}")), "{own}");

    rig.post(&private_text(3, BOB, &format!("/unsubscribe {id}")))
        .await;
    rig.job_in(3, "failed", RECOVERY_DEADLINE).await;
    text_to(&rig, BOB, "alice's").await;

    rig.send(4, &format!("/unsubscribe {id}")).await;
    rig.job_in(4, "succeeded", RECOVERY_DEADLINE).await;
    let (message_id, markup) = eventually("the question", RECOVERY_DEADLINE, || {
        let sent = rig.tg.sent();
        async move {
            sent.into_iter()
                .find(|m| m.chat_id == ALICE && m.text.contains("Cancel subscription"))
                .map(|m| (m.message_id, m.reply_markup))
        }
    })
    .await;
    let confirm = markup.expect("Confirm / Cancel")["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_string();
    let mut tap = callback_update(ALICE, ALICE, message_id, &confirm);
    tap["update_id"] = serde_json::json!(5);
    rig.post(&tap).await;
    rig.job_in(5, "succeeded", RECOVERY_DEADLINE).await;
    assert!(rig.mp.subscriptions().is_empty());
    let owners: usize = rig
        .store
        .conn()
        .await
        .hlen(rig.store.keys.owners())
        .await
        .unwrap();
    assert_eq!(owners, 0, "the record goes with the subscription");
}
