//! Rung 10, `fenced`: the `lua-release` lease on one node plus a fencing
//! token. One acquire script does `SET key token NX PX ttl` and, only if
//! that set the key, `INCR <key>:fence`, returning the counter with the
//! grant ([`Lease::fence`]). Release is the owner-checked script of
//! `lua-release`. After an attempt whose reply was lost, the acquire sends
//! the same token again and, if the key is taken, recognises its own lost
//! grant as `lua-release` does, with a script that also returns that
//! grant's fencing token.
//!
//! # Fixes
//! The guarded resource rejects writes whose token is lower than one it
//! has already accepted, so pauses, delays and expired leases can no longer
//! corrupt it: a holder that lost its lease writes with a stale token and
//! is refused.
//!
//! # Flaw
//! It needs a resource that checks tokens, and the token source must never
//! go backwards. It does go backwards (or repeats) when the counter loses
//! increments:
//! - a failover with asynchronous replication: the master granted and
//!   incremented, died before the `INCR` reached the replica, and the
//!   promoted replica hands out the same number again;
//! - a restart without persistence (or with `appendfsync everysec` losing
//!   the last second, or a power loss): the counter restarts from an older
//!   value, or from 1 when the key is gone;
//! - the counter key evicted under memory pressure or deleted by hand.
//!
//! Then two writers can present the same token, or a new holder a lower
//! one than the resource has seen. The lease itself still expires under a
//! long critical section (fencing makes that harmless to the resource, not
//! to mutual exclusion), and a nested acquire by the holder waits for its
//! own lock.
//!
//! # Shown by
//! `scenarios/failover-loses-fence-counter.toml`: token reuse after a
//! failover that lost the increment.

use crate::error::LockError;
use crate::ladder::Rung;
use crate::lease::Lease;
use crate::rungs::common::{self, Attempt, NodeConn, OneNode, RungSteps};
use crate::scripts;
use std::time::Duration;

/// Ladder metadata of `fenced`.
pub const RUNG: Rung = Rung {
    id: "fenced",
    number: 10,
    acquire: "the lua-release lease + INCR of <key>:fence in the same script, returned as the fencing token",
    release: "as lua-release",
    fixes: "the guarded resource rejects writes whose token is lower than one it has seen, so pauses and delays can no longer corrupt it",
    flaw: "needs a resource that checks tokens; the token source itself must not go backwards (an INCR lost in a failover does)",
    shown_by: "failover-loses-fence-counter",
    fencing: true,
    publishes: true,
    ..Rung::PLAIN
};

/// The key of a lock's fencing counter: `<resource>:fence`, on the same
/// node as the lock (same hash slot is not needed: one node, no cluster).
pub fn fence_key(resource: &str) -> String {
    format!("{resource}:fence")
}

/// One of the two fencing scripts (acquire, or reclaim of a lost grant),
/// which take the same keys and arguments: the grant's fencing token, or
/// `None` when the key is not (or no longer) this token's.
async fn fence_script<C: NodeConn>(
    script: &redis::Script,
    conn: &mut C,
    at: &Attempt<'_>,
    token: &str,
    ttl: Duration,
) -> Result<Option<u64>, LockError> {
    Ok(script
        .key(at.resource)
        .key(fence_key(at.resource))
        .arg(token)
        .arg(common::ttl_ms(ttl))
        .invoke_async(conn)
        .await?)
}

/// The `fenced` lock: its steps below on one node.
pub type Fenced<C> = OneNode<C, { RUNG.number }>;

// The resource does the checking (by the fence), not the client: no
// validity check of its own before a write.
impl<C: NodeConn> RungSteps for Fenced<C> {
    const RUNG: &'static Rung = &RUNG;

    // As `lua-release` after an attempt that got no answer: the same token
    // again, and a taken key recognised as this acquire's own lost grant,
    // re-armed, by one script that also reads that grant's fencing token
    // (atomically: a token read later could be the next holder's).
    async fn attempt(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        let (token, resent) = at.unsettled.token(&self.ctx);
        let started = self.ctx.clock.monotonic();
        let mut conn = self.conn.clone();
        let ttl = self.config.ttl;
        let fence = async {
            let granted =
                fence_script(&scripts::FENCED_ACQUIRE, &mut conn, at, &token, ttl).await?;
            if granted.is_some() || !resent {
                return Ok(granted);
            }
            fence_script(&scripts::FENCED_RECLAIM, &mut conn, at, &token, ttl).await
        }
        .await;
        at.unsettled.note(&token, &fence);
        Ok(fence?.map(|fence| Lease {
            fence: Some(fence),
            ..at.lease(token, started)
        }))
    }

    async fn release(&self, lease: &Lease) -> Result<(), LockError> {
        common::release_owner_checked(&self.conn, &self.ctx, &self.config, lease).await
    }

    async fn extend(&self, lease: &mut Lease) -> Result<(), LockError> {
        // Extending keeps the fencing token: the grant is the same.
        common::extend_checked(&self.conn, lease, self.config.ttl).await
    }
}
