//! MoviePilot's own Telegram mapping (the `telegram_userid` a MoviePilot user set in their
//! notification settings), kept in Redis so that every process of a deployment decides with the
//! same one.
//!
//! Policy, in one place:
//! - **One reader of MoviePilot.** Every worker process runs a [`Refresher`]; users_turn.lua gives
//!   the turn to one of them once the last read is `moviepilot.users_refresh_secs` old (30 s, or
//!   the interval if shorter, after a read that failed), and users.lua stores what it found in
//!   `users:moviepilot`, whole, in one step. Ingress never calls MoviePilot.
//! - **Every process that decides follows.** One [`Follower`] per process that runs an ingress
//!   or a dispatcher (its menus) reads the HASH and the grants (`users:granted`) every
//!   [`FOLLOW_EVERY`], in one round trip (a pipeline of two HGETALLs), into the process's [`Live`]
//!   directory, and once before the process admits anything: a grant or a revocation reaches
//!   every ingress within that time, without a restart.
//! - **What MoviePilot's mapping says.** An active MoviePilot user with a `telegram_userid` maps
//!   that id with the role their MoviePilot rights give (`MoviePilotRights::role`: `admin` for a
//!   superuser, else `user` when MoviePilot lets them subscribe, else `viewer`, or `requester`
//!   with `household.media_requests`); the rights are
//!   stored beside it for the listings. An id two MoviePilot users set goes to the first
//!   MoviePilot lists, as MoviePilot's own `UserOper.get_name` does. `telegram.users` wins where
//!   both map an id, and the allow-list still decides who runs commands at all.
//! - **When it cannot be read.** A MoviePilot that fails (down, 5xx) leaves the last mapping as it
//!   was. One that refuses the list because oncebot's account is no superuser stores an empty
//!   mapping (`state` `not_superuser`): `telegram.users` alone maps users, and the worker says
//!   why once, at warn. Before the first read ever, MoviePilot maps nobody.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::ledger::{Ledger, LedgerError, StoredDirectory, StoredUsers};
use crate::metrics::METRICS;
use crate::moviepilot::{ListUsersError, MoviePilot, MpUser};
use crate::shutdown::sleep_or_stop;
use crate::users::{Directory, Grant, Live, Mapping, MoviePilotRights};

/// How often an ingress process reads the stored mapping again.
pub const FOLLOW_EVERY: Duration = Duration::from_secs(2);

/// How often it tries while it has not read it once (Redis was not answering).
const FOLLOW_UNTIL_READ: Duration = Duration::from_millis(250);

/// After a read of MoviePilot's users that failed, the next try waits this long (or the
/// interval, if shorter).
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(30);

/// The `state` of a read that MoviePilot answered with its users.
pub const STATE_OK: &str = "ok";
/// The `state` of a read MoviePilot refused: oncebot's account is no superuser.
pub const STATE_NOT_SUPERUSER: &str = "not_superuser";

/// MoviePilot's users as the mapping oncebot stores ([`mappings_of`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MoviePilotMapping {
    /// The mappings, by Telegram id.
    pub mappings: Vec<Mapping>,
    /// The MoviePilot rights behind each mapping, by Telegram id (the same ids).
    pub rights: Vec<(i64, MoviePilotRights)>,
    /// Users left out because another user listed before them set the same Telegram id.
    pub shadowed: Vec<(i64, String)>,
    /// Users left out because their name cannot be one URL path segment (`path_segment`):
    /// oncebot would send it in MoviePilot's paths. Their Telegram id maps nobody.
    pub unusable: Vec<(i64, String)>,
}

/// MoviePilot's active users with a `telegram_userid` as mappings, each with the role their
/// rights give ([`MoviePilotRights::role`], `media_requests` being `household.media_requests`);
/// an id two users set goes to the first listed.
pub fn mappings_of(users: &[MpUser], media_requests: bool) -> MoviePilotMapping {
    let mut taken = BTreeMap::new();
    let mut out = MoviePilotMapping::default();
    for u in users.iter().filter(|u| u.is_active) {
        let Some(id) = u.telegram_userid else {
            continue;
        };
        if taken.contains_key(&id) {
            out.shadowed.push((id, u.name.clone()));
            continue;
        }
        if crate::path_segment::check(&u.name).is_err() {
            // The first listed keeps the id, as MoviePilot decides; it just maps nobody.
            taken.insert(id, None);
            out.unusable.push((id, u.name.clone()));
            continue;
        }
        let rights = rights_of(u);
        taken.insert(
            id,
            Some((
                Mapping {
                    user_id: id,
                    requester: Some(u.name.clone()),
                    role: rights.role(media_requests),
                },
                rights,
            )),
        );
    }
    for (mapping, rights) in taken.into_values().flatten() {
        out.rights.push((mapping.user_id, rights));
        out.mappings.push(mapping);
    }
    out
}

