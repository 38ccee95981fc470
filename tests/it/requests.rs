//! Issue 44: ask and approve, through a real oncebot, the fake MoviePilot, the fake Bot API and
//! a private Redis. A requester's typed `/subscribe` and tapped `Download k` become requests
//! with one card per admin chat; the first admin's tap decides once (two at the same moment make
//! one job), every other card says so; decline, withdrawal, expiry and a revoked requester make
//! nothing; a worker SIGKILLed after the approval's job was claimed, or after MoviePilot made the
//! subscription, leaves one subscription owned by the requester.

use std::time::Duration;

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::moviepilot::{MediaServer, routes};
use oncebot_tools::sim::telegram::StoredMessage;

use crate::grants::{button, cli, message_in, tap, told};
use crate::support::child::Oncebot;
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{
    ALICE, BOB, MALLORY, button_labels, eventually, private_text, tap_answer, tapped,
};

/// The requester: mapped to MoviePilot's `carol`.
pub(crate) const CAROL: i64 = 1003;
/// A movie the simulator's sites list releases of, not in its library.
pub(crate) const DUNE: u64 = 438631;

/// Alice and Bob are admins (each gets a card in their private chat); Carol a requester.
async fn household(extra: &[(&str, &str)]) -> Rig {
    let allowed = format!("{ALICE},{BOB},{CAROL}");
    let users = format!("{ALICE}=:admin,{BOB}=:admin,{CAROL}=carol:requester");
    let mut env = vec![
        ("ONCEBOT__TELEGRAM__ALLOWED_USERS", allowed.as_str()),
        ("ONCEBOT__TELEGRAM__USERS", users.as_str()),
    ];
    env.extend_from_slice(extra);
    Rig::with(Dialect::V2, &env).await
}

/// The newest message to `chat` with a button labelled `label`, once there is one.
pub(crate) async fn with_button(rig: &Rig, chat: i64, label: &str) -> StoredMessage {
    eventually(
        &format!("a message to {chat} with a button {label:?}"),
        RECOVERY_DEADLINE,
        || {
            let found = rig
                .tg
                .received(chat)
                .into_iter()
                .rev()
                .find(|m| button_labels(m).iter().any(|l| l == label));
            async move { found }
        },
    )
    .await
}

/// Waits until message `card` (in its chat) says `text`, and has no buttons left.
pub(crate) async fn card_says(rig: &Rig, card: &StoredMessage, text: &str) {
    eventually(
        &format!(
            "card {} in {} to say {text:?}",
            card.message_id, card.chat_id
        ),
        RECOVERY_DEADLINE,
        || {
            let now = rig
                .tg
                .received(card.chat_id)
                .into_iter()
                .find(|m| m.message_id == card.message_id);
            async move {
                now.filter(|m| m.text.contains(text) && m.reply_markup.is_none())
                    .map(|_| ())
            }
        },
    )
    .await;
}

/// Carol types `/subscribe tmdb:<Dune>` (update `update_id`): her worker looks, finds no
/// subscription and no library copy, and makes request `n`; the admins' cards, once they came.
async fn carol_asks_for_dune(rig: &Rig, update_id: i64, n: u64) -> (StoredMessage, StoredMessage) {
    rig.post(&private_text(
        update_id,
        CAROL,
        &format!("/subscribe tmdb:{DUNE}"),
    ))
    .await;
    message_in(rig, CAROL, &format!("Sent for approval (request #{n})")).await;
    let head = format!("Media request #{n}");
    (
        message_in(rig, ALICE, &head).await,
        message_in(rig, BOB, &head).await,
    )
}

