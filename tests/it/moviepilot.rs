//! The MoviePilot client against `oncebot_tools::sim::moviepilot`, and the simulator against the real
//! v2.5.6 bodies in `tests/fixtures/moviepilot-v2.5.6/`.
//!
//! Tests that hold for both dialects are written once and instantiated for v2 (as v2.5.6
//! answered, logging in with username and password) and v3 (API key) by `both_dialects!`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use oncebot::config::Secret;
use oncebot::moviepilot::{
    Dialect, MediaKind, MoviePilot, MoviePilotSettings, MpError, NewSubscription,
};
use oncebot_tools::sim::moviepilot::{Fault, MoviePilotSim, SimDownload, SimOptions, routes};
use serde_json::{Value, json};

use crate::support::{bare_settings, login_settings};

const DUNE: u64 = 438631;
const DUNE_TWO: u64 = 693134;
const THREE_BODY: u64 = 108545;
const EXPANSE: u64 = 63639;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/moviepilot-v2.5.6/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

fn fixture_json(name: &str) -> Value {
    serde_json::from_str(&fixture(name)).unwrap()
}

fn key_settings(sim: &MoviePilotSim) -> MoviePilotSettings {
    MoviePilotSettings {
        api_key: Secret::new(sim.options().api_token.clone()),
        ..bare_settings(sim)
    }
}

/// The credentials each dialect's operator would configure: v2.5.6 needs a login, v3 takes the
/// API key.
fn usual_settings(sim: &MoviePilotSim) -> MoviePilotSettings {
    match sim.options().dialect {
        Dialect::V2 => login_settings(sim),
        Dialect::V3 => key_settings(sim),
    }
}

async fn connected(opts: SimOptions) -> (MoviePilotSim, MoviePilot) {
    let sim = MoviePilotSim::start(opts).await;
    let mp = MoviePilot::connect(&usual_settings(&sim)).await.unwrap();
    (sim, mp)
}

fn dune() -> NewSubscription {
    NewSubscription {
        name: "Dune".into(),
        year: Some("2021".into()),
        kind: MediaKind::Movie,
        tmdb_id: DUNE,
        season: None,
        best: false,
    }
}

fn expanse(season: u32) -> NewSubscription {
    NewSubscription {
        name: "The Expanse".into(),
        year: Some("2015".into()),
        kind: MediaKind::Tv,
        tmdb_id: EXPANSE,
        season: Some(season),
        best: false,
    }
}

/// Polls `condition` until it holds or `within` passes.
async fn eventually(within: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

macro_rules! both_dialects {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            async fn v2() {
                super::$name(super::SimOptions::v2_5_6()).await
            }
            #[tokio::test]
            async fn v3() {
                super::$name(super::SimOptions::v3()).await
            }
        }
    )*};
}

both_dialects!(
    connect_picks_the_servers_dialect,
    search_returns_catalogue_matches_with_tmdb_ids_and_seasons,
    detail_finds_known_media_and_none_for_unknown,
    creating_twice_answers_the_same_id_and_stores_one_subscription,
    tv_subscriptions_are_told_apart_by_season,
    find_subscription_sees_only_the_asked_media_and_season,
    list_subscriptions_returns_every_row,
    delete_is_idempotent,
    search_now_triggers_a_search_and_a_no_op_still_succeeds,
    downloading_lists_names_and_progress_only,
    a_dead_token_with_eight_calls_in_flight_costs_one_login,
    a_create_whose_answer_is_late_is_uncertain_but_took_effect,
    a_search_whose_answer_is_late_is_transient,
    a_500_is_transient,
    an_unknown_media_create_is_permanent_with_moviepilots_reason,
    a_dropped_create_is_uncertain_and_commit_then_drop_took_effect,
    a_4xx_is_permanent,
);

async fn connect_picks_the_servers_dialect(opts: SimOptions) {
    let expected = opts.dialect;
    let (sim, mp) = connected(opts).await;
    assert_eq!(mp.dialect(), expected);
    assert_eq!(sim.calls(routes::GLOBAL), 1);
    match expected {
        Dialect::V2 => assert_eq!(sim.logins(), 1, "v2.5.6 needs a login"),
        Dialect::V3 => {
            assert_eq!(sim.logins(), 0, "v3 takes the API key");
            assert_eq!(mp.version(), "v3.1.0");
        }
    }
}

