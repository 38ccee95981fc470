//! Paged lists (issue 24): release lists and match lists shown five at a time, ◀ / ▶ editing
//! the same message in place. A page turn is decided in tap.lua from the stored list (no job, no
//! MoviePilot request); every action button acts on the item it showed, whatever page the
//! message shows now (MoviePilot's #258); page buttons are their user's, and answer "expired"
//! once the list is gone. Ingress, worker and (where a message is edited) the dispatcher run as
//! a real process against the MoviePilot and Telegram simulators.

use std::time::Duration;

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::moviepilot::{SimMedia, SimRelease};
use oncebot_tools::sim::telegram::{StoredMessage, callback_update};
use redis::AsyncCommands as _;
use serde_json::{Value, json};

use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, buttons, eventually, private_text};

const DUNE: u64 = 438631;

/// Twelve releases of Dune: the catalogue's three and nine more (three pages: 5, 5, 2).
fn twelve_releases(rig: &Rig) {
    rig.mp.add_releases((1..=9).map(|n| {
        SimRelease::movie(
            DUNE,
            &format!("PTSite{n}"),
            &format!("Dune 2021 Pack {n:02} 1080p"),
            "",
        )
    }));
}

/// The labels of a message's buttons, row by row, flattened.
fn labels(message: &StoredMessage) -> Vec<String> {
    keyboard(message).into_iter().map(|b| b.0).collect()
}

