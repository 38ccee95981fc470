//! Every script's call, held to the script's header: the name each fixed key and argument is
//! given where the call is built must begin its description in the header (`KEYS[2] jobs
//! stream ...`), at the same position, and a call names exactly the header's fixed keys. A key
//! or argument moved, added or dropped on one side only fails here, not in production.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use super::liveness::Role;
use super::scripts::ScriptCall;
use super::*;
use crate::vocabulary::ChatTarget;

/// A ledger on a Redis that is never contacted (the connection is lazy, inside the test's
/// runtime): calls are only built.
fn ledger() -> Ledger {
    let settings = Settings::load_from(
        None,
        [
            (
                "ONCEBOT__REDIS__URL".to_string(),
                "redis://127.0.0.1:1".to_string(),
            ),
            (
                "ONCEBOT__TELEGRAM__ADMIN_CHATS".to_string(),
                "42".to_string(),
            ),
        ],
    )
    .unwrap();
    Ledger::connect(
        &settings,
        crate::i18n::Texts::new(settings.telegram.locale).for_ledger(),
    )
    .unwrap()
}

/// `KEYS[n]` / `ARGV[n]` → the header's description of it. A position is described where a
/// line starts with it, or where a list of them goes on after ", " (`ARGV[5] chat id, ARGV[6]
/// job id`); a mention inside another's description (`KEYS[8] ..., ARGV[14] of them`) counts
/// only when nothing else describes that position. Ranges (`ARGV[21..]`, `KEYS[5+i]`) are not fixed positions.
fn header(file: &str) -> (BTreeMap<usize, String>, BTreeMap<usize, String>) {
    let text = crate::assets::read(&format!("lua/{file}"));
    let head = &text[..text
        .find("]]")
        .expect("the script opens with a --[[ header ]]")];
    let mut found: [BTreeMap<usize, (bool, String)>; 2] = [BTreeMap::new(), BTreeMap::new()];
    for line in head.lines() {
        let trimmed = line.trim_start();
        let mut rest = trimmed;
        let mut previous: Option<(usize, usize)> = None;
        let mut offset = 0;
        while let Some(i) = rest.find(['K', 'A']) {
            let tail = &rest[i..];
            let which = if tail.starts_with("KEYS[") {
                Some((0, 5))
            } else if tail.starts_with("ARGV[") {
                Some((1, 5))
            } else {
                None
            };
            let Some((which, skip)) = which else {
                rest = &rest[i + 1..];
                offset += i + 1;
                continue;
            };
            let starts_line = offset + i == 0;
            let after_comma = trimmed[..offset + i].trim_end().ends_with(',');
            let digits: String = tail[skip..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            let after = &tail[skip + digits.len()..];
            rest = &rest[i + 1..];
            offset += i + 1;
            let (Ok(n), Some(desc)) = (digits.parse::<usize>(), after.strip_prefix("] ")) else {
                continue;
            };
            let desc = desc
                .split([',', ';'])
                .next()
                .unwrap_or_default()
                .trim()
                .to_lowercase();
            let continues_list = after_comma && previous == Some((which, n.wrapping_sub(1)));
            let primary = starts_line || continues_list;
            let entry = found[which].entry(n).or_insert((primary, desc.clone()));
            if primary && !entry.0 {
                *entry = (true, desc);
            }
            previous = primary.then_some((which, n));
        }
    }
    let [keys, args] = found.map(|m| m.into_iter().map(|(n, (_, d))| (n, d)).collect());
    (keys, args)
}

/// Asserts `call` against its script's header; `complete`: the call names every fixed ARGV.
fn holds(call: &ScriptCall, complete: bool) {
    let file = call.file();
    let (keys, args) = header(file);
    let fixed = |m: &BTreeMap<usize, String>| (1..).take_while(|n| m.contains_key(n)).count();
    assert_eq!(
        call.named.keys.len(),
        fixed(&keys),
        "{file}: the call names {:?}, the header {keys:?}",
        call.named.keys
    );
    if complete {
        assert_eq!(
            call.named.args.len(),
            fixed(&args),
            "{file}: ARGV {:?} vs {args:?}",
            call.named.args
        );
    }
    for (kind, names, header) in [
        ("KEYS", &call.named.keys, &keys),
        ("ARGV", &call.named.args, &args),
    ] {
        for (i, name) in names.iter().enumerate() {
            let desc = header.get(&(i + 1)).unwrap_or_else(|| {
                panic!("{file}: {kind}[{}] ({name:?}) is not in the header", i + 1)
            });
            assert!(
                desc.starts_with(&name.to_lowercase()),
                "{file}: {kind}[{}] is {name:?} in Rust but {desc:?} in the header",
                i + 1
            );
        }
    }
}

fn attempt() -> Attempt {
    Attempt {
        job_id: 7,
        entry: "1-0".into(),
        consumer: "w1".into(),
        attempt: 1,
        chat_id: "1".into(),
        message_id: String::new(),
    }
}

fn reply_entry(kind: ReplyKind) -> ReplyEntry {
    ReplyEntry {
        entry: "1-0".into(),
        chat_id: 1,
        reply_to: None,
        kind: Some(kind),
        job_id: Some(7),
        text: "t".into(),
        markup: None,
        edit_message_id: None,
        op: None,
        photo: None,
        card: None,
        thread_id: None,
        silent: false,
    }
}

#[tokio::test]
async fn enqueue_calls_name_their_header_for_every_admission() {
    let l = ledger();
    let admission = |action| Admission {
        update_id: 1,
        chat_id: 1,
        user_id: 1,
        message_id: Some(3),
        thread_id: Some(7),
        requester: Some("alice".into()),
        role: crate::vocabulary::Role::User,
        action,
    };
    let job = |command: &'static str, args: &str| JobSpec {
        command,
        args: args.into(),
        idem: "0123456789abcdef0123456789abcdef".into(),
        window: Duration::from_secs(1),
        recovery: crate::vocabulary::Recovery::VerifyThenRetry,
        least_role: crate::vocabulary::Role::User,
    };
    for action in [
        AdmissionAction::Job(job("subscribe", "x")),
        AdmissionAction::Confirm {
            job: job("unsubscribe", "1"),
            prompt: "sure?".into(),
            buttons: TokenGroup::new(Duration::from_secs(60)),
            markup: "{}".into(),
        },
        AdmissionAction::Reply {
            kind: ReplyKind::Help,
            text: "help".into(),
            window: Duration::ZERO,
            once_key: String::new(),
        },
        AdmissionAction::HouseJob {
            job: job("site_signin", ""),
            repeat: "again? {time}".into(),
            utc_offset_secs: 8 * 3600,
            force: TokenGroup::new(Duration::from_secs(60)),
            force_markup: "{}".into(),
        },
    ] {
        holds(&l.admit_call(&admission(action)), true);
    }
}