async fn search_returns_catalogue_matches_with_tmdb_ids_and_seasons(opts: SimOptions) {
    let (sim, mp) = connected(opts).await;
    let dunes = mp.search_media("dune").await.unwrap();
    let ids: BTreeSet<_> = dunes.iter().filter_map(|m| m.tmdb_id).collect();
    assert_eq!(ids, BTreeSet::from([DUNE, DUNE_TWO]));
    assert!(dunes.iter().all(|m| m.kind == MediaKind::Movie));
    assert!(dunes.iter().all(|m| m.season_numbers.is_empty()));

    let expanse = mp.search_media("Expanse").await.unwrap();
    assert_eq!(expanse.len(), 1);
    assert_eq!(expanse[0].tmdb_id, Some(EXPANSE));
    assert_eq!(expanse[0].kind, MediaKind::Tv);
    assert_eq!(expanse[0].season_numbers, vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(expanse[0].year.as_deref(), Some("2015"));

    assert!(mp.search_media("no such film").await.unwrap().is_empty());
    assert_eq!(sim.calls(routes::MEDIA_SEARCH), 3);
}

async fn detail_finds_known_media_and_none_for_unknown(opts: SimOptions) {
    let (_sim, mp) = connected(opts).await;
    let three_body = mp
        .media_detail(THREE_BODY, MediaKind::Tv)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(three_body.title, "三体");
    assert_eq!(three_body.tmdb_id, Some(THREE_BODY));
    assert_eq!(three_body.season_numbers, vec![1]);
    assert_eq!(
        mp.media_detail(999_999, MediaKind::Movie).await.unwrap(),
        None
    );
    assert_eq!(
        mp.media_detail(THREE_BODY, MediaKind::Movie).await.unwrap(),
        None,
        "the same id as a movie is other media"
    );
}

async fn creating_twice_answers_the_same_id_and_stores_one_subscription(opts: SimOptions) {
    let (sim, mp) = connected(opts).await;
    let first = mp.create_subscription(&dune()).await.unwrap();
    let second = mp.create_subscription(&dune()).await.unwrap();
    assert_eq!(first, second);
    assert_eq!(sim.calls(routes::SUBSCRIBE_CREATE), 2);
    let stored = sim.subscriptions();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].tmdb_id, DUNE);
    assert_eq!(stored[0].season, None);
}

async fn tv_subscriptions_are_told_apart_by_season(opts: SimOptions) {
    let (sim, mp) = connected(opts).await;
    let s2 = mp.create_subscription(&expanse(2)).await.unwrap();
    let s3 = mp.create_subscription(&expanse(3)).await.unwrap();
    assert_ne!(s2, s3);
    assert_eq!(mp.create_subscription(&expanse(2)).await.unwrap(), s2);
    assert_eq!(sim.subscriptions().len(), 2);
}

async fn find_subscription_sees_only_the_asked_media_and_season(opts: SimOptions) {
    let (sim, mp) = connected(opts).await;
    assert_eq!(mp.find_subscription(EXPANSE, Some(2)).await.unwrap(), None);
    let id = mp.create_subscription(&expanse(2)).await.unwrap();
    let found = mp
        .find_subscription(EXPANSE, Some(2))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, id);
    assert_eq!(found.tmdb_id, Some(EXPANSE));
    assert_eq!(found.season, Some(2));
    assert_eq!(found.kind, Some(MediaKind::Tv));
    assert_eq!(found.name, "The Expanse");
    assert_eq!(found.state.as_deref(), Some("N"));
    assert_eq!(found.lack_episode, Some(13));
    assert_eq!(mp.find_subscription(EXPANSE, Some(3)).await.unwrap(), None);
    assert_eq!(mp.find_subscription(DUNE, None).await.unwrap(), None);

    // One made in MoviePilot's own UI is found the same way.
    let made_elsewhere = sim
        .insert_subscription(THREE_BODY, MediaKind::Tv, Some(1))
        .unwrap();
    let found = mp.find_subscription(THREE_BODY, Some(1)).await.unwrap();
    assert_eq!(found.map(|s| s.id), Some(made_elsewhere));
}

