//! The operator's page through HTTP against a real oncebot (ingress and dispatcher in this
//! process, a private redis-server, the simulated Bot API): off without a password, basic auth,
//! read-only, decisions through resolve.lua that tell the user and are refused the second time,
//! CSRF and origin checks, the filter, consumers with their liveness, and no secret in any page.

mod browser;
mod guarding;

use std::net::SocketAddr;
use std::time::Duration;

use oncebot::app::{Role, Running, ServeOptions};
use oncebot::commands::Command;
use oncebot::config::Locale;
use oncebot::ledger::{
    Admission, AdmissionAction, Admitted, Attempt, AttemptLimits, ClaimTexts, Claimed, JobState,
    Ledger, Outcome, keys,
};
use oncebot::worker::Render;
use oncebot_tools::redis_server::{Persistence, RedisServer};
use oncebot_tools::sim::telegram::TelegramSim;
use redis::AsyncCommands as _;

use crate::support::app::settings;
use crate::support::{ALICE, BOB, DEADLINE, SECRET, Store};

pub const USER: &str = "operator";
pub const PASSWORD: &str = "admin-pw-MARKER-0";
/// Secrets planted in the settings and the ledger; no page may show any of them.
pub const MP_API_KEY: &str = "mp-apikey-MARKER-1";
pub const MP_PASSWORD: &str = "mp-password-MARKER-2";
pub const SITE_COOKIE: &str = "uid=1; pass=cookie-MARKER-3";

/// A running oncebot with the page on, and a ledger handle to make jobs in every state.
pub struct Deployment {
    /// Kept alive for the deployment's lifetime.
    _redis: RedisServer,
    pub tg: TelegramSim,
    pub ledger: Ledger,
    pub store: Store,
    pub http_addr: SocketAddr,
    pub admin_addr: Option<SocketAddr>,
    pub http: reqwest::Client,
    running: Option<Running>,
}

impl Drop for Deployment {
    fn drop(&mut self) {
        if let Some(r) = &self.running {
            r.shutdown.cancel();
        }
    }
}

