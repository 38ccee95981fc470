//! The worker's scripts (claim, complete, extend, promote, resolve) through the ledger against a
//! real Redis, each call inside `checked_transitions`. These pin the fencing rules that no
//! process-level test can hit on demand: a zombie's late completion, a zombie's lease renewal.

use std::time::Duration;

use oncebot::commands::Command;
use oncebot::ledger::{
    Admission, AdmissionAction, Admitted, Attempt, AttemptLimits, ClaimTexts, Claimed, Completed,
    Completions, JobState, Ledger, Outcome, ReplyKind, Resolution, Resolved, StepKey, Taken, Taker,
    Trim,
};

use crate::support::app::spawn_ledger;
use crate::support::{ALICE, Store, checked_transitions, deliver, hand_over};

const A: &str = "worker-a";
const B: &str = "worker-b";

fn limits() -> AttemptLimits {
    AttemptLimits {
        max_recoveries: 2,
        retention: Duration::from_secs(3600),
        kinds: oncebot::versions::WORKER_KINDS,
    }
}

fn texts() -> ClaimTexts {
    ClaimTexts {
        held: "job #{job} held".into(),
        failed: "job #{job} crashed too often".into(),
    }
}

async fn enqueue(ledger: &Ledger, update_id: i64, command: Command, args: &str) -> u64 {
    let admitted = ledger
        .admit(&Admission {
            update_id,
            chat_id: ALICE,
            user_id: ALICE,
            message_id: Some(update_id + 500),
            thread_id: None,
            requester: None,
            role: oncebot::vocabulary::Role::Admin,
            action: AdmissionAction::Job(command.job(
                oncebot::commands::Asker::of(ALICE, ALICE, None),
                args,
                Duration::ZERO,
            )),
        })
        .await
        .unwrap();
    let Admitted::New { job_id } = admitted else {
        panic!("{admitted:?}")
    };
    job_id
}

async fn claim(store: &Store, ledger: &Ledger, job: u64, entry: &str, consumer: &str) -> Claimed {
    checked_transitions(
        store,
        "claim.lua",
        ledger.claim(job, entry, consumer, &limits(), &texts()),
    )
    .await
    .unwrap()
}

async fn complete(
    store: &Store,
    ledger: &Ledger,
    attempt: &Attempt,
    outcome: &Outcome,
) -> Completed {
    checked_transitions(
        store,
        "complete.lua",
        ledger.complete(attempt, outcome, Duration::from_secs(60)),
    )
    .await
    .unwrap()
}

/// complete.lua for `attempt`'s success, taking up to `count` new entries for worker A.
async fn complete_taking(
    store: &Store,
    ledger: &Ledger,
    attempt: &Attempt,
    count: usize,
) -> Completions {
    complete_taking_trimming(store, ledger, attempt, count, Trim::Now).await
}

/// [`complete_taking`], trimming the jobs stream as `trim` says.
async fn complete_taking_trimming(
    store: &Store,
    ledger: &Ledger,
    attempt: &Attempt,
    count: usize,
    trim: Trim,
) -> Completions {
    let taker = Taker {
        consumer: A,
        count,
        kinds: oncebot::versions::WORKER_KINDS,
    };
    checked_transitions(
        store,
        "complete.lua",
        ledger.complete_and_take(
            &[(attempt, &succeeded())],
            Duration::from_secs(60),
            &taker,
            trim,
        ),
    )
    .await
    .unwrap()
}

/// The attempt of the one job a completion took.
fn taken_attempt(done: Completions) -> Attempt {
    match <[Taken; 1]>::try_from(done.taken) {
        Ok([Taken::Claimed(Ok(Claimed::Run { attempt, .. }))]) => attempt,
        other => panic!("expected one job taken, got {other:?}"),
    }
}

fn run(claimed: Claimed) -> (Attempt, bool) {
    match claimed {
        Claimed::Run {
            attempt, recovered, ..
        } => (attempt, recovered),
        other => panic!("expected Run, got {other:?}"),
    }
}

fn succeeded() -> Outcome {
    Outcome {
        status: JobState::Succeeded,
        result: "done".into(),
        reply: "done".into(),
        reply_kind: ReplyKind::Result,
        ..Outcome::default()
    }
}