/// A typed `/subscribe` by a requester is a request, never a subscription; each admin gets one
/// card; a forged tap of Carol's makes nothing; Alice and Bob tapping Approve at the same moment
/// make one job, owned by Carol, approved by one of them, and one subscription; both cards say
/// who approved, a later tap is told, and Carol hears it was approved, then the result.
#[tokio::test]
async fn two_admins_approving_at_once_make_one_job_and_one_subscription() {
    let rig = household(&[]).await;
    let _bot = rig.start_pipeline().await;
    let (alice_card, bob_card) = carol_asks_for_dune(&rig, 1, 1).await;
    let lookup = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(lookup["role"], "requester");
    assert_eq!(lookup["request"], "1");
    assert_eq!(rig.mp.subscriptions().len(), 0, "a request makes nothing");
    assert_eq!(
        button_labels(&alice_card),
        ["Approve", "Approve as best version", "Decline"]
    );
    assert!(
        alice_card.text.contains("Subscription: Dune"),
        "{alice_card:?}"
    );
    assert!(
        alice_card.text.contains("Asked by: carol (1003)"),
        "{alice_card:?}"
    );

    // Carol's copy of an admin's button, tapped in her own chat: not hers.
    let sent = message_in(&rig, CAROL, "Sent for approval").await;
    let forged = tapped(&rig, tap(10, CAROL, &sent, &button(&alice_card, "Approve"))).await;
    assert_eq!(forged, "This button is not for you.");

    let (a, b) = (
        tap(11, ALICE, &alice_card, &button(&alice_card, "Approve")),
        tap(12, BOB, &bob_card, &button(&bob_card, "Approve")),
    );
    tokio::join!(rig.post(&a), rig.post(&b));
    let answers = [tap_answer(&rig, &a).await, tap_answer(&rig, &b).await];
    let won = answers
        .iter()
        .filter(|a| a.starts_with("Done: ✅ Approved by"))
        .count();
    let late = answers
        .iter()
        .filter(|a| a.starts_with("Already decided: ✅"))
        .count();
    assert_eq!((won, late), (1, 1), "{answers:?}");

    let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["command"], "subscribe");
    assert_eq!(job["user_id"], CAROL.to_string());
    assert_eq!(job["requester"], "carol");
    assert_eq!(job["request"], "1");
    assert_eq!(job["role"], "admin");
    let approver = job["approved_by"].clone();
    assert!(
        [ALICE.to_string(), BOB.to_string()].contains(&approver),
        "{job:?}"
    );
    assert_eq!(rig.store.job_ids().await.len(), 2, "one job for two taps");
    let subs = rig.mp.subscriptions();
    assert_eq!(subs.len(), 1, "{subs:?}");
    assert_eq!(subs[0].username, "carol");

    // One message from the request to the library: the answer said "sent", then "approved",
    // and the job's result replaced it; that message (or the poster that took its place) is
    // the job's live card.
    told(&rig, CAROL, "Request #1 was approved").await;
    let card = eventually("the approved job's card", RECOVERY_DEADLINE, || async {
        let mut conn = rig.store.conn().await;
        let c: std::collections::BTreeMap<String, String> =
            redis::AsyncCommands::hgetall(&mut conn, rig.store.keys.card(2))
                .await
                .unwrap();
        c.contains_key("message_id").then_some(c)
    })
    .await;
    let replaced = card["message_id"] == sent.message_id.to_string()
        || rig.tg.deleted().contains(&(CAROL, sent.message_id));
    assert!(replaced, "the answer became the card: {card:?}");
    let by = format!("Approved by User {approver} ({approver})");
    card_says(&rig, &alice_card, &by).await;
    card_says(&rig, &bob_card, &by).await;
    let again = tapped(&rig, tap(13, BOB, &bob_card, &button(&bob_card, "Decline"))).await;
    assert!(again.starts_with("Already decided: ✅"), "{again}");
    assert_eq!(rig.store.job_ids().await.len(), 2);
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1);
}

/// A requester's tapped `Download k` is a request made in the tap's step (no job); declined, it
/// tells Carol and edits both cards; a second one withdrawn by Carol is edited as withdrawn and
/// an admin's later Approve makes nothing. No download ever reaches MoviePilot.
#[tokio::test]
async fn a_tapped_download_is_a_request_declined_or_withdrawn_never_a_download() {
    let rig = household(&[]).await;
    let _bot = rig.start_pipeline().await;
    rig.post(&private_text(1, CAROL, &format!("/download tmdb:{DUNE}")))
        .await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let list = with_button(&rig, CAROL, "Download 1").await;

    let first = tapped(&rig, tap(2, CAROL, &list, &button(&list, "Download 1"))).await;
    assert_eq!(first, "Sent for approval (request #1)");
    let alice_card = message_in(&rig, ALICE, "Media request #1").await;
    let bob_card = message_in(&rig, BOB, "Media request #1").await;
    assert!(alice_card.text.contains("Release: "), "{alice_card:?}");
    assert!(alice_card.text.contains("Site: "), "{alice_card:?}");
    assert_eq!(
        button_labels(&alice_card),
        ["Approve", "Decline"],
        "no best version for a download"
    );
    assert_eq!(
        rig.store.job_ids().await.len(),
        1,
        "a requester's tap makes no job"
    );

    let declined = tapped(&rig, tap(3, BOB, &bob_card, &button(&bob_card, "Decline"))).await;
    assert_eq!(declined, "Done: ❌ Declined by User 1002 (1002)");
    message_in(&rig, CAROL, "Request #1 was declined").await;
    card_says(&rig, &alice_card, "Declined by User 1002").await;
    card_says(&rig, &bob_card, "Declined by User 1002").await;
    let late = tapped(
        &rig,
        tap(4, ALICE, &alice_card, &button(&alice_card, "Approve")),
    )
    .await;
    assert!(late.starts_with("Already decided: ❌"), "{late}");

    // The list is still Carol's: a second release, withdrawn before anyone decides.
    let list = with_button(&rig, CAROL, "Download 2").await;
    let second = tapped(&rig, tap(5, CAROL, &list, &button(&list, "Download 2"))).await;
    assert_eq!(second, "Sent for approval (request #2)");
    let card = message_in(&rig, ALICE, "Media request #2").await;
    let sent = message_in(&rig, CAROL, "Sent for approval (request #2)").await;
    let withdrawn = tapped(&rig, tap(6, CAROL, &sent, &button(&sent, "Withdraw"))).await;
    assert_eq!(withdrawn, "Request withdrawn.");
    card_says(&rig, &card, "Withdrawn by the requester").await;
    let again = tapped(&rig, tap(7, CAROL, &sent, &button(&sent, "Withdraw"))).await;
    assert!(again.starts_with("Already decided"), "{again}");
    let late = tapped(&rig, tap(8, ALICE, &card, &button(&card, "Approve"))).await;
    assert!(late.starts_with("Already decided: ↩️"), "{late}");

    assert_eq!(rig.store.job_ids().await.len(), 1);
    assert_eq!(rig.mp.calls(routes::DOWNLOAD_ADD), 0);
}

