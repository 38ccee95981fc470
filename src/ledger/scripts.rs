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

fn all() -> [&'static Script; 6] {
    [&ENQUEUE, &CLAIM, &COMPLETE, &EXTEND, &PROMOTE, &RESOLVE]
}

/// Sends `cmd`, an `EVALSHA <script's hash> ...` built by the caller, and on NOSCRIPT (Redis
/// restarted, or SCRIPT FLUSH) loads `script` and sends it once more: what
/// `ScriptInvocation::invoke_async` does, for callers that write the command into one buffer
/// instead of a Vec per argument.
pub(crate) async fn evalsha<T: redis::FromRedisValue>(
    script: &Script,
    cmd: &redis::Cmd,
    conn: &mut ConnectionManager,
) -> redis::RedisResult<T> {
    match cmd.query_async(conn).await {
        Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
            script.load_async(conn).await?;
            cmd.query_async(conn).await
        }
        result => result,
    }
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
