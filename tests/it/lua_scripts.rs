//! The Lua scripts, called through the ledger against a real Redis.
//!
//! Two duties: every outcome a script's header lists has a test here, and every call runs inside
//! [`checked_transitions`], which fails if the script moved a job along an edge that
//! `JobState::can_transition` (and so docs/job-states.mmd) does not have. A new script (claim,
//! complete, reclaim, ...) gets its tests here the same way: set the jobs up, call the script
//! through the ledger inside `checked_transitions`, assert its outcome.

use std::collections::BTreeSet;
use std::time::Duration;

use oncebot::commands::Command;
use oncebot::ledger::{Admission, AdmissionAction, Admitted, JobFilter, JobState, Ledger, keys};
use redis::AsyncCommands as _;

use crate::support::app::spawn_ledger;
use crate::support::{ALICE, BOB, Store, checked_transitions};

const WINDOW: Duration = Duration::from_secs(60);

fn job(update_id: i64, user: i64, command: Command, args: &str, window: Duration) -> Admission {
    Admission {
        update_id,
        chat_id: user,
        user_id: user,
        message_id: Some(update_id + 500),
        thread_id: None,
        requester: None,
        role: oncebot::vocabulary::Role::Admin,
        action: AdmissionAction::Job(command.job(
            oncebot::commands::Asker::of(user, user, None),
            args,
            window,
        )),
    }
}

fn subscribe(update_id: i64, args: &str) -> Admission {
    job(update_id, ALICE, Command::Subscribe, args, WINDOW)
}

fn reply(update_id: i64, window: Duration, once_key: &str) -> Admission {
    Admission {
        update_id,
        chat_id: ALICE,
        user_id: ALICE,
        message_id: None,
        thread_id: None,
        requester: None,
        role: oncebot::vocabulary::Role::Admin,
        action: AdmissionAction::Reply {
            kind: oncebot::ledger::ReplyKind::Refusal,
            text: "not allowed".into(),
            window,
            once_key: once_key.into(),
        },
    }
}

/// `enqueue.lua` through `Ledger::admit`, with the transition check around it.
async fn enqueue(store: &Store, ledger: &Ledger, a: &Admission) -> Admitted {
    checked_transitions(store, "enqueue.lua", ledger.admit(a))
        .await
        .unwrap()
}

/// Sets a job's state by hand, standing in for the scripts of later layers (claim, complete).
async fn force_state(store: &Store, id: u64, state: JobState) {
    let mut conn = store.conn().await;
    let _: () = conn
        .hset(store.keys.job(id), "status", state.as_str())
        .await
        .unwrap();
}

#[tokio::test]
async fn enqueue_creates_a_pending_job_with_every_ledger_field() {
    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;
    assert!(JobState::can_transition(None, JobState::Pending));

    let admitted = enqueue(&store, &ledger, &subscribe(1, "Dune Part Two")).await;
    assert_eq!(admitted, Admitted::New { job_id: 1 });

    let job = store.job(1).await;
    // The seed's bot_jobs columns, plus attempts and the entry that carries it (`result` and
    // `error` are written by an outcome that has one; a missing field reads as empty).
    for field in [
        "id",
        "idempotency_key",
        "update_id",
        "chat_id",
        "user_id",
        "command",
        "args",
        "status",
        "created_at",
        "updated_at",
        "attempts",
        "entry",
    ] {
        assert!(job.contains_key(field), "job HASH lacks {field}: {job:?}");
    }
    for field in ["result", "error"] {
        assert!(
            !job.contains_key(field),
            "an empty {field} is not stored: {job:?}"
        );
    }
    assert_eq!(job["status"], "pending");
    assert_eq!(job["command"], "subscribe");
    assert_eq!(job["args"], "Dune Part Two");
    assert_eq!(job["attempts"], "0");
    assert_eq!(
        job["idempotency_key"],
        oncebot::commands::idempotency_key(
            oncebot::commands::Asker::of(ALICE, ALICE, None),
            Command::Subscribe,
            "Dune Part Two"
        )
    );
    assert_eq!(job["role"], "admin");
    assert!(
        !job.contains_key("requester"),
        "a job for the service account stores no requester: {job:?}"
    );
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let created: u64 = job["created_at"].parse().unwrap();
    assert!(
        now_ms.abs_diff(created) < 60_000,
        "created_at {created}, now {now_ms}"
    );
    assert_eq!(job["created_at"], job["updated_at"]);

    // On the jobs stream, in the chat's index and the global one; the window key points at it.
    assert_eq!(store.jobs_on_stream().await, vec![1]);
    let mut conn = store.conn().await;
    let chat: Vec<u64> = conn
        .lrange(store.keys.chat_jobs(ALICE), 0, -1)
        .await
        .unwrap();
    assert_eq!(chat, vec![1]);
    let index: Vec<u64> = conn.lrange(store.keys.jobs_index(), 0, -1).await.unwrap();
    assert_eq!(index, vec![1]);
    assert_eq!(store.update(1).await.as_deref(), Some("1"));
    let idem = job["idempotency_key"].clone();
    assert_eq!(
        store.get(&store.keys.command(&idem)).await.as_deref(),
        Some("1")
    );
    // The Job type reads back what the script wrote.
    let read = ledger.job(1).await.unwrap().unwrap();
    assert_eq!(read.status, oncebot::ledger::JobState::Pending);
    assert_eq!(read.update_id, 1);
}