#[tokio::test]
async fn a_zombie_workers_late_completion_is_rejected() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let job = enqueue(&ledger, 1, Command::Subscriptions, "").await;
    let entry = deliver(&redis.url(), A).await;
    let (a, recovered) = run(claim(&store, &ledger, job, &entry, A).await);
    assert!(!recovered);
    assert_eq!(a.attempt, 1);

    // A stops renewing; its entry goes to B, whose claim recovers the job as attempt 2.
    hand_over(&redis.url(), &entry, B).await;
    let (b, recovered) = run(claim(&store, &ledger, job, &entry, B).await);
    assert!(recovered, "a running job claimed again is a recovery");
    assert_eq!(b.attempt, 2);

    // A comes back and tries to record its outcome: refused, nothing changes.
    let late = complete(&store, &ledger, &a, &succeeded()).await;
    assert!(matches!(late, Completed::Stale { .. }), "{late:?}");
    assert_eq!(store.job(job).await["status"], "running");
    assert_eq!(store.job(job).await["owner"], B);
    assert!(
        store.replies().await.is_empty(),
        "a stale completion sends nothing"
    );

    // A's lease renewal is refused too, so it cannot take the entry back from B.
    let lost = ledger.extend(A, std::slice::from_ref(&a)).await.unwrap();
    assert_eq!(lost, vec![entry.clone()]);

    let done = complete(&store, &ledger, &b, &succeeded()).await;
    assert_eq!(done, Completed::Recorded);
    assert_eq!(store.job(job).await["status"], "succeeded");
    assert_eq!(store.replies().await.len(), 1);
    assert!(
        store.jobs_on_stream().await.is_empty(),
        "the entry is acked and deleted"
    );
}

/// Redis lost its last writes (a restart without persistence): the job id went to a new job,
/// which another worker claimed as its attempt 1. The first worker's late outcome for the
/// lost job has the same attempt number, but not the same entry: refused.
#[tokio::test]
async fn a_late_completion_for_a_job_id_given_again_is_rejected() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let job = enqueue(&ledger, 1, Command::Subscriptions, "").await;
    let entry = deliver(&redis.url(), A).await;
    let (a, _) = run(claim(&store, &ledger, job, &entry, A).await);
    assert_eq!(a.attempt, 1);

    // The job and its entry are lost; the id is given again and claimed by B.
    let mut conn = store.conn().await;
    let _: () = redis::cmd("FLUSHALL").query_async(&mut conn).await.unwrap();
    ledger.prepare().await.unwrap();
    let again = enqueue(&ledger, 2, Command::Subscriptions, "").await;
    assert_eq!(again, job, "the id is given again");
    let new_entry = deliver(&redis.url(), B).await;
    assert_ne!(new_entry, entry);
    let (b, _) = run(claim(&store, &ledger, job, &new_entry, B).await);
    assert_eq!(b.attempt, 1);

    let late = complete(&store, &ledger, &a, &succeeded()).await;
    assert!(matches!(late, Completed::Stale { .. }), "{late:?}");
    assert_eq!(store.job(job).await["status"], "running");
    assert!(
        store.replies().await.is_empty(),
        "{:?}",
        store.replies().await
    );
    let done = complete(&store, &ledger, &b, &succeeded()).await;
    assert_eq!(done, Completed::Recorded);
}

/// The replies stream is gone (deleted by hand, or lost): an outcome's reply makes it again,
/// with the dispatcher's group, so the reply is not left where no group reads it.
#[tokio::test]
async fn an_outcome_whose_replies_stream_is_gone_makes_it_with_its_group() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let job = enqueue(&ledger, 1, Command::Subscriptions, "").await;
    let entry = deliver(&redis.url(), A).await;
    let (a, _) = run(claim(&store, &ledger, job, &entry, A).await);
    let mut conn = store.conn().await;
    let replies = store.keys.replies_stream();
    let _: () = redis::cmd("DEL")
        .arg(&replies)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        complete(&store, &ledger, &a, &succeeded()).await,
        Completed::Recorded
    );
    assert_eq!(store.replies().await.len(), 1);
    // The dispatchers' group reads it.
    let read: redis::streams::StreamReadReply = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg(oncebot::ledger::keys::Stream::Replies.group())
        .arg("probe")
        .arg("COUNT")
        .arg(10)
        .arg("STREAMS")
        .arg(&replies)
        .arg(">")
        .query_async(&mut conn)
        .await
        .unwrap();
    let ids: Vec<&str> = read
        .keys
        .iter()
        .flat_map(|k| &k.ids)
        .map(|e| e.id.as_str())
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
}

#[tokio::test]
async fn a_live_workers_lease_renewal_keeps_its_entry() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let job = enqueue(&ledger, 1, Command::Subscriptions, "").await;
    let entry = deliver(&redis.url(), A).await;
    let (a, _) = run(claim(&store, &ledger, job, &entry, A).await);
    let lost = ledger.extend(A, std::slice::from_ref(&a)).await.unwrap();
    assert!(lost.is_empty());
}