/// A MoviePilot user's rights: `is_superuser` and `permissions` as read.
fn rights_of(u: &MpUser) -> MoviePilotRights {
    let p = u.permissions;
    MoviePilotRights {
        superuser: u.is_superuser,
        discovery: p.discovery,
        search: p.search,
        subscribe: p.subscribe,
        manage: p.manage,
    }
}

/// The mappings a stored HASH holds (values no release wrote are skipped).
pub fn stored_mappings(stored: &StoredUsers) -> Vec<Mapping> {
    entries_mappings(&stored.entries)
}

/// The mappings of stored entries (`<telegram id>`, `<MoviePilot name>:<role>`).
fn entries_mappings(entries: &[(i64, String)]) -> Vec<Mapping> {
    entries
        .iter()
        .filter_map(|(id, value)| Mapping::from_stored(*id, value))
        .collect()
}

/// The MoviePilot rights a stored HASH holds (values no release wrote are skipped).
pub fn stored_rights(stored: &StoredUsers) -> Vec<(i64, MoviePilotRights)> {
    stored
        .rights
        .iter()
        .filter_map(|(id, value)| Some((*id, MoviePilotRights::from_stored(value)?)))
        .collect()
}

/// `base` (the setting's directory) with MoviePilot's side as stored, and the rights behind it:
/// what `oncebot users` and the operator's page show.
pub fn directory_with(base: &Directory, stored: Option<&StoredUsers>) -> Directory {
    let mut d = base.clone();
    if let Some(stored) = stored {
        d.set_moviepilot(stored_mappings(stored));
        d.set_moviepilot_rights(stored_rights(stored));
    }
    d
}

/// `base` with what Redis holds: MoviePilot's side (when it was read) and the grants.
pub fn directory_of(base: &Directory, stored: &StoredDirectory) -> Directory {
    let mut d = directory_with(base, stored.moviepilot.as_ref());
    d.set_granted(stored.granted.clone());
    d
}

/// The directory as it stands now, read from Redis in one round trip: `base` (the settings'
/// side) with the grants and, when `moviepilot` (its mapping is on), MoviePilot's mapping.
pub async fn read_directory(
    ledger: &Ledger,
    base: &Directory,
    moviepilot: bool,
) -> Result<Directory, LedgerError> {
    let stored = ledger.stored_directory(moviepilot).await?;
    Ok(directory_of(base, &stored))
}

/// One line on where MoviePilot's mapping stands, for `oncebot users` and the operator's page.
/// `stored` is `None` when the mapping is off.
pub fn describe(stored: Option<&StoredUsers>, directory: &Directory) -> String {
    let Some(stored) = stored else {
        return "MoviePilot's mapping is off (moviepilot.users_refresh_secs = 0): telegram.users \
                alone maps users"
            .into();
    };
    let Some(at) = stored.refreshed_at else {
        return "MoviePilot's mapping has not been read yet (a worker reads it once it reaches \
                MoviePilot): telegram.users alone maps users meanwhile"
            .into();
    };
    let at = humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(at));
    if stored.state == STATE_NOT_SUPERUSER {
        return format!(
            "MoviePilot refused to list its users at the last read ({at}): oncebot's MoviePilot \
             account is not a superuser, so telegram.users alone maps users"
        );
    }
    let allowed = directory.moviepilot().count();
    let ignored = stored.entries.len().saturating_sub(allowed);
    let mut line = format!(
        "MoviePilot's mapping read {at}: {} Telegram id(s) mapped",
        stored.entries.len()
    );
    if ignored > 0 {
        line.push_str(&format!(
            ", {ignored} of them not in telegram.allowed_users (ignored)"
        ));
    }
    line
}

