//! The Lua scripts, one `LazyLock<Script>` each; `Ledger` holds the only typed wrappers.
//!
//! `redis::Script` sends EVALSHA and, on NOSCRIPT (Redis restarted), loads the script and tries
//! again, so a restart of Redis costs one extra round trip, not an error.

use std::sync::LazyLock;

use redis::Script;
use redis::aio::ConnectionManager;

/// `lua/enqueue.lua`: admit one update (transport and business duplicates, job creation).
pub(crate) static ENQUEUE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/enqueue.lua")));

/// `lua/claim.lua`: take a jobs-stream entry; fresh run, recovery by policy, or nothing.
pub(crate) static CLAIM: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/claim.lua")));

/// `lua/complete.lua`: record an attempt's outcome, queue the reply, XACK, in one step.
pub(crate) static COMPLETE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/complete.lua")));

/// `lua/extend.lua`: renew the leases of a live worker's running jobs.
pub(crate) static EXTEND: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/extend.lua")));

/// `lua/promote.lua`: due `retry_wait` jobs back onto the jobs stream.
pub(crate) static PROMOTE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/promote.lua")));

/// `lua/resolve.lua`: a person settles a `needs_review` job.
pub(crate) static RESOLVE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/resolve.lua")));

/// `lua/reply_begin.lua`: record `sending` before a Bot API call.
pub(crate) static REPLY_BEGIN: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/reply_begin.lua")));

/// `lua/reply_end.lua`: record `sent`/`failed` and acknowledge the entry, in one step.
pub(crate) static REPLY_END: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/reply_end.lua")));

/// `lua/lease.lua`: renew a live consumer's PEL entries (replies, callbacks).
pub(crate) static LEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/lease.lua")));

/// `lua/progress.lua`: queue a job's "working on it" message once.
pub(crate) static PROGRESS: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/progress.lua")));

/// `lua/lock.lua`: take (or, for its owner, renew) a lock.
pub(crate) static LOCK: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/lock.lua")));

/// `lua/unlock.lua`: release a lock only if its owner still holds it.
pub(crate) static UNLOCK: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/unlock.lua")));

fn all() -> [&'static Script; 12] {
    [
        &ENQUEUE,
        &CLAIM,
        &COMPLETE,
        &EXTEND,
        &PROMOTE,
        &RESOLVE,
        &REPLY_BEGIN,
        &REPLY_END,
        &LEASE,
        &PROGRESS,
        &LOCK,
        &UNLOCK,
    ]
}

/// SCRIPT LOAD of every script.
pub(crate) async fn load_all(conn: &mut ConnectionManager) -> redis::RedisResult<()> {
    for script in all() {
        script.load_async(conn).await?;
    }
    Ok(())
}

/// Whether every script is in Redis's script cache.
pub(crate) async fn loaded(conn: &mut ConnectionManager) -> redis::RedisResult<bool> {
    let mut cmd = redis::cmd("SCRIPT");
    cmd.arg("EXISTS");
    for script in all() {
        cmd.arg(script.get_hash());
    }
    let present: Vec<bool> = cmd.query_async(conn).await?;
    Ok(present.into_iter().all(|p| p))
}