#[tokio::test]
async fn a_recovered_side_effect_that_cannot_be_verified_is_held_for_a_person() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let job = enqueue(&ledger, 1, Command::SearchNow, "7").await;
    let entry = deliver(&redis.url(), A).await;
    run(claim(&store, &ledger, job, &entry, A).await);
    hand_over(&redis.url(), &entry, B).await;
    let held = claim(&store, &ledger, job, &entry, B).await;
    assert!(matches!(held, Claimed::Held { attempt: 1 }), "{held:?}");
    let row = store.job(job).await;
    assert_eq!(row["status"], "needs_review");
    assert!(row["error"].contains("uncertain"), "{row:?}");
    let replies = store.replies().await;
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0]["text"], format!("job #{job} held"));
    assert!(store.jobs_on_stream().await.is_empty());
}

#[tokio::test]
async fn a_read_only_job_that_keeps_crashing_its_workers_fails() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let job = enqueue(&ledger, 1, Command::Subscriptions, "").await;
    let entry = deliver(&redis.url(), A).await;
    run(claim(&store, &ledger, job, &entry, A).await);
    // max_recoveries is 2: two recoveries run it again, the third gives up.
    for (i, consumer) in ["c1", "c2"].into_iter().enumerate() {
        hand_over(&redis.url(), &entry, consumer).await;
        let (attempt, recovered) = run(claim(&store, &ledger, job, &entry, consumer).await);
        assert!(recovered);
        assert_eq!(attempt.attempt, i as u64 + 2);
    }
    hand_over(&redis.url(), &entry, "c3").await;
    let failed = claim(&store, &ledger, job, &entry, "c3").await;
    assert!(matches!(failed, Claimed::Failed { .. }), "{failed:?}");
    assert_eq!(store.job(job).await["status"], "failed");
    assert!(store.jobs_on_stream().await.is_empty());
}

/// A transient failure whose retry is due at once.
fn retry_now() -> Outcome {
    Outcome {
        status: JobState::RetryWait,
        error: "MoviePilot answered 502".into(),
        reply_kind: ReplyKind::Retrying,
        retry_in: Duration::ZERO,
        ..Outcome::default()
    }
}

#[tokio::test]
async fn a_due_retry_goes_back_on_the_stream_and_runs_as_the_next_attempt() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let job = enqueue(&ledger, 1, Command::Subscriptions, "").await;
    let entry = deliver(&redis.url(), A).await;
    let (a, _) = run(claim(&store, &ledger, job, &entry, A).await);
    let retry = retry_now();
    let recorded = complete(&store, &ledger, &a, &retry).await;
    assert_eq!(recorded, Completed::Recorded);
    assert_eq!(store.job(job).await["status"], "retry_wait");
    assert!(
        store.jobs_on_stream().await.is_empty(),
        "not queued until due"
    );

    let promoted = ledger.promote_due(10).await.unwrap();
    assert_eq!(promoted, 1);
    assert_eq!(ledger.promote_due(10).await.unwrap(), 0, "promoted once");
    let next = deliver(&redis.url(), A).await;
    assert_ne!(next, entry);
    let (second, recovered) = run(claim(&store, &ledger, job, &next, A).await);
    assert!(!recovered);
    assert_eq!(second.attempt, 2);
    // The old entry, should it ever come back, is stale and runs nothing.
    let stale = claim(&store, &ledger, job, &entry, B).await;
    assert!(matches!(stale, Claimed::Skip { .. }), "{stale:?}");
}

