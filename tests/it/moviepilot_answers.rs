//! What MoviePilot answers, read safely (issue 25): bodies through `moviepilot.max_body_bytes`
//! (a huge resource search cut, the worker's memory bounded), `success` read before `data`
//! (an empty search is a result, other refusals are permanent with MoviePilot's message, in
//! each version's real bodies), the locale asked for, v3's 403 and two-factor login, v3.0.0's
//! GET search trigger, control characters kept out of Telegram, one login at a time for the
//! whole deployment while MoviePilot refuses it, and `/downloading` telling torrents apart.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use oncebot::moviepilot::{Dialect, MediaKind, MoviePilot, MoviePilotSettings, MpError};
use oncebot_tools::sim::moviepilot::{
    Fault, MoviePilotSim, SimDownload, SimMedia, SimOptions, SimRelease, routes,
};
use serde_json::Value;

use crate::support::rig::{RECOVERY_DEADLINE, Rig};
use crate::support::{
    ALICE, BOB, BOT_USERNAME, GROUP, eventually, group_text, login_settings, private_text,
};

const DUNE: u64 = 438631;
/// In the simulator's catalogue, without releases.
const DUNE_TWO: u64 = 693134;
/// Added to the catalogue by the tests that give it ten thousand releases.
const FIGHT_CLUB: u64 = 550;

fn settings(sim: &MoviePilotSim) -> MoviePilotSettings {
    MoviePilotSettings {
        resource_search_timeout_secs: 10,
        ..login_settings(sim)
    }
}

async fn connected(opts: SimOptions) -> (MoviePilotSim, MoviePilot) {
    let sim = MoviePilotSim::start(opts).await;
    let mp = MoviePilot::connect(&settings(&sim)).await.unwrap();
    (sim, mp)
}

/// `n` releases of `tmdb_id` on one site, each with a long subtitle (as real sites write them).
fn many_releases(tmdb_id: u64, n: usize) -> Vec<SimRelease> {
    (0..n)
        .map(|i| {
            let title = format!("Release 2160p UHD BluRay x265 {i:05}-SIM");
            SimRelease {
                enclosure: format!("https://ptsitez.example/download.php?id={i}"),
                ..SimRelease::movie(tmdb_id, "PTSiteZ", &title, &"4K 原盘 中英字幕 ".repeat(40))
            }
        })
        .collect()
}

// ----- success first: the empty search and the other refusals, as each version answers -----

#[tokio::test]
async fn an_empty_resource_search_is_an_empty_list_in_each_versions_real_body() {
    for opts in [SimOptions::v2_5_6(), SimOptions::v3()] {
        let dialect = opts.dialect;
        let (sim, mp) = connected(opts).await;
        // v2.5.6 answers {"success":false,"message":"未搜索到任何资源","data":{}}, v3 data null.
        let found = mp
            .search_releases(DUNE_TWO, MediaKind::Movie, None, 8)
            .await
            .unwrap_or_else(|e| panic!("{dialect:?}: {e}"));
        assert!(found.releases.is_empty() && found.total == 0, "{dialect:?}");
        assert_eq!(sim.resource_searches(), 1);
    }
}

#[tokio::test]
async fn other_refusals_of_the_resource_search_are_permanent_with_moviepilots_message() {
    // v2.5.6: a media TMDB does not know.
    let (_sim, mp) = connected(SimOptions::v2_5_6()).await;
    let err = mp
        .search_releases(999_999, MediaKind::Movie, None, 8)
        .await
        .unwrap_err();
    assert!(matches!(err, MpError::Permanent(_)), "{err:?}");
    assert!(err.message().contains("未识别到TMDB媒体信息"), "{err}");
    assert!(!err.message().contains("ONCEBOT__MOVIEPILOT__URL"), "{err}");

    // v3's refusal of a malformed id (search.py @e5e25585), as the real server sends it.
    let (sim, mp) = connected(SimOptions::v3()).await;
    sim.fail_next(
        routes::RESOURCE_SEARCH,
        Fault::Status(
            200,
            r#"{"success":false,"message":"媒体ID格式无效","data":null}"#.into(),
        ),
    );
    let err = mp
        .search_releases(DUNE, MediaKind::Movie, None, 8)
        .await
        .unwrap_err();
    assert!(matches!(err, MpError::Permanent(_)), "{err:?}");
    assert!(err.message().contains("媒体ID格式无效"), "{err}");
    assert!(!err.message().contains("ONCEBOT__MOVIEPILOT__URL"), "{err}");
}

