//! What an entry on the replies stream is, as the scripts write it in its `kind` field.

use std::str::FromStr;

/// The kind of one reply on the replies stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplyKind {
    /// A job's result (succeeded, or failed for good).
    Result,
    /// A job failed for now and will run again.
    Retrying,
    /// A job's outcome is uncertain and waits for a person (to its user).
    NeedsReview,
    /// A job claim.lua gave up on (attempts or recoveries used up).
    Failed,
    /// "Still working on it", sent while a job runs long; later reports on the job edit it in place.
    Progress,
    /// How far a running job got (the ⚡ Auto job between its steps): edits the job's progress
    /// message in place, and is its progress message when none was delivered.
    Step,
    /// Admission refused the update (not allowed, not for this bot).
    Refusal,
    /// An allowed user's command their role does not allow (issue 22): one plain sentence.
    Forbidden,
    /// The answer to /help or /start.
    Help,
    /// A known command with bad arguments: how to use it.
    Usage,
    /// A command the bot does not have.
    UnknownCommand,
    /// The same command inside its duplicate window: which job it is.
    Duplicate,
    /// A destructive command's question, with Confirm / Cancel buttons.
    Confirm,
    /// A message to the admin chats about the service (refused MoviePilot credentials).
    Notice,
    /// A held job announced to the admin chats, with review buttons.
    Review,
    /// A person settled a held job: the user is told.
    Resolved,
    /// Removes a message's buttons (used or cancelled).
    ClearMarkup,
    /// Replaces a message's buttons.
    EditMarkup,
    /// A page of a stored list (a ◀ / ▶ tap, or a used button's `✓` on its page): the message's
    /// text and buttons edited in place.
    Page,
    /// A MoviePilot notification relayed to a chat (not a job's reply); sent as a photo when the
    /// entry carries a poster (`photo`).
    Notification,
    /// The answer to `/claim <code>` (issue 43): claimed, already claimed, a wrong code.
    Claim,
    /// A stranger's side of asking for access (issue 43): their id with the Ask button, that
    /// answer edited once they asked, and the decision they are told.
    Access,
    /// An admin's card of a request for access, with its Allow / Decline buttons, and its edits
    /// (who decided what, or expired).
    AccessCard,
    /// A requester's side of a media request (issue 44): "sent for approval" with its Withdraw
    /// button, and what became of it (approved, declined, expired).
    Request,
    /// An admin's card of a media request, with its Approve / Decline buttons (and its poster),
    /// and its edits (who decided what, withdrawn, expired).
    RequestCard,
    /// An edit of a live card (issue 45): the job's reply message, its text replaced with the
    /// state of the download or subscription it follows (card.lua). Dropped unsent when the
    /// card has a newer one (reply_begin.lua).
    Card,
    /// A live card's closing notice: a new message (a push the person hears; edits are silent)
    /// in reply to the card, saying it is in the library, or why not.
    CardEnd,
    /// A live card's text sent again (`/mine`'s Show, tap.lua): a new message in reply to the
    /// card when it is in that chat and still there.
    CardAgain,
}

impl ReplyKind {
    pub const ALL: [ReplyKind; 28] = [
        ReplyKind::Result,
        ReplyKind::Retrying,
        ReplyKind::NeedsReview,
        ReplyKind::Failed,
        ReplyKind::Progress,
        ReplyKind::Step,
        ReplyKind::Refusal,
        ReplyKind::Forbidden,
        ReplyKind::Help,
        ReplyKind::Usage,
        ReplyKind::UnknownCommand,
        ReplyKind::Duplicate,
        ReplyKind::Confirm,
        ReplyKind::Notice,
        ReplyKind::Review,
        ReplyKind::Resolved,
        ReplyKind::ClearMarkup,
        ReplyKind::EditMarkup,
        ReplyKind::Page,
        ReplyKind::Notification,
        ReplyKind::Claim,
        ReplyKind::Access,
        ReplyKind::AccessCard,
        ReplyKind::Request,
        ReplyKind::RequestCard,
        ReplyKind::Card,
        ReplyKind::CardEnd,
        ReplyKind::CardAgain,
    ];