async fn list_subscriptions_returns_every_row(opts: SimOptions) {
    let (_sim, mp) = connected(opts).await;
    assert!(mp.list_subscriptions().await.unwrap().is_empty());
    let a = mp.create_subscription(&dune()).await.unwrap();
    let b = mp.create_subscription(&expanse(1)).await.unwrap();
    let listed = mp.list_subscriptions().await.unwrap();
    let ids: Vec<_> = listed.iter().map(|s| s.id).collect();
    assert_eq!(ids, vec![a, b]);
    assert_eq!(listed[0].kind, Some(MediaKind::Movie));
    assert_eq!(listed[1].season, Some(1));
}

async fn delete_is_idempotent(opts: SimOptions) {
    let (sim, mp) = connected(opts).await;
    let id = mp.create_subscription(&dune()).await.unwrap();
    mp.delete_subscription(id).await.unwrap();
    assert!(sim.subscriptions().is_empty());
    // v2 answers success for a missing id; v3 answers 404, which means "already done".
    mp.delete_subscription(id).await.unwrap();
    assert_eq!(sim.calls(routes::SUBSCRIBE_DELETE), 2);
    assert_eq!(mp.find_subscription(DUNE, None).await.unwrap(), None);
}

async fn search_now_triggers_a_search_and_a_no_op_still_succeeds(opts: SimOptions) {
    let dialect = opts.dialect;
    let (sim, mp) = connected(opts).await;
    let id = mp.create_subscription(&expanse(1)).await.unwrap();
    mp.search_subscription_now(id).await.unwrap();
    assert_eq!(sim.searches(id), 1);
    sim.set_search_no_op(true);
    mp.search_subscription_now(id).await.unwrap();
    assert_eq!(
        sim.searches(id),
        1,
        "MoviePilot answers success for a skipped search"
    );
    let route = match dialect {
        Dialect::V2 => routes::SUBSCRIBE_SEARCH_V2,
        Dialect::V3 => routes::SUBSCRIBE_SEARCH_V3,
    };
    assert_eq!(sim.calls(route), 2);
}

async fn downloading_lists_names_and_progress_only(opts: SimOptions) {
    let (sim, mp) = connected(opts).await;
    assert!(mp.downloading().await.unwrap().is_empty());
    sim.add_download(SimDownload {
        hash: "0123456789abcdef0123456789abcdef01234567".into(),
        title: "The.Expanse.S02E03.1080p.WEB-DL".into(),
        name: "The Expanse".into(),
        year: "2015".into(),
        season_episode: "S02 E03".into(),
        progress: 42.5,
        state: "downloading".into(),
    });
    let downloads = mp.downloading().await.unwrap();
    assert_eq!(downloads.len(), 1);
    assert_eq!(downloads[0].title, "The Expanse (2015)");
    assert_eq!(downloads[0].progress, Some(42.5));
    assert_eq!(downloads[0].season_episode.as_deref(), Some("S02 E03"));
    assert!(!format!("{downloads:?}").contains("0123456789abcdef"));
}

async fn a_dead_token_with_eight_calls_in_flight_costs_one_login(opts: SimOptions) {
    let sim = MoviePilotSim::start(opts).await;
    let mp = MoviePilot::connect(&login_settings(&sim)).await.unwrap();
    assert_eq!(sim.logins(), 1);
    let listed_before = sim.calls(routes::SUBSCRIBE_LIST);
    sim.restart();
    // A slow login (v2.5.6's bcrypt takes 0.35 s) keeps every refused call waiting on it.
    sim.fail_next(routes::LOGIN, Fault::Delay(Duration::from_millis(300)));
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let mp = mp.clone();
            tokio::spawn(async move { mp.list_subscriptions().await })
        })
        .collect();
    for call in calls {
        call.await.unwrap().unwrap();
    }
    assert_eq!(sim.logins(), 2, "exactly one new login");
    let listed = sim.calls(routes::SUBSCRIBE_LIST) - listed_before;
    assert!(
        (9..=16).contains(&listed),
        "some calls were refused and sent again: {listed}"
    );
}