#[tokio::test]
async fn an_action_refused_with_any_data_is_a_refusal_not_an_odd_body() {
    // v2.5.6's schemas.Response defaults data to {}: a refused create is read by its success.
    let (sim, mp) = connected(SimOptions::v2_5_6()).await;
    sim.fail_next(
        routes::SUBSCRIBE_CREATE,
        Fault::Status(
            200,
            r#"{"success":false,"message":"未识别到媒体信息","data":{}}"#.into(),
        ),
    );
    let err = mp
        .create_subscription(&oncebot::moviepilot::NewSubscription {
            name: "Dune".into(),
            year: Some("2021".into()),
            kind: MediaKind::Movie,
            tmdb_id: DUNE,
            season: None,
            best: false,
        })
        .await
        .unwrap_err();
    assert!(matches!(err, MpError::Permanent(_)), "{err:?}");
    assert!(err.message().contains("未识别到媒体信息"), "{err}");
}

/// M2: a v3 run in English answers requests without a locale in English; oncebot asks for
/// zh-CN, so "nothing found" is still recognised.
#[tokio::test]
async fn a_v3_whose_default_locale_is_english_still_answers_oncebot_in_chinese() {
    let opts = SimOptions {
        default_locale: "en-US".into(),
        ..SimOptions::v3()
    };
    let (sim, mp) = connected(opts).await;
    // The simulator translates: a request without a locale reads English.
    let url = format!(
        "{}/api/v1/search/media/{DUNE_TWO}?media_source=themoviedb&mtype=movie&apikey={}",
        sim.url(),
        sim.options().api_token
    );
    let plain: Value = reqwest::Client::new()
        .get(&url)
        .header("x-api-key", &sim.options().api_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(plain["message"], "No resources found", "{plain}");
    let found = mp
        .search_releases(DUNE_TWO, MediaKind::Movie, None, 8)
        .await
        .unwrap();
    assert!(found.releases.is_empty());
}

// ----- the byte limit -----

#[tokio::test]
async fn a_release_list_over_the_limit_is_cut_and_any_other_answer_fails_naming_the_setting() {
    let sim = MoviePilotSim::start(SimOptions::v3()).await;
    let limit = 256 * 1024;
    let mp = MoviePilot::connect(&MoviePilotSettings {
        max_body_bytes: limit,
        ..settings(&sim)
    })
    .await
    .unwrap();
    sim.add_releases(many_releases(DUNE, 500));
    let found = mp
        .search_releases(DUNE, MediaKind::Movie, None, 8)
        .await
        .unwrap();
    assert!(found.cut);
    assert_eq!(found.releases.len(), 8);
    assert!(found.total > 8 && found.total < 500, "{}", found.total);
    assert_eq!(found.media_info.0["title"], "Dune");

    for i in 0..2000 {
        sim.add_download(SimDownload {
            hash: format!("{i:040x}"),
            title: format!("The.Expanse.S01E{i:04}.1080p.WEB-DL-SIM"),
            name: "The Expanse".into(),
            year: "2015".into(),
            season_episode: format!("S01 E{i}"),
            progress: 1.0,
            state: "downloading".into(),
        });
    }
    let err = mp.downloading().await.unwrap_err();
    assert!(matches!(err, MpError::Permanent(_)), "{err:?}");
    assert!(
        err.message().contains("moviepilot.max_body_bytes")
            && err
                .message()
                .contains("ONCEBOT__MOVIEPILOT__MAX_BODY_BYTES"),
        "{err}"
    );
}

/// VmHWM (the peak resident set) of a process, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {status}"))
}

