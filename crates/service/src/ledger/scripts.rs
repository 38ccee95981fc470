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
use crate::assets::top_level_str;

/// `lua/<name>` preceded by the named `lua/include/` files, as one [`Lua`] script.
macro_rules! lua {
    ($script:literal $(, $include:literal)*) => {
        Lua {
            file: $script,
            script: Script::new(concat!(
                $(top_level_str!(concat!("lua/include/", $include)), "\n",)*
                top_level_str!(concat!("lua/", $script))
            )),
        }
    };
}

/// One script: its file in `lua/` (whose header is the contract) and the loaded text.
pub(crate) struct Lua {
    pub file: &'static str,
    pub script: Script,
}

/// `lua/enqueue.lua`: admit one update (transport and business duplicates, job creation, the
/// buttons of a command that needs a confirmation).
pub(crate) static ENQUEUE: LazyLock<Lua> =
    LazyLock::new(|| lua!("enqueue.lua", "common.lua", "create_job.lua", "tokens.lua"));

/// `lua/tap.lua`: one callback query: token checks, its action (a job, a cancel, a review
/// decision) and its answer, in one step.
pub(crate) static TAP: LazyLock<Lua> = LazyLock::new(|| {
    lua!(
        "tap.lua",
        "common.lua",
        "create_job.lua",
        "tokens.lua",
        "resolve_job.lua",
        "quota.lua",
        "requests.lua"
    )
});

/// `lua/claim.lua`: take a jobs-stream entry; fresh run, recovery by policy, or nothing.
pub(crate) static CLAIM: LazyLock<Lua> =
    LazyLock::new(|| lua!("claim.lua", "common.lua", "tokens.lua", "claim.lua"));

/// `lua/complete.lua`: record attempts' outcomes, queue the replies, XACK, in one step; then
/// take and claim new entries for the freed slots.
pub(crate) static COMPLETE: LazyLock<Lua> = LazyLock::new(|| {
    lua!(
        "complete.lua",
        "common.lua",
        "tokens.lua",
        "claim.lua",
        "cards.lua"
    )
});

/// `lua/extend.lua`: renew the leases of a live worker's running jobs.
pub(crate) static EXTEND: LazyLock<Lua> = LazyLock::new(|| lua!("extend.lua"));

/// `lua/promote.lua`: due `retry_wait` jobs back onto the jobs stream.
pub(crate) static PROMOTE: LazyLock<Lua> =
    LazyLock::new(|| lua!("promote.lua", "common.lua", "promote.lua"));

/// `lua/resolve.lua`: a person settles a `needs_review` job.
pub(crate) static RESOLVE: LazyLock<Lua> =
    LazyLock::new(|| lua!("resolve.lua", "common.lua", "resolve_job.lua"));

/// `lua/reply_begin.lua`: record `sending` before a Bot API call.
pub(crate) static REPLY_BEGIN: LazyLock<Lua> =
    LazyLock::new(|| lua!("reply_begin.lua", "common.lua"));

/// `lua/reply_end.lua`: record `sent`/`failed` and acknowledge the entry, in one step.
pub(crate) static REPLY_END: LazyLock<Lua> = LazyLock::new(|| lua!("reply_end.lua", "common.lua"));

/// `lua/reply_form.lua`: a reply goes as text after its poster was refused, recorded first.
pub(crate) static REPLY_FORM: LazyLock<Lua> = LazyLock::new(|| lua!("reply_form.lua"));

/// `lua/lease.lua`: renew a live consumer's PEL entries (replies, callbacks).
pub(crate) static LEASE: LazyLock<Lua> = LazyLock::new(|| lua!("lease.lua"));

/// `lua/progress.lua`: queue a job's "working on it" message once.
pub(crate) static PROGRESS: LazyLock<Lua> = LazyLock::new(|| lua!("progress.lua", "common.lua"));

/// `lua/step.lua`: how far a running job got, as an edit of its progress message.
pub(crate) static STEP: LazyLock<Lua> = LazyLock::new(|| lua!("step.lua", "common.lua"));

/// `lua/lock.lua`: take (or, for its owner, renew) a lock.
pub(crate) static LOCK: LazyLock<Lua> = LazyLock::new(|| lua!("lock.lua"));

/// `lua/unlock.lua`: release a lock only if its owner still holds it.
pub(crate) static UNLOCK: LazyLock<Lua> = LazyLock::new(|| lua!("unlock.lua"));

