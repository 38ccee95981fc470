//! The ledger's connections: one Redis, or a Redis Cluster (`redis.cluster`), behind one type.
//!
//! Nothing outside the ledger knows which it is. `Conn` is an enum over the connection kinds
//! implementing `ConnectionLike` by delegation, so the standalone path costs one `match` per
//! command and no boxing of its own (the inner connections' futures are returned as they are).
//!
//! On a cluster every key oncebot touches shares the `{<key_prefix>}` hash tag, so the whole
//! deployment lives on one slot: its **home**. Commands with a key go where redis-rs routes
//! them (to the home slot's master, following MOVED and ASK, and refreshing the slot map after a
//! failover). Commands without one (`SCRIPT LOAD`, `SCRIPT EXISTS`, `WAIT`, `INFO`, `SCAN`) go to
//! the home slot's master too, instead of redis-rs's default for them (every node or every
//! primary): a `SCRIPT LOAD` sent to all nodes fails while any is down, and a bare `WAIT` would
//! be sent to every primary and answer the smallest count. Pipelines go to the home as well.
//! The one command asked of every master on purpose is `Ledger::memory_config`'s `CONFIG GET`
//! (`ledger::memory`), routed there explicitly.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, MultiplexedConnection};
use redis::cluster::{ClusterClient, ClusterClientBuilder, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};

use crate::config::cluster_nodes;

/// A connection onto the ledger's Redis: the shared one (`Ledger::connection`) or a stream
/// reader's own (`Ledger::stream_connection`).
#[derive(Clone)]
pub enum Conn {
    /// The shared connection to one Redis: reconnects on its own after a failure.
    Standalone(ConnectionManager),
    /// A stream reader's connection to one Redis: no response timeout (it blocks in
    /// XREADGROUP); the reader makes a new one after a failure.
    Stream(MultiplexedConnection),
    /// A Redis Cluster, and the deployment's slot.
    Cluster(ClusterConnection, Home),
}

/// The deployment's slot on a cluster: its master's route, and a key in it.
#[derive(Clone)]
pub struct Home {
    route: Route,
    key: Arc<str>,
}

/// How many redirections one pipeline follows before its answer is given as it is.
const PIPELINE_REDIRECTS: usize = 5;

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Standalone(c) => c.req_packed_command(cmd),
            Conn::Stream(c) => c.req_packed_command(cmd),
            Conn::Cluster(c, home) => {
                if !goes_home(cmd) {
                    return Box::pin(async move {
                        c.req_packed_command(cmd).await.map_err(unreachable_slot)
                    });
                }
                let routing =
                    RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(home.route));
                let cmd = cmd.clone();
                Box::pin(async move {
                    c.route_command(cmd, routing)
                        .await
                        .map_err(unreachable_slot)
                })
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Standalone(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Stream(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c, home) => Box::pin(async move {
                cluster_pipeline(c, home, pipeline, offset, count)
                    .await
                    .map_err(unreachable_slot)
            }),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Standalone(c) => c.get_db(),
            Conn::Stream(c) => c.get_db(),
            Conn::Cluster(c, _) => c.get_db(),
        }
    }
}

