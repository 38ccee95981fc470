//! The files of the repository's top level that this crate compiles in or its tests read: the
//! Lua scripts (`lua/`), the default settings (`config/default.toml`) and, for tests only, the
//! documents and operator files held to the code (`docs/`, `config/example.toml`) and the
//! fixtures both crates share (`tests/fixtures/`).
//!
//! They live at the top level, not in this crate, because that is where an operator looks: the
//! scripts' headers are the contracts of every state change that `docs/redis.md` points
//! to, `config/` is what an operator copies and mounts, and the image and compose files
//! take them from there. This module is the one place that knows the way from this crate to
//! them; everything else names a file by its path from the top level, as the documents do.

/// `path` (from the top level, e.g. `"lua/claim.lua"`, or a `concat!` of literals) as a path
/// from this crate, for `include_str!` (which otherwise reads relative to the calling file).
macro_rules! top_level_path {
    ($path:expr) => {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../", $path)
    };
}
pub(crate) use top_level_path;

/// The text of the top-level file `path`, compiled in (a change to it rebuilds the crate).
macro_rules! top_level_str {
    ($path:expr) => {
        include_str!($crate::assets::top_level_path!($path))
    };
}
pub(crate) use top_level_str;

/// The defaults, documented key by key; the same file is committed as `config/default.toml`.
pub const DEFAULT_TOML: &str = top_level_str!("config/default.toml");

/// The top-level file or directory `path` (e.g. `"lua"`, `"docs/redis.md"`), for a test that
/// reads it at run time.
#[cfg(test)]
pub(crate) fn path(path: &str) -> std::path::PathBuf {
    std::path::Path::new(top_level_path!("")).join(path)
}

/// The text of the top-level file `path`, read at run time by a test; panics naming the file.
#[cfg(test)]
pub(crate) fn read(path: &str) -> String {
    let full = self::path(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}
