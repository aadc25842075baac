//! Library rung `node-redlock`: the algorithm of node-redlock 5.0.0-beta.2
//! (`src/index.ts`: `acquire`, `extend`, `release`, `using`, `_execute`,
//! `_attempt`), the version npm installs.
//!
//! Acquire: one random value, then up to 1 + `retryCount` (10) attempts,
//! `retryDelay` (200 ms) ± up to `retryJitter` (100 ms) apart. An attempt
//! runs the acquire script (set the key only if it does not exist, with a
//! TTL) on every client at once and succeeds with a quorum (N/2+1) of
//! them; a failed attempt releases nothing, so a master this acquire
//! already holds votes against it in the next one. The lock's expiration
//! is `start + duration − drift`, drift = round(duration × 0.01) + 2 ms,
//! where `start` is taken once, before the first attempt: a lock won on a
//! late retry is returned with its expiration already past
//! (mike-marcacci/node-redlock#296). No attempt checks the time it took.
//!
//! Modelled as a caller of `using()`: the routine runs while an extension
//! is scheduled `automaticExtensionThreshold` (500 ms) before the
//! expiration; an extension refuses a lock whose expiration has passed
//! ("Cannot extend an already-expired lock"), otherwise re-arms the key on
//! every client (owner-checked, with the same retries) and moves the
//! expiration to `its start + duration − drift`. A failed extension aborts
//! the routine's signal; the routine checks `signal.aborted` before each
//! write, as node-redlock's README shows. Release runs the owner-checked
//! delete on every client once (node-redlock retries it). The retry
//! counts, delays and the threshold are node-redlock's defaults, fixed in
//! milliseconds as in the library; the duration is the scenario's TTL.
//!
//! # Fixes
//! No single point of failure, and long routines keep the lock by
//! automatic extension.
//!
//! # Flaw
//! The expiration counts from the first attempt, so a lock won after
//! waiting longer than its duration is handed over already expired: its
//! extension is refused at once and the routine is aborted while the key
//! is still set for a full TTL. Like every Redlock, a master that loses
//! the key breaks a bare quorum, and a pause longer than the TTL lets the
//! key expire under a holder that resumes unaware.
//!
//! # Shown by
//! `scenarios/libraries/node-redlock-expired-on-return.toml`,
//! `scenarios/libraries/redsync-quorum-loss.toml`.

use crate::clock::Clock;
use crate::error::LockError;
use crate::ladder::Rung;
use crate::lease::{Lease, LostFlag};
use crate::libraries::quorum::{Extension, Masters, spawn_extension, stop_extension, votes};
use crate::lock::{LockConfig, LockContext};
use crate::rungs::common::{self, Attempt, Configured, NodeConn, RungSteps};
use crate::token::TokenSource;
use std::sync::Arc;
use std::time::Duration;

/// Library metadata of `node-redlock`.
pub const RUNG: Rung = Rung {
    id: "node-redlock",
    number: 13,
    acquire: "node-redlock 5.0.0-beta.2: up to 11 attempts 200 ms +- 100 ms apart, SET-if-absent on N clients, held with a quorum; expiration = first attempt's start + ttl - drift; using() extends 500 ms before it",
    release: "owner-checked delete on every client",
    fixes: "no single point of failure; using() extends the lock while the routine runs",
    flaw: "the expiration counts from the first attempt: a lock won late is returned expired and its routine aborted; a bare quorum is lost with one master's key",
    shown_by: "node-redlock-expired-on-return, redsync-quorum-loss",
    multi_node: true,
    ..Rung::PLAIN
};

/// `retryCount`: attempts after the first.
pub const RETRY_COUNT: u32 = 10;
/// `retryDelay`.
pub const RETRY_DELAY: Duration = Duration::from_millis(200);
/// `retryJitter`: the delay varies by up to this either way.
pub const RETRY_JITTER: Duration = Duration::from_millis(100);
/// `automaticExtensionThreshold`: `using()` extends this long before the
/// expiration.
pub const EXTENSION_THRESHOLD: Duration = Duration::from_millis(500);

/// node-redlock's drift: round(duration × 0.01) + 2 ms.
pub fn drift(ttl: Duration) -> Duration {
    Duration::from_millis((ttl.as_millis() as f64 * 0.01).round() as u64 + 2)
}

/// A delay between attempts: `retryDelay` ± up to `retryJitter`.
fn retry_pause(tokens: &TokenSource) -> Duration {
    RETRY_DELAY - RETRY_JITTER + tokens.jitter(RETRY_JITTER * 2)
}

/// The `node-redlock` lock.
pub struct NodeRedlock<C> {
    masters: Masters<C>,
}

impl<C: NodeConn> NodeRedlock<C> {
    /// A node-redlock instance over `nodes`, one client per master.
    pub fn new(nodes: Vec<C>, ctx: LockContext, config: LockConfig) -> Self {
        NodeRedlock {
            masters: Masters::new(nodes, ctx, config),
        }
    }
}