/// `lua/notice.lua`: tell the admin chats about a deployment-wide condition once, or end it.
pub(crate) static NOTICE: LazyLock<Lua> = LazyLock::new(|| lua!("notice.lua", "common.lua"));

/// `lua/liveness.lua`: a consumer process's heartbeat (dead consumers' entries taken at once,
/// due retries promoted, in the same call), or one role's graceful leave.
pub(crate) static LIVENESS: LazyLock<Lua> =
    LazyLock::new(|| lua!("liveness.lua", "common.lua", "promote.lua"));
/// `lua/note.lua`: a running attempt records a download's intent before the add, under its fence.
pub(crate) static NOTE: LazyLock<Lua> = LazyLock::new(|| lua!("note.lua"));

/// `lua/step_key.lua`: a running attempt takes (or gives back) the business key of a step it
/// runs as another command would (the ⚡ Auto job's download), under its fence.
pub(crate) static STEP_KEY: LazyLock<Lua> = LazyLock::new(|| lua!("step_key.lua"));

/// `lua/list.lua`: store a list's pages (and a resource search's releases), with their expiry,
/// for its buttons.
pub(crate) static LIST: LazyLock<Lua> = LazyLock::new(|| lua!("list.lua"));

/// `lua/login_gate.lua`: one MoviePilot login at a time for the deployment, none while refused.
pub(crate) static LOGIN_GATE: LazyLock<Lua> =
    LazyLock::new(|| lua!("login_gate.lua", "common.lua"));

/// `lua/ready.lua`: `/readyz`'s probe, run on a key of the deployment's slot.
pub(crate) static READY: LazyLock<Lua> = LazyLock::new(|| lua!("ready.lua"));

/// `lua/notify.lua`: a batch of MoviePilot history rows seen, collapsed, queued, and the
/// relay's position advanced, in one step.
pub(crate) static NOTIFY: LazyLock<Lua> =
    LazyLock::new(|| lua!("notify.lua", "common.lua", "prefs.lua"));

/// `lua/users_turn.lua`: whether this process reads MoviePilot's users now.
pub(crate) static USERS_TURN: LazyLock<Lua> =
    LazyLock::new(|| lua!("users_turn.lua", "common.lua"));

/// `lua/users.lua`: MoviePilot's own Telegram mapping replaced by one read, in one step.
pub(crate) static USERS: LazyLock<Lua> = LazyLock::new(|| lua!("users.lua", "common.lua"));

/// `lua/asked.lua`: a chat that asked for a media, remembered for the relay until it expires.
pub(crate) static ASKED: LazyLock<Lua> = LazyLock::new(|| lua!("asked.lua", "common.lua"));

/// `lua/grants.lua`: a grant given or taken back (`oncebot users grant|revoke`, Revoke).
pub(crate) static GRANTS: LazyLock<Lua> =
    LazyLock::new(|| lua!("grants.lua", "common.lua", "grants.lua"));

/// `lua/bot_claim.lua`: one `/claim <code>`: the grant, the code spent, wrong tries counted.
pub(crate) static BOT_CLAIM: LazyLock<Lua> =
    LazyLock::new(|| lua!("bot_claim.lua", "common.lua", "grants.lua"));

/// `lua/access.lua`: asking for access from the chat: the offer, the request and its cards,
/// the first admin's decision, expiry.
pub(crate) static ACCESS: LazyLock<Lua> =
    LazyLock::new(|| lua!("access.lua", "common.lua", "tokens.lua", "grants.lua"));

/// `lua/request.lua`: a media request asked (a requester's typed command), decided, withdrawn
/// or expired (issue 44).
pub(crate) static REQUEST: LazyLock<Lua> = LazyLock::new(|| {
    lua!(
        "request.lua",
        "common.lua",
        "create_job.lua",
        "tokens.lua",
        "quota.lua",
        "requests.lua"
    )
});

/// `lua/quota.lua`: a running job takes its weekly quota slots with its `quota` field.
pub(crate) static QUOTA: LazyLock<Lua> =
    LazyLock::new(|| lua!("quota.lua", "common.lua", "quota.lua"));

/// `lua/held_elsewhere.lua`: replies pending under another dispatcher, which a chat's newer
/// replies wait for.
pub(crate) static HELD_ELSEWHERE: LazyLock<Lua> = LazyLock::new(|| lua!("held_elsewhere.lua"));

/// `lua/card.lua`: one step of a live card, its edit and its closing notice.
pub(crate) static CARD: LazyLock<Lua> =
    LazyLock::new(|| lua!("card.lua", "common.lua", "prefs.lua"));

