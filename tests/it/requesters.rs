//! Issue 44, item 1: the `requester` role (between viewer and user) through a real oncebot, the
//! fake MoviePilot's user table, the fake Bot API and a private Redis: MoviePilot's mapping
//! gives it with `household.media_requests`, the access card offers it only then, and a
//! requester runs the resource search that a viewer is refused.

use std::time::Duration;

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::moviepilot::migrated_permissions;
use redis::AsyncCommands as _;
use serde_json::{Value, json};

use crate::grants::{button, cli, listed, message_in, tap};
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, BOB, MALLORY, button_labels, eventually, private_text};

/// A movie the simulator's sites list releases of, not in its library.
const DUNE: u64 = 438631;

/// How long a change in MoviePilot may take to reach `oncebot users` and the ingress: a refresh
/// (1 s, its turn asked every 250 ms) plus a follow (2 s), with room for a loaded machine.
const REACHES_INGRESS: Duration = Duration::from_secs(15);

/// A rig where MoviePilot maps Alice to `kid`, whose MoviePilot permissions turn `subscribe`
/// off, refreshed every second, with `household.media_requests` as `media_requests` says.
async fn kid_rig(media_requests: bool) -> Rig {
    let on = media_requests.to_string();
    let rig = Rig::with(
        Dialect::V2,
        &[
            ("ONCEBOT__MOVIEPILOT__USERS_REFRESH_SECS", "1"),
            ("ONCEBOT__HOUSEHOLD__MEDIA_REQUESTS", &on),
        ],
    )
    .await;
    rig.mp.add_user("kid", false, Some(&ALICE.to_string()));
    let mut kid = migrated_permissions();
    kid["subscribe"] = json!(false);
    rig.mp.set_user_permissions("kid", kid);
    rig
}

/// Waits until `oncebot users --json` lists Alice as `role` from MoviePilot, and the serving
/// process's ingress maps her by MoviePilot's mapping (its gauge: the follower applied the
/// same read that gives the role).
async fn alice_becomes(rig: &Rig, role: &str) {
    eventually(
        &format!("oncebot users to list Alice as {role}"),
        REACHES_INGRESS,
        || async {
            listed(rig)
                .await
                .contains(&(ALICE, role.to_string(), "moviepilot".to_string()))
                .then_some(())
        },
    )
    .await;
    eventually(
        "the ingress to follow MoviePilot's mapping",
        REACHES_INGRESS,
        || async {
            let mapped = rig
                .metric("oncebot_users_mapped{source=\"moviepilot\"}")
                .await;
            (mapped.as_deref() == Some("1")).then_some(())
        },
    )
    .await;
}

/// With `household.media_requests`, a MoviePilot member whose `subscribe` is off is a
/// requester (`oncebot users --json`, `/whoami`), stored so that 0.2.0 reads a viewer, and
/// runs the resource search; without it the same member is a viewer, refused it with no job and
/// no search at MoviePilot.
#[tokio::test]
async fn subscribe_off_maps_a_requester_with_media_requests_who_may_search_releases() {
    {
        let rig = kid_rig(true).await;
        let _bot = rig.start_pipeline().await;
        alice_becomes(&rig, "requester").await;
        // Stored as a viewer where 0.2.0 reads, and as a requester beside it.
        let mut conn = rig.store.conn().await;
        let key = rig.store.keys.users_moviepilot();
        let id_field: Option<String> = conn.hget(&key, ALICE.to_string()).await.unwrap();
        let own_field: Option<String> =
            conn.hget(&key, format!("requester:{ALICE}")).await.unwrap();
        assert_eq!(id_field.as_deref(), Some("kid:viewer"));
        assert_eq!(own_field.as_deref(), Some("kid:requester"));

        rig.send(1, "/whoami").await;
        message_in(&rig, ALICE, "Role: requester").await;
        rig.send(2, &format!("/download tmdb:{DUNE}")).await;
        let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(
            job.get("role").map(String::as_str),
            Some("requester"),
            "{job:?}"
        );
        assert_eq!(
            job.get("requester").map(String::as_str),
            Some("kid"),
            "{job:?}"
        );
        assert_eq!(rig.mp.resource_searches(), 1);
    }

    let rig = kid_rig(false).await;
    let _bot = rig.start_pipeline().await;
    alice_becomes(&rig, "viewer").await;
    rig.send(1, "/whoami").await;
    message_in(&rig, ALICE, "Role: viewer").await;
    rig.send(2, &format!("/download tmdb:{DUNE}")).await;
    message_in(&rig, ALICE, "You can only look").await;
    // /whoami's job alone: the refusal made none, and no site was searched.
    assert_eq!(rig.store.job_ids().await.len(), 1);
    assert_eq!(rig.mp.resource_searches(), 0);
}

