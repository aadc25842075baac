//! What a simulated client does: lock cycles around sales of the guarded
//! stock, every step recorded as an invoke and a completion.
//!
//! One cycle: acquire; (optionally) acquire again as the same owner;
//! `writes` times: read the stock, work for `critical_section_ms`, pass the
//! rung's validity check, write the stock minus one; release (inner first).
//! A reader (a group whose `mode` is `shared`) acquires shared, and each of
//! its `writes` steps only reads the stock and works.

use crate::dial::SimDialer;
use crate::freeze::Freeze;
use crate::recorder::Recorder;
use crate::resource::Store;
use locks::{Clock, Dialer, Lease, Lock, LockError, Owner};
use model::history::{EventKind, Op, Outcome};
use model::scenario::{ClientGroup, LockMode};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Everything one client process needs. The same workload runs in the
/// simulator and in real mode (the `real` crate), which differ only in
/// the clock, the dialer and how a pause stops the client.
pub struct Client<D: Dialer = SimDialer> {
    /// Its workload.
    pub group: ClientGroup,
    /// The lock key.
    pub key: String,
    /// The rung, built over this process's connections.
    pub lock: Box<dyn Lock>,
    /// The guarded stock.
    pub store: Store<D>,
    /// Who it is (a restarted process is a new owner).
    pub owner: Owner,
    /// The client's index.
    pub index: usize,
    /// Its machine clock (kept across restarts).
    pub clock: Arc<dyn Clock>,
    /// The lock cycle it is in, from 1 (0 before the first), shared with
    /// its fault hook and kept across restarts.
    pub cycle: Arc<AtomicU32>,
    /// The simulator's pause gate, waited on before each event is
    /// recorded; `None` in real mode, where a pause stops the client's
    /// whole thread.
    pub gate: Option<Arc<Freeze>>,
    /// Where events go.
    pub recorder: Arc<Recorder>,
}

/// What an error means for the history.
fn outcome_of(err: &LockError) -> Outcome {
    if err.outcome_unknown() {
        Outcome::Unknown
    } else {
        Outcome::Fail
    }
}

impl<D: Dialer> Client<D> {
    /// Runs the remaining cycles (a restarted client goes on counting).
    pub async fn run(&self) {
        let done_before = self.cycle.load(Ordering::SeqCst);
        if done_before == 0 && self.group.start_ms > 0 {
            self.clock
                .sleep(Duration::from_millis(self.group.start_ms))
                .await;
        }
        for n in (done_before + 1)..=self.group.cycles {
            self.cycle.store(n, Ordering::SeqCst);
            let started = tokio::time::Instant::now();
            self.cycle_once(n).await;
            if self.group.think_ms > 0 {
                self.clock
                    .sleep(Duration::from_millis(self.group.think_ms))
                    .await;
            } else if tokio::time::Instant::now() == started {
                // Every request of the cycle failed at once (its node is
                // down): without a step of simulated time between cycles,
                // the client would run all of them inside one instant, and
                // the simulation would never get past it.
                tokio::time::sleep(crate::run::TICK).await;
            }
        }
    }

    async fn record(&self, kind: EventKind) {
        // A paused client observes nothing until it resumes.
        if let Some(gate) = &self.gate {
            gate.wait().await;
        }
        self.recorder.record(kind);
    }

    async fn invoke(&self, op: Op, n: u32, value: Option<i64>) {
        self.record(EventKind::Invoke {
            client: self.index,
            op,
            lock: self.key.clone(),
            n,
            value,
            shared: op == Op::Acquire && self.reads_only(),
        })
        .await;
    }

    #[allow(clippy::too_many_arguments)]
    async fn complete(
        &self,
        op: Op,
        n: u32,
        outcome: Outcome,
        lease: Option<&Lease>,
        value: Option<i64>,
        fence: Option<u64>,
        error: Option<String>,
    ) {
        self.record(EventKind::Complete {
            client: self.index,
            op,
            lock: self.key.clone(),
            n,
            outcome,
            token: lease.map(|l| l.token.clone()).filter(|t| !t.is_empty()),
            fence: fence.or(lease.and_then(|l| l.fence)),
            depth: lease.map(|l| l.depth),
            valid_for_us: lease
                .and_then(|l| self.valid_for(l))
                .filter(|_| op == Op::Acquire),
            value,
            error,
            shared: op == Op::Acquire && lease.is_some_and(|l| l.shared),
        })
        .await;
    }