/// `lua/quiet_end.lua`: the notices held in quiet hours, summed up once the hours ended.
pub(crate) static QUIET_END: LazyLock<Lua> = LazyLock::new(|| lua!("quiet_end.lua", "common.lua"));

/// `lua/follow_turn.lua`: whether this process polls MoviePilot for the live cards now.
pub(crate) static FOLLOW_TURN: LazyLock<Lua> = LazyLock::new(|| lua!("follow_turn.lua"));

/// Every script, by the name of its file in `lua/`.
fn all() -> [(&'static str, &'static Lua); 35] {
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
        ("reply_form", &REPLY_FORM),
        ("lease", &LEASE),
        ("progress", &PROGRESS),
        ("step", &STEP),
        ("lock", &LOCK),
        ("unlock", &UNLOCK),
        ("notice", &NOTICE),
        ("liveness", &LIVENESS),
        ("note", &NOTE),
        ("step_key", &STEP_KEY),
        ("list", &LIST),
        ("ready", &READY),
        ("notify", &NOTIFY),
        ("login_gate", &LOGIN_GATE),
        ("users_turn", &USERS_TURN),
        ("users", &USERS),
        ("asked", &ASKED),
        ("held_elsewhere", &HELD_ELSEWHERE),
        ("grants", &GRANTS),
        ("bot_claim", &BOT_CLAIM),
        ("access", &ACCESS),
        ("request", &REQUEST),
        ("quota", &QUOTA),
        ("card", &CARD),
        ("follow_turn", &FOLLOW_TURN),
        ("quiet_end", &QUIET_END),
    ]
}

/// Every script's name and SHA1 (what SCRIPT EXISTS checks), includes pasted in.
pub fn hashes() -> Vec<(&'static str, String)> {
    all()
        .into_iter()
        .map(|(name, lua)| (name, lua.script.get_hash().to_string()))
        .collect()
}

/// One call of a script, the one way the ledger builds one: `EVALSHA <sha> <numkeys> KEYS...
/// ARGV...` written straight into one command buffer (`Script::prepare_invoke` would first hold
/// every key and argument in a Vec of its own). Each fixed key and argument is added with the
/// name the script's header gives it (`KEYS[2] jobs stream ...` → `.key("jobs stream", ..)`),
/// and the unit tests hold those names, in order, to the header; the parts repeated per item of
/// a batch are added with `.keys` / `.args`, unnamed.
pub(crate) struct ScriptCall {
    lua: &'static Lua,
    cmd: redis::Cmd,
    numkeys: usize,
    keys_written: usize,
    #[cfg(test)]
    pub named: Named,
}

/// An optional number as one argument: the number, or "" for none (`Option`'s own
/// `ToRedisArgs` writes no argument at all for `None`, which would shift every later one).
pub(crate) struct OrEmpty<T>(pub Option<T>);

impl<T: redis::ToRedisArgs> redis::ToRedisArgs for OrEmpty<T> {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        match &self.0 {
            Some(value) => value.write_redis_args(out),
            None => "".write_redis_args(out),
        }
    }
}

/// The names a call gave its fixed keys and arguments, in order (tests only).
#[cfg(test)]
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Named {
    pub keys: Vec<&'static str>,
    pub args: Vec<&'static str>,
}

impl ScriptCall {
    /// A call of `lua` with `numkeys` keys in all (fixed and repeated), room for about `args`
    /// arguments and `bytes` bytes.
    pub fn new(lua: &'static LazyLock<Lua>, numkeys: usize, args: usize, bytes: usize) -> Self {
        let lua: &'static Lua = lua;
        let mut cmd = redis::Cmd::with_capacity(3 + numkeys + args, 64 + bytes);
        cmd.arg("EVALSHA").arg(lua.script.get_hash()).arg(numkeys);
        ScriptCall {
            lua,
            cmd,
            numkeys,
            keys_written: 0,
            #[cfg(test)]
            named: Named::default(),
        }
    }

    /// The next fixed key, named as in the script's header.
    pub fn key(&mut self, _name: &'static str, key: impl redis::ToRedisArgs) -> &mut Self {
        #[cfg(test)]
        self.named.keys.push(_name);
        self.keys_written += 1;
        self.cmd.arg(key);
        self
    }

    /// Keys repeated per item (one job HASH per entry, ...).
    pub fn keys<K: redis::ToRedisArgs>(&mut self, keys: impl IntoIterator<Item = K>) -> &mut Self {
        for key in keys {
            self.keys_written += 1;
            self.cmd.arg(key);
        }
        self
    }

