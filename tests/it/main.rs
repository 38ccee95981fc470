//! oncebot's integration tests: one binary, one module per area. Tests talk to real
//! `redis-server` processes (private, on unix sockets) and to simulated outside services that
//! speak the real wire protocol (`oncebot::sim`).

/// Helpers shared by the modules: oncebot as a child process, waiting on conditions.
mod support;

/// The simulated Bot API itself: offset semantics, long polls, error shapes, faults.
mod telegram_sim;

/// `oncebot serve --role ingress --poll` as a real process: updates become jobs once, the
/// offset advances only after admission, a crash in between repeats nothing, 409 and 401.
mod polling;

/// The MoviePilot client against the simulator, in both dialects: operations, duplicate
/// creates, the shared re-login, timeouts and error kinds; and the simulator against the bodies
/// a real v2.5.6 answered (`tests/fixtures/moviepilot-v2.5.6/`).
mod moviepilot;
