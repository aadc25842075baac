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
//! For the same reason a lost reply is fatal. An acquire tries again
//! through errors and timeouts, but a `SETNX` whose reply never came may
//! have created the key, and the retry cannot recognise that key as its
//! own: it waits for it like everyone else, for ever, and the acquire ends
//! after its wait with the last error (outcome unknown).
//!
//! # Shown by
//! `scenarios/crash-in-critical-section.toml`: the holder crashes after
//! acquiring; no one acquires again.

use crate::error::LockError;
use crate::ladder::Rung;
use crate::lease::Lease;
use crate::rungs::common::{self, Attempt, NodeConn, OneNode, RungSteps};

/// Ladder metadata of `setnx`.
pub const RUNG: Rung = Rung {
    id: "setnx",
    number: 1,
    acquire: "SETNX key 1, retry while 0",
    release: "DEL key",
    fixes: "exclusion under contention",
    flaw: "no expiry: a holder that dies holds it forever",
    shown_by: "crash-in-critical-section",
    ..Rung::PLAIN
};

/// The `setnx` lock: its steps below on one node.
pub type Setnx<C> = OneNode<C, { RUNG.number }>;

// No `extend`: the key never expires, so there is nothing to extend.
impl<C: NodeConn> RungSteps for Setnx<C> {
    const RUNG: &'static Rung = &RUNG;

    async fn attempt(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        let started = self.ctx.clock.monotonic();
        let mut conn = self.conn.clone();
        let created = common::setnx(&mut conn, at.resource, "1").await?;
        Ok(created.then(|| at.lease("1".to_string(), started)))
    }

    async fn release(&self, lease: &Lease) -> Result<(), LockError> {
        // Deletes whatever is there: with no owner in the value, there is
        // nothing to check, and "nothing to delete" is success too.
        common::release_by_del(&self.conn, &self.ctx, lease).await
    }
}