async fn a_create_whose_answer_is_late_is_uncertain_but_took_effect(opts: SimOptions) {
    let sim = MoviePilotSim::start(opts).await;
    let mp = MoviePilot::connect(&MoviePilotSettings {
        timeout_secs: 1,
        ..usual_settings(&sim)
    })
    .await
    .unwrap();
    sim.fail_next(
        routes::SUBSCRIBE_CREATE,
        Fault::Delay(Duration::from_millis(1500)),
    );
    let err = mp.create_subscription(&dune()).await.unwrap_err();
    assert!(matches!(err, MpError::Uncertain(_)), "{err:?}");
    assert_eq!(err.kind().as_str(), "uncertain");
    assert!(err.to_string().contains("/api/v1/subscribe/"), "{err}");
    assert!(
        eventually(Duration::from_secs(5), || sim
            .find_subscription(DUNE, None)
            .is_some())
        .await,
        "MoviePilot committed the create after the client gave up"
    );
    // Asking again finds it instead of guessing.
    let found = mp.find_subscription(DUNE, None).await.unwrap().unwrap();
    assert_eq!(found.tmdb_id, Some(DUNE));
}

async fn a_search_whose_answer_is_late_is_transient(opts: SimOptions) {
    let sim = MoviePilotSim::start(opts).await;
    let mp = MoviePilot::connect(&MoviePilotSettings {
        search_timeout_secs: 1,
        ..usual_settings(&sim)
    })
    .await
    .unwrap();
    sim.fail_next(
        routes::MEDIA_SEARCH,
        Fault::Delay(Duration::from_millis(1500)),
    );
    let err = mp.search_media("Dune").await.unwrap_err();
    assert!(matches!(err, MpError::Transient(_)), "{err:?}");
    assert!(err.to_string().contains("no answer within 1 s"), "{err}");
}

async fn a_500_is_transient(opts: SimOptions) {
    let (sim, mp) = connected(opts).await;
    sim.fail_next(
        routes::SUBSCRIBE_LIST,
        Fault::Status(500, "Internal Server Error".into()),
    );
    let err = mp.list_subscriptions().await.unwrap_err();
    assert!(matches!(err, MpError::Transient(_)), "{err:?}");
    assert!(
        err.to_string().contains("HTTP 500 Internal Server Error"),
        "{err}"
    );
    // The next call is answered normally.
    mp.list_subscriptions().await.unwrap();
}

async fn an_unknown_media_create_is_permanent_with_moviepilots_reason(opts: SimOptions) {
    let (sim, mp) = connected(opts).await;
    let err = mp
        .create_subscription(&NewSubscription {
            tmdb_id: 999_999,
            ..dune()
        })
        .await
        .unwrap_err();
    assert!(matches!(err, MpError::Permanent(_)), "{err:?}");
    assert!(err.to_string().contains("未识别到媒体信息"), "{err}");
    assert!(sim.subscriptions().is_empty());
}

async fn a_dropped_create_is_uncertain_and_commit_then_drop_took_effect(opts: SimOptions) {
    let (sim, mp) = connected(opts).await;
    sim.fail_next(routes::SUBSCRIBE_CREATE, Fault::Drop);
    let err = mp.create_subscription(&dune()).await.unwrap_err();
    assert!(matches!(err, MpError::Uncertain(_)), "{err:?}");
    assert!(sim.subscriptions().is_empty(), "Drop has no effect");

    sim.fail_next(routes::SUBSCRIBE_CREATE, Fault::CommitThenDrop);
    let err = mp.create_subscription(&dune()).await.unwrap_err();
    assert!(matches!(err, MpError::Uncertain(_)), "{err:?}");
    assert_eq!(sim.subscriptions().len(), 1, "CommitThenDrop took effect");

    sim.fail_next(routes::SUBSCRIBE_LIST, Fault::Drop);
    let err = mp.list_subscriptions().await.unwrap_err();
    assert!(
        matches!(err, MpError::Transient(_)),
        "a read is safe to repeat: {err:?}"
    );
}

