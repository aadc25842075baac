//! Rung 7, `reentrant`: a Redisson-style hash lock. The key is a hash from
//! owner (`client:task`, [`Owner::field`](crate::Owner::field)) to hold count. Acquire (one Lua
//! script): if the key is absent or my field exists, `HINCRBY field 1` and
//! `PEXPIRE`; else answer the remaining TTL. Release (one Lua script):
//! `HINCRBY field -1`, refresh the TTL while the count is above 0, delete
//! the key at 0, and refuse if my field is not there.
//!
//! # Fixes
//! The same owner can re-enter: a nested acquire counts up instead of
//! waiting for itself (the self-block of `lua-release`), and nested
//! releases count down; only the outermost release frees the lock.
//!
//! # Flaw
//! The lease can still expire while the holder works: a critical section
//! longer than the TTL lets a second owner in.
//!
//! An acquire tries again through errors and timeouts, and a retry after a
//! lost reply cannot tell its own lost grant from a re-entry: the script
//! finds the owner's field the lost one created and counts up once more.
//! The holder then gets a hold count one too high (its lease's `depth`
//! says so), and the key outlives its outermost release by up to one TTL;
//! the lock only waits, it never lets two owners in.
//!
//! # Shown by
//! `scenarios/long-critical-section.toml`: two holders.

use crate::error::LockError;
use crate::ladder::Rung;
use crate::lease::Lease;
use crate::rungs::common::{self, Attempt, NodeConn, OneNode, RungSteps};
use crate::scripts;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// Ladder metadata of `reentrant`.
pub const RUNG: Rung = Rung {
    id: "reentrant",
    number: 7,
    acquire: "Lua on a hash: if absent or my field exists, HINCRBY field 1 and PEXPIRE; else return the remaining TTL",
    release: "Lua: HINCRBY field -1, delete at 0 (refresh TTL while > 0); error if not mine",
    fixes: "the same owner (client id + task id) can re-enter; nested releases count down",
    flaw: "the lease can still expire while the holder works",
    shown_by: "long-critical-section",
    publishes: true,
    reentrant: true,
    ..Rung::PLAIN
};

/// One run of the reentrant acquire script: `Some(hold count)` when this
/// owner now holds the lock, `None` when another owner does.
async fn acquire_hash<C: ConnectionLike>(
    conn: &mut C,
    resource: &str,
    field: &str,
    ttl: Duration,
) -> Result<Option<u32>, LockError> {
    let reply: Vec<i64> = scripts::REENTRANT_ACQUIRE
        .key(resource)
        .arg(common::ttl_ms(ttl))
        .arg(field)
        .invoke_async(conn)
        .await?;
    common::hold_count(&reply, "reentrant_acquire.lua")
}

/// One run of the reentrant release script: the hold count left (0 when
/// the key was deleted), or [`LockError::NotHeld`] when my field is gone.
/// With `notify`, the script also publishes on the release channel when it
/// deletes the key.
async fn release_hash<C: ConnectionLike>(
    conn: &mut C,
    lease: &Lease,
    ttl: Duration,
    notify: bool,
) -> Result<u32, LockError> {
    let left: i64 = if notify {
        scripts::REENTRANT_RELEASE_NOTIFY
            .key(&lease.resource)
            .arg(common::ttl_ms(ttl))
            .arg(&lease.token)
            .arg(crate::notify::channel(&lease.resource))
            .invoke_async(conn)
            .await?
    } else {
        scripts::REENTRANT_RELEASE
            .key(&lease.resource)
            .arg(common::ttl_ms(ttl))
            .arg(&lease.token)
            .invoke_async(conn)
            .await?
    };
    if left < 0 {
        return Err(common::not_held(&lease.resource));
    }
    Ok(u32::try_from(left).unwrap_or(u32::MAX))
}

/// One run of the owner-checked renewal: re-arms the TTL if my field is
/// still there, else [`LockError::NotHeld`].
pub(crate) async fn renew_hash<C: ConnectionLike>(
    conn: &mut C,
    resource: &str,
    field: &str,
    ttl: Duration,
) -> Result<(), LockError> {
    let renewed: i64 = scripts::REENTRANT_RENEW
        .key(resource)
        .arg(common::ttl_ms(ttl))
        .arg(field)
        .invoke_async(conn)
        .await?;
    common::one_or_not_held(renewed, resource)
}

/// The `reentrant` lock: its steps below on one node.
pub type Reentrant<C> = OneNode<C, { RUNG.number }>;

impl<C: NodeConn> Reentrant<C> {
    /// Gives one hold back with the release script: the holds left.
    pub(crate) async fn release_script(&self, lease: &Lease) -> Result<u32, LockError> {
        let mut conn = self.conn.clone();
        let notify = self.config.wait.notifies();
        release_hash(&mut conn, lease, self.config.ttl, notify).await
    }
}

impl<C: NodeConn> RungSteps for Reentrant<C> {
    const RUNG: &'static Rung = &RUNG;

    async fn attempt(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        let field = at.owner.field();
        let started = self.ctx.clock.monotonic();
        let mut conn = self.conn.clone();
        let depth = acquire_hash(&mut conn, at.resource, &field, self.config.ttl).await?;
        Ok(depth.map(|depth| Lease {
            depth,
            ..at.lease(field, started)
        }))
    }

    async fn release(&self, lease: &Lease) -> Result<(), LockError> {
        // A single-script release: `release-mid` lands just after it,
        // whatever the script answered.
        let script = async { Ok(self.release_script(lease).await) };
        let left = common::between_release_points(&self.ctx, lease, script).await?;
        left.map(drop)
    }

    async fn extend(&self, lease: &mut Lease) -> Result<(), LockError> {
        let mut conn = self.conn.clone();
        renew_hash(&mut conn, &lease.resource, &lease.token, self.config.ttl).await
    }
}
