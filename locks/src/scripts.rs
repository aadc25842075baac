//! The Lua scripts of the ladder: one `.lua` file each, the one copy used
//! by the rungs, the simulator's conformance suite and the benchmarks.
//!
//! Commands the scripts call (what a simulated server must support inside
//! Lua): `get`, `del`, `pexpire`, `exists`, `hexists`, `hincrby`, `pttl`,
//! `set` with `NX PX`, `incr`.

use redis::Script;
use std::sync::LazyLock;

/// Source of the owner-checked release (`lua-release`, `redlock`, `fenced`).
pub const RELEASE_LUA: &str = include_str!("lua/release.lua");
/// Source of the owner-checked TTL extension.
pub const EXTEND_LUA: &str = include_str!("lua/extend.lua");
/// Source of the reentrant hash acquire (`reentrant`, `watchdog`).
pub const REENTRANT_ACQUIRE_LUA: &str = include_str!("lua/reentrant_acquire.lua");
/// Source of the reentrant hash release (`reentrant`, `watchdog`).
pub const REENTRANT_RELEASE_LUA: &str = include_str!("lua/reentrant_release.lua");
/// Source of the owner-checked renewal of a hash lock (the watchdog's tick).
pub const REENTRANT_RENEW_LUA: &str = include_str!("lua/reentrant_renew.lua");
/// Source of the acquire that also hands out a fencing token (`fenced`).
pub const FENCED_ACQUIRE_LUA: &str = include_str!("lua/fenced_acquire.lua");
/// Source of the check by which a `fenced` acquire recognises a grant whose
/// reply was lost.
pub const FENCED_RECLAIM_LUA: &str = include_str!("lua/fenced_reclaim.lua");

/// Source of redsync's extension with `WithSetNXOnExtend`: re-arm my lock,
/// or set it again where it is gone (the `redsync` library rung).
pub const EXTEND_OR_SET_LUA: &str = include_str!("lua/extend_or_set.lua");
/// Source of the fair lock's acquire: a reentrant hash with a line of
/// waiters beside it (the `redisson-fair` library rung).
pub const FAIR_ACQUIRE_LUA: &str = include_str!("lua/fair_acquire.lua");
/// Source of the fair lock's leaving of the line by a waiter that gave up.
pub const FAIR_GIVE_UP_LUA: &str = include_str!("lua/fair_give_up.lua");
/// Source of the fair lock's release, which wakes the head of the line.
pub const FAIR_RELEASE_LUA: &str = include_str!("lua/fair_release.lua");

/// Source of a read-write lock's write acquire (the `redisson-rw`
/// library rung).
pub const RW_WRITE_ACQUIRE_LUA: &str = include_str!("lua/rw_write_acquire.lua");
/// Source of a read-write lock's read acquire, one timeout key per hold.
pub const RW_READ_ACQUIRE_LUA: &str = include_str!("lua/rw_read_acquire.lua");
/// Source of a read-write lock's write release.
pub const RW_WRITE_RELEASE_LUA: &str = include_str!("lua/rw_write_release.lua");
/// Source of a read-write lock's read release, which keeps the hash as
/// long as the longest hold left.
pub const RW_READ_RELEASE_LUA: &str = include_str!("lua/rw_read_release.lua");
/// Source of a reader's watchdog tick, which re-arms every reader's holds.
pub const RW_READ_RENEW_LUA: &str = include_str!("lua/rw_read_renew.lua");

/// Source of python-redis-lock's release: owner-checked delete that
/// leaves one element in the lock's signal list (the
/// `python-redis-lock` library rung).
pub const SIGNAL_RELEASE_LUA: &str = include_str!("lua/signal_release.lua");
/// Source of python-redis-lock's extend, answering 0 (re-armed), 1 (not
/// mine or gone) or 2 (no expiry).
pub const CODED_EXTEND_LUA: &str = include_str!("lua/coded_extend.lua");

/// Source of Redisson's permit-expirable semaphore's try: sweep the
/// permits whose lease ended by the caller's clock, then take one (the
/// `redisson-semaphore` library rung).
pub const SEMAPHORE_ACQUIRE_LUA: &str = include_str!("lua/semaphore_acquire.lua");
/// Source of the semaphore's release of one permit, late or not.
pub const SEMAPHORE_RELEASE_LUA: &str = include_str!("lua/semaphore_release.lua");
/// Source of the semaphore's `updateLeaseTime`: a new lease end for a
/// permit still there.
pub const SEMAPHORE_UPDATE_LEASE_LUA: &str = include_str!("lua/semaphore_update_lease.lua");
/// Source of the semaphore's `trySetPermits`: the permit count, set only
/// where there is none.
pub const SEMAPHORE_SET_PERMITS_LUA: &str = include_str!("lua/semaphore_set_permits.lua");