#[tokio::test]
async fn every_enqueue_outcome_keeps_to_the_transition_table() {
    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;

    // new
    assert_eq!(
        enqueue(&store, &ledger, &subscribe(1, "Dune")).await,
        Admitted::New { job_id: 1 }
    );
    // duplicate_update with a job: nothing changes
    let before = store.snapshot().await;
    assert_eq!(
        enqueue(&store, &ledger, &subscribe(1, "Dune")).await,
        Admitted::DuplicateUpdate {
            job_id: Some(1),
            state: Some(JobState::Pending)
        }
    );
    assert_eq!(
        store.snapshot().await,
        before,
        "a transport duplicate changes nothing"
    );
    // duplicate_command
    assert_eq!(
        enqueue(&store, &ledger, &subscribe(2, "dune")).await,
        Admitted::DuplicateCommand {
            job_id: 1,
            state: JobState::Pending
        }
    );
    // replied (no window), and its update answered again
    assert_eq!(
        enqueue(&store, &ledger, &reply(3, Duration::ZERO, "")).await,
        Admitted::Replied
    );
    assert_eq!(
        enqueue(&store, &ledger, &reply(3, Duration::ZERO, "")).await,
        Admitted::DuplicateUpdate {
            job_id: None,
            state: None
        }
    );
    // replied once per window, then suppressed
    let hour = Duration::from_secs(3600);
    assert_eq!(
        enqueue(&store, &ledger, &reply(4, hour, "refusal-alice")).await,
        Admitted::Replied
    );
    assert_eq!(
        enqueue(&store, &ledger, &reply(5, hour, "refusal-alice")).await,
        Admitted::Suppressed
    );

    assert_eq!(store.jobs_on_stream().await, vec![1]);
    let kinds: Vec<String> = store
        .replies()
        .await
        .into_iter()
        .map(|r| r["kind"].clone())
        .collect();
    assert_eq!(kinds, ["duplicate", "refusal", "refusal"]);
}

#[tokio::test]
async fn a_duplicate_command_reports_the_original_jobs_current_state() {
    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;
    enqueue(&store, &ledger, &subscribe(1, "Dune")).await;

    let open_states = JobState::ALL.into_iter().filter(|s| *s != JobState::Failed);
    for (i, state) in open_states.enumerate() {
        force_state(&store, 1, state).await;
        let update_id = 10 + i as i64;
        assert_eq!(
            enqueue(&store, &ledger, &subscribe(update_id, "Dune")).await,
            Admitted::DuplicateCommand { job_id: 1, state },
            "original job in {state}"
        );
        let replies = store.replies().await;
        let last = replies.last().unwrap();
        assert_eq!(last["kind"], "duplicate");
        assert_eq!(last["reply_to"], (update_id + 500).to_string());
        let label = oncebot::i18n::Texts::new(oncebot::config::Locale::En).state_label(state);
        assert!(
            last["text"].contains(&format!("job #1 ({label})")),
            "{state}: {}",
            last["text"]
        );
    }
    assert_eq!(store.jobs_on_stream().await, vec![1]);
}

#[tokio::test]
async fn a_failed_job_does_not_absorb_a_repeat_of_its_command() {
    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;
    enqueue(&store, &ledger, &subscribe(1, "Dune")).await;
    force_state(&store, 1, JobState::Failed).await;

    assert_eq!(
        enqueue(&store, &ledger, &subscribe(2, "Dune")).await,
        Admitted::New { job_id: 2 }
    );
    let idem = store.job(2).await["idempotency_key"].clone();
    assert_eq!(
        store.get(&store.keys.command(&idem)).await.as_deref(),
        Some("2")
    );
    assert!(store.replies().await.is_empty());
}

