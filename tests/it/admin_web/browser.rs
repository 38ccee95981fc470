//! The operator's page in a real browser: Debian's headless `chromium`, driven by
//! `chromedriver` over the W3C WebDriver HTTP API (plain reqwest calls). The page is loaded
//! against a running oncebot with jobs in every state; the test reads what is rendered, watches
//! the counts refresh by themselves, clicks **Mark succeeded** and checks the ledger.
//!
//! `scripts/test` installs `chromium` and `chromium-driver` when missing (as root); without them
//! this test fails (it does not skip), as the Redis tests do without `redis-server`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use super::{PASSWORD, USER, deploy};
use crate::support::{ALICE, BOB, DEADLINE, eventually};

/// The W3C name of an element reference in WebDriver answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The flags that make Chromium run headless in a container without touching the network.
const CHROMIUM_FLAGS: [&str; 9] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1500",
];

fn on_path(program: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(program))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!("{program} is not installed: apt-get install chromium chromium-driver (scripts/test does, as root)")
        })
}

/// The port chromedriver says it listens on ("ChromeDriver was started successfully on port
/// 41234."); the rest of its stdout is read and dropped, so the pipe never fills.
async fn driver_port(stdout: tokio::process::ChildStdout) -> u16 {
    use tokio::io::AsyncBufReadExt as _;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut seen = String::new();
    let port = tokio::time::timeout(DEADLINE, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let port = line
                .split_once("started successfully on port ")
                .and_then(|(_, rest)| rest.trim_end_matches('.').parse().ok());
            seen.push_str(&line);
            seen.push('\n');
            if port.is_some() {
                return port;
            }
        }
        None
    })
    .await;
    let Ok(Some(port)) = port else {
        panic!("chromedriver did not say its port; its stdout:\n{seen}");
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    port
}