/// Source of the owner-checked release that also publishes on the lock's
/// release channel (the [`WaitStrategy::Notify`](crate::WaitStrategy::Notify)
/// strategy). Not in [`all`]: the simulator's servers need not speak pub/sub.
pub const RELEASE_NOTIFY_LUA: &str = include_str!("lua/release_notify.lua");
/// Source of the reentrant release that publishes when the key is deleted.
pub const REENTRANT_RELEASE_NOTIFY_LUA: &str = include_str!("lua/reentrant_release_notify.lua");

/// Owner-checked release, sent with EVALSHA (loaded on NOSCRIPT).
pub static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE_LUA));
/// Fair acquire: `{1, count}` or `{0, ms until my turn may come}`.
pub static FAIR_ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(FAIR_ACQUIRE_LUA));
/// A fair lock's waiter leaves the line: how many entries it removed.
pub static FAIR_GIVE_UP: LazyLock<Script> = LazyLock::new(|| Script::new(FAIR_GIVE_UP_LUA));
/// Fair release: holds left (0 when the lock is gone), or -1 when not mine.
pub static FAIR_RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(FAIR_RELEASE_LUA));
/// python-redis-lock's release: 0 released, 1 not mine.
pub static SIGNAL_RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(SIGNAL_RELEASE_LUA));
/// python-redis-lock's extend: 0 re-armed, 1 not mine, 2 no expiry.
pub static CODED_EXTEND: LazyLock<Script> = LazyLock::new(|| Script::new(CODED_EXTEND_LUA));
/// Semaphore try: `OK`, `:<earliest lease end>`, or nil.
pub static SEMAPHORE_ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new(SEMAPHORE_ACQUIRE_LUA));
/// Semaphore release: 1 released in time, 0 gone or late.
pub static SEMAPHORE_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(SEMAPHORE_RELEASE_LUA));
/// Semaphore lease update: 1 moved, 0 the permit is gone.
pub static SEMAPHORE_UPDATE_LEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(SEMAPHORE_UPDATE_LEASE_LUA));
/// Semaphore `trySetPermits`: 1 set, 0 already there.
pub static SEMAPHORE_SET_PERMITS: LazyLock<Script> =
    LazyLock::new(|| Script::new(SEMAPHORE_SET_PERMITS_LUA));
/// Extension that re-creates a lock gone from a node: 1 or 0.
pub static EXTEND_OR_SET: LazyLock<Script> = LazyLock::new(|| Script::new(EXTEND_OR_SET_LUA));
/// Owner-checked extension.
pub static EXTEND: LazyLock<Script> = LazyLock::new(|| Script::new(EXTEND_LUA));
/// Owner-checked release + PUBLISH on the release channel: 1 or 0.
pub static RELEASE_NOTIFY: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE_NOTIFY_LUA));
/// Reentrant release + PUBLISH when the key is deleted: holds left, or -1.
pub static REENTRANT_RELEASE_NOTIFY: LazyLock<Script> =
    LazyLock::new(|| Script::new(REENTRANT_RELEASE_NOTIFY_LUA));
/// Reentrant acquire: `{1, count}` or `{0, pttl}`.
pub static REENTRANT_ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new(REENTRANT_ACQUIRE_LUA));
/// Reentrant release: holds left, or -1 when not mine.
pub static REENTRANT_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(REENTRANT_RELEASE_LUA));
/// Owner-checked renewal of a hash lock: 1 or 0.
pub static REENTRANT_RENEW: LazyLock<Script> = LazyLock::new(|| Script::new(REENTRANT_RENEW_LUA));
/// Fenced acquire: the new fencing token, or nil.
pub static FENCED_ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(FENCED_ACQUIRE_LUA));
/// Fenced reclaim: the fencing token of my lost grant (TTL re-armed), or nil.
pub static FENCED_RECLAIM: LazyLock<Script> = LazyLock::new(|| Script::new(FENCED_RECLAIM_LUA));

/// Write acquire: `{1, count}` or `{0, pttl}`.
pub static RW_WRITE_ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(RW_WRITE_ACQUIRE_LUA));
/// Read acquire: `{1, count}` or `{0, pttl}`.
pub static RW_READ_ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(RW_READ_ACQUIRE_LUA));
/// Write release: my holds left, or -1 when not mine.
pub static RW_WRITE_RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(RW_WRITE_RELEASE_LUA));
/// Read release: my holds left, or -1 when not mine.
pub static RW_READ_RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(RW_READ_RELEASE_LUA));
/// A reader's renewal: 1, or 0 when I hold it no more.
pub static RW_READ_RENEW: LazyLock<Script> = LazyLock::new(|| Script::new(RW_READ_RENEW_LUA));

/// Every script of the ladder, by name, for conformance tests and docs.
pub fn all() -> Vec<(&'static str, &'static str)> {
    vec![
        ("release", RELEASE_LUA),
        ("extend", EXTEND_LUA),
        ("reentrant_acquire", REENTRANT_ACQUIRE_LUA),
        ("reentrant_release", REENTRANT_RELEASE_LUA),
        ("reentrant_renew", REENTRANT_RENEW_LUA),
        ("fenced_acquire", FENCED_ACQUIRE_LUA),
        ("fenced_reclaim", FENCED_RECLAIM_LUA),
    ]
}
