//! What oncebot is tried with, apart from the service itself: simulated external servers that
//! speak the real Telegram Bot API and MoviePilot API, a private `redis-server` launcher, the
//! narrated `oncebot demo`, `oncebot bench`, and the rig that starts oncebot beside them for the
//! tests, the demo and the bench alike.
//!
//! - `sim`: the Telegram and MoviePilot simulators, with fault injection.
//! - `redis_server`: a throwaway `redis-server` on a unix socket or loopback port.
//! - `demo`: `oncebot demo`, the whole pipeline against the simulators, narrated.
//! - `bench`: `oncebot bench`, admission, drain, end-to-end and recovery figures.
//! - `rig`: oncebot wired to a Redis and the simulators, in-process or as a child process.

pub mod bench;
pub mod demo;
pub mod redis_server;
pub mod rig;
pub mod sim;
