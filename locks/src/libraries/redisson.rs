//! Library rung `redisson`: Redisson's `RLock` as of Redisson 3.5x
//! (`org/redisson/RedissonLock.java`, `RedissonBaseLock.java`, and the
//! renewal in `org/redisson/renewal/RenewalTask.java` and `LockTask.java`).
//!
//! The lock is a hash from owner (`<client id>:<thread id>`) to hold count.
//! Acquire runs one script: if the key is absent or my field exists,
//! count up and set the TTL, else answer the remaining TTL (the same
//! scripts as the ladder's `reentrant`). Release counts down, deletes at
//! 0 and publishes on the lock's channel, where waiters listen. While the
//! lock is held without a lease time, the watchdog re-arms the TTL
//! (`lockWatchdogTimeout`, 30 s by default) every third of it (10 s). A
//! renewal that gets no answer is only logged and the next one is still
//! made; a renewal that finds my field gone stops. The holder is never
//! told either way.
//!
//! The replica-synchronised acquire (`RedissonBaseLock`'s synced
//! evaluation, what Redisson recommends instead of RedLock): after a grant
//! on a master that has replicas, `WAIT` for them; when none acknowledged
//! in time ("None of slaves were synced"), the grant is undone with the
//! release script and the acquire ends with that error.
//!
//! What the model takes from the scenario: the watchdog timeout is its
//! TTL, renewals every TTL/3, and the `WAIT` timeout is TTL/30 (Redisson's
//! `slavesSyncTimeout`, 1 s beside the 30 s watchdog, scaled alike). How
//! many replicas the master has is asked with `ROLE` after a grant
//! (Redisson knows it from its topology). In the simulator, waiters poll
//! every `retry_ms` in place of the release message. Left out: Redisson's
//! one renewal timer for all locks of a client (here one per lease), lease
//! times, read/write locks, and the async race of issue #7272; the fair
//! lock is the `redisson-fair` rung.
//!
//! # Fixes
//! Reentrancy and long critical sections as the ladder's `watchdog`, and
//! with replica synchronisation a failover no longer loses a granted lock.
//!
//! # Flaw
//! The holder is never told that its lease is gone: a holder cut off from
//! Redis for longer than the TTL, or whose renewals stall that long, keeps
//! working after its key expired and the next owner took it (Redisson
//! issues #3636 and #5698). A pause stops the watchdog with the holder.
//!
//! # Shown by
//! `scenarios/libraries/redisson-watchdog-after-partition.toml`,
//! `scenarios/libraries/redisson-renewal-stalls.toml`.

use crate::error::LockError;
use crate::ladder::Rung;
use crate::lease::Lease;
use crate::lock::{LockConfig, LockContext};
use crate::rungs::common::{Attempt, Configured, NodeConn, RungSteps};
use crate::rungs::watchdog::{OnRenewalError, Watchdog};
use std::time::Duration;

/// Library metadata of `redisson`.
pub const RUNG: Rung = Rung {
    id: "redisson",
    number: 11,
    acquire: "Redisson 3.5x RLock: reentrant hash acquire; WAIT for the master's replicas (undo and fail when none acknowledged); watchdog re-arms the TTL every ttl/3, through errors",
    release: "reentrant hash release + PUBLISH; stops the watchdog",
    fixes: "reentrancy, long critical sections, and with replica sync a failover keeps a granted lock",
    flaw: "the holder is never told its lease is gone: a partition or stalled renewals longer than the TTL let a second owner in",
    shown_by: "redisson-watchdog-after-partition, redisson-renewal-stalls",
    publishes: true,
    reentrant: true,
    renews: true,
    ..Rung::PLAIN
};

/// The `redisson` lock: the ladder's watchdog lock with Redisson's renewal
/// policy, and its replica-synchronised acquire.
pub struct Redisson<C> {
    inner: Watchdog<C>,
}

impl<C: NodeConn> Redisson<C> {
    /// An `RLock` over one node (a master, which may have replicas).
    pub fn new(conn: C, ctx: LockContext, config: LockConfig) -> Self {
        Redisson {
            inner: Watchdog::with_renewal_errors(conn, ctx, config, OnRenewalError::KeepRenewing),
        }
    }

    /// The watchdog lock underneath: the reentrant hash and its renewals.
    pub(crate) fn watchdog(&self) -> &Watchdog<C> {
        &self.inner
    }

    /// How long a grant waits for its replicas: TTL/30, at least 1 ms.
    pub fn sync_timeout(&self) -> Duration {
        (self.config().ttl / 30).max(Duration::from_millis(1))
    }

    /// The acquire's error after a grant no replica acknowledged in time
    /// and `undone` (how the grant was taken back, e.g. "the grant was
    /// undone"), in Redisson's words.
    pub(crate) fn not_synced(&self, resource: &str, undone: &str) -> LockError {
        LockError::LeaseLost {
            resource: resource.to_string(),
            why: format!(
                "None of slaves were synced within {:?}: {undone}",
                self.sync_timeout()
            ),
        }
    }

    /// Waits for the master's replicas to acknowledge a grant; `Ok(false)`
    /// when it has replicas and none did in time.
    pub(crate) async fn replicas_synced(&self) -> Result<bool, LockError> {
        let mut conn = self.inner.conn().clone();
        let role: redis::Value = redis::cmd("ROLE").query_async(&mut conn).await?;
        let replicas = match role {
            redis::Value::Array(parts) => match parts.get(2) {
                Some(redis::Value::Array(list)) => list.len(),
                _ => 0,
            },
            _ => 0,
        };
        if replicas == 0 {
            return Ok(true);
        }
        let acknowledged: i64 = redis::cmd("WAIT")
            .arg(replicas)
            .arg(self.sync_timeout().as_millis() as u64)
            .query_async(&mut conn)
            .await?;
        Ok(acknowledged > 0)
    }
}

impl<C> Configured for Redisson<C> {
    fn ctx(&self) -> &LockContext {
        self.inner.hash().ctx()
    }

    fn config(&self) -> &LockConfig {
        self.inner.hash().config()
    }
}

impl<C: NodeConn> RungSteps for Redisson<C> {
    const RUNG: &'static Rung = &RUNG;

    async fn attempt(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        let Some(lease) = self.inner.attempt(at).await? else {
            return Ok(None);
        };
        if self.replicas_synced().await? {
            return Ok(Some(lease));
        }
        // Undo the grant (one hold back), then fail the acquire.
        self.inner.hash().release_script(&lease).await?;
        Err(self.not_synced(&lease.resource, "the grant was undone"))
    }

    fn start_holding(&self, lease: &mut Lease) {
        self.inner.start_holding(lease);
    }

    fn release(&self, lease: &Lease) -> impl Future<Output = Result<(), LockError>> + Send {
        RungSteps::release(&self.inner, lease)
    }

    fn extend(&self, lease: &mut Lease) -> impl Future<Output = Result<(), LockError>> + Send {
        RungSteps::extend(&self.inner, lease)
    }

    // No check before writing: an `RLock` holder learns nothing of its
    // watchdog's failures.
}
