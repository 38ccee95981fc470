//! Issue 44, item 4: the lists of media requests, through a real oncebot, the fake MoviePilot,
//! the fake Bot API and a private Redis. An admin's `/requests` lists the pending requests with
//! the card's buttons, and a tap there decides exactly as one on a card (one job, every card
//! edited, a second tap told); `/mine` shows a requester's requests with their states, and its
//! Withdraw withdraws once. Anyone below admin is refused `/requests`.

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::moviepilot::routes;
use oncebot_tools::sim::telegram::StoredMessage;
use redis::AsyncCommands as _;
use serde_json::json;

use crate::grants::{button, message_in, tap, told};
use crate::requests::{CAROL, DUNE, card_says, with_button};
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{
    ALICE, BOB, GROUP, MALLORY, button_labels, eventually, group_text, private_text, tapped,
};

/// Alice and Bob are admins (each gets a card in their private chat), Carol a requester,
/// Mallory a viewer.
async fn household() -> Rig {
    household_with(&[]).await
}

/// [`household`] with `extra` settings.
async fn household_with(extra: &[(&str, &str)]) -> Rig {
    let allowed = format!("{ALICE},{BOB},{CAROL},{MALLORY}");
    let users = format!("{ALICE}=:admin,{BOB}=:admin,{CAROL}=carol:requester,{MALLORY}=:viewer");
    let mut env = vec![
        ("ONCEBOT__TELEGRAM__ALLOWED_USERS", allowed.as_str()),
        ("ONCEBOT__TELEGRAM__USERS", users.as_str()),
    ];
    env.extend_from_slice(extra);
    Rig::with(Dialect::V2, &env).await
}

/// Message `message` as it is now (after any edit).
fn now(rig: &Rig, message: &StoredMessage) -> StoredMessage {
    rig.tg
        .received(message.chat_id)
        .into_iter()
        .find(|m| m.message_id == message.message_id)
        .expect("the message")
}

/// Carol types `text` (update `update_id`), which her worker makes request `n` of; the admins'
/// cards, once they came.
async fn carol_asks(
    rig: &Rig,
    update_id: i64,
    text: &str,
    n: u64,
) -> (StoredMessage, StoredMessage) {
    rig.post(&private_text(update_id, CAROL, text)).await;
    message_in(rig, CAROL, &format!("Sent for approval (request #{n})")).await;
    let head = format!("Media request #{n}");
    (
        message_in(rig, ALICE, &head).await,
        message_in(rig, BOB, &head).await,
    )
}

