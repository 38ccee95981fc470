//! One chat's replies in stream order. Entries read in one batch are handed to tasks that start
//! in whatever order the runtime's threads pick them up (an idle thread steals the first while
//! the spawning thread runs the second), so a per-chat lock taken inside each task let a result
//! overtake the "working on it" message queued just before it (issue 25, item 9). Instead each
//! entry takes its place in its chat's queue *before* its task is spawned, ordered by stream id,
//! and its task sends only once every earlier entry of that chat it knows of has been sent. An
//! older entry taken over from a dead dispatcher goes before the newer ones still waiting, never
//! before one already being sent.
//!
//! An entry another dispatcher holds (pending under its name: a live one sending it, or a dead
//! one whose liveness has not expired yet) is *held* here by its stream id: this dispatcher's
//! newer entries of that chat wait behind it until it is acknowledged or taken over (then the
//! entry itself takes its place). After a dispatcher was killed mid-send, 17 of a 60-notice
//! backlog arrived after 7-23 newer ones: its restarted successor sent what it read while the
//! old entries still waited for the dead one's liveness to expire.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

/// A stream id (`ms-seq`) and a tie-break that keeps two places of one id apart.
type Key = (u64, u64, u64);

/// The tie-break of an entry held elsewhere: after any of this process's own for the same id
/// (there are none: an entry is pending under one consumer at a time).
const HELD: u64 = u64::MAX;

#[derive(Default)]
struct Queue {
    /// The entry being sent now, if any: at most one per chat.
    sending: Option<Key>,
    /// This dispatcher's entries waiting, and the entries held elsewhere.
    waiting: BTreeSet<Key>,
    turn: Arc<Notify>,
}

#[derive(Default)]
struct Inner {
    chats: HashMap<i64, Queue>,
    /// Entries held by another dispatcher, by id: their chat and place.
    held: HashMap<String, (i64, Key)>,
}

#[derive(Default, Clone)]
pub struct ChatOrder {
    inner: Arc<Mutex<Inner>>,
    next: Arc<AtomicU64>,
}

/// An entry's place in its chat's queue; leaving it (by drop) lets the next one go.
pub struct Place {
    order: ChatOrder,
    chat: i64,
    key: Key,
    turn: Arc<Notify>,
    sending: bool,
}

fn stream_id(entry: &str) -> (u64, u64) {
    entry
        .split_once('-')
        .and_then(|(ms, seq)| Some((ms.parse().ok()?, seq.parse().ok()?)))
        // Not a stream id: after every real one.
        .unwrap_or((u64::MAX, u64::MAX))
}

/// Whether stream id `a` comes after `b`.
pub fn later(a: &str, b: &str) -> bool {
    stream_id(a) > stream_id(b)
}

