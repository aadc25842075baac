//! Rung 0, `no-lock`: no lock at all. Acquire and release do nothing
//! (they still pass the fault points, so that a scenario aimed at them
//! runs the same on every rung).
//!
//! # Fixes
//! Nothing: it is the baseline that shows why a lock is needed.
//!
//! # Flaw
//! Every client "holds" at once, so the read-modify-write of the shared
//! stock interleaves and oversells (lost updates).
//!
//! # Shown by
//! `scenarios/inventory-contention.toml`: stock 200, many buyers, no fault.

use crate::clock::BoxFuture;
use crate::error::LockError;
use crate::fault::FaultPoint;
use crate::ladder::Rung;
use crate::lease::{Lease, Owner};
use crate::lock::{Lock, LockConfig, LockContext};
use crate::rungs::common;

/// Ladder metadata of `no-lock`.
pub const RUNG: Rung = Rung {
    id: "no-lock",
    number: 0,
    acquire: "nothing",
    release: "nothing",
    fixes: "—",
    flaw: "read-modify-write of shared stock oversells",
    shown_by: "inventory-contention",
    excludes: false,
    ..Rung::PLAIN
};

/// The `no-lock` "lock": needs no connection.
pub struct NoLock {
    ctx: LockContext,
    // Kept so that every rung is built the same way; nothing here expires.
    _config: LockConfig,
}

impl NoLock {
    /// A lock that locks nothing.
    pub fn new(ctx: LockContext, config: LockConfig) -> Self {
        NoLock {
            ctx,
            _config: config,
        }
    }
}

// `Lock` by hand, not through `RungSteps`: there is nothing to retry, so no
// wait strategy (and no release notifier) may come into play.
impl Lock for NoLock {
    fn rung(&self) -> &'static Rung {
        &RUNG
    }

    fn acquire<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>> {
        Box::pin(async move {
            let started = self.ctx.clock.monotonic();
            // No acquire step at all: `acquire-mid` lands at `after-acquire`.
            self.ctx.point(FaultPoint::AfterAcquire, resource).await;
            Ok(Lease::new(resource, String::new(), owner, started))
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        // No release command: `release-mid` lands just after "it".
        Box::pin(common::between_release_points(&self.ctx, lease, async {
            Ok(())
        }))
    }

    fn extend<'a>(&'a self, _lease: &'a mut Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move { Err(common::unsupported(RUNG.id, "extend")) })
    }

    fn before_write<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(common::pass_before_write(&self.ctx, lease))
    }
}