/// A finished job keeps its record (result, attempts, ...) but not the fields only a job that
/// may still run needs; a stale entry of it still runs nothing.
#[tokio::test]
async fn a_finished_job_drops_the_fields_of_a_running_one() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let job = enqueue(&ledger, 1, Command::Subscriptions, "").await;
    let created = store.job(job).await;
    assert!(created.contains_key("entry"), "{created:?}");
    for field in ["result", "error", "owner"] {
        assert!(
            !created.contains_key(field),
            "{field} at creation: {created:?}"
        );
    }
    let entry = deliver(&redis.url(), A).await;
    let (a, _) = run(claim(&store, &ledger, job, &entry, A).await);
    let retry = retry_now();
    ledger
        .complete(&a, &retry, Duration::from_secs(60))
        .await
        .unwrap();
    let waiting = store.job(job).await;
    assert!(!waiting.contains_key("owner"), "{waiting:?}");
    assert!(waiting.contains_key("retry_at"), "{waiting:?}");
    assert_eq!(ledger.promote_due(10).await.unwrap(), 1);
    let next = deliver(&redis.url(), A).await;
    let (second, _) = run(claim(&store, &ledger, job, &next, A).await);
    assert_eq!(store.job(job).await["owner"], A);
    let done = complete(&store, &ledger, &second, &succeeded()).await;
    assert_eq!(done, Completed::Recorded);
    let row = store.job(job).await;
    assert_eq!(row["status"], "succeeded");
    assert_eq!(row["result"], "done");
    assert_eq!(row["attempts"], "2");
    // The first attempt's error is that attempt's, not the succeeded job's.
    assert!(!row.contains_key("error"), "{row:?}");
    assert_eq!(row["last_attempt_error"], "MoviePilot answered 502");
    let listed = ledger.job(job).await.unwrap().unwrap();
    assert_eq!(listed.error, None);
    for field in ["owner", "entry", "started_at", "retry_at", "progress"] {
        assert!(!row.contains_key(field), "{field} left: {row:?}");
    }
    let shown = ledger.job(job).await.unwrap().unwrap();
    assert_eq!(shown.result.as_deref(), Some("done"));
    let mut conn = store.conn().await;
    let ttl: i64 = redis::AsyncCommands::ttl(&mut conn, store.keys.job(job))
        .await
        .unwrap();
    assert!(ttl > 0, "a finished job expires: {ttl}");
    let stale = claim(&store, &ledger, job, &next, B).await;
    assert!(matches!(stale, Claimed::Skip { .. }), "{stale:?}");
    assert_eq!(store.job(job).await["status"], "succeeded");
}

#[tokio::test]
async fn only_a_job_waiting_for_review_can_be_resolved() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let job = enqueue(&ledger, 1, Command::SearchNow, "7").await;
    let refused = ledger
        .resolve(job, Resolution::Succeeded, "", "", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(refused, Resolved::NotWaiting(JobState::Pending));

    let entry = deliver(&redis.url(), A).await;
    run(claim(&store, &ledger, job, &entry, A).await);
    hand_over(&redis.url(), &entry, B).await;
    claim(&store, &ledger, job, &entry, B).await;
    let retried = checked_transitions(
        &store,
        "resolve.lua",
        ledger.resolve(
            job,
            Resolution::Retry,
            "checked: nothing ran",
            "job #{job} again",
            Duration::from_secs(60),
        ),
    )
    .await
    .unwrap();
    assert_eq!(retried, Resolved::Settled(JobState::Pending));
    let row = store.job(job).await;
    assert_eq!(row["resolution_note"], "checked: nothing ran");
    assert_eq!(store.jobs_on_stream().await, vec![job], "queued again");
}

#[tokio::test]
async fn a_media_lock_is_exclusive_reentrant_for_its_owner_and_released_only_by_it() {
    let (_redis, ledger, _store, _) = spawn_ledger(&[]).await;
    let lease = Duration::from_secs(60);
    assert!(
        ledger
            .lock_media(42, Some(1), "job:1", lease)
            .await
            .unwrap()
    );
    assert!(
        !ledger
            .lock_media(42, Some(1), "job:2", lease)
            .await
            .unwrap()
    );
    // The same job, recovered after a crash, takes it again without waiting for the lease.
    assert!(
        ledger
            .lock_media(42, Some(1), "job:1", lease)
            .await
            .unwrap()
    );
    // Another season is another lock.
    assert!(
        ledger
            .lock_media(42, Some(2), "job:2", lease)
            .await
            .unwrap()
    );
    ledger.unlock_media(42, Some(1), "job:2").await.unwrap();
    assert!(
        !ledger
            .lock_media(42, Some(1), "job:2", lease)
            .await
            .unwrap()
    );
    ledger.unlock_media(42, Some(1), "job:1").await.unwrap();
    assert!(
        ledger
            .lock_media(42, Some(1), "job:2", lease)
            .await
            .unwrap()
    );
}

