//! Find a release and download it once (issue 13): `/download`, the resource search and its
//! stored list, the `下载 k` buttons, and downloads verified in MoviePilot's history after a
//! crash or a lost answer, never sent again blindly. Ingress and a worker run as a real process
//! against the MoviePilot simulator (both dialects); crashes are SIGKILLs at crash points.

use std::collections::BTreeMap;
use std::time::Duration;

use oncebot::moviepilot::Dialect;
use oncebot_tools::sim::moviepilot::{Fault, SIM_MAGNET_HASH, SimRelease, routes};
use oncebot_tools::sim::telegram::callback_update;
use redis::AsyncCommands as _;
use serde_json::{Value, json};

use crate::support::app::run_oncebot;
use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{ALICE, buttons, eventually};

const DUNE: u64 = 438631;
/// The id Telegram gave the bot's message with the list (the dispatcher is not running here).
const LIST_MESSAGE: i64 = 91_001;
const SETTLE_SECS: &str = "2";

/// A rig whose downloads settle in two seconds instead of ninety.
async fn rig(dialect: Dialect) -> Rig {
    Rig::with(
        dialect,
        &[("ONCEBOT__MOVIEPILOT__DOWNLOAD_SETTLE_SECS", SETTLE_SECS)],
    )
    .await
}

fn tap(update_id: i64, data: &str) -> Value {
    let mut update = callback_update(ALICE, ALICE, LIST_MESSAGE, data);
    update["update_id"] = json!(update_id);
    update
}

fn button(reply: &BTreeMap<String, String>, text: &str) -> String {
    buttons(reply)
        .into_iter()
        .find(|(t, _)| t == text)
        .unwrap_or_else(|| panic!("no button {text:?} in {reply:?}"))
        .1
}

/// Job `job`'s reply that carries buttons.
async fn list_reply(rig: &Rig, job: u64) -> BTreeMap<String, String> {
    eventually(
        &format!("job {job}'s list"),
        RECOVERY_DEADLINE,
        || async move {
            rig.replies_for(job)
                .await
                .into_iter()
                .find(|r| r.contains_key("markup"))
        },
    )
    .await
}

/// `/download tmdb:<DUNE>` as update `update_id`, run to its list (job `job`).
async fn dune_list(rig: &Rig, update_id: i64, job: u64) -> BTreeMap<String, String> {
    rig.send(update_id, &format!("/download tmdb:{DUNE}")).await;
    rig.job_in(job, "succeeded", RECOVERY_DEADLINE).await;
    list_reply(rig, job).await
}

async fn callback_answer(rig: &Rig, update: &Value) -> String {
    let id = update["callback_query"]["id"].as_str().unwrap().to_string();
    let store = &rig.store;
    eventually("the tap's answer", Duration::from_secs(10), || {
        let id = id.clone();
        async move {
            store
                .stream(&store.keys.callbacks_stream())
                .await
                .into_iter()
                .find(|c| c["callback_query_id"] == id)
                .map(|c| c["text"].clone())
        }
    })
    .await
}

#[tokio::test]
async fn a_resource_search_lists_releases_with_buttons_and_its_repeat_searches_nothing() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = rig(dialect).await;
        let _bot = rig.start(None).await;
        let list = dune_list(&rig, 1, 1).await;
        assert_eq!(rig.mp.resource_searches(), 1);
        // The progress message came first, at once; the list replaces it (kind "result").
        let replies = rig.replies_for(1).await;
        assert_eq!(replies[0]["kind"], "progress", "{replies:?}");
        assert!(replies[0]["text"].starts_with("Searching the sites for releases"));
        assert_eq!(list["kind"], "result");
        let text = &list["text"];
        assert!(text.contains("1. 【PTSiteA】Dune 2021 2160p"), "{text}");
        assert!(text.contains("↑") && text.contains("GB") && text.contains("免费"));
        assert!(!text.contains("沙丘"), "subtitles are not shown: {text}");
        let labels: Vec<String> = buttons(&list).into_iter().map(|b| b.0).collect();
        assert_eq!(
            labels,
            ["Download 1", "Download 2", "Download 3", "⚡ Auto"],
            "{dialect:?}"
        );

        // The same search inside its window: no second search, and the answer carries the list
        // with the same working buttons.
        rig.send(2, &format!("/download tmdb:{DUNE}")).await;
        let again = eventually("the repeat's answer", Duration::from_secs(10), || async {
            rig.replies_for(1)
                .await
                .into_iter()
                .find(|r| r["kind"] == "duplicate")
        })
        .await;
        assert!(again["text"].contains("PTSiteB"), "{again:?}");
        assert_eq!(buttons(&again), buttons(&list));
        assert_eq!(rig.mp.resource_searches(), 1, "{dialect:?}");
        assert_eq!(rig.store.job_ids().await.len(), 1);
        let t = tap(3, &button(&again, "Download 2"));
        rig.post(&t).await;
        let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(job["mp_outcome"], "added");
        assert_eq!(rig.mp.download_adds().len(), 1);
    }
}

