//! Who a Telegram user is to oncebot: their role and the MoviePilot user they act as.
//!
//! Policy, in one place:
//! - **The allow-list comes first.** Only `telegram.allowed_users` run commands; a mapping (the
//!   setting, or MoviePilot's own) never adds anyone. [`Directory::identify`] answers `None` for
//!   anybody else.
//! - **Nothing changes for a deployment that maps nobody.** With no mapping at all, every allowed
//!   user is an `admin` acting as the service account, as before roles existed.
//! - **Once anyone is mapped**, an allowed user nobody mapped is a `user` acting as the service
//!   account (no MoviePilot name of their own).
//! - **Two sources, the explicit one winning**: `telegram.users` (the setting), then MoviePilot's
//!   own mapping (the `telegram_userid` a MoviePilot user set, with the role their MoviePilot
//!   rights give: [`MoviePilotRights::role`]; read by `users_sync` into Redis and from there into
//!   [`Live`]). Until MoviePilot's mapping has been read once, it maps nobody: the setting alone
//!   decides, as before it existed.
//! - **A grant is an identity of its own** ([`Grant`]: a role given from the chat or the CLI,
//!   kept in Redis as `users:granted`). It makes its Telegram id allowed beside
//!   `telegram.allowed_users` (which stays the floor: a revocation never removes anyone from it),
//!   and gives the role where neither the setting nor MoviePilot maps that id. It does **not**
//!   count as "someone is mapped": a deployment that maps nobody keeps its allowed users admins.
//!
//! Pure: no I/O. Depends only on `vocabulary` and `path_segment`.

mod rights;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock};

use crate::vocabulary::Role;

pub use rights::MoviePilotRights;

/// One entry of `telegram.users`: `<telegram id>=<MoviePilot name>:<role>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub user_id: i64,
    /// The MoviePilot username; `None` when the entry leaves it out (`333=:admin`).
    pub requester: Option<String>,
    pub role: Role,
}

impl Mapping {
    /// How the mapping is stored in Redis (`users:moviepilot`): `<MoviePilot name>:<role>`, as
    /// in `telegram.users`.
    pub fn stored_value(&self) -> String {
        format!(
            "{}:{}",
            self.requester.as_deref().unwrap_or_default(),
            self.role.as_str()
        )
    }

    /// A stored `<MoviePilot name>:<role>` for `user_id`; `None` for a value no release wrote,
    /// and for a name that cannot be one URL path segment (an earlier release stored any).
    pub fn from_stored(user_id: i64, value: &str) -> Option<Mapping> {
        let (name, role) = value.rsplit_once(':')?;
        if !name.is_empty() {
            crate::path_segment::check(name).ok()?;
        }
        Some(Mapping {
            user_id,
            requester: (!name.is_empty()).then(|| name.to_string()),
            role: role.parse().ok()?,
        })
    }
}

/// Where a user's identity came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `telegram.users`.
    Setting,
    /// MoviePilot's own mapping (a user's `telegram_userid`).
    MoviePilot,
    /// Nobody mapped them while someone else is mapped: a `user` as the service account.
    Unmapped,
    /// Nobody is mapped at all: an `admin` as the service account, as before roles existed.
    NobodyMapped,
    /// A grant (`users:granted`: from the chat, a claim or `oncebot users grant`), as the
    /// service account.
    Granted,
}

impl Source {
    pub const ALL: [Source; 5] = [
        Source::Setting,
        Source::MoviePilot,
        Source::Granted,
        Source::Unmapped,
        Source::NobodyMapped,
    ];

    /// The source named `name` (`as_str`'s inverse).
    pub fn named(name: &str) -> Option<Source> {
        Source::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// The name `oncebot users` and the operator's page show.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Setting => "setting",
            Source::MoviePilot => "moviepilot",
            Source::Unmapped => "unmapped",
            Source::NobodyMapped => "nobody_mapped",
            Source::Granted => "granted",
        }
    }
}

/// What an allowed user is to oncebot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub role: Role,
    /// The MoviePilot username they act as; `None`: the service account oncebot logs in with.
    pub requester: Option<String>,
    pub source: Source,
}

