//! One chat's replies in stream order. Entries read in one batch are handed to tasks that start
//! in whatever order the runtime's threads pick them up (an idle thread steals the first while
//! the spawning thread runs the second), so a per-chat lock taken inside each task let a result
//! overtake the "working on it" message queued just before it (issue 25, item 9). Instead each entry takes its place in its chat's queue *before* its task is
//! spawned, ordered by stream id, and its task sends only once every earlier entry of that chat
//! it knows of has been sent. An older entry taken over from a dead dispatcher goes before the
//! newer ones still waiting, never before one already being sent.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

/// A stream id (`ms-seq`) and a tie-break that keeps two places of one id apart.
type Key = (u64, u64, u64);

#[derive(Default)]
struct Queue {
    /// The entry being sent now, if any: at most one per chat.
    sending: Option<Key>,
    waiting: BTreeSet<Key>,
    turn: Arc<Notify>,
}

#[derive(Default, Clone)]
pub struct ChatOrder {
    chats: Arc<Mutex<HashMap<i64, Queue>>>,
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

impl ChatOrder {
    fn lock(&self) -> MutexGuard<'_, HashMap<i64, Queue>> {
        // Plain sets; a panic elsewhere cannot leave them inconsistent.
        self.chats.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes `entry`'s place among `chat`'s replies. Call it before the entry's task is spawned.
    pub fn enter(&self, chat: i64, entry: &str) -> Place {
        let (ms, seq) = stream_id(entry);
        let key = (ms, seq, self.next.fetch_add(1, Ordering::Relaxed));
        let mut chats = self.lock();
        let queue = chats.entry(chat).or_default();
        queue.waiting.insert(key);
        Place {
            order: self.clone(),
            chat,
            key,
            turn: queue.turn.clone(),
            sending: false,
        }
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
                let mut chats = self.order.lock();
                let queue = chats
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
        let mut chats = self.order.lock();
        let Some(queue) = chats.get_mut(&self.chat) else {
            return;
        };
        if self.sending {
            queue.sending = None;
        } else {
            queue.waiting.remove(&self.key);
        }
        if queue.sending.is_none() && queue.waiting.is_empty() {
            chats.remove(&self.chat);
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
            order.lock().is_empty(),
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

    #[test]
    fn stream_ids_sort_by_number_not_text() {
        assert!(stream_id("999-0") < stream_id("1000-0"));
        assert!(stream_id("1000-2") < stream_id("1000-10"));
        assert_eq!(stream_id("junk"), (u64::MAX, u64::MAX));
    }
}
