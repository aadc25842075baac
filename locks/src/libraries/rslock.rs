//! Library rung `rslock`: the algorithm of the rslock crate 0.10.0 (the
//! version `locklab bench` measures; `src/lock.rs`: `LockManager::lock`,
//! `exec_or_retry`, `extend`, `unlock`, `using`).
//!
//! `lock()`: one random value per call, then up to `retry_count` (3)
//! tries. A try sends `SET key value NX PX ttl` to every master at once
//! (no timeout of its own: the connection's) and computes the validity
//! `ttl − drift − elapsed`, drift = ⌊ttl × 0.01⌋ + 2 ms. When the round
//! took longer than `ttl − drift` the call ends at once (`TtlExceeded`)
//! and leaves its grants in place; with a quorum (N/2+1) and a positive
//! validity the lock is held; otherwise it runs the owner-checked delete
//! on every master and, if tries are left, sleeps a random 0–200 ms
//! (`retry_delay`). `extend()` is the same loop with the owner-checked
//! re-arm instead of `SET NX`: **an extension that misses the quorum
//! deletes the lock on every master**, also where it was just re-armed,
//! and ends with `Unavailable` once its tries are spent. `unlock()` is a
//! best-effort delete on every master that reports nothing.
//!
//! Modelled as a caller of `using()`: it acquires with
//! `acquire_no_guard` (`lock()` again until it succeeds; the simulated
//! caller waits `retry_ms` between two calls and stops at `max_wait_ms`),
//! then races the routine against an extension due `validity − 500 ms`
//! after each grant; a failed extension releases the lock and drops the
//! routine, modelled as the holder's check before writing failing. The
//! counts and delays are rslock's defaults; the TTL is the scenario's.
//!
//! # Fixes
//! No single point of failure, and long routines keep the lock.
//!
//! # Flaw
//! As every Redlock, a bare quorum is lost when one of its masters loses
//! the key. An extension that falls short of the quorum throws the lock
//! away everywhere, and a round slower than the TTL leaves its grants
//! behind for a full TTL.
//!
//! # Shown by
//! `scenarios/libraries/redsync-quorum-loss.toml`.

use crate::clock::Clock;
use crate::error::LockError;
use crate::ladder::Rung;
use crate::lease::{Lease, LostFlag};
use crate::libraries::quorum::{Extension, Masters, spawn_extension, stop_extension, votes};
use crate::lock::{LockConfig, LockContext};
use crate::rungs::common::{self, Attempt, Configured, NodeConn, RungSteps};
use std::sync::Arc;
use std::time::Duration;

/// Library metadata of `rslock`.
pub const RUNG: Rung = Rung {
    id: "rslock",
    number: 14,
    acquire: "rslock 0.10: up to 3 tries 0-200 ms apart, SET NX PX on N masters at once; held with a quorum and ttl - drift - elapsed > 0; else delete everywhere; using() extends 500 ms before the validity ends",
    release: "best-effort owner-checked delete on every master",
    fixes: "no single point of failure; using() extends the lock while the routine runs",
    flaw: "an extension short of a quorum deletes the lock everywhere; a bare quorum is lost with one master's key",
    shown_by: "redsync-quorum-loss",
    multi_node: true,
    ..Rung::PLAIN
};

/// `retry_count`: tries of one `lock()` or `extend()` call.
pub const RETRY_COUNT: u32 = 3;
/// `retry_delay`: the longest random sleep between two tries.
pub const RETRY_DELAY: Duration = Duration::from_millis(200);
/// How long before the validity ends `using()` extends.
pub const EXTEND_BEFORE: Duration = Duration::from_millis(500);

/// rslock's drift: ⌊ttl × 0.01⌋ + 2 ms.
pub fn drift(ttl: Duration) -> Duration {
    Duration::from_millis((ttl.as_millis() as f32 * 0.01) as u64 + 2)
}

/// Which round `exec_or_retry` runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Operation {
    Lock,
    Extend,
}

/// How `exec_or_retry` ended.
enum Outcome {
    /// Held, with this validity from the successful try's start.
    Held {
        started: Duration,
        validity: Duration,
    },
    /// A round took longer than `ttl − drift`; nothing was undone.
    TtlExceeded,
    /// Every try fell short.
    Unavailable,
}

/// `exec_or_retry`: the tries of `lock()` or `extend()` for `token`.
async fn exec_or_retry<C: NodeConn>(
    masters: &Masters<C>,
    resource: &str,
    token: &str,
    operation: Operation,
) -> Outcome {
    let ttl = masters.config.ttl;
    let clock = &masters.ctx.clock;
    let reporting = (operation == Operation::Lock).then_some(resource);
    for try_number in 1..=RETRY_COUNT {
        let started = clock.monotonic();
        let replies = masters
            .round(None, reporting, |mut conn| async move {
                match operation {
                    Operation::Lock => common::set_nx_px(&mut conn, resource, token, ttl).await,
                    Operation::Extend => {
                        Ok(common::extend_script(&mut conn, resource, token, ttl).await? == 1)
                    }
                }
            })
            .await;
        let elapsed = clock.monotonic().saturating_sub(started);
        if ttl <= drift(ttl) + elapsed {
            return Outcome::TtlExceeded;
        }
        let validity = ttl - drift(ttl) - elapsed;
        if votes(&replies) >= masters.quorum() {
            return Outcome::Held { started, validity };
        }
        unlock(masters, resource, token).await;
        if try_number < RETRY_COUNT {
            let delay = masters
                .ctx
                .tokens
                .jitter(RETRY_DELAY - Duration::from_millis(1));
            clock.sleep(delay).await;
        }
    }
    Outcome::Unavailable
}