/// One row of a listing: an allowed user and their identity.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UserRow {
    pub user_id: i64,
    pub role: &'static str,
    pub requester: Option<String>,
    pub source: &'static str,
    /// What MoviePilot's mapping read of this id's MoviePilot user (`None`: MoviePilot maps
    /// nobody to it, or a release before this one stored the mapping), whichever source decides.
    pub moviepilot_permissions: Option<MoviePilotRights>,
    /// Their grant, when they have one (whatever decides their role now): who gave it and when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant: Option<Grant>,
}

/// `Grant::by` of a grant made with `oncebot users grant`.
pub const GRANTED_BY_CLI: &str = "cli";
/// `Grant::by` of the grant a claim code made (`/claim`).
pub const GRANTED_BY_CLAIM: &str = "claim";

/// A role given to a Telegram id from the chat (an admin's Allow, a claim) or with `oncebot
/// users grant`: stored in `users:granted` as `<role>:<by>:<at ms>`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Grant {
    #[serde(skip)]
    pub user_id: i64,
    #[serde(serialize_with = "role_name")]
    pub role: Role,
    /// Who granted it: an admin's Telegram id, `claim` (the claim code) or `cli`.
    pub by: String,
    /// When (ms since the epoch, Redis's clock).
    pub at: u64,
}

fn role_name<S: serde::Serializer>(role: &Role, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(role.as_str())
}

impl Grant {
    /// How the grant is stored (`lua/include/grants.lua` writes the same): `<role>:<by>:<at>`.
    pub fn stored_value(&self) -> String {
        format!("{}:{}:{}", self.role.as_str(), self.by, self.at)
    }

    /// A stored value for `user_id`; `None` for one no release wrote.
    pub fn from_stored(user_id: i64, value: &str) -> Option<Grant> {
        let mut parts = value.splitn(3, ':');
        let role = parts.next()?.parse().ok()?;
        let by = parts.next()?.to_string();
        let at = parts.next()?.parse().ok()?;
        Some(Grant {
            user_id,
            role,
            by,
            at,
        })
    }
}

/// A bad entry of `telegram.users`: the entry as written and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("entry {entry:?} {why}")]
pub struct UsersError {
    pub entry: String,
    pub why: String,
}

impl UsersError {
    fn new(entry: &str, why: impl Into<String>) -> Self {
        Self {
            entry: entry.to_string(),
            why: why.into(),
        }
    }
}

/// Reads `telegram.users`: comma-separated `<telegram id>=<MoviePilot name>:<role>`, the name
/// possibly empty (`333333333=:admin`). Blanks around the parts are ignored; an empty setting
/// maps nobody.
pub fn parse_users(text: &str) -> Result<Vec<Mapping>, UsersError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for raw in text.split(',') {
        let entry = raw.trim();
        if entry.is_empty() {
            continue;
        }
        let Some((id, rest)) = entry.split_once('=') else {
            return Err(UsersError::new(
                entry,
                "has no '=' (expected <telegram id>=<MoviePilot name>:<role>)",
            ));
        };
        let user_id: i64 = id.trim().parse().map_err(|_| {
            UsersError::new(
                entry,
                format!("has {:?}, not a Telegram user id", id.trim()),
            )
        })?;
        let Some((name, role)) = rest.rsplit_once(':') else {
            return Err(UsersError::new(
                entry,
                "has no ':<role>' (expected <telegram id>=<MoviePilot name>:<role>)",
            ));
        };
        let role: Role = role
            .trim()
            .parse()
            .map_err(|e: String| UsersError::new(entry, format!("has an {e}")))?;
        if !seen.insert(user_id) {
            return Err(UsersError::new(
                entry,
                format!("maps {user_id} again (each Telegram id once)"),
            ));
        }
        let name = name.trim();
        // Empty is the service account; any other name must be one URL path segment, since it
        // goes into MoviePilot's paths (`/api/v1/subscribe/user/<name>`).
        if !name.is_empty()
            && let Err(e) = crate::path_segment::check(name)
        {
            return Err(UsersError::new(
                entry,
                format!("names a MoviePilot user oncebot cannot act for: {e}"),
            ));
        }
        out.push(Mapping {
            user_id,
            requester: (!name.is_empty()).then(|| name.to_string()),
            role,
        });
    }
    Ok(out)
}

