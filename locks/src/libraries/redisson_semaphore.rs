//! Library rung `redisson-semaphore`: Redisson's permit-expirable semaphore
//! (`RPermitExpirableSemaphore`) as of Redisson 3.4x–3.5x
//! (`org/redisson/RedissonPermitExpirableSemaphore.java`: `trySetPermits`,
//! `tryAcquire(waitTime, leaseTime, unit)`, `tryRelease`/`release`,
//! `updateLeaseTime`), used as a lock: a semaphore of one permit, as users
//! do when they want a lock that another thread may release, or a lease
//! per lock (Redisson issues #1391, #3223).
//!
//! Three keys: the free permits, a counter under the semaphore's own name
//! (the scenario's lock key); the timeout set `{name}:timeout`, each taken
//! permit's id scored with the wall-clock ms at which its lease ends; and
//! the channel `redisson_sc:{name}`. The caller first runs `trySetPermits(1)`
//! (the counter is set only where there is none: a counter at 0 is a
//! taken permit, not a missing one, since issue #4678). A try is one
//! script: the leases that ended by the **caller's** wall clock leave the
//! timeout set and their permits go back to the counter; then a free
//! permit is taken, and the new permit id (a random 128-bit id, the
//! lease's token) enters the timeout set with the lease end the caller
//! computed: its own `System.currentTimeMillis()` plus the lease time.
//! When none is free the script answers the earliest lease end, and the
//! caller waits until then or until a release's message. After a grant on
//! a master with replicas the try waits for them (Redisson's synced
//! evaluation, on the semaphore since issue #4097) and gives the permit
//! back when none acknowledged, as `redisson` (whose replica wait this
//! rung borrows). Release (`release(id)`): take my id out of the timeout
//! set, give the permit back, publish; it answers false, and `release`
//! throws ("has already been released or doesn't exist"), when the id was
//! gone or its lease had already ended by the releaser's clock (since
//! issue #4086; the late permit is given back all the same). That
//! exception is [`LockError::NotHeld`] here. Extension is
//! `updateLeaseTime(id, leaseTime)`: sweep the ended leases, then move
//! mine if it is still there; false (here `NotHeld`) when it is gone.
//! Nothing renews a permit by itself: the semaphore has no watchdog.
//!
//! What the model takes from the scenario: the lease time is its TTL, the
//! wait time its `max_wait_ms`. Each try draws a new permit id, as
//! Redisson's does; a try whose reply is lost leaves its permit taken
//! until its lease ends, and its caller waits that long for its own
//! permit. A restart that loses the keys frees the permit as any lost key
//! does: the next caller's `trySetPermits(1)` makes a new one (a user who
//! sets the permits only once, at start-up, would find none and wait for
//! ever; not modelled). Left out: the message a release publishes
//! (this project's notified wait listens on the lock's channel, not on
//! `redisson_sc:`), so waiters poll every `retry_ms` instead of sleeping
//! until the earliest lease end or a message; the replica wait after a
//! release or an update, and Redisson's retries of them; several permits
//! per call, permits without a lease time, `addPermits` and
//! `setPermits`. The ids are stored as their hex text (Redisson stores
//! the 16 bytes themselves).
//!
//! # Fixes
//! A lock that any thread may release, with a lease of its own per
//! acquire, and a release that tells a late holder so.
//!
//! # Flaw
//! The holder is never told that its lease ended: nothing renews it, and
//! a holder that pauses or works past it keeps writing after the sweep of
//! the next caller gave its permit away; only its release says it was
//! late (Redisson issue #1395 asked for a way to extend, and got
//! `updateLeaseTime`, which the caller must still call in time). And the
//! end of a lease is decided by the clients' own clocks, not by Redis: a
//! caller whose clock runs ahead by more than the lease sweeps a live
//! holder's permit at once and takes it (the flaw reported against
//! another Redis semaphore in dv/redis-semaphore issue #13; no Redisson
//! report of it was found).
//!
//! # Shown by
//! `scenarios/libraries/redisson-semaphore-pause-past-lease.toml`,
//! `scenarios/libraries/redisson-semaphore-fast-clock.toml`.

use crate::clock::BoxFuture;
use crate::error::LockError;
use crate::fault::FaultPoint;
use crate::ladder::Rung;
use crate::lease::{Lease, Owner};
use crate::libraries::redisson::Redisson;
use crate::lock::{Lock, LockConfig, LockContext, retry_acquire};
use crate::rungs::common::{self, Configured, NodeConn};
use crate::scripts;
use std::sync::atomic::{AtomicBool, Ordering};