#[tokio::test]
async fn a_double_tap_downloads_once_and_the_other_buttons_keep_working() {
    let rig = rig(Dialect::V2).await;
    let _bot = rig.start(None).await;
    let list = dune_list(&rig, 1, 1).await;
    let first = button(&list, "Download 1");
    let (a, b) = (tap(2, &first), tap(3, &first));
    futures::future::join(rig.post(&a), rig.post(&b)).await;
    let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["command"], "grab");
    assert_eq!(job["mp_outcome"], "added");
    assert_eq!(rig.mp.calls(routes::DOWNLOAD_ADD), 1);
    let mut answers = vec![
        callback_answer(&rig, &a).await,
        callback_answer(&rig, &b).await,
    ];
    answers.sort();
    assert_eq!(answers[1], "Received: job #2");
    assert!(
        answers[0].starts_with("Already handled: job #2"),
        "{answers:?}"
    );

    // The body is MoviePilot's own result, sent back, with the site's downloader.
    let sent = &rig.mp.download_adds()[0];
    assert_eq!(sent["downloader"], "qb-movies");
    assert_eq!(
        sent["torrent_in"]["site_cookie"],
        "uid=1042; pass=sim-cookie-ptsitea"
    );
    assert_eq!(sent["media_in"]["tmdb_id"], DUNE);
    let reply = &rig.replies_for(2).await[0];
    assert_eq!(
        reply["text"],
        "Started downloading \"Dune 2021 2160p UHD BluRay x265-SIM\" (site: PTSiteA)."
    );

    // The list stays: the tapped button is marked used, the others still work.
    let edit = eventually(
        "the list's keyboard edited",
        Duration::from_secs(10),
        || async {
            rig.store
                .replies()
                .await
                .into_iter()
                .find(|r| r["kind"] == "page")
        },
    )
    .await;
    assert_eq!(edit["edit_message_id"], LIST_MESSAGE.to_string());
    let labels: Vec<String> = buttons(&edit).into_iter().map(|b| b.0).collect();
    assert_eq!(
        labels,
        ["✓ Download 1", "Download 2", "Download 3", "⚡ Auto"]
    );
    assert!(
        !rig.store
            .replies()
            .await
            .iter()
            .any(|r| r["kind"] == "clear_markup"),
        "the list's buttons are not removed"
    );
    let second = tap(4, &button(&list, "Download 2"));
    rig.post(&second).await;
    rig.job_in(3, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(rig.mp.calls(routes::DOWNLOAD_ADD), 2);
    assert_eq!(rig.mp.download_history().len(), 2);
    // A download without trouble costs two calls: the history (one page), then the add.
    assert_eq!(rig.mp.calls(routes::DOWNLOAD_HISTORY), 2);
}