// Two threads: the simulator builds its 45 MB answer synchronously, and the test's own Redis
// connection must not starve meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_45_mb_resource_search_keeps_the_worker_small_and_the_user_gets_a_cut_list() {
    let rig = Rig::new(Dialect::V2).await;
    let bot = rig.start(None).await;
    // Warm: one ordinary search and list.
    rig.send(1, &format!("/download tmdb:{DUNE}")).await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let before = peak_rss_kib(bot.pid());

    rig.mp
        .add_media(SimMedia::movie(FIGHT_CLUB, "Fight Club", "1999"));
    rig.mp.add_releases(many_releases(FIGHT_CLUB, 10_000));
    // How large the answer is (the simulator's own request, not oncebot's).
    let token = {
        let form = [
            ("username", rig.mp.options().username.as_str()),
            ("password", rig.mp.options().password.as_str()),
        ];
        let login: Value = reqwest::Client::new()
            .post(format!("{}/api/v1/login/access-token", rig.mp.url()))
            .form(&form)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        login["access_token"].as_str().unwrap().to_string()
    };
    let size = reqwest::Client::new()
        .get(format!(
            "{}/api/v1/search/media/tmdb:{FIGHT_CLUB}?mtype=电影",
            rig.mp.url()
        ))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .len();
    assert!(size > 44_000_000, "the answer is {size} bytes");

    rig.send(2, &format!("/download tmdb:{FIGHT_CLUB}")).await;
    let job = rig.job_in(2, "succeeded", Duration::from_secs(60)).await;
    let after = peak_rss_kib(bot.pid());
    let grew_mib = after.saturating_sub(before) / 1024;
    eprintln!(
        "VmHWM before {before} KiB, after {after} KiB (+{grew_mib} MiB) for a {size}-byte answer"
    );
    assert!(
        grew_mib < 40,
        "a {size}-byte answer grew the peak RSS by {grew_mib} MiB"
    );
    assert!(job["result"].contains("list cut"), "{job:?}");
    let list = rig
        .replies_for(2)
        .await
        .into_iter()
        .find(|r| r.contains_key("markup"))
        .unwrap();
    let text = &list["text"];
    // The list keeps what commands.resources_shown and its memory bound allow, and pages it.
    let kept = job["releases_shown"].clone();
    assert!(
        text.contains("has more releases than oncebot reads from one answer")
            && text.contains(&format!("were read, the first {kept} can be paged")),
        "{text}"
    );
    assert!(text.contains("5. 【") && !text.contains("6. 【"), "{text}");

    // Another route over the limit: a permanent failure whose error names the setting.
    for i in 0..25_000 {
        rig.mp.add_download(SimDownload {
            hash: format!("{i:040x}"),
            title: format!("The.Expanse.S01E{i:05}.1080p.WEB-DL-SIM"),
            name: "The Expanse".into(),
            year: "2015".into(),
            season_episode: format!("S01 E{i}"),
            progress: 1.0,
            state: "downloading".into(),
        });
    }
    rig.send(3, "/downloading").await;
    let failed = rig.job_in(3, "failed", RECOVERY_DEADLINE).await;
    assert_eq!(failed["mp_error_kind"], "permanent", "{failed:?}");
    assert!(
        failed["error"].contains("ONCEBOT__MOVIEPILOT__MAX_BODY_BYTES"),
        "{failed:?}"
    );
}

// ----- the empty search through the worker: a result, and its repeat absorbed -----

