//! Where a live card's download or subscription stands (issue 45): a card HASH's `state`, as
//! card.lua stores it and `/mine` reads it.

use std::str::FromStr;

/// The state a live card shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CardState {
    /// A download MoviePilot took, not yet seen in the downloader's list.
    Started,
    /// In the downloader's list of what is downloading (percent, time left).
    Downloading,
    /// Left the list, its transfer not yet in the transfer history.
    Downloaded,
    /// Every transfer row of its hash succeeded (final).
    InLibrary,
    /// A transfer row of its hash failed, with MoviePilot's reason (final).
    TransferFailed,
    /// Gone from the downloader with no transfer row within a day (final).
    Vanished,
    /// A subscription MoviePilot holds: what it lacks, has downloaded and has filed.
    Subscribed,
    /// The subscription left MoviePilot's list with a subscription-history row: done (final).
    Completed,
    /// The subscription left the list without one: cancelled (final).
    Cancelled,
    /// Followed for `follow.max_days` without an end: no longer followed (final).
    Expired,
}

impl CardState {
    pub const ALL: [CardState; 10] = [
        CardState::Started,
        CardState::Downloading,
        CardState::Downloaded,
        CardState::InLibrary,
        CardState::TransferFailed,
        CardState::Vanished,
        CardState::Subscribed,
        CardState::Completed,
        CardState::Cancelled,
        CardState::Expired,
    ];

    /// The `state` field's value.
    pub fn as_str(self) -> &'static str {
        match self {
            CardState::Started => "started",
            CardState::Downloading => "downloading",
            CardState::Downloaded => "downloaded",
            CardState::InLibrary => "in_library",
            CardState::TransferFailed => "transfer_failed",
            CardState::Vanished => "vanished",
            CardState::Subscribed => "subscribed",
            CardState::Completed => "completed",
            CardState::Cancelled => "cancelled",
            CardState::Expired => "expired",
        }
    }

    /// Whether the card ends with this state (card.lua closes it).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            CardState::InLibrary
                | CardState::TransferFailed
                | CardState::Vanished
                | CardState::Completed
                | CardState::Cancelled
                | CardState::Expired
        )
    }
}

impl FromStr for CardState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CardState::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown card state {s:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_the_scripts_open_cards_in_a_known_state() {
        for k in CardState::ALL {
            assert_eq!(k.as_str().parse::<CardState>().unwrap(), k);
        }
        let open = crate::assets::read("lua/include/cards.lua");
        for first in [CardState::Started, CardState::Subscribed] {
            assert!(open.contains(&format!("'{}'", first.as_str())), "{first:?}");
            assert!(!first.is_final());
        }
    }
}