/// Reads MoviePilot's users when it is this process's turn, and stores the mapping.
pub struct Refresher {
    ledger: Ledger,
    mp: MoviePilot,
    holder: String,
    interval: Duration,
    /// `household.media_requests`: `subscribe` off maps a requester, not a viewer.
    media_requests: bool,
    /// How long one read may take before another process may try.
    lease: Duration,
    /// The not-a-superuser warning was logged, and nothing changed since.
    told_not_superuser: bool,
    /// The last read failed (MoviePilot down, refusing the credentials): a failure in a row is
    /// logged at warn once, the rest at debug.
    failing: bool,
    /// The MoviePilot users already warned about (shadowed or unusable), by Telegram id and
    /// name: each is said once per process, not at every read.
    warned: BTreeSet<(i64, String)>,
}

impl Refresher {
    /// `None` when MoviePilot's mapping is off (`moviepilot.users_refresh_secs` = 0).
    pub fn new(settings: &Settings, ledger: Ledger, mp: MoviePilot) -> Option<Refresher> {
        let interval = settings.moviepilot.users_refresh()?;
        Some(Refresher {
            ledger,
            mp,
            holder: crate::liveness::default_consumer_name(),
            interval,
            media_requests: settings.household.media_requests,
            // The call's timeout, a login before it and a margin.
            lease: Duration::from_secs(2 * settings.moviepilot.timeout_secs + 10),
            told_not_superuser: false,
            failing: false,
            warned: BTreeSet::new(),
        })
    }

    /// How often this process asks whether it is its turn: a tenth of the interval, between a
    /// quarter of a second and ten seconds (one small script).
    fn ask_every(&self) -> Duration {
        (self.interval / 10).clamp(Duration::from_millis(250), Duration::from_secs(10))
    }

    /// Asks, and reads when it is this process's turn, until `stop`.
    pub async fn run(mut self, stop: CancellationToken) {
        loop {
            self.once().await;
            if sleep_or_stop(self.ask_every(), &stop).await {
                return;
            }
        }
    }

    /// One turn, if it is this process's: read, store, log what changed.
    pub async fn once(&mut self) {
        let retry = RETRY_AFTER_FAILURE.min(self.interval);
        if !self.my_turn(retry).await {
            return;
        }
        if let Some((state, read)) = self.read(retry).await {
            self.store(state, &read).await;
        }
    }

    /// Whether it is this process's turn to read (not when Redis cannot say).
    async fn my_turn(&self, retry: Duration) -> bool {
        let turn = self
            .ledger
            .users_turn(&self.holder, self.interval, retry, self.lease)
            .await;
        turn.unwrap_or_else(|e| {
            tracing::debug!(error = %e, "cannot ask whose turn it is to read MoviePilot's users");
            false
        })
    }

    /// MoviePilot's users as mappings, with the state to store (`not_superuser`: none can be
    /// read). `None` when the read failed: the turn ends, and another try comes after `retry`.
    async fn read(&mut self, retry: Duration) -> Option<(&'static str, MoviePilotMapping)> {
        match self.mp.list_users().await {
            Ok(users) => {
                self.told_not_superuser = false;
                if std::mem::take(&mut self.failing) {
                    tracing::info!("MoviePilot's users are readable again");
                }
                let read = mappings_of(&users, self.media_requests);
                for (id, name) in &read.shadowed {
                    if self.warned.insert((*id, name.clone())) {
                        tracing::warn!(
                            telegram_id = id,
                            moviepilot_user = ?name,
                            "two MoviePilot users set the same telegram_userid; the first \
                             MoviePilot lists keeps it, as MoviePilot itself decides"
                        );
                    }
                }
                for (id, name) in &read.unusable {
                    if self.warned.insert((*id, name.clone())) {
                        tracing::warn!(
                            telegram_id = id,
                            moviepilot_user = ?name,
                            "MoviePilot's mapping entry skipped: oncebot cannot act for a user \
                             named ., .. or nothing (the name would not be one segment of \
                             MoviePilot's URLs); rename the user in MoviePilot to map them"
                        );
                    }
                }
                Some((STATE_OK, read))
            }
            Err(ListUsersError::NotSuperuser(why)) => {
                self.failing = false;
                if !self.told_not_superuser {
                    tracing::warn!(reason = %why, "MoviePilot's own user mapping cannot be read");
                    self.told_not_superuser = true;
                }
                Some((STATE_NOT_SUPERUSER, MoviePilotMapping::default()))
            }
            Err(ListUsersError::Failed(e)) => {
                if std::mem::replace(&mut self.failing, true) {
                    tracing::debug!(error = %e, kind = %e.kind(), "reading MoviePilot's users failed again");
                } else {
                    tracing::warn!(
                        error = %e,
                        kind = %e.kind(),
                        retry_in = ?retry,
                        "reading MoviePilot's users failed; the mapping stays as it was"
                    );
                }
                if let Err(e) = self.ledger.users_turn_end(&self.holder).await {
                    tracing::debug!(error = %e, "ending the failed read's turn");
                }
                None
            }
        }
    }