/// One claim.lua call for a whole read: each entry is settled on its own, and the answers come
/// back in the order the entries were given.
#[tokio::test]
async fn one_claim_settles_each_entry_of_a_batch_on_its_own() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let finished = enqueue(&ledger, 1, Command::Subscriptions, "").await;
    let orphaned = enqueue(&ledger, 2, Command::Subscriptions, "").await;
    let fresh = enqueue(&ledger, 3, Command::Subscriptions, "").await;
    let finished_entry = deliver(&redis.url(), A).await;
    let orphaned_entry = deliver(&redis.url(), A).await;
    let fresh_entry = deliver(&redis.url(), A).await;

    // A finishes the first job and dies running the second; B gets both entries it held.
    let (a, _) = run(claim(&store, &ledger, finished, &finished_entry, A).await);
    complete(&store, &ledger, &a, &succeeded()).await;
    run(claim(&store, &ledger, orphaned, &orphaned_entry, A).await);
    hand_over(&redis.url(), &orphaned_entry, B).await;
    hand_over(&redis.url(), &fresh_entry, B).await;

    let batch = [
        (fresh, fresh_entry.clone()),
        (orphaned, orphaned_entry.clone()),
        (finished, finished_entry.clone()),
    ];
    let answers = checked_transitions(
        &store,
        "claim.lua",
        ledger.claim_all(&batch, B, &limits(), &texts()),
    )
    .await
    .unwrap();
    let answers: Vec<Claimed> = answers.into_iter().map(Result::unwrap).collect();
    assert_eq!(answers.len(), 3);
    let mut answers = answers.into_iter();

    let (first, recovered) = run(answers.next().unwrap());
    assert_eq!((first.job_id, first.attempt, recovered), (fresh, 1, false));
    assert_eq!(first.entry, fresh_entry);
    let (second, recovered) = run(answers.next().unwrap());
    assert_eq!(
        (second.job_id, second.attempt, recovered),
        (orphaned, 2, true)
    );
    match answers.next().unwrap() {
        Claimed::Skip { status } => assert_eq!(status, Some(JobState::Succeeded)),
        other => panic!("a finished job's entry is skipped, got {other:?}"),
    }
    for job in [fresh, orphaned] {
        let row = store.job(job).await;
        assert_eq!(
            (row["status"].as_str(), row["owner"].as_str()),
            ("running", B)
        );
    }
}

/// A first attempt's answer from complete.lua carries the job's text as it was stored, NUL
/// bytes included (that answer is joined by NUL, so such a job is answered as JSON), and the
/// reply address the outcome will use.
#[tokio::test]
async fn a_taken_first_attempt_keeps_every_byte_of_its_arguments() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let first = enqueue(&ledger, 1, Command::Subscriptions, "").await;
    let plain = enqueue(&ledger, 2, Command::Search, "三体 2023").await;
    let nul = enqueue(&ledger, 3, Command::Search, "a\0b").await;
    let first_entry = deliver(&redis.url(), A).await;
    let (a1, _) = run(claim(&store, &ledger, first, &first_entry, A).await);
    let done = complete_taking(&store, &ledger, &a1, 2).await;
    let runs: Vec<(u64, String, String, String, u64)> = done
        .taken
        .into_iter()
        .map(|t| match t {
            Taken::Claimed(Ok(Claimed::Run { attempt, job, .. })) => (
                job.id,
                job.args,
                attempt.chat_id,
                attempt.message_id,
                attempt.attempt,
            ),
            other => panic!("{other:?}"),
        })
        .collect();
    let chat = ALICE.to_string();
    assert_eq!(
        runs,
        [
            (plain, "三体 2023".into(), chat.clone(), "502".into(), 1),
            (nul, "a\0b".into(), chat, "503".into(), 1),
        ]
    );
}

