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

use crate::error::LockError;
use crate::ladder::Rung;
use crate::lease::Lease;
use crate::rungs::common::{self, Attempt, NodeConn, OneNode, RungSteps};

/// Ladder metadata of `lua-release`.
pub const RUNG: Rung = Rung {
    id: "lua-release",
    number: 6,
    acquire: "SET key token NX PX ttl",
    release: "one Lua script: delete only if value == my token",
    fixes: "atomic owner-checked release (no pause inside the release can hurt)",
    flaw: "the lease can expire while the holder still works; not reentrant: a nested acquire by the holder waits for its own lock",
    shown_by: "long-critical-section, nested-acquire",
    publishes: true,
    ..Rung::PLAIN
};

/// The `lua-release` lock: its steps below on one node.
pub type LuaRelease<C> = OneNode<C, { RUNG.number }>;

impl<C: NodeConn> RungSteps for LuaRelease<C> {
    const RUNG: &'static Rung = &RUNG;

    async fn attempt(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        common::attempt_set_nx_px(self, at).await
    }

    async fn release(&self, lease: &Lease) -> Result<(), LockError> {
        common::release_owner_checked(&self.conn, &self.ctx, &self.config, lease).await
    }

    async fn extend(&self, lease: &mut Lease) -> Result<(), LockError> {
        common::extend_checked(&self.conn, lease, self.config.ttl).await
    }
}
