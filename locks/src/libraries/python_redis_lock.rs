//! Library rung `python-redis-lock`: ionelmc's python-redis-lock 4.0.0
//! (`src/redis_lock/__init__.py`: `Lock.acquire`, `release`, `extend`,
//! `_lock_renewer`, and its `UNLOCK_SCRIPT` and `EXTEND_SCRIPT`), used
//! with `expire` and `auto_renewal=True`, acquired with a timeout.
//!
//! Acquire (`acquire(blocking=True, timeout=...)`): a new `Lock` object
//! has a fresh random id; it first asks whether the lock is already its
//! own (`GET`), then loops: `SET key id NX` with the expiry; when the key
//! is taken, `BLPOP` on the lock's signal list, with the whole acquire
//! timeout as the pop's timeout (not what is left of it: a waiter woken
//! by a signal and beaten to the lock blocks for the whole timeout
//! again). A pop that times out lets the loop make one last `SET`; a pop
//! that got a signal loops on. The pop is a real blocking `BLPOP` on the
//! node, in simulated time, over a connection of its own (as redis-py's
//! pool gives a blocking command one, see [`crate::conn`]). Release
//! (`release`): stop the renewal thread, then one script: if the lock holds
//! my id, empty the signal list, push one element, give it a short life
//! (`signal_expire`, 1000 ms), delete the lock, answer 0; else answer 1
//! (`NotAcquired`). One element: one waiter's `BLPOP` takes it, the others
//! sleep on. Renewal (`auto_renewal`): a thread that every expire × 2/3
//! runs the extend script (1 when the lock is not mine or gone, 2 when it
//! has no expiry, else re-arm it). Any failure there, the lock gone
//! (`NotAcquired`) or no answer from Redis, is an exception that escapes
//! the thread's loop: the thread ends, and nobody is told.
//!
//! What the model takes from the scenario: the expiry is its TTL (the
//! library counts whole seconds, `SET ... EX`, `EXPIRE`; the model the
//! same lease in milliseconds, `PX` and `PEXPIRE`, as the scenarios' TTLs
//! are below a second), the acquire timeout is `max_wait_ms` (allowed
//! beyond the expiry with `auto_renewal`), and the pop's timeout is sent
//! in seconds with a decimal part (Redis 6.0 and later take one). The
//! keys: the scenario's lock key stands for `lock:<name>`, the signal list
//! is `lock-signal:<name>`. An error from Redis escapes `acquire` as it
//! would in Python; the simulated caller calls again after `retry_ms`,
//! with what is left of `max_wait_ms` as the timeout. Left out: redis-py's
//! own retries, `reset` and `reset_all`, `blocking=False`, and the renewal
//! interval a subclass may set.
//!
//! # Fixes
//! Waiters sleep in `BLPOP` instead of polling and a release wakes one of
//! them at once; the owner-checked release, and renewal for long critical
//! sections.
//!
//! # Flaw
//! The holder is never told its lease is gone: a pause (or a partition)
//! longer than the expiry stops its renewal thread with it, the key
//! expires, a waiter takes it, and the holder resumes and writes; its
//! renewal finds the lock gone and its thread dies silently, and only the
//! release says `NotAcquired` (python-redis-lock issue #85). And the
//! waiters hear only of releases: a holder that dies without releasing
//! sends no signal, so each waiter sleeps through its whole acquire
//! timeout although the key expired long before.
//!
//! # Shown by
//! `scenarios/libraries/python-redis-lock-pause-past-expire.toml`,
//! `scenarios/libraries/python-redis-lock-holder-crash.toml`.

