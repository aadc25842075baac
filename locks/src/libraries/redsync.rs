//! Library rung `redsync`: the algorithm of go-redsync/redsync v4.13
//! (`mutex.go`: `LockContext`, `UnlockContext`, `ExtendContext`;
//! `redsync.go`: `NewMutex` and its options).
//!
//! Acquire (`Lock`): one random value per call, then up to 32 tries, the
//! first at once and each later one after a delay drawn from 50–250 ms. A
//! try sends `SET key value NX PX expiry` to every master at once, each
//! request bounded by expiry × 0.05 (`timeoutFactor`), and succeeds when a
//! quorum (N/2+1) granted and `expiry − elapsed − expiry × 0.01` (the
//! drift factor, with no constant term) is still ahead; otherwise it
//! releases on every master and tries again. When no master answered at
//! all the call ends with the error. Release runs the owner-checked
//! delete on every master and reports success only with a quorum. Extend
//! runs the owner-checked `PEXPIRE` on every master (with
//! `WithSetNXOnExtend`, [`Redsync::with_set_nx_on_extend`], it also sets
//! the key again where it is gone) and needs a quorum and a fresh validity.
//!
//! Modelled as a caller uses it after `README.md`: `Lock`, work, `Unlock`.
//! The mutex's `Until()` is not consulted before writing, and nothing
//! extends it on its own. The expiry is the scenario's TTL (8 s by
//! default in redsync); the 32 tries and their 50–250 ms delays are
//! redsync's defaults, drawn from the rung's seeded source. A call that
//! ends with an error is called again by the simulated caller after
//! `retry_ms`, within `max_wait_ms`.
//!
//! # Fixes
//! No single point of failure, like the ladder's `redlock`.
//!
//! # Flaw
//! A quorum of bare majority is lost when one of its masters loses the key
//! (a restart without persistence, a failover, a clock jump): another
//! client then gathers its own majority (go-redsync/redsync#186). The
//! holder never checks its validity before writing, so a pause or a slow
//! round lets it write after its lease ran out.
//!
//! # Shown by
//! `scenarios/libraries/redsync-quorum-loss.toml`.

use crate::error::LockError;
use crate::ladder::Rung;
use crate::lease::Lease;
use crate::libraries::quorum::{Masters, votes};
use crate::lock::{LockConfig, LockContext};
use crate::rungs::common::{self, Attempt, Configured, NodeConn, RungSteps};
use crate::scripts;
use std::time::Duration;

/// Library metadata of `redsync`.
pub const RUNG: Rung = Rung {
    id: "redsync",
    number: 12,
    acquire: "go-redsync v4.13: up to 32 tries 50-250 ms apart; SET NX PX on N masters at once, each bounded by ttl*0.05; held with a quorum and ttl - elapsed - ttl*0.01 > 0; else release everywhere",
    release: "owner-checked delete on every master; success with a quorum",
    fixes: "no single point of failure (as redlock)",
    flaw: "a bare-majority quorum is lost when one of its masters loses the key; the holder never checks its validity before writing",
    shown_by: "redsync-quorum-loss",
    multi_node: true,
    ..Rung::PLAIN
};

/// `tries`: how many times one `Lock` call tries.
pub const TRIES: u32 = 32;
/// The shortest delay between two tries.
pub const MIN_RETRY_DELAY: Duration = Duration::from_millis(50);
/// The longest delay between two tries.
pub const MAX_RETRY_DELAY: Duration = Duration::from_millis(250);
/// `driftFactor`.
pub const DRIFT_FACTOR: f64 = 0.01;
/// `timeoutFactor`: each master's request is bounded by expiry × this.
pub const TIMEOUT_FACTOR: f64 = 0.05;

/// What is left of `ttl` after `elapsed` and the drift, `ttl × 0.01`.
pub fn validity(ttl: Duration, elapsed: Duration) -> Duration {
    ttl.saturating_sub(elapsed)
        .saturating_sub(ttl.mul_f64(DRIFT_FACTOR))
}

/// The `redsync` lock.
pub struct Redsync<C> {
    masters: Masters<C>,
    set_nx_on_extend: bool,
}

impl<C: NodeConn> Redsync<C> {
    /// A redsync mutex over `nodes`, one connection per master, with
    /// redsync's defaults.
    pub fn new(nodes: Vec<C>, ctx: LockContext, config: LockConfig) -> Self {
        Redsync {
            masters: Masters::new(nodes, ctx, config),
            set_nx_on_extend: false,
        }
    }

    /// The same mutex with `WithSetNXOnExtend`: an extension also sets the
    /// key again on a master where it is gone, so that a holder that keeps
    /// extending heals a master that lost it.
    pub fn with_set_nx_on_extend(mut self) -> Self {
        self.set_nx_on_extend = true;
        self
    }