#[tokio::test]
async fn the_same_release_from_two_lists_is_one_job() {
    // Lists live two seconds here, so a second search of the same media makes a second list.
    let rig = Rig::with(
        Dialect::V2,
        &[("ONCEBOT__COMMANDS__RESOURCES_WINDOW_SECS", "2")],
    )
    .await;
    let _bot = rig.start(None).await;
    let first = dune_list(&rig, 1, 1).await;
    let a = tap(2, &button(&first, "Download 3"));
    rig.post(&a).await;
    rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    let store = &rig.store;
    eventually(
        "the first list to expire",
        Duration::from_secs(10),
        || async move {
            let mut conn = store.conn().await;
            let exists: bool = conn.exists(store.keys.releases(1)).await.unwrap();
            (!exists).then_some(())
        },
    )
    .await;
    let second = dune_list(&rig, 3, 3).await;
    assert_eq!(
        rig.mp.resource_searches(),
        2,
        "a new search after the window"
    );
    assert_ne!(button(&second, "Download 3"), button(&first, "Download 3"));
    let b = tap(4, &button(&second, "Download 3"));
    rig.post(&b).await;
    assert!(
        callback_answer(&rig, &b)
            .await
            .starts_with("Already received as job #2"),
        "the same release is the same job, whichever list it came from"
    );
    assert_eq!(rig.mp.calls(routes::DOWNLOAD_ADD), 1);
    assert_eq!(rig.store.job_ids().await.len(), 3);
    assert_eq!(rig.store.job(2).await["duplicates"], "1");
}

/// SIGKILL after the add reached MoviePilot: the restarted worker finds the new history row and
/// does not send it again; the user is told once.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_crash_after_the_add_is_verified_from_the_history_not_sent_again() {
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = rig(dialect).await;
        // An older manual download of the same release is in the history already: it must not
        // count as this one.
        rig.mp.insert_history(
            "PTSiteA",
            "Dune 2021 2160p UHD BluRay x265-SIM",
            "沙丘 | 4K 原盘压制",
            "0000000000000000000000000000000000000000",
        );
        let mut bot = rig.start(Some("worker.after_call")).await;
        rig.send(1, &format!("/download tmdb:{DUNE}")).await;
        bot.wait_for_stderr(
            "crash point worker.after_call reached",
            Duration::from_secs(10),
        )
        .await;
        bot.sigkill().await;
        let mut bot = rig.start(Some("worker.after_call")).await;
        // The search is rerun once after its crash; then the list.
        bot.wait_for_stderr(
            "crash point worker.after_call reached",
            Duration::from_secs(20),
        )
        .await;
        bot.sigkill().await;
        // Two crashes of a resource search: it fails rather than asking the sites a third time.
        let mut bot = rig.start(None).await;
        let job = rig.job_in(1, "failed", RECOVERY_DEADLINE).await;
        assert!(job["error"].contains("stopped 2 times"), "{job:?}");
        assert_eq!(rig.mp.resource_searches(), 2, "{dialect:?}");

        let list = dune_list(&rig, 2, 2).await;
        bot.sigkill().await;
        let mut bot = rig.start(Some("worker.after_call")).await;
        rig.post(&tap(3, &button(&list, "Download 1"))).await;
        bot.wait_for_stderr(
            "crash point worker.after_call reached",
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(rig.mp.download_history().len(), 2, "MoviePilot added it");
        bot.sigkill().await;
        let _bot = rig.start(None).await;
        let job = rig.job_in(3, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(job["mp_outcome"], "verified_existing", "{dialect:?}");
        assert_eq!(job["recoveries"], "1");
        assert_eq!(
            job["grab_before"], "1",
            "the older row was noted before the add"
        );
        assert_eq!(
            rig.mp.calls(routes::DOWNLOAD_ADD),
            1,
            "{dialect:?}: not sent again"
        );
        // What it cost: the history before the add, the add, the history once to verify.
        assert_eq!(rig.mp.calls(routes::DOWNLOAD_HISTORY), 2);
        let sent = rig.mp.download_history()[1]["download_hash"].clone();
        assert_eq!(job["mp_download_hash"], sent.as_str().unwrap());
        let replies = rig.replies_for(3).await;
        assert_eq!(replies.len(), 1, "{replies:?}");
        assert!(replies[0]["text"].starts_with("Started downloading \"Dune 2021 2160p"));
    }
}