/// A pipeline on a cluster, to the home slot's master. redis-rs follows MOVED and ASK for a
/// command, but a pipeline's answers come back as they are, redirections among them (after a
/// failover every durable write, an EVALSHA and its WAIT, would fail until something else made
/// it refresh its slot map). So: on MOVED, one command with the home key through redis-rs's own
/// routing (which follows the MOVED and refreshes the slot map), then the pipeline again; on
/// ASK (the slot being migrated), the pipeline again behind ASKING to the node named. A node
/// that answers MOVED or ASK ran none of the pipeline's commands on the slot's keys.
async fn cluster_pipeline(
    c: &mut ClusterConnection,
    home: &Home,
    pipeline: &Pipeline,
    offset: usize,
    count: usize,
) -> RedisResult<Vec<Value>> {
    let mut answers = c
        .route_pipeline(
            pipeline.clone(),
            offset,
            count,
            SingleNodeRoutingInfo::SpecificNode(home.route),
        )
        .await?;
    for _ in 0..PIPELINE_REDIRECTS {
        match redirection(&answers) {
            None => return Ok(answers),
            Some(Redirection::Moved) => {
                // An error here (the slot's master cannot be reached) is the pipeline's.
                let mut probe = redis::cmd("EXISTS");
                probe.arg(&*home.key);
                c.req_packed_command(&probe).await?;
                answers = c
                    .route_pipeline(
                        pipeline.clone(),
                        offset,
                        count,
                        SingleNodeRoutingInfo::SpecificNode(home.route),
                    )
                    .await?;
            }
            Some(Redirection::Ask { host, port }) => {
                let mut asking = redis::pipe();
                asking.add_command(redis::cmd("ASKING"));
                for cmd in pipeline.cmd_iter() {
                    asking.add_command(cmd.clone());
                }
                answers = c
                    .route_pipeline(
                        asking,
                        offset + 1,
                        count,
                        SingleNodeRoutingInfo::ByAddress { host, port },
                    )
                    .await?;
            }
        }
    }
    match redirection(&answers) {
        None => Ok(answers),
        Some(_) => Err(redis::RedisError::from((
            redis::ErrorKind::Server(redis::ServerErrorKind::Moved),
            "still redirected after following it",
        ))),
    }
}

/// What redis-rs gives back when it could not follow a redirection (the slot's master is down
/// and the others still name it, until the failover), said as the cluster being unreachable:
/// a MOVED that reaches the ledger means "not a cluster" only on a standalone connection
/// (`LedgerError::NotACluster`).
fn unreachable_slot(e: redis::RedisError) -> redis::RedisError {
    match e.kind() {
        redis::ErrorKind::Server(redis::ServerErrorKind::Moved | redis::ServerErrorKind::Ask) => {
            redis::RedisError::from((
                redis::ErrorKind::ClusterConnectionNotFound,
                "the cluster node that owns the deployment's slot cannot be reached",
                e.to_string(),
            ))
        }
        _ => e,
    }
}

enum Redirection {
    Moved,
    Ask { host: String, port: u16 },
}

/// The first MOVED or ASK among a pipeline's answers.
fn redirection(answers: &[Value]) -> Option<Redirection> {
    answers.iter().find_map(|a| {
        let Value::ServerError(e) = a else {
            return None;
        };
        match e.kind()? {
            redis::ServerErrorKind::Moved => Some(Redirection::Moved),
            redis::ServerErrorKind::Ask => {
                // "ASK <slot> <host>:<port>"
                let (host, port) = e.details()?.split_whitespace().nth(1)?.rsplit_once(':')?;
                Some(Redirection::Ask {
                    host: host.to_string(),
                    port: port.parse().ok()?,
                })
            }
            _ => None,
        }
    })
}

/// A command without a key that the ledger (or the bench, or a test) sends about the
/// deployment: on a cluster it goes to the home slot's master, where redis-rs would send it to
/// every node, every primary or a random node.
fn goes_home(cmd: &Cmd) -> bool {
    const HOME: [&[u8]; 8] = [
        b"SCRIPT", b"WAIT", b"INFO", b"SCAN", b"PING", b"TIME", b"DBSIZE", b"ROLE",
    ];
    match cmd.args_iter().next() {
        Some(redis::Arg::Simple(name)) => HOME.iter().any(|h| name.eq_ignore_ascii_case(h)),
        _ => false,
    }
}

/// Where connections come from: one Redis's client, or the cluster's two clients (one with the
/// command timeout for the shared connection, one without for blocking reads: redis-rs fixes
/// a cluster connection's overall timeout when its client is built).
#[derive(Clone)]
pub(crate) enum Source {
    Standalone(redis::Client),
    Cluster(Box<ClusterSource>),
}