#[tokio::test]
async fn a_command_without_a_window_is_never_a_duplicate() {
    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;
    for update_id in 1..=3 {
        let a = job(update_id, ALICE, Command::Search, "Dune", Duration::ZERO);
        assert_eq!(
            enqueue(&store, &ledger, &a).await,
            Admitted::New {
                job_id: update_id as u64
            }
        );
    }
    assert!(store.command_keys().await.is_empty());
    assert!(store.replies().await.is_empty());
}

#[tokio::test]
async fn enqueue_recreates_the_streams_and_their_groups_if_they_are_gone() {
    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;
    let mut conn = store.conn().await;
    let _: () = conn
        .del(&[store.keys.jobs_stream(), store.keys.replies_stream()])
        .await
        .unwrap();

    enqueue(&store, &ledger, &subscribe(1, "Dune")).await;
    enqueue(&store, &ledger, &subscribe(2, "Dune")).await;

    for (stream, group) in [
        (store.keys.jobs_stream(), keys::Stream::Jobs.group()),
        (store.keys.replies_stream(), keys::Stream::Replies.group()),
    ] {
        let groups: Vec<redis::Value> = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(&stream)
            .query_async(&mut conn)
            .await
            .unwrap();
        let text = format!("{groups:?}");
        assert_eq!(groups.len(), 1, "{stream}: {text}");
        assert!(text.contains(group), "{stream}: {text}");
    }
}

#[tokio::test]
async fn the_chat_and_jobs_indexes_are_trimmed_to_their_lengths() {
    let (_redis, ledger, store, _) = spawn_ledger(&[
        ("ONCEBOT__LEDGER__CHAT_INDEX_LEN", "3"),
        ("ONCEBOT__LEDGER__JOBS_INDEX_LEN", "4"),
    ])
    .await;
    for update_id in 1..=6 {
        let a = job(update_id, ALICE, Command::Subscriptions, "", Duration::ZERO);
        enqueue(&store, &ledger, &a).await;
    }

    let mut conn = store.conn().await;
    let chat: Vec<u64> = conn
        .lrange(store.keys.chat_jobs(ALICE), 0, -1)
        .await
        .unwrap();
    assert_eq!(chat, vec![6, 5, 4]);
    let index: Vec<u64> = conn.lrange(store.keys.jobs_index(), 0, -1).await.unwrap();
    assert_eq!(index, vec![6, 5, 4, 3]);
    // Trimming an index never drops a job from the ledger.
    assert_eq!(store.job_ids().await, (1..=6).collect());
}

/// `jobs list` reads the global index page by page (200 ids a page), newest first, and sees
/// only the newest `ledger.jobs_index_len` jobs of every chat.
#[tokio::test]
async fn jobs_list_pages_the_global_index_newest_first() {
    let (_redis, ledger, store, _) =
        spawn_ledger(&[("ONCEBOT__LEDGER__JOBS_INDEX_LEN", "230")]).await;
    for update_id in 1..=250 {
        let user = if update_id % 2 == 0 { ALICE } else { BOB };
        let a = job(update_id, user, Command::Subscriptions, "", Duration::ZERO);
        // Straight to the ledger: 250 transition checks would take half a minute.
        ledger.admit(&a).await.unwrap();
    }
    let list = |limit: usize, chat_id: Option<i64>| {
        let ledger = ledger.clone();
        async move {
            ledger
                .list_jobs(&JobFilter {
                    status: None,
                    chat_id,
                    limit,
                })
                .await
                .unwrap()
                .into_iter()
                .map(|j| j.id)
                .collect::<Vec<u64>>()
        }
    };
    assert_eq!(list(1000, None).await, (21..=250).rev().collect::<Vec<_>>());
    assert_eq!(list(5, None).await, vec![250, 249, 248, 247, 246]);
    assert_eq!(
        list(3, Some(BOB)).await,
        vec![249, 247, 245],
        "a chat's own index"
    );
    let mut conn = store.conn().await;
    let kind: String = redis::cmd("TYPE")
        .arg(store.keys.jobs_index())
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(kind, "list");
}

