//! The live cards (issue 45): read for the follower and `/mine`, changed only by card.lua (a
//! step, its edit and, at the end, its closing notice), include/cards.lua (opened with a job's
//! outcome), reply_end.lua (the message it edits, shown or gone) and follow_turn.lua (whose
//! poll it is).

use std::collections::HashMap;
use std::time::Duration;

use redis::AsyncCommands as _;

use super::keys::Stream;
use super::scripts::ScriptCall;
use super::{Ledger, LedgerError, scripts};
use crate::vocabulary::{CardState, NoticeCategory};

/// How long a closed card is kept (for `/mine`), seconds.
pub const CLOSED_CARD_SECS: u64 = 30 * 86_400;
/// The most open cards one poll reads: a bound on a poll's cost, not an expectation.
pub const MAX_OPEN_CARDS: isize = 2_000;

/// A card as stored: its state, what it follows, and what the follower saw last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    pub id: u64,
    pub state: CardState,
    /// Changes shown so far, in order: a step names the one it was computed from.
    pub seq: u64,
    pub chat_id: i64,
    /// Every other field (kind, title, hash, subscription_id, listed, ...), as stored.
    pub fields: HashMap<String, String>,
}

impl Card {
    fn from_hash(id: u64, mut fields: HashMap<String, String>) -> Option<Card> {
        let state = fields.remove("state")?.parse().ok()?;
        let seq = fields.remove("seq")?.parse().ok()?;
        let chat_id = fields.get("chat_id")?.parse().ok()?;
        Some(Card {
            id,
            state,
            seq,
            chat_id,
            fields,
        })
    }

    /// A field as text ("" when absent).
    pub fn text(&self, name: &str) -> &str {
        self.fields.get(name).map_or("", String::as_str)
    }

    /// A field as a number (`None` when absent or not one).
    pub fn number<T: std::str::FromStr>(&self, name: &str) -> Option<T> {
        self.fields.get(name).and_then(|v| v.parse().ok())
    }
}

/// One step of a card, as card.lua takes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CardStep {
    pub state: Option<CardState>,
    pub text: String,
    /// Only the progress changed: paced (card.lua's ARGV[5]).
    pub progress: bool,
    /// The closing notice of a final state ("" for none).
    pub notice: String,
    /// What the follower saw, kept in the card.
    pub seen: Vec<(&'static str, String)>,
}

/// What card.lua did with a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stepped {
    pub outcome: String,
    pub seq: u64,
}

impl Ledger {
    /// follow_turn.lua: the number of open cards when this process polls now, else 0.
    pub async fn follow_turn(&self, holder: &str, interval: Duration) -> Result<u64, LedgerError> {
        self.send(
            &self.follow_turn_call(holder, interval),
            "asking whose turn it is to follow the cards",
        )
        .await
    }

    pub(super) fn follow_turn_call(&self, holder: &str, interval: Duration) -> ScriptCall {
        let mut call = ScriptCall::new(&scripts::FOLLOW_TURN, 2, 2, 96);
        call.key("open cards ZSET", self.keys.cards_open())
            .key("lock key", self.keys.follow_lock())
            .arg("holder", holder)
            .arg("interval", interval.as_millis() as u64);
        call
    }

    /// The open cards, oldest first (at most [`MAX_OPEN_CARDS`]); a card whose HASH is gone
    /// or damaged is left out.
    pub async fn open_cards(&self) -> Result<Vec<Card>, LedgerError> {
        let mut conn = self.conn.clone();
        let ids: Vec<u64> = conn
            .zrange(self.keys.cards_open(), 0, MAX_OPEN_CARDS - 1)
            .await
            .map_err(LedgerError::redis("listing the open cards"))?;
        self.cards(&ids).await
    }

    /// One person's cards, newest first, at most `most` (a card whose HASH expired or is
    /// damaged left out): what `/mine` lists beside their requests.
    pub async fn cards_of(&self, user_id: i64, most: usize) -> Result<Vec<Card>, LedgerError> {
        let ids: Vec<u64> = self
            .conn
            .clone()
            .zrevrange(self.keys.cards_of(user_id), 0, most as isize - 1)
            .await
            .map_err(LedgerError::redis("listing a person's cards"))?;
        self.cards(&ids).await
    }

