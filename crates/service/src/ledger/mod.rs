//! The ledger: oncebot's only boundary onto Redis.
//!
//! Nothing outside this module builds a key name or an EVAL call. Every state change is one Lua
//! script (see `lua/`), so a crash leaves either the whole change or none of it.

mod access;
mod attempts;
mod cards;
mod claims;
mod conn;
mod entries;
mod grants;
mod job_spec;
pub mod keys;
mod library;
mod liveness;
mod media_lock;
mod memory;
mod mp_account;
mod mp_login;
mod notices;
mod notify;
mod overview;
mod owners;
mod prefs;
mod quota;
mod reader;
mod releases;
mod replies;
mod requests;
mod review;
#[cfg(test)]
mod script_calls;
mod scripts;
mod tokens;
mod users;
mod versions;

use std::collections::BTreeMap;
use std::time::Duration;

use redis::AsyncCommands as _;
use serde::Serialize;

use crate::config::Settings;
use crate::vocabulary::job_field as field;
pub use crate::vocabulary::{JobState, ReplyKind, Resolution, Resolved, Role};
pub use access::{AccessLimits, AccessStep};
pub use attempts::{
    Attempt, AttemptLimits, ClaimTexts, Claimed, Completed, Completions, LEFT_ENTRY_IDLE, Outcome,
    Taken, Taker, Trim,
};
pub use cards::{CLOSED_CARD_SECS, Card, CardStep, Stepped};
pub use claims::{ClaimOutcome, ClaimTry, MOST_TRIES as MOST_CLAIM_TRIES};
pub use conn::Conn;
pub use entries::{CallbackEntry, JobEntry, Lane, LaneEntry, MarkupOp, ReplyEntry};
pub use grants::{GrantChange, GrantChanged, StoredDirectory};
pub use job_spec::JobSpec;
pub use keys::Keys;
pub use library::LibraryKey;
pub use liveness::{Beat, Beaten, Reaped, Role as ConsumerRole};
pub use memory::{MemoryConfig, NodeMemory, NodePersistence, PersistenceConfig};
pub use mp_account::{ACCOUNT_NOT_SUPERUSER, ACCOUNT_SUPERUSER, ACCOUNT_UNKNOWN, AccountFinding};
pub use notify::{NotifyMode, NotifyPosition, NotifyRecorded, NotifyRow, Skipped};
pub use overview::{ConsumerInfo, QueueStats, StateCounts, StreamStats};
pub use prefs::QuietSummary;
pub use quota::{QUOTA_WINDOW_MS, QuotaState};
pub use reader::StreamReader;
pub use releases::{StepKey, StoredList};
pub use replies::{Begin, Form, ReplyEnded};
pub use requests::{RequestLimits, RequestStep, StoredRequest};
pub use scripts::{CREDENTIALS_NOTICE, hashes as script_hashes};
pub use tokens::TapTexts;

/// What [`Ledger::ready`] found besides a working admission path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ready {
    /// A worker raised the admin notice that MoviePilot refuses oncebot's credentials (jobs
    /// wait): shared, so every process's `/readyz` says it.
    pub credentials_refused: bool,
    /// A worker found oncebot's MoviePilot account no superuser on MoviePilot v3, and stopped
    /// (`mp_account`): shared in the same way.
    pub account_not_superuser: bool,
}
use scripts::{OrEmpty, ScriptCall};
pub use tokens::{Asking, Listed, Owner, Solo, Tap, Tapped, Token, TokenAction, TokenGroup};
pub use users::StoredUsers;
pub use versions::{LAYOUT_NUMBER, LayoutCheck, LiveProcess, Registration};

