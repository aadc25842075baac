//! Rung 9, `redlock`: the same key and token on N independent masters.
//!
//! Acquire sends `SET key token NX PX ttl` to every master **at once**,
//! each bounded by [`LockConfig::node_timeout`], and measures the time it
//! took on the client's monotonic clock. The lock is held only if a
//! majority (N/2+1) granted it and the validity
//! `ttl − elapsed − drift` (drift = ttl·0.01 + 2 ms) is still positive;
//! otherwise it releases on every master, including those that did not
//! answer (they may have set the key), and waits to try again. Before each
//! write the holder re-checks the validity by its own clock
//! ([`Lock::before_write`](crate::Lock::before_write)). Release runs the owner-checked script on all
//! masters at once.
//!
//! # Fixes
//! No single point of failure: losing a minority of masters, or a failover
//! of one of them, does not lose or duplicate the lock.
//!
//! # Flaw
//! It rests on timing assumptions. A clock jump forward on a master in the
//! majority expires the key early there; a master that restarts without its
//! data (no fsync, no delayed restart) forgets the grant; and a pause
//! between the validity check and the resource write (the `before-write`
//! point comes after the check) lets the holder write after the lease has
//! run out. It cannot produce fencing tokens. Not reentrant: a nested
//! acquire by the holder waits for its own lock.
//!
//! # Shown by
//! `scenarios/clock-jump-on-majority-node.toml`,
//! `scenarios/restart-without-fsync.toml`,
//! `scenarios/pause-before-write.toml`.

use crate::error::LockError;
use crate::ladder::Rung;
use crate::lease::Lease;
use crate::lock::{LockConfig, LockContext};
use crate::rungs::common::{self, Attempt, Configured, NodeConn, RungSteps};
use crate::rungs::masters::{Masters, redlock_timed_out};
use std::time::Duration;

/// Ladder metadata of `redlock`.
pub const RUNG: Rung = Rung {
    id: "redlock",
    number: 9,
    acquire: "same key and token on N masters, concurrently, each with a short timeout; held if a majority granted and validity = ttl - elapsed - drift > 0; else release everywhere",
    release: "owner-checked release on all N",
    fixes: "single point of failure; failover",
    flaw: "timing assumptions: a clock jump on a node in the majority, a node restarting without its data, a pause after acquiring",
    shown_by: "clock-jump-on-majority-node, restart-without-fsync, pause-before-write",
    multi_node: true,
    publishes: true,
    ..Rung::PLAIN
};

/// The clock drift Redlock allows for: ttl·0.01 + 2 ms.
pub fn drift(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2)
}

/// What remains of `ttl` after `elapsed` and the drift allowance; zero
/// when nothing does.
pub fn validity(ttl: Duration, elapsed: Duration) -> Duration {
    ttl.saturating_sub(elapsed).saturating_sub(drift(ttl))
}

/// The `redlock` lock.
pub struct Redlock<C> {
    masters: Masters<C>,
}

impl<C: NodeConn> Redlock<C> {
    /// A Redlock over `nodes`, one connection per independent master.
    pub fn new(nodes: Vec<C>, ctx: LockContext, config: LockConfig) -> Self {
        Redlock {
            masters: Masters {
                late: redlock_timed_out,
                ..Masters::new(nodes, ctx, config)
            },
        }
    }

    /// How many masters must grant: N/2+1.
    pub fn quorum(&self) -> usize {
        self.masters.quorum()
    }

    /// Each master's bound in a round: the node timeout.
    fn node_timeout(&self) -> Option<Duration> {
        Some(self.masters.config.node_timeout)
    }

    /// The owner-checked release on every master; how many deleted it.
    async fn release_everywhere(&self, resource: &str, token: &str) -> Vec<Result<i64, LockError>> {
        let notify = self.masters.config.wait.notifies();
        self.masters
            .round(self.node_timeout(), None, |mut conn| async move {
                common::release_checked(&mut conn, resource, token, notify).await
            })
            .await
    }
}

impl<C> Configured for Redlock<C> {
    fn ctx(&self) -> &LockContext {
        &self.masters.ctx
    }

    fn config(&self) -> &LockConfig {
        &self.masters.config
    }
}

