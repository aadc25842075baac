//! Rung 4, `set-nx-px`: `SET key token NX PX ttl` with a random token;
//! release by a plain `DEL key`.
//!
//! # Fixes
//! The lock no longer trusts client clocks: only the server's TTL ends it,
//! and nobody deletes a lock because it looks old.
//!
//! # Flaw
//! The release deletes whatever lock is there now, without looking at the
//! token: a holder that pauses at the start of its release (its work is
//! done) for longer than the TTL deletes the next holder's lock, and a
//! third client enters beside the second. The release never answers
//! `NotHeld`. A nested acquire by the holder waits for its own lock.
//!
//! # Shown by
//! `scenarios/pause-at-release-start.toml` (the Redis distlock page's
//! "plain DEL after expiry").

use crate::clock::BoxFuture;
use crate::error::LockError;
use crate::fault::FaultPoint;
use crate::ladder::Rung;
use crate::lease::{Lease, Owner};
use crate::lock::{Lock, LockConfig, LockContext};
use crate::rungs::common;
use redis::aio::ConnectionLike;

/// Ladder metadata of `set-nx-px`.
pub const RUNG: Rung = Rung {
    id: "set-nx-px",
    number: 4,
    acquire: "SET key token NX PX ttl",
    release: "DEL key",
    fixes: "the lock no longer trusts client clocks: only the server's TTL ends it",
    flaw: "release deletes whatever lock is there now",
    shown_by: "pause-at-release-start",
    multi_node: false,
    excludes: true,
    fencing: false,
    publishes: false,
    reentrant: false,
    renews: false,
};

/// The `set-nx-px` lock.
pub struct SetNxPx<C> {
    conn: C,
    ctx: LockContext,
    config: LockConfig,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> SetNxPx<C> {
    /// A `set-nx-px` lock over one node.
    pub fn new(conn: C, ctx: LockContext, config: LockConfig) -> Self {
        SetNxPx { conn, ctx, config }
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Lock for SetNxPx<C> {
    fn rung(&self) -> &'static Rung {
        &RUNG
    }

    fn acquire<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>> {
        Box::pin(common::acquire_set_nx_px(
            &self.conn,
            &self.ctx,
            &self.config,
            resource,
            owner,
        ))
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            // The published scenario pauses here, then the blind DEL below
            // removes whoever holds the lock by then.
            self.ctx
                .point(FaultPoint::ReleaseStart, &lease.resource)
                .await;
            let mut conn = self.conn.clone();
            common::del(&mut conn, &lease.resource).await?;
            // A single-command release: `release-mid` lands just after it.
            self.ctx
                .point(FaultPoint::ReleaseMid, &lease.resource)
                .await;
            Ok(())
        })
    }

    fn extend<'a>(&'a self, lease: &'a mut Lease) -> BoxFuture<'a, Result<(), LockError>> {
        // As blind as the release: `PEXPIRE` re-arms whichever lock is
        // there; `NotHeld` only when the key is gone.
        Box::pin(async move {
            let mut conn = self.conn.clone();
            common::pexpire_unchecked(&mut conn, &lease.resource, self.config.ttl).await
        })
    }

    fn before_write<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(common::pass_before_write(&self.ctx, lease))
    }
}