async fn a_4xx_is_permanent(opts: SimOptions) {
    let (sim, mp) = connected(opts).await;
    sim.fail_next(
        routes::SUBSCRIBE_DELETE,
        Fault::Status(400, r#"{"detail":"用户权限不足"}"#.into()),
    );
    let err = mp.delete_subscription(1).await.unwrap_err();
    assert!(matches!(err, MpError::Permanent(_)), "{err:?}");
    assert!(err.to_string().contains("用户权限不足"), "{err}");
}

// ----- connecting -----

#[tokio::test]
async fn an_api_key_refused_by_v2_5_6_names_the_login_settings() {
    let sim = MoviePilotSim::start(SimOptions::v2_5_6()).await;
    let err = MoviePilot::connect(&key_settings(&sim))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("ONCEBOT__MOVIEPILOT__USERNAME"), "{err}");
    assert!(err.contains("ONCEBOT__MOVIEPILOT__PASSWORD"), "{err}");
    assert!(err.contains("before v2.9.3"), "{err}");
    assert!(!err.contains('\n'), "one line: {err}");
    assert!(
        !err.contains(&sim.options().api_token),
        "the key never shows: {err}"
    );
}

/// v2.9.3 and later take the API key everywhere: a refused key is a wrong key, not a sign
/// that a login is needed (as the real v2.14.0 showed it, whose start-up used to say so).
#[tokio::test]
async fn a_wrong_api_key_for_a_late_v2_says_the_key_was_refused() {
    let sim = MoviePilotSim::start(SimOptions {
        version: "v2.14.0".into(),
        ..SimOptions::late_v2()
    })
    .await;
    sim.rotate_api_token("the-token-moviepilot-has-now");
    let err = MoviePilot::connect(&key_settings(&sim))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("MoviePilot v2.14.0"), "{err}");
    assert!(err.contains("refused the API key"), "{err}");
    assert!(err.contains("ONCEBOT__MOVIEPILOT__API_KEY"), "{err}");
    assert!(err.contains("current API_TOKEN"), "{err}");
    assert!(!err.contains("before v2.9.3"), "{err}");
    assert!(!err.contains(&sim.options().api_token), "{err}");
}

/// The versions between v2.5.6 and v2.9 report no BACKEND_VERSION either; without a working key
/// oncebot cannot read theirs, and says what it knows.
#[tokio::test]
async fn a_v2_without_backend_version_is_labelled_before_v2_9() {
    let sim = MoviePilotSim::start(SimOptions {
        version: "v2.8.1".into(),
        ..SimOptions::v2_5_6()
    })
    .await;
    let mp = MoviePilot::connect(&login_settings(&sim)).await.unwrap();
    assert_eq!(mp.version(), "v2 (before v2.9: no BACKEND_VERSION)");
}

#[tokio::test]
async fn with_both_credentials_v2_5_6_falls_back_to_the_login() {
    let sim = MoviePilotSim::start(SimOptions::v2_5_6()).await;
    let settings = MoviePilotSettings {
        api_key: Secret::new(sim.options().api_token.clone()),
        ..login_settings(&sim)
    };
    let mp = MoviePilot::connect(&settings).await.unwrap();
    assert_eq!(mp.dialect(), Dialect::V2);
    assert_eq!(sim.logins(), 1);
    // v2.5.6 reports no BACKEND_VERSION; the Servarr status, opened by the key, does.
    assert_eq!(mp.version(), "v2.5.6");
    assert_eq!(sim.calls(routes::SERVARR_STATUS), 1);
    mp.create_subscription(&dune()).await.unwrap();
}

#[tokio::test]
async fn a_late_v2_takes_the_api_key_without_a_login() {
    let sim = MoviePilotSim::start(SimOptions::late_v2()).await;
    let mp = MoviePilot::connect(&key_settings(&sim)).await.unwrap();
    assert_eq!(mp.dialect(), Dialect::V2);
    assert_eq!(mp.version(), "v2.15.6");
    assert_eq!(sim.logins(), 0);
    mp.create_subscription(&expanse(1)).await.unwrap();
    assert_eq!(sim.subscriptions().len(), 1);
}

