//! Library rung `redisson-rw`: Redisson's read-write lock
//! (`RReadWriteLock`) as of Redisson 3.5x
//! (`org/redisson/RedissonReadLock.java`, `RedissonWriteLock.java`, over
//! the `RedissonLock.java` they extend), before Redisson pull request
//! #7098 (2026) changed the readers' renewal.
//!
//! Both locks are one hash: a field `mode` (`read` or `write`) and a hold
//! count per holder. A writer's field is its owner field with `:write`
//! after it; it takes the lock only when the hash is absent (or re-enters
//! its own write lock, which adds a whole lease to what is left). Readers
//! share the hash in mode `read`, each hold with a timeout key of its own
//! (`{name}:<field>:rwlock_timeout:<n>`) whose expiry is that hold's
//! lease; the hash lives as long as the longest of them. A read release
//! drops my hold and its key, then keeps the hash for the longest timeout
//! key left, deletes it when none is left, and publishes on
//! `redisson_rwlock:{name}`. The grant waits for the master's replicas as
//! `redisson`'s does, and a watchdog renews every held lock every TTL/3
//! (the TTL is Redisson's `lockWatchdogTimeout`): a writer's re-arms the
//! hash while its field is there; a reader's re-arms the hash *and every
//! reader's timeout keys*, its own and the others'. A lock already gone
//! counts as released: the holder is not told.
//!
//! A reader is a client group whose `mode` is `shared`: it takes the read
//! lock and only reads the guarded stock; every other client takes the
//! write lock. Left out: lock downgrading (a writer that also takes the
//! read lock, and the write watchdog's turn to the read renewal that goes
//! with it), the unlock latch, lease times (every hold here is watched),
//! and the release message (waiters poll every `retry_ms`).
//!
//! # Fixes
//! Readers share the lock: any number of them read at once, and a writer
//! still has it to itself.
//!
//! # Flaw
//! As `redisson`, no holder is ever told that its lease is gone: a reader
//! cut off from Redis for longer than the TTL keeps reading after a
//! writer took the lock, and sees its work half done (Redisson issues
//! #3636 and #5698, for the plain lock). And a reader that dies holding
//! the lock keeps it while any other reader lives: each reader's watchdog
//! re-arms every reader's timeout key, the dead one's too (Redisson issue
//! #1458, pull request #7098), so readers that come and go keep a writer
//! out for good, though no live reader holds the lock between them.
//!
//! # Shown by
//! `scenarios/libraries/redisson-rw-reader-cut-off.toml`,
//! `scenarios/libraries/redisson-rw-dead-reader.toml`.

use crate::error::LockError;
use crate::ladder::Rung;
use crate::lease::Lease;
use crate::libraries::redisson::Redisson;
use crate::lock::{LockConfig, LockContext};
use crate::renewal::{self, Renewals};
use crate::rungs::common::{self, Attempt, Configured, NodeConn, RungSteps};
use crate::scripts;
use std::time::Duration;

/// Library metadata of `redisson-rw`.
pub const RUNG: Rung = Rung {
    id: "redisson-rw",
    number: 19,
    acquire: "Redisson 3.5x RReadWriteLock: one hash with a mode; a writer takes it when absent, readers share it in mode read, each hold with a timeout key; WAIT for replicas; a reader's watchdog re-arms every reader's timeout keys",
    release: "count my hold down; a read release keeps the hash for the longest timeout key left, else deletes it and PUBLISHes",
    fixes: "readers share the lock; a writer still has it to itself",
    flaw: "as redisson, no holder is told its lease is gone; a dead reader's hold is re-armed by the live readers' watchdogs, so readers that come and go keep a writer out",
    shown_by: "redisson-rw-reader-cut-off, redisson-rw-dead-reader",
    // Its release publishes on the read-write lock's own channel, which
    // the project's notified wait does not hear.
    publishes: false,
    reentrant: true,
    renews: true,
    ..Rung::PLAIN
};