    /// Cards `ids`, in that order (a missing or damaged one left out).
    pub async fn cards(&self, ids: &[u64]) -> Result<Vec<Card>, LedgerError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.hgetall(self.keys.card(*id));
        }
        let hashes: Vec<HashMap<String, String>> =
            pipe.query_async(&mut self.conn.clone())
                .await
                .map_err(LedgerError::redis("reading the cards"))?;
        Ok(ids
            .iter()
            .zip(hashes)
            .filter_map(|(id, h)| Card::from_hash(*id, h))
            .collect())
    }

    /// card.lua: `step` of `card` as the follower computed it from `card.seq`.
    pub async fn card_step(
        &self,
        card: &Card,
        step: &CardStep,
        progress_every: Duration,
        clock: &str,
    ) -> Result<Stepped, LedgerError> {
        let call = self.card_step_call(card, step, progress_every, clock);
        let (outcome, seq): (String, String) =
            self.send_durable(&call, "recording a card's step").await?;
        Ok(Stepped {
            outcome,
            seq: seq.parse().unwrap_or(card.seq),
        })
    }

    pub(super) fn card_step_call(
        &self,
        card: &Card,
        step: &CardStep,
        progress_every: Duration,
        clock: &str,
    ) -> ScriptCall {
        let state = step.state.unwrap_or(card.state);
        let following = match (card.text("follow_digest"), card.text("follow_member")) {
            (d, m) if !d.is_empty() && !m.is_empty() => self.keys.following(d),
            _ => self.keys.cards_open(),
        };
        // A download ends in the library (入库); a subscription ends complete (订阅).
        let category = match card.text("kind") {
            "subscription" => NoticeCategory::Subscribe,
            _ => NoticeCategory::Transfer,
        };
        let mut call = ScriptCall::new(&scripts::CARD, 5, 11 + 2 * step.seen.len(), 512);
        call.key("card HASH", self.keys.card(card.id))
            .key("open cards ZSET", self.keys.cards_open())
            .key("replies stream", self.keys.replies_stream())
            .key("following ZSET", following)
            .key("notices prefix", self.keys.notice_prefix())
            .arg("replies consumer group", Stream::Replies.group())
            .arg("the card's seq as the caller read it", card.seq)
            .arg("state", state.as_str())
            .arg("the card's whole text", &step.text)
            .arg("\"progress\"", if step.progress { "progress" } else { "" })
            .arg(
                "the least time between two progress edits",
                progress_every.as_millis() as u64,
            )
            .arg("\"final\"", if state.is_final() { "final" } else { "" })
            .arg("final: the closing notice", &step.notice)
            .arg("how long a closed card is kept", CLOSED_CARD_SECS)
            .arg("the clock of quiet hours", clock)
            .arg("the closing notice's category", category.as_str());
        for (name, value) in &step.seen {
            call.args([*name, value.as_str()]);
        }
        call
    }

    /// The newest transfer-history row id the follower has read (0: the history was empty);
    /// `None`: it never read the history.
    pub async fn transfer_cursor(&self) -> Result<Option<u64>, LedgerError> {
        let got: Option<u64> = self
            .conn
            .clone()
            .hget(self.keys.follow_cursor(), "transfer_id")
            .await
            .map_err(LedgerError::redis("reading the follower's cursor"))?;
        Ok(got)
    }

    /// Moves the follower's cursor to `id` once every card was told of the rows up to it (a
    /// crash before this reads them again: a card keeps what it saw, so that is harmless).
    pub async fn set_transfer_cursor(&self, id: u64) -> Result<(), LedgerError> {
        self.conn
            .clone()
            .hset::<_, _, _, ()>(self.keys.follow_cursor(), "transfer_id", id)
            .await
            .map_err(LedgerError::redis("moving the follower's cursor"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// include/cards.lua keeps a person's index of cards as long as a closed card lives: the
    /// two numbers are one.
    #[test]
    fn a_persons_index_of_cards_lives_as_long_as_a_closed_card() {
        let script = crate::assets::read("lua/include/cards.lua");
        let kept = format!("local CARDS_KEPT_MS = {}\n", CLOSED_CARD_SECS * 1000);
        assert!(script.contains(&kept), "include/cards.lua: {kept}");
    }
}
