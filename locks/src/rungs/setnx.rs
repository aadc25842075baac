//! Rung 1, `setnx`: `SETNX key 1`, retried while it answers 0; release by a
//! plain `DEL key`.
//!
//! # Fixes
//! Exclusion under contention: only the client whose `SETNX` created the
//! key enters, so the read-modify-write of the stock no longer interleaves.
//!
//! # Flaw
//! The key has no expiry: a holder that dies inside the critical section
//! holds the lock forever and everyone else waits for ever (deadlock). The
//! value is always `1`, so the release cannot tell whose lock it deletes
//! (it never answers `NotHeld`), and a nested acquire by the holder waits
//! for its own lock.
//!
//! # Shown by
//! `scenarios/crash-in-critical-section.toml`: the holder crashes after
//! acquiring; no one acquires again.

use crate::clock::BoxFuture;
use crate::error::LockError;
use crate::fault::FaultPoint;
use crate::ladder::Rung;
use crate::lease::{Lease, Owner};
use crate::lock::{Lock, LockConfig, LockContext, retry_acquire};
use crate::rungs::common;
use redis::aio::ConnectionLike;

/// Ladder metadata of `setnx`.
pub const RUNG: Rung = Rung {
    id: "setnx",
    number: 1,
    acquire: "SETNX key 1, retry while 0",
    release: "DEL key",
    fixes: "exclusion under contention",
    flaw: "no expiry: a holder that dies holds it forever",
    shown_by: "crash-in-critical-section",
    multi_node: false,
    excludes: true,
    fencing: false,
    publishes: false,
    reentrant: false,
    renews: false,
};

/// The `setnx` lock.
pub struct Setnx<C> {
    conn: C,
    ctx: LockContext,
    config: LockConfig,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Setnx<C> {
    /// A `setnx` lock over one node.
    pub fn new(conn: C, ctx: LockContext, config: LockConfig) -> Self {
        Setnx { conn, ctx, config }
    }

    async fn try_once(&self, resource: &str, owner: &Owner) -> Result<Option<Lease>, LockError> {
        let started = self.ctx.clock.monotonic();
        let mut conn = self.conn.clone();
        if common::setnx(&mut conn, resource, "1").await? {
            Ok(Some(Lease::new(resource, "1".to_string(), owner, started)))
        } else {
            Ok(None)
        }
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Lock for Setnx<C> {
    fn rung(&self) -> &'static Rung {
        &RUNG
    }

    fn acquire<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>> {
        Box::pin(async move {
            // A single-command acquire: `acquire-mid` lands at `after-acquire`.
            let lease = retry_acquire(&self.ctx, &self.config, resource, || {
                self.try_once(resource, owner)
            })
            .await?;
            self.ctx.point(FaultPoint::AfterAcquire, resource).await;
            Ok(lease)
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            self.ctx
                .point(FaultPoint::ReleaseStart, &lease.resource)
                .await;
            let mut conn = self.conn.clone();
            // Deletes whatever is there: with no owner in the value, there
            // is nothing to check, and "nothing to delete" is success too.
            common::del(&mut conn, &lease.resource).await?;
            // A single-command release: `release-mid` lands just after it.
            self.ctx
                .point(FaultPoint::ReleaseMid, &lease.resource)
                .await;
            Ok(())
        })
    }

    fn extend<'a>(&'a self, _lease: &'a mut Lease) -> BoxFuture<'a, Result<(), LockError>> {
        // The key never expires, so there is nothing to extend.
        Box::pin(async move {
            Err(LockError::Unsupported {
                rung: RUNG.id,
                operation: "extend",
            })
        })
    }

    fn before_write<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(common::pass_before_write(&self.ctx, lease))
    }
}