#[tokio::test]
async fn an_empty_resource_search_succeeds_says_nothing_was_found_and_its_repeat_searches_nothing()
{
    for dialect in [Dialect::V2, Dialect::V3] {
        let rig = Rig::new(dialect).await;
        let _bot = rig.start(None).await;
        rig.send(1, &format!("/download tmdb:{DUNE_TWO}")).await;
        let job = rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
        assert_eq!(job["result"], "0 releases", "{job:?}");
        let last = rig.replies_for(1).await.pop().unwrap();
        assert!(
            last["text"].starts_with("No releases found for"),
            "{dialect:?}: {last:?}"
        );
        // The same search inside its window: answered from the job, no site asked again.
        rig.send(2, &format!("/download tmdb:{DUNE_TWO}")).await;
        eventually("the repeat's answer", Duration::from_secs(10), || async {
            rig.replies_for(1)
                .await
                .into_iter()
                .find(|r| r["kind"] == "duplicate")
        })
        .await;
        assert_eq!(rig.mp.resource_searches(), 1, "{dialect:?}");
    }
}

// ----- control characters -----

#[tokio::test]
async fn a_title_with_control_and_bidi_characters_reaches_telegram_clean() {
    let rig = Rig::new(Dialect::V2).await;
    let _bot = rig.start_pipeline().await;
    let evil =
        "Dune\u{0} 2021\u{1b}[2J 1080p \u{202e}vkm.exe\u{2028}FAKE\u{200b} LINE\u{2060}\u{feff}";
    rig.mp
        .add_release(SimRelease::movie(DUNE, "Site\u{202e}X", evil, ""));
    rig.send(1, &format!("/download tmdb:{DUNE}")).await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    // The list replaces the progress message (editMessageText); every text oncebot sent.
    let texts = |o: &oncebot_tools::sim::telegram::Observed<'_>| -> Vec<String> {
        o.calls()
            .iter()
            .filter(|c| matches!(c.method.as_str(), "sendMessage" | "editMessageText"))
            .filter_map(|c| c.params["text"].as_str().map(str::to_string))
            .collect()
    };
    rig.tg
        .wait_for(RECOVERY_DEADLINE, |o| {
            texts(o).iter().any(|t| t.contains("vkm.exe"))
        })
        .await
        .unwrap();
    let sent = rig.tg.observe(texts);
    let list = sent.iter().find(|t| t.contains("vkm.exe")).unwrap();
    assert!(
        list.contains("【SiteX】Dune 2021[2J 1080p vkm.exe FAKE LINE"),
        "{list:?}"
    );
    for text in &sent {
        let bad: Vec<char> = text
            .chars()
            .filter(|c| {
                (c.is_control() && *c != '\n')
                    || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
                    || matches!(c, '\u{200b}' | '\u{2060}' | '\u{feff}')
            })
            .collect();
        assert!(bad.is_empty(), "{bad:?} in {text:?}");
    }
}

/// What a reply repeats is clean, in a text oncebot did not write.
fn assert_clean(text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|c| {
            (c.is_control() && *c != '\n')
                || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
                || matches!(c, '\u{200b}' | '\u{2060}' | '\u{feff}')
        })
        .collect();
    assert!(bad.is_empty(), "{bad:?} in {text:?}");
}

/// Issue 41, item 4: the user's own text, repeated in a reply ("Nothing found for …", "I don't
/// know /…"), in a private chat and in a group, is cleaned as MoviePilot's is: no C0 control, bidi
/// control or invisible character reaches Telegram; ZWJ stays (an emoji sequence).
#[tokio::test]
async fn the_users_own_text_is_repeated_clean_in_private_and_in_groups() {
    let rig = Rig::new(Dialect::V2).await;
    let _bot = rig.start_pipeline().await;
    let family = "👨\u{200d}👩\u{200d}👧";
    let search = format!("/search Zz\u{1b}[2J\u{202e}gpj.exe\u{200b}q\u{2060}w\u{feff} {family}");
    rig.send(1, &search).await;
    let unknown = "/fo\u{7}o\u{2067}\u{200b}bar";
    rig.send(2, unknown).await;
    rig.post(&group_text(3, ALICE, &format!("{unknown}@{BOT_USERNAME}")))
        .await;
    let want = [
        (
            ALICE,
            format!("Nothing found for \"Zz[2Jgpj.exeqw {family}\"."),
        ),
        (ALICE, "I don't know /foobar.".to_string()),
        (GROUP, "I don't know /foobar.".to_string()),
    ];
    for (chat, start) in &want {
        eventually(&format!("{start:?} in {chat}"), RECOVERY_DEADLINE, || {
            let sent = rig.tg.sent();
            async move {
                sent.iter()
                    .any(|m| m.chat_id == *chat && m.text.starts_with(start.as_str()))
                    .then_some(())
            }
        })
        .await;
    }
    for m in rig.tg.sent() {
        assert_clean(&m.text);
    }
}

