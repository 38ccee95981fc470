//! What an answer means: its status (credential refused, not a superuser, or an error of the
//! right kind), its body within the size limit, `success` read before `data` (`accepted`),
//! bare v2 or enveloped v3 payloads (`decode`), and lists read row by row. Every check names
//! the call and counts its error by route; no body of a successful call is ever quoted.

use reqwest::StatusCode;
use serde::de::DeserializeOwned;

use super::Inner;
use super::call::{Answer, Call, Effect, route_label};
use super::text::{detail_suffix, refusal_text, short};
use crate::config::env_name;
use crate::moviepilot::error::MpError;
use crate::moviepilot::types::{Dialect, EnvelopeHead};

impl Inner {
    /// Whether `status` means MoviePilot refused oncebot's credential: 401 in both dialects,
    /// and 403 in v2 (its answer to a bad JWT). V3 answers 403 only for "not allowed" (无权删除该
    /// 订阅), a permanent refusal of that call, not of the credential.
    pub(super) fn refuses_credentials(&self, status: StatusCode) -> bool {
        match self.dialect {
            Dialect::V2 => matches!(status.as_u16(), 401 | 403),
            Dialect::V3 => status == StatusCode::UNAUTHORIZED,
        }
    }

    /// Whether `answer` is MoviePilot refusing a superuser-only route to a plain user:
    /// `get_current_active_superuser` raises 400 "用户权限不足" in both lines (v3 wraps it in its
    /// envelope); v3's other permission refusals are 403.
    pub(in crate::moviepilot) fn refuses_non_superuser(&self, answer: &Answer) -> bool {
        match answer.status.as_u16() {
            400 => detail_suffix(&answer.body).contains("权限不足"),
            403 => self.dialect == Dialect::V3,
            _ => false,
        }
    }

    /// Passes 2xx answers read whole; turns the rest (and a 2xx over `moviepilot.max_body_bytes`)
    /// into an error of the right kind.
    pub(in crate::moviepilot) fn check_status(
        &self,
        call: &Call,
        answer: Answer,
    ) -> Result<Answer, MpError> {
        let answer = self.check_code(call, answer)?;
        if answer.cut {
            return Err(self.too_large(call));
        }
        Ok(answer)
    }

    /// A successful answer longer than `moviepilot.max_body_bytes`: permanent, naming the setting.
    pub(in crate::moviepilot) fn too_large(&self, call: &Call) -> MpError {
        let error = MpError::Permanent(format!(
            "{call}: MoviePilot's answer is larger than moviepilot.max_body_bytes ({} bytes), so \
             it was not read; if such answers are expected, raise {}",
            self.max_body,
            env_name("moviepilot.max_body_bytes")
        ));
        crate::metrics::METRICS.moviepilot_error(&route_label(call), error.kind());
        error
    }

    /// `success: false`: a permanent refusal with MoviePilot's message.
    pub(in crate::moviepilot) fn refused(&self, call: &Call, message: Option<&str>) -> MpError {
        let error = MpError::Permanent(format!(
            "{call}: MoviePilot refused: {}",
            refusal_text(message)
        ));
        crate::metrics::METRICS.moviepilot_error(&route_label(call), error.kind());
        error
    }

    /// Passes 2xx answers (cut or not); turns the rest into an error of the right kind.
    pub(in crate::moviepilot) fn check_code(
        &self,
        call: &Call,
        answer: Answer,
    ) -> Result<Answer, MpError> {
        let status = answer.status;
        if status.is_success() {
            return Ok(answer);
        }
        let mut why = format!("HTTP {}{}", status.as_u16(), detail_suffix(&answer.body));
        if let Some(after) = &answer.retry_after {
            why.push_str(&format!(" (retry after {after})"));
        }
        let error = match status.as_u16() {
            408 | 425 | 429 => MpError::Transient(format!("{call}: {why}")),
            403 if self.dialect == Dialect::V3 => MpError::Permanent(format!(
                "{call}: MoviePilot does not allow it ({why}): the MoviePilot user oncebot acts \
                 as lacks the right (the API key acts as the superuser)"
            )),
            502 | 504 if call.effect == Effect::SideEffect => MpError::Uncertain(format!(
                "{call}: {why}: a proxy gave up waiting; MoviePilot may or may not have done it"
            )),
            500..=599 => MpError::Transient(format!("{call}: {why}")),
            _ => MpError::Permanent(format!("{call}: {why}")),
        };
        // `call` counted this answer as a call that worked (MoviePilot did answer); its status
        // is the error, so it is counted here, once.
        crate::metrics::METRICS.moviepilot_error(&route_label(call), error.kind());
        Err(error)
    }

    /// The payload of a bare (v2) or enveloped (v3) answer. `None`: v3 answered `data: null`.
    pub(in crate::moviepilot) fn decode<T: DeserializeOwned>(
        &self,
        call: &Call,
        answer: &Answer,
    ) -> Result<Option<T>, MpError> {
        match self.dialect {
            Dialect::V2 => crate::json_body::parse::<T>(&answer.body)
                .map(Some)
                .map_err(|_| self.unexpected_body(call, answer)),
            Dialect::V3 => self.accepted(call, answer),
        }
    }

