//! Releases side by side (docs/releases.md), through real processes and a real Redis: a worker
//! leaves a job of a kind it does not run for a newer one, and its own reclaims do not keep it
//! from that one; a new kind is answered "being upgraded" while a worker of a release that
//! registers nothing lives, and admitted once it is gone; a key layout newer than this
//! release's stops `serve` with exit 2; a SIGKILLed process leaves the registry with its
//! liveness key.

use std::time::Duration;

use oncebot::commands::Command;
use oncebot::ledger::{
    Admission, AdmissionAction, Admitted, AttemptLimits, Beat, ClaimTexts, Claimed, ConsumerRole,
    JobSpec, JobState, LEFT_ENTRY_IDLE, Ledger, LiveProcess, Outcome, Owner, Taken, Taker,
    TokenAction, TokenGroup, Trim,
};
use oncebot::moviepilot::Dialect;
use oncebot::vocabulary::{Recovery, Role};
use oncebot_tools::sim::telegram::callback_update;

use crate::support::app::{run_oncebot, settings, spawn_ledger};
use crate::support::rig::{RECLAIM_IDLE_MS, Rig};
use crate::support::{ALICE, Store, checked_transitions, deliver, eventually, hand_over};

const DEADLINE: Duration = Duration::from_secs(20);

/// A ledger of the rig's deployment, for what a test does as another process would.
fn ledger(rig: &Rig) -> Ledger {
    let settings = settings(&rig.redis.url(), &[]);
    Ledger::connect(
        &settings,
        oncebot::i18n::Texts::new(settings.telegram.locale).for_ledger(),
    )
    .unwrap()
}

/// A job of `command`, admitted as ingress would admit one.
async fn admit(ledger: &Ledger, update_id: i64, command: &'static str) -> u64 {
    let admission = Admission {
        update_id,
        chat_id: ALICE,
        user_id: ALICE,
        message_id: Some(update_id),
        thread_id: None,
        requester: None,
        role: Role::Admin,
        action: AdmissionAction::Job(JobSpec {
            command,
            args: String::new(),
            idem: String::new(),
            window: Duration::ZERO,
            recovery: Recovery::Rerun,
            least_role: Role::Viewer,
        }),
    };
    match ledger.admit(&admission).await.unwrap() {
        Admitted::New { job_id } => job_id,
        other => panic!("{command}: {other:?}"),
    }
}

/// `XPENDING` of the jobs stream: (entry, consumer, times delivered) of each pending entry.
async fn pending(rig: &Rig) -> Vec<(String, String, u64)> {
    let mut conn = rig.store.conn().await;
    let rows: Vec<(String, String, u64, u64)> = redis::cmd("XPENDING")
        .arg("{oncebot}:v1:stream:jobs")
        .arg("workers")
        .arg("-")
        .arg("+")
        .arg(100)
        .query_async(&mut conn)
        .await
        .unwrap();
    rows.into_iter().map(|(e, c, _, n)| (e, c, n)).collect()
}

/// A job of a kind the running worker does not know stays pending and unacknowledged, never
/// failed, while that worker runs what it knows (a job admitted after it); its own reclaims
/// bring the entry back to it again and again, and hand it back each time, so a newer worker's
/// very next reclaim takes it and runs it.
#[tokio::test]
async fn a_worker_leaves_an_unknown_kind_for_a_newer_worker_and_never_fails_it() {
    let rig = Rig::new(Dialect::V2).await;
    let bot = rig.start(None).await;
    let l = ledger(&rig);
    let unknown = admit(&l, 1, "frobnicate").await;
    let known = admit(&l, 2, "jobs").await;
    rig.job_in(known, "succeeded", DEADLINE).await;
    bot.wait_for_stderr("left for a newer worker", DEADLINE)
        .await;
    // The worker's reclaim (every half of reclaim_idle_ms) has taken the entry back at least
    // once since its read, and left it again.
    let (entry, _) = eventually("the worker to reclaim the entry", DEADLINE, || async {
        let p = pending(&rig).await;
        let row = p.into_iter().next()?;
        (row.2 >= 3).then_some((row.0, row.1))
    })
    .await;
    let job = rig.store.job(unknown).await;
    assert_eq!(job["status"], "pending", "{job:?}");
    assert_eq!(job["attempts"], "0", "{job:?}");
    assert_eq!(
        rig.metric("oncebot_jobs_left_for_newer_total{kind=\"frobnicate\"}")
            .await
            .as_deref(),
        Some("1"),
        "counted once per entry, however often it came back"
    );

    // A newer worker: its first reclaim, right after the old one's, takes the entry.
    let newer = AttemptLimits {
        max_recoveries: 2,
        retention: Duration::from_secs(3600),
        kinds: "|jobs|frobnicate|",
    };
    let texts = ClaimTexts {
        held: "held".into(),
        failed: "failed".into(),
    };
    // Within a second: between the old worker's XAUTOCLAIM and its claim's hand-back (two
    // calls, milliseconds apart) the entry is not idle; without the hand-back it would be idle
    // long enough almost never, as that worker reclaims every half of reclaim_idle_ms.
    let taken = eventually(
        "the newer worker's reclaim",
        Duration::from_secs(1),
        || async {
            let taken = l
                .reclaim_idle_entries("newer", Duration::from_millis(RECLAIM_IDLE_MS), 10)
                .await
                .unwrap();
            (!taken.is_empty()).then_some(taken)
        },
    )
    .await;
    assert_eq!(
        taken.iter().map(|e| e.entry.as_str()).collect::<Vec<_>>(),
        [entry.as_str()]
    );
    let claimed = l
        .claim_all(&[(unknown, entry.clone())], "newer", &newer, &texts)
        .await
        .unwrap();
    match claimed.into_iter().next().unwrap().unwrap() {
        Claimed::Run { attempt, job, .. } => {
            assert_eq!((attempt.attempt, job.command.as_str()), (1, "frobnicate"));
        }
        other => panic!("the newer worker's claim: {other:?}"),
    }
    assert_eq!(rig.store.job(unknown).await["owner"], "newer");
    drop(bot);
}

