//! oncebot's credentials and its one login: the API key and the bearer token a login buys,
//! who logs in when a token is refused (one caller; the others wait for that login, told by a
//! generation counter), the backoff while logins are refused, and the deployment's
//! [`LoginGate`] when one is shared. The call path (`Inner::call`) asks this file for a
//! credential and, after a refusal, for a renewal.

use std::time::{Duration, Instant};

use anyhow::bail;
use reqwest::StatusCode;
use tokio::sync::Mutex;

use super::Inner;
use super::http::{Credential, read_body, transport_text};
use super::text::detail_suffix;
use crate::config::{MoviePilotSettings, Secret, env_name};
use crate::moviepilot::error::MpError;
use crate::moviepilot::gate::{
    LOGIN_BACKOFF_FIRST, LOGIN_BACKOFF_MAX, LoginGate, Turn, login_backoff,
};
use crate::moviepilot::types::WireToken;

pub(super) struct Auth {
    pub(super) api_key: Option<Secret>,
    pub(super) login: Option<Login>,
    pub(super) state: Mutex<TokenState>,
}

pub(super) struct Login {
    pub(super) username: String,
    password: Secret,
}

#[derive(Default)]
pub(super) struct TokenState {
    /// The bearer token once logged in; until then (or in API-key mode) calls use the API key.
    pub(super) bearer: Option<Secret>,
    /// Bumped by every successful login, so a caller that saw an older credential knows someone
    /// already renewed it.
    generation: u64,
    /// The last failed login and when it ended: callers that were already waiting for that
    /// login get its error instead of each trying again.
    last_failure: Option<(Instant, MpError)>,
    /// While logins are refused: no login before this instant, and this refusal instead.
    refused_until: Option<(Instant, MpError)>,
    /// Logins refused in a row (this process's count; the gate keeps the deployment's).
    refusals: u32,
    /// Whether the last login's answer said its user is a superuser (`super_user`); `None`
    /// before a login, or when the answer did not say.
    pub(super) super_user: Option<bool>,
}

impl TokenState {
    /// What a caller that saw `seen_generation` and began at `started` gets instead of a login
    /// of its own, at `now`: success when someone logged in meanwhile, the error of a login
    /// that failed since it began, or the refusal whose backoff has not run yet. `None`: it
    /// logs in.
    fn instead_of_login(
        &self,
        seen_generation: u64,
        started: Instant,
        now: Instant,
    ) -> Option<Result<(), MpError>> {
        if self.generation != seen_generation {
            return Some(Ok(()));
        }
        if let Some((at, error)) = &self.last_failure
            && *at >= started
        {
            return Some(Err(error.clone()));
        }
        if let Some((until, error)) = &self.refused_until
            && now < *until
        {
            return Some(Err(error.clone()));
        }
        None
    }

    /// Keeps a login's result: a token starts a new generation and forgets the failures; an
    /// error is what the callers waiting for this login get.
    fn record(&mut self, result: Result<Secret, MpError>, now: Instant) -> Result<(), MpError> {
        match result {
            Ok(token) => {
                self.bearer = Some(token);
                self.generation += 1;
                self.last_failure = None;
                self.refused_until = None;
                self.refusals = 0;
                Ok(())
            }
            Err(error) => {
                self.last_failure = Some((now, error.clone()));
                Err(error)
            }
        }
    }
}

impl Auth {
    /// The credential to send now, and the generation it belongs to.
    pub(super) async fn credential(&self) -> (Credential, u64) {
        let state = self.state.lock().await;
        let credential = match (&state.bearer, &self.api_key) {
            (Some(token), _) => Credential::Bearer(token.clone()),
            (None, Some(key)) => Credential::ApiKey(key.clone()),
            (None, None) => Credential::None,
        };
        (credential, state.generation)
    }
}