/// SIGKILL after the intent was noted and before the add: nothing reached MoviePilot, so after
/// the settle time the add is sent, once.
#[cfg(feature = "failpoints")]
#[tokio::test]
async fn a_crash_before_the_add_downloads_once_after_the_restart() {
    let rig = rig(Dialect::V2).await;
    let mut bot = rig.start(None).await;
    let list = dune_list(&rig, 1, 1).await;
    bot.sigkill().await;
    let mut bot = rig.start(Some("worker.before_download")).await;
    rig.post(&tap(2, &button(&list, "Download 2"))).await;
    bot.wait_for_stderr(
        "crash point worker.before_download reached",
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(rig.store.job(2).await["grab_sends"], "1");
    bot.sigkill().await;
    let _bot = rig.start(None).await;
    let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["mp_outcome"], "added");
    assert_eq!(job["grab_sends"], "2");
    assert_eq!(rig.mp.calls(routes::DOWNLOAD_ADD), 1);
    // The history before the first (never sent) add, twice to verify (at once and after the
    // settle time), before the second add; then the add.
    assert_eq!(rig.mp.calls(routes::DOWNLOAD_HISTORY), 4);
    assert_eq!(rig.mp.download_history().len(), 1);
    assert_eq!(rig.replies_for(2).await.len(), 1);
}

#[tokio::test]
async fn a_dropped_connection_after_the_commit_is_verified() {
    // Later v2 and v3 list the history newest first; v2.5.6 oldest first. Neither is relied on.
    for opts in ["v2.5.6", "v2.15.6", "v3"] {
        let dialect = if opts == "v3" {
            Dialect::V3
        } else {
            Dialect::V2
        };
        let rig = rig(dialect).await;
        if opts == "v2.15.6" {
            // Rig::with starts v2.5.6; only the history's order differs here, by version.
            rig.mp.insert_history("PTSiteX", "older", "", "1111");
        }
        let _bot = rig.start(None).await;
        let list = dune_list(&rig, 1, 1).await;
        rig.mp
            .fail_next(routes::DOWNLOAD_ADD, Fault::CommitThenDrop);
        rig.post(&tap(2, &button(&list, "Download 1"))).await;
        let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(job["mp_outcome"], "verified_existing", "{opts}");
        assert_eq!(rig.mp.calls(routes::DOWNLOAD_ADD), 1, "{opts}");
        let replies = rig.replies_for(2).await;
        let results: Vec<_> = replies.iter().filter(|r| r["kind"] == "result").collect();
        assert_eq!(results.len(), 1, "{replies:?}");
        assert!(results[0]["text"].starts_with("Started downloading"));
    }
}

#[tokio::test]
async fn a_magnet_is_downloaded_and_a_lost_answer_verified() {
    let rig = rig(Dialect::V3).await;
    let _bot = rig.start(None).await;
    let list = dune_list(&rig, 1, 1).await;
    rig.mp
        .fail_next(routes::DOWNLOAD_ADD, Fault::CommitThenDrop);
    rig.post(&tap(2, &button(&list, "Download 3"))).await;
    let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["grab_magnet"], SIM_MAGNET_HASH);
    assert_eq!(job["mp_download_hash"], SIM_MAGNET_HASH);
    assert_eq!(job["mp_outcome"], "verified_existing");
    // Sending the magnet again would have been refused by qBittorrent: it was not sent.
    assert_eq!(rig.mp.calls(routes::DOWNLOAD_ADD), 1);
    assert_eq!(rig.mp.torrents(), 1);
}

#[tokio::test]
async fn a_refused_add_fails_with_the_reason() {
    let rig = rig(Dialect::V2).await;
    let _bot = rig.start(None).await;
    let list = dune_list(&rig, 1, 1).await;
    rig.mp.fail_next(
        routes::DOWNLOAD_ADD,
        Fault::Status(
            200,
            r#"{"success":false,"message":"任务添加失败","data":{}}"#.into(),
        ),
    );
    rig.post(&tap(2, &button(&list, "Download 1"))).await;
    let job = rig.job_in(2, "failed", RECOVERY_DEADLINE).await;
    assert!(job["error"].contains("任务添加失败"), "{job:?}");
    assert_eq!(job["attempts"], "1", "not retried");
    let reply = &rig.replies_for(2).await[0];
    assert!(
        reply["text"].contains("MoviePilot did not add \"Dune 2021 2160p"),
        "{reply:?}"
    );
    assert!(
        !reply["text"].contains("任务添加失败"),
        "nothing MoviePilot said raw"
    );
}

