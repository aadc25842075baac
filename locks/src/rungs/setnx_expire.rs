//! Rung 2, `setnx-expire`: `SETNX key 1`, then `EXPIRE key secs` as a
//! second command; release by a plain `DEL key`.
//!
//! # Fixes
//! A dead holder's lock now expires (after the TTL, rounded up to whole
//! seconds as `EXPIRE` takes them), so a crash inside the critical section
//! no longer deadlocks everyone.
//!
//! # Flaw
//! The two commands are not atomic: a holder that dies between `SETNX` and
//! `EXPIRE` (the `acquire-mid` point) leaves a key with no TTL, and the
//! lock is never free again. The release is still a blind `DEL` (never
//! `NotHeld`), and a nested acquire by the holder waits for its own lock.
//!
//! A lost reply does the same: the acquire tries again through errors and
//! timeouts, but a `SETNX` (or `EXPIRE`) whose reply never came may have
//! left the key, maybe without a TTL, and the value `1` does not let the
//! retry recognise it as its own; it waits for it like everyone else.
//!
//! # Shown by
//! `scenarios/crash-between-setnx-and-expire.toml`: crash at `acquire-mid`
//! → deadlock.

use crate::error::LockError;
use crate::fault::FaultPoint;
use crate::ladder::Rung;
use crate::lease::Lease;
use crate::rungs::common::{self, Attempt, NodeConn, OneNode, RungSteps};
use redis::aio::ConnectionLike;
use std::time::Duration;

/// Ladder metadata of `setnx-expire`.
pub const RUNG: Rung = Rung {
    id: "setnx-expire",
    number: 2,
    acquire: "SETNX then EXPIRE (two commands)",
    release: "DEL key",
    fixes: "expiry on a dead holder",
    flaw: "not atomic: death between the two commands leaves no TTL",
    shown_by: "crash-between-setnx-and-expire",
    ..Rung::PLAIN
};

/// The TTL in whole seconds for `EXPIRE`, rounded up and at least 1:
/// `EXPIRE` only knows seconds, and rounding down could make it 0.
pub fn ttl_secs(ttl: Duration) -> u64 {
    ttl.as_millis().div_ceil(1000).max(1) as u64
}

/// The `setnx-expire` lock: its steps below on one node.
pub type SetnxExpire<C> = OneNode<C, { RUNG.number }>;

/// `EXPIRE key secs`: 1 when the key existed.
async fn expire<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    ttl: Duration,
) -> Result<i64, LockError> {
    Ok(redis::cmd("EXPIRE")
        .arg(key)
        .arg(ttl_secs(ttl))
        .query_async(conn)
        .await?)
}

impl<C: NodeConn> RungSteps for SetnxExpire<C> {
    const RUNG: &'static Rung = &RUNG;

    async fn attempt(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        let started = self.ctx.clock.monotonic();
        let mut conn = self.conn.clone();
        if !common::setnx(&mut conn, at.resource, "1").await? {
            return Ok(None);
        }
        // The gap the flaw lives in: the key exists and has no TTL yet.
        self.ctx.point(FaultPoint::AcquireMid, at.resource).await;
        expire(&mut conn, at.resource, self.config.ttl).await?;
        Ok(Some(at.lease("1".to_string(), started)))
    }

    async fn release(&self, lease: &Lease) -> Result<(), LockError> {
        // Blind delete: the value `1` names no owner.
        common::release_by_del(&self.conn, &self.ctx, lease).await
    }

    async fn extend(&self, lease: &mut Lease) -> Result<(), LockError> {
        // The naive way of the era: `EXPIRE` again, unchecked, so it re-arms
        // whichever lock is there (possibly another holder's). `NotHeld`
        // only when the key is gone.
        let mut conn = self.conn.clone();
        let set = expire(&mut conn, &lease.resource, self.config.ttl).await?;
        common::one_or_not_held(set, &lease.resource)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ttl_is_rounded_up_to_whole_seconds() {
        assert_eq!(ttl_secs(Duration::from_millis(1)), 1);
        assert_eq!(ttl_secs(Duration::from_millis(1000)), 1);
        assert_eq!(ttl_secs(Duration::from_millis(1001)), 2);
        assert_eq!(ttl_secs(Duration::ZERO), 1);
    }
}