/// A completion takes new entries for the slots its group frees, in the same call: a pending
/// job is claimed as claim.lua would (attempt 1, owned by the taker), a stale entry is
/// acknowledged and deleted, a job found `running` is left pending for claim.lua and its
/// recovery policy, and no more entries are read than asked for.
#[tokio::test]
async fn a_completion_takes_and_claims_new_entries_for_the_slots_it_frees() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let first = enqueue(&ledger, 1, Command::Subscriptions, "").await;
    let fresh = enqueue(&ledger, 2, Command::Subscriptions, "").await;
    let stale = enqueue(&ledger, 3, Command::Subscriptions, "").await;
    let running = enqueue(&ledger, 4, Command::Subscriptions, "").await;
    let left = enqueue(&ledger, 5, Command::Subscriptions, "").await;
    let first_entry = deliver(&redis.url(), A).await;
    let (a1, _) = run(claim(&store, &ledger, first, &first_entry, A).await);
    // By hand, as an operator could: one job already settled, one marked running.
    let mut conn = redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let key = |id: u64| store.keys.job(id);
    let _: () = redis::cmd("HSET")
        .arg(key(stale))
        .arg(&["status", "succeeded"])
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg(key(running))
        .arg(&["status", "running", "attempts", "1", "owner", B])
        .query_async(&mut conn)
        .await
        .unwrap();
    let running_entry = store.job(running).await["entry"].clone();

    let done = complete_taking(&store, &ledger, &a1, 3).await;
    assert_eq!(done.answers.len(), 1);
    assert_eq!(*done.answers[0].as_ref().unwrap(), Completed::Recorded);
    let mut taken = done.taken.into_iter();
    match taken.next() {
        Some(Taken::Claimed(Ok(Claimed::Run {
            attempt,
            job,
            recovered,
        }))) => {
            assert_eq!(
                (attempt.job_id, attempt.attempt, recovered),
                (fresh, 1, false)
            );
            assert_eq!(attempt.consumer, A);
            assert_eq!(job.command, "subscriptions");
        }
        other => panic!("the pending job is claimed, got {other:?}"),
    }
    match taken.next() {
        Some(Taken::Claimed(Ok(Claimed::Skip { status }))) => {
            assert_eq!(status, Some(JobState::Succeeded))
        }
        other => panic!("the settled job's entry is skipped, got {other:?}"),
    }
    match taken.next() {
        Some(Taken::Deferred { job_id, entry }) => {
            assert_eq!((job_id, entry), (running, running_entry.clone()))
        }
        other => panic!("the running job is left to claim.lua, got {other:?}"),
    }
    assert!(taken.next().is_none(), "three asked for, three taken");

    let row = store.job(fresh).await;
    assert_eq!(
        (
            row["status"].as_str(),
            row["owner"].as_str(),
            row["attempts"].as_str()
        ),
        ("running", A, "1")
    );
    assert_eq!(store.job(running).await["owner"], B, "unchanged");
    assert_eq!(store.job(left).await["status"], "pending", "not read");
    // The stale entry is gone; the fresh, the deferred and the unread ones are still there.
    assert_eq!(store.jobs_on_stream().await, [fresh, running, left]);
    let pending: Vec<(String, String, u64, u64)> = redis::cmd("XPENDING")
        .arg(store.keys.jobs_stream())
        .arg("workers")
        .arg("-")
        .arg("+")
        .arg(10)
        .query_async(&mut conn)
        .await
        .unwrap();
    let pending: Vec<&str> = pending.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(pending.len(), 2, "{pending:?}");
    assert_eq!(pending[1], running_entry, "deferred: still pending for A");
}

/// One complete.lua call for several outcomes: each is fenced and recorded on its own (a stale
/// one in the middle changes nothing and does not shift the records after it), and the answers
/// come back in order.
#[tokio::test]
async fn one_completion_records_each_outcome_of_a_group_on_its_own() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let first = enqueue(&ledger, 1, Command::Subscriptions, "").await;
    let second = enqueue(&ledger, 2, Command::Subscriptions, "").await;
    let first_entry = deliver(&redis.url(), A).await;
    let second_entry = deliver(&redis.url(), A).await;
    let (a1, _) = run(claim(&store, &ledger, first, &first_entry, A).await);
    let (a2, _) = run(claim(&store, &ledger, second, &second_entry, A).await);
    // A stalls on the second job, which B recovers: A's attempt at it is now stale.
    hand_over(&redis.url(), &second_entry, B).await;
    let (b2, _) = run(claim(&store, &ledger, second, &second_entry, B).await);

    let with_fields = Outcome {
        fields: vec![
            ("mp_subscription_id".into(), "42".into()),
            ("outcome".into(), "created".into()),
        ],
        ..succeeded()
    };
    let retry = retry_now();
    assert_eq!(store.jobs_on_stream().await, [first, second]);
    let group = [(&a1, &with_fields), (&a2, &succeeded()), (&b2, &retry)];
    let answers = checked_transitions(
        &store,
        "complete.lua",
        ledger.complete_all(&group, Duration::from_secs(60)),
    )
    .await
    .unwrap();
    let answers: Vec<Completed> = answers.into_iter().map(Result::unwrap).collect();
    assert_eq!(answers.len(), 3);
    assert_eq!(answers[0], Completed::Recorded);
    assert!(matches!(answers[1], Completed::Stale { .. }), "{answers:?}");
    assert_eq!(answers[2], Completed::Recorded);

    let row = store.job(first).await;
    assert_eq!(row["status"], "succeeded");
    assert_eq!(row["mp_subscription_id"], "42");
    assert_eq!(row["outcome"], "created");
    let row = store.job(second).await;
    assert_eq!(row["status"], "retry_wait", "B's outcome, not A's");
    assert_eq!(row["attempts"], "2");
    assert!(!row.contains_key("mp_subscription_id"));
    let replies = store.replies().await;
    assert_eq!(
        replies.len(),
        1,
        "the first job's reply; the retry has none: {replies:?}"
    );
    // Both recorded outcomes' entries are acknowledged and deleted (together, at the end).
    assert!(store.jobs_on_stream().await.is_empty());
    let pending: (u64, redis::Value, redis::Value, redis::Value) = redis::cmd("XPENDING")
        .arg(store.keys.jobs_stream())
        .arg(oncebot::ledger::keys::Stream::Jobs.group())
        .query_async(&mut store.conn().await)
        .await
        .unwrap();
    assert_eq!(pending.0, 0, "no entry is left pending");
}