#[tokio::test]
async fn a_search_that_times_out_fails_and_is_not_retried() {
    let rig = Rig::with(
        Dialect::V2,
        &[("ONCEBOT__MOVIEPILOT__RESOURCE_SEARCH_TIMEOUT_SECS", "1")],
    )
    .await;
    rig.mp.set_search_delay(Duration::from_millis(1500));
    let _bot = rig.start(None).await;
    rig.send(1, &format!("/download tmdb:{DUNE}")).await;
    let job = rig.job_in(1, "failed", RECOVERY_DEADLINE).await;
    assert_eq!(job["attempts"], "1");
    assert!(job["error"].contains("not answered"), "{job:?}");
    // Give a retry the time it would take, then check none came.
    rig.mp.set_search_delay(Duration::ZERO);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(rig.mp.calls(routes::RESOURCE_SEARCH), 1);
    let result = rig
        .replies_for(1)
        .await
        .into_iter()
        .find(|r| r["kind"] == "result")
        .unwrap();
    assert!(
        result["text"].contains("did not answer in time"),
        "{result:?}"
    );
    // A failed search does not absorb a repeat: the user may send it again.
    rig.send(2, &format!("/download tmdb:{DUNE}")).await;
    rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(rig.mp.calls(routes::RESOURCE_SEARCH), 2);
}

