//! Rung 4, `set-nx-px`: `SET key token NX PX ttl` with a random token;
//! release by a plain `DEL key`.
//!
//! After an attempt whose reply was lost, the acquire sends the same token
//! again and, if the key is taken, asks the owner-checked extend script
//! whether it holds that token: if so, the lost `SET` landed and is this
//! acquire's grant, re-armed for a whole TTL
//! ([`attempt_set_nx_px`](common::attempt_set_nx_px); the same for
//! `get-check-del` and `lua-release`).
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
//! `scenarios/pause-at-release-start.toml`: the holder pauses past its TTL
//! at `release-start`, then its plain `DEL` removes the next holder's lock.

use crate::error::LockError;
use crate::ladder::Rung;
use crate::lease::Lease;
use crate::rungs::common::{self, Attempt, NodeConn, OneNode, RungSteps};

/// Ladder metadata of `set-nx-px`.
pub const RUNG: Rung = Rung {
    id: "set-nx-px",
    number: 4,
    acquire: "SET key token NX PX ttl",
    release: "DEL key",
    fixes: "the lock no longer trusts client clocks: only the server's TTL ends it",
    flaw: "release deletes whatever lock is there now",
    shown_by: "pause-at-release-start",
    ..Rung::PLAIN
};

/// The `set-nx-px` lock: its steps below on one node.
pub type SetNxPx<C> = OneNode<C, { RUNG.number }>;

impl<C: NodeConn> RungSteps for SetNxPx<C> {
    const RUNG: &'static Rung = &RUNG;

    async fn attempt(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        common::attempt_set_nx_px(self, at).await
    }

    async fn release(&self, lease: &Lease) -> Result<(), LockError> {
        // The published scenario pauses at `release-start`, then this blind
        // DEL removes whoever holds the lock by then.
        common::release_by_del(&self.conn, &self.ctx, lease).await
    }

    async fn extend(&self, lease: &mut Lease) -> Result<(), LockError> {
        // As blind as the release: `PEXPIRE` re-arms whichever lock is
        // there; `NotHeld` only when the key is gone.
        let mut conn = self.conn.clone();
        common::pexpire_unchecked(&mut conn, &lease.resource, self.config.ttl).await
    }
}