    /// Stores the mapping whole, with the rights behind it (fenced by this turn), and logs what
    /// changed.
    async fn store(&self, state: &'static str, read: &MoviePilotMapping) {
        let entries: Vec<(i64, String)> = read
            .mappings
            .iter()
            .map(|m| (m.user_id, m.stored_value()))
            .collect();
        let rights: Vec<(i64, String)> = read
            .rights
            .iter()
            .map(|(id, r)| (*id, r.stored_value()))
            .collect();
        match self
            .ledger
            .store_moviepilot_users(&self.holder, state, &entries, &rights)
            .await
        {
            Ok(Some(before)) => log_changes(&before, &entries, state),
            Ok(None) => tracing::warn!(
                lease = ?self.lease,
                "reading MoviePilot's users took longer than its lease; another process reads now"
            ),
            Err(e) => {
                tracing::warn!(error = %e, "storing MoviePilot's user mapping failed");
                let _ = self.ledger.users_turn_end(&self.holder).await;
            }
        }
    }
}

/// Logs, at info, who MoviePilot's mapping added, removed or changed (ids and MoviePilot
/// names, nothing else of a user).
fn log_changes(before: &StoredUsers, after: &[(i64, String)], state: &str) {
    let old: BTreeMap<i64, &str> = before
        .entries
        .iter()
        .map(|(id, v)| (*id, v.as_str()))
        .collect();
    let new: BTreeMap<i64, &str> = after.iter().map(|(id, v)| (*id, v.as_str())).collect();
    for (id, value) in &new {
        match old.get(id) {
            None => {
                tracing::info!(telegram_id = id, mapping = %value, "MoviePilot's mapping: added")
            }
            Some(was) if was != value => tracing::info!(
                telegram_id = id,
                mapping = %value,
                was = %was,
                "MoviePilot's mapping: changed"
            ),
            Some(_) => {}
        }
    }
    for (id, was) in &old {
        if !new.contains_key(id) {
            tracing::info!(telegram_id = id, was = %was, "MoviePilot's mapping: removed");
        }
    }
    if before.state != state {
        tracing::info!(
            state,
            mapped = new.len(),
            "MoviePilot's mapping read ({} Telegram id(s))",
            new.len()
        );
    }
}

/// What a follower applied: the mapping's stored entries and the grants.
type Followed = (Vec<(i64, String)>, Vec<Grant>);

/// Keeps a process's [`Live`] directory in step with what Redis holds: MoviePilot's mapping
/// (when it is on) and the grants, read together every [`FOLLOW_EVERY`] in one round trip.
pub struct Follower {
    ledger: Ledger,
    live: Live,
    /// Whether MoviePilot's mapping is followed (`moviepilot.users_refresh_secs` > 0); off, its
    /// stored HASH is not read and maps nobody.
    moviepilot: bool,
    /// The mapping's entries and the grants last applied; `None` before the first read.
    seen: Option<Followed>,
    /// Whether this follower's directory is the one the process admits with, whose counts the
    /// `oncebot_users_mapped` gauges show (the ingress's); a second follower must not overwrite
    /// them with its own timing.
    gauges: bool,
    /// The claim code's watch (`claim`), when this follower keeps one (the process's own).
    claims: Option<crate::claim::ClaimWatch>,
}

impl Follower {
    pub fn new(ledger: Ledger, live: Live, moviepilot: bool) -> Follower {
        Follower {
            ledger,
            live,
            moviepilot,
            seen: None,
            gauges: true,
            claims: None,
        }
    }

    /// A follower that also offers the claim code while the directory gives nobody `admin`
    /// (`claim::ClaimWatch`), after every read.
    pub fn with_claims(mut self) -> Follower {
        self.claims = Some(crate::claim::ClaimWatch::default());
        self
    }

    /// A follower whose directory is not the one admission decides with: it leaves the gauges
    /// to that one.
    pub fn without_gauges(mut self) -> Follower {
        self.gauges = false;
        self
    }