// ----- /downloading -----

#[tokio::test]
async fn three_torrents_of_one_series_are_three_different_lines() {
    let rig = Rig::new(Dialect::V2).await;
    let _bot = rig.start(None).await;
    for (i, title) in [
        "Oncebot.Test.S01E01.1080p.WEB-DL-SIM",
        "Oncebot.Test.S01E02.1080p.WEB-DL-SIM",
        "Oncebot.Test.S01.2160p.BluRay-OTHER",
    ]
    .into_iter()
    .enumerate()
    {
        rig.mp.add_download(SimDownload {
            hash: format!("{i:040x}"),
            title: title.into(),
            name: "Oncebot Test".into(),
            year: "".into(),
            season_episode: "S01".into(),
            progress: 0.0,
            state: "downloading".into(),
        });
    }
    rig.send(1, "/downloading").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let text = rig.replies_for(1).await.pop().unwrap()["text"].clone();
    assert_eq!(
        text,
        "Downloading:\n\
         Oncebot Test S01 · 0%\n   Oncebot.Test.S01E01.1080p.WEB-DL-SIM\n\
         Oncebot Test S01 · 0%\n   Oncebot.Test.S01E02.1080p.WEB-DL-SIM\n\
         Oncebot Test S01 · 0%\n   Oncebot.Test.S01.2160p.BluRay-OTHER"
    );
}

// ----- v3's answers: 403, two-factor login, the v3.0.0 search trigger -----

#[tokio::test]
async fn a_v3_403_is_not_allowed_not_a_refused_credential() {
    let (sim, mp) = connected(SimOptions::v3()).await;
    let logins = sim.logins();
    // What v3 answers a user deleting another's subscription (subscribe.py @ebddeee2 L856).
    sim.fail_next(
        routes::SUBSCRIBE_DELETE,
        Fault::Status(
            403,
            r#"{"success":false,"message":"无权删除该订阅","data":null}"#.into(),
        ),
    );
    let err = mp.delete_subscription(1).await.unwrap_err();
    assert!(matches!(err, MpError::Permanent(_)), "{err:?}");
    assert!(err.message().contains("无权删除该订阅"), "{err}");
    assert!(err.message().contains("does not allow"), "{err}");
    assert_eq!(sim.logins(), logins, "no login for a 403");
    assert_eq!(mp.credentials_refused(), None);
    assert_eq!(sim.calls(routes::SUBSCRIBE_DELETE), 1, "not sent again");
}

#[tokio::test]
async fn a_v3_user_with_two_factor_login_is_told_to_use_the_api_key() {
    let sim = MoviePilotSim::start(SimOptions {
        two_factor: true,
        ..SimOptions::v3()
    })
    .await;
    let err = MoviePilot::connect(&settings(&sim)).await.unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("two-factor"), "{text}");
    assert!(text.contains("ONCEBOT__MOVIEPILOT__API_KEY"), "{text}");
    assert!(!text.contains("refused the username or password"), "{text}");
}

