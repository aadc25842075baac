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

use crate::error::LockError;
use crate::ladder::Rung;
use crate::lease::Lease;
use crate::rungs::common::{self, Attempt, NodeConn, OneNode, RungSteps};

/// Ladder metadata of `get-check-del`.
pub const RUNG: Rung = Rung {
    id: "get-check-del",
    number: 5,
    acquire: "SET key token NX PX ttl",
    release: "GET; if it equals my token, DEL (two commands)",
    fixes: "no longer deletes a lock after seeing it is not mine (the pause at the start of release is now harmless)",
    flaw: "check and delete are not atomic",
    shown_by: "pause-at-release-mid",
    ..Rung::PLAIN
};

/// The `get-check-del` lock: its steps below on one node.
pub type GetCheckDel<C> = OneNode<C, { RUNG.number }>;

/// The check half of the release and of extend: is it still mine?
async fn still_mine<C: NodeConn>(conn: &mut C, lease: &Lease) -> Result<(), LockError> {
    let current = common::get(conn, &lease.resource).await?;
    common::check_token(current, lease)
}

impl<C: NodeConn> RungSteps for GetCheckDel<C> {
    const RUNG: &'static Rung = &RUNG;

    async fn attempt(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        common::attempt_set_nx_px(self, at).await
    }

    async fn release(&self, lease: &Lease) -> Result<(), LockError> {
        let mut conn = self.conn.clone();
        // Between the GET and the DEL: the gap the flaw lives in (also
        // passed when the check failed, so a fault aimed at `release-mid`
        // always lands just after the GET).
        let check = async { Ok(still_mine(&mut conn, lease).await) };
        let checked = common::between_release_points(&self.ctx, lease, check).await?;
        checked?;
        common::del(&mut conn, &lease.resource).await?;
        Ok(())
    }

    async fn extend(&self, lease: &mut Lease) -> Result<(), LockError> {
        // Owner-checked the way this rung checks everything: GET, compare,
        // then PEXPIRE as a second command (the same non-atomic gap).
        let mut conn = self.conn.clone();
        still_mine(&mut conn, lease).await?;
        common::pexpire_unchecked(&mut conn, &lease.resource, self.config.ttl).await
    }
}