#[tokio::test]
async fn every_key_enqueue_writes_is_under_the_prefix_hash_tag_and_layout_version() {
    let (_redis, ledger, store, _) = spawn_ledger(&[("ONCEBOT__REDIS__KEY_PREFIX", "bot-2")]).await;
    enqueue(&store, &ledger, &subscribe(1, "Dune")).await;
    enqueue(&store, &ledger, &subscribe(2, "Dune")).await;
    enqueue(
        &store,
        &ledger,
        &job(3, BOB, Command::Search, "x", Duration::ZERO),
    )
    .await;
    enqueue(&store, &ledger, &reply(4, Duration::from_secs(60), "k")).await;

    let keys: BTreeSet<String> = store.all_keys().await;
    assert!(keys.len() >= 8, "{keys:?}");
    for key in &keys {
        // Spelled out on purpose, not taken from `Keys`: the documented layout is the point.
        assert!(
            key.starts_with("{bot-2}:v1:"),
            "{key} is outside the layout"
        );
    }
}

#[tokio::test]
async fn admission_survives_a_script_cache_flush_and_readiness_reloads_it() {
    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;
    let mut conn = store.conn().await;
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut conn)
        .await
        .unwrap();

    // EVALSHA meets NOSCRIPT and the script is sent again: no error reaches the caller.
    assert_eq!(
        enqueue(&store, &ledger, &subscribe(1, "Dune")).await,
        Admitted::New { job_id: 1 }
    );

    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut conn)
        .await
        .unwrap();
    ledger.ready().await.unwrap();
    for (name, sha) in oncebot::ledger::script_hashes() {
        let exists: Vec<bool> = redis::cmd("SCRIPT")
            .arg("EXISTS")
            .arg(&sha)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(exists, vec![true], "readiness loads {name} back");
    }
}

/// The checker itself: a write the table forbids must fail the test that made it.
#[tokio::test]
async fn the_transition_check_catches_edges_the_table_lacks() {
    use futures::FutureExt as _;
    use std::panic::AssertUnwindSafe;

    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;
    enqueue(&store, &ledger, &subscribe(1, "Dune")).await;

    let skip_running = checked_transitions(
        &store,
        "rogue.lua",
        force_state(&store, 1, JobState::Succeeded),
    );
    let caught = AssertUnwindSafe(skip_running).catch_unwind().await;
    let message = *caught.unwrap_err().downcast::<String>().unwrap();
    assert!(
        message.contains("rogue.lua moved job 1 pending -> succeeded"),
        "{message}"
    );

    // A new attempt without a state change is a transition `s -> s` too: pending has none.
    force_state(&store, 1, JobState::Pending).await;
    let bump_attempts = checked_transitions(&store, "rogue.lua", async {
        let _: () = store
            .conn()
            .await
            .hincr(store.keys.job(1), "attempts", 1)
            .await
            .unwrap();
    });
    let caught = AssertUnwindSafe(bump_attempts).catch_unwind().await;
    let message = *caught.unwrap_err().downcast::<String>().unwrap();
    assert!(message.contains("pending -> pending"), "{message}");
}

/// `users_turn.lua`: one holder at a time, once per interval, sooner (`retry`) after a read that
/// did not finish; `users.lua` writes only for the turn's holder and ends the turn.
#[tokio::test]
async fn users_turn_is_one_holders_once_per_interval_and_users_lua_is_fenced_by_it() {
    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;
    let minute = Duration::from_secs(60);
    let lease = Duration::from_secs(5);
    let none = Duration::ZERO;
    assert!(ledger.users_turn("a", minute, minute, lease).await.unwrap());
    assert!(
        !ledger.users_turn("b", none, none, lease).await.unwrap(),
        "a holds the turn"
    );
    let before = ledger
        .store_moviepilot_users("a", "ok", &[(1, "alice:admin".into())], &[])
        .await
        .unwrap()
        .expect("the turn was a's");
    assert!(before.entries.is_empty() && before.refreshed_at.is_none());
    let lock = store.keys.users_refresh_lock();
    assert_eq!(store.get(&lock).await, None, "users.lua ends the turn");
    assert!(
        !ledger.users_turn("b", minute, none, lease).await.unwrap(),
        "read less than an interval ago (a finished read: retry does not apply)"
    );
    // Due (an interval of 0), b's turn; a's late write is refused and changes nothing.
    assert!(ledger.users_turn("b", none, none, lease).await.unwrap());
    assert_eq!(
        ledger
            .store_moviepilot_users("a", "ok", &[], &[])
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        ledger.moviepilot_users().await.unwrap().entries,
        vec![(1, "alice:admin".to_string())]
    );
    // b's read fails: unlock.lua ends its turn; the next try waits `retry`, not the interval.
    ledger.users_turn_end("b").await.unwrap();
    assert!(
        !ledger.users_turn("c", minute, minute, lease).await.unwrap(),
        "retry not over"
    );
    assert!(ledger.users_turn("c", minute, none, lease).await.unwrap());
    let lease_left: i64 = store.conn().await.pttl(&lock).await.unwrap();
    assert!(lease_left > 0 && lease_left <= 5000, "{lease_left}");
}