#[derive(Clone)]
pub(crate) struct ClusterSource {
    shared: ClusterClient,
    streams: ClusterClient,
    home: Home,
}

/// How a cluster request retries (a MOVED or ASK is followed at once; a node that does not
/// answer, as during a failover, is retried after a short wait while the slot map is
/// refreshed). The shared connection's requests are bounded by `redis.command_timeout_ms`
/// as a whole, so these only shape how that time is spent.
const CLUSTER_RETRIES: u32 = 8;
const CLUSTER_MIN_RETRY_WAIT_MS: u64 = 20;
const CLUSTER_MAX_RETRY_WAIT_MS: u64 = 500;

impl Source {
    /// Parses `url` (one URL, or comma-separated seed nodes with `cluster`); connects nothing.
    pub(crate) fn open(
        url: &str,
        cluster: bool,
        home_key: &str,
        timeout: Duration,
    ) -> RedisResult<Source> {
        if !cluster {
            return Ok(Source::Standalone(super::open_client(url)?));
        }
        let nodes = cluster_nodes(url);
        let builder = || {
            ClusterClientBuilder::new(nodes.iter().copied())
                .connection_timeout(timeout)
                .retries(CLUSTER_RETRIES)
                .min_retry_wait(CLUSTER_MIN_RETRY_WAIT_MS)
                .max_retry_wait(CLUSTER_MAX_RETRY_WAIT_MS)
        };
        Ok(Source::Cluster(Box::new(ClusterSource {
            shared: builder().response_timeout(timeout).build()?,
            streams: builder().overall_response_timeout(None).build()?,
            home: Home {
                route: Route::with_key(home_key, SlotAddr::Master),
                key: home_key.into(),
            },
        })))
    }

    /// The shared connection, made lazily: a Redis that is down at start-up makes calls fail
    /// until it answers, instead of stopping the process.
    pub(crate) fn shared(&self, timeout: Duration) -> RedisResult<Conn> {
        match self {
            Source::Standalone(client) => {
                // One connection attempt per call, not a retry loop: with the manager's
                // default six retries every webhook call waited about 7.5 s for its 503 while
                // Redis was down. The callers retry instead, and the next call reconnects.
                let config = redis::aio::ConnectionManagerConfig::new()
                    .set_response_timeout(Some(timeout))
                    .set_connection_timeout(Some(timeout))
                    .set_number_of_retries(0);
                Ok(Conn::Standalone(ConnectionManager::new_lazy_with_config(
                    client.clone(),
                    config,
                )?))
            }
            Source::Cluster(c) => {
                let config = ClusterConfig::new()
                    .set_connection_timeout(timeout)
                    .set_response_timeout(timeout);
                Ok(Conn::Cluster(
                    c.shared.get_pending_async_connection_with_config(config),
                    c.home.clone(),
                ))
            }
        }
    }

    /// A new connection for one stream reader: no response timeout (XREADGROUP BLOCK), and
    /// its own sockets, so a blocked read stalls no other command.
    pub(crate) async fn stream(&self) -> RedisResult<Conn> {
        const CONNECT: Duration = Duration::from_secs(5);
        match self {
            Source::Standalone(client) => {
                let config = redis::AsyncConnectionConfig::new()
                    .set_response_timeout(None)
                    .set_connection_timeout(Some(CONNECT));
                Ok(Conn::Stream(
                    client
                        .get_multiplexed_async_connection_with_config(&config)
                        .await?,
                ))
            }
            Source::Cluster(c) => {
                let config = ClusterConfig::new().set_connection_timeout(CONNECT);
                Ok(Conn::Cluster(
                    c.streams.get_async_connection_with_config(config).await?,
                    c.home.clone(),
                ))
            }
        }
    }
}

/// `redis.wait_replicas` and `redis.wait_timeout_ms`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wait {
    pub(crate) replicas: u32,
    pub(crate) timeout_ms: u64,
}

