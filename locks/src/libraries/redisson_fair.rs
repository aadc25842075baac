//! Library rung `redisson-fair`: Redisson's fair lock (`RFairLock`) as of
//! Redisson 3.5x (`org/redisson/RedissonFairLock.java`, whose scripts are
//! the same from 3.50.0 to 3.52.0, over the `RedissonLock.java` and
//! `RedissonBaseLock.java` it extends).
//!
//! The lock is `redisson`'s hash from owner to hold count, with two keys
//! beside it: a wait queue (`redisson_lock_queue:{name}`, a list of owner
//! fields in arrival order) and a timeout set
//! (`redisson_lock_timeout:{name}`, each waiter's deadline in wall-clock
//! ms). Acquire runs one script: first it drops waiters at the head of the
//! queue whose deadline has passed by the caller's clock; then a free lock
//! goes to the head of the queue, or to the caller when nobody waits, and
//! everyone still waiting has one step taken off their deadline; the owner
//! re-enters its own lock; a caller already queued is told the lock's
//! remaining TTL; anyone else joins the queue at its end with a deadline
//! one step after the waiter before it (after the lock's remaining TTL
//! when it is first). A waiter whose acquire gives up leaves the queue and
//! gives the waiters behind it one step each. Release sweeps the queue the
//! same way, gives one hold back and, when the lock goes, publishes on the
//! head waiter's own channel (`redisson_lock__channel:{name}:<field>`). A
//! lock already gone counts as released: the holder is not told. The
//! grant waits for the master's replicas and the watchdog renews the hash,
//! exactly as `redisson` (whose pieces this rung reuses).
//!
//! The step: Redisson's `threadWaitTime` (`fairLockWaitTimeout`, 5 s
//! beside the 30 s watchdog), which this model scales to TTL/6; but since
//! Redisson 3.13.3 (issue #2883) a `tryLock` with a wait time uses that
//! wait time as the step instead, and every acquire here has one: the
//! scenario's `max_wait_ms`. So the step is `max_wait_ms`, and TTL/6 only
//! when it is 0 (one attempt). The deadlines are the clients' own wall
//! clocks (Redisson's `System.currentTimeMillis()`), compared across
//! clients. The give-up script is sent once, unanswered or not (3.5x;
//! Redisson 4.7.0 retries it, issue #5019). Left out: the unlock latch
//! that makes a retried unlock idempotent (as in `redisson`); the release
//! message (this project's notified wait listens on the lock's one
//! channel, not on a waiter's own, so waiters poll every `retry_ms`, as
//! in the simulator anyway); and the non-waiting `tryLock()` script,
//! which never queues.
//!
//! # Fixes
//! Waiters get the lock in the order they asked for it, and a waiter that
//! gave up does not hold up the ones behind it.
//!
//! # Flaw
//! As `redisson`: the holder is never told that its lease is gone, so a
//! holder cut off from Redis for longer than the TTL keeps working after
//! the head of the queue took the lock (Redisson issue #3636). And a
//! waiter that dies in the queue keeps its place until its deadline, one
//! whole wait time after the lock would have been its: the live waiters
//! behind it give up first, and nobody gets the free lock (Redisson issues
//! #4595, #6150).
//!
//! # Shown by
//! `scenarios/libraries/redisson-fair-holder-cut-off.toml`,
//! `scenarios/libraries/redisson-fair-dead-waiter.toml`.

use crate::clock::BoxFuture;
use crate::error::LockError;
use crate::fault::FaultPoint;
use crate::ladder::Rung;
use crate::lease::{Lease, Owner};
use crate::libraries::redisson::Redisson;
use crate::lock::{Lock, LockConfig, LockContext, retry_acquire};
use crate::rungs::common::{self, Configured, NodeConn, RungSteps};
use crate::scripts;
use std::time::Duration;

/// Library metadata of `redisson-fair`.
pub const RUNG: Rung = Rung {
    id: "redisson-fair",
    number: 16,
    acquire: "Redisson 3.5x RFairLock: drop queued waiters past their deadline (client wall clocks); a free lock goes to the queue's head, else join the queue one step (the wait time) behind the last; WAIT for replicas; watchdog as redisson",
    release: "sweep the queue, reentrant hash release, PUBLISH to the head waiter's channel; a waiter that gives up leaves the queue",
    fixes: "waiters get the lock in arrival order; one that gave up leaves the queue",
    flaw: "as redisson, the holder is never told its lease is gone; a waiter that dies in the queue blocks the ones behind it for a whole wait time",
    shown_by: "redisson-fair-holder-cut-off, redisson-fair-dead-waiter",
    // Its release publishes only on the head waiter's own channel, which
    // the project's notified wait does not hear.
    publishes: false,
    reentrant: true,
    renews: true,
    ..Rung::PLAIN
};

/// The key of the lock's wait queue, as Redisson names it.
pub fn queue_key(resource: &str) -> String {
    format!("redisson_lock_queue:{{{resource}}}")
}

/// The key of the lock's timeout set, as Redisson names it.
pub fn timeout_key(resource: &str) -> String {
    format!("redisson_lock_timeout:{{{resource}}}")
}

/// The lock's channel; a waiter's own is this, `:` and its owner field.
pub fn channel(resource: &str) -> String {
    format!("redisson_lock__channel:{{{resource}}}")
}

/// The `redisson-fair` lock: `redisson`'s lock (its watchdog and replica
/// synchronisation) with the fair scripts in place of the hash scripts.
pub struct RedissonFair<C> {
    rlock: Redisson<C>,
}

impl<C: NodeConn> RedissonFair<C> {
    /// An `RFairLock` over one node (a master, which may have replicas).
    pub fn new(conn: C, ctx: LockContext, config: LockConfig) -> Self {
        RedissonFair {
            rlock: Redisson::new(conn, ctx, config),
        }
    }

