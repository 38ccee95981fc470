//! `[household]`: how the household joins from the chat (issue 43).

use serde::Deserialize;

/// How the household joins from the chat.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HouseholdSettings {
    /// Lets `telegram.allowed_users` be empty: the deployment then starts with nobody allowed and
    /// nobody an admin, so it logs a claim code (`claim`) and is claimed from the chat.
    pub access_requests: bool,
}