impl ChatOrder {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Plain sets; a panic elsewhere cannot leave them inconsistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes `entry`'s place among `chat`'s replies (in place of its hold, if another
    /// dispatcher held it until now). Call it before the entry's task is spawned.
    pub fn enter(&self, chat: i64, entry: &str) -> Place {
        let (ms, seq) = stream_id(entry);
        let key = (ms, seq, self.next.fetch_add(1, Ordering::Relaxed));
        let mut inner = self.lock();
        if let Some((held_chat, held)) = inner.held.remove(entry)
            && let Some(queue) = inner.chats.get_mut(&held_chat)
        {
            queue.waiting.remove(&held);
            if held_chat != chat && queue.sending.is_none() && queue.waiting.is_empty() {
                inner.chats.remove(&held_chat);
            }
        }
        let queue = inner.chats.entry(chat).or_default();
        queue.waiting.insert(key);
        Place {
            order: self.clone(),
            chat,
            key,
            turn: queue.turn.clone(),
            sending: false,
        }
    }

    /// `entry` of `chat` is pending under another dispatcher: this one's later entries of the
    /// chat wait behind it until [`ChatOrder::release`] or [`ChatOrder::enter`]. Nothing if it is
    /// held already.
    pub fn hold(&self, chat: i64, entry: &str) {
        let mut inner = self.lock();
        if inner.held.contains_key(entry) {
            return;
        }
        let (ms, seq) = stream_id(entry);
        let key = (ms, seq, HELD);
        inner.held.insert(entry.to_string(), (chat, key));
        inner.chats.entry(chat).or_default().waiting.insert(key);
    }

    /// `entry`, held until now, was acknowledged elsewhere: the entries behind it may go.
    pub fn release(&self, entry: &str) {
        let mut inner = self.lock();
        let Some((chat, key)) = inner.held.remove(entry) else {
            return;
        };
        let Some(queue) = inner.chats.get_mut(&chat) else {
            return;
        };
        queue.waiting.remove(&key);
        if queue.sending.is_none() && queue.waiting.is_empty() {
            inner.chats.remove(&chat);
        } else {
            queue.turn.notify_waiters();
        }
    }

    /// The entries held elsewhere now.
    pub fn held(&self) -> Vec<String> {
        self.lock().held.keys().cloned().collect()
    }
}

impl Place {
    /// Waits until no other entry of the chat is being sent and none earlier waits.
    pub async fn wait(&mut self) {
        if self.sending {
            return;
        }
        loop {
            let turn = self.turn.clone();
            let notified = turn.notified();
            tokio::pin!(notified);
            // Registered before the check, so a turn handed over in between is not missed.
            notified.as_mut().enable();
            {
                let mut inner = self.order.lock();
                let queue = inner
                    .chats
                    .get_mut(&self.chat)
                    .expect("a place's queue lives while it does");
                if queue.sending.is_none() && queue.waiting.first() == Some(&self.key) {
                    queue.waiting.remove(&self.key);
                    queue.sending = Some(self.key);
                    self.sending = true;
                    return;
                }
            }
            notified.await;
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut inner = self.order.lock();
        let Some(queue) = inner.chats.get_mut(&self.chat) else {
            return;
        };
        if self.sending {
            queue.sending = None;
        } else {
            queue.waiting.remove(&self.key);
        }
        if queue.sending.is_none() && queue.waiting.is_empty() {
            inner.chats.remove(&self.chat);
        } else {
            queue.turn.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Places taken in stream order are served in it, whatever order their tasks start in.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_chat_is_served_in_stream_order_whatever_order_its_tasks_run() {
        let order = ChatOrder::default();
        let served = Arc::new(Mutex::new(Vec::new()));
        let ids = ["5-0", "5-1", "7-0", "12-3"];
        let mut places: Vec<_> = ids.iter().map(|id| (*id, order.enter(1, id))).collect();
        let mut tasks = Vec::new();
        // Started last first, and the first to arrive is not the first in line.
        while let Some((id, mut place)) = places.pop() {
            let served = served.clone();
            tasks.push(tokio::spawn(async move {
                place.wait().await;
                served.lock().unwrap().push(id);
                tokio::task::yield_now().await;
                drop(place);
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*served.lock().unwrap(), ids);
        assert!(
            order.lock().chats.is_empty(),
            "an idle chat leaves no queue behind"
        );
    }

    #[tokio::test]
    async fn an_older_entry_waits_for_the_one_being_sent_and_goes_before_newer_ones() {
        let order = ChatOrder::default();
        let mut sending = order.enter(1, "10-0");
        sending.wait().await;
        let mut newer = order.enter(1, "11-0");
        let mut older = order.enter(1, "9-0");
        let mut other_chat = order.enter(2, "12-0");
        // Another chat is not held up.
        tokio::time::timeout(Duration::from_secs(1), other_chat.wait())
            .await
            .unwrap();
        let waits = tokio::time::timeout(Duration::from_millis(50), older.wait()).await;
        assert!(waits.is_err(), "one entry of a chat at a time");
        drop(sending);
        tokio::time::timeout(Duration::from_secs(1), older.wait())
            .await
            .unwrap();
        let waits = tokio::time::timeout(Duration::from_millis(50), newer.wait()).await;
        assert!(waits.is_err());
        drop(older);
        tokio::time::timeout(Duration::from_secs(1), newer.wait())
            .await
            .unwrap();
    }

    /// An entry held by another dispatcher keeps the chat's later entries waiting until it is
    /// released (acknowledged there) or taken over here (then it goes first); other chats and
    /// earlier entries do not wait for it.
    #[tokio::test]
    async fn an_entry_held_elsewhere_goes_first_or_is_released() {
        let order = ChatOrder::default();
        order.hold(1, "10-0");
        order.hold(1, "10-0");
        let mut earlier = order.enter(1, "9-0");
        tokio::time::timeout(Duration::from_secs(1), earlier.wait())
            .await
            .expect("an earlier entry does not wait for a later one held elsewhere");
        drop(earlier);
        let mut newer = order.enter(1, "12-0");
        let mut other_chat = order.enter(2, "13-0");
        tokio::time::timeout(Duration::from_secs(1), other_chat.wait())
            .await
            .unwrap();
        let waits = tokio::time::timeout(Duration::from_millis(50), newer.wait()).await;
        assert!(waits.is_err(), "waits behind the held entry");
        // Taken over: it is ours now, and goes before the newer one.
        let mut taken = order.enter(1, "10-0");
        assert!(order.held().is_empty());
        tokio::time::timeout(Duration::from_secs(1), taken.wait())
            .await
            .unwrap();
        drop(taken);
        tokio::time::timeout(Duration::from_secs(1), newer.wait())
            .await
            .unwrap();
        drop(newer);

        // Released (acknowledged where it was held): the newer one goes.
        order.hold(3, "20-0");
        let mut after = order.enter(3, "21-0");
        let waits = tokio::time::timeout(Duration::from_millis(50), after.wait()).await;
        assert!(waits.is_err());
        order.release("20-0");
        tokio::time::timeout(Duration::from_secs(1), after.wait())
            .await
            .unwrap();
        drop(after);
        drop(other_chat);
        assert!(order.lock().chats.is_empty(), "nothing left behind");
    }

    #[test]
    fn stream_ids_sort_by_number_not_text() {
        assert!(stream_id("999-0") < stream_id("1000-0"));
        assert!(stream_id("1000-2") < stream_id("1000-10"));
        assert_eq!(stream_id("junk"), (u64::MAX, u64::MAX));
    }
}