/// The API key and the login the settings give; at least one of them.
pub(super) fn credentials(
    settings: &MoviePilotSettings,
) -> anyhow::Result<(Option<Secret>, Option<Login>)> {
    let api_key = (!settings.api_key.is_empty()).then(|| settings.api_key.clone());
    let login = (!settings.username.is_empty() && !settings.password.is_empty()).then(|| Login {
        username: settings.username.clone(),
        password: settings.password.clone(),
    });
    if api_key.is_none() && login.is_none() {
        bail!(
            "no MoviePilot credentials: set {} or {} and {}",
            env_name("moviepilot.api_key"),
            env_name("moviepilot.username"),
            env_name("moviepilot.password")
        );
    }
    Ok((api_key, login))
}

impl Inner {
    /// Logs in unless someone already did since `seen_generation`; one login at a time in the
    /// process, and (with a shared gate) in the deployment. While logins are refused, none is
    /// tried before the backoff has run: callers get the last refusal instead.
    pub(super) async fn renew(
        &self,
        seen_generation: u64,
        started: Instant,
    ) -> Result<(), MpError> {
        let Some(login) = &self.auth.login else {
            return Err(MpError::Permanent(
                "no MoviePilot username and password to log in with".into(),
            ));
        };
        let mut state = self.auth.state.lock().await;
        if let Some(instead) = state.instead_of_login(seen_generation, started, Instant::now()) {
            return instead;
        }
        let gate = self.gate.get().map(|g| g.as_ref());
        if let Some(gate) = gate {
            self.wait_for_turn(gate, &mut state).await?;
        }
        if state.bearer.is_some() {
            tracing::info!("MoviePilot no longer accepts oncebot's token; logging in again");
        }
        let result = self.login(login).await;
        match &result {
            Ok(_) => self.tell_accepted(gate).await,
            Err(MpError::CredentialsRefused(why)) => {
                self.refused_login(gate, &mut state, why).await
            }
            Err(_) => self.release_turn(gate).await,
        }
        let result = result.map(|(token, super_user)| {
            state.super_user = super_user;
            token
        });
        state.record(result, Instant::now())
    }

    /// Whom oncebot's calls act as now: `None` with the API key, else the login's username and
    /// what its last answer said of it (`super_user`).
    pub(in crate::moviepilot) async fn login_account(&self) -> Option<(String, Option<bool>)> {
        let state = self.auth.state.lock().await;
        state.bearer.as_ref()?;
        let login = self.auth.login.as_ref()?;
        Some((login.username.clone(), state.super_user))
    }

    /// After a login that worked: the other processes may log in again at once.
    async fn tell_accepted(&self, gate: Option<&dyn LoginGate>) {
        if let Some(gate) = gate
            && let Err(e) = gate.accepted().await
        {
            tracing::warn!(error = %e, "could not tell the other processes that the MoviePilot login works again");
        }
    }

    /// After a login that failed without a refusal (MoviePilot away): the turn is given back.
    async fn release_turn(&self, gate: Option<&dyn LoginGate>) {
        if let Some(gate) = gate
            && let Err(e) = gate.release(&self.holder).await
        {
            tracing::warn!(error = %e, "could not release the MoviePilot login lease");
        }
    }

    /// A refused login: no other before its backoff (the deployment's, when the gate shares
    /// it) has run, and the token that brought the caller here is dropped.
    async fn refused_login(&self, gate: Option<&dyn LoginGate>, state: &mut TokenState, why: &str) {
        state.refusals += 1;
        let mut backoff = login_backoff(state.refusals);
        if let Some(gate) = gate {
            let told = gate.refused(
                &self.holder,
                why,
                LOGIN_BACKOFF_FIRST,
                LOGIN_BACKOFF_MAX,
                self.remember_refusals,
            );
            match told.await {
                Ok(shared) => backoff = shared,
                Err(e) => {
                    tracing::warn!(error = %e, "could not tell the other processes that the MoviePilot login was refused")
                }
            }
        }
        tracing::warn!(
            next_login_in = ?backoff,
            "MoviePilot refused the login; no login before the backoff has run"
        );
        state.refused_until = Some((
            Instant::now() + backoff,
            MpError::CredentialsRefused(why.to_string()),
        ));
        // The token that brought this caller here was refused: it is dead, and until a login
        // works calls wait for one instead of being refused one by one.
        state.bearer = None;
    }

