//! What the consumers read, typed, and the blocking reader that reads it.
//!
//! A blocking XREADGROUP gets a connection of its own with no response timeout: on the shared
//! multiplexed connection it would stall every other command behind it, and the shared
//! connection's response timeout would cut it off. The reader owns that connection, makes it
//! again after a failure, and hands out entries the worker and the dispatcher can use without
//! knowing how a stream entry looks on the wire.

use std::time::Duration;

use redis::streams::StreamId;

use super::entries::{JobEntry, Lane, LaneEntry};
use super::{Conn, Ledger, LedgerError, is_missing_group, keys};

/// A blocking reader of the ledger's streams, on a connection of its own.
pub struct StreamReader {
    ledger: Ledger,
    conn: Option<Conn>,
}

impl Ledger {
    /// A reader for one consumer loop; it connects on its first read.
    pub fn reader(&self) -> StreamReader {
        StreamReader {
            ledger: self.clone(),
            conn: None,
        }
    }
}

impl StreamReader {
    /// XREADGROUP `>` on the jobs stream for `consumer`, blocking up to `block`.
    pub async fn jobs(
        &mut self,
        consumer: &str,
        count: usize,
        block: Duration,
    ) -> Result<Vec<JobEntry>, LedgerError> {
        let stream = self.ledger.keys.jobs_stream();
        let ids = self
            .read(
                "jobs",
                &stream,
                keys::Stream::Jobs.group(),
                consumer,
                count,
                block,
            )
            .await?;
        Ok(ids.into_iter().map(JobEntry::from_stream).collect())
    }

    /// XREADGROUP `>` on a lane for `consumer`, blocking up to `block`.
    pub async fn lane(
        &mut self,
        lane: Lane,
        consumer: &str,
        count: usize,
        block: Duration,
    ) -> Result<Vec<LaneEntry>, LedgerError> {
        let stream = self.ledger.lane_stream(lane);
        let what = match lane {
            Lane::Replies => "replies",
            Lane::Callbacks => "callbacks",
        };
        let ids = self
            .read(what, &stream, lane.stream().group(), consumer, count, block)
            .await?;
        Ok(ids
            .iter()
            .map(|id| LaneEntry::from_stream(lane, id))
            .collect())
    }

    /// One read on the reader's connection (made first if there is none). After a failure
    /// other than a missing group the connection is dropped, so the next read makes a new one.
    /// A missing group (Redis lost its data, or someone deleted it) is created again, and the
    /// read yields nothing.
    async fn read(
        &mut self,
        what: &'static str,
        stream: &str,
        group: &str,
        consumer: &str,
        count: usize,
        block: Duration,
    ) -> Result<Vec<StreamId>, LedgerError> {
        const DOING: &str = "reading a stream";
        let conn = match self.conn.as_mut() {
            Some(conn) => conn,
            None => {
                let conn = self.ledger.stream_connection().await;
                self.conn.insert(conn.map_err(LedgerError::redis(DOING))?)
            }
        };
        let read = self
            .ledger
            .read_group(conn, stream, group, consumer, count, block)
            .await;
        match read {
            Err(e) if is_missing_group(&e) => {
                tracing::warn!(what, "the consumer group is missing; creating it");
                if let Err(e) = self.ledger.prepare().await {
                    tracing::error!(error = %e, "cannot create the consumer groups");
                }
                Ok(Vec::new())
            }
            Err(e) => {
                self.conn = None;
                Err(LedgerError::redis(DOING)(e))
            }
            Ok(ids) => Ok(ids),
        }
    }
}