/// The allowed users and what maps them: the one place a Telegram id becomes an [`Identity`].
#[derive(Debug, Clone, Default)]
pub struct Directory {
    allowed: BTreeSet<i64>,
    setting: BTreeMap<i64, Mapping>,
    /// MoviePilot's own mapping as stored (every id it maps: only allowed ones count, and a
    /// grant can make one allowed); empty until it has been read.
    moviepilot: BTreeMap<i64, Mapping>,
    /// The MoviePilot rights that mapping was read from (allowed ids only), for the listings.
    moviepilot_rights: BTreeMap<i64, MoviePilotRights>,
    /// The grants (`users:granted`), by Telegram id.
    granted: BTreeMap<i64, Grant>,
}

/// A `telegram.users` entry for a Telegram id that is not on `telegram.allowed_users`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("maps {user_id}, who is not in telegram.allowed_users (a mapping never adds anyone)")]
pub struct NotAllowed {
    pub user_id: i64,
}

impl Directory {
    /// The allow-list and the setting's mappings; every mapped id must be allowed.
    pub fn new(allowed: &[i64], setting: Vec<Mapping>) -> Result<Directory, NotAllowed> {
        let allowed: BTreeSet<i64> = allowed.iter().copied().collect();
        if let Some(m) = setting.iter().find(|m| !allowed.contains(&m.user_id)) {
            return Err(NotAllowed { user_id: m.user_id });
        }
        Ok(Directory {
            allowed,
            setting: setting.into_iter().map(|m| (m.user_id, m)).collect(),
            moviepilot: BTreeMap::new(),
            moviepilot_rights: BTreeMap::new(),
            granted: BTreeMap::new(),
        })
    }

    /// Replaces MoviePilot's side of the mapping (ids not allowed count for nothing: the
    /// allow-list and the grants decide who runs commands).
    pub fn set_moviepilot(&mut self, mappings: Vec<Mapping>) {
        self.moviepilot = mappings.into_iter().map(|m| (m.user_id, m)).collect();
    }

    /// Replaces the grants (`users:granted` as stored).
    pub fn set_granted(&mut self, grants: Vec<Grant>) {
        self.granted = grants.into_iter().map(|g| (g.user_id, g)).collect();
    }

    /// `user_id`'s grant, if they have one.
    pub fn grant(&self, user_id: i64) -> Option<&Grant> {
        self.granted.get(&user_id)
    }

    /// Whether `user_id` is on `telegram.allowed_users` (the floor no chat can revoke).
    pub fn in_allowed_users(&self, user_id: i64) -> bool {
        self.allowed.contains(&user_id)
    }

    /// The MoviePilot rights behind MoviePilot's side, by Telegram id (ids not allowed are kept
    /// out), for [`Directory::rows`]; deciding needs only the roles [`Directory::set_moviepilot`]
    /// sets.
    pub fn set_moviepilot_rights(
        &mut self,
        rights: impl IntoIterator<Item = (i64, MoviePilotRights)>,
    ) {
        self.moviepilot_rights = rights
            .into_iter()
            .filter(|(id, _)| self.allowed.contains(id))
            .collect();
    }

    /// MoviePilot's side as it stands (allowed ids only), by Telegram id.
    pub fn moviepilot(&self) -> impl Iterator<Item = &Mapping> {
        self.moviepilot
            .values()
            .filter(|m| self.is_allowed(m.user_id))
    }

    /// How many allowed users the setting maps, and how many MoviePilot maps that the setting
    /// does not (the ones MoviePilot's mapping decides).
    pub fn mapped_counts(&self) -> (usize, usize) {
        let mp = self
            .moviepilot()
            .filter(|m| !self.setting.contains_key(&m.user_id))
            .count();
        (self.setting.len(), mp)
    }

    /// How many grants this directory holds (`users:granted` as followed).
    pub fn granted_count(&self) -> usize {
        self.granted.len()
    }

    /// Whether `user_id` may run commands at all: on `telegram.allowed_users`, or granted.
    pub fn is_allowed(&self, user_id: i64) -> bool {
        self.allowed.contains(&user_id) || self.granted.contains_key(&user_id)
    }

    /// Whether anyone allowed is mapped (by the setting or MoviePilot; a grant is no mapping):
    /// until then every allowed user is an admin.
    pub fn anyone_mapped(&self) -> bool {
        !self.setting.is_empty() || self.moviepilot().next().is_some()
    }

    /// Everyone allowed: `telegram.allowed_users` and the granted, by Telegram id.
    fn everyone(&self) -> BTreeSet<i64> {
        self.allowed
            .iter()
            .chain(self.granted.keys())
            .copied()
            .collect()
    }