/// The lock's channel, as Redisson names it.
pub fn channel(resource: &str) -> String {
    format!("redisson_rwlock:{{{resource}}}")
}

/// The prefix of every holder's timeout keys: the lock's name in braces
/// (one hash slot with the lock).
pub fn timeout_keys_prefix(resource: &str) -> String {
    format!("{{{resource}}}")
}

/// The prefix of one reader's timeout keys; its hold `n` has the key
/// `<prefix>:<n>`.
pub fn timeout_prefix(resource: &str, field: &str) -> String {
    format!("{}:{field}:rwlock_timeout", timeout_keys_prefix(resource))
}

/// A writer's field in the hash: its owner field and `:write`.
pub fn write_field(field: &str) -> String {
    format!("{field}:write")
}

/// What Redisson publishes when a lock goes (its `UNLOCK_MESSAGE`).
const UNLOCK_MESSAGE: i64 = 0;

/// The `redisson-rw` lock: `redisson`'s lock (its write watchdog and
/// replica synchronisation) with the read-write scripts, and the readers'
/// own renewal.
pub struct RedissonRw<C> {
    rlock: Redisson<C>,
    readers: Renewals,
}

impl<C: NodeConn> RedissonRw<C> {
    /// An `RReadWriteLock` over one node (a master, which may have
    /// replicas).
    pub fn new(conn: C, ctx: LockContext, config: LockConfig) -> Self {
        RedissonRw {
            rlock: Redisson::new(conn, ctx, config),
            readers: Renewals::default(),
        }
    }

    fn conn(&self) -> C {
        self.rlock.watchdog().conn().clone()
    }

    /// Turns a grant into the attempt's answer: the lease once the
    /// master's replicas acknowledged it, else the grant undone and the
    /// acquire failed, as `redisson` does.
    async fn synced(&self, lease: Lease) -> Result<Option<Lease>, LockError> {
        if self.rlock.replicas_synced().await? {
            return Ok(Some(lease));
        }
        self.release_script(&lease).await?;
        Err(self
            .rlock
            .not_synced(&lease.resource, "the grant was undone"))
    }

    /// One run of the release script of the lease's mode: my holds left
    /// (0 when I hold it no more, or when the lock was already gone), or
    /// [`LockError::NotHeld`] when the lock is there and not mine.
    async fn release_script(&self, lease: &Lease) -> Result<u32, LockError> {
        let resource = &lease.resource;
        let left: i64 = if lease.shared {
            let field = &lease.token;
            scripts::RW_READ_RELEASE
                .key(resource)
                .key(channel(resource))
                .key(timeout_prefix(resource, field))
                .key(timeout_keys_prefix(resource))
                .arg(UNLOCK_MESSAGE)
                .arg(field)
                .invoke_async(&mut self.conn())
                .await?
        } else {
            scripts::RW_WRITE_RELEASE
                .key(resource)
                .key(channel(resource))
                .arg(UNLOCK_MESSAGE)
                .arg(common::ttl_ms(self.config().ttl))
                .arg(&lease.token)
                .invoke_async(&mut self.conn())
                .await?
        };
        if left < 0 {
            return Err(common::not_held(resource));
        }
        Ok(u32::try_from(left).unwrap_or(u32::MAX))
    }

    /// One reader's renewal: re-arms the hash and every reader's timeout
    /// keys while my field is there, else [`LockError::NotHeld`].
    async fn renew_read<D: NodeConn>(
        conn: &mut D,
        resource: &str,
        field: &str,
        ttl: Duration,
    ) -> Result<(), LockError> {
        let renewed: i64 = scripts::RW_READ_RENEW
            .key(resource)
            .key(timeout_keys_prefix(resource))
            .arg(common::ttl_ms(ttl))
            .arg(field)
            .invoke_async(conn)
            .await?;
        common::one_or_not_held(renewed, resource)
    }