/// A Redis failure, said with what oncebot was doing.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// Redis could not be reached or did not answer in time: the caller may try again later.
    #[error("Redis is unavailable while {doing}: {source}")]
    Unavailable {
        doing: &'static str,
        #[source]
        source: redis::RedisError,
    },
    /// Redis answered something the ledger does not expect (a bug, or keys written by hand).
    #[error("unexpected ledger data while {doing}: {detail}")]
    Corrupt { doing: &'static str, detail: String },
    /// A standalone connection reached a Redis Cluster node that does not own the deployment's
    /// slot: nothing can work until the setting says it is a cluster.
    #[error(
        "Redis answered {source} while {doing}: redis.url names a Redis Cluster node; \
         set ONCEBOT__REDIS__CLUSTER=true (and list one or more nodes in ONCEBOT__REDIS__URL)"
    )]
    NotACluster {
        doing: &'static str,
        #[source]
        source: redis::RedisError,
    },
    /// The write happened on the master, but fewer than `redis.wait_replicas` replicas
    /// confirmed it within `redis.wait_timeout_ms`: it does not count as done (a failover now
    /// could lose it), so the caller answers 503 or tries again.
    #[error(
        "only {confirmed} of {wanted} replicas confirmed the write while {doing} \
         (redis.wait_replicas, redis.wait_timeout_ms)"
    )]
    NotReplicated {
        doing: &'static str,
        confirmed: u32,
        wanted: u32,
    },
    /// Redis answers but refuses every write (`maxmemory` reached, or a failed save): nothing
    /// of this call was written (a script whose first write is refused changes nothing), and
    /// the caller does as for `Unavailable` until Redis takes writes again.
    #[error("Redis refuses writes ({}) while {doing}: {source}", refusal.cause())]
    WritesRefused {
        doing: &'static str,
        refusal: WriteRefusal,
        #[source]
        source: redis::RedisError,
    },
}

/// Why Redis refuses writes, from its error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteRefusal {
    /// `OOM`: `maxmemory` reached under `noeviction`.
    OutOfMemory,
    /// `MISCONF`: the last RDB save failed (`stop-writes-on-bgsave-error`), or writing the AOF
    /// failed; Redis answers both with this code.
    LastSaveFailed,
}

impl WriteRefusal {
    /// The refusal a Redis error code names, if it names one.
    pub fn of_code(code: Option<&str>) -> Option<WriteRefusal> {
        match code {
            Some("OOM") => Some(WriteRefusal::OutOfMemory),
            Some("MISCONF") => Some(WriteRefusal::LastSaveFailed),
            _ => None,
        }
    }

    /// The cause in a few fixed words, for logs.
    pub fn cause(self) -> &'static str {
        match self {
            WriteRefusal::OutOfMemory => "out of memory",
            WriteRefusal::LastSaveFailed => "its last save failed",
        }
    }

    /// The line `/readyz` answers while it lasts.
    pub fn public_reason(self) -> &'static str {
        match self {
            WriteRefusal::OutOfMemory => "Redis refuses writes: out of memory",
            WriteRefusal::LastSaveFailed => "Redis refuses writes: its last save failed",
        }
    }
}

impl LedgerError {
    /// The failure in fixed words for an answer anyone may read (`/readyz`, `/metrics`): Redis's
    /// own text names node addresses and the auth state, so it stays in the log.
    pub fn public_reason(&self) -> &'static str {
        match self {
            LedgerError::Unavailable { .. } => "redis unavailable",
            LedgerError::Corrupt { .. } => "unexpected data in the ledger (see the log)",
            LedgerError::NotACluster { .. } => {
                "redis cluster misconfigured: set ONCEBOT__REDIS__CLUSTER=true"
            }
            LedgerError::NotReplicated { .. } => {
                "redis replicas did not confirm the write in time (redis.wait_replicas)"
            }
            LedgerError::WritesRefused { refusal, .. } => refusal.public_reason(),
        }
    }

    /// Why Redis refused this call's writes, if that is what failed.
    pub fn refusal(&self) -> Option<WriteRefusal> {
        match self {
            LedgerError::WritesRefused { refusal, .. } => Some(*refusal),
            _ => None,
        }
    }

    /// Whether the failure passes by itself (Redis away, refusing writes, replicas slow): the
    /// caller keeps what it holds and tries again, rather than giving it up.
    pub fn passes(&self) -> bool {
        !matches!(
            self,
            LedgerError::Corrupt { .. } | LedgerError::NotACluster { .. }
        )
    }

    fn redis(doing: &'static str) -> impl FnOnce(redis::RedisError) -> LedgerError {
        move |source| {
            if let Some((confirmed, wanted)) = conn::not_replicated(&source) {
                return LedgerError::NotReplicated {
                    doing,
                    confirmed,
                    wanted,
                };
            }
            if let Some(refusal) = WriteRefusal::of_code(source.code()) {
                return LedgerError::WritesRefused {
                    doing,
                    refusal,
                    source,
                };
            }
            match source.kind() {
                redis::ErrorKind::Server(
                    redis::ServerErrorKind::Moved | redis::ServerErrorKind::Ask,
                ) => LedgerError::NotACluster { doing, source },
                _ => LedgerError::Unavailable { doing, source },
            }
        }
    }
}

