//! The Lua scripts, one `LazyLock<Script>` each; `Ledger` holds the only typed wrappers.
//!
//! `redis::Script` sends EVALSHA and, on NOSCRIPT (Redis restarted), loads the script and tries
//! again, so a restart of Redis costs one extra round trip, not an error.
//!
//! Shared code lives in `lua/include/*.lua` (one concern each: creating a job, tokens, settling a
//! reviewed job) and is pasted in front of a script's body at compile time with `concat!`, so
//! Redis sees one self-contained script and there is no loader to get wrong. Each include
//! defines `local function`s that take everything as parameters; a script's header names the
//! includes it runs after.

use std::sync::LazyLock;

use redis::aio::ConnectionLike;
use redis::{Script, Value};

use super::Conn;
use super::conn::Wait;
use super::keys::Keys;

/// `lua/<name>` preceded by the named `lua/include/` files, as one source text.
macro_rules! lua {
    ($script:literal $(, $include:literal)*) => {
        concat!(
            $(include_str!(concat!("../../lua/include/", $include)), "\n",)*
            include_str!(concat!("../../lua/", $script))
        )
    };
}

/// `lua/enqueue.lua`: admit one update (transport and business duplicates, job creation, the
/// buttons of a command that needs a confirmation).
pub(crate) static ENQUEUE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(lua!(
        "enqueue.lua",
        "common.lua",
        "create_job.lua",
        "tokens.lua"
    ))
});

/// `lua/tap.lua`: one callback query: token checks, its action (a job, a cancel, a review
/// decision) and its answer, in one step.
pub(crate) static TAP: LazyLock<Script> = LazyLock::new(|| {
    Script::new(lua!(
        "tap.lua",
        "common.lua",
        "create_job.lua",
        "tokens.lua",
        "resolve_job.lua"
    ))
});

/// `lua/claim.lua`: take a jobs-stream entry; fresh run, recovery by policy, or nothing.
pub(crate) static CLAIM: LazyLock<Script> =
    LazyLock::new(|| Script::new(lua!("claim.lua", "common.lua", "tokens.lua")));

/// `lua/complete.lua`: record an attempt's outcome, queue the reply, XACK, in one step.
pub(crate) static COMPLETE: LazyLock<Script> =
    LazyLock::new(|| Script::new(lua!("complete.lua", "common.lua", "tokens.lua")));

/// `lua/extend.lua`: renew the leases of a live worker's running jobs.
pub(crate) static EXTEND: LazyLock<Script> = LazyLock::new(|| Script::new(lua!("extend.lua")));

/// `lua/promote.lua`: due `retry_wait` jobs back onto the jobs stream.
pub(crate) static PROMOTE: LazyLock<Script> =
    LazyLock::new(|| Script::new(lua!("promote.lua", "common.lua")));

/// `lua/resolve.lua`: a person settles a `needs_review` job.
pub(crate) static RESOLVE: LazyLock<Script> =
    LazyLock::new(|| Script::new(lua!("resolve.lua", "common.lua", "resolve_job.lua")));

/// `lua/reply_begin.lua`: record `sending` before a Bot API call.
pub(crate) static REPLY_BEGIN: LazyLock<Script> =
    LazyLock::new(|| Script::new(lua!("reply_begin.lua", "common.lua")));

/// `lua/reply_end.lua`: record `sent`/`failed` and acknowledge the entry, in one step.
pub(crate) static REPLY_END: LazyLock<Script> =
    LazyLock::new(|| Script::new(lua!("reply_end.lua", "common.lua")));

/// `lua/lease.lua`: renew a live consumer's PEL entries (replies, callbacks).
pub(crate) static LEASE: LazyLock<Script> = LazyLock::new(|| Script::new(lua!("lease.lua")));

/// `lua/progress.lua`: queue a job's "working on it" message once.
pub(crate) static PROGRESS: LazyLock<Script> =
    LazyLock::new(|| Script::new(lua!("progress.lua", "common.lua")));

/// `lua/lock.lua`: take (or, for its owner, renew) a lock.
pub(crate) static LOCK: LazyLock<Script> = LazyLock::new(|| Script::new(lua!("lock.lua")));

/// `lua/unlock.lua`: release a lock only if its owner still holds it.
pub(crate) static UNLOCK: LazyLock<Script> = LazyLock::new(|| Script::new(lua!("unlock.lua")));

/// `lua/notice.lua`: tell the admin chats about a deployment-wide condition once, or end it.
pub(crate) static NOTICE: LazyLock<Script> =
    LazyLock::new(|| Script::new(lua!("notice.lua", "common.lua")));

/// `lua/liveness.lua`: a consumer's heartbeat, or its graceful leave.
pub(crate) static LIVENESS: LazyLock<Script> = LazyLock::new(|| Script::new(lua!("liveness.lua")));