    /// Redisson's `threadWaitTime` scaled to the lease: TTL/6 (5 s beside
    /// the 30 s watchdog), at least 1 ms.
    pub fn thread_wait_time(&self) -> Duration {
        (self.config().ttl / 6).max(Duration::from_millis(1))
    }

    /// How far apart the queue's deadlines are: the acquire's wait time
    /// (a `tryLock` with one), else [`thread_wait_time`](Self::thread_wait_time).
    pub fn queue_step(&self) -> Duration {
        if self.config().max_wait.is_zero() {
            self.thread_wait_time()
        } else {
            self.config().max_wait
        }
    }

    fn conn(&self) -> C {
        self.rlock.watchdog().conn().clone()
    }

    /// One run of the fair acquire script: `Some(hold count)` when this
    /// owner now holds the lock, `None` when it waits in the queue.
    async fn acquire_script(&self, resource: &str, field: &str) -> Result<Option<u32>, LockError> {
        let reply: Vec<i64> = scripts::FAIR_ACQUIRE
            .key(resource)
            .key(queue_key(resource))
            .key(timeout_key(resource))
            .arg(common::ttl_ms(self.config().ttl))
            .arg(field)
            .arg(common::ttl_ms(self.queue_step()))
            .arg(self.ctx().clock.wall_ms())
            .invoke_async(&mut self.conn())
            .await?;
        common::hold_count(&reply, "fair_acquire.lua")
    }

    /// One try: the fair script, then (after a grant) the wait for the
    /// master's replicas, undoing the grant when none acknowledged.
    async fn attempt(&self, resource: &str, owner: &Owner) -> Result<Option<Lease>, LockError> {
        let field = owner.field();
        let started = self.ctx().clock.monotonic();
        let Some(depth) = self.acquire_script(resource, &field).await? else {
            return Ok(None);
        };
        let lease = Lease {
            depth,
            ..Lease::new(resource, field, owner, started)
        };
        if self.rlock.replicas_synced().await? {
            return Ok(Some(lease));
        }
        self.release_script(&lease).await?;
        Err(self
            .rlock
            .not_synced(&lease.resource, "the grant was undone"))
    }

    /// The waiter leaves the queue after its acquire gave up; the ones
    /// behind it get one step each. Best effort, as a failed acquire has
    /// nothing better to report than its own error.
    async fn give_up(&self, resource: &str, owner: &Owner) {
        let removed: Result<i64, _> = scripts::FAIR_GIVE_UP
            .key(queue_key(resource))
            .key(timeout_key(resource))
            .arg(owner.field())
            .arg(common::ttl_ms(self.queue_step()))
            .invoke_async(&mut self.conn())
            .await;
        // Nothing to do about an unanswered one: the waiter's deadline
        // will drop it from the queue.
        drop(removed);
    }

    /// One run of the fair release script: the holds left (0 when the
    /// lock is gone, whether this release deleted it or it had expired),
    /// or [`LockError::NotHeld`] when another owner holds it.
    async fn release_script(&self, lease: &Lease) -> Result<u32, LockError> {
        let left: i64 = scripts::FAIR_RELEASE
            .key(&lease.resource)
            .key(queue_key(&lease.resource))
            .key(timeout_key(&lease.resource))
            .arg(&lease.token)
            .arg(common::ttl_ms(self.config().ttl))
            .arg(self.ctx().clock.wall_ms())
            .arg(channel(&lease.resource))
            .invoke_async(&mut self.conn())
            .await?;
        if left < 0 {
            return Err(common::not_held(&lease.resource));
        }
        Ok(u32::try_from(left).unwrap_or(u32::MAX))
    }
}

impl<C> Configured for RedissonFair<C> {
    fn ctx(&self) -> &LockContext {
        self.rlock.ctx()
    }

    fn config(&self) -> &LockConfig {
        self.rlock.config()
    }
}

// Not the shared `RungSteps` acquire: a waiter whose acquire gives up must
// leave the queue (Redisson's `acquireFailedAsync`), a step after the
// retry loop that the shared acquire has no place for.
impl<C: NodeConn> Lock for RedissonFair<C> {
    fn rung(&self) -> &'static Rung {
        &RUNG
    }

    fn acquire<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>> {
        Box::pin(async move {
            let acquired = retry_acquire(self.ctx(), self.config(), &RUNG, resource, || {
                self.attempt(resource, owner)
            })
            .await;
            let mut lease = match acquired {
                Ok(lease) => lease,
                Err(e) => {
                    self.give_up(resource, owner).await;
                    return Err(e);
                }
            };
            // The watchdog runs from the grant on, as in `redisson`.
            RungSteps::start_holding(self.rlock.watchdog(), &mut lease);
            self.ctx().point(FaultPoint::AfterAcquire, resource).await;
            Ok(lease)
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            let script_then_unwatch = async {
                let left = self.release_script(lease).await;
                let gone = matches!(left, Ok(0) | Err(LockError::NotHeld { .. }));
                self.rlock.watchdog().unwatch(lease, gone);
                Ok(left)
            };
            // A single-script release: `release-mid` lands just after it.
            let left =
                common::between_release_points(self.ctx(), lease, script_then_unwatch).await?;
            left.map(drop)
        })
    }

    fn extend<'a>(&'a self, lease: &'a mut Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(RungSteps::extend(self.rlock.watchdog(), lease))
    }

    /// No check before writing: as an `RLock`, an `RFairLock` holder
    /// learns nothing of its watchdog's failures.
    fn before_write<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(common::pass_before_write(self.ctx(), lease))
    }
}