    /// Reads what is stored once and applies it when it changed.
    pub async fn read_once(&mut self) -> Result<(), LedgerError> {
        let stored = self.ledger.stored_directory(self.moviepilot).await?;
        let entries = stored.moviepilot.map(|m| m.entries).unwrap_or_default();
        let now = (entries, stored.granted);
        if self.seen.as_ref() != Some(&now) {
            let mappings = entries_mappings(&now.0);
            self.live.set_stored(Some(mappings), Some(now.1.clone()));
            let (setting, moviepilot) = self.live.current().mapped_counts();
            tracing::debug!(
                setting,
                moviepilot,
                granted = now.1.len(),
                "this process now maps users by MoviePilot's mapping and the grants as stored"
            );
            self.seen = Some(now);
        }
        if self.gauges {
            set_gauges(&self.live.current());
        }
        if let Some(claims) = &mut self.claims {
            claims.check(&self.ledger, &self.live.current()).await;
        }
        Ok(())
    }

    /// Reads every [`FOLLOW_EVERY`] (more often until the first read worked), until `stop`.
    pub async fn run(mut self, stop: CancellationToken) {
        loop {
            let wait = match self.read_once().await {
                Ok(()) => FOLLOW_EVERY,
                Err(e) if self.seen.is_some() => {
                    tracing::debug!(error = %e, "reading MoviePilot's user mapping failed");
                    FOLLOW_EVERY
                }
                Err(_) => FOLLOW_UNTIL_READ,
            };
            if sleep_or_stop(wait, &stop).await {
                return;
            }
        }
    }
}