/// `lua/reap.lua`: a dead consumer's entries taken at once, dead consumers removed.
pub(crate) static REAP: LazyLock<Script> = LazyLock::new(|| Script::new(lua!("reap.lua")));
/// `lua/note.lua`: a running attempt records a download's intent before the add, under its fence.
pub(crate) static NOTE: LazyLock<Script> = LazyLock::new(|| Script::new(lua!("note.lua")));

/// `lua/releases.lua`: store a resource search's list (with its expiry) for its buttons.
pub(crate) static RELEASES: LazyLock<Script> = LazyLock::new(|| Script::new(lua!("releases.lua")));

/// `lua/ready.lua`: `/readyz`'s probe, run on a key of the deployment's slot.
pub(crate) static READY: LazyLock<Script> = LazyLock::new(|| Script::new(lua!("ready.lua")));

/// Every script, by the name of its file in `lua/`.
fn all() -> [(&'static str, &'static Script); 19] {
    [
        ("enqueue", &ENQUEUE),
        ("tap", &TAP),
        ("claim", &CLAIM),
        ("complete", &COMPLETE),
        ("extend", &EXTEND),
        ("promote", &PROMOTE),
        ("resolve", &RESOLVE),
        ("reply_begin", &REPLY_BEGIN),
        ("reply_end", &REPLY_END),
        ("lease", &LEASE),
        ("progress", &PROGRESS),
        ("lock", &LOCK),
        ("unlock", &UNLOCK),
        ("notice", &NOTICE),
        ("liveness", &LIVENESS),
        ("reap", &REAP),
        ("note", &NOTE),
        ("releases", &RELEASES),
        ("ready", &READY),
    ]
}

/// Every script's name and SHA1 (what SCRIPT EXISTS checks), includes pasted in.
pub fn hashes() -> Vec<(&'static str, String)> {
    all()
        .into_iter()
        .map(|(name, script)| (name, script.get_hash().to_string()))
        .collect()
}

/// Sends `cmd`, an `EVALSHA <script's hash> ...` built by the caller, and on NOSCRIPT (Redis
/// restarted, or SCRIPT FLUSH) loads `script` and sends it once more: what
/// `ScriptInvocation::invoke_async` does, for callers that write the command into one buffer
/// instead of a Vec per argument.
pub(crate) async fn evalsha<T: redis::FromRedisValue>(
    script: &Script,
    cmd: &redis::Cmd,
    conn: &mut impl ConnectionLike,
) -> redis::RedisResult<T> {
    match cmd.query_async(conn).await {
        Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
            script.load_async(conn).await?;
            cmd.query_async(conn).await
        }
        result => result,
    }
}

/// SCRIPT LOAD of every script (on a cluster, on the node that owns the deployment's slot:
/// `Conn` routes it there).
pub(crate) async fn load_all(conn: &mut impl ConnectionLike) -> redis::RedisResult<()> {
    for (_, script) in all() {
        script.load_async(conn).await?;
    }
    Ok(())
}

/// Whether the node that owns the deployment's slot has every script and runs them on its
/// keys, in one round trip: SCRIPT EXISTS of every script, EVALSHA of `ready.lua` on a key of
/// the slot (a standalone connection to another node of a cluster meets MOVED: an error), and
/// with `wait` a WAIT behind them (too few replicas: an error, as for an admission).
pub(crate) async fn loaded(
    conn: &mut Conn,
    keys: &Keys,
    wait: Option<Wait>,
) -> redis::RedisResult<bool> {
    let mut exists = redis::cmd("SCRIPT");
    exists.arg("EXISTS");
    for (_, script) in all() {
        exists.arg(script.get_hash());
    }
    let mut probe = redis::cmd("EVALSHA");
    probe.arg(READY.get_hash()).arg(1).arg(keys.job_seq());
    let mut pipe = redis::pipe();
    pipe.add_command(exists).add_command(probe);
    if let Some(wait) = wait {
        pipe.add_command(wait.cmd());
    }
    let mut answers = conn
        .req_packed_commands(&pipe, 0, pipe.len())
        .await?
        .into_iter();
    let (Some(exists), Some(probe)) = (answers.next(), answers.next()) else {
        return Err(redis::RedisError::from((
            redis::ErrorKind::UnexpectedReturnType,
            "the readiness pipeline answered too little",
        )));
    };
    let present: Vec<bool> = redis::FromRedisValue::from_redis_value(exists.extract_error()?)?;
    let probed = match probe {
        Value::ServerError(e) if e.kind() == Some(redis::ServerErrorKind::NoScript) => false,
        other => {
            other.extract_error()?;
            true
        }
    };
    if let (Some(wait), Some(acks)) = (wait, answers.next()) {
        wait.check(acks.extract_error()?)?;
    }
    Ok(probed && present.into_iter().all(|p| p))
}