/// Ingress and dispatcher with the page on (unless `env` says otherwise) and every secret set.
pub async fn deploy(env: &[(&str, &str)]) -> Deployment {
    let redis = RedisServer::start(Persistence::None).unwrap();
    let tg = TelegramSim::start().await.unwrap();
    let mut all: Vec<(String, String)> = [
        ("ONCEBOT__ADMIN__USER", USER.to_string()),
        ("ONCEBOT__ADMIN__PASSWORD", PASSWORD.to_string()),
        ("ONCEBOT__TELEGRAM__API_URL", tg.url()),
        ("ONCEBOT__TELEGRAM__TOKEN", tg.token()),
        ("ONCEBOT__MOVIEPILOT__URL", "http://127.0.0.1:9".to_string()),
        ("ONCEBOT__MOVIEPILOT__API_KEY", MP_API_KEY.to_string()),
        ("ONCEBOT__MOVIEPILOT__USERNAME", "mpuser".to_string()),
        ("ONCEBOT__MOVIEPILOT__PASSWORD", MP_PASSWORD.to_string()),
        ("ONCEBOT__DISPATCHER__SET_COMMANDS", "false".to_string()),
        (
            "ONCEBOT__DISPATCHER__PER_CHAT_INTERVAL_MS",
            "10".to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (k, v) in env {
        all.retain(|(key, _)| key != k);
        all.push((k.to_string(), v.to_string()));
    }
    let settings = settings(&redis.url(), &all);
    if std::env::var_os("TEST_LOG").is_some() {
        oncebot::telemetry::init(&settings.log, Vec::new());
    }
    let running = oncebot::app::start(
        settings.clone(),
        ServeOptions {
            roles: vec![Role::Ingress, Role::Dispatcher],
            poll: false,
        },
    )
    .await
    .unwrap();
    let ledger = Ledger::connect(
        &settings,
        oncebot::i18n::Texts::new(settings.telegram.locale).for_ledger(),
    )
    .unwrap();
    ledger.prepare().await.unwrap();
    Deployment {
        store: Store::new(&redis.url(), &settings.redis.key_prefix),
        _redis: redis,
        tg,
        ledger,
        http_addr: running.http_addr.unwrap(),
        admin_addr: running.admin_addr,
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap(),
        running: Some(running),
    }
}

const LIMITS: AttemptLimits = AttemptLimits {
    max_recoveries: 3,
    retention: Duration::from_secs(3600),
    kinds: oncebot::versions::WORKER_KINDS,
};

fn claim_texts() -> ClaimTexts {
    ClaimTexts {
        held: "Job {job} is held for a person to check.".into(),
        failed: "Job {job} failed.".into(),
    }
}

impl Deployment {
    /// The page's address: `admin.listen` when set, else `http.listen`.
    pub fn page(&self, path: &str) -> String {
        let addr = self.admin_addr.unwrap_or(self.http_addr);
        format!("http://{addr}{path}")
    }

    pub fn origin(&self) -> String {
        let addr = self.admin_addr.unwrap_or(self.http_addr);
        format!("http://{addr}")
    }

    /// GET with the right credentials: status and body.
    pub async fn get(&self, path: &str) -> (u16, String) {
        let resp = self
            .http
            .get(self.page(path))
            .basic_auth(USER, Some(PASSWORD))
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.text().await.unwrap())
    }

    /// A decision posted as the page's form posts it (same origin, the page's CSRF field).
    pub async fn decide(&self, job: u64, decision: &str, csrf: &str) -> reqwest::Response {
        self.http
            .post(self.page(&format!("/admin/jobs/{job}/resolve")))
            .basic_auth(USER, Some(PASSWORD))
            .header("origin", self.origin())
            .form(&[
                ("csrf", csrf),
                ("decision", decision),
                ("note", "checked MoviePilot"),
            ])
            .send()
            .await
            .unwrap()
    }

    async fn admit(&self, update_id: i64, chat: i64, command: Command, args: &str) -> u64 {
        let admitted = self
            .ledger
            .admit(&Admission {
                update_id,
                chat_id: chat,
                user_id: chat,
                message_id: Some(update_id + 500),
                thread_id: None,
                requester: None,
                role: oncebot::vocabulary::Role::Admin,
                action: AdmissionAction::Job(command.job(
                    oncebot::commands::Asker::of(chat, chat, None),
                    args,
                    Duration::ZERO,
                )),
            })
            .await
            .unwrap();
        let Admitted::New { job_id } = admitted else {
            panic!("not admitted: {admitted:?}")
        };
        job_id
    }

    /// The jobs stream's next undelivered entry, read as `consumer` (a worker that is not
    /// running: its liveness key is never set).
    async fn deliver(&self, consumer: &str) -> String {
        let mut conn = self.store.conn().await;
        let read: redis::streams::StreamReadReply = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(keys::Stream::Jobs.group())
            .arg(consumer)
            .arg("COUNT")
            .arg(1)
            .arg("STREAMS")
            .arg(self.store.keys.jobs_stream())
            .arg(">")
            .query_async(&mut conn)
            .await
            .unwrap();
        read.keys[0].ids[0].id.clone()
    }

    /// A worker that died holding the entry of a job admitted as `update_id`: still listed in the
    /// workers' liveness list, without its key.
    async fn dead_worker_holding(&self, update_id: i64, consumer: &str) {
        let mut conn = self.store.conn().await;
        let _: () = conn
            .sadd(
                self.store.keys.consumers(keys::Stream::Jobs.group()),
                consumer,
            )
            .await
            .unwrap();
        let _ = self.admit(update_id, BOB, Command::Subscriptions, "").await;
        self.deliver(consumer).await;
    }

    async fn claim(&self, job: u64, entry: &str, consumer: &str) -> Claimed {
        self.ledger
            .claim(job, entry, consumer, &LIMITS, &claim_texts())
            .await
            .unwrap()
    }

    /// A job in `state`, made through the ledger's scripts as workers make it. A `pending`
    /// job's entry stays undelivered, so make pending jobs after the others.
    pub async fn job_in(&self, update_id: i64, chat: i64, state: &str) -> u64 {
        if state == "needs_review" {
            // A /searchnow whose worker died mid-call: the next claim holds it for a person.
            let job = self.admit(update_id, chat, Command::SearchNow, "7").await;
            let entry = self.deliver("worker-dead").await;
            self.claim(job, &entry, "worker-dead").await;
            assert!(matches!(
                self.claim(job, &entry, "worker-next").await,
                Claimed::Held { .. }
            ));
            return job;
        }
        let job = self
            .admit(update_id, chat, Command::Subscriptions, "")
            .await;
        if state == "pending" {
            return job;
        }
        let consumer = "worker-busy";
        let entry = self.deliver(consumer).await;
        let Claimed::Run { attempt, .. } = self.claim(job, &entry, consumer).await else {
            panic!("job {job} not claimed")
        };
        let outcome = match state {
            "running" => return job,
            "succeeded" => Outcome {
                status: JobState::Succeeded,
                result: "2 subscriptions".into(),
                ..Outcome::default()
            },
            "failed" => Outcome {
                status: JobState::Failed,
                error: "MoviePilot refused the request".into(),
                ..Outcome::default()
            },
            "retry_wait" => Outcome {
                status: JobState::RetryWait,
                error: "MoviePilot answered 502".into(),
                retry_in: Duration::from_secs(3600),
                ..Outcome::default()
            },
            other => panic!("no state {other}"),
        };
        self.complete(&attempt, &outcome).await;
        job
    }

    async fn complete(&self, attempt: &Attempt, outcome: &Outcome) {
        self.ledger
            .complete(attempt, outcome, Duration::from_secs(3600))
            .await
            .unwrap();
    }

    /// A resource search's stored release list, with a site cookie in its torrent data.
    pub async fn releases_with_cookie(&self, update_id: i64) -> u64 {
        let job = self
            .admit(update_id, ALICE, Command::Releases, "tmdb:603")
            .await;
        let release = serde_json::json!({
            "torrent_info": {"site_name": "PT", "title": "The.Matrix.1999", "site_cookie": SITE_COOKIE},
        });
        self.ledger
            .store_list(
                job,
                Duration::from_secs(600),
                &[("1. The.Matrix.1999".into(), "{}".into())],
                Some((&serde_json::json!({"title": "The Matrix"}), &[release])),
            )
            .await
            .unwrap();
        job
    }

    /// The message the user of a resolved job is sent, as the CLI sends it.
    pub fn resolved_text(&self, decision: &str, job: u64) -> String {
        let decision = oncebot::ledger::Resolution::ALL
            .into_iter()
            .find(|d| d.as_str() == decision)
            .expect("a decision");
        Render::new(Locale::En)
            .resolved(decision)
            .replace("{job}", &job.to_string())
    }

    /// Waits until the Bot API got `text` for `chat`.
    pub async fn wait_told(&self, chat: i64, text: &str) {
        self.tg
            .wait_for(DEADLINE, |o| {
                o.sent().iter().any(|m| m.chat_id == chat && m.text == text)
            })
            .await
            .unwrap_or_else(|e| panic!("{chat} was not told {text:?}: {e:?}"));
    }
}

/// A request header's name and value.
type Header = (&'static str, String);

/// The CSRF field of the first action form on a page.
pub fn csrf_of(html: &str) -> String {
    let at = html
        .find(r#"name="csrf" value=""#)
        .unwrap_or_else(|| panic!("no CSRF field in {html}"));
    let rest = &html[at + r#"name="csrf" value=""#.len()..];
    rest[..rest.find('"').unwrap()].to_string()
}

#[tokio::test]
async fn the_page_is_off_without_a_password() {
    let d = deploy(&[("ONCEBOT__ADMIN__PASSWORD", "")]).await;
    for path in [
        "/admin",
        "/admin/",
        "/admin/jobs/1",
        "/admin/assets/admin.js",
    ] {
        let resp = d
            .http
            .get(d.page(path))
            .basic_auth(USER, Some(PASSWORD))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 404, "{path}");
    }
    let post = d
        .http
        .post(d.page("/admin/jobs/1/resolve"))
        .form(&[("decision", "failed")])
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 404);
    // The rest of the listener is unchanged.
    let health = d.http.get(d.page("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
}

#[tokio::test]
async fn every_path_needs_the_user_and_the_password() {
    let d = deploy(&[]).await;
    let job = d.job_in(1, ALICE, "needs_review").await;
    let paths = [
        "/admin/",
        "/admin/jobs/1",
        "/admin/assets/admin.css",
        "/admin/nothing",
    ];
    for path in paths {
        let none = d.http.get(d.page(path)).send().await.unwrap();
        assert_eq!(none.status(), 401, "{path}");
        assert_eq!(
            none.headers()["www-authenticate"],
            r#"Basic realm="oncebot admin", charset="UTF-8""#
        );
        for (user, password) in [
            (USER, "wrong"),
            ("admin", PASSWORD),
            (USER, ""),
            (USER, &PASSWORD[..PASSWORD.len() - 1]),
        ] {
            let wrong = d
                .http
                .get(d.page(path))
                .basic_auth(user, Some(password))
                .send()
                .await
                .unwrap();
            assert_eq!(wrong.status(), 401, "{path} as {user}:{password}");
            assert!(!wrong.text().await.unwrap().contains("needs_review"));
        }
    }
    // A decision without credentials changes nothing.
    let post = d
        .http
        .post(d.page(&format!("/admin/jobs/{job}/resolve")))
        .header("origin", d.origin())
        .form(&[("decision", "failed")])
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 401);
    assert_eq!(d.store.job(job).await["status"], "needs_review");
    let (status, body) = d.get("/admin/").await;
    assert_eq!(status, 200);
    assert!(body.contains("signed in as operator"), "{body}");
}

#[tokio::test]
async fn a_decision_on_the_page_settles_the_job_tells_the_user_and_the_second_is_refused() {
    let d = deploy(&[]).await;
    let job = d.job_in(1, ALICE, "needs_review").await;
    let (status, page) = d.get("/admin/").await;
    assert_eq!(status, 200);
    let card = &page[page
        .find(&format!(r#"data-job="{job}""#))
        .expect("the job is listed")..];
    for label in ["Mark succeeded", "Mark failed", "Retry"] {
        assert!(card.contains(label), "{label} in {card}");
    }
    assert!(card.contains(&format!(r#"action="/admin/jobs/{job}/resolve""#)));
    let csrf = csrf_of(&page);

    let resp = d.decide(job, "failed", &csrf).await;
    assert_eq!(resp.status(), 303);
    assert_eq!(
        resp.headers()["location"],
        format!("/admin/jobs/{job}?resolved=failed")
    );
    let row = d.store.job(job).await;
    assert_eq!(row["status"], "failed");
    assert_eq!(row["resolved_as"], "failed");
    assert_eq!(
        row["resolution_note"],
        "admin page (operator): checked MoviePilot"
    );
    let mut conn = d.store.conn().await;
    let waiting: Vec<String> = conn.smembers(d.store.keys.review_index()).await.unwrap();
    assert!(waiting.is_empty(), "{waiting:?}");
    d.wait_told(ALICE, &d.resolved_text("failed", job)).await;

    // The page shows the outcome; the job page no longer offers a decision.
    let (status, shown) = d.get(&format!("/admin/jobs/{job}?resolved=failed")).await;
    assert_eq!(status, 200);
    assert!(shown.contains("Resolved as failed"), "{shown}");
    assert!(!shown.contains("Mark succeeded"));

    // A second decision, through any door, is refused; the first stands and nobody is told twice.
    let again = d.decide(job, "retry", &csrf).await;
    assert_eq!(again.status(), 409);
    let body = again.text().await.unwrap();
    assert!(body.contains("the first decision stands"), "{body}");
    assert_eq!(d.store.job(job).await["status"], "failed");
    let told =
        d.tg.sent()
            .into_iter()
            .filter(|m| m.chat_id == ALICE && m.text.starts_with(&d.resolved_text("failed", job)))
            .count();
    assert_eq!(told, 1);
    let cli = d
        .ledger
        .resolve(
            job,
            oncebot::ledger::Resolution::Succeeded,
            "",
            "",
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    assert_eq!(cli, oncebot::ledger::Resolved::NotWaiting(JobState::Failed));

    let missing = d.decide(999, "failed", &csrf).await;
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn retry_on_the_page_puts_the_job_back_on_the_stream() {
    let d = deploy(&[]).await;
    let job = d.job_in(1, ALICE, "needs_review").await;
    let (_, page) = d.get(&format!("/admin/jobs/{job}")).await;
    let before = d.store.stream(&d.store.keys.jobs_stream()).await.len();
    let resp = d.decide(job, "retry", &csrf_of(&page)).await;
    assert_eq!(resp.status(), 303);
    assert_eq!(d.store.job(job).await["status"], "pending");
    assert_eq!(
        d.store.stream(&d.store.keys.jobs_stream()).await.len(),
        before + 1
    );
    d.wait_told(ALICE, &d.resolved_text("retry", job)).await;
}

#[tokio::test]
async fn a_decision_from_another_origin_or_without_the_pages_csrf_field_is_refused() {
    let d = deploy(&[]).await;
    let job = d.job_in(1, ALICE, "needs_review").await;
    let (_, page) = d.get("/admin/").await;
    let csrf = csrf_of(&page);
    let url = d.page(&format!("/admin/jobs/{job}/resolve"));
    let post = |origin: Option<Header>, csrf: String| {
        let mut req = d
            .http
            .post(&url)
            .basic_auth(USER, Some(PASSWORD))
            .form(&[("csrf", csrf.as_str()), ("decision", "succeeded")]);
        if let Some((name, value)) = origin {
            req = req.header(name, value);
        }
        req.send()
    };
    let forged = format!("{}.{}", csrf.split('.').next().unwrap(), "00".repeat(32));
    // A field signed for another deployment's password.
    let other = deploy(&[("ONCEBOT__ADMIN__PASSWORD", "another-password-16")]).await;
    other.job_in(1, ALICE, "needs_review").await;
    let other_page = other
        .http
        .get(other.page("/admin/"))
        .basic_auth(USER, Some("another-password-16"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let other_password = csrf_of(&other_page);
    let cases: Vec<(&str, Option<Header>, String)> = vec![
        ("no csrf field", Some(("origin", d.origin())), String::new()),
        ("a forged csrf field", Some(("origin", d.origin())), forged),
        (
            "a csrf field of another password",
            Some(("origin", d.origin())),
            other_password,
        ),
        (
            "another site's origin",
            Some(("origin", "http://evil.example".into())),
            csrf.clone(),
        ),
        (
            "another site's referer",
            Some(("referer", "http://evil.example/admin/".into())),
            csrf.clone(),
        ),
        (
            "this host and port over https (the listener is plain http)",
            Some(("origin", d.origin().replacen("http://", "https://", 1))),
            csrf.clone(),
        ),
        (
            "this host over https by the referer",
            Some((
                "referer",
                format!("{}/admin/", d.origin().replacen("http://", "https://", 1)),
            )),
            csrf.clone(),
        ),
        (
            "an opaque origin",
            Some(("origin", "null".into())),
            csrf.clone(),
        ),
        ("neither origin nor referer", None, csrf.clone()),
    ];
    let replies = d.store.stream(&d.store.keys.replies_stream()).await.len();
    for (what, origin, field) in cases {
        let resp = post(origin, field).await.unwrap();
        assert_eq!(resp.status(), 403, "{what}");
        let body = resp.text().await.unwrap();
        assert!(body.contains("Refused"), "{what}: {body}");
        assert_eq!(d.store.job(job).await["status"], "needs_review", "{what}");
    }
    assert_eq!(
        d.store.stream(&d.store.keys.replies_stream()).await.len(),
        replies,
        "nobody was told anything"
    );
    // The same form from the page itself goes through, with a Referer only as well.
    let ok = post(
        Some(("referer", format!("{}/admin/", d.origin()))),
        csrf.clone(),
    )
    .await
    .unwrap();
    assert_eq!(ok.status(), 303);
    assert_eq!(d.store.job(job).await["status"], "succeeded");
}

#[tokio::test]
async fn read_only_shows_everything_and_offers_and_takes_no_action() {
    let d = deploy(&[("ONCEBOT__ADMIN__READ_ONLY", "true")]).await;
    let job = d.job_in(1, ALICE, "needs_review").await;
    for path in ["/admin/".to_string(), format!("/admin/jobs/{job}")] {
        let (status, body) = d.get(&path).await;
        assert_eq!(status, 200);
        assert!(body.contains("read-only"), "{path}");
        assert!(
            body.contains(&format!(r#"data-job="{job}""#)),
            "{path}: the job is shown"
        );
        for hidden in [
            "Mark succeeded",
            "Mark failed",
            ">Retry<",
            r#"method="post""#,
            "csrf",
        ] {
            assert!(!body.contains(hidden), "{path} shows {hidden}");
        }
    }
    // A form posted anyway, with a field a writable page of the same password signed, is refused.
    let writable = deploy(&[]).await;
    writable.job_in(1, BOB, "needs_review").await;
    let csrf = csrf_of(&writable.get("/admin/").await.1);
    let resp = d.decide(job, "succeeded", &csrf).await;
    assert_eq!(resp.status(), 403);
    assert!(resp.text().await.unwrap().contains("read-only"));
    assert_eq!(d.store.job(job).await["status"], "needs_review");
}

#[tokio::test]
async fn the_page_shows_counts_streams_consumers_and_filters_recent_jobs() {
    let d = deploy(&[]).await;
    d.job_in(1, ALICE, "succeeded").await;
    d.job_in(2, ALICE, "failed").await;
    d.job_in(3, BOB, "retry_wait").await;
    let review = d.job_in(4, BOB, "needs_review").await;
    let running = d.job_in(5, ALICE, "running").await;
    let pending = d.job_in(6, ALICE, "pending").await;
    // A consumer that died with an entry and is still listed: shown dead, with its entry.
    d.dead_worker_holding(7, "worker-gone").await;

    let (status, page) = d.get("/admin/").await;
    assert_eq!(status, 200);
    for (state, n) in [
        ("pending", 2),
        ("running", 1),
        ("retry_wait", 1),
        ("succeeded", 1),
        ("failed", 1),
        ("needs_review", 1),
    ] {
        assert!(
            page.contains(&format!(r#"data-state="{state}" class="{state}">{n}<"#)),
            "{state} = {n} in {page}"
        );
    }
    assert!(page.contains(r#"id="needs-review-total">1<"#));
    assert!(page.contains(&format!(r#"article class="review" data-job="{review}""#)));
    // Streams: jobs has the entries of every job; the dispatcher group on the replies.
    assert!(page.contains(r#"data-stream="jobs""#));
    let row = |name: &str| {
        let at = page
            .find(&format!(r#"data-consumer="{name}""#))
            .unwrap_or_else(|| panic!("consumer {name} in {page}"));
        page[at..at + page[at..].find("</tr>").unwrap()].to_string()
    };
    let gone = row("worker-gone");
    assert!(gone.contains(r#"class="dead""#), "{gone}");
    assert!(gone.contains("<td>1</td>"), "one pending entry: {gone}");
    // The dispatcher of this very process renews its key.
    let dispatcher = page
        .match_indices(r#"<td>dispatchers</td>"#)
        .map(|(at, _)| &page[at..at + page[at..].find("</tr>").unwrap()])
        .next()
        .expect("a dispatcher is listed")
        .to_string();
    assert!(dispatcher.contains(r#"class="alive""#), "{dispatcher}");

    // The filter: state, chat and id, alone and together.
    let listed = |html: &str| -> Vec<u64> {
        let recent = &html[html.find(r#"id="recent""#).unwrap()..];
        recent
            .match_indices(r#"<tr data-job=""#)
            .map(|(at, m)| {
                let rest = &recent[at + m.len()..];
                rest[..rest.find('"').unwrap()].parse().unwrap()
            })
            .collect()
    };
    assert_eq!(listed(&page).len(), 7);
    let (_, by_state) = d.get("/admin/?state=running&chat=&id=").await;
    assert_eq!(listed(&by_state), vec![running]);
    assert!(by_state.contains(r#"<option value="running" selected>"#));
    let (_, by_chat) = d.get(&format!("/admin/?state=&chat={BOB}&id=")).await;
    assert_eq!(listed(&by_chat), vec![7, review, 3]);
    let (_, by_id) = d.get(&format!("/admin/?state=&chat=&id={pending}")).await;
    assert_eq!(listed(&by_id), vec![pending]);
    let (_, none) = d
        .get(&format!("/admin/?state=failed&chat=&id={pending}"))
        .await;
    assert!(listed(&none).is_empty());
    let (status, bad) = d.get("/admin/?state=done&chat=x").await;
    assert_eq!(status, 400);
    assert!(bad.contains("is not a job state"), "{bad}");

    // One job: every field and its timeline.
    let (status, job_page) = d.get(&format!("/admin/jobs/{running}")).await;
    assert_eq!(status, 200);
    for field in [
        "idempotency_key",
        "owner",
        "entry",
        "started_at",
        "attempts",
    ] {
        assert!(job_page.contains(&format!("<th>{field}</th>")), "{field}");
    }
    assert!(job_page.contains(r#"class="timeline""#));
    let (status, _) = d.get("/admin/jobs/424242").await;
    assert_eq!(status, 404);
}

/// Issue 42: a stream Redis lost, or its group, is a stream nobody reads, not an unavailable
/// page (the missing stream is told apart by asking, not by the words of Redis's error).
#[tokio::test]
async fn the_page_shows_a_stream_or_group_redis_lost_as_read_by_nobody() {
    let d = deploy(&[]).await;
    let mut conn = d.store.conn().await;
    let jobs = keys::Stream::Jobs.key(&d.store.keys);
    d.dead_worker_holding(1, "worker-gone").await;
    let (_, page) = d.get("/admin/").await;
    assert!(
        page.contains("<td>1</td>"),
        "the entry is shown pending: {page}"
    );

    let _: () = redis::cmd("XGROUP")
        .arg("DESTROY")
        .arg(&jobs)
        .arg(keys::Stream::Jobs.group())
        .query_async(&mut conn)
        .await
        .unwrap();
    let (status, page) = d.get("/admin/").await;
    assert_eq!(status, 200, "a stream without its group: {page}");
    assert!(page.contains(r#"data-consumer="worker-gone""#), "{page}");

    let _: () = conn.del(&jobs).await.unwrap();
    let (status, page) = d.get("/admin/").await;
    assert_eq!(status, 200, "no stream at all: {page}");
    assert!(page.contains(r#"data-consumer="worker-gone""#), "{page}");
}

/// Issue 22: the page lists each allowed user with their role, MoviePilot name and its source,
/// as `oncebot users` does.
#[tokio::test]
async fn the_page_lists_the_users_and_where_each_identity_came_from() {
    let users = format!("{ALICE}=alice:viewer");
    let d = deploy(&[("ONCEBOT__TELEGRAM__USERS", &users)]).await;
    let (status, page) = d.get("/admin/").await;
    assert_eq!(status, 200);
    let users = &page[page.find("<section id=\"users\"").expect("a users section")..];
    let users = &users[..users.find("</section>").unwrap()];
    assert!(
        users.contains(&format!(
            "<td>{ALICE}</td><td>viewer</td><td>alice</td><td>setting</td>"
        )),
        "{users}"
    );
    assert!(
        users.contains(&format!(
            "<td>{BOB}</td><td>user</td><td>-</td><td>unmapped</td>"
        )),
        "{users}"
    );
    assert!(users.contains("has not been read yet"), "{users}");

    // MoviePilot's mapping as a worker's read stores it (users.lua's fields): Bob is a
    // MoviePilot superuser, Alice's MoviePilot entry loses to the setting.
    let key = d.store.keys.users_moviepilot();
    let mut conn = d.store.conn().await;
    let _: () = redis::cmd("HSET")
        .arg(&key)
        .arg(&["state", "ok", "refreshed_at", "1764700000000", "by", "w"])
        .arg(&[
            BOB.to_string(),
            "bob:admin".into(),
            ALICE.to_string(),
            "alice-mp:user".into(),
            format!("permissions:{BOB}"),
            r#"{"superuser":true,"discovery":true,"search":true,"subscribe":false,"manage":false}"#.into(),
            format!("permissions:{ALICE}"),
            r#"{"superuser":false,"discovery":true,"search":false,"subscribe":true,"manage":false}"#.into(),
        ])
        .query_async(&mut conn)
        .await
        .unwrap();
    let (_, page) = d.get("/admin/").await;
    let users = &page[page.find("<section id=\"users\"").unwrap()..];
    let users = &users[..users.find("</section>").unwrap()];
    // Issue 43: the MoviePilot permissions read, in a cell of their own, whichever source
    // decides the role (after the grant's cell: none here).
    for row in [
        format!(
            "<td>{ALICE}</td><td>viewer</td><td>alice</td><td>setting</td><td>-</td><td class=\"permissions\">+discovery -search +subscribe -manage</td>"
        ),
        format!(
            "<td>{BOB}</td><td>admin</td><td>bob</td><td>moviepilot</td><td>-</td><td class=\"permissions\">superuser</td>"
        ),
    ] {
        assert!(users.contains(&row), "{users}");
    }
    assert!(
        users.contains(
            "MoviePilot&#39;s mapping read 2025-12-02T18:26:40Z: 2 Telegram id(s) mapped"
        ) || users
            .contains("MoviePilot's mapping read 2025-12-02T18:26:40Z: 2 Telegram id(s) mapped"),
        "{users}"
    );
}

#[tokio::test]
async fn a_users_text_is_escaped_on_every_page() {
    let d = deploy(&[]).await;
    let job = d
        .admit(
            1,
            ALICE,
            Command::Search,
            r#"<img src=x onerror="alert(1)">&"#,
        )
        .await;
    for path in ["/admin/".to_string(), format!("/admin/jobs/{job}")] {
        let (_, body) = d.get(&path).await;
        assert!(!body.contains("<img src=x"), "{path}");
        assert!(
            body.contains("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;"),
            "{path}: {}",
            &body[body.find("img src").unwrap_or(0).saturating_sub(200)..]
        );
    }
}

#[tokio::test]
async fn no_page_shows_a_secret() {
    let d = deploy(&[]).await;
    for (i, state) in [
        "succeeded",
        "failed",
        "retry_wait",
        "needs_review",
        "running",
    ]
    .into_iter()
    .enumerate()
    {
        d.job_in(i as i64 + 1, ALICE, state).await;
    }
    let review = d.job_in(10, BOB, "needs_review").await;
    // Pending, so made after the jobs whose entries are delivered.
    let releases = d.releases_with_cookie(11).await;
    let (_, page) = d.get("/admin/").await;
    d.decide(review, "succeeded", &csrf_of(&page)).await;
    // Every page there is, and the answers to mistakes.
    let mut paths: Vec<String> = vec![
        "/admin/".into(),
        "/admin/?state=needs_review".into(),
        format!("/admin/?chat={ALICE}"),
        "/admin/?state=bogus".into(),
        "/admin/assets/admin.js".into(),
        "/admin/assets/admin.css".into(),
        "/admin/jobs/9999".into(),
        "/admin/missing".into(),
    ];
    paths.extend((1..=12).map(|id| format!("/admin/jobs/{id}")));
    let token = d.tg.token();
    let secrets = [
        token.as_str(),
        PASSWORD,
        MP_API_KEY,
        MP_PASSWORD,
        SECRET,
        "cookie-MARKER-3",
        "MARKER",
    ];
    let mut bodies = Vec::new();
    for path in &paths {
        let resp = d
            .http
            .get(d.page(path))
            .basic_auth(USER, Some(PASSWORD))
            .send()
            .await
            .unwrap();
        let headers = format!("{:?}", resp.headers());
        bodies.push((path.clone(), headers + &resp.text().await.unwrap()));
    }
    let refused = d.decide(review, "failed", &csrf_of(&page)).await;
    bodies.push(("a refused decision".into(), refused.text().await.unwrap()));
    for (path, body) in &bodies {
        for secret in secrets {
            assert!(!body.contains(secret), "{path} shows {secret:?}");
        }
    }
    let (_, shown) = d.get(&format!("/admin/jobs/{releases}")).await;
    assert!(
        shown.contains("releases"),
        "the release job itself is shown"
    );
    // The cookie is in the ledger, where the page does not look.
    let mut conn = d.store.conn().await;
    let stored: std::collections::HashMap<String, String> =
        conn.hgetall(d.store.keys.releases(releases)).await.unwrap();
    assert!(stored.values().any(|v| v.contains("cookie-MARKER-3")));
}

#[tokio::test]
async fn admin_listen_serves_the_page_alone_on_its_own_address() {
    let d = deploy(&[("ONCEBOT__ADMIN__LISTEN", "127.0.0.1:0")]).await;
    let admin = d.admin_addr.expect("the page has its own address");
    assert_ne!(admin, d.http_addr);
    let on_http = d
        .http
        .get(format!("http://{}/admin/", d.http_addr))
        .basic_auth(USER, Some(PASSWORD))
        .send()
        .await
        .unwrap();
    assert_eq!(on_http.status(), 404);
    let (status, body) = d.get("/admin/").await;
    assert_eq!(status, 200);
    assert!(body.contains("Jobs by state"));
    let probe = d
        .http
        .get(format!("http://{admin}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(probe.status(), 404, "only the page is served there");
}