fn keyboard(message: &StoredMessage) -> Vec<(String, String)> {
    let Some(markup) = &message.reply_markup else {
        return Vec::new();
    };
    markup["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .map(|b| {
            (
                b["text"].as_str().unwrap_or_default().to_string(),
                b["callback_data"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn data(message: &StoredMessage, label: &str) -> String {
    keyboard(message)
        .into_iter()
        .find(|(text, _)| text == label)
        .unwrap_or_else(|| panic!("no button {label:?} in {message:?}"))
        .1
}

/// The line of item `n` in a page's text (`n. ...`).
fn line(text: &str, n: usize) -> String {
    text.lines()
        .find(|l| l.starts_with(&format!("{n}. ")))
        .unwrap_or_else(|| panic!("no line {n} in {text}"))
        .to_string()
}

/// Waits until `chat` has a message that `shows`, and returns it.
async fn message_where(
    rig: &Rig,
    chat: i64,
    what: &str,
    shows: impl Fn(&StoredMessage) -> bool,
) -> StoredMessage {
    rig.tg
        .wait_for(RECOVERY_DEADLINE, |o| {
            o.received(chat).into_iter().any(&shows)
        })
        .await
        .unwrap_or_else(|e| panic!("{what}: {e:?}"));
    rig.tg
        .received(chat)
        .into_iter()
        .rfind(|m| shows(m))
        .unwrap()
}

/// Message `id` of `chat` once it `shows` (an edit arrived).
async fn edited(
    rig: &Rig,
    chat: i64,
    id: i64,
    what: &str,
    shows: impl Fn(&StoredMessage) -> bool,
) -> StoredMessage {
    message_where(rig, chat, what, |m| m.message_id == id && shows(m)).await
}

/// A tap by `user` in their private chat on `message`'s button `data`, as Telegram sends it
/// (known to the sim, so its answer is accepted once); returns the update.
async fn tap(rig: &Rig, user: i64, update_id: i64, message: i64, data: &str) -> Value {
    let mut update = callback_update(user, user, message, data);
    update["update_id"] = json!(update_id);
    rig.tg.push_update(update.clone());
    rig.post(&update).await;
    update
}

/// The text the bot answered a tap with (answerCallbackQuery).
async fn answer(rig: &Rig, update: &Value) -> String {
    let id = update["callback_query"]["id"].as_str().unwrap().to_string();
    let answered = |o: &oncebot_tools::sim::telegram::Observed<'_>| {
        o.calls()
            .iter()
            .find(|c| c.method == "answerCallbackQuery" && c.params["callback_query_id"] == id)
            .map(|c| c.params["text"].as_str().unwrap_or_default().to_string())
    };
    rig.tg
        .wait_for(RECOVERY_DEADLINE, |o| answered(o).is_some())
        .await
        .unwrap();
    rig.tg.observe(|o| answered(o)).unwrap()
}

fn is_page(n: usize, of: usize) -> impl Fn(&StoredMessage) -> bool {
    move |m| labels(m).contains(&format!("{n}/{of}"))
}

#[tokio::test]
async fn a_release_list_pages_in_place_and_an_old_page_s_button_downloads_what_it_showed() {
    let rig = Rig::new(Dialect::V2).await;
    twelve_releases(&rig);
    let _bot = rig.start_pipeline().await;
    rig.send(1, &format!("/download tmdb:{DUNE}")).await;
    let page1 = message_where(&rig, ALICE, "page 1 of the list", is_page(1, 3)).await;
    let list = page1.message_id;
    assert!(page1.text.starts_with("12 releases of "), "{}", page1.text);
    assert!(page1.text.contains("\n1. 【") && page1.text.contains("\n5. 【"));
    assert!(!page1.text.contains("\n6. "), "{}", page1.text);
    assert_eq!(
        labels(&page1),
        [
            "Download 1",
            "Download 2",
            "Download 3",
            "Download 4",
            "Download 5",
            "⚡ Auto",
            "1/3",
            "▶"
        ]
    );
    let (jobs, searches, requests) = (
        rig.store.job_ids().await,
        rig.mp.resource_searches(),
        rig.mp.requests(),
    );

    // ▶: the same message shows page 2, numbered for the whole list.
    let next = tap(&rig, ALICE, 2, list, &data(&page1, "▶")).await;
    let page2 = edited(&rig, ALICE, list, "page 2 in place", is_page(2, 3)).await;
    assert_eq!(answer(&rig, &next).await, "");
    assert!(page2.text.contains("\n6. 【") && page2.text.contains("\n10. 【"));
    assert!(!page2.text.contains("\n3. "), "{}", page2.text);
    assert_eq!(
        labels(&page2),
        [
            "Download 6",
            "Download 7",
            "Download 8",
            "Download 9",
            "Download 10",
            "⚡ Auto",
            "◀",
            "2/3",
            "▶"
        ]
    );
    let page3 = tap(&rig, ALICE, 3, list, &data(&page2, "▶")).await;
    let shown3 = edited(&rig, ALICE, list, "page 3 in place", is_page(3, 3)).await;
    answer(&rig, &page3).await;
    assert_eq!(
        labels(&shown3),
        ["Download 11", "Download 12", "⚡ Auto", "◀", "3/3"]
    );
    // A page fits a photo's caption (1024 characters), so a poster can carry it.
    for page in [&page1, &page2, &shown3] {
        assert!(page.text.chars().count() <= 1024, "{}", page.text);
    }
    // Page turns made no job and asked MoviePilot nothing.
    assert_eq!(rig.store.job_ids().await, jobs);
    assert_eq!(rig.mp.requests(), requests);

    // #258: page 1's Download 3, tapped while the message shows page 3, downloads page 1's
    // item 3, not the third item of the page shown.
    let three = line(&page1.text, 3);
    tap(&rig, ALICE, 4, list, &data(&page1, "Download 3")).await;
    let grab = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(grab["args"], "1 3");
    let adds = rig.mp.download_adds();
    assert_eq!(adds.len(), 1);
    let title = adds[0]["torrent_in"]["title"].as_str().unwrap().to_string();
    assert!(three.contains(&title), "{three} vs {title}");
    assert!(!line(&shown3.text, 11).contains(&title));

    // The used button's ✓ is on page 1, where it is: the message shows page 1 with it, page 2
    // has none, and page 1 keeps it when the user comes back.
    let marked = edited(&rig, ALICE, list, "page 1 with its ✓", |m| {
        labels(m).contains(&"✓ Download 3".to_string())
    })
    .await;
    assert!(is_page(1, 3)(&marked));
    rig.replies_sent(2..=2, RECOVERY_DEADLINE).await;
    let sent_before = rig.tg.count("sendMessage");
    // The page shown, tapped: Telegram's "message is not modified", a quiet success.
    let same = tap(&rig, ALICE, 5, list, &data(&marked, "1/3")).await;
    assert_eq!(answer(&rig, &same).await, "");
    tap(&rig, ALICE, 6, list, &data(&marked, "▶")).await;
    let again2 = edited(&rig, ALICE, list, "page 2 again", is_page(2, 3)).await;
    assert!(!labels(&again2).iter().any(|l| l.starts_with('✓')));
    tap(&rig, ALICE, 7, list, &data(&again2, "◀")).await;
    let back = edited(&rig, ALICE, list, "page 1 again", is_page(1, 3)).await;
    assert!(labels(&back).contains(&"✓ Download 3".to_string()));
    let not_modified = rig.tg.observe(|o| {
        o.calls()
            .iter()
            .filter(|c| c.method == "editMessageText" && c.status() == Some(400))
            .count()
    });
    assert_eq!(
        not_modified, 1,
        "one edit answered 'not modified', never retried"
    );
    assert_eq!(rig.tg.count("sendMessage"), sent_before, "no new message");
    assert_eq!(rig.mp.resource_searches(), searches);

    // The same search inside its window: page 1 again, in a new message, whose page buttons
    // work (the ✓ is kept).
    rig.send(8, &format!("/download tmdb:{DUNE}")).await;
    let repeat = message_where(&rig, ALICE, "the repeat's list", |m| {
        m.message_id != list && is_page(1, 3)(m)
    })
    .await;
    assert!(labels(&repeat).contains(&"✓ Download 3".to_string()));
    tap(&rig, ALICE, 9, repeat.message_id, &data(&repeat, "▶")).await;
    edited(
        &rig,
        ALICE,
        repeat.message_id,
        "the repeat's page 2",
        is_page(2, 3),
    )
    .await;
    assert_eq!(rig.mp.resource_searches(), searches);
    assert_eq!(rig.store.job_ids().await.len(), 2);
}

#[tokio::test]
async fn two_users_page_their_own_lists_of_the_same_search_and_not_each_other_s() {
    let rig = Rig::new(Dialect::V2).await;
    twelve_releases(&rig);
    let _bot = rig.start_pipeline().await;
    rig.send(1, &format!("/download tmdb:{DUNE}")).await;
    rig.post(&private_text(2, BOB, &format!("/download tmdb:{DUNE}")))
        .await;
    let alice = message_where(&rig, ALICE, "Alice's list", is_page(1, 3)).await;
    let bob = message_where(&rig, BOB, "Bob's list", is_page(1, 3)).await;

    tap(&rig, ALICE, 3, alice.message_id, &data(&alice, "▶")).await;
    let alice2 = edited(
        &rig,
        ALICE,
        alice.message_id,
        "Alice on page 2",
        is_page(2, 3),
    )
    .await;
    let bob_again = rig.tg.observe(|o| o.message(BOB, bob.message_id).cloned());
    assert!(
        is_page(1, 3)(&bob_again.unwrap()),
        "Bob's list did not move"
    );

    tap(&rig, BOB, 4, bob.message_id, &data(&bob, "▶")).await;
    let bob2 = edited(&rig, BOB, bob.message_id, "Bob on page 2", is_page(2, 3)).await;
    tap(&rig, BOB, 5, bob.message_id, &data(&bob2, "▶")).await;
    edited(&rig, BOB, bob.message_id, "Bob on page 3", is_page(3, 3)).await;
    let alice_now = rig
        .tg
        .observe(|o| o.message(ALICE, alice.message_id).cloned());
    assert!(
        is_page(2, 3)(&alice_now.unwrap()),
        "Alice's list stays on page 2"
    );

    // Bob taps Alice's ◀ (as a forwarded or shared keyboard would let him): refused, nothing
    // edited, and the button still works for Alice.
    let edits = rig.tg.count("editMessageText");
    let foreign = tap(&rig, BOB, 6, alice.message_id, &data(&alice2, "◀")).await;
    assert_eq!(
        answer(&rig, &foreign).await,
        "This button is not for you.",
        "the existing 'foreign' answer"
    );
    tap(&rig, ALICE, 7, alice.message_id, &data(&alice2, "◀")).await;
    edited(
        &rig,
        ALICE,
        alice.message_id,
        "Alice back on page 1",
        is_page(1, 3),
    )
    .await;
    assert_eq!(
        rig.tg.count("editMessageText"),
        edits + 1,
        "only Alice's tap edited"
    );
    assert_eq!(
        rig.store.job_ids().await.len(),
        2,
        "two searches, no other job"
    );
}

/// The list's replies-stream entry of kind `kind` written after `after` entries.
async fn reply_of_kind(
    rig: &Rig,
    kind: &str,
    after: usize,
) -> std::collections::BTreeMap<String, String> {
    eventually(
        &format!("a {kind} reply"),
        Duration::from_secs(10),
        || async {
            rig.store
                .replies()
                .await
                .into_iter()
                .skip(after)
                .find(|r| r["kind"] == kind)
        },
    )
    .await
}

#[tokio::test]
async fn page_buttons_after_the_list_expired_answer_expired_and_make_no_job() {
    let rig = Rig::with(
        Dialect::V2,
        &[("ONCEBOT__COMMANDS__RESOURCES_WINDOW_SECS", "2")],
    )
    .await;
    twelve_releases(&rig);
    let _bot = rig.start(None).await;
    rig.send(1, &format!("/download tmdb:{DUNE}")).await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let list = reply_of_kind(&rig, "result", 0).await;
    let next = buttons(&list)
        .into_iter()
        .find(|b| b.0 == "▶")
        .expect("a ▶ button")
        .1;
    let token = next.strip_prefix("t:").unwrap().to_string();
    let pages = rig.store.keys.pages(1);
    let store = &rig.store;
    eventually(
        "the list and its buttons expired",
        Duration::from_secs(10),
        || {
            let (pages, token) = (pages.clone(), store.keys.token(&token));
            async move {
                let mut conn = store.conn().await;
                let left: u64 = conn.exists(&[pages, token]).await.unwrap();
                (left == 0).then_some(())
            }
        },
    )
    .await;
    let before = rig.store.replies().await.len();
    let mut update = callback_update(ALICE, ALICE, 91_001, &next);
    update["update_id"] = json!(2);
    rig.post(&update).await;
    let id = update["callback_query"]["id"].as_str().unwrap().to_string();
    let answer = eventually("the tap's answer", Duration::from_secs(10), || async {
        store
            .stream(&store.keys.callbacks_stream())
            .await
            .into_iter()
            .find(|c| c["callback_query_id"] == id)
    })
    .await;
    assert_eq!(
        answer["text"],
        "This button has expired; send the command again."
    );
    assert_eq!(rig.store.job_ids().await.len(), 1, "no job");
    let cleared = reply_of_kind(&rig, "clear_markup", before).await;
    assert_eq!(cleared["edit_message_id"], "91001");
    assert!(
        !rig.store
            .replies()
            .await
            .iter()
            .any(|r| r["kind"] == "page"),
        "no page shown"
    );
}

/// A page whose list is gone while its token still lives (the list is stored a moment before
/// the tokens are made, so it expires that much earlier) answers "expired" too.
#[tokio::test]
async fn a_page_button_whose_list_is_gone_answers_expired() {
    let rig = Rig::new(Dialect::V2).await;
    twelve_releases(&rig);
    let _bot = rig.start(None).await;
    rig.send(1, &format!("/download tmdb:{DUNE}")).await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let list = reply_of_kind(&rig, "result", 0).await;
    let next = buttons(&list).into_iter().find(|b| b.0 == "▶").unwrap().1;
    let mut conn = rig.store.conn().await;
    let _: () = conn.del(rig.store.keys.pages(1)).await.unwrap();
    let mut update = callback_update(ALICE, ALICE, 91_001, &next);
    update["update_id"] = json!(2);
    rig.post(&update).await;
    let cleared = reply_of_kind(&rig, "clear_markup", 0).await;
    assert_eq!(cleared["edit_message_id"], "91001");
    let answers = rig.store.stream(&rig.store.keys.callbacks_stream()).await;
    assert_eq!(
        answers[0]["text"],
        "This button has expired; send the command again."
    );
    assert_eq!(rig.store.job_ids().await.len(), 1);
}

#[tokio::test]
async fn a_list_longer_than_its_bound_says_how_many_can_be_paged() {
    let rig = Rig::with(
        Dialect::V2,
        &[("ONCEBOT__COMMANDS__RESOURCES_SHOWN", "100")],
    )
    .await;
    rig.mp.add_releases((1..=77).map(|n| {
        SimRelease::movie(
            DUNE,
            &format!("PTSite{n}"),
            &format!("Dune 2021 Remux Pack {n:02} 2160p"),
            "沙丘",
        )
    }));
    let _bot = rig.start(None).await;
    rig.send(1, &format!("/download tmdb:{DUNE}")).await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let list = reply_of_kind(&rig, "result", 0).await;
    let mut conn = rig.store.conn().await;
    let kept: usize = conn
        .hget::<_, _, String>(rig.store.keys.releases(1), "count")
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert!(kept > 10 && kept < 80, "kept {kept}");
    let text = &list["text"];
    assert!(
        text.starts_with(&format!(
            "80 releases of Dune (2021); only the first {kept} can be paged"
        )),
        "{text}"
    );
    let pages = kept.div_ceil(5);
    let labels: Vec<String> = buttons(&list).into_iter().map(|b| b.0).collect();
    assert!(labels.contains(&format!("1/{pages}")), "{labels:?}");
    // The payload the bound counts: the releases and every page.
    let release_bytes: usize = {
        let fields: Vec<(String, String)> = conn.hgetall(rig.store.keys.releases(1)).await.unwrap();
        fields
            .iter()
            .filter(|(k, _)| k == "media" || k.starts_with('r'))
            .map(|(_, v)| v.len())
            .sum()
    };
    let page_bytes: usize = {
        let fields: Vec<(String, String)> = conn.hgetall(rig.store.keys.pages(1)).await.unwrap();
        fields
            .iter()
            .filter(|(k, _)| k.starts_with("text:") || k.starts_with("markup:"))
            .map(|(_, v)| v.len())
            .sum()
    };
    assert!(
        release_bytes + page_bytes <= 48 * 1024,
        "{release_bytes} + {page_bytes}"
    );
    let last = conn
        .hget::<_, _, String>(rig.store.keys.pages(1), format!("text:{pages}"))
        .await
        .unwrap();
    assert!(last.contains(&format!("\n{kept}. 【")), "{last}");
}

#[tokio::test]
async fn a_match_list_pages_and_a_subscribe_button_acts_on_the_match_it_showed() {
    let rig = Rig::new(Dialect::V2).await;
    for n in 1..=12u64 {
        rig.mp.add_media(SimMedia::movie(
            900_000 + n,
            &format!("Pager {n:02}"),
            "2020",
        ));
    }
    let _bot = rig.start(None).await;
    rig.send(1, "/search Pager").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let list = reply_of_kind(&rig, "result", 0).await;
    assert!(
        list["text"].starts_with("12 results for \"Pager\""),
        "{list:?}"
    );
    assert!(!list["text"].contains("\n6. "));
    let next = buttons(&list).into_iter().find(|b| b.0 == "▶").unwrap().1;
    let requests = rig.mp.requests();
    let mut update = callback_update(ALICE, ALICE, 91_002, &next);
    update["update_id"] = json!(2);
    rig.post(&update).await;
    let page2 = reply_of_kind(&rig, "page", 0).await;
    assert_eq!(page2["edit_message_id"], "91002");
    assert_eq!(rig.mp.requests(), requests, "no MoviePilot request");
    assert_eq!(rig.store.job_ids().await.len(), 1, "no job");
    let seven = line(&page2["text"], 7);
    let tmdb = 900_000
        + seven[3..].trim_start_matches("Pager ")[..2]
            .parse::<u64>()
            .unwrap();
    let subscribe = buttons(&page2)
        .into_iter()
        .find(|b| b.0.starts_with("7. Subscribe"))
        .unwrap();
    assert!(
        subscribe.0.contains(&seven[3..11]),
        "{subscribe:?} vs {seven}"
    );
    let mut update = callback_update(ALICE, ALICE, 91_002, &subscribe.1);
    update["update_id"] = json!(3);
    rig.post(&update).await;
    let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["command"], "subscribe");
    assert!(job["args"].starts_with(&format!("tmdb:{tmdb}")), "{job:?}");
}

/// A viewer's long list of matches comes with page buttons only (a Subscribe or Download button
/// would be refused them), and they work: reading is what a viewer may do.
#[tokio::test]
async fn a_viewer_pages_a_list_of_matches_without_action_buttons() {
    let users = format!("{ALICE}=alice:viewer");
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    for n in 1..=7u64 {
        rig.mp.add_media(SimMedia::movie(
            900_000 + n,
            &format!("Pager {n:02}"),
            "2020",
        ));
    }
    let _bot = rig.start(None).await;
    rig.send(1, "/search Pager").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let list = reply_of_kind(&rig, "result", 0).await;
    let labels: Vec<String> = buttons(&list).into_iter().map(|b| b.0).collect();
    assert_eq!(labels, ["1/2", "▶"]);
    let next = buttons(&list).into_iter().find(|b| b.0 == "▶").unwrap().1;
    let mut update = callback_update(ALICE, ALICE, 91_003, &next);
    update["update_id"] = json!(2);
    rig.post(&update).await;
    let page2 = reply_of_kind(&rig, "page", 0).await;
    assert!(page2["text"].contains("\n7. Pager"), "{page2:?}");
    let labels: Vec<String> = buttons(&page2).into_iter().map(|b| b.0).collect();
    assert_eq!(labels, ["◀", "2/2"]);
    assert_eq!(rig.store.job_ids().await.len(), 1, "no job");
}
