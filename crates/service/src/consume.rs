//! The read loop every stream consumer shares (the worker on the jobs stream, the dispatcher on
//! the replies and callbacks streams).
//!
//! Blocking reads get a connection of their own with no response timeout: on the shared
//! multiplexed connection an XREADGROUP BLOCK would stall every other command behind it, and the
//! default 500 ms response timeout would cut it off. A lost connection is re-made with backoff; a
//! missing consumer group (Redis lost its data, or someone deleted it) is created again.

use redis::streams::StreamId;
use tokio_util::sync::CancellationToken;

use crate::backoff::{self, Backoff};
use crate::ledger::{self, Conn, Ledger};
use crate::shutdown::sleep_or_stop;

/// One consumer of one stream: how it reads, and what it does with an entry.
pub(crate) trait Consumer: Send + Sync {
    /// What it reads, for logs.
    fn what(&self) -> &'static str;

    /// One XREADGROUP on `conn`; `None` ends the loop (e.g. its semaphore was closed).
    fn read<'a>(
        &'a self,
        conn: &'a mut Conn,
    ) -> impl Future<Output = Option<redis::RedisResult<Vec<StreamId>>>> + Send + 'a;

    /// Takes the entries of one read (typically spawning their processing).
    fn handle(&self, entries: Vec<StreamId>) -> impl Future<Output = ()> + Send + '_;
}

/// Runs `consumer` on a dedicated connection (from `Ledger::stream_connection`) until `stop`.
pub(crate) async fn read_loop(ledger: &Ledger, stop: &CancellationToken, consumer: &impl Consumer) {
    let what = consumer.what();
    let mut conn: Option<Conn> = None;
    let mut backoff = Backoff::new(backoff::REDIS);
    while !stop.is_cancelled() {
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match ledger.stream_connection().await {
                Ok(c) => conn.insert(c),
                Err(e) => {
                    tracing::error!(error = %e, what, "cannot connect to Redis for reading; retrying");
                    if sleep_or_stop(backoff.next_delay(), stop).await {
                        break;
                    }
                    continue;
                }
            },
        };
        let reply = tokio::select! {
            _ = stop.cancelled() => break,
            r = consumer.read(c) => r,
        };
        match reply {
            None => break,
            Some(Ok(entries)) => {
                backoff.reset();
                if !entries.is_empty() {
                    consumer.handle(entries).await;
                }
            }
            Some(Err(e)) if ledger::is_missing_group(&e) => {
                tracing::warn!(what, "the consumer group is missing; creating it");
                if let Err(e) = ledger.prepare().await {
                    tracing::error!(error = %e, "cannot create the consumer groups");
                }
            }
            Some(Err(e)) => {
                conn = None;
                tracing::error!(error = %e, what, "reading failed; retrying");
                if sleep_or_stop(backoff.next_delay(), stop).await {
                    break;
                }
            }
        }
    }
}