/// A failure to record something held (a worker's outcome, a sent reply's end), as it travels
/// back to its holder from the task that made the call: the error, said, and whether it passes
/// by itself ([`LedgerError::passes`]: the holder keeps it and tries for as long as that lasts).
#[derive(Debug, Clone)]
pub struct Unrecorded {
    pub error: String,
    pub passes: bool,
}

impl Unrecorded {
    pub fn of(e: &LedgerError) -> Unrecorded {
        Unrecorded {
            error: e.to_string(),
            passes: e.passes(),
        }
    }

    /// Nothing was recorded for a reason of the process's own (the recording task stopped):
    /// trying again would not help.
    pub fn because(why: &str) -> Unrecorded {
        Unrecorded {
            error: why.to_string(),
            passes: false,
        }
    }
}

/// The one place a Redis URL becomes a client (`Ledger::connect`, and the demo's and bench's
/// probes of a Redis they may use). Opening only parses the URL; nothing connects yet.
pub fn open_client(url: &str) -> redis::RedisResult<redis::Client> {
    redis::Client::open(url)
}

/// Redis's answer when a stream's consumer group does not exist (Redis lost its data, or
/// someone deleted the group): readers create it again, reclaimers and gauges find nothing.
/// Only the ledger sees it: callers get entries or a `LedgerError`.
pub(crate) fn is_missing_group(e: &redis::RedisError) -> bool {
    e.code() == Some(NO_GROUP)
}

/// [`is_missing_group`] for one command's error inside a pipeline's answer.
pub(crate) fn is_missing_group_reply(e: &redis::ServerError) -> bool {
    e.code() == NO_GROUP
}

const NO_GROUP: &str = "NOGROUP";

/// What one update asks of the ledger.
#[derive(Debug, Clone)]
pub struct Admission {
    pub update_id: i64,
    pub chat_id: i64,
    pub user_id: i64,
    /// The message to reply to, if any.
    pub message_id: Option<i64>,
    /// The forum topic the message is in (`Message::topic`): the job's replies go there.
    pub thread_id: Option<i64>,
    /// The MoviePilot user a job acts for (`None`: the service account); with a name, the
    /// command's duplicate window is the person's in every chat (`commands::Asker`).
    pub requester: Option<String>,
    /// The asker's role, stored in the job (`Admin` for everyone while nobody is mapped).
    pub role: Role,
    pub action: AdmissionAction,
}

#[derive(Debug, Clone)]
pub enum AdmissionAction {
    /// Create a job, unless the update or (inside its window) the command was seen before.
    Job(JobSpec),
    /// A command that needs a confirmation: unless the command is inside its duplicate window,
    /// store `buttons` and queue `prompt` with `markup` (Confirm / Cancel). No job until a tap.
    Confirm {
        job: JobSpec,
        prompt: String,
        buttons: TokenGroup,
        markup: String,
    },
    /// A house command: a job, one per window for the whole house (`job.idem` names the
    /// window). A repeat inside the window is answered with `repeat` ("{time}" the first job's
    /// start at `utc_offset_secs`) and `force`'s button, which runs it again anyway (an
    /// admin's, once).
    HouseJob {
        job: JobSpec,
        repeat: String,
        utc_offset_secs: i32,
        force: TokenGroup,
        force_markup: String,
    },
    /// Queue a reply and make no job. With a non-zero `window`, the same `once_key` replies
    /// once per window (so a stranger's every message does not cost a refusal).
    Reply {
        kind: ReplyKind,
        text: String,
        window: Duration,
        once_key: String,
    },
}

/// What the admission script decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admitted {
    /// A new job, now `pending` on the jobs stream.
    New { job_id: u64 },
    /// Telegram delivered this update before; nothing changed.
    DuplicateUpdate {
        job_id: Option<u64>,
        state: Option<JobState>,
    },
    /// The same command inside its window: the user was told about this existing job.
    DuplicateCommand { job_id: u64, state: JobState },
    /// The question with Confirm / Cancel buttons was queued; no job yet.
    Confirming,
    /// A reply was queued; no job.
    Replied,
    /// A reply that already went out inside its window; nothing queued.
    Suppressed,
}

impl Admitted {
    /// A short name for logs and metrics.
    pub fn outcome(&self) -> &'static str {
        match self {
            Admitted::New { .. } => "new",
            Admitted::DuplicateUpdate { .. } => "duplicate_update",
            Admitted::DuplicateCommand { .. } => "duplicate_command",
            Admitted::Confirming => "confirming",
            Admitted::Replied => "replied",
            Admitted::Suppressed => "suppressed",
        }
    }
}

