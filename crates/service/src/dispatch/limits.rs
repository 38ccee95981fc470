//! Telegram's send limits, kept in-process: about one message a second per chat (20 a minute in
//! a group), about 30 a second overall, and nothing to a chat until a 429's `retry_after` has
//! passed.
//!
//! One dispatcher process keeps them exactly; several dispatcher processes each keep their own,
//! so run one dispatcher (or divide the global rate between them).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::config::DispatcherSettings;

pub struct RateLimiter {
    global_interval: Duration,
    private_interval: Duration,
    group_interval: Duration,
    state: Mutex<State>,
}

struct State {
    next_global: Instant,
    /// When each chat may receive its next message.
    chats: HashMap<i64, Instant>,
}

impl RateLimiter {
    pub fn new(cfg: &DispatcherSettings) -> Self {
        Self {
            global_interval: Duration::from_secs(1) / cfg.global_per_second.max(1),
            private_interval: Duration::from_millis(cfg.per_chat_interval_ms),
            group_interval: Duration::from_millis(cfg.group_interval_ms),
            state: Mutex::new(State {
                next_global: Instant::now(),
                chats: HashMap::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is plain numbers; a panic elsewhere cannot leave it inconsistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until a message may go to `chat`, and reserves that slot.
    pub async fn acquire(&self, chat: i64) {
        loop {
            match self.try_reserve(chat) {
                Ok(slot) => {
                    tokio::time::sleep_until(slot).await;
                    return;
                }
                Err(chat_ready) => tokio::time::sleep_until(chat_ready).await,
            }
        }
    }

    /// `Ok(slot)`: a slot is reserved at `slot`. `Err(t)`: the chat may not receive before `t`.
    fn try_reserve(&self, chat: i64) -> Result<Instant, Instant> {
        let now = Instant::now();
        let mut st = self.lock();
        let chat_ready = st.chats.get(&chat).copied().unwrap_or(now);
        if chat_ready > now {
            return Err(chat_ready);
        }
        let slot = st.next_global.max(now);
        st.next_global = slot + self.global_interval;
        let interval = if chat < 0 {
            self.group_interval
        } else {
            self.private_interval
        };
        st.chats.insert(chat, slot + interval);
        if st.chats.len() > 10_000 {
            st.chats.retain(|_, t| *t > now);
        }
        Ok(slot)
    }

    /// A call to `chat` has been answered: its next message may go one interval from now. Counting
    /// from the answer (not the departure) keeps the interval at Telegram's end too, whatever
    /// the transit time of each call.
    pub fn sent(&self, chat: i64) {
        let interval = if chat < 0 {
            self.group_interval
        } else {
            self.private_interval
        };
        let until = Instant::now() + interval;
        let mut st = self.lock();
        let entry = st.chats.entry(chat).or_insert(until);
        *entry = (*entry).max(until);
    }

    /// After a 429: nothing goes to `chat` until `wait` has passed.
    pub fn pause_chat(&self, chat: i64, wait: Duration) {
        let until = Instant::now() + wait;
        let mut st = self.lock();
        let entry = st.chats.entry(chat).or_insert(until);
        *entry = (*entry).max(until);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(per_chat_ms: u64, global: u32) -> RateLimiter {
        RateLimiter::new(&DispatcherSettings {
            concurrency: 1,
            per_chat_interval_ms: per_chat_ms,
            group_interval_ms: per_chat_ms * 3,
            global_per_second: global,
            max_attempts: 1,
            retry_min_delay_ms: 1,
            retry_max_delay_ms: 1,
            reclaim_idle_ms: 1,
            read_block_ms: 1,
            reply_retention_secs: 1,
            set_commands: false,
            heartbeat_interval_ms: 1,
            liveness_ttl_ms: 1,
        })
    }

    #[tokio::test(start_paused = true)]
    async fn one_chat_gets_one_message_per_interval() {
        let l = limiter(1000, 1000);
        let start = Instant::now();
        for _ in 0..3 {
            l.acquire(7).await;
        }
        // Slots at 0 s, 1 s and 2 s.
        assert!(start.elapsed() >= Duration::from_secs(2));
        assert!(start.elapsed() < Duration::from_millis(2100));
    }

    #[tokio::test(start_paused = true)]
    async fn many_chats_share_the_global_rate() {
        let l = limiter(1000, 10);
        let start = Instant::now();
        for chat in 0..20 {
            l.acquire(chat).await;
        }
        // 20 messages at 10 per second: the last slot is at 1.9 s.
        assert!(start.elapsed() >= Duration::from_millis(1900));
        assert!(start.elapsed() < Duration::from_millis(2000));
    }

    #[tokio::test(start_paused = true)]
    async fn a_429_pauses_only_its_chat() {
        let l = limiter(10, 1000);
        l.pause_chat(1, Duration::from_secs(5));
        let start = Instant::now();
        l.acquire(2).await;
        assert!(start.elapsed() < Duration::from_millis(10));
        l.acquire(1).await;
        assert!(start.elapsed() >= Duration::from_secs(5));
    }
}