/// Library metadata of `redisson-semaphore`.
pub const RUNG: Rung = Rung {
    id: "redisson-semaphore",
    number: 18,
    acquire: "Redisson 3.4x-3.5x RPermitExpirableSemaphore of one permit: trySetPermits(1); then one script: leases ended by the caller's wall clock give their permits back, a free permit is taken and its id scored caller clock + lease; WAIT for replicas as redisson; no watchdog",
    release: "take my id out of the timeout set, give the permit back, PUBLISH; an id gone or past its lease (releaser's clock) throws",
    fixes: "a lock any thread may release, a lease per acquire, and a late release is told so",
    flaw: "the holder is never told its lease ended (nothing renews it); the lease end is the clients' own clocks: a caller whose clock runs ahead sweeps a live permit and takes it",
    shown_by: "redisson-semaphore-pause-past-lease, redisson-semaphore-fast-clock",
    // Its release publishes on `redisson_sc:{name}`, which the project's
    // notified wait does not hear.
    publishes: false,
    ..Rung::PLAIN
};

/// The score Redisson gives a permit acquired without a lease time: far
/// past any clock, and never answered to a waiter as a lease end.
pub const NEVER_EXPIRES: u64 = 922_337_203_685_477;

/// The command the scripts publish with (Redisson sends `spublish` on a
/// cluster with sharded pub/sub).
const PUBLISH: &str = "publish";

/// The semaphore's timeout set, as Redisson names it: `{name}:timeout`,
/// or `name:timeout` when the name already has a hash tag.
pub fn timeout_key(name: &str) -> String {
    if name.contains('{') {
        format!("{name}:timeout")
    } else {
        format!("{{{name}}}:timeout")
    }
}

/// The semaphore's channel, as Redisson names it: `redisson_sc:{name}`.
pub fn channel(name: &str) -> String {
    if name.contains('{') {
        format!("redisson_sc:{name}")
    } else {
        format!("redisson_sc:{{{name}}}")
    }
}

/// What one try of the semaphore answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Try {
    /// The permit is mine.
    Granted,
    /// Taken; the earliest lease end, in the wall-clock ms of whoever took it.
    TakenUntil(u64),
    /// Taken, by permits that never expire (or no permits at all).
    Taken,
}

impl Try {
    /// Reads the script's reply: `OK`, `:<ms>`, or nil.
    fn parse(reply: Option<String>) -> Result<Self, LockError> {
        let protocol = |reply: &str| LockError::Protocol {
            command: "semaphore_acquire.lua",
            reply: reply.to_string(),
        };
        match reply.as_deref() {
            None => Ok(Try::Taken),
            Some("OK") => Ok(Try::Granted),
            Some(other) => {
                let ms = other.strip_prefix(':').ok_or_else(|| protocol(other))?;
                // A score may come back as a double ("1.5e12" never, but a
                // fraction may): its whole milliseconds.
                let ms: f64 = ms.parse().map_err(|_| protocol(other))?;
                Ok(Try::TakenUntil(ms as u64))
            }
        }
    }
}

/// The `redisson-semaphore` lock: a permit-expirable semaphore of one
/// permit over one node (a master, which may have replicas).
pub struct RedissonSemaphore<C> {
    /// Redisson's lock on the same node, for its context, its
    /// configuration and its replica wait (the synced evaluation both
    /// objects share); its watchdog is never started.
    rlock: Redisson<C>,
}

impl<C: NodeConn> RedissonSemaphore<C> {
    /// The semaphore over one node.
    pub fn new(conn: C, ctx: LockContext, config: LockConfig) -> Self {
        RedissonSemaphore {
            rlock: Redisson::new(conn, ctx, config),
        }
    }

    fn conn(&self) -> C {
        self.rlock.watchdog().conn().clone()
    }

    /// The lease end a caller computes now: its own wall clock plus the
    /// lease time.
    fn lease_end(&self) -> u64 {
        self.ctx().clock.wall_ms() + common::ttl_ms(self.config().ttl)
    }

    /// `trySetPermits(1)`: true when this call created the one permit.
    pub async fn try_set_permits(&self, name: &str) -> Result<bool, LockError> {
        let set: i64 = scripts::SEMAPHORE_SET_PERMITS
            .key(name)
            .key(channel(name))
            .arg(1)
            .arg(PUBLISH)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(set == 1)
    }

    /// One run of the try script for the permit `id`.
    pub async fn try_script(&self, name: &str, id: &str) -> Result<Try, LockError> {
        let reply: Option<String> = scripts::SEMAPHORE_ACQUIRE
            .key(name)
            .key(timeout_key(name))
            .key(channel(name))
            .arg(1)
            .arg(self.lease_end())
            .arg(self.ctx().clock.wall_ms())
            .arg(NEVER_EXPIRES)
            .arg(PUBLISH)
            .arg(id)
            .invoke_async(&mut self.conn())
            .await?;
        Try::parse(reply)
    }