use crate::clock::BoxFuture;
use crate::error::LockError;
use crate::fault::FaultPoint;
use crate::ladder::Rung;
use crate::lease::{Lease, Owner};
use crate::lock::{Lock, LockConfig, LockContext, WaitBudget};
use crate::renewal::{self, Renewals};
use crate::rungs::common::{self, Configured, NodeConn};
use crate::scripts;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// Library metadata of `python-redis-lock`.
pub const RUNG: Rung = Rung {
    id: "python-redis-lock",
    number: 17,
    acquire: "python-redis-lock 4.0.0 acquire(timeout): GET (mine already?), then SET key id NX with the expiry; while taken, BLPOP the signal list for the whole timeout and try again; auto_renewal re-arms the TTL every expire*2/3 (owner-checked script) until one renewal fails",
    release: "stop the renewal thread; owner-checked script: DEL + LPUSH + PEXPIRE of the signal list, DEL of the lock (NotAcquired when not mine)",
    fixes: "waiters sleep in BLPOP and a release wakes one at once; owner-checked release; renewal for long critical sections",
    flaw: "the holder is never told its lease is gone (a pause past the expiry lets a waiter in); a holder that dies sends no signal, so waiters sleep their whole acquire timeout",
    shown_by: "python-redis-lock-pause-past-expire, python-redis-lock-holder-crash",
    renews: true,
    ..Rung::PLAIN
};

/// `signal_expire`: how long the element a release pushes stays in the
/// signal list for a waiter to pop (the library's default, in ms).
pub const SIGNAL_EXPIRE: Duration = Duration::from_millis(1_000);

/// The signal list of the lock whose key is `key`: `lock-signal:<name>`
/// for the key `lock:<name>` (the scenario's key, when it does not start
/// with `lock:`, stands for the whole name).
pub fn signal_key(key: &str) -> String {
    format!("lock-signal:{}", key.strip_prefix("lock:").unwrap_or(key))
}

/// How often the renewal thread re-arms the lock: expire × 2/3.
pub fn renewal_interval(ttl: Duration) -> Duration {
    (ttl * 2 / 3).max(Duration::from_millis(1))
}

/// A timeout in seconds as `BLPOP` takes it, to the millisecond.
fn seconds_arg(timeout: Duration) -> String {
    let ms = timeout.as_millis().max(1);
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// `BLPOP key timeout`: true when it popped a signal, false when the
/// timeout passed with none.
pub async fn blpop<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    timeout: Duration,
) -> Result<bool, LockError> {
    let popped: redis::Value = redis::cmd("BLPOP")
        .arg(key)
        .arg(seconds_arg(timeout))
        .query_async(conn)
        .await?;
    Ok(!matches!(popped, redis::Value::Nil))
}

/// The extend script with the library's codes: `Ok` when re-armed,
/// `NotHeld` for 1 (`NotAcquired`: not mine, or gone), `LeaseLost` for 2
/// (`NotExpirable`).
pub async fn extend_coded<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    id: &str,
    ttl: Duration,
) -> Result<(), LockError> {
    let code: i64 = scripts::CODED_EXTEND
        .key(key)
        .arg(id)
        .arg(common::ttl_ms(ttl))
        .invoke_async(conn)
        .await?;
    match code {
        0 => Ok(()),
        2 => Err(LockError::LeaseLost {
            resource: key.to_string(),
            why: "NotExpirable: the lock has no expiry".to_string(),
        }),
        _ => Err(common::not_held(key)),
    }
}

/// The `python-redis-lock` lock: one node, a `Lock` object per acquire.
pub struct PythonRedisLock<C> {
    conn: C,
    ctx: LockContext,
    config: LockConfig,
    renewals: Renewals,
}

impl<C: NodeConn> PythonRedisLock<C> {
    /// The lock over one node.
    pub fn new(conn: C, ctx: LockContext, config: LockConfig) -> Self {
        PythonRedisLock {
            conn,
            ctx,
            config,
            renewals: Renewals::default(),
        }
    }

    /// One call of `acquire(blocking=True, timeout)` by a new `Lock`
    /// object: the lease, `None` when it returned `False` (timed out), or
    /// the Redis error that escaped it.
    async fn acquire_call(
        &self,
        resource: &str,
        owner: &Owner,
        timeout: Duration,
    ) -> Result<Option<Lease>, LockError> {
        let id = self.ctx.tokens.token();
        let signal = signal_key(resource);
        let mut conn = self.conn.clone();
        // `_held`: a fresh id is never the owner's yet, but the question
        // is asked all the same.
        common::get(&mut conn, resource).await?;
        let mut timed_out = false;
        for _ in 0..self.config.max_attempts() {
            let started = self.ctx.clock.monotonic();
            if common::set_nx_px(&mut conn, resource, &id, self.config.ttl).await? {
                return Ok(Some(Lease::new(resource, id, owner, started)));
            }
            if timed_out {
                return Ok(None);
            }
            let signalled = blpop(&mut conn, &signal, timeout).await?;
            self.ctx.wakeups.add();
            timed_out = !signalled;
        }
        Ok(None)
    }