#[tokio::test]
async fn a_finished_entry_is_trimmed_once_every_older_one_is_done_and_the_backlog_counts_only_unfinished_work()
 {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let first = enqueue(&ledger, 1, Command::Subscriptions, "").await;
    let second = enqueue(&ledger, 2, Command::Subscriptions, "").await;
    let first_entry = deliver(&redis.url(), A).await;
    let second_entry = deliver(&redis.url(), A).await;
    let (a1, _) = run(claim(&store, &ledger, first, &first_entry, A).await);
    let (a2, _) = run(claim(&store, &ledger, second, &second_entry, A).await);
    let jobs_backlog = |stats: oncebot::ledger::QueueStats| {
        let jobs = stats.streams.iter().find(|s| s.name == "jobs").unwrap();
        (jobs.length, jobs.pending)
    };

    // The newer job finishes first: its entry stays behind the older one still running, and
    // the backlog counts only that one.
    assert_eq!(
        complete(&store, &ledger, &a2, &succeeded()).await,
        Completed::Recorded
    );
    assert_eq!(store.jobs_on_stream().await, [first, second]);
    assert_eq!(jobs_backlog(ledger.queue_stats().await.unwrap()), (1, 1));

    // A third job waits undelivered; the older one finishes: both finished entries go, the
    // waiting one stays and is the backlog.
    let third = enqueue(&ledger, 3, Command::Subscriptions, "").await;
    assert_eq!(
        complete(&store, &ledger, &a1, &succeeded()).await,
        Completed::Recorded
    );
    assert_eq!(store.jobs_on_stream().await, [third]);
    assert_eq!(jobs_backlog(ledger.queue_stats().await.unwrap()), (1, 0));

    // Once it ran too, the stream is empty, as it was when each entry was deleted.
    let third_entry = deliver(&redis.url(), A).await;
    let (a3, _) = run(claim(&store, &ledger, third, &third_entry, A).await);
    assert_eq!(
        complete(&store, &ledger, &a3, &succeeded()).await,
        Completed::Recorded
    );
    assert!(store.jobs_on_stream().await.is_empty());
    assert_eq!(jobs_backlog(ledger.queue_stats().await.unwrap()), (0, 0));
}

/// A busy worker's groups hold every slot, so they ask for the trim "once drained": the stream
/// is trimmed only by the call whose read finds nothing more to take, and then left empty.
#[tokio::test]
async fn a_trim_once_drained_waits_for_the_read_that_finds_nothing_more() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let first = enqueue(&ledger, 1, Command::Subscriptions, "").await;
    let second = enqueue(&ledger, 2, Command::Subscriptions, "").await;
    let third = enqueue(&ledger, 3, Command::Subscriptions, "").await;
    let first_entry = deliver(&redis.url(), A).await;
    let (a1, _) = run(claim(&store, &ledger, first, &first_entry, A).await);

    // Each of the next two calls takes as many as it asks: more may wait, so neither pays for
    // a trim (its XTRIM would remove nothing here anyway: only whole stream nodes while
    // entries are pending).
    let a2 =
        taken_attempt(complete_taking_trimming(&store, &ledger, &a1, 1, Trim::IfDrained).await);
    assert_eq!(a2.job_id, second);
    let a3 =
        taken_attempt(complete_taking_trimming(&store, &ledger, &a2, 1, Trim::IfDrained).await);
    assert_eq!(a3.job_id, third);
    assert_eq!(store.jobs_on_stream().await, [first, second, third]);
    assert_eq!(
        xtrim_calls(&store).await,
        0,
        "a call that took all it asked trimmed"
    );

    // The last finds nothing: the worker goes idle, and leaves the stream empty.
    let done = complete_taking_trimming(&store, &ledger, &a3, 1, Trim::IfDrained).await;
    assert!(done.taken.is_empty());
    assert_eq!(xtrim_calls(&store).await, 1);
    assert!(store.jobs_on_stream().await.is_empty());

    // A call that asks for nothing (a worker shutting down) cannot tell, and trims.
    let fourth = enqueue(&ledger, 4, Command::Subscriptions, "").await;
    let fourth_entry = deliver(&redis.url(), A).await;
    let (a4, _) = run(claim(&store, &ledger, fourth, &fourth_entry, A).await);
    complete_taking_trimming(&store, &ledger, &a4, 0, Trim::IfDrained).await;
    assert_eq!(xtrim_calls(&store).await, 2);
    assert!(store.jobs_on_stream().await.is_empty());
}