/// Runs the owner-checked extension on every master with node-redlock's
/// retries; the new expiration when a quorum re-armed it.
async fn extend_round<C: NodeConn>(
    masters: &Masters<C>,
    resource: &str,
    token: &str,
) -> Result<Duration, LockError> {
    let ttl = masters.config.ttl;
    let clock = &masters.ctx.clock;
    let start = clock.monotonic();
    for attempt in 0..=RETRY_COUNT {
        if attempt > 0 {
            clock.sleep(retry_pause(&masters.ctx.tokens)).await;
        }
        let replies = masters
            .round(None, None, |mut conn| async move {
                Ok(common::extend_script(&mut conn, resource, token, ttl).await? == 1)
            })
            .await;
        if votes(&replies) >= masters.quorum() {
            return Ok(start + ttl - drift(ttl).min(ttl));
        }
    }
    Err(common::not_held(resource))
}

/// `using()`'s automatic extension of one lease.
struct Extending<C> {
    masters: Masters<C>,
    resource: String,
    token: String,
    /// The lock's expiration, by the holder's monotonic clock.
    expiration: Duration,
    clock: Arc<dyn Clock>,
}

impl<C: NodeConn> Extension for Extending<C> {
    fn due_in(&self, now: Duration) -> Duration {
        self.expiration
            .saturating_sub(now)
            .saturating_sub(EXTENSION_THRESHOLD)
    }

    async fn extend(&mut self) -> Result<(), LockError> {
        if self.expiration < self.clock.monotonic() {
            return Err(LockError::LeaseLost {
                resource: self.resource.clone(),
                why: "Cannot extend an already-expired lock.".to_string(),
            });
        }
        self.expiration = extend_round(&self.masters, &self.resource, &self.token).await?;
        Ok(())
    }
}

impl<C> Configured for NodeRedlock<C> {
    fn ctx(&self) -> &LockContext {
        &self.masters.ctx
    }

    fn config(&self) -> &LockConfig {
        &self.masters.config
    }
}

impl<C: NodeConn> RungSteps for NodeRedlock<C> {
    const RUNG: &'static Rung = &RUNG;

    // One `acquire` call: its attempts and delays, the lease stamped with
    // the start of the first attempt.
    async fn attempt(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        let (resource, ttl) = (at.resource, self.masters.config.ttl);
        let clock = self.masters.ctx.clock.clone();
        let token = self.masters.ctx.tokens.token();
        let start = clock.monotonic();
        for attempt in 0..=RETRY_COUNT {
            if attempt > 0 {
                clock.sleep(retry_pause(&self.masters.ctx.tokens)).await;
            }
            let replies = self
                .masters
                .round(None, Some(resource), |mut conn| {
                    let token = &token;
                    async move { common::set_nx_px(&mut conn, resource, token, ttl).await }
                })
                .await;
            if votes(&replies) >= self.masters.quorum() {
                return Ok(Some(at.lease(token, start)));
            }
        }
        // The acquire failed: undo whatever it set, once, and report it.
        self.masters
            .round(None, None, |mut conn| {
                let token = &token;
                async move { common::release_checked(&mut conn, resource, token, false).await }
            })
            .await;
        Err(LockError::NotAcquired {
            resource: resource.to_string(),
            waited: clock.monotonic().saturating_sub(start),
            attempts: RETRY_COUNT + 1,
        })
    }

    /// `using()` schedules the first extension from the expiration
    /// `acquire` computed, which counts from the first attempt's start.
    fn start_holding(&self, lease: &mut Lease) {
        let ttl = self.masters.config.ttl;
        let flag = Arc::new(LostFlag::default());
        lease.lost = Some(flag.clone());
        let extending = Extending {
            masters: self.masters.clone(),
            resource: lease.resource.clone(),
            token: lease.token.clone(),
            expiration: lease.acquired_at + ttl - drift(ttl).min(ttl),
            clock: self.masters.ctx.clock.clone(),
        };
        spawn_extension(extending, self.masters.ctx.clock.clone(), flag);
    }

    async fn release(&self, lease: &Lease) -> Result<(), LockError> {
        stop_extension(lease);
        let (resource, token) = (lease.resource.as_str(), lease.token.as_str());
        let round = async {
            Ok(self
                .masters
                .round(None, None, |mut conn| async move {
                    Ok(common::release_checked(&mut conn, resource, token, false).await? >= 1)
                })
                .await)
        };
        let replies = common::between_release_points(&self.masters.ctx, lease, round).await?;
        if votes(&replies) >= 1 {
            return Ok(());
        }
        match replies.into_iter().find_map(Result::err) {
            Some(err) => Err(err),
            None => Err(common::not_held(resource)),
        }
    }

    async fn extend(&self, lease: &mut Lease) -> Result<(), LockError> {
        extend_round(&self.masters, &lease.resource, &lease.token).await?;
        Ok(())
    }

    fn check_validity(&self, lease: &Lease) -> Result<(), LockError> {
        lease.check_not_lost("using() aborted the routine: an automatic extension failed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drift_rounds_one_percent_and_adds_two_milliseconds() {
        assert_eq!(
            drift(Duration::from_millis(1_000)),
            Duration::from_millis(12)
        );
        assert_eq!(drift(Duration::from_millis(150)), Duration::from_millis(4));
    }

    #[test]
    fn retry_pauses_stay_within_the_jitter() {
        let tokens = TokenSource::seeded(3);
        for _ in 0..200 {
            let pause = retry_pause(&tokens);
            assert!(pause >= Duration::from_millis(100) && pause <= Duration::from_millis(300));
        }
    }
}