#[tokio::test]
async fn an_unknown_major_version_is_refused_naming_v2_and_v3() {
    let sim = MoviePilotSim::start(SimOptions {
        version: "v4.0.0".into(),
        ..SimOptions::v3()
    })
    .await;
    let err = MoviePilot::connect(&key_settings(&sim))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("v4.0.0"), "{err}");
    assert!(err.contains("v2") && err.contains("v3"), "{err}");
}

#[tokio::test]
async fn a_wrong_password_names_the_login_settings() {
    let sim = MoviePilotSim::start(SimOptions::v2_5_6()).await;
    let settings = MoviePilotSettings {
        password: Secret::new("wrong-password-123"),
        ..login_settings(&sim)
    };
    let err = format!("{:#}", MoviePilot::connect(&settings).await.unwrap_err());
    assert!(err.contains("ONCEBOT__MOVIEPILOT__PASSWORD"), "{err}");
    assert!(err.contains("用户名或密码或二次校验码不正确"), "{err}");
    assert!(!err.contains("wrong-password-123"), "{err}");
}

#[tokio::test]
async fn an_unreachable_moviepilot_fails_connect_and_calls_are_transient() {
    let sim = MoviePilotSim::start(SimOptions::v3()).await;
    let settings = key_settings(&sim);
    let mp = MoviePilot::connect(&settings).await.unwrap();
    drop(sim);
    // The listener closes when the simulator's accept loop sees the cancellation.
    let refused = eventually(Duration::from_secs(5), || {
        std::net::TcpStream::connect(settings.url.trim_start_matches("http://")).is_err()
    })
    .await;
    assert!(refused, "the simulator stopped listening");
    let err = mp.create_subscription(&dune()).await.unwrap_err();
    assert!(
        matches!(err, MpError::Transient(_)),
        "a refused connection sent nothing: {err:?}"
    );
    let err = MoviePilot::connect(&settings)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot reach MoviePilot"), "{err}");
}

// ----- the simulator answers what the real v2.5.6 answered -----

async fn raw(
    sim: &MoviePilotSim,
    method: reqwest::Method,
    path: &str,
    auth: Option<&str>,
) -> (u16, String, String) {
    let mut req = reqwest::Client::new().request(method, format!("{}{path}", sim.url()));
    if let Some(token) = auth {
        req = req.bearer_auth(token);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let kind = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, kind, resp.text().await.unwrap())
}

async fn token(sim: &MoviePilotSim) -> String {
    let resp = reqwest::Client::new()
        .post(format!("{}/api/v1/login/access-token", sim.url()))
        .form(&[("username", "admin"), ("password", "password")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let body: Value = resp.json().await.unwrap();
    let keys: BTreeSet<_> = body.as_object().unwrap().keys().cloned().collect();
    let expected: BTreeSet<String> = [
        "access_token",
        "token_type",
        "super_user",
        "user_id",
        "user_name",
        "avatar",
        "level",
        "permissions",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(keys, expected);
    assert_eq!(body["token_type"], "bearer");
    body["access_token"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn sim_v2_auth_refusals_match_the_real_server() {
    let sim = MoviePilotSim::start(SimOptions::v2_5_6()).await;
    let client = reqwest::Client::new();

    let resp = client
        .get(format!("{}/api/v1/subscribe/", sim.url()))
        .header("X-API-KEY", &sim.options().api_token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    assert_eq!(resp.headers()["www-authenticate"], "Bearer");
    assert_eq!(
        resp.json::<Value>().await.unwrap(),
        fixture_json("sub_apikey.json")
    );

    let (status, _, body) = raw(&sim, reqwest::Method::GET, "/api/v1/user/current", None).await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&body).unwrap()),
        (401, fixture_json("cur_notoken.json"))
    );
    let (status, _, body) = raw(
        &sim,
        reqwest::Method::GET,
        "/api/v1/user/current",
        Some("eyJbad"),
    )
    .await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&body).unwrap()),
        (403, fixture_json("cur_badtoken.json"))
    );

    let (status, _, body) = raw(
        &sim,
        reqwest::Method::GET,
        "/api/v1/subscribe/list?token=wrong",
        None,
    )
    .await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&body).unwrap()),
        (401, fixture_json("sublist_badtoken.json"))
    );
    let (status, _, body) = raw(
        &sim,
        reqwest::Method::GET,
        "/api/v3/system/status?apikey=wrong",
        None,
    )
    .await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&body).unwrap()),
        (401, fixture_json("v3status_bad.json"))
    );
    let (status, _, body) = raw(
        &sim,
        reqwest::Method::GET,
        &format!("/api/v3/system/status?apikey={}", sim.options().api_token),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["version"],
        "v2.5.6"
    );

    let login = |form: Vec<(&'static str, &'static str)>| {
        let client = client.clone();
        let url = format!("{}/api/v1/login/access-token", sim.url());
        async move {
            let resp = client.post(url).form(&form).send().await.unwrap();
            (resp.status().as_u16(), resp.json::<Value>().await.unwrap())
        }
    };
    assert_eq!(
        login(vec![("username", "admin"), ("password", "nope")]).await,
        (401, fixture_json("login_bad.json"))
    );
    assert_eq!(
        login(vec![("username", "admin")]).await,
        (422, fixture_json("login_missing.json"))
    );
    token(&sim).await;
    assert_eq!(sim.logins(), 1);
}