/// XTRIM calls this Redis has run, scripts' included (`INFO commandstats`).
async fn xtrim_calls(store: &Store) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut store.conn().await)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_xtrim:calls="))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

/// step_key.lua: the ⚡ Auto job's download takes `下载 1`'s business key for itself, unless a
/// job that has not failed holds it; gives back only its own; a finished attempt writes nothing.
#[tokio::test]
async fn a_step_key_is_taken_once_held_by_a_live_job_and_given_back_only_by_its_holder() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let window = Duration::from_secs(60);
    let field = "auto_download_job";
    let key = store.keys.command("k1");
    let first = enqueue(&ledger, 1, Command::Subscriptions, "").await;
    let entry = deliver(&redis.url(), A).await;
    let (a, _) = run(claim(&store, &ledger, first, &entry, A).await);
    let second = enqueue(&ledger, 2, Command::Jobs, "").await;
    let entry = deliver(&redis.url(), B).await;
    let (b, _) = run(claim(&store, &ledger, second, &entry, B).await);

    let taken = ledger.take_step_key(&a, "k1", window, field).await.unwrap();
    assert_eq!(taken, StepKey::Taken(first));
    let ttl: i64 = redis::cmd("PTTL")
        .arg(&key)
        .query_async(&mut store.conn().await)
        .await
        .unwrap();
    assert!(ttl > 0 && ttl <= 60_000, "the window: {ttl}");
    // Its own key again (an attempt after a crash): still its own.
    assert_eq!(
        ledger.take_step_key(&a, "k1", window, field).await.unwrap(),
        StepKey::Taken(first)
    );
    // Another job meets the holder, which has not failed, and records it.
    assert_eq!(
        ledger.take_step_key(&b, "k1", window, field).await.unwrap(),
        StepKey::Held(first, "running".into())
    );
    assert_eq!(store.job(second).await[field], first.to_string());
    // Giving back another's key leaves it.
    assert!(ledger.release_step_key(&b, "k1").await.unwrap());
    assert_eq!(
        store.get(&key).await.as_deref(),
        Some(first.to_string().as_str())
    );

    // The holder fails: it absorbs nothing, so the key is the other job's to take.
    let failed = Outcome {
        status: JobState::Failed,
        error: "refused".into(),
        ..succeeded()
    };
    assert_eq!(
        complete(&store, &ledger, &a, &failed).await,
        Completed::Recorded
    );
    assert_eq!(
        ledger.take_step_key(&a, "k2", window, field).await.unwrap(),
        StepKey::Stale,
        "a finished attempt takes nothing"
    );
    assert_eq!(store.get(&store.keys.command("k2")).await, None);
    assert_eq!(
        ledger.take_step_key(&b, "k1", window, field).await.unwrap(),
        StepKey::Taken(second)
    );
    assert!(ledger.release_step_key(&b, "k1").await.unwrap());
    assert_eq!(store.get(&key).await, None, "its holder gave it back");
}

/// step.lua: a step edits the progress message of a job that has one, under its fence.
#[tokio::test]
async fn a_step_is_queued_only_for_a_job_with_a_progress_message() {
    let (redis, ledger, store, _) = spawn_ledger(&[]).await;
    let job = enqueue(&ledger, 1, Command::Subscriptions, "").await;
    let entry = deliver(&redis.url(), A).await;
    let (a, _) = run(claim(&store, &ledger, job, &entry, A).await);
    assert!(
        !ledger.queue_step(&a, "half way").await.unwrap(),
        "no progress message yet"
    );
    assert!(
        ledger
            .queue_progress(job, a.attempt, "working")
            .await
            .unwrap()
    );
    assert!(ledger.queue_step(&a, "half way").await.unwrap());
    let replies = store.replies().await;
    let kinds: Vec<&str> = replies.iter().map(|r| r["kind"].as_str()).collect();
    assert_eq!(kinds, ["progress", "step"]);
    assert_eq!(replies[1]["text"], "half way");
    assert_eq!(replies[1]["job_id"], job.to_string());
    assert!(!replies[1].contains_key("edit_message_id"));
    complete(&store, &ledger, &a, &succeeded()).await;
    assert!(
        !ledger.queue_step(&a, "late").await.unwrap(),
        "a finished attempt"
    );
}