/// `users.lua` replaces the mapping whole (a removed user is gone, and the MoviePilot rights
/// stored with it), answers the one it replaced, and a refusal (`not_superuser`) leaves no id
/// mapped.
#[tokio::test]
async fn users_lua_replaces_the_mapping_whole() {
    let (_redis, ledger, _store, _) = spawn_ledger(&[]).await;
    let s = Duration::from_secs(5);
    let zero = Duration::ZERO;
    let two = [(1, "alice:admin".to_string()), (2, "bob:user".to_string())];
    assert!(ledger.users_turn("w", zero, zero, s).await.unwrap());
    let rights = [(1, r#"{"superuser":true}"#.to_string())];
    ledger
        .store_moviepilot_users("w", "ok", &two, &rights)
        .await
        .unwrap()
        .unwrap();
    assert!(ledger.users_turn("w", zero, zero, s).await.unwrap());
    let before = ledger
        .store_moviepilot_users("w", "ok", &[(2, "bob:admin".into())], &[(2, "{}".into())])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(before.entries, two.to_vec());
    assert_eq!(before.rights, rights.to_vec());
    let now = ledger.moviepilot_users().await.unwrap();
    assert_eq!(now.entries, vec![(2, "bob:admin".to_string())]);
    assert_eq!(now.rights, vec![(2, "{}".to_string())]);
    assert_eq!((now.state.as_str(), now.by.as_str()), ("ok", "w"));
    assert!(now.refreshed_at.is_some());
    assert!(ledger.users_turn("w", zero, zero, s).await.unwrap());
    ledger
        .store_moviepilot_users("w", "not_superuser", &[], &[])
        .await
        .unwrap()
        .unwrap();
    let refused = ledger.moviepilot_users().await.unwrap();
    assert!(refused.entries.is_empty() && refused.rights.is_empty());
    assert_eq!(refused.state, "not_superuser");
}

/// asked.lua: an ask noted before a job's call and undone when the job fails gives an earlier
/// ask of the same chat its expiry back; an ask with none before is removed; the note is made
/// once per job (a retry's does not overwrite what was there before the first) and is deleted
/// when undone.
#[tokio::test]
async fn a_failed_jobs_ask_is_undone_and_an_earlier_ask_keeps_its_expiry() {
    let (_redis, ledger, store, _) = spawn_ledger(&[]).await;
    let media = oncebot::asked::AskedMedia::new("Dune", Some("2021"), None).unwrap();
    let key = store.keys.asked(&media.digest());
    let member = media.member(ALICE);
    let day = Duration::from_secs(86_400);
    let Admitted::New { job_id: first } =
        enqueue(&store, &ledger, &subscribe(1, "tmdb:438631")).await
    else {
        panic!("a job");
    };
    // No earlier ask: noted, then undone by removal.
    ledger
        .remember_asker(&media, ALICE, day, Some(first))
        .await
        .unwrap();
    ledger
        .remember_asker(&media, ALICE, day, Some(first))
        .await
        .unwrap();
    assert_eq!(store.job(first).await["asked_before"], "");
    assert!(ledger.forget_asker(&media.digest(), first).await.unwrap());
    let mut conn = store.conn().await;
    let score: Option<f64> = conn.zscore(&key, &member).await.unwrap();
    assert_eq!(score, None);
    assert!(!store.job(first).await.contains_key("asked_member"));
    assert!(
        !ledger.forget_asker(&media.digest(), first).await.unwrap(),
        "once"
    );

    // An earlier successful ask (no job), then a job that asks again and fails.
    ledger
        .remember_asker(&media, ALICE, day, None)
        .await
        .unwrap();
    let earlier: f64 = conn.zscore(&key, &member).await.unwrap();
    let Admitted::New { job_id: second } =
        enqueue(&store, &ledger, &subscribe(2, "tmdb:438631 anyway")).await
    else {
        panic!("a job");
    };
    ledger
        .remember_asker(&media, ALICE, day * 2, Some(second))
        .await
        .unwrap();
    let later: f64 = conn.zscore(&key, &member).await.unwrap();
    assert!(later > earlier);
    assert!(ledger.forget_asker(&media.digest(), second).await.unwrap());
    let restored: f64 = conn.zscore(&key, &member).await.unwrap();
    assert_eq!(restored, earlier, "the earlier ask keeps its expiry");
}