/// The old release's worker as 1170969 beats: its liveness key holds `1`, no registration.
async fn older_worker_beats(l: &Ledger, ttl: Duration) {
    let beat = Beat {
        consumer: "old-worker",
        ttl,
        list: true,
        take: 0,
        forget_after: Duration::ZERO,
        promote: 0,
        registration: "1",
    };
    l.beat(&[ConsumerRole::Worker], &beat).await.unwrap();
}

/// `/version` is the kind 0.2.0 adds: while a worker that registers nothing lives, it gets the
/// "being upgraded" answer and makes no job; once that worker is gone, it is admitted and its
/// answer lists the live processes by role and release.
#[tokio::test]
async fn a_new_kind_waits_for_the_older_workers_to_go_then_version_lists_the_processes() {
    let rig = Rig::new(Dialect::V2).await;
    let l = ledger(&rig);
    older_worker_beats(&l, Duration::from_secs(8)).await;
    let _ingress = rig.start_roles(&["ingress"], None).await;
    rig.send(1, "/version").await;
    let reply = eventually("the upgrade answer", DEADLINE, || async {
        rig.store.replies().await.into_iter().next()
    })
    .await;
    assert!(
        reply["text"].contains("The bot is being upgraded"),
        "{reply:?}"
    );
    assert!(
        rig.store.job_ids().await.is_empty(),
        "no job while it lives"
    );
    assert_eq!(rig.store.update(1).await.as_deref(), Some("-"));
    let older: Vec<LiveProcess> = l.live_processes().await.unwrap();
    assert!(
        older
            .iter()
            .any(|p| p.id == "old-worker" && p.worker && p.registration.is_none()),
        "{older:?}"
    );

    let _worker = rig.start_worker_only().await;
    // The old worker stops beating; /version is admitted once the gate's view sees it gone.
    let mut update_id = 1;
    let job = eventually("/version to be admitted", DEADLINE, || {
        update_id += 1;
        let id = update_id;
        let rig = &rig;
        async move {
            rig.send(id, "/version").await;
            rig.store.job_ids().await.into_iter().next()
        }
    })
    .await;
    let done = rig.job_in(job, "succeeded", DEADLINE).await;
    assert_eq!(done["command"], "version");
    let text = rig
        .store
        .replies()
        .await
        .into_iter()
        .find(|r| r.get("job_id").map(String::as_str) == Some(&job.to_string()))
        .expect("the job's reply")["text"]
        .clone();
    let this = oncebot::versions::VERSION;
    assert!(text.contains(&format!("oncebot {this}")), "{text}");
    assert!(text.contains(&format!("· ingress · {this}")), "{text}");
    assert!(text.contains(&format!("· worker · {this}")), "{text}");
    assert!(!text.contains("old-worker"), "{text}");
}