/// A request nobody decided within `household.request_ttl_secs` expires: the first tap after
/// it is told so, the cards say so, Carol is told, no job. A requester whose grant is revoked
/// while their request waits is not approved: the tap declines it.
#[tokio::test]
async fn an_expired_request_or_a_revoked_requester_makes_no_job() {
    let rig = household(&[("ONCEBOT__HOUSEHOLD__REQUEST_TTL_SECS", "10")]).await;
    let _bot = rig.start_pipeline().await;
    let (alice_card, bob_card) = carol_asks_for_dune(&rig, 1, 1).await;
    // The request's time must pass: nothing to await but the clock.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let expired = tapped(
        &rig,
        tap(2, ALICE, &alice_card, &button(&alice_card, "Approve")),
    )
    .await;
    assert_eq!(expired, "This request has expired or does not exist.");
    message_in(&rig, CAROL, "Request #1 expired").await;
    card_says(&rig, &bob_card, "Expired without a decision").await;
    assert_eq!(rig.store.job_ids().await.len(), 1);

    // Mallory, granted requester from the CLI, asks; her grant is taken back before anyone
    // decides.
    cli(&rig, &["users", "grant", &MALLORY.to_string(), "requester"]).await;
    eventually(
        "the ingress to follow the grant",
        RECOVERY_DEADLINE,
        || async {
            let granted = rig.metric("oncebot_users_mapped{source=\"granted\"}").await;
            (granted.as_deref() == Some("1")).then_some(())
        },
    )
    .await;
    let jobs = rig.store.job_ids().await.len();
    rig.post(&private_text(
        3,
        MALLORY,
        &format!("/subscribe tmdb:{DUNE}"),
    ))
    .await;
    message_in(&rig, MALLORY, "Sent for approval (request #2)").await;
    let card = message_in(&rig, ALICE, "Media request #2").await;
    cli(&rig, &["users", "revoke", &MALLORY.to_string()]).await;
    // Until the ingress follows the revocation, a tap would approve: wait on the follower's
    // gauge instead of tapping.
    eventually(
        "the revocation to reach the ingress",
        RECOVERY_DEADLINE,
        || async {
            let granted = rig.metric("oncebot_users_mapped{source=\"granted\"}").await;
            (granted.as_deref() == Some("0")).then_some(())
        },
    )
    .await;
    let bob_card = message_in(&rig, BOB, "Media request #2").await;
    let gone = tapped(&rig, tap(4, BOB, &bob_card, &button(&bob_card, "Approve"))).await;
    assert_eq!(
        gone,
        "This person no longer has access; the request is declined."
    );
    card_says(&rig, &card, "the requester no longer has access").await;
    assert_eq!(
        rig.store.job_ids().await.len(),
        jobs + 1,
        "only Mallory's lookup"
    );
    assert_eq!(rig.mp.subscriptions().len(), 0);
}