/// Alice's `/requests` lists Carol's two pending requests, oldest first, with the card's
/// buttons (Approve as best version only for the subscription). Approve on the list makes
/// exactly one job, owned by Carol and approved by Alice; both cards of that request say so,
/// Carol is told, the list is left as shown; a second tap on the list or on a card is told it
/// was decided and makes nothing. The next `/requests` lists only what is still pending.
#[tokio::test]
async fn an_approval_from_the_admins_list_decides_once_as_the_card_does() {
    let rig = household().await;
    let _bot = rig.start_pipeline().await;
    let (alice_card, bob_card) = carol_asks(&rig, 1, &format!("/subscribe tmdb:{DUNE}"), 1).await;
    carol_asks(&rig, 2, &format!("/best tmdb:{DUNE}"), 2).await;

    rig.post(&private_text(3, ALICE, "/requests")).await;
    let list = message_in(&rig, ALICE, "Pending requests (2), oldest first:").await;
    let first = list.text.find("📝 #1 · carol (1003)").expect("#1 listed");
    let second = list.text.find("📝 #2 · carol (1003)").expect("#2 listed");
    assert!(first < second, "oldest first: {}", list.text);
    assert!(list.text.contains("Subscription: Dune"), "{}", list.text);
    assert_eq!(
        button_labels(&list),
        [
            "Approve #1",
            "Approve as best #1",
            "Decline #1",
            "Approve #2",
            "Decline #2"
        ]
    );
    assert!(button(&list, "Approve #1").starts_with("r:"));
    let jobs = rig.store.job_ids().await.len();

    let approved = tapped(&rig, tap(4, ALICE, &list, &button(&list, "Approve #1"))).await;
    assert_eq!(approved, "Done: ✅ Approved by User 1001 (1001)");
    let job = rig
        .job_in(jobs as u64 + 1, "succeeded", RECOVERY_DEADLINE)
        .await;
    assert_eq!(job["command"], "subscribe");
    assert_eq!(job["user_id"], CAROL.to_string());
    assert_eq!(job["approved_by"], ALICE.to_string());
    assert_eq!(job["request"], "1");
    told(&rig, CAROL, "Request #1 was approved").await;
    card_says(&rig, &alice_card, "Approved by User 1001 (1001)").await;
    card_says(&rig, &bob_card, "Approved by User 1001 (1001)").await;

    let again = tapped(&rig, tap(5, ALICE, &list, &button(&list, "Decline #1"))).await;
    assert_eq!(again, "Already decided: ✅ Approved by User 1001 (1001)");
    let late = tapped(&rig, tap(6, BOB, &bob_card, &button(&bob_card, "Approve"))).await;
    assert!(late.starts_with("Already decided: ✅"), "{late}");

    // A reply in Alice's chat comes after anything queued there before it (in order per chat):
    // by then the list would have been edited if a tap edited it.
    rig.post(&private_text(7, ALICE, "/requests")).await;
    let fresh = message_in(&rig, ALICE, "Pending requests (1), oldest first:").await;
    assert!(!fresh.text.contains("#1 ·"), "{}", fresh.text);
    assert_eq!(button_labels(&fresh), ["Approve #2", "Decline #2"]);
    let shown = now(&rig, &list);
    assert_eq!(
        (shown.edits, shown.text.as_str()),
        (0, list.text.as_str()),
        "the list is left as shown"
    );

    assert_eq!(
        rig.store.job_ids().await.len(),
        jobs + 2,
        "one approval, one list"
    );
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1);
    let subs = rig.mp.subscriptions();
    assert_eq!(subs.len(), 1, "{subs:?}");
    assert_eq!(subs[0].username, "carol");
}