#[tokio::test]
async fn sim_v2_subscription_bodies_match_the_real_server() {
    let sim = MoviePilotSim::start(SimOptions::v2_5_6()).await;
    let token = token(&sim).await;
    let (s, t) = (&sim, token.as_str());
    let get = move |path: &str| {
        let path = path.to_string();
        async move { raw(s, reqwest::Method::GET, &path, Some(t)).await }
    };

    let (status, kind, body) = get("/api/v1/subscribe/999").await;
    assert_eq!(
        (status, body.as_str()),
        (500, fixture("sub_get_nf.json").as_str())
    );
    assert!(kind.starts_with("text/plain"), "{kind}");

    let (status, _, body) = raw(
        &sim,
        reqwest::Method::DELETE,
        "/api/v1/subscribe/999",
        Some(&token),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        fixture_json("sub_del_nf.json")
    );

    for path in [
        "/api/v1/subscribe/media/tmdb:108545?season=1",
        "/api/v1/subscribe/media/tmdb%3A108545?season=1",
    ] {
        let (status, _, body) = get(path).await;
        assert_eq!(status, 200);
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap(),
            fixture_json("sub_media_nf.json")
        );
    }
    let (_, _, body) = get("/api/v1/media/tmdb:1?type_name=电视剧").await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        fixture_json("media_tmdb.json")
    );
    let (status, _, _) = get("/api/v1/media/tmdb:108545").await;
    assert_eq!(status, 422, "type_name is required");
    let (_, _, body) = get("/api/v1/download/").await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        fixture_json("download_list.json")
    );
    let (_, _, body) = get("/api/v1/media/search?title=nothing-like-this&type=media").await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        fixture_json("media_search.json")
    );

    let post = |body: Value| {
        let url = format!("{}/api/v1/subscribe/", sim.url());
        let token = token.clone();
        async move {
            let resp = reqwest::Client::new()
                .post(url)
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap();
            (resp.status().as_u16(), resp.text().await.unwrap())
        }
    };
    let (status, body) =
        post(json!({"name": "x", "type": "TV", "tmdbid": 108545, "season": 1})).await;
    assert_eq!((status, body), (500, fixture("sub_post_badtype.json")));
    let (status, body) =
        post(json!({"name": "x", "type": "电视剧", "tmdbid": 1, "season": 1})).await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        fixture_json("sub_post_tmdb.json")
    );

    // A created row has exactly the real row's fields, and the duplicate answers its id with "".
    let (_, body) =
        post(json!({"name": "三体", "type": "电视剧", "tmdbid": 108545, "season": 1})).await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"success": true, "message": "", "data": {"id": 1}})
    );
    let (_, body) =
        post(json!({"name": "三体", "type": "电视剧", "tmdbid": 108545, "season": 0})).await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"success": true, "message": "", "data": {"id": 1}}),
        "season 0 on TV means season 1"
    );
    let (_, _, body) = get("/api/v1/subscribe/1").await;
    let row: Value = serde_json::from_str(&body).unwrap();
    let real_keys: BTreeSet<_> = fixture_json("sub_media_nf.json")
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let keys: BTreeSet<_> = row.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, real_keys);
    assert_eq!(row["tmdbid"], 108545);
    assert_eq!(row["type"], "电视剧");
    assert_eq!(row["lack_episode"], 30);
    let (_, _, body) = get("/api/v1/subscribe/media/tmdb:108545?season=2").await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        fixture_json("sub_media_1_s2.json"),
        "another season is not this subscription"
    );
    let (_, _, body) = get(&format!(
        "/api/v1/subscribe/list?token={}",
        sim.options().api_token
    ))
    .await;
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()[0]["id"], 1);

    let (status, _, body) = raw(
        &sim,
        reqwest::Method::DELETE,
        "/api/v1/subscribe/1",
        Some(&token),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        fixture_json("sub_delete_1.json")
    );
}