#[tokio::test]
async fn two_factor_turned_on_later_tells_the_admins_to_use_the_api_key() {
    let admins = GROUP.to_string();
    let rig = Rig::with(
        Dialect::V3,
        &[("ONCEBOT__TELEGRAM__ADMIN_CHATS", admins.as_str())],
    )
    .await;
    let bot = rig.start(None).await;
    bot.wait_for_stderr("worker started", Duration::from_secs(10))
        .await;
    rig.mp.set_two_factor(true);
    rig.send(1, "/subscriptions").await;
    let notice = eventually("the admin notice", RECOVERY_DEADLINE, || async {
        rig.store
            .replies()
            .await
            .into_iter()
            .find(|r| r["kind"] == "notice")
    })
    .await;
    assert!(notice["text"].contains("two-factor"), "{notice:?}");
    assert!(
        notice["text"].contains("ONCEBOT__MOVIEPILOT__API_KEY"),
        "{notice:?}"
    );
    bot.wait_for_stderr("two-factor login on", Duration::from_secs(10))
        .await;
}

#[tokio::test]
async fn search_now_on_v3_0_0_uses_its_get_trigger() {
    let (sim, mp) = connected(SimOptions {
        version: "v3.0.0".into(),
        ..SimOptions::v3()
    })
    .await;
    let id = sim
        .insert_subscription(DUNE, MediaKind::Movie, None)
        .unwrap();
    mp.search_subscription_now(id).await.unwrap();
    assert_eq!(sim.searches(id), 1);
    assert_eq!(sim.calls(routes::SUBSCRIBE_SEARCH_V3), 0);

    // A server with only v3.0.0's GET trigger, whatever version it reports (a build from
    // source): the POST is answered 405 (it did not run), so it is asked again with GET, once.
    let (sim, mp) = connected(SimOptions {
        version: "v3.0.5".into(),
        ..SimOptions::v3()
    })
    .await;
    sim.set_get_search_trigger(true);
    let id = sim
        .insert_subscription(DUNE, MediaKind::Movie, None)
        .unwrap();
    mp.search_subscription_now(id).await.unwrap();
    assert_eq!(sim.searches(id), 1);
    assert_eq!(sim.calls(routes::SUBSCRIBE_SEARCH_V2), 1);

    // v3.0.1 and later: POST.
    let (sim, mp) = connected(SimOptions {
        version: "v3.0.1".into(),
        ..SimOptions::v3()
    })
    .await;
    let id = sim
        .insert_subscription(DUNE, MediaKind::Movie, None)
        .unwrap();
    mp.search_subscription_now(id).await.unwrap();
    assert_eq!(sim.searches(id), 1);
    assert_eq!(sim.calls(routes::SUBSCRIBE_SEARCH_V3), 1);
}

// ----- a refused login: one at a time for the whole deployment, each user told once -----

/// The logins a deployment may have made in `elapsed` while they were refused: one at once,
/// then one after each backoff (5 s, doubling, at most 60 s).
fn logins_allowed(elapsed: Duration) -> u64 {
    let mut at = Duration::ZERO;
    let mut n = 0;
    let mut backoff = Duration::from_secs(5);
    while at <= elapsed {
        n += 1;
        at += backoff;
        backoff = (backoff * 2).min(Duration::from_secs(60));
    }
    n
}