/// The approval's job under its command's recovery: a worker SIGKILLed right after it claimed
/// the job, or right after MoviePilot made the subscription (before it was given to Carol),
/// is replaced, and the job ends with one subscription owned by Carol and no second create.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_worker_killed_after_the_approval_leaves_one_subscription_owned_by_the_requester() {
    for point in ["worker.after_claim", "worker.after_subscribe_create"] {
        let rig = household(&[]).await;
        let _front = rig.start_roles(&["ingress", "dispatcher"], None).await;
        let mut worker = rig.start_worker_only().await;
        let (alice_card, _) = carol_asks_for_dune(&rig, 1, 1).await;
        rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
        worker.sigkill().await;

        let mut env = rig.env.clone();
        env.push(("FAILPOINTS".into(), format!("{point}=return")));
        let mut frozen = Oncebot::spawn(&["serve", "--role", "worker"], &env);
        frozen
            .wait_for_stderr("worker started", Duration::from_secs(10))
            .await;
        let approve = tap(2, ALICE, &alice_card, &button(&alice_card, "Approve"));
        assert!(tapped(&rig, approve).await.starts_with("Done: ✅"));
        frozen
            .wait_for_stderr(
                &format!("crash point {point} reached"),
                Duration::from_secs(10),
            )
            .await;
        frozen.sigkill().await;

        let _worker = rig.start_worker_only().await;
        let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(job["recoveries"], "1", "{point}: {job:?}");
        assert_eq!(job["approved_by"], ALICE.to_string());
        let subs = rig.mp.subscriptions();
        assert_eq!(subs.len(), 1, "{point}: {subs:?}");
        assert_eq!(subs[0].username, "carol", "{point}");
        assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1, "{point}");
        assert_eq!(rig.store.job_ids().await.len(), 2, "{point}");
    }
}

/// The library check runs first for a requester too: their Subscribe on a search match the
/// library has runs the look (a job, no request), which says so with the anyway button; that
/// button asks, and the card says the library has it. A match it lacks is asked at the tap.
#[tokio::test]
async fn a_requesters_subscribe_to_media_in_the_library_asks_only_anyway() {
    let rig = household(&[]).await;
    rig.mp.set_media_server(MediaServer::Configured);
    rig.mp.library_add_movie(DUNE);
    let _bot = rig.start_pipeline().await;
    rig.post(&private_text(1, CAROL, "/subscribe Dune")).await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let list = with_button(&rig, CAROL, "1. Subscribe Dune (2021)").await;

    rig.post(&tap(
        2,
        CAROL,
        &list,
        &button(&list, "1. Subscribe Dune (2021)"),
    ))
    .await;
    let look = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(look["mp_outcome"], "in_library", "{look:?}");
    assert!(
        !rig.tg
            .received(ALICE)
            .iter()
            .any(|m| m.text.contains("Media request")),
        "no request for media the library has"
    );
    let said = with_button(&rig, CAROL, "Subscribe anyway").await;
    let asked = tapped(
        &rig,
        tap(3, CAROL, &said, &button(&said, "Subscribe anyway")),
    )
    .await;
    assert_eq!(asked, "Sent for approval (request #1)");
    let card = message_in(&rig, ALICE, "Media request #1").await;
    assert!(card.text.contains("Library: already there"), "{card:?}");
    assert_eq!(
        rig.store.job_ids().await.len(),
        2,
        "the anyway tap made no job"
    );
    assert_eq!(rig.mp.subscriptions().len(), 0);
}

/// The same ask while it is pending is that request (a pointer, no second card), whichever way
/// it came; and `household.max_pending_requests_per_person` bounds how many wait at once: one
/// more is refused with no request and no card.
#[tokio::test]
async fn the_same_ask_is_its_request_and_a_person_has_at_most_so_many_pending() {
    // No duplicate window: the command's own repeat layer would answer a repeat inside it with
    // the first job; a request outlives any window, and its pointer answers after it.
    let rig = household(&[
        ("ONCEBOT__HOUSEHOLD__MAX_PENDING_REQUESTS_PER_PERSON", "1"),
        ("ONCEBOT__COMMANDS__SUBSCRIBE_WINDOW_SECS", "0"),
    ])
    .await;
    let _bot = rig.start_pipeline().await;
    carol_asks_for_dune(&rig, 1, 1).await;

    // The same media from a search match's Subscribe: the pending request, no second card.
    rig.post(&private_text(2, CAROL, "/search Dune")).await;
    let list = with_button(&rig, CAROL, "1. Subscribe Dune (2021)").await;
    let same = tapped(
        &rig,
        tap(3, CAROL, &list, &button(&list, "1. Subscribe Dune (2021)")),
    )
    .await;
    assert_eq!(same, "This is already waiting for approval (request #1)");

    // Another media while one waits: too many.
    rig.post(&private_text(4, CAROL, "/subscribe tmdb:693134"))
        .await;
    message_in(&rig, CAROL, "You have too many requests waiting").await;
    let cards = |chat| {
        rig.tg
            .received(chat)
            .iter()
            .filter(|m| m.text.contains("Media request #"))
            .count()
    };
    assert_eq!(
        (cards(ALICE), cards(BOB)),
        (1, 1),
        "one card each, for request #1"
    );
    assert_eq!(rig.mp.subscriptions().len(), 0);
}