    /// The next fixed argument, named as in the script's header. Every key comes first.
    pub fn arg(&mut self, _name: &'static str, value: impl redis::ToRedisArgs) -> &mut Self {
        debug_assert_eq!(
            self.keys_written, self.numkeys,
            "{}: an argument before every key was written",
            self.lua.file
        );
        #[cfg(test)]
        self.named.args.push(_name);
        self.cmd.arg(value);
        self
    }

    /// Arguments repeated per item, or a variable tail.
    pub fn args<V: redis::ToRedisArgs>(
        &mut self,
        values: impl IntoIterator<Item = V>,
    ) -> &mut Self {
        for value in values {
            self.cmd.arg(value);
        }
        self
    }

    /// Sends the call; on NOSCRIPT (Redis restarted, or SCRIPT FLUSH) loads the script and sends
    /// it once more, so a restart of Redis costs one round trip, not an error.
    pub async fn send<T: redis::FromRedisValue>(
        &self,
        conn: &mut impl ConnectionLike,
    ) -> redis::RedisResult<T> {
        debug_assert_eq!(self.keys_written, self.numkeys, "{}: keys", self.lua.file);
        match self.cmd.query_async(conn).await {
            Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                self.lua.script.load_async(conn).await?;
                self.cmd.query_async(conn).await
            }
            result => result,
        }
    }

    /// The command, for a pipeline (which then owns NOSCRIPT handling).
    pub fn cmd(&self) -> &redis::Cmd {
        debug_assert_eq!(self.keys_written, self.numkeys, "{}: keys", self.lua.file);
        &self.cmd
    }

    /// The script this calls (tests hold the names to its header).
    #[cfg(test)]
    pub fn file(&self) -> &'static str {
        self.lua.file
    }
}

/// SCRIPT LOAD of every script (on a cluster, on the node that owns the deployment's slot:
/// `Conn` routes it there).
pub(crate) async fn load_all(conn: &mut impl ConnectionLike) -> redis::RedisResult<()> {
    for (_, lua) in all() {
        lua.script.load_async(conn).await?;
    }
    Ok(())
}

/// The condition of the admin notice that MoviePilot refuses oncebot's credentials
/// (`notice:credentials`), which `/readyz` reads.
pub const CREDENTIALS_NOTICE: &str = "credentials";

/// `ready.lua`'s call on a key of the deployment's slot.
pub(crate) fn ready_call(keys: &Keys) -> ScriptCall {
    let mut call = ScriptCall::new(&READY, 3, 0, 96);
    call.key("job sequence", keys.job_seq())
        .key("credentials notice", keys.notice(CREDENTIALS_NOTICE))
        .key("account", keys.mp_account());
    call
}

/// Whether the node that owns the deployment's slot has every script and runs them on its
/// keys, in one round trip: SCRIPT EXISTS of every script, EVALSHA of `ready.lua` on a key of
/// the slot (a standalone connection to another node of a cluster meets MOVED: an error), and
/// with `wait` a WAIT behind them (too few replicas: an error, as for an admission). `None`:
/// not loaded; else what `ready.lua` answered (1 to 4: the facts it reads).
pub(crate) async fn loaded(
    conn: &mut Conn,
    keys: &Keys,
    wait: Option<Wait>,
) -> redis::RedisResult<Option<i64>> {
    let mut exists = redis::cmd("SCRIPT");
    exists.arg("EXISTS");
    for (_, lua) in all() {
        exists.arg(lua.script.get_hash());
    }
    let probe = ready_call(keys);
    let mut pipe = redis::pipe();
    pipe.add_command(exists).add_command(probe.cmd().clone());
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
        Value::ServerError(e) if e.kind() == Some(redis::ServerErrorKind::NoScript) => None,
        other => match other.extract_error()? {
            Value::Int(n) => Some(n),
            _ => Some(1),
        },
    };
    if let (Some(wait), Some(acks)) = (wait, answers.next()) {
        wait.check(acks.extract_error()?)?;
    }
    Ok(probed.filter(|_| present.into_iter().all(|p| p)))
}

#[cfg(test)]
mod tests {
    use redis::ToRedisArgs as _;

    use super::OrEmpty;

    #[test]
    fn an_optional_number_is_always_one_argument() {
        assert_eq!(OrEmpty(Some(-42i64)).to_redis_args(), vec![b"-42".to_vec()]);
        assert_eq!(OrEmpty::<u64>(None).to_redis_args(), vec![Vec::<u8>::new()]);
    }
}