/// A chromedriver process and one browser session in it; both end when dropped.
struct Browser {
    http: reqwest::Client,
    session: String,
    /// The session was ended by [`Browser::quit`].
    ended: bool,
    _driver: tokio::process::Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    async fn start() -> Browser {
        let chromium = on_path("chromium");
        let chromedriver = on_path("chromedriver");
        // Port 0: chromedriver binds a port the system picks and says which on stdout.
        let mut driver = tokio::process::Command::new(chromedriver)
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let port = driver_port(driver.stdout.take().unwrap()).await;
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        eventually("chromedriver to be ready", DEADLINE, || {
            let req = http.get(format!("{base}/status")).send();
            async move {
                let status: Value = req.await.ok()?.json().await.ok()?;
                status["value"]["ready"].as_bool().filter(|r| *r)
            }
        })
        .await;
        let profile = tempfile::tempdir().unwrap();
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|f| f.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        let created: Value = http
            .post(format!("{base}/session"))
            .json(&json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {"binary": chromium, "args": args},
            }}}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no browser session: {created}"))
            .to_string();
        Browser {
            http,
            session: format!("{base}/session/{session}"),
            ended: false,
            _driver: driver,
            _profile: profile,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}{path}", self.session));
        if let Some(body) = body {
            req = req.json(&body);
        }
        let answer: Value = req.send().await.unwrap().json().await.unwrap();
        answer["value"].clone()
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> Value {
        self.call(reqwest::Method::GET, path, None).await
    }

    /// Every request of this browser carries basic-auth credentials (DevTools protocol through
    /// chromedriver), so the page, its assets and its refreshes are signed in.
    async fn sign_in(&self, user: &str, password: &str) {
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        self.post(
            "/goog/cdp/execute",
            json!({"cmd": "Network.enable", "params": {}}),
        )
        .await;
        let set = self
            .post(
                "/goog/cdp/execute",
                json!({"cmd": "Network.setExtraHTTPHeaders",
                       "params": {"headers": {"Authorization": format!("Basic {auth}")}}}),
            )
            .await;
        assert!(set.get("error").is_none(), "{set}");
    }

    /// Navigates and waits for the page's load (WebDriver's normal page-load strategy).
    async fn goto(&self, url: &str) {
        let done = self.post("/url", json!({"url": url})).await;
        assert!(done.is_null(), "navigating to {url}: {done}");
    }

    /// The page's current DOM, for failure messages.
    async fn source(&self) -> String {
        self.get("/source")
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    async fn url(&self) -> String {
        self.get("/url").await.as_str().unwrap().to_string()
    }

    async fn find_all(&self, css: &str) -> Vec<String> {
        let found = self
            .post("/elements", json!({"using": "css selector", "value": css}))
            .await;
        found
            .as_array()
            .map(|els| {
                els.iter()
                    .filter_map(|e| e[ELEMENT].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The rendered text of the first element matching `css`, if there is one.
    async fn text(&self, css: &str) -> Option<String> {
        let el = self.find_all(css).await.into_iter().next()?;
        self.get(&format!("/element/{el}/text"))
            .await
            .as_str()
            .map(str::to_string)
    }

    async fn texts(&self, css: &str) -> Vec<String> {
        let mut out = Vec::new();
        for el in self.find_all(css).await {
            out.push(
                self.get(&format!("/element/{el}/text"))
                    .await
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
        }
        out
    }

    /// Clicks the first element matching `css`. The refresh may swap its section in between
    /// finding and clicking (a stale element): it is found again.
    async fn click(&self, css: &str) {
        eventually(&format!("a click on {css}"), DEADLINE, || async move {
            let el = self.find_all(css).await.into_iter().next()?;
            let answer = self.post(&format!("/element/{el}/click"), json!({})).await;
            answer.is_null().then_some(())
        })
        .await;
    }

    async fn screenshot(&self, path: &Path) {
        let png = self.get("/screenshot").await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap())
            .unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

impl Browser {
    /// Ends the session: Chromium quits; chromedriver is stopped when dropped.
    async fn quit(mut self) {
        let _ = self.http.delete(&self.session).send().await;
        self.ended = true;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        // A failed assertion left the session open. Chromium is not chromedriver's to take down
        // when chromedriver is killed, so end the session first, synchronously (plain HTTP/1.1;
        // the runtime may be going away), then chromedriver is killed with the child.
        let Some(rest) = self.session.strip_prefix("http://") else {
            return;
        };
        let Some((host, path)) = rest.split_once('/') else {
            return;
        };
        if let Ok(mut conn) = std::net::TcpStream::connect(host) {
            use std::io::{Read as _, Write as _};
            let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
            let _ = write!(
                conn,
                "DELETE /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = conn.read_to_end(&mut Vec::new());
        }
    }
}

#[tokio::test]
async fn in_chromium_the_page_shows_every_state_refreshes_and_a_click_settles_a_job() {
    let d = deploy(&[]).await;
    let succeeded = d.job_in(1, ALICE, "succeeded").await;
    d.job_in(2, ALICE, "failed").await;
    d.job_in(3, BOB, "retry_wait").await;
    let review = d.job_in(4, ALICE, "needs_review").await;
    let other_review = d.job_in(5, BOB, "needs_review").await;
    d.job_in(6, BOB, "running").await;
    let pending = d
        .admit(
            7,
            ALICE,
            oncebot::commands::Command::Search,
            "<b>Dune</b> & co",
        )
        .await;

    let browser = Browser::start().await;
    browser.sign_in(USER, PASSWORD).await;
    browser.goto(&d.page("/admin/")).await;

    // Counts by state, under the ledger's own names.
    let heads = browser.texts("table.counts th").await;
    assert_eq!(
        heads,
        [
            "pending",
            "running",
            "retry_wait",
            "succeeded",
            "failed",
            "needs_review"
        ],
        "{}",
        browser.source().await
    );
    for (state, n) in [
        ("pending", "1"),
        ("running", "1"),
        ("retry_wait", "1"),
        ("succeeded", "1"),
        ("failed", "1"),
        ("needs_review", "2"),
    ] {
        let shown = browser.text(&format!(r#"td[data-state="{state}"]"#)).await;
        assert_eq!(shown.as_deref(), Some(n), "{state}");
    }
    // The jobs waiting for a person come first, each with its three decisions.
    let sections: Vec<String> = browser.texts("main > section > h2").await;
    assert!(sections[1].starts_with("needs_review"), "{sections:?}");
    for job in [review, other_review] {
        let labels = browser
            .texts(&format!(r#"article[data-job="{job}"] button"#))
            .await;
        assert_eq!(
            labels,
            ["Mark succeeded", "Mark failed", "Retry"],
            "job {job}"
        );
    }
    // A user's text is shown as text, never as markup.
    let args = browser
        .text(&format!(r#"#recent tr[data-job="{pending}"] td.args"#))
        .await;
    assert_eq!(args.as_deref(), Some("<b>Dune</b> & co"));
    assert!(browser.find_all("#recent td.args b").await.is_empty());
    let statuses = browser.texts("#recent td.status").await;
    assert_eq!(statuses.len(), 7, "{statuses:?}");
    // The stylesheet and the script came from oncebot itself (no CDN), under its CSP.
    let header_bg = browser
        .post(
            "/execute/sync",
            json!({"script": "return getComputedStyle(document.querySelector('header')).backgroundColor", "args": []}),
        )
        .await;
    assert_eq!(header_bg, "rgb(29, 35, 42)", "admin.css applied");

    // The counts refresh by themselves: a job admitted now appears without a reload.
    let newer = d
        .admit(8, BOB, oncebot::commands::Command::Subscriptions, "")
        .await;
    eventually("the page to refresh its counts", DEADLINE, || async {
        let n = browser.text(r#"td[data-state="pending"]"#).await?;
        (n == "2").then_some(())
    })
    .await;
    assert!(
        browser.url().await.ends_with("/admin/"),
        "refreshed in place, not navigated"
    );
    assert!(
        browser
            .find_all(&format!(r#"#recent tr[data-job="{newer}"]"#))
            .await
            .is_empty(),
        "the recent list is the operator's to reload (it may be filtered)"
    );
    let shot = std::env::temp_dir().join(format!("oncebot-admin-{}.png", std::process::id()));
    browser.screenshot(&shot).await;
    eprintln!("screenshot of the operator page: {}", shot.display());

    // Click "Mark succeeded" on the first job waiting: a plain form POST, then the job's page.
    browser
        .click(&format!(r#"article[data-job="{review}"] button.succeeded"#))
        .await;
    let expected = d.page(&format!("/admin/jobs/{review}?resolved=succeeded"));
    eventually("the job's page after the decision", DEADLINE, || async {
        (browser.url().await == expected).then_some(())
    })
    .await;
    assert_eq!(d.store.job(review).await["status"], "succeeded");
    assert_eq!(d.store.job(other_review).await["status"], "needs_review");
    assert_eq!(
        d.store.job(review).await["resolution_note"],
        "admin page (operator)"
    );
    let notice = browser.text("p.notice").await;
    assert_eq!(
        notice.as_deref(),
        Some("Resolved as succeeded; the user was told.")
    );
    assert!(browser.find_all("form.resolve").await.is_empty());
    d.wait_told(ALICE, &d.resolved_text("succeeded", review))
        .await;
    let job_shot =
        std::env::temp_dir().join(format!("oncebot-admin-job-{}.png", std::process::id()));
    browser.screenshot(&job_shot).await;
    eprintln!("screenshot of the job page: {}", job_shot.display());

    // A finished job's page offers nothing to decide.
    browser
        .goto(&d.page(&format!("/admin/jobs/{succeeded}")))
        .await;
    assert_eq!(
        browser.text("h2 span.status").await.as_deref(),
        Some("succeeded")
    );
    assert!(browser.find_all("form.resolve").await.is_empty());
    browser.quit().await;
}
