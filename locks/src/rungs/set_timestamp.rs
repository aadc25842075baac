//! Rung 3, `set-timestamp`: `SET key <my clock in ms> NX PX ttl`; when the
//! key is taken, `GET` it and, if its timestamp is older than the TTL **by
//! this client's wall clock**, `DEL` it and try again. Release: `GET`,
//! compare with my timestamp, `DEL`.
//!
//! # Fixes
//! The acquire is one atomic command with an expiry (no more key without a
//! TTL), and a waiter can also detect a lock left stale by a dead holder.
//!
//! # Flaw
//! It trusts client clocks: a waiter whose clock runs ahead judges a live
//! lock stale and deletes it, and two clients enter. The stale check and
//! the `DEL` are separate steps (the `acquire-mid` point lies between them),
//! as are the release's `GET` and `DEL` (`release-mid`). The token is only
//! a timestamp, so two clients whose clocks show the same millisecond look
//! like the same owner to the release. A nested acquire by the holder waits
//! for its own lock (or, once it judges its own lock stale, deletes it).
//!
//! For the same reason an acquire that tries again after a lost reply does
//! not claim a key that shows its own earlier timestamp (another client
//! may have written the same millisecond): it waits for its own key like
//! anyone else's, until the TTL or its stale check removes it.
//!
//! # Shown by
//! `scenarios/client-clock-skew.toml`: a waiter whose clock is ahead by
//! more than the TTL deletes the holder's lock and enters beside it.

use crate::error::LockError;
use crate::fault::FaultPoint;
use crate::ladder::Rung;
use crate::lease::Lease;
use crate::rungs::common::{self, Attempt, NodeConn, OneNode, RungSteps};

/// Ladder metadata of `set-timestamp`.
pub const RUNG: Rung = Rung {
    id: "set-timestamp",
    number: 3,
    acquire: "SET key <client ms> NX PX ttl; if taken, GET and DEL it when older than the TTL by my clock, then retry",
    release: "GET, compare with my timestamp, DEL",
    fixes: "atomic acquire with expiry, plus stale-lock detection by the waiter",
    flaw: "trusts client clocks, and the stale check and the DEL are separate steps",
    shown_by: "client-clock-skew",
    ..Rung::PLAIN
};

/// The `set-timestamp` lock: its steps below on one node.
pub type SetTimestamp<C> = OneNode<C, { RUNG.number }>;

impl<C: NodeConn> SetTimestamp<C> {
    /// One `SET NX PX` with the current wall time as the value.
    async fn try_set(&self, conn: &mut C, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        let started = self.ctx.clock.monotonic();
        let stamp = self.ctx.clock.wall_ms().to_string();
        let granted = common::set_nx_px(conn, at.resource, &stamp, self.config.ttl).await?;
        Ok(granted.then(|| at.lease(stamp, started)))
    }
}

// No `extend`: waiters judge staleness from the stored timestamp, not the
// TTL, so re-arming the TTL would not keep them out; rewriting the
// timestamp would change the token.
impl<C: NodeConn> RungSteps for SetTimestamp<C> {
    const RUNG: &'static Rung = &RUNG;

    // The plain path is one command; `acquire-mid` exists only on the
    // stale-lock path (between the stale check and the DEL).
    async fn attempt(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        let resource = at.resource;
        let mut conn = self.conn.clone();
        if let Some(lease) = self.try_set(&mut conn, at).await? {
            return Ok(Some(lease));
        }
        let Some(value) = common::get(&mut conn, resource).await? else {
            // Freed between the two commands: the next attempt may win.
            return Ok(None);
        };
        // A value that is not a timestamp is never judged stale.
        let Ok(stamped) = value.parse::<u64>() else {
            return Ok(None);
        };
        let age = self.ctx.clock.wall_ms().saturating_sub(stamped);
        if age <= common::ttl_ms(self.config.ttl) {
            return Ok(None);
        }
        // Judged stale by my clock. The check and the DEL are two steps:
        // the lock may change hands in between, and the DEL cannot tell.
        self.ctx.point(FaultPoint::AcquireMid, resource).await;
        common::del(&mut conn, resource).await?;
        self.try_set(&mut conn, at).await
    }

    async fn release(&self, lease: &Lease) -> Result<(), LockError> {
        let mut conn = self.conn.clone();
        let read = common::get(&mut conn, &lease.resource);
        let current = common::between_release_points(&self.ctx, lease, read).await?;
        common::check_token(current, lease)?;
        // Compared a moment ago; the key may have changed hands since.
        common::del(&mut conn, &lease.resource).await?;
        Ok(())
    }
}