/// `unlock()`: the owner-checked delete on every master, best effort;
/// how many deleted.
async fn unlock<C: NodeConn>(masters: &Masters<C>, resource: &str, token: &str) -> usize {
    let replies = masters
        .round(None, None, |mut conn| async move {
            Ok(common::release_checked(&mut conn, resource, token, false).await? >= 1)
        })
        .await;
    votes(&replies)
}

/// One `extend()` of `token`'s lock: when its successful try started and
/// the validity it gave, or the error of an extension that did not keep
/// the lock.
async fn extend_call<C: NodeConn>(
    masters: &Masters<C>,
    resource: &str,
    token: &str,
) -> Result<(Duration, Duration), LockError> {
    let why = match exec_or_retry(masters, resource, token, Operation::Extend).await {
        Outcome::Held { started, validity } => return Ok((started, validity)),
        Outcome::TtlExceeded => "TtlExceeded: the extension round outlasted the TTL",
        Outcome::Unavailable => {
            "Unavailable: the extension missed the quorum and deleted the lock everywhere"
        }
    };
    Err(LockError::LeaseLost {
        resource: resource.to_string(),
        why: why.to_string(),
    })
}

/// `using()`'s extension of one lease.
struct Extending<C> {
    masters: Masters<C>,
    resource: String,
    token: String,
    /// When the next extension is due, by the holder's monotonic clock.
    due_at: Duration,
    clock: Arc<dyn Clock>,
}

/// When `using()` extends after a grant with `validity`, made `now`.
fn next_extension(now: Duration, validity: Duration) -> Duration {
    now + validity
        .saturating_sub(EXTEND_BEFORE)
        .max(Duration::from_millis(1))
}

impl<C: NodeConn> Extension for Extending<C> {
    fn due_in(&self, now: Duration) -> Duration {
        self.due_at.saturating_sub(now)
    }

    async fn extend(&mut self) -> Result<(), LockError> {
        let (_, validity) = extend_call(&self.masters, &self.resource, &self.token).await?;
        self.due_at = next_extension(self.clock.monotonic(), validity);
        Ok(())
    }

    /// `using()` releases the lock when an extension fails.
    async fn after_failure(&mut self) {
        unlock(&self.masters, &self.resource, &self.token).await;
    }
}

/// The `rslock` lock.
pub struct Rslock<C> {
    masters: Masters<C>,
}

impl<C: NodeConn> Rslock<C> {
    /// An rslock `LockManager` over `nodes`, one connection per master.
    pub fn new(nodes: Vec<C>, ctx: LockContext, config: LockConfig) -> Self {
        Rslock {
            masters: Masters::new(nodes, ctx, config),
        }
    }
}

impl<C> Configured for Rslock<C> {
    fn ctx(&self) -> &LockContext {
        &self.masters.ctx
    }

    fn config(&self) -> &LockConfig {
        &self.masters.config
    }
}

impl<C: NodeConn> RungSteps for Rslock<C> {
    const RUNG: &'static Rung = &RUNG;

    // One `lock()` call: a fresh value and its tries.
    async fn attempt(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        let token = self.masters.ctx.tokens.token();
        match exec_or_retry(&self.masters, at.resource, &token, Operation::Lock).await {
            Outcome::Held { started, .. } => Ok(Some(at.lease(token, started))),
            Outcome::TtlExceeded | Outcome::Unavailable => Ok(None),
        }
    }

    /// `using()` schedules its first extension from the grant's validity,
    /// `ttl − drift − elapsed`, the elapsed time counted from the
    /// successful try's start (the lease's `acquired_at`).
    fn start_holding(&self, lease: &mut Lease) {
        let ttl = self.masters.config.ttl;
        let clock = self.masters.ctx.clock.clone();
        let now = clock.monotonic();
        let elapsed = now.saturating_sub(lease.acquired_at);
        let validity = ttl.saturating_sub(drift(ttl)).saturating_sub(elapsed);
        let flag = Arc::new(LostFlag::default());
        lease.lost = Some(flag.clone());
        let extending = Extending {
            masters: self.masters.clone(),
            resource: lease.resource.clone(),
            token: lease.token.clone(),
            due_at: next_extension(now, validity),
            clock: clock.clone(),
        };
        spawn_extension(extending, clock, flag);
    }

    async fn release(&self, lease: &Lease) -> Result<(), LockError> {
        stop_extension(lease);
        let round = async { Ok(unlock(&self.masters, &lease.resource, &lease.token).await) };
        common::between_release_points(&self.masters.ctx, lease, round).await?;
        Ok(())
    }

    async fn extend(&self, lease: &mut Lease) -> Result<(), LockError> {
        let (started, _) = extend_call(&self.masters, &lease.resource, &lease.token).await?;
        lease.acquired_at = started;
        Ok(())
    }

    fn check_validity(&self, lease: &Lease) -> Result<(), LockError> {
        lease.check_not_lost("using() dropped the routine: an extension failed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drift_truncates_one_percent_and_adds_two_milliseconds() {
        assert_eq!(
            drift(Duration::from_millis(1_000)),
            Duration::from_millis(12)
        );
        assert_eq!(drift(Duration::from_millis(150)), Duration::from_millis(3));
    }
}
