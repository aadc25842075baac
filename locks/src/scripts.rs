//! The Lua scripts of the ladder: one `.lua` file each, the one copy used
//! by the rungs, the simulator's conformance suite and the benchmarks.

use redis::Script;
use std::sync::LazyLock;

/// Source of the owner-checked release (`lua-release`, `redlock`, `fenced`).
pub const RELEASE_LUA: &str = include_str!("lua/release.lua");
/// Source of the owner-checked TTL extension.
pub const EXTEND_LUA: &str = include_str!("lua/extend.lua");

/// Owner-checked release, sent with EVALSHA (loaded on NOSCRIPT).
pub static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE_LUA));
/// Owner-checked extension.
pub static EXTEND: LazyLock<Script> = LazyLock::new(|| Script::new(EXTEND_LUA));

/// Every script of the ladder, by name, for conformance tests and docs.
pub fn all() -> Vec<(&'static str, &'static str)> {
    vec![("release", RELEASE_LUA), ("extend", EXTEND_LUA)]
}