    /// Starts (or joins) a reader's watchdog: every TTL/3, the read
    /// renewal; an unanswered one is only let pass, as Redisson logs it.
    fn watch_read(&self, lease: &mut Lease) {
        let (resource, field) = (lease.resource.clone(), lease.token.clone());
        let ttl = self.config().ttl;
        let (conn, clock) = (self.conn(), self.ctx().clock.clone());
        self.readers.watch(lease, move |flag| {
            let period = (ttl / 3).max(Duration::from_millis(1));
            tokio::spawn(renewal::renew_loop(clock, period, flag, move || {
                let (mut conn, resource, field) = (conn.clone(), resource.clone(), field.clone());
                async move {
                    match Self::renew_read(&mut conn, &resource, &field, ttl).await {
                        Err(LockError::Redis(_)) => Ok(()),
                        other => other,
                    }
                }
            }));
        });
    }
}

impl<C> Drop for RedissonRw<C> {
    fn drop(&mut self) {
        self.readers.stop_all();
    }
}

impl<C> Configured for RedissonRw<C> {
    fn ctx(&self) -> &LockContext {
        self.rlock.ctx()
    }

    fn config(&self) -> &LockConfig {
        self.rlock.config()
    }
}

impl<C: NodeConn> RungSteps for RedissonRw<C> {
    const RUNG: &'static Rung = &RUNG;

    /// The write lock.
    async fn attempt(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        let field = write_field(&at.owner.field());
        let started = self.ctx().clock.monotonic();
        let reply: Vec<i64> = scripts::RW_WRITE_ACQUIRE
            .key(at.resource)
            .arg(common::ttl_ms(self.config().ttl))
            .arg(&field)
            .invoke_async(&mut self.conn())
            .await?;
        let Some(depth) = common::hold_count(&reply, "rw_write_acquire.lua")? else {
            return Ok(None);
        };
        let lease = Lease {
            depth,
            ..at.lease(field, started)
        };
        self.synced(lease).await
    }

    /// The read lock.
    async fn attempt_shared(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        let field = at.owner.field();
        let started = self.ctx().clock.monotonic();
        let reply: Vec<i64> = scripts::RW_READ_ACQUIRE
            .key(at.resource)
            .key(timeout_prefix(at.resource, &field))
            .arg(common::ttl_ms(self.config().ttl))
            .arg(&field)
            .arg(write_field(&field))
            .invoke_async(&mut self.conn())
            .await?;
        let Some(depth) = common::hold_count(&reply, "rw_read_acquire.lua")? else {
            return Ok(None);
        };
        let lease = Lease {
            depth,
            shared: true,
            ..at.lease(field, started)
        };
        self.synced(lease).await
    }

    /// The watchdog runs from the grant on: the write lock's is
    /// `redisson`'s; a reader's is its own.
    fn start_holding(&self, lease: &mut Lease) {
        if lease.shared {
            self.watch_read(lease);
        } else {
            RungSteps::start_holding(self.rlock.watchdog(), lease);
        }
    }

    async fn release(&self, lease: &Lease) -> Result<(), LockError> {
        let script_then_unwatch = async {
            let left = self.release_script(lease).await;
            let gone = matches!(left, Ok(0) | Err(LockError::NotHeld { .. }));
            if lease.shared {
                self.readers.unwatch(lease, gone);
            } else {
                self.rlock.watchdog().unwatch(lease, gone);
            }
            Ok(left)
        };
        // A single-script release: `release-mid` lands just after it.
        let left = common::between_release_points(self.ctx(), lease, script_then_unwatch).await?;
        left.map(drop)
    }

    async fn extend(&self, lease: &mut Lease) -> Result<(), LockError> {
        if lease.shared {
            let ttl = self.config().ttl;
            Self::renew_read(&mut self.conn(), &lease.resource, &lease.token, ttl).await
        } else {
            RungSteps::extend(self.rlock.watchdog(), lease).await
        }
    }

    // No check before writing: as an `RLock`, neither lock's holder learns
    // anything of its watchdog's failures.
}