#[tokio::test]
async fn tap_call_names_its_header() {
    let tap = Tap {
        update_id: 1,
        callback_query_id: "q".into(),
        user_id: 1,
        allowed: true,
        chat_id: Some(1),
        message_id: Some(2),
        thread_id: None,
        role: crate::vocabulary::Role::Admin,
        requester: None,
        token: Some("ab".into()),
        request: None,
        quota: None,
    };
    holds(&ledger().tap_call(&tap, "|version|"), true);
}

#[tokio::test]
async fn claim_call_names_its_header() {
    let limits = AttemptLimits {
        max_recoveries: 2,
        retention: Duration::from_secs(60),
        kinds: "|search|",
    };
    let texts = ClaimTexts {
        held: "held".into(),
        failed: "failed".into(),
    };
    holds(
        &ledger().claim_call(&[(7, "1-0".into())], "w1", &limits, &texts),
        true,
    );
}

#[tokio::test]
async fn complete_call_names_its_header() {
    let outcome = Outcome::default();
    let a = attempt();
    holds(
        &ledger().complete_call(
            &[(&a, &outcome)],
            Duration::from_secs(60),
            &Taker {
                consumer: "w1",
                count: 8,
                kinds: "|search|",
            },
            crate::ledger::Trim::No,
        ),
        true,
    );
}

#[tokio::test]
async fn extend_promote_and_resolve_calls_name_their_headers() {
    let l = ledger();
    holds(&l.extend_call("w1", &[attempt()]), true);
    holds(&l.promote_due_call(10), true);
    let retention = Duration::from_secs(60);
    holds(
        &l.resolve_call(7, Resolution::Retry, "n", "r", retention),
        true,
    );
}

