//! The one rig that tests, `oncebot demo` and `oncebot bench` share to run oncebot beside the
//! simulators: the `ONCEBOT__*` environment that wires it to them ([`OncebotEnv`], [`Sims`]),
//! the binary as a child process ([`Oncebot`]), and the one way to wait for an event
//! ([`wait`]).
//!
//! Settings are always built the way the binary builds them, from `ONCEBOT__*` variables
//! (`Settings::load_from`), never by filling in structs by hand: an in-process role and a child
//! process given the same [`OncebotEnv`] agree by construction.

mod child;
mod env;
mod wait;

pub use child::{Oncebot, OncebotCommand, send_signal};
pub use env::{OncebotEnv, Sims};
pub use wait::{Wait, wait};