    /// Starts the renewal thread of a fresh hold: every expire × 2/3, the
    /// extend script; the first failure ends it, telling no one.
    fn start_renewal(&self, lease: &mut Lease) {
        let (resource, id) = (lease.resource.clone(), lease.token.clone());
        let (conn, clock, ttl) = (self.conn.clone(), self.ctx.clock.clone(), self.config.ttl);
        self.renewals.watch(lease, move |flag| {
            tokio::spawn(renewal::renew_loop(
                clock,
                renewal_interval(ttl),
                flag,
                move || {
                    let (mut conn, resource, id) = (conn.clone(), resource.clone(), id.clone());
                    async move { extend_coded(&mut conn, &resource, &id, ttl).await }
                },
            ));
        });
    }
}

impl<C> Drop for PythonRedisLock<C> {
    fn drop(&mut self) {
        self.renewals.stop_all();
    }
}

impl<C> Configured for PythonRedisLock<C> {
    fn ctx(&self) -> &LockContext {
        &self.ctx
    }

    fn config(&self) -> &LockConfig {
        &self.config
    }
}

impl<C: NodeConn> Lock for PythonRedisLock<C> {
    fn rung(&self) -> &'static Rung {
        &RUNG
    }

    fn acquire<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>> {
        Box::pin(async move {
            let mut budget = WaitBudget::start(&self.ctx, &self.config, resource);
            let mut timeout = self.config.max_wait;
            loop {
                let outcome = self.acquire_call(resource, owner, timeout).await;
                if let Some(mut lease) = budget.count(outcome)? {
                    self.start_renewal(&mut lease);
                    self.ctx.point(FaultPoint::AfterAcquire, resource).await;
                    return Ok(lease);
                }
                // `False` (timed out) or an error: the caller calls again,
                // with what is left of its wait, after `retry_ms`.
                timeout = budget.left()?;
                let pause = self.config.wait.pause(budget.attempts, &self.ctx.tokens);
                self.ctx.clock.sleep(pause.min(timeout)).await;
                timeout = budget.left()?;
            }
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            // The renewal thread is stopped (and joined) before the script.
            self.renewals.unwatch(lease, true);
            let mut conn = self.conn.clone();
            let script = async {
                let code: i64 = scripts::SIGNAL_RELEASE
                    .key(&lease.resource)
                    .key(signal_key(&lease.resource))
                    .arg(&lease.token)
                    .arg(common::ttl_ms(SIGNAL_EXPIRE))
                    .invoke_async(&mut conn)
                    .await?;
                Ok(code)
            };
            let code = common::between_release_points(&self.ctx, lease, script).await?;
            if code == 0 {
                Ok(())
            } else {
                Err(common::not_held(&lease.resource))
            }
        })
    }

    fn extend<'a>(&'a self, lease: &'a mut Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            extend_coded(&mut conn, &lease.resource, &lease.token, self.config.ttl).await
        })
    }

    fn before_write<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        // No check: the holder learns nothing of its renewal thread's end.
        Box::pin(common::pass_before_write(&self.ctx, lease))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signal_list_is_named_after_the_lock() {
        assert_eq!(signal_key("lock:jobs"), "lock-signal:jobs");
        assert_eq!(signal_key("locklab:lock"), "lock-signal:locklab:lock");
    }

    #[test]
    fn the_pop_timeout_is_sent_in_seconds_to_the_millisecond() {
        assert_eq!(seconds_arg(Duration::from_millis(8_000)), "8.000");
        assert_eq!(seconds_arg(Duration::from_millis(1_250)), "1.250");
        assert_eq!(seconds_arg(Duration::ZERO), "0.001");
    }

    #[test]
    fn the_renewal_thread_ticks_every_two_thirds_of_the_expiry() {
        assert_eq!(
            renewal_interval(Duration::from_millis(900)),
            Duration::from_millis(600)
        );
    }
}