#[tokio::test]
async fn typed_download_commands_and_the_search_matches_offer_downloads() {
    let rig = Rig::with(Dialect::V2, &[("ONCEBOT__TELEGRAM__LOCALE", "zh")]).await;
    let _bot = rig.start(None).await;
    rig.send(1, "下载 Dune").await;
    let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["command"], "download");
    let matches = list_reply(&rig, 1).await;
    assert!(buttons(&matches)[0].0.starts_with("1. 下载 Dune"));
    rig.send(2, "/search Dune").await;
    rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    let found = list_reply(&rig, 2).await;
    let labels: Vec<String> = buttons(&found).into_iter().map(|b| b.0).collect();
    assert!(labels.contains(&"1. 下载".to_string()), "{labels:?}");
    // The download button starts a search and leaves the Subscribe buttons usable.
    rig.post(&tap(3, &button(&found, "1. 下载"))).await;
    let search = rig.job_in(3, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(search["command"], "releases");
    assert_eq!(search["args"], "tmdb:438631");
    let list = list_reply(&rig, 3).await;
    assert!(list["text"].contains("找到 3 个资源"), "{list:?}");
    assert_eq!(buttons(&list)[0].0, "下载 1");
    let subscribe = buttons(&found)
        .into_iter()
        .find(|b| b.0.contains("订阅"))
        .unwrap();
    rig.post(&tap(4, &subscribe.1)).await;
    let sub = rig.job_in(4, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(sub["command"], "subscribe");
    // `/releases` and `/grab` are not typed commands.
    rig.send(5, "/grab 3 1").await;
    let unknown = eventually(
        "the unknown-command reply",
        Duration::from_secs(10),
        || async {
            rig.store
                .replies()
                .await
                .into_iter()
                .find(|r| r["kind"] == "unknown_command")
        },
    )
    .await;
    assert!(unknown["text"].contains("/grab"));
    assert_eq!(rig.mp.download_adds().len(), 0);
}

#[tokio::test]
async fn the_site_cookie_stays_in_the_stored_list_only() {
    const MARKER: &str = "COOKIE-MARKER-5e1f9a";
    let rig = rig(Dialect::V2).await;
    rig.mp.add_release(SimRelease {
        site_cookie: format!("uid=1; pass={MARKER}"),
        ..SimRelease::movie(DUNE, "PTSiteM", "Dune 2021 REMUX", "marker release")
    });
    let bot = rig.start(None).await;
    let list = dune_list(&rig, 1, 1).await;
    let label = buttons(&list)
        .into_iter()
        .rfind(|b| b.0.starts_with("Download "))
        .unwrap()
        .0;
    rig.post(&tap(2, &button(&list, &label))).await;
    let job = rig.job_in(2, "succeeded", RECOVERY_DEADLINE).await;
    assert_eq!(job["grab_site"], "PTSiteM");
    let sent = rig.mp.download_adds();
    assert!(
        sent[0]["torrent_in"]["site_cookie"]
            .as_str()
            .unwrap()
            .contains(MARKER)
    );

    // In Redis only in the list, which expires with its buttons.
    let store = &rig.store;
    let mut conn = store.conn().await;
    for key in store.all_keys().await {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        let dump = match kind.as_str() {
            "hash" => format!("{:?}", conn.hgetall::<_, Vec<String>>(&key).await.unwrap()),
            "string" => conn.get::<_, String>(&key).await.unwrap(),
            "list" => format!(
                "{:?}",
                conn.lrange::<_, Vec<String>>(&key, 0, -1).await.unwrap()
            ),
            "set" => format!("{:?}", conn.smembers::<_, Vec<String>>(&key).await.unwrap()),
            "zset" => format!(
                "{:?}",
                conn.zrange::<_, Vec<String>>(&key, 0, -1).await.unwrap()
            ),
            _ => format!("{:?}", store.stream(&key).await),
        };
        if key == store.keys.releases(1) {
            assert!(dump.contains(MARKER));
            let ttl: i64 = conn.ttl(&key).await.unwrap();
            assert!(ttl > 0 && ttl <= 600, "{ttl}");
        } else {
            assert!(!dump.contains(MARKER), "{key} holds the cookie");
        }
    }
    for r in store.replies().await {
        assert!(!format!("{r:?}").contains(MARKER));
    }
    assert!(
        !bot.stderr().contains(MARKER),
        "a log line holds the cookie"
    );
    let url = rig.redis.url();
    for args in [
        &["jobs", "show", "1", "--json"][..],
        &["jobs", "show", "2", "--json"][..],
        &["jobs", "show", "2"][..],
        &["jobs", "list", "--json"][..],
    ] {
        let out = run_oncebot(args, &[("ONCEBOT__REDIS__URL", &url)]).await;
        assert!(out.status.success(), "{out:?}");
        assert!(!out.stdout.contains(MARKER) && !out.stderr.contains(MARKER));
    }
}

/// MEMORY USAGE of a stored list: its releases' key and its pages' key.
async fn memory_usage(rig: &Rig, job: u64) -> i64 {
    let store = &rig.store;
    let mut conn = store.conn().await;
    let mut total = 0;
    for key in [store.keys.releases(job), store.keys.pages(job)] {
        let bytes: i64 = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(key)
            .arg("SAMPLES")
            .arg(0)
            .query_async(&mut conn)
            .await
            .unwrap();
        total += bytes;
    }
    total
}

/// The bound on a stored list, measured: MEMORY USAGE of the catalogue's list, paged.
#[tokio::test]
async fn a_stored_list_stays_under_its_bound_and_expires_with_its_buttons() {
    let rig = rig(Dialect::V2).await;
    // Twelve more releases, with long cookies and titles: three pages.
    for n in 0..12 {
        rig.mp.add_release(SimRelease {
            site_cookie: format!("c_secure_uid=9{n}; c_secure_pass={}", "x".repeat(300)),
            ..SimRelease::movie(
                DUNE,
                &format!("PTSite{n}"),
                &format!(
                    "Dune.2021.Extended.Cut.2160p.UHD.BluRay.REMUX.HDR.DV.TrueHD.Atmos.7.1-GRP{n}"
                ),
                "沙丘 | 加长版 | 4K UHD 原盘 REMUX | 杜比视界 | 国英双语 | 简繁英字幕",
            )
        });
    }
    let _bot = rig.start(None).await;
    let list = dune_list(&rig, 1, 1).await;
    let labels: Vec<String> = buttons(&list).into_iter().map(|b| b.0).collect();
    assert_eq!(
        labels.len(),
        8,
        "five releases, ⚡ Auto and the page buttons: {labels:?}"
    );
    assert!(labels.contains(&"1/3".to_string()), "{labels:?}");
    let store = &rig.store;
    let mut conn = store.conn().await;
    let count: String = conn.hget(store.keys.releases(1), "count").await.unwrap();
    assert_eq!(count, "15", "every release kept");
    // Five releases with long titles still fit a photo's caption (1024 characters).
    for k in 1..=3 {
        let text: String = conn
            .hget(store.keys.pages(1), format!("text:{k}"))
            .await
            .unwrap();
        println!("page {k}: {} characters", text.chars().count());
        assert!(text.chars().count() <= 1024, "{text}");
    }
    let bytes = memory_usage(&rig, 1).await;
    println!("MEMORY USAGE of a stored list of 15 releases: {bytes} bytes");
    assert!(bytes <= 48 * 1024, "{bytes} bytes");
    let media: String = conn.hget(store.keys.releases(1), "media").await.unwrap();
    let r1: String = conn.hget(store.keys.releases(1), "r1").await.unwrap();
    assert!(
        !r1.contains("media_info") && media.contains("Dune"),
        "media_info stored once"
    );
    let token = buttons(&list)[0].1.trim_start_matches("t:").to_string();
    let token_ttl: i64 = conn.ttl(store.keys.token(&token)).await.unwrap();
    for key in [store.keys.releases(1), store.keys.pages(1)] {
        let ttl: i64 = conn.ttl(&key).await.unwrap();
        assert!((ttl - token_ttl).abs() <= 1, "{key}: {ttl} vs {token_ttl}");
    }
}

/// What the 48 KiB bound counts, measured at the bound (issue 25, item 14): the stored values of
/// `media`, `r1`..`rN` and every page's `text:<k>` and `markup:<k>` (the payload), not the keys
/// as `MEMORY USAGE` reports them, which adds field names, the hashes' entries and the
/// allocator's rounding.
#[tokio::test]
async fn at_the_bound_the_payload_is_48_kib_and_memory_usage_adds_at_most_a_quarter() {
    let rig = rig(Dialect::V2).await;
    // Releases with 2 KB cookies: the list is cut by the byte bound, not by resources_shown.
    for n in 0..30 {
        rig.mp.add_release(SimRelease {
            site_cookie: format!("c_secure_uid=9{n}; c_secure_pass={}", "x".repeat(2000)),
            ..SimRelease::movie(
                DUNE,
                &format!("PTSite{n}"),
                &format!("Dune.2021.2160p.UHD.BluRay.REMUX.HDR.DV.TrueHD.Atmos.7.1-GRP{n}"),
                "沙丘 | 4K UHD 原盘 REMUX | 杜比视界 | 国英双语",
            )
        });
    }
    let _bot = rig.start(None).await;
    dune_list(&rig, 1, 1).await;
    let store = &rig.store;
    let mut conn = store.conn().await;
    let releases: BTreeMap<String, String> = conn.hgetall(store.keys.releases(1)).await.unwrap();
    let kept: usize = releases["count"].parse().unwrap();
    assert!((1..30).contains(&kept), "cut by bytes: {kept} kept");
    let pages: BTreeMap<String, String> = conn.hgetall(store.keys.pages(1)).await.unwrap();
    let payload: usize = releases
        .iter()
        .filter(|(k, _)| {
            k.as_str() == "media" || (k.starts_with('r') && k[1..].parse::<u32>().is_ok())
        })
        .chain(
            pages
                .iter()
                .filter(|(k, _)| k.starts_with("text:") || k.starts_with("markup:")),
        )
        .map(|(_, v)| v.len())
        .sum();
    let usage = memory_usage(&rig, 1).await;
    println!(
        "a list cut at the bound: {kept} releases, payload {payload} bytes, MEMORY USAGE {usage} bytes"
    );
    assert!(payload <= 48 * 1024, "payload {payload}");
    // The next release would not have fitted: the list is at the bound, not far below it.
    assert!(payload > 48 * 1024 - 3000, "payload {payload}");
    assert!(usage as usize <= 60 * 1024, "MEMORY USAGE {usage}");
}