#[tokio::test]
async fn a_changed_password_costs_one_login_per_backoff_across_processes_and_tells_each_user_once()
{
    let admins = GROUP.to_string();
    let rig = Rig::with(
        Dialect::V2,
        &[("ONCEBOT__TELEGRAM__ADMIN_CHATS", admins.as_str())],
    )
    .await;
    // A split deployment: the webhook alone, and two worker processes.
    let ingress = rig.start_roles(&["ingress"], None).await;
    let _w1 = rig.start_worker_only().await;
    let _w2 = rig.start_worker_only().await;
    rig.send(1, "/subscriptions").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let logins_before = rig.mp.calls(routes::LOGIN);
    let asked = |rig: &Rig| rig.mp.calls(routes::SUBSCRIBE_LIST) + rig.mp.calls(routes::DOWNLOADS);
    let asked_before = asked(&rig);

    rig.mp.set_password("changed-by-the-operator");
    let started = Instant::now();
    rig.send(2, "/subscriptions").await;
    rig.send(3, "/downloading").await;
    for (update, user) in [(4, BOB), (5, BOB)] {
        let text = if update == 4 {
            "/subscriptions"
        } else {
            "/downloading"
        };
        rig.post(&private_text(update, user, text)).await;
    }
    let store = &rig.store;
    eventually(
        "every job waiting several rounds",
        Duration::from_secs(40),
        || async move {
            for id in 2..=5 {
                let rounds = store
                    .job(id)
                    .await
                    .get("auth_waits")
                    .and_then(|w| w.parse::<u32>().ok())
                    .unwrap_or(0);
                if rounds < 6 {
                    return None;
                }
            }
            Some(())
        },
    )
    .await;
    // Long enough for the backoff to matter: past the first two backoffs.
    tokio::time::sleep(Duration::from_secs(16).saturating_sub(started.elapsed())).await;
    let elapsed = started.elapsed();
    let logins = rig.mp.calls(routes::LOGIN) - logins_before;
    assert!(
        (1..=logins_allowed(elapsed)).contains(&logins),
        "{logins} logins in {elapsed:?} (at most {} allowed)",
        logins_allowed(elapsed)
    );
    // Nor is MoviePilot sent each retry's call with the dead token: a job's call waits for a
    // login instead (at most the four first attempts, and one call per login that was let in).
    let asked = asked(&rig) - asked_before;
    assert!(asked <= 4 + logins, "{asked} calls refused one by one");
    // Each user told once, at their first waiting job; the admins once.
    let told: BTreeMap<u64, usize> = (2..=5)
        .map(|id| (id, 0))
        .chain(
            rig.store
                .replies()
                .await
                .into_iter()
                .filter(|r| {
                    r.get("text")
                        .is_some_and(|t| t.contains("is kept and will go on"))
                })
                .filter_map(|r| r.get("job_id").and_then(|j| j.parse().ok()))
                .map(|id| (id, 1)),
        )
        .fold(BTreeMap::new(), |mut m, (id, n)| {
            *m.entry(id).or_default() += n;
            m
        });
    assert_eq!(told.values().sum::<usize>(), 2, "{told:?}");
    assert_eq!(told[&2] + told[&3], 1, "ALICE once: {told:?}");
    assert_eq!(told[&4] + told[&5], 1, "BOB once: {told:?}");
    let notices = rig
        .store
        .replies()
        .await
        .into_iter()
        .filter(|r| r["kind"] == "notice")
        .count();
    assert_eq!(notices, 1);
    // The ingress process makes no MoviePilot call, yet its /readyz says why jobs wait.
    let ready = rig.http.get(rig.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    let body = ready.text().await.unwrap();
    assert!(
        body.contains("MoviePilot refuses oncebot's credentials"),
        "{body}"
    );
    drop(ingress);
}

// ----- a succeeded job does not carry an earlier attempt's error kind -----

#[tokio::test]
async fn a_job_that_succeeds_after_a_failed_attempt_keeps_that_kind_beside_its_error() {
    let rig = Rig::new(Dialect::V2).await;
    let bot = rig.start(None).await;
    // Connected first: the start-up probe reads the same route.
    bot.wait_for_stderr("worker started", Duration::from_secs(10))
        .await;
    rig.mp.fail_next(
        routes::SUBSCRIBE_LIST,
        Fault::Status(500, "Internal Server Error".into()),
    );
    rig.send(1, "/subscriptions").await;
    rig.job_in(1, "succeeded", RECOVERY_DEADLINE).await;
    let job = rig.job_shown(1).await;
    let fields = job.to_string();
    assert_eq!(job["status"], "succeeded", "{fields}");
    assert!(!fields.contains("\"mp_error_kind\""), "{fields}");
    assert!(
        fields.contains("\"last_attempt_error_kind\":\"transient\""),
        "{fields}"
    );
    assert!(fields.contains("last_attempt_error"), "{fields}");
}