/// `telegram.users` names its admins; strangers ask for access.
async fn household(media_requests: bool) -> Rig {
    let on = media_requests.to_string();
    Rig::with(
        Dialect::V2,
        &[
            ("ONCEBOT__TELEGRAM__USERS", "1001=:admin"),
            ("ONCEBOT__HOUSEHOLD__ACCESS_REQUESTS", "true"),
            ("ONCEBOT__HOUSEHOLD__MEDIA_REQUESTS", &on),
        ],
    )
    .await
}

/// Mallory writes and taps Ask; Alice's card, once it came.
async fn mallory_asks(rig: &Rig) -> oncebot_tools::sim::telegram::StoredMessage {
    rig.post(&private_text(1, MALLORY, "/start")).await;
    let offer = message_in(rig, MALLORY, "Your Telegram id: 6666").await;
    rig.post(&tap(2, MALLORY, &offer, &button(&offer, "Ask for access")))
        .await;
    message_in(rig, ALICE, "Telegram id: 6666").await
}

/// The access card offers Allow as requester only with `household.media_requests`; its tap
/// grants `requester` (the person told so, `oncebot users` listing the grant), and `oncebot
/// users grant <id> requester` gives the same role from the CLI.
#[tokio::test]
async fn the_access_card_offers_requester_only_with_media_requests_and_grants_it() {
    {
        let rig = household(false).await;
        let _bot = rig.start_pipeline().await;
        let card = mallory_asks(&rig).await;
        assert_eq!(
            button_labels(&card),
            ["Allow: viewer", "Allow: user", "Allow: admin", "Decline"]
        );
    }

    let rig = household(true).await;
    let _bot = rig.start_pipeline().await;
    let card = mallory_asks(&rig).await;
    assert_eq!(
        button_labels(&card),
        [
            "Allow: viewer",
            "Allow: requester",
            "Allow: user",
            "Allow: admin",
            "Decline"
        ]
    );
    rig.post(&tap(3, ALICE, &card, &button(&card, "Allow: requester")))
        .await;
    message_in(&rig, MALLORY, "(role: requester)").await;
    let granted: Option<String> = rig
        .store
        .conn()
        .await
        .hget(rig.store.keys.users_granted(), MALLORY.to_string())
        .await
        .unwrap();
    assert!(
        granted
            .as_deref()
            .unwrap_or_default()
            .starts_with("requester:1001:"),
        "{granted:?}"
    );
    assert!(
        listed(&rig)
            .await
            .contains(&(MALLORY, "requester".into(), "granted".into()))
    );

    // The CLI grants the same role, and says so in its JSON.
    let out: Value = serde_json::from_str(
        &cli(
            &rig,
            &["users", "grant", &BOB.to_string(), "requester", "--json"],
        )
        .await,
    )
    .unwrap();
    assert_eq!(out["outcome"], "granted", "{out}");
    assert_eq!(out["now"]["role"], "requester", "{out}");
    assert_eq!(out["now"]["grant"]["role"], "requester", "{out}");
}
