//! MoviePilot: the one place oncebot talks to it.
//!
//! - `client`: [`MoviePilot`], connected once per process and shared; picks the v2 or v3
//!   dialect from the server's version, owns the login token and the timeouts, and is the one
//!   path every call goes through (a directory: its steps, one file each).
//! - One file per area of MoviePilot's API (its `app/api/endpoints/*.py`), each an
//!   `impl MoviePilot` of that area's calls, built on `client` alone and never on another area:
//!   `subscriptions` (subscribe), `media` (media), `downloads` (search and download),
//!   `history` (history, and transfer's redo), `system` (system and dashboard), `users`
//!   (user), `library` (mediaserver, below) and `messages` (message: the relay's rows).
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
mod downloads;
mod error;
mod gate;
mod history;
mod library;
mod media;
mod messages;
mod releases;
mod subscriptions;
mod system;
mod types;
mod users;

pub use crate::config::MoviePilotSettings;
pub use client::{Announced, MoviePilot};
pub use downloads::DownloadProgress;
pub use error::{ListUsersError, MpError, Unreachable};
pub use gate::{
    GateFuture, LOGIN_BACKOFF_FIRST, LOGIN_BACKOFF_MAX, LoginGate, Turn, login_backoff,
};
pub use history::{TRANSFER_FOLLOW_PAGE, TransferRecord, TransferRow};
pub use library::{Gap, LIBRARY_TIMEOUT, Library, LibraryMedia};
pub use media::MATCHES_ASKED;
pub use messages::{HistoryMessage, MESSAGE_PAGE, parse_local_time};
pub use releases::{HistoryRow, RawJson, Release, ReleaseIdentity, ReleaseList, magnet_hash};
pub use subscriptions::CompletedSubscription;
pub use system::SchedulerRun;
pub use types::{
    Dialect, Download, MediaItem, MediaKind, MpPermissions, MpUser, NewSubscription, Subscription,
    poster_url,
};
pub use users::OwnAccount;