    /// Each master's time to answer: expiry × 0.05, at least 1 ms.
    fn node_timeout(&self) -> Duration {
        self.masters
            .config
            .ttl
            .mul_f64(TIMEOUT_FACTOR)
            .max(Duration::from_millis(1))
    }

    /// The delay before a try after the first: 50–250 ms.
    fn retry_delay(&self) -> Duration {
        MIN_RETRY_DELAY
            + self
                .masters
                .ctx
                .tokens
                .jitter(MAX_RETRY_DELAY - MIN_RETRY_DELAY)
    }

    /// The owner-checked delete on every master; how many deleted.
    async fn release_round(&self, resource: &str, token: &str) -> Vec<Result<bool, LockError>> {
        self.masters
            .round(Some(self.node_timeout()), None, |mut conn| async move {
                Ok(common::release_checked(&mut conn, resource, token, false).await? >= 1)
            })
            .await
    }
}

impl<C> Configured for Redsync<C> {
    fn ctx(&self) -> &LockContext {
        &self.masters.ctx
    }

    fn config(&self) -> &LockConfig {
        &self.masters.config
    }
}

/// A round's outcome when it fell short of a quorum: the first error if a
/// master did not answer (it may have done it), else "not held".
fn short_of_quorum(replies: Vec<Result<bool, LockError>>, resource: &str) -> LockError {
    replies
        .into_iter()
        .find_map(Result::err)
        .unwrap_or_else(|| common::not_held(resource))
}

impl<C: NodeConn> RungSteps for Redsync<C> {
    const RUNG: &'static Rung = &RUNG;

    // One `Lock` call: its tries, its delays, its releases.
    async fn attempt(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        let (resource, ttl) = (at.resource, self.masters.config.ttl);
        let clock = self.masters.ctx.clock.clone();
        let token = self.masters.ctx.tokens.token();
        let begun = clock.monotonic();
        for i in 0..TRIES {
            if i != 0 {
                clock.sleep(self.retry_delay()).await;
            }
            let started = clock.monotonic();
            let replies = self
                .masters
                .round(Some(self.node_timeout()), Some(resource), |mut conn| {
                    let token = &token;
                    async move { common::set_nx_px(&mut conn, resource, token, ttl).await }
                })
                .await;
            let granted = votes(&replies);
            if granted == 0
                && let Some(err) = replies.into_iter().find_map(Result::err)
            {
                return Err(err);
            }
            let elapsed = clock.monotonic().saturating_sub(started);
            if granted >= self.masters.quorum() && !validity(ttl, elapsed).is_zero() {
                return Ok(Some(at.lease(token, started)));
            }
            self.release_round(resource, &token).await;
        }
        Err(LockError::NotAcquired {
            resource: resource.to_string(),
            waited: clock.monotonic().saturating_sub(begun),
            attempts: TRIES,
        })
    }

    async fn release(&self, lease: &Lease) -> Result<(), LockError> {
        let round = async { Ok(self.release_round(&lease.resource, &lease.token).await) };
        let replies = common::between_release_points(&self.masters.ctx, lease, round).await?;
        if votes(&replies) >= self.masters.quorum() {
            return Ok(());
        }
        Err(short_of_quorum(replies, &lease.resource))
    }

    async fn extend(&self, lease: &mut Lease) -> Result<(), LockError> {
        let ttl = self.masters.config.ttl;
        let started = self.masters.ctx.clock.monotonic();
        let (resource, token) = (lease.resource.as_str(), lease.token.as_str());
        let set_nx = self.set_nx_on_extend;
        let replies = self
            .masters
            .round(Some(self.node_timeout()), None, |mut conn| async move {
                let script = if set_nx {
                    &*scripts::EXTEND_OR_SET
                } else {
                    &*scripts::EXTEND
                };
                let extended: i64 = script
                    .key(resource)
                    .arg(token)
                    .arg(common::ttl_ms(ttl))
                    .invoke_async(&mut conn)
                    .await?;
                Ok(extended == 1)
            })
            .await;
        if votes(&replies) < self.masters.quorum() {
            return Err(short_of_quorum(replies, resource));
        }
        let elapsed = self.masters.ctx.clock.monotonic().saturating_sub(started);
        if validity(ttl, elapsed).is_zero() {
            return Err(LockError::LeaseLost {
                resource: lease.resource.clone(),
                why: format!("the extension took {elapsed:?}, leaving no validity"),
            });
        }
        lease.acquired_at = started;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_takes_one_percent_of_the_expiry_and_no_constant() {
        let ttl = Duration::from_millis(8_000);
        assert_eq!(
            validity(ttl, Duration::from_millis(100)),
            Duration::from_millis(7_820)
        );
        assert_eq!(validity(ttl, Duration::from_millis(7_920)), Duration::ZERO);
    }
}
