//! Rung 6, `lua-release`: `SET key token NX PX ttl`; release by a Lua script
//! that deletes the key only if it still holds my token.
//!
//! # Fixes
//! The owner check and the delete run as one atomic script, so no pause
//! inside the release can make it delete the next holder's lock
//! (the flaw of `get-check-del`).
//!
//! # Flaw
//! The lease can expire while the holder is still working: a critical
//! section longer than the TTL lets a second client in. It is not
//! reentrant: a nested acquire by the holder waits for its own lock until
//! its wait budget runs out.
//!
//! # Shown by
//! `scenarios/long-critical-section.toml` (two holders) and
//! `scenarios/nested-acquire.toml` (the holder blocks on itself).

use crate::clock::BoxFuture;
use crate::error::LockError;
use crate::ladder::Rung;
use crate::lease::{Lease, Owner};
use crate::lock::{Lock, LockConfig, LockContext};
use crate::rungs::common;
use redis::aio::ConnectionLike;

/// Ladder metadata of `lua-release`.
pub const RUNG: Rung = Rung {
    id: "lua-release",
    number: 6,
    acquire: "SET key token NX PX ttl",
    release: "one Lua script: delete only if value == my token",
    fixes: "atomic owner-checked release (no pause inside the release can hurt)",
    flaw: "the lease can expire while the holder still works; not reentrant: a nested acquire by the holder waits for its own lock",
    shown_by: "long-critical-section, nested-acquire",
    multi_node: false,
    excludes: true,
    fencing: false,
    publishes: true,
    reentrant: false,
    renews: false,
};

/// The `lua-release` lock.
pub struct LuaRelease<C> {
    conn: C,
    ctx: LockContext,
    config: LockConfig,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> LuaRelease<C> {
    /// A `lua-release` lock over one node.
    pub fn new(conn: C, ctx: LockContext, config: LockConfig) -> Self {
        LuaRelease { conn, ctx, config }
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Lock for LuaRelease<C> {
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
        Box::pin(common::release_owner_checked(
            &self.conn,
            &self.ctx,
            &self.config,
            lease,
        ))
    }

    fn extend<'a>(&'a self, lease: &'a mut Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            common::extend_checked(&mut conn, lease, self.config.ttl).await
        })
    }

    fn before_write<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(common::pass_before_write(&self.ctx, lease))
    }
}