    /// Waits until the deployment's gate lets this process log in: a refusal elsewhere is
    /// returned (and remembered until its backoff has run), another process's login is waited
    /// for (at most about the login's own timeout). A gate that cannot be asked (Redis away) is
    /// logged and passed: the process's own backoff still holds.
    async fn wait_for_turn(
        &self,
        gate: &dyn LoginGate,
        state: &mut TokenState,
    ) -> Result<(), MpError> {
        let lease = self.timeout + Duration::from_secs(5);
        let give_up = Instant::now() + lease;
        loop {
            match gate.begin(&self.holder, lease).await {
                Ok(Turn::Go) => return Ok(()),
                Ok(Turn::Refused { wait, reason }) => {
                    // The token that brought this caller here was refused: it is dead.
                    state.bearer = None;
                    let error = MpError::CredentialsRefused(if reason.is_empty() {
                        "MoviePilot refused oncebot's login (another oncebot process tried it)"
                            .to_string()
                    } else {
                        reason
                    });
                    state.refused_until = Some((Instant::now() + wait, error.clone()));
                    return Err(error);
                }
                Ok(Turn::Busy { wait }) => {
                    if Instant::now() >= give_up {
                        return Err(MpError::Transient(
                            "another oncebot process is logging in to MoviePilot; trying again later"
                                .into(),
                        ));
                    }
                    tokio::time::sleep(
                        wait.clamp(Duration::from_millis(50), Duration::from_millis(500)),
                    )
                    .await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not ask the other processes whether a MoviePilot login may be tried; trying it");
                    return Ok(());
                }
            }
        }
    }

    /// `POST /api/v1/login/access-token` with the form MoviePilot's OAuth2 form expects: the
    /// token, and whether the answer says the user is a superuser (`super_user`: v2.5.6 and
    /// v2.14.0 `app/api/endpoints/login.py`, v3 the same `Token`).
    async fn login(&self, login: &Login) -> Result<(Secret, Option<bool>), MpError> {
        let what = format!("MoviePilot login as {:?}", login.username);
        let form = [
            ("username", login.username.as_str()),
            ("password", login.password.expose()),
        ];
        let response = self
            .http
            .post(format!("{}/api/v1/login/access-token", self.base))
            .form(&form)
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|e| {
                MpError::Transient(format!("{what}: {}", transport_text(e, self.timeout)))
            })?;
        let status = response.status();
        let two_factor = response.headers().contains_key("x-mfa-required");
        let (body, _) = read_body(response, self.max_body).await.map_err(|e| {
            MpError::Transient(format!("{what}: {}", transport_text(e, self.timeout)))
        })?;
        if let Some(error) = login_refusal(&what, &login.username, status, two_factor, &body) {
            return Err(error);
        }
        // The body holds the token: it is parsed, never quoted.
        let token: WireToken = crate::json_body::parse(&body).map_err(|_| {
            MpError::Permanent(format!(
                "{what}: HTTP {} without a token in the answer (is {} MoviePilot?)",
                status.as_u16(),
                env_name("moviepilot.url")
            ))
        })?;
        tracing::info!(user = %login.username, "logged in to MoviePilot");
        Ok((Secret::new(token.access_token), token.super_user))
    }
}

