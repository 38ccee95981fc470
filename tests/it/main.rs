//! oncebot's integration tests, one binary (see STYLE: one `mod` per area, a comment each).
//! Fakes are HTTP servers speaking the real APIs (`oncebot::sim`), never traits.

/// The MoviePilot client against the simulator, in both dialects: operations, duplicate
/// creates, the shared re-login, timeouts and error kinds; and the simulator against the bodies
/// a real v2.5.6 answered (`tests/fixtures/moviepilot-v2.5.6/`).
mod moviepilot;
