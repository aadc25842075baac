//! Rung 8, `watchdog`: the `reentrant` hash lock plus a renewal task (the
//! Redisson "watchdog") that, while the lock is held, re-arms its TTL every
//! ttl/3 with an owner-checked script.
//!
//! The renewal stops at the final release, and when a renewal fails (my
//! field is gone, or Redis did not answer): then it raises the lease's lost
//! flag, and [`Lock::before_write`](crate::Lock::before_write) answers [`LockError::LeaseLost`]. Nested
//! acquires by the same owner share the one renewal task: only the
//! outermost acquire starts it, only the final release stops it. The task
//! sleeps through the client's [`Clock`](crate::Clock), so a paused client's
//! watchdog is paused with it.
//!
//! # Fixes
//! Long critical sections no longer lose the lock: the TTL is only a bound
//! on how long a *dead* holder keeps it.
//!
//! # Flaw
//! A stop-the-world pause stops the watchdog too, so the key expires under
//! a paused holder that resumes still believing it holds (the flag is
//! raised only at the next renewal, after the holder may have written). A
//! holder partitioned from Redis keeps working while its key expires. And
//! with asynchronous replication a failover loses the key altogether.
//!
//! # Shown by
//! `scenarios/stop-the-world-pause.toml` (pause > TTL),
//! `scenarios/partition-from-redis.toml` (holder cut off from Redis),
//! `scenarios/failover-async-replication.toml` (master crash + promotion).

use crate::error::LockError;
use crate::ladder::Rung;
use crate::lease::Lease;
use crate::lock::{LockConfig, LockContext};
use crate::renewal::{self, Renewals};
use crate::rungs::common::{self, Attempt, Configured, NodeConn, RungSteps};
use crate::rungs::reentrant::{Reentrant, renew_hash};
use std::time::Duration;

/// Ladder metadata of `watchdog`.
pub const RUNG: Rung = Rung {
    id: "watchdog",
    number: 8,
    acquire: "as reentrant, and while held a renewal task re-arms the TTL every ttl/3 (owner-checked Lua)",
    release: "as reentrant, cancelling renewal",
    fixes: "long critical sections no longer lose the lock",
    flaw: "a stop-the-world pause stops the watchdog too; a partition from Redis lets the key expire while the holder works; asynchronous replication loses the key on failover",
    shown_by: "stop-the-world-pause, partition-from-redis, failover-async-replication",
    publishes: true,
    reentrant: true,
    renews: true,
    ..Rung::PLAIN
};

/// The most renewals one renewal task makes (see [`crate::renewal`]).
pub use crate::renewal::MAX_RENEWALS;

/// What a renewal task does when a renewal gets no answer (a Redis error
/// or a timeout; a renewal that finds the lock gone always ends the task).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRenewalError {
    /// Stop renewing and raise the lease's lost flag (this rung).
    GiveUp,
    /// Try again at the next tick, telling no one (Redisson's renewal
    /// task, which only logs the error).
    KeepRenewing,
}

/// The `watchdog` lock: the `reentrant` lock, and its renewals.
pub struct Watchdog<C> {
    hash: Reentrant<C>,
    renewals: Renewals,
    on_error: OnRenewalError,
}

impl<C> Watchdog<C> {
    /// A `watchdog` lock over one node.
    pub fn new(conn: C, ctx: LockContext, config: LockConfig) -> Self {
        Self::with_renewal_errors(conn, ctx, config, OnRenewalError::GiveUp)
    }

    /// The same lock whose renewal task meets an unanswered renewal as
    /// `on_error` says.
    pub fn with_renewal_errors(
        conn: C,
        ctx: LockContext,
        config: LockConfig,
        on_error: OnRenewalError,
    ) -> Self {
        Watchdog {
            hash: Reentrant::new(conn, ctx, config),
            renewals: Renewals::default(),
            on_error,
        }
    }

    /// The connection to the lock's node.
    pub(crate) fn conn(&self) -> &C {
        &self.hash.conn
    }

    /// The underlying hash lock.
    pub(crate) fn hash(&self) -> &Reentrant<C> {
        &self.hash
    }

    /// Counts a release of `lease` down, for a lock that releases with a
    /// script of its own (`redisson-fair`): as this lock's own release,
    /// the renewal stops at the last hold, or at once when `gone`.
    pub(crate) fn unwatch(&self, lease: &Lease, gone: bool) {
        self.renewals.unwatch(lease, gone);
    }
}

impl<C: NodeConn> Watchdog<C> {
    /// Attaches the renewal to a fresh hold: joins the running one on a
    /// nested hold, starts one on the outermost: every ttl/3, re-arm the
    /// TTL if my field is still there.
    fn watch(&self, lease: &mut Lease) {
        let (resource, field) = (lease.resource.clone(), lease.token.clone());
        let ttl = self.config().ttl;
        let (conn, clock) = (self.hash.conn.clone(), self.ctx().clock.clone());
        let on_error = self.on_error;
        self.renewals.watch(lease, move |flag| {
            let period = (ttl / 3).max(Duration::from_millis(1));
            tokio::spawn(renewal::renew_loop(clock, period, flag, move || {
                let (mut conn, resource, field) = (conn.clone(), resource.clone(), field.clone());
                async move {
                    match renew_hash(&mut conn, &resource, &field, ttl).await {
                        // Redisson's task only logs an unanswered renewal
                        // and tries again at the next tick.
                        Err(LockError::Redis(_)) if on_error == OnRenewalError::KeepRenewing => {
                            Ok(())
                        }
                        other => other,
                    }
                }
            }));
        });
    }
}

impl<C> Drop for Watchdog<C> {
    fn drop(&mut self) {
        self.renewals.stop_all();
    }
}

impl<C> Configured for Watchdog<C> {
    fn ctx(&self) -> &LockContext {
        self.hash.ctx()
    }

    fn config(&self) -> &LockConfig {
        self.hash.config()
    }
}

impl<C: NodeConn> RungSteps for Watchdog<C> {
    const RUNG: &'static Rung = &RUNG;

    // Acquires as `reentrant` does.
    fn attempt(
        &self,
        at: &Attempt<'_>,
    ) -> impl Future<Output = Result<Option<Lease>, LockError>> + Send {
        self.hash.attempt(at)
    }

    /// The watchdog runs from the moment the lock is granted, as in
    /// Redisson, so it is already running at `after-acquire`.
    fn start_holding(&self, lease: &mut Lease) {
        self.watch(lease);
    }

    async fn release(&self, lease: &Lease) -> Result<(), LockError> {
        let script_then_unwatch = async {
            let left = self.hash.release_script(lease).await;
            let gone = matches!(left, Ok(0) | Err(LockError::NotHeld { .. }));
            self.renewals.unwatch(lease, gone);
            Ok(left)
        };
        // A single-script release: `release-mid` lands just after it,
        // whatever the script answered.
        let left = common::between_release_points(self.ctx(), lease, script_then_unwatch).await?;
        left.map(drop)
    }

    // Extends as `reentrant` does, with the script the renewal task runs.
    fn extend(&self, lease: &mut Lease) -> impl Future<Output = Result<(), LockError>> + Send {
        RungSteps::extend(&self.hash, lease)
    }

    fn check_validity(&self, lease: &Lease) -> Result<(), LockError> {
        lease.check_not_lost("the watchdog could not renew the lease")
    }
}