/// Carol's `/mine` shows her requests newest first with their states (declined by whom,
/// waiting, approved by whom with the job), a Withdraw button only on the pending one; it
/// withdraws once (both cards edited, a second tap told, the list left as shown), and her next
/// `/mine` says withdrawn. Carol (a requester) and Mallory (a viewer) are refused `/requests`;
/// Mallory's `/mine` is empty.
#[tokio::test]
async fn mine_shows_the_states_and_withdraws_once_and_requests_is_an_admins() {
    let rig = household().await;
    let _bot = rig.start_pipeline().await;
    let (alice_card, _) = carol_asks(&rig, 1, &format!("/subscribe tmdb:{DUNE}"), 1).await;
    let (best_alice, best_bob) = carol_asks(&rig, 2, &format!("/best tmdb:{DUNE}"), 2).await;
    rig.post(&private_text(3, CAROL, &format!("/download tmdb:{DUNE}")))
        .await;
    let releases = with_button(&rig, CAROL, "Download 1").await;
    let asked = tapped(
        &rig,
        tap(4, CAROL, &releases, &button(&releases, "Download 1")),
    )
    .await;
    assert_eq!(asked, "Sent for approval (request #3)");
    let download_card = message_in(&rig, BOB, "Media request #3").await;

    let approve = tap(5, ALICE, &alice_card, &button(&alice_card, "Approve"));
    assert!(tapped(&rig, approve).await.starts_with("Done: ✅"));
    let decline = tap(6, BOB, &download_card, &button(&download_card, "Decline"));
    assert!(tapped(&rig, decline).await.starts_with("Done: ❌"));
    let job = rig.job_in(4, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["request"], "1");

    rig.post(&private_text(7, CAROL, "/mine")).await;
    // The approved subscription's job opened its live card (issue 45), listed with them.
    // Request #1's job is that card: one line for both.
    let mine = message_in(&rig, CAROL, "Your requests and cards (3), newest first:").await;
    let states = [
        "🃏 job #4 · 📺 subscribed (request #1, approved)",
        "#3 · ❌ declined by User 1002 (1002)\nDownload: Dune",
        "#2 · ⏳ waiting for approval\nBest-version subscription: Dune",
    ];
    let at: Vec<usize> = states
        .iter()
        .map(|s| {
            mine.text
                .find(s)
                .unwrap_or_else(|| panic!("{s:?} in {}", mine.text))
        })
        .collect();
    assert!(at.is_sorted(), "newest first: {}", mine.text);
    assert_eq!(button_labels(&mine), ["Show job #4", "Withdraw #2"]);

    let withdrawn = tapped(&rig, tap(8, CAROL, &mine, &button(&mine, "Withdraw #2"))).await;
    assert_eq!(withdrawn, "Request withdrawn.");
    card_says(&rig, &best_alice, "Withdrawn by the requester").await;
    card_says(&rig, &best_bob, "Withdrawn by the requester").await;
    let again = tapped(&rig, tap(9, CAROL, &mine, &button(&mine, "Withdraw #2"))).await;
    assert_eq!(again, "Already decided: ↩️ Withdrawn by the requester");
    let late = tapped(&rig, tap(10, BOB, &best_bob, &button(&best_bob, "Decline"))).await;
    assert!(late.starts_with("Already decided: ↩️"), "{late}");

    rig.post(&private_text(11, CAROL, "/mine")).await;
    let after = message_in(&rig, CAROL, "#2 · ↩️ withdrawn").await;
    assert_eq!(
        button_labels(&after),
        ["Show job #4"],
        "nothing pending: {after:?}"
    );
    assert_eq!(now(&rig, &mine).edits, 0, "the list is left as shown");

    let jobs = rig.store.job_ids().await.len();
    rig.post(&private_text(12, CAROL, "/requests")).await;
    message_in(&rig, CAROL, "Only an admin can do that.").await;
    rig.post(&private_text(13, MALLORY, "/requests")).await;
    message_in(&rig, MALLORY, "Only an admin can do that.").await;
    rig.post(&private_text(14, MALLORY, "/mine")).await;
    message_in(&rig, MALLORY, "You have no requests or cards").await;
    assert_eq!(
        rig.store.job_ids().await.len(),
        jobs + 1,
        "a refusal makes no job"
    );
    assert_eq!(rig.mp.calls(routes::DOWNLOAD_ADD), 0);
    assert_eq!(rig.mp.calls(routes::SUBSCRIBE_CREATE), 1);
}