#[tokio::test]
async fn sim_v3_envelopes_everything_and_needs_media_source() {
    let sim = MoviePilotSim::start(SimOptions::v3()).await;
    let client = reqwest::Client::new();
    let key = sim.options().api_token.clone();
    let get = |path: String| {
        let req = client
            .get(format!("{}{path}", sim.url()))
            .header("X-API-KEY", &key);
        async move {
            let resp = req.send().await.unwrap();
            (resp.status().as_u16(), resp.json::<Value>().await.unwrap())
        }
    };
    let (status, body) = get("/api/v1/system/global?token=moviepilot".into()).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["BACKEND_VERSION"], "v3.1.0");

    let (status, body) = get("/api/v1/subscribe/".into()).await;
    assert_eq!(
        (status, body),
        (200, json!({"success": true, "message": null, "data": []}))
    );
    let (status, body) = get("/api/v1/subscribe/media/108545?season=1".into()).await;
    assert_eq!(status, 422);
    assert_eq!(body["success"], false);
    let (status, body) =
        get("/api/v1/subscribe/media/108545?media_source=themoviedb&season=1".into()).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["id"], Value::Null);
    let (status, body) =
        get("/api/v1/media/438631?media_source=themoviedb&type_name=电影".into()).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["media_source"], "themoviedb");
    assert!(body["data"].get("source").is_none());
    assert!(body["data"].get("mediaid_prefix").is_none());

    let resp = client
        .get(format!("{}/api/v1/subscribe/", sim.url()))
        .bearer_auth("eyJbad")
        .header("X-API-KEY", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.status().as_u16(),
        401,
        "v3: a bad JWT is 401, even with a key"
    );

    let resp = client
        .delete(format!("{}/api/v1/subscribe/42", sim.url()))
        .header("X-API-KEY", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    assert_eq!(
        resp.json::<Value>().await.unwrap(),
        json!({"success": false, "message": "订阅不存在", "data": null})
    );

    let create = |body: Value| {
        let req = client
            .post(format!("{}/api/v1/subscribe/", sim.url()))
            .header("X-API-KEY", &key)
            .json(&body);
        async move { req.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let body =
        json!({"name": "Dune", "type": "电影", "media_source": "themoviedb", "media_id": "438631"});
    assert_eq!(
        create(body.clone()).await,
        json!({"success": true, "message": "新增订阅成功", "data": {"id": 1}})
    );
    assert_eq!(
        create(body).await,
        json!({"success": true, "message": "订阅已存在", "data": {"id": 1}})
    );
    assert_eq!(
        create(json!({"name": "Dune", "type": "电影", "media_id": "438631"})).await["message"],
        "新增订阅时必须同时提供有效的 media_source 和 media_id"
    );

    let resp = client
        .get(format!("{}/api/v1/subscribe/search/1", sim.url()))
        .header("X-API-KEY", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 405, "v3's search trigger is POST");
}