/// `oncebot_users_mapped{source}` from the process's directory.
pub fn set_gauges(directory: &Directory) {
    let (setting, moviepilot) = directory.mapped_counts();
    METRICS.set_users_mapped(setting, moviepilot, directory.granted_count());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moviepilot::MpPermissions;
    use crate::vocabulary::Role;

    fn mp(name: &str, active: bool, superuser: bool, id: Option<i64>) -> MpUser {
        MpUser {
            name: name.into(),
            is_active: active,
            is_superuser: superuser,
            permissions: MpPermissions::DEFAULT,
            telegram_userid: id,
        }
    }

    fn with(permissions: MpPermissions, user: MpUser) -> MpUser {
        MpUser {
            permissions,
            ..user
        }
    }

    /// Issue 43: rights from MoviePilot, never above them. `subscribe` off is a viewer, on (or
    /// left to MoviePilot's default) a user; `manage` makes nobody an admin, a superuser is one
    /// whatever their permissions say; the rights go along for the listings.
    #[test]
    fn moviepilots_permissions_give_the_role_and_never_more() {
        let no_subscribe = MpPermissions {
            subscribe: false,
            ..MpPermissions::DEFAULT
        };
        let manage = MpPermissions {
            manage: true,
            ..MpPermissions::DEFAULT
        };
        let manage_only = MpPermissions {
            manage: true,
            ..no_subscribe
        };
        let read = mappings_of(
            &[
                with(no_subscribe, mp("kid", true, false, Some(1))),
                mp("plain", true, false, Some(2)),
                with(manage, mp("manager", true, false, Some(3))),
                with(manage_only, mp("m", true, false, Some(4))),
                with(no_subscribe, mp("boss", true, true, Some(5))),
            ],
            false,
        );
        assert_eq!(
            read.mappings
                .iter()
                .map(|m| (m.user_id, m.role))
                .collect::<Vec<_>>(),
            vec![
                (1, Role::Viewer),
                (2, Role::User),
                (3, Role::User),
                (4, Role::Viewer),
                (5, Role::Admin),
            ]
        );
        let kid = read.rights[0];
        assert_eq!(kid.0, 1);
        assert!(!kid.1.superuser && !kid.1.subscribe && kid.1.search);
        assert!(read.rights[4].1.superuser);
        assert_eq!(read.rights.len(), read.mappings.len());
    }

    /// Issue 44: with `household.media_requests`, the member whose `subscribe` is off maps a
    /// requester; the others as without it.
    #[test]
    fn with_media_requests_subscribe_off_maps_a_requester() {
        let no_subscribe = MpPermissions {
            subscribe: false,
            ..MpPermissions::DEFAULT
        };
        let users = [
            with(no_subscribe, mp("kid", true, false, Some(1))),
            mp("plain", true, false, Some(2)),
            with(no_subscribe, mp("boss", true, true, Some(5))),
        ];
        let roles = |media_requests| {
            mappings_of(&users, media_requests)
                .mappings
                .iter()
                .map(|m| m.role)
                .collect::<Vec<_>>()
        };
        assert_eq!(roles(false), [Role::Viewer, Role::User, Role::Admin]);
        assert_eq!(roles(true), [Role::Requester, Role::User, Role::Admin]);
    }

    #[test]
    fn a_superuser_is_an_admin_others_users_and_the_inactive_nobody() {
        let MoviePilotMapping {
            mappings: m,
            shadowed,
            ..
        } = mappings_of(
            &[
                mp("admin", true, true, Some(1)),
                mp("bob", true, false, Some(2)),
                mp("gone", false, true, Some(3)),
                mp("none", true, false, None),
            ],
            false,
        );
        assert_eq!(
            m.iter()
                .map(|m| (m.user_id, m.stored_value()))
                .collect::<Vec<_>>(),
            vec![(1, "admin:admin".to_string()), (2, "bob:user".to_string())]
        );
        assert!(shadowed.is_empty());
    }

    #[test]
    fn an_id_two_users_set_goes_to_the_first_moviepilot_lists() {
        let MoviePilotMapping {
            mappings: m,
            shadowed,
            ..
        } = mappings_of(
            &[
                mp("first", true, false, Some(5)),
                mp("second", true, true, Some(5)),
            ],
            false,
        );
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].requester.as_deref(), Some("first"));
        assert_eq!(shadowed, vec![(5, "second".to_string())]);
    }

    #[test]
    fn a_name_that_cannot_be_a_path_segment_maps_nobody_and_keeps_its_id() {
        let read = mappings_of(
            &[
                mp("..", true, true, Some(7)),
                mp("later", true, false, Some(7)),
                mp(".", true, false, Some(8)),
                mp("..\\..\\system\\restart", true, false, Some(9)),
            ],
            false,
        );
        assert_eq!(
            read.mappings
                .iter()
                .map(|m| (m.user_id, m.stored_value()))
                .collect::<Vec<_>>(),
            vec![(9, "..\\..\\system\\restart:user".to_string())]
        );
        assert_eq!(
            read.unusable,
            vec![(7, "..".to_string()), (8, ".".to_string())]
        );
        assert_eq!(read.shadowed, vec![(7, "later".to_string())]);
    }

    #[test]
    fn the_description_says_which_state_the_mapping_is_in() {
        let d = Directory::new(&[1], vec![]).unwrap();
        assert!(describe(None, &d).contains("off"));
        assert!(describe(Some(&StoredUsers::default()), &d).contains("not been read yet"));
        let refused = StoredUsers {
            refreshed_at: Some(1),
            state: STATE_NOT_SUPERUSER.into(),
            ..StoredUsers::default()
        };
        assert!(describe(Some(&refused), &d).contains("not a superuser"));
        let read = StoredUsers {
            refreshed_at: Some(1),
            state: STATE_OK.into(),
            by: "w".into(),
            entries: vec![(1, "a:user".into()), (9, "b:admin".into())],
            rights: vec![(1, r#"{"superuser":false,"discovery":true,"search":true,"subscribe":true,"manage":true}"#.into()), (9, "odd".into())],
        };
        let with = directory_with(&d, Some(&read));
        assert!(describe(Some(&read), &with).contains("2 Telegram id(s) mapped, 1 of them not"));
        // The rights come along in the listing, in a field of their own.
        let rows = with.rows();
        assert_eq!(rows[0].moviepilot_permissions.map(|r| r.manage), Some(true));
        assert_eq!(rows[0].role, "user");
    }

    /// A HASH a release up to 0.2.0 stored (no `permissions:<id>` fields) reads as before,
    /// its rows without MoviePilot rights.
    #[test]
    fn a_mapping_stored_without_rights_lists_none() {
        let d = Directory::new(&[1], vec![]).unwrap();
        let old = StoredUsers::from_fields([
            ("state".to_string(), "ok".to_string()),
            ("1".into(), "a:viewer".into()),
        ]);
        let rows = directory_with(&d, Some(&old)).rows();
        assert_eq!(
            (rows[0].role, rows[0].moviepilot_permissions),
            ("viewer", None)
        );
    }
}