#[tokio::test]
async fn reply_calls_name_their_headers() {
    let l = ledger();
    holds(
        &l.renew_lane_call(Lane::Replies, "d1", &["1-0".into()]),
        true,
    );
    holds(&l.held_elsewhere_find_call("d1", "5-0", 100), true);
    holds(&l.held_elsewhere_gone_call("d1", &["1-0".into()]), false);
    holds(
        &l.reply_begin_call(
            &reply_entry(ReplyKind::Result),
            "d1",
            Duration::from_secs(60),
        ),
        true,
    );
    holds(
        &l.reply_end_call(
            &[(&reply_entry(ReplyKind::Progress), &Ok((5, Form::Photo)))],
            Duration::from_secs(60),
        ),
        true,
    );
    holds(
        &l.reply_form_call(&reply_entry(ReplyKind::Result), "d1", Form::Text),
        true,
    );
    holds(&l.queue_progress_call(7, 1, "working"), true);
    holds(&l.queue_step_call(&attempt(), "half way"), true);
}

#[tokio::test]
async fn lock_and_notice_calls_name_their_headers() {
    let l = ledger();
    holds(
        &l.lock_media_call(1, Some(1), "w1", Duration::from_secs(1)),
        true,
    );
    holds(&l.unlock_media_call(1, None, "w1"), true);
    holds(
        &l.raise_notice_call("mp_auth", "refused", Duration::from_secs(60)),
        true,
    );
    // `clear` leaves out what only `raise` reads.
    holds(&l.clear_notice_call("mp_auth"), false);
    holds(
        &l.tell_user_call("mp_auth", 42, Duration::from_secs(60)),
        false,
    );
}

#[tokio::test]
async fn login_gate_calls_name_their_header() {
    let l = ledger();
    holds(&l.login_begin_call("p1", Duration::from_secs(20)), false);
    holds(
        &l.login_refused_call(
            "p1",
            "refused",
            Duration::from_secs(5),
            Duration::from_secs(60),
            Duration::from_secs(3600),
        ),
        true,
    );
    holds(&l.login_ended_call("p1", true), false);
}

#[tokio::test]
async fn liveness_calls_name_their_headers() {
    let l = ledger();
    for roles in [
        &[Role::Worker][..],
        &[Role::Dispatcher],
        &[Role::Worker, Role::Dispatcher],
    ] {
        let beat = crate::ledger::Beat {
            consumer: "p1",
            ttl: Duration::from_secs(3),
            list: true,
            take: 10,
            forget_after: Duration::from_secs(60),
            promote: 100,
            registration: "{}",
        };
        holds(&l.beat_call(roles, &beat), true);
    }
    holds(&l.retire_call(Role::Dispatcher, "p1", true), true);
}

#[tokio::test]
async fn release_and_note_calls_name_their_headers() {
    let l = ledger();
    holds(
        &l.store_list_call(
            7,
            Duration::from_secs(60),
            &[("t".into(), "{}".into())],
            Some((&json!({}), &[json!({})])),
        ),
        true,
    );
    holds(&l.note_call(&attempt(), &[("grab_hash", "h".into())]), true);
    holds(
        &l.step_key_call(
            &attempt(),
            "ab",
            Some((Duration::from_secs(60), "auto_download_job")),
        ),
        true,
    );
    holds(&l.step_key_call(&attempt(), "ab", None), true);
}

/// The header reader itself: a description after ", " counts, a mention inside another's
/// description does not override a line of its own.
#[test]
fn the_header_reader_finds_every_position_once() {
    let (keys, args) = header("enqueue.lua");
    assert_eq!(keys.len(), 10, "{keys:?}");
    assert!(
        args[&14].starts_with("jobs index length"),
        "{:?}",
        args[&14]
    );
    let (_, args) = header("reply_begin.lua");
    assert!(args[&6].starts_with("job id"), "{args:?}");
    assert!(args[&7].starts_with("kind"), "{args:?}");
}

#[tokio::test]
async fn ready_call_names_its_header() {
    holds(&scripts::ready_call(ledger().keys()), true);
}

