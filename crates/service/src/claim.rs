//! Claiming a deployment that has no admin (issue 43): while the directory gives nobody `admin`,
//! the deployment has one claim code, and `/claim <code>` in a private chat makes its sender an
//! admin (a grant). A deployment that maps nobody, where every allowed user is an admin, has none.
//!
//! Policy, in one place:
//! - **One code for the deployment.** A process's follower (`users_sync::Follower`) that finds no
//!   admin offers a fresh code with SET NX ([`CODE_TTL`], `claim:code`); the process whose SET
//!   won logs it once, at WARN (the one secret oncebot logs on purpose: whoever reads the log
//!   runs the server); every other process logs, once, that a code is waiting. A code not used
//!   within the hour expires, and the next follower to look offers (and logs) a new one.
//! - **Only a digest in Redis.** `claim:code` holds SHA-256 of the code; ingress digests what is
//!   typed and bot_claim.lua compares. The code is never in a reply, `/metrics`, the operator
//!   page or Redis in clear.
//! - **Hard to guess.** [`CODE_LEN`] characters of Crockford's base32 from the thread's CSPRNG
//!   (80 bits), typed case-insensitively (`O` as `0`, `I` and `L` as `1`, dashes and spaces
//!   ignored), and at most `ledger::MOST_CLAIM_TRIES` answers an hour per Telegram id.

use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::ledger::Ledger;
use crate::users::Directory;

/// How long a claim code is valid.
pub const CODE_TTL: Duration = Duration::from_secs(3600);

/// Characters in a claim code.
pub const CODE_LEN: usize = 16;

/// Crockford's base32: no I, L, O or U to misread.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// A fresh claim code: [`CODE_LEN`] characters, 5 random bits each (a byte's low five bits:
/// 256 is a multiple of 32, so each character is uniform).
pub fn new_code() -> String {
    rand::random::<[u8; CODE_LEN]>()
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(b & 31)]))
        .collect()
}

/// A code as typed, in the form it was made: upper case, `O` read as `0` and `I`, `L` as `1`,
/// dashes and blanks dropped.
pub fn normalise(typed: &str) -> String {
    typed
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| match c.to_ascii_uppercase() {
            'O' => '0',
            'I' | 'L' => '1',
            c => c,
        })
        .collect()
}

/// What Redis keeps of a code (and what a typed one is compared by): SHA-256, hex, of its
/// normal form.
pub fn digest(code: &str) -> String {
    hex::encode(Sha256::digest(normalise(code).as_bytes()))
}

/// A process's part in the claim code: offers one while nobody is an admin, and says what it
/// did once per stretch without an admin.
#[derive(Debug, Default)]
pub struct ClaimWatch {
    /// This process said a code is waiting (another made it) since an admin was last seen.
    told_waiting: bool,
}

impl ClaimWatch {
    /// After each read of the directory: with no admin, a code offered (SET NX); logged at WARN
    /// when this process made it, else "waiting" once. With an admin, nothing (and no Redis).
    pub async fn check(&mut self, ledger: &Ledger, directory: &Directory) {
        if !directory.admins().is_empty() {
            self.told_waiting = false;
            return;
        }
        let code = new_code();
        match ledger.offer_claim_code(&digest(&code), CODE_TTL).await {
            Ok(true) => {
                self.told_waiting = true;
                tracing::warn!(
                    "nobody is an admin of this deployment: send /claim {code} to the bot in a \
                     private chat within an hour to become its admin (this code is logged once, \
                     here; it is spent by the first claim)"
                );
            }
            Ok(false) if !self.told_waiting => {
                self.told_waiting = true;
                tracing::info!(
                    "nobody is an admin of this deployment: a claim code is waiting (logged at \
                     warn by the process that made it; a new one is made and logged within an \
                     hour)"
                );
            }
            Ok(false) => {}
            Err(e) => tracing::debug!(error = %e, "offering a claim code failed; tried again"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_has_eighty_bits_and_reads_back_however_it_is_typed() {
        let code = new_code();
        assert_eq!(code.len(), CODE_LEN);
        assert!(code.bytes().all(|b| ALPHABET.contains(&b)), "{code}");
        assert_ne!(code, new_code());
        let typed = format!(" {}-{} ", &code[..8].to_lowercase(), &code[8..]);
        assert_eq!(digest(&typed), digest(&code));
        assert_eq!(normalise("o1l-i"), "0111");
        assert_ne!(digest("ABC"), digest("ABD"));
        assert_eq!(digest(&code).len(), 64);
    }
}