/// Issue 45, item 4: Carol's `/mine` lists her live cards among her requests, newest first:
/// the download and the subscription her approved requests made (each with its state in
/// words and a Show button), then the requests (the pending one with Withdraw). Show sends the
/// card's current text again as a new message in reply to the card (private chats have no
/// message links), as often as it is tapped, and makes no job; Alice's tap on Carol's Show is
/// refused and sends nothing. A card whose message was deleted, and a list in another chat than
/// the card's, get the card's text without a reply.
#[tokio::test]
async fn mine_lists_cards_among_requests_and_show_sends_a_card_again_in_reply_to_it() {
    let rig = household_with(&[
        ("ONCEBOT__FOLLOW__PROGRESS_POLL_SECS", "1"),
        ("ONCEBOT__MOVIEPILOT__DOWNLOAD_SETTLE_SECS", "2"),
    ])
    .await;
    let _bot = rig.start_pipeline().await;
    let (sub_card, _) = carol_asks(&rig, 1, &format!("/subscribe tmdb:{DUNE}"), 1).await;
    carol_asks(&rig, 2, &format!("/best tmdb:{DUNE}"), 2).await;
    rig.post(&private_text(3, CAROL, &format!("/download tmdb:{DUNE}")))
        .await;
    let releases = with_button(&rig, CAROL, "Download 1").await;
    let asked = tapped(
        &rig,
        tap(4, CAROL, &releases, &button(&releases, "Download 1")),
    )
    .await;
    assert_eq!(asked, "Sent for approval (request #3)");
    let dl_card = message_in(&rig, ALICE, "Media request #3").await;

    // Approved one after the other: the subscription's card opens first.
    let jobs = rig.store.job_ids().await.len() as u64;
    let approve = tap(5, ALICE, &sub_card, &button(&sub_card, "Approve"));
    assert!(tapped(&rig, approve).await.starts_with("Done: ✅"));
    let sub = jobs + 1;
    rig.job_in(sub, "succeeded", RECOVERY_DEADLINE).await;
    let approve = tap(6, ALICE, &dl_card, &button(&dl_card, "Approve"));
    assert!(tapped(&rig, approve).await.starts_with("Done: ✅"));
    let dl = jobs + 2;
    rig.job_in(dl, "succeeded", RECOVERY_DEADLINE).await;
    // The download listed at 0 % (its card edited once), the subscription's card as it opened.
    let download = card_in(&rig, dl, "state", "downloading").await;
    let message: i64 = download["message_id"].parse().unwrap();
    card_in(&rig, sub, "state", "subscribed").await;
    let of_carol: Vec<u64> = {
        let mut conn = rig.store.conn().await;
        conn.zrevrange(rig.store.keys.cards_of(CAROL), 0, -1)
            .await
            .unwrap()
    };
    assert_eq!(of_carol, [dl, sub], "Carol's cards, newest first");
    let ttl: i64 = {
        let mut conn = rig.store.conn().await;
        conn.ttl(rig.store.keys.cards_of(CAROL)).await.unwrap()
    };
    assert!(ttl > 30 * 86_400, "her index outlives her cards: {ttl}");

    rig.post(&private_text(7, CAROL, "/mine")).await;
    // Each approved request is its job's card: one line for both.
    let mine = message_in(&rig, CAROL, "Your requests and cards (3), newest first:").await;
    let lines = [
        format!("🃏 job #{dl} · ⬇️ downloading 0% (request #3, approved)\nDownload: Dune"),
        format!("🃏 job #{sub} · 📺 subscribed (request #1, approved)\nSubscription: Dune"),
        "#2 · ⏳ waiting for approval".to_string(),
    ];
    let at: Vec<usize> = lines
        .iter()
        .map(|l| {
            mine.text
                .find(l.as_str())
                .unwrap_or_else(|| panic!("{l:?} in {}", mine.text))
        })
        .collect();
    assert!(at.is_sorted(), "newest first: {}", mine.text);
    let show = format!("Show job #{dl}");
    assert_eq!(
        button_labels(&mine),
        [
            show.clone(),
            format!("Show job #{sub}"),
            "Withdraw #2".into()
        ]
    );

    // Show: the card's text, a new message in reply to the card; no job, nothing asked of
    // MoviePilot's downloader.
    let jobs = rig.store.job_ids().await.len();
    let adds = rig.mp.calls(routes::DOWNLOAD_ADD);
    let sends = rig.tg.count("sendMessage");
    let text = card_in(&rig, dl, "state", "downloading").await["text"].clone();
    assert!(text.contains("Downloading 0%"), "{text}");
    for update in [8, 9] {
        let again = show_sends(&rig, tap(update, CAROL, &mine, &button(&mine, &show))).await;
        assert_eq!(again["chat_id"], json!(CAROL), "{again}");
        assert_eq!(again["text"], json!(text), "the card's text: {again}");
        assert_eq!(
            replied_to(&again),
            Some(message),
            "in reply to the card: {again}"
        );
    }
    let foreign = tapped(&rig, tap(10, ALICE, &mine, &button(&mine, &show))).await;
    assert!(foreign.contains("not for you"), "{foreign}");
    // Carol's next reply comes after anything queued in her chat before it.
    rig.post(&private_text(11, CAROL, "/mine")).await;
    eventually("the second list", RECOVERY_DEADLINE, || async {
        let lists = rig
            .tg
            .received(CAROL)
            .into_iter()
            .filter(|m| m.text.starts_with("Your requests and cards"))
            .count();
        (lists == 2).then_some(())
    })
    .await;
    assert_eq!(
        rig.tg.count("sendMessage"),
        sends + 3,
        "two Shows and the second list"
    );
    assert_eq!(
        rig.store.job_ids().await.len(),
        jobs + 1,
        "the second list's job only"
    );
    assert_eq!(rig.mp.calls(routes::DOWNLOAD_ADD), adds);

    // The card's message deleted: its next edit is refused (the card is `gone`), and Show
    // sends the card's text without a reply.
    let hash = rig.store.job(dl).await["mp_download_hash"].clone();
    assert!(rig.tg.user_deletes(CAROL, message));
    rig.mp.finish_download(&hash);
    let gone = card_in(&rig, dl, "gone", "1").await;
    assert!(gone["text"].contains("Downloaded, waiting to be filed"));
    let again = show_sends(&rig, tap(12, CAROL, &mine, &button(&mine, &show))).await;
    assert_eq!(again["chat_id"], json!(CAROL), "{again}");
    assert_eq!(again["text"], json!(gone["text"]), "{again}");
    assert!(
        replied_to(&again).is_none(),
        "no reply to a deleted card: {again}"
    );

    // A list shown in another chat (the group): Show sends the card there, without a reply
    // (the card's message is in Carol's private chat).
    let subscribed = eventually(
        "the subscription card's text",
        RECOVERY_DEADLINE,
        || async {
            let c = card_in(&rig, sub, "state", "subscribed").await;
            c.contains_key("text").then_some(c)
        },
    )
    .await;
    rig.post(&group_text(13, CAROL, "/mine")).await;
    let in_group = message_in(&rig, GROUP, "Your requests and cards (3)").await;
    let label = format!("Show job #{sub}");
    let again = show_sends(&rig, tap(14, CAROL, &in_group, &button(&in_group, &label))).await;
    assert_eq!(again["chat_id"], json!(GROUP), "{again}");
    assert_eq!(again["text"], json!(subscribed["text"]), "{again}");
    assert!(replied_to(&again).is_none(), "not across chats: {again}");
}

