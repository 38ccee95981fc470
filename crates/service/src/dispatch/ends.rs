//! The replies' outcomes recorded together (a group commit, as the worker's outcomes are):
//! the sends that end at the same moment are recorded with one reply_end.lua call instead of
//! one call each. Each reply is still recorded on its own inside that one atomic step, and
//! each send waits for its own record before its chat's next reply goes, so nothing a reply's
//! record promises changes; only the number of script calls does.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::ledger::{Ledger, ReplyEnded as Ended, ReplyEntry, Unrecorded};

/// Most replies one reply_end.lua call records (its arguments stay small; Lua's unpack bounds
/// the XACK to a few thousand).
const MAX_GROUP: usize = 64;

/// The group forming now: whether a leader will take it, and its members.
#[derive(Default)]
pub(super) struct Ends {
    group: Mutex<Group>,
}

#[derive(Default)]
struct Group {
    led: bool,
    members: Vec<Member>,
}

/// One reply in a group, and where its answer goes.
struct Member {
    reply: ReplyEntry,
    sent: Ended,
    answer: oneshot::Sender<Result<(), Unrecorded>>,
}

impl Ends {
    /// Records `sent` for `reply` together with the others ended at the same moment: the first
    /// to arrive while no group is forming leads. It yields once, so that the sends ending in
    /// the same turn of the runtime can join, then records the group and answers each member.
    /// An error is the call's (every member of that call gets it, and may try again).
    pub(super) async fn record(
        &self,
        ledger: &Ledger,
        reply: &ReplyEntry,
        sent: &Ended,
        retention: Duration,
    ) -> Result<(), Unrecorded> {
        let (answer, answered) = oneshot::channel();
        let lead = {
            let mut group = self.lock();
            group.members.push(Member {
                reply: reply.clone(),
                sent: sent.clone(),
                answer,
            });
            !std::mem::replace(&mut group.led, true)
        };
        if lead {
            tokio::task::yield_now().await;
            let members = {
                let mut group = self.lock();
                group.led = false;
                std::mem::take(&mut group.members)
            };
            commit(ledger, members, retention).await;
        }
        answered.await.unwrap_or_else(|_| {
            Err(Unrecorded::because(
                "the group's leader stopped before recording it",
            ))
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Group> {
        // A plain struct; a panic elsewhere cannot leave it inconsistent.
        self.group.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One reply_end.lua call per [`MAX_GROUP`] members; every member is answered.
async fn commit(ledger: &Ledger, mut members: Vec<Member>, retention: Duration) {
    while !members.is_empty() {
        let rest = members.split_off(members.len().min(MAX_GROUP));
        let ended: Vec<(&ReplyEntry, &Ended)> =
            members.iter().map(|m| (&m.reply, &m.sent)).collect();
        let answer = ledger
            .reply_end_all(&ended, retention)
            .await
            .map_err(|e| Unrecorded::of(&e));
        for member in members {
            let _ = member.answer.send(answer.clone());
        }
        members = rest;
    }
}