/// A key layout newer than this release's: `serve` refuses to start, exit 2, one line naming
/// both layouts; the layout it finds missing it writes.
#[tokio::test]
async fn a_newer_key_layout_stops_serve_with_exit_2_naming_both_layouts() {
    let rig = Rig::new(Dialect::V2).await;
    let _ingress = rig.start_roles(&["ingress"], None).await;
    assert_eq!(
        rig.store.get("{oncebot}:layout").await.as_deref(),
        Some("1")
    );

    let mut conn = rig.store.conn().await;
    let _: () = redis::cmd("SET")
        .arg("{oncebot}:layout")
        .arg(2)
        .query_async(&mut conn)
        .await
        .unwrap();
    let env: Vec<(&str, &str)> = rig
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let out = run_oncebot(&["serve", "--role", "ingress"], &env).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let last = out.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("oncebot: Redis holds oncebot's key layout v2"),
        "{}",
        out.stderr
    );
    assert!(last.contains("knows layout v1 only"), "{last}");
}

/// Every process registers: a worker with its heartbeat, an ingress on its own; each one
/// SIGKILLed leaves the registry once its liveness key expires.
#[tokio::test]
async fn a_sigkilled_process_leaves_the_registry_within_its_liveness_expiry() {
    let rig = Rig::new(Dialect::V2).await;
    let l = ledger(&rig);
    let mut ingress = rig.start_roles(&["ingress"], None).await;
    let mut worker = rig.start_worker_only().await;
    let live = eventually("both registered", DEADLINE, || async {
        let live = l.live_processes().await.ok()?;
        (live.len() == 2).then_some(live)
    })
    .await;
    for p in &live {
        let r = p.registration.as_ref().expect("registered");
        assert_eq!(r.version, oncebot::versions::VERSION);
        assert_eq!(r.layout, 1);
    }
    let roles: Vec<Vec<String>> = live
        .iter()
        .map(|p| p.registration.clone().unwrap().roles)
        .collect();
    assert!(roles.contains(&vec!["ingress".to_string()]), "{roles:?}");
    assert!(roles.contains(&vec!["worker".to_string()]), "{roles:?}");
    let worker_kinds = &live.iter().find(|p| p.worker).unwrap().registration;
    assert!(
        worker_kinds
            .as_ref()
            .unwrap()
            .kinds
            .contains(&"version".to_string())
    );

    for child in [&mut ingress, &mut worker] {
        child.sigkill().await;
    }
    // The liveness expiry is 3.5 s by default: gone within seconds.
    let started = std::time::Instant::now();
    eventually(
        "the registry to be empty",
        Duration::from_secs(10),
        || async { l.live_processes().await.ok()?.is_empty().then_some(()) },
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    let members: Vec<String> = redis::cmd("SMEMBERS")
        .arg("{oncebot}:v1:processes")
        .query_async(&mut rig.store.conn().await)
        .await
        .unwrap();
    assert!(members.is_empty(), "{members:?}");
}

/// A button whose job is of the new kind is held back the same way while an older worker
/// lives: the tap is answered "being upgraded", makes no job and leaves the button working, so
/// the same button makes its job once that worker is gone.
#[tokio::test]
async fn a_button_of_a_new_kind_makes_its_job_only_once_the_older_worker_is_gone() {
    let rig = Rig::new(Dialect::V2).await;
    let l = ledger(&rig);
    older_worker_beats(&l, Duration::from_secs(60)).await;
    let _ingress = rig.start_roles(&["ingress"], None).await;
    let owner = Owner::User {
        chat_id: ALICE,
        user_id: ALICE,
    };
    let mut group = TokenGroup::new(Duration::from_secs(600));
    let run = TokenAction::Run(Command::Version.button(owner, None, "", Duration::ZERO));
    let token = group.add(owner, "Version", run, Some(1));
    let markup = oncebot::telegram::keyboard::Keyboard::new()
        .row(vec![("Version".into(), token.clone())])
        .to_json();
    let admission = Admission {
        update_id: 1,
        chat_id: ALICE,
        user_id: ALICE,
        message_id: Some(1),
        thread_id: None,
        requester: None,
        role: Role::Admin,
        action: AdmissionAction::Confirm {
            job: Command::Status.job(
                oncebot::commands::Asker::of(ALICE, ALICE, None),
                String::new(),
                Duration::ZERO,
            ),
            prompt: "Which?".into(),
            buttons: group,
            markup,
        },
    };
    assert_eq!(l.admit(&admission).await.unwrap(), Admitted::Confirming);

    let tap = |update_id: i64| {
        let mut update = callback_update(ALICE, ALICE, 1, &token);
        update["update_id"] = serde_json::json!(update_id);
        update
    };
    rig.post(&tap(2)).await;
    let callbacks = rig.store.stream(&rig.store.keys.callbacks_stream()).await;
    assert_eq!(callbacks.len(), 1, "{callbacks:?}");
    assert!(
        callbacks[0]["text"].contains("being upgraded"),
        "{callbacks:?}"
    );
    assert!(rig.store.job_ids().await.is_empty());

    // The old worker is gone: the same button works (once the gate's view is read again).
    let mut conn = rig.store.conn().await;
    let _: () = redis::cmd("DEL")
        .arg(rig.store.keys.alive("old-worker"))
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut update_id = 2;
    let job = eventually("the button's job", DEADLINE, || {
        update_id += 1;
        let update = tap(update_id);
        let rig = &rig;
        async move {
            rig.post(&update).await;
            rig.store.job_ids().await.into_iter().next()
        }
    })
    .await;
    assert_eq!(rig.store.job(job).await["command"], "version");
}

/// `XPENDING` of `entry`: its consumer and idle time.
async fn pending_entry(store: &Store, entry: &str) -> (String, u64) {
    let rows: Vec<(String, String, u64, u64)> = redis::cmd("XPENDING")
        .arg(store.keys.jobs_stream())
        .arg("workers")
        .arg(entry)
        .arg(entry)
        .arg(1)
        .query_async(&mut store.conn().await)
        .await
        .unwrap();
    let (_, consumer, idle, _) = rows.into_iter().next().expect("still pending");
    (consumer, idle)
}

/// The scripts' contract (claim.lua's and complete.lua's `unknown`): complete.lua's take and
/// claim.lua leave a job of a kind the worker does not run as it is, fresh or running under a
/// newer worker that died (no recovery counted), unacknowledged and idle for the next reclaim;
/// a worker whose kinds include it runs it.
#[tokio::test]
async fn complete_and_claim_leave_an_unknown_kind_unchanged_and_idle_for_the_next_reclaim() {
    let (redis, l, store, _) = spawn_ledger(&[]).await;
    let url = redis.url();
    let old = AttemptLimits {
        max_recoveries: 2,
        retention: Duration::from_secs(3600),
        kinds: oncebot::versions::WORKER_KINDS,
    };
    let newer = AttemptLimits {
        kinds: "|frobnicate|",
        ..old.clone()
    };
    let texts = ClaimTexts {
        held: "held".into(),
        failed: "failed".into(),
    };
    let known = admit(&l, 1, "jobs").await;
    let unknown = admit(&l, 2, "frobnicate").await;
    let first = deliver(&url, "old").await;
    let claimed = checked_transitions(
        &store,
        "claim.lua",
        l.claim(known, &first, "old", &old, &texts),
    )
    .await
    .unwrap();
    let Claimed::Run { attempt, .. } = claimed else {
        panic!("{claimed:?}")
    };
    let taker = Taker {
        consumer: "old",
        count: 1,
        kinds: old.kinds,
    };
    let done = Outcome {
        status: JobState::Succeeded,
        ..Outcome::default()
    };
    let before = store.job(unknown).await;
    let completions = checked_transitions(
        &store,
        "complete.lua",
        l.complete_and_take(
            &[(&attempt, &done)],
            Duration::from_secs(60),
            &taker,
            Trim::No,
        ),
    )
    .await
    .unwrap();
    let entry = match <[Taken; 1]>::try_from(completions.taken) {
        Ok([Taken::Claimed(Ok(Claimed::Unknown { kind, entry }))]) => {
            assert_eq!(kind, "frobnicate");
            entry
        }
        other => panic!("complete's take: {other:?}"),
    };
    assert_eq!(
        store.job(unknown).await,
        before,
        "nothing of the job changed"
    );
    let (consumer, idle) = pending_entry(&store, &entry).await;
    assert_eq!(consumer, "old");
    assert!(idle >= LEFT_ENTRY_IDLE.as_millis() as u64 - 1000, "{idle}");

    // A newer worker runs it, and dies; the old worker, handed the entry, leaves the running
    // job as it is: no recovery counted, no review, no failure.
    hand_over(&url, &entry, "newer").await;
    let claimed = checked_transitions(
        &store,
        "claim.lua",
        l.claim(unknown, &entry, "newer", &newer, &texts),
    )
    .await
    .unwrap();
    assert!(matches!(claimed, Claimed::Run { .. }), "{claimed:?}");
    let running = store.job(unknown).await;
    hand_over(&url, &entry, "old").await;
    let claimed = checked_transitions(
        &store,
        "claim.lua",
        l.claim(unknown, &entry, "old", &old, &texts),
    )
    .await
    .unwrap();
    assert!(
        matches!(&claimed, Claimed::Unknown { kind, .. } if kind == "frobnicate"),
        "{claimed:?}"
    );
    assert_eq!(store.job(unknown).await, running);
    assert_eq!(running["status"], "running");
    assert_eq!(pending_entry(&store, &entry).await.0, "old");
}