    /// The `kind` field's value.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplyKind::Result => "result",
            ReplyKind::Retrying => "retrying",
            ReplyKind::NeedsReview => "needs_review",
            ReplyKind::Failed => "failed",
            ReplyKind::Progress => "progress",
            ReplyKind::Step => "step",
            ReplyKind::Refusal => "refusal",
            ReplyKind::Forbidden => "forbidden",
            ReplyKind::Help => "help",
            ReplyKind::Usage => "usage",
            ReplyKind::UnknownCommand => "unknown_command",
            ReplyKind::Duplicate => "duplicate",
            ReplyKind::Confirm => "confirm",
            ReplyKind::Notice => "notice",
            ReplyKind::Review => "review",
            ReplyKind::Resolved => "resolved",
            ReplyKind::ClearMarkup => "clear_markup",
            ReplyKind::EditMarkup => "edit_markup",
            ReplyKind::Page => "page",
            ReplyKind::Notification => "notification",
            ReplyKind::Claim => "claim",
            ReplyKind::Access => "access",
            ReplyKind::AccessCard => "access_card",
            ReplyKind::Request => "request",
            ReplyKind::RequestCard => "request_card",
            ReplyKind::Card => "card",
            ReplyKind::CardEnd => "card_end",
            ReplyKind::CardAgain => "card_again",
        }
    }

    /// Reports on a job, and so edits the job's "working on it" message in place when there is
    /// one instead of sending a new message.
    pub fn reports_on_job(self) -> bool {
        matches!(
            self,
            ReplyKind::Result
                | ReplyKind::Retrying
                | ReplyKind::NeedsReview
                | ReplyKind::Failed
                | ReplyKind::Step
        )
    }
}

impl FromStr for ReplyKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ReplyKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown reply kind {s:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in ReplyKind::ALL {
            assert_eq!(k.as_str().parse::<ReplyKind>().unwrap(), k);
        }
    }

    /// docs/redis.md's reply stream fields list exactly the kinds the code has (the README's
    /// list once missed `edit_markup`): operators read that list to know what a replies entry
    /// can be.
    #[test]
    fn the_redis_doc_lists_every_reply_kind_and_no_other() {
        // `ALL` is written by hand, and only what it holds is checked below. This match has no
        // wildcard, so a new variant does not compile until it is named here, next to this
        // reminder: add it to `ALL` too, and to the list in docs/redis.md.
        let _every_variant = |k: ReplyKind| match k {
            ReplyKind::Result
            | ReplyKind::Retrying
            | ReplyKind::NeedsReview
            | ReplyKind::Failed
            | ReplyKind::Progress
            | ReplyKind::Step
            | ReplyKind::Refusal
            | ReplyKind::Forbidden
            | ReplyKind::Help
            | ReplyKind::Usage
            | ReplyKind::UnknownCommand
            | ReplyKind::Duplicate
            | ReplyKind::Confirm
            | ReplyKind::Notice
            | ReplyKind::Review
            | ReplyKind::Resolved
            | ReplyKind::ClearMarkup
            | ReplyKind::EditMarkup
            | ReplyKind::Page
            | ReplyKind::Notification
            | ReplyKind::Claim
            | ReplyKind::Access
            | ReplyKind::AccessCard
            | ReplyKind::Request
            | ReplyKind::RequestCard
            | ReplyKind::Card
            | ReplyKind::CardEnd
            | ReplyKind::CardAgain => (),
        };
        let doc = crate::assets::read("docs/redis.md");
        let start = doc
            .find("**Reply stream fields**")
            .expect("docs/redis.md has its reply stream fields");
        let rest = &doc[start..];
        let list = &rest[rest.find("`kind` (").expect("the kinds follow `kind`")..];
        let list = &list[..list
            .find("`job_id`")
            .expect("the kinds end before `job_id`")];
        let listed: std::collections::BTreeSet<&str> = list
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|w| w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
            .filter(|w| *w != "kind")
            .collect();
        let named: std::collections::BTreeSet<&str> =
            ReplyKind::ALL.iter().map(|k| k.as_str()).collect();
        let unlisted: Vec<_> = named.difference(&listed).collect();
        assert!(unlisted.is_empty(), "docs/redis.md misses {unlisted:?}");
        let unknown: Vec<_> = listed.difference(&named).collect();
        assert!(
            unknown.is_empty(),
            "docs/redis.md lists {unknown:?}, no ReplyKind"
        );
    }

    /// Every kind a script writes is one of these (a kind added to a script without a variant
    /// here would be a string Rust cannot name).
    #[test]
    fn every_kind_the_scripts_write_is_named() {
        let root = crate::assets::path("lua");
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&root)
            .unwrap()
            .chain(std::fs::read_dir(root.join("include")).unwrap())
        {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "lua") {
                let text = std::fs::read_to_string(&path).unwrap();
                for opening in ["kind = '", "reply('"] {
                    for part in text.split(opening).skip(1) {
                        let kind = part.split('\'').next().unwrap().to_string();
                        found.push((path.display().to_string(), kind));
                    }
                }
            }
        }
        assert!(!found.is_empty(), "no literal reply kind found in lua/");
        for (file, kind) in found {
            assert!(
                kind.parse::<ReplyKind>().is_ok(),
                "{file} writes kind {kind:?}"
            );
        }
    }
}