    /// One try: the permit count first if this acquire has not set it
    /// yet, then the try script, then (after a grant) the wait for the
    /// master's replicas, giving the permit back when none acknowledged.
    async fn attempt(
        &self,
        name: &str,
        owner: &Owner,
        permits_set: &AtomicBool,
    ) -> Result<Option<Lease>, LockError> {
        if !permits_set.load(Ordering::Relaxed) {
            // The user's `trySetPermits(1)` before its `tryAcquire`; when it
            // got no answer, the next try asks again.
            self.try_set_permits(name).await?;
            permits_set.store(true, Ordering::Relaxed);
        }
        let id = self.ctx().tokens.token();
        let started = self.ctx().clock.monotonic();
        if self.try_script(name, &id).await? != Try::Granted {
            return Ok(None);
        }
        let lease = Lease::new(name, id, owner, started);
        if self.rlock.replicas_synced().await? {
            return Ok(Some(lease));
        }
        self.release_script(&lease).await?;
        Err(self
            .rlock
            .not_synced(&lease.resource, "the permit was given back"))
    }

    /// One run of the release script: true when the permit was mine and
    /// in time, false when it was gone or late (given back then).
    async fn release_script(&self, lease: &Lease) -> Result<bool, LockError> {
        let released: i64 = scripts::SEMAPHORE_RELEASE
            .key(&lease.resource)
            .key(channel(&lease.resource))
            .key(timeout_key(&lease.resource))
            .arg(&lease.token)
            .arg(1)
            .arg(self.ctx().clock.wall_ms())
            .arg(PUBLISH)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(released == 1)
    }

    /// `updateLeaseTime(id, leaseTime)`: true when the permit was still
    /// there and got a new lease end.
    pub async fn update_lease_time(&self, lease: &Lease) -> Result<bool, LockError> {
        let moved: i64 = scripts::SEMAPHORE_UPDATE_LEASE
            .key(&lease.resource)
            .key(timeout_key(&lease.resource))
            .key(channel(&lease.resource))
            .arg(&lease.token)
            .arg(self.lease_end())
            .arg(self.ctx().clock.wall_ms())
            .arg(PUBLISH)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(moved == 1)
    }
}

impl<C> Configured for RedissonSemaphore<C> {
    fn ctx(&self) -> &LockContext {
        self.rlock.ctx()
    }

    fn config(&self) -> &LockConfig {
        self.rlock.config()
    }
}

// Not the shared `RungSteps` acquire: the permit count is set once per
// acquire, before its first try, a step the shared acquire has no place
// for.
impl<C: NodeConn> Lock for RedissonSemaphore<C> {
    fn rung(&self) -> &'static Rung {
        &RUNG
    }

    fn acquire<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>> {
        Box::pin(async move {
            let permits_set = AtomicBool::new(false);
            let lease = retry_acquire(self.ctx(), self.config(), &RUNG, resource, || {
                self.attempt(resource, owner, &permits_set)
            })
            .await?;
            self.ctx().point(FaultPoint::AfterAcquire, resource).await;
            Ok(lease)
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            // A single-script release: `release-mid` lands just after it.
            let in_time =
                common::between_release_points(self.ctx(), lease, self.release_script(lease))
                    .await?;
            if in_time {
                Ok(())
            } else {
                // "Permit with id ... has already been released or doesn't exist".
                Err(common::not_held(&lease.resource))
            }
        })
    }

    fn extend<'a>(&'a self, lease: &'a mut Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            if self.update_lease_time(lease).await? {
                Ok(())
            } else {
                Err(common::not_held(&lease.resource))
            }
        })
    }

    /// No check before writing: a permit id tells its holder nothing of
    /// its lease.
    fn before_write<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(common::pass_before_write(self.ctx(), lease))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_are_named_as_redisson_names_them() {
        assert_eq!(timeout_key("lock:stock"), "{lock:stock}:timeout");
        assert_eq!(timeout_key("{jobs}"), "{jobs}:timeout");
        assert_eq!(channel("lock:stock"), "redisson_sc:{lock:stock}");
        assert_eq!(channel("{jobs}"), "redisson_sc:{jobs}");
    }

    #[test]
    fn a_try_reads_a_grant_a_lease_end_or_nothing() {
        assert_eq!(Try::parse(Some("OK".into())).unwrap(), Try::Granted);
        assert_eq!(
            Try::parse(Some(":1700000001000".into())).unwrap(),
            Try::TakenUntil(1_700_000_001_000)
        );
        assert_eq!(Try::parse(None).unwrap(), Try::Taken);
        assert!(Try::parse(Some("1".into())).is_err());
    }
}
