//! `[ledger]`: how long the ledger remembers updates, and how long its per-chat and job indexes
//! grow.

use serde::Deserialize;

use super::{SettingError, env_name, nonzero};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerSettings {
    /// Telegram keeps undelivered updates for 24 h, so an update_id must be remembered at least
    /// that long (its `updates:` HASH expires this long after its last write).
    pub update_retention_secs: u64,
    pub chat_index_len: u32,
    pub jobs_index_len: u32,
}

impl LedgerSettings {
    pub(super) fn validate(&self) -> Result<(), SettingError> {
        if self.update_retention_secs < 86_400 {
            return Err(SettingError::new(
                "ledger.update_retention_secs",
                format!(
                    "is {}, shorter than the 24 hours Telegram keeps an update",
                    self.update_retention_secs
                ),
                format!(
                    "set {} to at least 86400",
                    env_name("ledger.update_retention_secs")
                ),
            ));
        }
        nonzero(
            &[
                ("ledger.chat_index_len", self.chat_index_len.into()),
                ("ledger.jobs_index_len", self.jobs_index_len.into()),
            ],
            "",
            "a positive number",
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Needs;
    use crate::config::test_env::load;

    #[test]
    fn short_update_retention_is_rejected() {
        let s = load(&[("ONCEBOT__LEDGER__UPDATE_RETENTION_SECS", "3600")]).unwrap();
        assert_eq!(
            s.validate(Needs::default()).unwrap_err().key,
            "ledger.update_retention_secs"
        );
    }
}