#[tokio::test]
async fn relay_calls_name_their_headers() {
    let l = ledger();
    let row = NotifyRow {
        identity: "1|2026-01-01 00:00:00|ab".into(),
        digest: "cd".into(),
        reg_secs: 1,
        id: 1,
        reg_time: "2026-01-01 00:00:00".into(),
        text: "t".into(),
        photo: None,
        chats: vec![ChatTarget::chat(1), ChatTarget::in_thread(2, Some(7))],
        category: crate::vocabulary::NoticeCategory::Download,
        mine: vec![1],
        seen_only: false,
    };
    let rows = [row.clone()];
    let window = Duration::from_secs(120);
    holds(
        &l.notify_record_call(NotifyMode::Start { newest: &row }, &rows, None, window, "c"),
        true,
    );
    let skipped = Skipped {
        count: 3,
        notice: "n",
    };
    holds(
        &l.notify_record_call(NotifyMode::Rows, &rows, Some(skipped), window, ""),
        true,
    );
    holds(&l.notify_lease_call("h", Duration::from_secs(3)), true);
    holds(&l.notify_release_call("h"), true);
    let media = crate::asked::AskedMedia::new("三体", Some("2023"), Some(1)).unwrap();
    holds(
        &l.remember_asker_call(&media, 42, Duration::from_secs(60), None),
        true,
    );
    holds(
        &l.remember_asker_call(&media, 42, Duration::from_secs(60), Some(7)),
        true,
    );
    holds(&l.forget_asker_call(&media.digest(), 7), true);
}

#[tokio::test]
async fn card_calls_name_their_headers() {
    let l = ledger();
    holds(&l.follow_turn_call("h", Duration::from_secs(60)), true);
    let card = super::Card {
        id: 7,
        state: crate::vocabulary::CardState::Started,
        seq: 0,
        chat_id: 42,
        fields: [("follow_digest".to_string(), "d".to_string())].into(),
    };
    let step = super::CardStep {
        text: "t".into(),
        ..super::CardStep::default()
    };
    holds(
        &l.card_step_call(&card, &step, Duration::from_secs(60), "c"),
        true,
    );
    let words = crate::i18n::Render::new(crate::config::Locale::Zh).quiet_summary();
    holds(&l.quiet_end_call(1, &words), true);
    let mut edit = reply_entry(ReplyKind::Card);
    edit.card = Some((7, 2));
    holds(
        &l.reply_begin_call(&edit, "d1", Duration::from_secs(60)),
        true,
    );
}

#[tokio::test]
async fn users_calls_name_their_headers() {
    let l = ledger();
    let s = Duration::from_secs(1);
    holds(&l.users_turn_call("h", s, s, s), true);
    holds(
        &l.users_call("h", "ok", &[(1, "alice:admin".into())], &[(1, "{}".into())]),
        false,
    );
    holds(&l.users_call("h", "ok", &[], &[]), true);
    holds(&l.users_turn_end_call("h"), true);
}

#[tokio::test]
async fn grants_calls_name_their_header() {
    let l = ledger();
    let grant = GrantChange::Grant {
        user_id: 7,
        role: crate::vocabulary::Role::User,
        by: "cli".into(),
    };
    holds(&l.grants_call(&grant), true);
    holds(&l.grants_call(&GrantChange::Revoke { user_id: 7 }), true);
}

#[tokio::test]
async fn bot_claim_call_names_its_header() {
    let t = ClaimTry {
        update_id: 1,
        chat_id: 2,
        user_id: 2,
        message_id: 3,
        digest: "ab",
        claimed: false,
        texts: "{}",
    };
    holds(&ledger().claim_bot_call(&t), true);
}

#[tokio::test]
async fn access_calls_name_their_header() {
    let l = ledger();
    let limits = AccessLimits {
        window: Duration::from_secs(60),
        cap: 20,
        texts: "{}",
    };
    let offer = AccessStep::Offer {
        update_id: 1,
        user_id: 2,
        chat_id: 2,
        message_id: 3,
        detail: "{}",
    };
    holds(&l.access_call(&offer, limits), true);
    holds(&l.access_call(&AccessStep::Expire, limits), true);
}