impl<C: NodeConn> RungSteps for Redlock<C> {
    const RUNG: &'static Rung = &RUNG;

    // One concurrent round of single commands, passing `acquire-reply` as
    // each reply comes in; `acquire-mid` lands at `after-acquire`. A round
    // never fails: a master's error is a missing vote, and a failed round
    // is undone on every master (answered or not), so no token is left
    // unsettled and each round draws a fresh one.
    async fn attempt(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        let token = self.masters.ctx.tokens.token();
        let (resource, ttl) = (at.resource, self.masters.config.ttl);
        let started = self.masters.ctx.clock.monotonic();
        let replies = self
            .masters
            .round(self.node_timeout(), Some(resource), |mut conn| {
                let token = &token;
                async move { common::set_nx_px(&mut conn, resource, token, ttl).await }
            })
            .await;
        let granted = replies.iter().filter(|r| matches!(r, Ok(true))).count();
        let elapsed = self.masters.ctx.clock.monotonic().saturating_sub(started);
        let valid_for = validity(ttl, elapsed);
        if granted >= self.quorum() && !valid_for.is_zero() {
            return Ok(Some(Lease {
                validity: Some(valid_for),
                ..at.lease(token, started)
            }));
        }
        // Failed: undo everywhere, also where no answer came (the SET may
        // have landed after the timeout). Its outcome does not matter: a
        // key left behind expires by its TTL.
        self.release_everywhere(resource, &token).await;
        Ok(None)
    }

    async fn release(&self, lease: &Lease) -> Result<(), LockError> {
        // One concurrent round of single scripts: `release-mid` lands just
        // after it.
        let round = async { Ok(self.release_everywhere(&lease.resource, &lease.token).await) };
        let replies = common::between_release_points(&self.masters.ctx, lease, round).await?;
        if replies.iter().any(|r| matches!(r, Ok(n) if *n >= 1)) {
            return Ok(());
        }
        // Nobody deleted it. If every master answered, it was not held;
        // if one did not, that one may still have it: outcome unknown.
        match replies.into_iter().find_map(Result::err) {
            Some(err) => Err(err),
            None => Err(common::not_held(&lease.resource)),
        }
    }

    async fn extend(&self, lease: &mut Lease) -> Result<(), LockError> {
        // Re-arm on every master with the owner-checked script; held again
        // only with a majority and a fresh positive validity.
        let ttl = self.masters.config.ttl;
        let started = self.masters.ctx.clock.monotonic();
        let (resource, token) = (lease.resource.as_str(), lease.token.as_str());
        let replies = self
            .masters
            .round(self.node_timeout(), None, |mut conn| async move {
                common::extend_script(&mut conn, resource, token, ttl).await
            })
            .await;
        let extended = replies.iter().filter(|r| matches!(r, Ok(1))).count();
        let elapsed = self.masters.ctx.clock.monotonic().saturating_sub(started);
        let valid_for = validity(ttl, elapsed);
        if extended >= self.quorum() && !valid_for.is_zero() {
            lease.acquired_at = started;
            lease.validity = Some(valid_for);
            Ok(())
        } else {
            Err(common::not_held(&lease.resource))
        }
    }

    fn check_validity(&self, lease: &Lease) -> Result<(), LockError> {
        let held_for = self
            .masters
            .ctx
            .clock
            .monotonic()
            .saturating_sub(lease.acquired_at);
        let valid_for = lease.validity.unwrap_or_default();
        if held_for >= valid_for {
            return Err(LockError::LeaseLost {
                resource: lease.resource.clone(),
                why: format!("validity {valid_for:?} spent ({held_for:?} since acquire began)"),
            });
        }
        // The `before-write` point comes after this check, before the
        // write: the pause the flaw needs.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_subtracts_elapsed_time_and_drift() {
        let ttl = Duration::from_millis(10_000);
        assert_eq!(drift(ttl), Duration::from_millis(102));
        assert_eq!(
            validity(ttl, Duration::from_millis(100)),
            Duration::from_millis(9_798)
        );
        assert_eq!(validity(ttl, Duration::from_millis(9_950)), Duration::ZERO);
    }
}
