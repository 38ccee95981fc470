//! The field names of a job's HASH (`{P}:v1:job:<id>`, docs/redis.md), spelled once: the ledger
//! reads them, `oncebot jobs show` and the operator page list them, and the scripts write them
//! (`lua/include/create_job.lua` makes the row, claim.lua and complete.lua move it on). An
//! operator's `redis-cli HGETALL` shows these names, so they are an interface: a test below
//! holds each to the scripts.

pub const ID: &str = "id";
pub const STATUS: &str = "status";
pub const COMMAND: &str = "command";
pub const ARGS: &str = "args";
pub const CHAT_ID: &str = "chat_id";
pub const USER_ID: &str = "user_id";
pub const MESSAGE_ID: &str = "message_id";
pub const UPDATE_ID: &str = "update_id";
pub const IDEMPOTENCY_KEY: &str = "idempotency_key";
pub const ATTEMPTS: &str = "attempts";
pub const RECOVERIES: &str = "recoveries";
pub const ENTRY: &str = "entry";
pub const RECOVERY: &str = "recovery";
pub const ATTEMPT_BASE: &str = "attempt_base";
pub const AUTH_WAIT_SINCE: &str = "auth_wait_since";
pub const AUTH_WAITS: &str = "auth_waits";
pub const CREATED_AT: &str = "created_at";
pub const UPDATED_AT: &str = "updated_at";
pub const RESULT: &str = "result";
pub const ERROR: &str = "error";
pub const DUPLICATES: &str = "duplicates";
pub const REQUESTER: &str = "requester";
pub const ROLE: &str = "role";
/// The forum topic the job was asked in ("" for none): its replies go there.
pub const THREAD_ID: &str = "thread_id";
/// An approved request's job (issue 44): the admin who approved it, and the request.
pub const APPROVED_BY: &str = "approved_by";
pub const REQUEST: &str = "request";
/// What the job's live card follows (issue 45), JSON: written with a `succeeded` outcome, it
/// opens the card (complete.lua, include/cards.lua).
pub const FOLLOW: &str = "follow";

/// Every name above.
pub const ALL: [&str; 27] = [
    ID,
    STATUS,
    COMMAND,
    ARGS,
    CHAT_ID,
    USER_ID,
    MESSAGE_ID,
    UPDATE_ID,
    IDEMPOTENCY_KEY,
    ATTEMPTS,
    RECOVERIES,
    ENTRY,
    RECOVERY,
    ATTEMPT_BASE,
    AUTH_WAIT_SINCE,
    AUTH_WAITS,
    CREATED_AT,
    UPDATED_AT,
    RESULT,
    ERROR,
    DUPLICATES,
    REQUESTER,
    ROLE,
    APPROVED_BY,
    REQUEST,
    FOLLOW,
    THREAD_ID,
];

#[cfg(test)]
mod tests {
    /// Each name is one some script writes to a job (quoted as a Lua string), so a renamed
    /// field cannot leave Rust reading a field nobody writes any more.
    #[test]
    fn every_field_is_written_by_a_script() {
        let scripts: String = [
            "include/create_job.lua",
            "claim.lua",
            "include/claim.lua",
            "complete.lua",
            "include/common.lua",
            "request.lua",
        ]
        .iter()
        .map(|name| crate::assets::read(&format!("lua/{name}")))
        .collect();
        for name in super::ALL {
            assert!(
                scripts.contains(&format!("'{name}'")),
                "no script writes the job field {name:?}"
            );
        }
    }

    #[test]
    fn names_are_distinct() {
        let mut names = super::ALL.to_vec();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), super::ALL.len());
    }
}
