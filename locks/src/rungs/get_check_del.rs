//! Rung 5, `get-check-del`: `SET key token NX PX ttl`; release by `GET`,
//! and if the value is my token, `DEL` (two commands).
//!
//! # Fixes
//! The release no longer deletes a lock after seeing it is not mine: a
//! pause at the start of the release is now harmless, and releasing a lock
//! that expired or changed hands answers [`LockError::NotHeld`].
//!
//! # Flaw
//! Check and delete are not atomic: a holder that pauses between its `GET`
//! and its `DEL` (the `release-mid` point) for longer than the TTL deletes
//! the next holder's lock. Its owner-checked `extend` has the same gap. A
//! nested acquire by the holder waits for its own lock.
//!
//! # Shown by
//! `scenarios/pause-at-release-mid.toml`: pause between GET and DEL →
//! the next holder's lock is deleted and a third client enters.

use crate::clock::BoxFuture;
use crate::error::LockError;
use crate::fault::FaultPoint;
use crate::ladder::Rung;
use crate::lease::{Lease, Owner};
use crate::lock::{Lock, LockConfig, LockContext};
use crate::rungs::common;
use redis::aio::ConnectionLike;

/// Ladder metadata of `get-check-del`.
pub const RUNG: Rung = Rung {
    id: "get-check-del",
    number: 5,
    acquire: "SET key token NX PX ttl",
    release: "GET; if it equals my token, DEL (two commands)",
    fixes: "no longer deletes a lock after seeing it is not mine (the pause at the start of release is now harmless)",
    flaw: "check and delete are not atomic",
    shown_by: "pause-at-release-mid",
    multi_node: false,
    excludes: true,
    fencing: false,
    publishes: false,
    reentrant: false,
    renews: false,
};

/// The `get-check-del` lock.
pub struct GetCheckDel<C> {
    conn: C,
    ctx: LockContext,
    config: LockConfig,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> GetCheckDel<C> {
    /// A `get-check-del` lock over one node.
    pub fn new(conn: C, ctx: LockContext, config: LockConfig) -> Self {
        GetCheckDel { conn, ctx, config }
    }

    /// The check half of the release and of extend: is it still mine?
    async fn still_mine(&self, conn: &mut C, lease: &Lease) -> Result<(), LockError> {
        let current = common::get(conn, &lease.resource).await?;
        if current.as_deref() == Some(lease.token.as_str()) {
            Ok(())
        } else {
            Err(LockError::NotHeld {
                resource: lease.resource.clone(),
            })
        }
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Lock for GetCheckDel<C> {
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
            self.ctx
                .point(FaultPoint::ReleaseStart, &lease.resource)
                .await;
            let mut conn = self.conn.clone();
            let checked = self.still_mine(&mut conn, lease).await;
            // Between the GET and the DEL: the gap the flaw lives in (also
            // passed when the check failed, so a fault aimed here always
            // lands just after the GET).
            self.ctx
                .point(FaultPoint::ReleaseMid, &lease.resource)
                .await;
            checked?;
            common::del(&mut conn, &lease.resource).await?;
            Ok(())
        })
    }

    fn extend<'a>(&'a self, lease: &'a mut Lease) -> BoxFuture<'a, Result<(), LockError>> {
        // Owner-checked the way this rung checks everything: GET, compare,
        // then PEXPIRE as a second command (the same non-atomic gap).
        Box::pin(async move {
            let mut conn = self.conn.clone();
            self.still_mine(&mut conn, lease).await?;
            common::pexpire_unchecked(&mut conn, &lease.resource, self.config.ttl).await
        })
    }

    fn before_write<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(common::pass_before_write(&self.ctx, lease))
    }
}
