//! MoviePilot: the one place oncebot talks to it.
//!
//! - `client`: [`MoviePilot`], connected once per process and shared; picks the v2 or v3
//!   dialect from the server's version, owns the login token and the timeouts.
//! - `types`: what the rest of oncebot sees ([`MediaItem`], [`Subscription`], [`Download`]) and
//!   the lenient wire shapes behind them.
//! - `error`: [`MpError`], whose kind (permanent, transient, uncertain) is the worker's retry
//!   decision.
//! - `library`: [`Library`], what MoviePilot's media server holds of a media (the library
//!   check: quick, never an error, never in the way).
//! - `gate`: [`LoginGate`], how the processes of a deployment make one login at a time and back
//!   off while logins are refused (the ledger implements it in Redis).
//!
//! The facts this follows (paths, bodies, duplicate behaviour, what v2.5.6 really answered) are
//! in the project's MoviePilot reference notes; `sim::moviepilot` is a server that answers the
//! same way, for tests and the demo.

mod client;
mod error;
mod gate;
mod library;
mod messages;
mod releases;
mod types;

pub use crate::config::MoviePilotSettings;
pub use client::{MATCHES_ASKED, MoviePilot, SchedulerRun, TransferRecord};
pub use error::{ListUsersError, MpError, Unreachable};
pub use gate::{
    GateFuture, LOGIN_BACKOFF_FIRST, LOGIN_BACKOFF_MAX, LoginGate, Turn, login_backoff,
};
pub use library::{Gap, LIBRARY_TIMEOUT, Library, LibraryMedia};
pub use messages::{HistoryMessage, MESSAGE_PAGE, parse_local_time};
pub use releases::{HistoryRow, RawJson, Release, ReleaseIdentity, ReleaseList, magnet_hash};
pub use types::{
    Dialect, Download, MediaItem, MediaKind, MpUser, NewSubscription, Subscription, poster_url,
};