    /// Whether this client is a reader: it takes the lock shared and
    /// never writes.
    fn reads_only(&self) -> bool {
        self.group.mode == LockMode::Shared
    }

    /// What is left of a lease's self-tracked validity, by this client's clock.
    fn valid_for(&self, lease: &Lease) -> Option<u64> {
        let validity = lease.validity?;
        let used = self.clock.monotonic().saturating_sub(lease.acquired_at);
        Some(validity.saturating_sub(used).as_micros() as u64)
    }

    async fn acquire(&self, n: u32) -> Option<Lease> {
        self.invoke(Op::Acquire, n, None).await;
        let granted = if self.reads_only() {
            self.lock.acquire_shared(&self.key, &self.owner).await
        } else {
            self.lock.acquire(&self.key, &self.owner).await
        };
        match granted {
            Ok(lease) => {
                self.complete(Op::Acquire, n, Outcome::Ok, Some(&lease), None, None, None)
                    .await;
                Some(lease)
            }
            Err(e) => {
                self.complete(
                    Op::Acquire,
                    n,
                    outcome_of(&e),
                    None,
                    None,
                    None,
                    Some(e.to_string()),
                )
                .await;
                None
            }
        }
    }

    async fn release(&self, n: u32, lease: &Lease) {
        self.invoke(Op::Release, n, None).await;
        let result = self.lock.release(lease).await;
        let (outcome, error) = match &result {
            Ok(()) => (Outcome::Ok, None),
            Err(e) => (outcome_of(e), Some(e.to_string())),
        };
        let mut after = lease.clone();
        after.depth = lease.depth.saturating_sub(1);
        self.complete(Op::Release, n, outcome, Some(&after), None, None, error)
            .await;
    }

    async fn cycle_once(&self, n: u32) {
        let Some(lease) = self.acquire(n).await else {
            return;
        };
        let inner = if self.group.nested {
            self.acquire(n).await
        } else {
            None
        };
        for _step in 0..self.group.writes {
            let went_on = if self.reads_only() {
                self.read_and_work(n, &lease).await.is_some()
            } else {
                self.sell(n, &lease).await
            };
            if !went_on {
                break;
            }
        }
        if let Some(inner) = inner {
            self.release(n, &inner).await;
        }
        self.release(n, &lease).await;
    }

    /// One sale: read, work, check, write. False when the client must stop
    /// (sold out, lease lost, the store unreachable).
    async fn sell(&self, n: u32, lease: &Lease) -> bool {
        let Some(stock) = self.read_and_work(n, lease).await else {
            return false;
        };
        self.invoke(Op::Check, n, None).await;
        if let Err(e) = self.lock.before_write(lease).await {
            self.complete(
                Op::Check,
                n,
                Outcome::Fail,
                Some(lease),
                None,
                None,
                Some(e.to_string()),
            )
            .await;
            return false;
        }
        self.complete(Op::Check, n, Outcome::Ok, Some(lease), None, None, None)
            .await;
        let value = stock - 1;
        self.invoke(Op::Write, n, Some(value)).await;
        match self.store.write(value, lease.fence).await {
            Ok(()) => {
                self.complete(
                    Op::Write,
                    n,
                    Outcome::Ok,
                    None,
                    Some(value),
                    lease.fence,
                    None,
                )
                .await;
                true
            }
            Err(e) => {
                self.complete(
                    Op::Write,
                    n,
                    e.outcome(),
                    None,
                    Some(value),
                    lease.fence,
                    Some(e.to_string()),
                )
                .await;
                false
            }
        }
    }

    /// A sale's first half, all that a reader does: read the stock and
    /// work. The stock read, or `None` when the client must stop (sold
    /// out, the store unreachable).
    async fn read_and_work(&self, n: u32, lease: &Lease) -> Option<i64> {
        self.invoke(Op::Read, n, None).await;
        let stock = match self.store.read(lease.fence).await {
            Ok(stock) => {
                self.complete(
                    Op::Read,
                    n,
                    Outcome::Ok,
                    None,
                    Some(stock),
                    lease.fence,
                    None,
                )
                .await;
                stock
            }
            Err(e) => {
                self.complete(
                    Op::Read,
                    n,
                    e.outcome(),
                    None,
                    None,
                    lease.fence,
                    Some(e.to_string()),
                )
                .await;
                return None;
            }
        };
        if stock <= 0 {
            return None;
        }
        if self.group.critical_section_ms > 0 {
            self.clock
                .sleep(Duration::from_millis(self.group.critical_section_ms))
                .await;
        }
        Some(stock)
    }
}