    /// The allowed users who are admins now (everyone allowed while nobody is mapped).
    pub fn admins(&self) -> Vec<i64> {
        self.everyone()
            .into_iter()
            .filter(|&id| self.identify(id).is_some_and(|i| i.role >= Role::Admin))
            .collect()
    }

    /// What `user_id` is; `None` for anyone neither on the allow-list nor granted.
    pub fn identify(&self, user_id: i64) -> Option<Identity> {
        if !self.is_allowed(user_id) {
            return None;
        }
        let found = self
            .setting
            .get(&user_id)
            .map(|m| (m, Source::Setting))
            .or_else(|| {
                self.moviepilot
                    .get(&user_id)
                    .map(|m| (m, Source::MoviePilot))
            });
        let granted = self.granted.get(&user_id);
        Some(match (found, granted) {
            (Some((m, source)), _) => Identity {
                role: m.role,
                requester: m.requester.clone(),
                source,
            },
            (None, Some(g)) => Identity {
                role: g.role,
                requester: None,
                source: Source::Granted,
            },
            (None, None) if self.anyone_mapped() => Identity {
                role: Role::User,
                requester: None,
                source: Source::Unmapped,
            },
            (None, None) => Identity {
                role: Role::Admin,
                requester: None,
                source: Source::NobodyMapped,
            },
        })
    }

    /// Every allowed user (the granted too) with their identity, by Telegram id.
    pub fn rows(&self) -> Vec<UserRow> {
        self.everyone()
            .into_iter()
            .filter_map(|user_id| {
                self.identify(user_id).map(|i| UserRow {
                    user_id,
                    role: i.role.as_str(),
                    requester: i.requester,
                    source: i.source.as_str(),
                    moviepilot_permissions: self.moviepilot_rights.get(&user_id).copied(),
                    grant: self.granted.get(&user_id).cloned(),
                })
            })
            .collect()
    }
}

/// The directory a process decides with, shared by its tasks and replaced whole when
/// MoviePilot's mapping changes (`users_sync::Follower`): a reader never sees half a change.
#[derive(Debug, Clone, Default)]
pub struct Live(Arc<RwLock<Arc<Directory>>>);

impl Live {
    pub fn new(directory: Directory) -> Live {
        Live(Arc::new(RwLock::new(Arc::new(directory))))
    }