    /// The `data` of a `{success: true, ...}` envelope; `success: false` is a permanent refusal
    /// with MoviePilot's message. `success` is read before `data` is decoded: a refusal's `data`
    /// is whatever the server put there (`{}`, `null`, a partial object).
    pub(in crate::moviepilot) fn accepted<T: DeserializeOwned>(
        &self,
        call: &Call,
        answer: &Answer,
    ) -> Result<Option<T>, MpError> {
        let head: EnvelopeHead<'_> = crate::json_body::parse(&answer.body)
            .map_err(|_| self.unexpected_body(call, answer))?;
        if !head.success {
            return Err(self.refused(call, head.message.as_deref()));
        }
        match head.data {
            None => Ok(None),
            Some(raw) => serde_json::from_str(raw.get())
                .map(Some)
                .map_err(|_| self.unexpected_body(call, answer)),
        }
    }

    /// A 5xx to a call that must never be sent twice (a restart, a redo) is `Uncertain`, not the
    /// `Transient` that [`Self::check_status`] makes of it for calls a retry verifies first: the
    /// request arrived, and part of it may have run. `maybe` says what.
    pub(in crate::moviepilot) fn uncertain_on_server_error(
        &self,
        call: &Call,
        answer: &Answer,
        maybe: &str,
    ) -> Result<(), MpError> {
        if answer.status.is_server_error() {
            return Err(MpError::Uncertain(format!(
                "{call}: HTTP {}; {maybe}",
                answer.status.as_u16()
            )));
        }
        Ok(())
    }

    /// `success: true`, or MoviePilot's refusal in its own words as `Declined` (the operator
    /// commands show it to the admin who asked: 整理记录不存在, 当前运行环境不支持重启操作！).
    pub(in crate::moviepilot) fn done_or_declined(
        &self,
        call: &Call,
        answer: &Answer,
    ) -> Result<(), MpError> {
        let head: EnvelopeHead<'_> = crate::json_body::parse(&answer.body)
            .map_err(|_| self.unexpected_body(call, answer))?;
        if head.success {
            return Ok(());
        }
        let why = crate::untrusted::clean_line(head.message.as_deref().unwrap_or("").trim());
        Err(MpError::Declined(short(&why, 200)))
    }

    /// A list, each row read on its own so one odd row does not hide the others.
    pub(in crate::moviepilot) async fn fetch_list<T: DeserializeOwned>(
        &self,
        call: &Call,
    ) -> Result<Vec<T>, MpError> {
        Ok(self.fetch_rows(call).await?.0)
    }

    /// [`Self::fetch_list`], with how many rows the answer had (a row that does not parse still
    /// counts: a page shorter than asked is the last one only by the server's count).
    pub(in crate::moviepilot) async fn fetch_rows<T: DeserializeOwned>(
        &self,
        call: &Call,
    ) -> Result<(Vec<T>, usize), MpError> {
        let answer = self.call(call).await?;
        self.rows_of(call, answer)
    }

    /// The rows of `answer` to `call`, as [`Self::fetch_rows`] reads them.
    pub(in crate::moviepilot) fn rows_of<T: DeserializeOwned>(
        &self,
        call: &Call,
        answer: Answer,
    ) -> Result<(Vec<T>, usize), MpError> {
        let answer = self.check_status(call, answer)?;
        // The usual answer parses whole, in one pass. Only one with a row out of shape is read
        // again, row by row, so that the other rows still count.
        if let Ok(Some(rows)) = self.decode::<Vec<T>>(call, &answer) {
            let total = rows.len();
            return Ok((rows, total));
        }
        // Each row as its text, parsed on its own: a `Value` tree per row (maps of every field
        // MoviePilot sends) was about a twelfth of the worker's instructions in the bench.
        let rows: Vec<Box<serde_json::value::RawValue>> =
            self.decode(call, &answer)?.unwrap_or_default();
        let total = rows.len();
        let parsed: Vec<T> = rows
            .iter()
            .filter_map(|row| serde_json::from_str(row.get()).ok())
            .collect();
        if parsed.len() != total {
            tracing::warn!(
                skipped = total - parsed.len(),
                "{call}: some rows were not in the expected shape"
            );
        }
        Ok((parsed, total))
    }

    /// A 2xx whose body is not what this call answers. The body is not quoted: it may hold
    /// torrent data.
    pub(in crate::moviepilot) fn unexpected_body(&self, call: &Call, answer: &Answer) -> MpError {
        let why = format!(
            "HTTP {} with an answer that is not MoviePilot {} JSON for this call (is {} MoviePilot's address?)",
            answer.status.as_u16(),
            self.dialect,
            env_name("moviepilot.url")
        );
        match call.effect {
            Effect::ReadOnly => MpError::Permanent(format!("{call}: {why}")),
            Effect::SideEffect => MpError::Uncertain(format!(
                "{call}: {why}; MoviePilot may or may not have done it"
            )),
        }
    }
}
