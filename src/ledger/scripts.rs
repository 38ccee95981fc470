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

fn all() -> [&'static Script; 1] {
    [&ENQUEUE]
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