/// Posts a Show tap, checks its answer says nothing, and returns the sendMessage it made.
async fn show_sends(rig: &Rig, update: serde_json::Value) -> serde_json::Value {
    let sends = rig.tg.count("sendMessage");
    assert_eq!(tapped(rig, update).await, "");
    rig.tg
        .wait_for_calls("sendMessage", sends + 1, RECOVERY_DEADLINE)
        .await
        .unwrap();
    rig.tg.observe(|o| {
        o.calls()
            .iter()
            .rev()
            .find(|c| c.method == "sendMessage")
            .map(|c| c.params.clone())
            .unwrap()
    })
}

/// The message a sendMessage replies to, if any.
fn replied_to(params: &serde_json::Value) -> Option<i64> {
    params["reply_parameters"]["message_id"]
        .as_i64()
        .or_else(|| params["reply_to_message_id"].as_i64())
}

/// Waits until card `id` has `field` = `value` and knows its message; returns the card.
async fn card_in(
    rig: &Rig,
    id: u64,
    field: &str,
    value: &str,
) -> std::collections::BTreeMap<String, String> {
    eventually(
        &format!("card {id}'s {field} to be {value:?}"),
        RECOVERY_DEADLINE,
        || async move {
            let mut conn = rig.store.conn().await;
            let c: std::collections::BTreeMap<String, String> =
                conn.hgetall(rig.store.keys.card(id)).await.unwrap();
            (c.get(field).map(String::as_str) == Some(value) && c.contains_key("message_id"))
                .then_some(c)
        },
    )
    .await
}