    /// The directory as it is now (a cheap clone of a pointer; the lock is held for no longer).
    pub fn current(&self) -> Arc<Directory> {
        // A poisoned lock still holds a whole directory: it is only ever replaced, never edited.
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces MoviePilot's side (see [`Directory::set_moviepilot`]).
    pub fn set_moviepilot(&self, mappings: Vec<Mapping>) {
        self.set_stored(Some(mappings), None);
    }

    /// Replaces what Redis holds, in one step: MoviePilot's side (`None`: unchanged) and the
    /// grants (`None`: unchanged).
    pub fn set_stored(&self, mappings: Option<Vec<Mapping>>, grants: Option<Vec<Grant>>) {
        let mut next = (*self.current()).clone();
        if let Some(mappings) = mappings {
            next.set_moviepilot(mappings);
        }
        if let Some(grants) = grants {
            next.set_granted(grants);
        }
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping(user_id: i64, name: Option<&str>, role: Role) -> Mapping {
        Mapping {
            user_id,
            requester: name.map(str::to_string),
            role,
        }
    }

    #[test]
    fn a_name_that_cannot_be_one_path_segment_is_refused_any_other_is_kept() {
        for bad in ["1=..:user", "1=.:admin", "1= .. :user"] {
            let e = parse_users(bad).unwrap_err();
            assert!(e.to_string().contains("one segment"), "{e}");
        }
        let got = parse_users("1=..\\..\\system\\restart:user,2=a/b?c#d:viewer").unwrap();
        assert_eq!(got[0].requester.as_deref(), Some("..\\..\\system\\restart"));
        assert_eq!(got[1].requester.as_deref(), Some("a/b?c#d"));
        // A value an earlier release stored with such a name maps nobody.
        assert_eq!(Mapping::from_stored(1, "..:admin"), None);
        assert!(Mapping::from_stored(1, "a/b:user").is_some());
    }

    #[test]
    fn the_documented_example_parses() {
        let got =
            parse_users("111111111=alice:admin, 222222222=bob:user,333333333=:admin").unwrap();
        assert_eq!(
            got,
            vec![
                mapping(111111111, Some("alice"), Role::Admin),
                mapping(222222222, Some("bob"), Role::User),
                mapping(333333333, None, Role::Admin),
            ]
        );
        assert_eq!(parse_users("").unwrap(), vec![]);
        assert_eq!(parse_users(" , ").unwrap(), vec![]);
    }

    #[test]
    fn each_bad_entry_is_named_with_why() {
        let cases = [
            (
                "abc=alice:admin",
                "abc=alice:admin",
                "not a Telegram user id",
            ),
            ("1=alice:admin,2alice:user", "2alice:user", "no '='"),
            ("1=alice", "1=alice", "no ':<role>'"),
            ("1=alice:root", "1=alice:root", "unknown role \"root\""),
            ("1=a:user,1=b:admin", "1=b:admin", "maps 1 again"),
        ];
        for (text, entry, why) in cases {
            let e = parse_users(text).unwrap_err();
            assert_eq!(e.entry, entry, "{text}");
            assert!(e.to_string().contains(why), "{text}: {e}");
        }
    }

    /// Issue 44: `…=carol:requester` maps a requester, who ranks between viewer and user; an
    /// unknown role's message lists it; a grant stores and reads it back.
    #[test]
    fn a_requester_is_set_like_any_role() {
        let got = parse_users("3=carol:requester, 4=:requester").unwrap();
        assert_eq!(
            got,
            vec![
                mapping(3, Some("carol"), Role::Requester),
                mapping(4, None, Role::Requester),
            ]
        );
        let e = parse_users("1=alice:asker").unwrap_err();
        assert!(
            e.to_string()
                .contains("expected viewer, requester, user or admin"),
            "{e}"
        );
        let d = Directory::new(&[3, 4, 5], got).unwrap();
        let carol = d.identify(3).unwrap();
        assert_eq!(
            (carol.role, carol.source),
            (Role::Requester, Source::Setting)
        );
        // Not an admin, so not among those who decide.
        assert_eq!(d.admins(), Vec::<i64>::new());
        let g = grant(5, Role::Requester);
        assert!(g.stored_value().starts_with("requester:"));
        assert_eq!(Grant::from_stored(5, &g.stored_value()), Some(g));
    }

    #[test]
    fn a_mapped_id_must_be_allowed() {
        let e = Directory::new(&[1], vec![mapping(2, Some("x"), Role::User)]).unwrap_err();
        assert_eq!(e.user_id, 2);
    }

    #[test]
    fn nobody_mapped_means_every_allowed_user_is_an_admin_as_before() {
        let d = Directory::new(&[1, 2], vec![]).unwrap();
        let i = d.identify(1).unwrap();
        assert_eq!(i.role, Role::Admin);
        assert_eq!(i.requester, None);
        assert_eq!(i.source, Source::NobodyMapped);
        assert_eq!(d.identify(3), None, "the allow-list comes first");
    }

    #[test]
    fn once_anyone_is_mapped_the_unmapped_are_users_as_the_service_account() {
        let d = Directory::new(&[1, 2, 3], vec![mapping(1, Some("alice"), Role::Viewer)]).unwrap();
        assert_eq!(
            d.identify(1).unwrap(),
            Identity {
                role: Role::Viewer,
                requester: Some("alice".into()),
                source: Source::Setting
            }
        );
        assert_eq!(
            d.identify(2).unwrap(),
            Identity {
                role: Role::User,
                requester: None,
                source: Source::Unmapped
            }
        );
        assert_eq!(d.rows().len(), 3);
    }

    #[test]
    fn the_setting_wins_over_moviepilot_which_never_adds_anyone() {
        let mut d = Directory::new(&[1, 2], vec![mapping(1, Some("alice"), Role::Admin)]).unwrap();
        d.set_moviepilot(vec![
            mapping(1, Some("other"), Role::User),
            mapping(2, Some("bob"), Role::User),
            mapping(9, Some("stranger"), Role::Admin),
        ]);
        assert_eq!(d.identify(1).unwrap().requester.as_deref(), Some("alice"));
        assert_eq!(d.identify(2).unwrap().source, Source::MoviePilot);
        assert_eq!(d.identify(9), None);
        assert_eq!(
            d.rows().iter().map(|r| r.source).collect::<Vec<_>>(),
            ["setting", "moviepilot"]
        );
    }

    #[test]
    fn a_stored_mapping_reads_back_and_odd_values_are_skipped() {
        for m in [
            mapping(1, Some("alice"), Role::Admin),
            mapping(2, None, Role::User),
            mapping(3, Some("a:b"), Role::Viewer),
        ] {
            assert_eq!(Mapping::from_stored(m.user_id, &m.stored_value()), Some(m));
        }
        assert_eq!(Mapping::from_stored(1, "alice"), None);
        assert_eq!(Mapping::from_stored(1, "alice:root"), None);
    }

    #[test]
    fn a_live_directory_changes_whole_and_keeps_the_setting() {
        let live =
            Live::new(Directory::new(&[1, 2], vec![mapping(1, None, Role::Viewer)]).unwrap());
        let before = live.current();
        live.set_moviepilot(vec![mapping(2, Some("bob"), Role::Admin)]);
        assert_eq!(before.identify(2).unwrap().source, Source::Unmapped);
        let now = live.current();
        assert_eq!(now.identify(2).unwrap().role, Role::Admin);
        assert_eq!(now.identify(1).unwrap().role, Role::Viewer);
        assert_eq!(now.mapped_counts(), (1, 1));
        live.set_moviepilot(vec![]);
        assert_eq!(live.current().identify(2).unwrap().source, Source::Unmapped);
    }

    fn grant(user_id: i64, role: Role) -> Grant {
        Grant {
            user_id,
            role,
            by: "111".into(),
            at: 1_700_000_000_000,
        }
    }

    /// Issue 43: a grant makes its id allowed with its role, and is no mapping: a deployment
    /// that maps nobody keeps its allowed users admins.
    #[test]
    fn a_grant_allows_its_id_and_maps_nobody() {
        let mut d = Directory::new(&[1, 2], vec![]).unwrap();
        assert!(!d.is_allowed(9));
        d.set_granted(vec![grant(9, Role::User)]);
        assert!(d.is_allowed(9));
        assert_eq!(
            d.identify(9).unwrap(),
            Identity {
                role: Role::User,
                requester: None,
                source: Source::Granted
            }
        );
        assert_eq!(d.identify(1).unwrap().source, Source::NobodyMapped);
        assert_eq!(d.admins(), vec![1, 2]);
        assert_eq!(d.rows().len(), 3);
        assert_eq!(d.rows()[2].grant.as_ref().unwrap().by, "111");
    }

    /// The setting, then MoviePilot's mapping, then the grant; a grant on the floor changes an
    /// unmapped user's role, and MoviePilot may map a granted id that is not on the floor.
    #[test]
    fn the_setting_then_moviepilot_then_the_grant() {
        let mut d =
            Directory::new(&[1, 2, 3], vec![mapping(1, Some("alice"), Role::Viewer)]).unwrap();
        d.set_moviepilot(vec![
            mapping(2, Some("bob"), Role::User),
            mapping(9, Some("nine"), Role::Admin),
        ]);
        assert_eq!(d.identify(9), None, "MoviePilot adds nobody");
        d.set_granted(vec![
            grant(1, Role::Admin),
            grant(2, Role::Admin),
            grant(3, Role::Viewer),
            grant(9, Role::Viewer),
        ]);
        assert_eq!(d.identify(1).unwrap().source, Source::Setting);
        assert_eq!(d.identify(1).unwrap().role, Role::Viewer);
        assert_eq!(d.identify(2).unwrap().source, Source::MoviePilot);
        assert_eq!(d.identify(3).unwrap().role, Role::Viewer);
        assert_eq!(d.identify(3).unwrap().source, Source::Granted);
        let nine = d.identify(9).unwrap();
        assert_eq!((nine.role, nine.source), (Role::Admin, Source::MoviePilot));
        assert_eq!(d.mapped_counts(), (1, 2));
    }

    #[test]
    fn a_stored_grant_reads_back_and_odd_values_are_skipped() {
        let g = grant(5, Role::Admin);
        assert_eq!(g.stored_value(), "admin:111:1700000000000");
        assert_eq!(Grant::from_stored(5, &g.stored_value()), Some(g));
        assert_eq!(Grant::from_stored(5, "root:cli:1"), None);
        assert_eq!(Grant::from_stored(5, "user:cli"), None);
        for s in Source::ALL {
            assert_eq!(Source::named(s.as_str()), Some(s));
        }
    }
}