/// The error a login's answer is, before its token is read: two-factor login on (oncebot cannot
/// answer it: the API key is the way), the username or password refused, or another failure
/// (transient for a 5xx or 429). `None` for a success.
fn login_refusal(
    what: &str,
    username: &str,
    status: StatusCode,
    two_factor: bool,
    body: &[u8],
) -> Option<MpError> {
    if two_factor {
        return Some(MpError::CredentialsRefused(format!(
            "{what}: MoviePilot user {:?} has two-factor login on (HTTP {} with X-MFA-Required), \
             which oncebot cannot answer: set {} to MoviePilot's API_TOKEN (its settings \
             page; v3 takes it on every route) and leave {} and {} empty, or turn two-factor \
             login off for that user",
            username,
            status.as_u16(),
            env_name("moviepilot.api_key"),
            env_name("moviepilot.username"),
            env_name("moviepilot.password")
        )));
    }
    if matches!(status.as_u16(), 401 | 403) {
        return Some(MpError::CredentialsRefused(format!(
            "{what}: MoviePilot refused the username or password (HTTP {}{}): check {} and {}",
            status.as_u16(),
            detail_suffix(body),
            env_name("moviepilot.username"),
            env_name("moviepilot.password")
        )));
    }
    if status.is_success() {
        return None;
    }
    let why = format!("HTTP {}{}", status.as_u16(), detail_suffix(body));
    Some(if status.is_server_error() || status.as_u16() == 429 {
        MpError::Transient(format!("{what}: {why}"))
    } else {
        MpError::Permanent(format!("{what}: {why}"))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_caller_logs_in_only_when_nobody_did_nothing_failed_since_it_began_and_no_refusal_holds() {
        use super::{MpError, TokenState};
        use std::time::{Duration, Instant};
        let began = Instant::now();
        let now = began + Duration::from_secs(1);
        let mut state = TokenState::default();
        assert_eq!(state.instead_of_login(0, began, now), None);
        // A failure before this caller began is not its answer; one after it is.
        let failed = MpError::Transient("away".into());
        assert!(state.record(Err(failed.clone()), began).is_err());
        assert_eq!(state.instead_of_login(0, now, now), None);
        assert_eq!(state.instead_of_login(0, began, now), Some(Err(failed)));
        // A refusal holds until its backoff has run.
        let refused = MpError::CredentialsRefused("no".into());
        state.last_failure = None;
        state.refused_until = Some((now + Duration::from_secs(5), refused.clone()));
        assert_eq!(state.instead_of_login(0, began, now), Some(Err(refused)));
        let after = now + Duration::from_secs(5);
        assert_eq!(state.instead_of_login(0, began, after), None);
        // A login that worked: a new generation, every failure forgotten, so a caller that saw
        // the old one is done.
        state.refusals = 3;
        let token = crate::config::Secret::new("t".to_string());
        assert_eq!(state.record(Ok(token), after), Ok(()));
        assert_eq!((state.generation, state.refusals), (1, 0));
        assert!(state.last_failure.is_none() && state.refused_until.is_none());
        assert!(state.bearer.is_some());
        assert_eq!(state.instead_of_login(0, began, after), Some(Ok(())));
        assert_eq!(state.instead_of_login(1, after, after), None);
    }

    #[test]
    fn a_logins_answer_is_classified_before_its_token_is_read() {
        use super::{MpError, StatusCode, login_refusal};
        let kind = |status: u16, two_factor: bool| {
            let status = StatusCode::from_u16(status).unwrap();
            match login_refusal("login", "bot", status, two_factor, b"") {
                None => "token",
                Some(MpError::CredentialsRefused(_)) => "refused",
                Some(e @ (MpError::Transient(_) | MpError::Permanent(_))) => e.kind().as_str(),
                Some(e) => panic!("{e:?}"),
            }
        };
        assert_eq!(kind(200, false), "token");
        assert_eq!(kind(200, true), "refused");
        assert_eq!(kind(401, false), "refused");
        assert_eq!(kind(403, false), "refused");
        assert_eq!(kind(429, false), "transient");
        assert_eq!(kind(502, false), "transient");
        assert_eq!(kind(422, false), "permanent");
    }
}