/// One job's ledger row, as stored in its HASH.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Job {
    pub id: u64,
    pub status: JobState,
    /// The command's name, as stored (`commands::JobCommand` reads it; a name this release does
    /// not know, a newer release's job, stays as it is).
    pub command: String,
    pub args: String,
    pub chat_id: i64,
    pub user_id: i64,
    pub update_id: i64,
    pub idempotency_key: String,
    pub attempts: u64,
    /// Milliseconds since the Unix epoch (Redis server time).
    pub created_at: u64,
    pub updated_at: u64,
    pub result: Option<String>,
    pub error: Option<String>,
    /// How many later updates were recognised as this same command.
    pub duplicates: u64,
    /// The MoviePilot user the job acts for; `None`: the service account oncebot logs in with.
    pub requester: Option<String>,
    /// The asker's role when the job was made (a job from before roles reads as `admin`: every
    /// allowed user was one).
    pub role: Role,
    /// Every other field of the HASH, as stored (later layers add their own).
    #[serde(flatten)]
    pub extra: BTreeMap<String, String>,
}

impl Job {
    fn from_hash(mut h: BTreeMap<String, String>) -> Result<Job, String> {
        let mut job = Job::from_known(&mut |k| h.remove(k))?;
        job.extra = h;
        Ok(job)
    }

    /// A job from its known fields, each taken by `take` (`None`: the job lacks it); `extra`
    /// is left empty for the caller.
    fn from_known(take: &mut dyn FnMut(&str) -> Option<String>) -> Result<Job, String> {
        /// A number field; missing or "" reads as 0.
        fn number<T: std::str::FromStr + Default>(v: Option<String>, k: &str) -> Result<T, String> {
            match v {
                None => Ok(T::default()),
                Some(v) if v.is_empty() => Ok(T::default()),
                Some(v) => v.parse().map_err(|_| format!("field {k} is {v:?}")),
            }
        }
        let mut num = |k: &str| number::<u64>(take(k), k);
        let id = num(field::ID)?;
        let attempts = num(field::ATTEMPTS)?;
        let created_at = num(field::CREATED_AT)?;
        let updated_at = num(field::UPDATED_AT)?;
        let duplicates = num(field::DUPLICATES)?;
        let mut signed = |k: &str| number::<i64>(take(k), k);
        let chat_id = signed(field::CHAT_ID)?;
        let user_id = signed(field::USER_ID)?;
        let update_id = signed(field::UPDATE_ID)?;
        Ok(Job {
            id,
            status: match take(field::STATUS) {
                Some(v) => v.parse().map_err(|_| format!("field status is {v:?}"))?,
                None => return Err("field status is missing".into()),
            },
            command: take(field::COMMAND).unwrap_or_default(),
            args: take(field::ARGS).unwrap_or_default(),
            chat_id,
            user_id,
            update_id,
            idempotency_key: take(field::IDEMPOTENCY_KEY).unwrap_or_default(),
            attempts,
            created_at,
            updated_at,
            result: take(field::RESULT).filter(|v| !v.is_empty()),
            error: take(field::ERROR).filter(|v| !v.is_empty()),
            duplicates,
            requester: take(field::REQUESTER).filter(|v| !v.is_empty()),
            role: match take(field::ROLE) {
                None => Role::Admin,
                Some(r) if r.is_empty() => Role::Admin,
                Some(r) => r.parse().map_err(|e| format!("field role: {e}"))?,
            },
            extra: BTreeMap::new(),
        })
    }
}

/// Which jobs `list_jobs` returns.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    pub status: Option<JobState>,
    pub chat_id: Option<i64>,
    pub limit: usize,
}

/// KEYS of `lua/enqueue.lua` (see its header).
const ENQUEUE_KEYS: usize = 10;