impl Wait {
    /// `WAIT <replicas> <timeout>`: on a cluster it goes to the home slot's master (`Conn`).
    pub(crate) fn cmd(self) -> Cmd {
        let mut cmd = redis::cmd("WAIT");
        cmd.arg(self.replicas).arg(self.timeout_ms);
        cmd
    }

    /// WAIT's answer (how many replicas have every write of this connection so far), as a
    /// `NotReplicated` error when it is too few.
    pub(crate) fn check(self, answer: Value) -> RedisResult<()> {
        let confirmed: i64 = redis::FromRedisValue::from_redis_value(answer)?;
        if confirmed >= i64::from(self.replicas) {
            return Ok(());
        }
        Err(redis::RedisError::from((
            redis::ErrorKind::Client,
            "too few replicas confirmed the write",
            format!("{NOT_REPLICATED} {confirmed} {}", self.replicas),
        )))
    }
}

/// Marks the detail of the error `Wait::check` makes: `NOTREPLICATED <confirmed> <wanted>`.
const NOT_REPLICATED: &str = "NOTREPLICATED";

/// The `(confirmed, wanted)` of an error made by `Wait::check`.
pub(crate) fn not_replicated(e: &redis::RedisError) -> Option<(u32, u32)> {
    if e.kind() != redis::ErrorKind::Client {
        return None;
    }
    let mut words = e.detail()?.strip_prefix(NOT_REPLICATED)?.split_whitespace();
    let confirmed = words.next()?.parse::<i64>().ok()?;
    let wanted = words.next()?.parse().ok()?;
    Some((u32::try_from(confirmed.max(0)).unwrap_or(u32::MAX), wanted))
}

/// The shared connection for writes that count only once `redis.wait_replicas` replicas have
/// them (`Ledger::durable`): every single command goes out as a pipeline of itself and a
/// `WAIT`, so the WAIT runs on the connection that wrote, right after the write (a WAIT sent
/// on its own could meet a fresh connection after a reconnect, which has written nothing and
/// would confirm at once). Without `Wait` it is the shared connection, unchanged. Pipelines
/// are sent as they are: the durable writes are single script calls.
pub(crate) struct Durable {
    conn: Conn,
    wait: Option<Wait>,
}

impl Durable {
    pub(crate) fn new(conn: Conn, wait: Option<Wait>) -> Durable {
        Durable { conn, wait }
    }
}

impl ConnectionLike for Durable {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let Some(wait) = self.wait else {
            return self.conn.req_packed_command(cmd);
        };
        Box::pin(async move {
            let mut pipe = redis::pipe();
            pipe.add_command(cmd.clone()).add_command(wait.cmd());
            let mut answers = self.conn.req_packed_commands(&pipe, 0, 2).await?;
            let (Some(acks), Some(value), None) = (answers.pop(), answers.pop(), answers.pop())
            else {
                return Err(redis::RedisError::from((
                    redis::ErrorKind::UnexpectedReturnType,
                    "a write and its WAIT did not answer twice",
                )));
            };
            let value = value.extract_error()?;
            wait.check(acks.extract_error()?)?;
            Ok(value)
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.conn.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.conn.get_db()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyless_commands_go_home_and_keyed_ones_are_routed_by_key() {
        for name in ["SCRIPT", "wait", "INFO", "SCAN", "PING"] {
            assert!(goes_home(&redis::cmd(name)), "{name}");
        }
        for name in ["EVALSHA", "XREADGROUP", "HGETALL", "XGROUP"] {
            assert!(!goes_home(&redis::cmd(name)), "{name}");
        }
    }

    #[test]
    fn a_short_wait_is_an_error_that_says_how_short() {
        let wait = Wait {
            replicas: 2,
            timeout_ms: 10,
        };
        assert!(wait.check(Value::Int(2)).is_ok());
        let e = wait.check(Value::Int(1)).unwrap_err();
        assert_eq!(not_replicated(&e), Some((1, 2)));
        let other = redis::RedisError::from((redis::ErrorKind::Client, "something else"));
        assert_eq!(not_replicated(&other), None);
    }
}