/// Every text the ledger's scripts write into chats on their own (a repeat's answer, a tap's
/// answer, the review notice), handed in by whoever opens the ledger: the ledger composes none.
/// `i18n::Texts::for_ledger` builds them in the configured language.
#[derive(Debug, Clone)]
pub struct LedgerTexts {
    /// Each state's label, for "{state}" in the answers to repeats and taps.
    pub state_labels: [(JobState, &'static str); JobState::ALL.len()],
    /// The answer to a command repeated inside its window ("{job}", "{state}").
    pub duplicate: &'static str,
    pub taps: TapTexts,
    /// The reply to the asker when a review button settles their job, per decision ("{job}").
    pub resolved: [(Resolution, &'static str); Resolution::ALL.len()],
    /// The review notice for admin chats ("{job}", "{command}", "{args}", "{attempts}",
    /// "{error}") and its buttons' labels, in `Resolution::ALL`'s order.
    pub review: &'static str,
    pub review_buttons: [&'static str; Resolution::ALL.len()],
}

/// Handle onto one deployment's ledger. Cheap to clone: one multiplexed connection underneath.
#[derive(Clone)]
pub struct Ledger {
    /// Where `conn` and every stream reader's own connection come from.
    source: conn::Source,
    conn: Conn,
    /// `redis.wait_replicas` and `redis.wait_timeout_ms`: what a durable write waits for
    /// (`durable`); `None` sends no WAIT at all.
    wait: Option<conn::Wait>,
    keys: Keys,
    /// `ARGV[23..]` of enqueue.lua: state names and their labels, built once.
    state_labels: Vec<String>,
    duplicate_template: String,
    update_retention_secs: u64,
    chat_index_len: u32,
    jobs_index_len: u32,
    /// How long a settled job is kept (a review button settles one).
    job_retention_secs: u64,
    /// ARGV[15] of tap.lua: its answers, built once.
    tap_texts: String,
    /// Admin chats to tell about jobs entering `needs_review`, and their buttons' lifetime.
    review: tokens::ReviewNotices,
    /// What this process last learned of whether any subscription owner is recorded.
    owners_seen: std::sync::Arc<owners::OwnersSeen>,
}

impl Ledger {
    /// Connects lazily: a Redis that is down at start-up makes calls fail (and the webhook
    /// answer 503) until it comes back, instead of stopping the process. `redis.cluster` picks
    /// the connection kind (`conn`); nothing outside the ledger knows which it is.
    pub fn connect(settings: &Settings, texts: LedgerTexts) -> anyhow::Result<Ledger> {
        use anyhow::Context as _;
        let keys = Keys::new(&settings.redis.key_prefix);
        let timeout = Duration::from_millis(settings.redis.command_timeout_ms);
        let source = conn::Source::open(
            settings.redis.url.expose(),
            settings.redis.cluster,
            &keys.jobs_stream(),
            timeout,
        )
        .context(if settings.redis.cluster {
            "redis.url is not a comma-separated list of Redis URLs (ONCEBOT__REDIS__URL)"
        } else {
            "redis.url is not a valid Redis URL (ONCEBOT__REDIS__URL)"
        })?;
        let conn = source
            .shared(timeout)
            .context("setting up the Redis connection")?;
        let wait = (settings.redis.wait_replicas > 0).then_some(conn::Wait {
            replicas: settings.redis.wait_replicas,
            timeout_ms: settings.redis.wait_timeout_ms,
        });
        let state_labels = texts
            .state_labels
            .iter()
            .flat_map(|(s, label)| [s.as_str().to_string(), label.to_string()])
            .collect();
        Ok(Ledger {
            source,
            conn,
            wait,
            keys,
            state_labels,
            duplicate_template: texts.duplicate.to_string(),
            update_retention_secs: settings.ledger.update_retention_secs,
            chat_index_len: settings.ledger.chat_index_len,
            jobs_index_len: settings.ledger.jobs_index_len,
            job_retention_secs: settings.worker.job_retention_secs,
            tap_texts: tokens::tap_texts_json(&texts),
            review: tokens::ReviewNotices {
                admin_chats: settings.telegram.admin_chats.clone(),
                ttl: Duration::from_secs(settings.telegram.review_ttl_secs),
                template: texts.review,
                buttons: texts.review_buttons,
            },
            owners_seen: Default::default(),
        })
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// A clone of the shared multiplexed connection (not for blocking reads).
    pub fn connection(&self) -> Conn {
        self.conn.clone()
    }

    /// A new connection of a stream reader's own (`consume::read_loop`): a blocking
    /// XREADGROUP must not stall the shared connection.
    pub(crate) async fn stream_connection(&self) -> redis::RedisResult<Conn> {
        self.source.stream().await
    }

    /// The shared connection for a write that must reach `redis.wait_replicas` replicas before
    /// it counts (an admission, an outcome record): each command is sent with a `WAIT` behind
    /// it on the same connection, and fails with `NotReplicated` when too few confirm. The
    /// shared connection itself when no replica is asked for (no WAIT, no cost).
    pub(crate) fn durable(&self) -> conn::Durable {
        conn::Durable::new(self.conn.clone(), self.wait)
    }

    /// Sends a script call on the shared connection; `doing` says what failed.
    pub(super) async fn send<T: redis::FromRedisValue>(
        &self,
        call: &ScriptCall,
        doing: &'static str,
    ) -> Result<T, LedgerError> {
        call.send(&mut self.conn.clone())
            .await
            .map_err(LedgerError::redis(doing))
    }

    /// The same on the durable connection (`Ledger::durable`: WAIT for the replicas asked for).
    pub(super) async fn send_durable<T: redis::FromRedisValue>(
        &self,
        call: &ScriptCall,
        doing: &'static str,
    ) -> Result<T, LedgerError> {
        call.send(&mut self.durable())
            .await
            .map_err(LedgerError::redis(doing))
    }

    /// Loads the scripts and creates the consumer groups; safe to call on every start.
    pub async fn prepare(&self) -> Result<(), LedgerError> {
        let mut conn = self.conn.clone();
        scripts::load_all(&mut conn)
            .await
            .map_err(LedgerError::redis("loading the Lua scripts"))?;
        for stream in keys::Stream::ALL {
            let created: redis::RedisResult<()> = conn
                .xgroup_create_mkstream(stream.key(&self.keys), stream.group(), "0")
                .await;
            match created {
                Ok(()) => {}
                Err(e) if e.code() == Some("BUSYGROUP") => {}
                Err(e) => return Err(LedgerError::redis("creating consumer groups")(e)),
            }
        }
        Ok(())
    }

    /// The admission path works (what `/readyz` reports): the node that owns the deployment's
    /// slot runs a script on its keys (a node of a cluster that does not own it answers MOVED
    /// to a standalone connection), the scripts are loaded there, and with
    /// `redis.wait_replicas` as many replicas confirm a write as an admission needs. Also says
    /// whether a worker of the deployment found MoviePilot refusing oncebot's credentials.
    pub async fn ready(&self) -> Result<Ready, LedgerError> {
        let mut conn = self.conn.clone();
        let loaded = scripts::loaded(&mut conn, &self.keys, self.wait)
            .await
            .map_err(LedgerError::redis(
                "checking that the slot's node runs the scripts",
            ))?;
        let Some(probed) = loaded else {
            // Redis restarted (scripts are not persisted), SCRIPT FLUSH, or a failover to a
            // replica that never loaded them: load them again. (The notice, if any, is read
            // at the next probe.)
            scripts::load_all(&mut conn)
                .await
                .map_err(LedgerError::redis("loading the Lua scripts"))?;
            return Ok(Ready::default());
        };
        let facts = probed - 1;
        Ok(Ready {
            credentials_refused: facts & 1 != 0,
            account_not_superuser: facts & 2 != 0,
        })
    }

    /// Runs `lua/enqueue.lua` for one update: the transport check, the business check and
    /// the job's creation (or the reply) happen in one atomic step.
    pub async fn admit(&self, a: &Admission) -> Result<Admitted, LedgerError> {
        let call = self.admit_call(a);
        let (outcome, job, state): (String, String, String) =
            self.send_durable(&call, "admitting an update").await?;
        admitted_from(&outcome, &job, &state)
    }

    /// What enqueue.lua is told of an admission's action, in one match.
    fn enqueue_args<'a>(&'a self, a: &'a Admission) -> EnqueueArgs<'a> {
        let job_args = |mode: &'static str, job: &'a JobSpec| EnqueueArgs {
            mode,
            command: job.command,
            args: &job.args,
            idem: &job.idem,
            window: job.window,
            kind: ReplyKind::Duplicate,
            text: &self.duplicate_template,
            recovery: job.recovery.as_str(),
            spec: String::new(),
            prompt: "",
            markup: "",
            utc_offset_secs: 0,
        };
        match &a.action {
            AdmissionAction::Job(job) => job_args("job", job),
            AdmissionAction::Confirm {
                job,
                prompt,
                buttons,
                markup,
            } => EnqueueArgs {
                spec: buttons.spec().to_string(),
                prompt,
                markup,
                ..job_args("confirm", job)
            },
            AdmissionAction::HouseJob {
                job,
                repeat,
                utc_offset_secs,
                force,
                force_markup,
            } => EnqueueArgs {
                text: repeat,
                spec: force.spec().to_string(),
                markup: force_markup,
                utc_offset_secs: *utc_offset_secs,
                ..job_args("job", job)
            },
            AdmissionAction::Reply {
                kind,
                text,
                window,
                once_key,
            } => EnqueueArgs {
                mode: "reply",
                command: "",
                args: "",
                idem: once_key,
                window: *window,
                kind: *kind,
                text,
                recovery: "none",
                spec: String::new(),
                prompt: "",
                markup: "",
                utc_offset_secs: 0,
            },
        }
    }

    /// enqueue.lua's call for one admission (written into one buffer: this is the webhook's
    /// hot path, where a Vec per argument was some 40 allocations and frees per update).
    pub(super) fn admit_call(&self, a: &Admission) -> ScriptCall {
        let EnqueueArgs {
            mode,
            command,
            args,
            idem,
            window,
            kind,
            text,
            recovery,
            spec,
            prompt,
            markup,
            utc_offset_secs,
        } = self.enqueue_args(a);
        let mut call = ScriptCall::new(
            &scripts::ENQUEUE,
            ENQUEUE_KEYS,
            24 + self.state_labels.len(),
            1024 + args.len() + text.len(),
        );
        self.admission_keys(&mut call, a, idem);
        call.arg("mode", mode)
            .arg("update_id", a.update_id)
            .arg("update retention", self.update_retention_secs)
            .arg("chat_id", a.chat_id)
            .arg("user_id", a.user_id)
            .arg("message_id", OrEmpty(a.message_id))
            .arg("command", command)
            .arg("arguments", args)
            .arg("idempotency key", idem)
            .arg("duplicate window", window.as_millis() as u64)
            .arg("reply kind", kind.as_str())
            .arg("mode \"reply\": the text", text)
            .arg("chat index length", self.chat_index_len)
            .arg("jobs index length", self.jobs_index_len)
            .arg(
                "consumer group of the jobs stream",
                keys::Stream::Jobs.group(),
            )
            .arg(
                "consumer group of the replies stream",
                keys::Stream::Replies.group(),
            )
            .arg("recovery policy", recovery)
            .arg("mode \"confirm\": the buttons' token group", spec)
            .arg("mode \"confirm\": the question", prompt)
            .arg("mode \"confirm\": the buttons", markup)
            .arg(
                "the MoviePilot user the job acts for",
                a.requester.as_deref().unwrap_or(""),
            )
            .arg("the asker's role", a.role.as_str())
            .arg("seconds east of UTC for \"{time}\"", utc_offset_secs)
            .arg("the forum topic", OrEmpty(a.thread_id))
            .args(&self.state_labels);
        call
    }

    /// enqueue.lua's keys, in its header's order; `idem` names the command key (`-`: none).
    fn admission_keys(&self, call: &mut ScriptCall, a: &Admission, idem: &str) {
        let k = &self.keys;
        call.key("updates HASH", k.updates(a.update_id))
            .key(
                "command key",
                k.command(if idem.is_empty() { "-" } else { idem }),
            )
            .key("job id sequence", k.job_seq())
            .key("job key prefix", k.job_prefix())
            .key("jobs stream", k.jobs_stream())
            .key("replies stream", k.replies_stream())
            .key("chat index", k.chat_jobs(a.chat_id))
            .key("jobs index", k.jobs_index())
            .key("token prefix", k.token_prefix())
            .key("token-group pfx", k.token_group_prefix());
    }
}

/// The arguments of enqueue.lua that depend on the admission's action (see its header).
struct EnqueueArgs<'a> {
    mode: &'static str,
    command: &'static str,
    args: &'a str,
    idem: &'a str,
    window: Duration,
    kind: ReplyKind,
    text: &'a str,
    recovery: &'static str,
    spec: String,
    prompt: &'a str,
    markup: &'a str,
    /// ARGV[23]: where "{time}" is read.
    utc_offset_secs: i32,
}

/// enqueue.lua's answer (see its header).
fn admitted_from(outcome: &str, job: &str, state: &str) -> Result<Admitted, LedgerError> {
    let corrupt = |detail: String| LedgerError::Corrupt {
        doing: "admitting an update",
        detail,
    };
    let job_id = || {
        job.parse::<u64>()
            .map_err(|_| corrupt(format!("job id {job:?}")))
    };
    let job_state = || {
        state
            .parse::<JobState>()
            .map_err(|e| corrupt(format!("job {job}: {e}")))
    };
    Ok(match outcome {
        "new" => Admitted::New { job_id: job_id()? },
        "duplicate_update" if job.is_empty() => Admitted::DuplicateUpdate {
            job_id: None,
            state: None,
        },
        "duplicate_update" => Admitted::DuplicateUpdate {
            job_id: Some(job_id()?),
            // A job that expired from the ledger leaves its update_id's entry behind.
            state: job_state().ok(),
        },
        "duplicate_command" => Admitted::DuplicateCommand {
            job_id: job_id()?,
            state: job_state()?,
        },
        "confirming" => Admitted::Confirming,
        "replied" => Admitted::Replied,
        "suppressed" => Admitted::Suppressed,
        other => return Err(corrupt(format!("admission outcome {other:?}"))),
    })
}

impl Ledger {
    /// The next getUpdates offset of long polling (`None` before the first update).
    pub async fn poll_offset(&self) -> Result<Option<i64>, LedgerError> {
        let mut conn = self.conn.clone();
        conn.get(self.keys.poll_offset())
            .await
            .map_err(LedgerError::redis("reading the polling offset"))
    }

    /// Records that every update below `next` was admitted; called only after its admission.
    /// Writes this process's probe key (`Keys::probe`, a few seconds' expiry): whether Redis
    /// takes writes now. No state: nothing reads it.
    pub async fn probe_writes(&self, process: &str, ttl: Duration) -> Result<(), LedgerError> {
        let mut conn = self.conn.clone();
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        conn.pset_ex(self.keys.probe(process), 1, ms)
            .await
            .map_err(LedgerError::redis("probing whether Redis takes writes"))
    }

    pub async fn commit_poll_offset(&self, next: i64) -> Result<(), LedgerError> {
        let mut conn = self.conn.clone();
        conn.set(self.keys.poll_offset(), next)
            .await
            .map_err(LedgerError::redis("saving the polling offset"))
    }

    /// One job, or `None` if it does not exist (never did, or expired).
    pub async fn job(&self, id: u64) -> Result<Option<Job>, LedgerError> {
        let mut conn = self.conn.clone();
        let h: BTreeMap<String, String> = conn
            .hgetall(self.keys.job(id))
            .await
            .map_err(LedgerError::redis("reading a job"))?;
        if h.is_empty() {
            return Ok(None);
        }
        Job::from_hash(h)
            .map(Some)
            .map_err(|detail| LedgerError::Corrupt {
                doing: "reading a job",
                detail: format!("job {id}: {detail}"),
            })
    }

    /// The jobs `ids` name, in that order, in one pipeline; ids whose job expired are skipped.
    async fn jobs_by_id(
        &self,
        conn: &mut Conn,
        ids: &[u64],
        doing: &'static str,
    ) -> Result<Vec<Job>, LedgerError> {
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.hgetall(self.keys.job(*id));
        }
        let rows: Vec<BTreeMap<String, String>> = pipe
            .query_async(conn)
            .await
            .map_err(LedgerError::redis(doing))?;
        let mut jobs = Vec::with_capacity(rows.len());
        for (id, row) in ids.iter().zip(rows) {
            if row.is_empty() {
                continue;
            }
            jobs.push(Job::from_hash(row).map_err(|detail| LedgerError::Corrupt {
                doing,
                detail: format!("job {id}: {detail}"),
            })?);
        }
        Ok(jobs)
    }

    /// Recent jobs, newest first: a chat's index, or the global one.
    pub async fn list_jobs(&self, filter: &JobFilter) -> Result<Vec<Job>, LedgerError> {
        const PAGE: isize = 200;
        let mut conn = self.conn.clone();
        let mut found = Vec::new();
        let mut start: isize = 0;
        while found.len() < filter.limit {
            // Both indexes are LISTs, newest first.
            let index = match filter.chat_id {
                Some(chat) => self.keys.chat_jobs(chat),
                None => self.keys.jobs_index(),
            };
            let ids: Vec<u64> = conn
                .lrange(index, start, start + PAGE - 1)
                .await
                .map_err(LedgerError::redis("reading the jobs index"))?;
            if ids.is_empty() {
                break;
            }
            start += ids.len() as isize;
            for job in self.jobs_by_id(&mut conn, &ids, "reading jobs").await? {
                if filter.status.is_some_and(|s| job.status != s) {
                    continue;
                }
                found.push(job);
                if found.len() == filter.limit {
                    break;
                }
            }
        }
        Ok(found)
    }
}
