//! Hand-off slices: many clients, each with connections of its own, take
//! turns on one key with an empty critical section; counted are the
//! lock's passes from one client to another and the wake-ups of its
//! waiters, as the lock code counts them ([`locks::Wakeups`]).

use super::per_second;
use crate::client::Client;
use locks::{Owner, Wakeups};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long the waits still open when a slice ends may take to be
/// served: every waiter is served and releases, so that nothing is left
/// on the server (an etcd waiter dropped mid-wait would leave its key
/// and lease behind for a whole TTL).
pub const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// What one hand-off slice counted, up to its end (the waits served
/// after it, while draining, are not counted).
#[derive(Debug, Clone)]
pub struct HandoffSample {
    /// Acquisitions by all clients.
    pub acquisitions: u64,
    /// Acquisitions by a client other than the one that held the lock
    /// last: the lock handed from one client to another. A client that
    /// releases and takes the lock straight back hands nothing off.
    pub handoffs: u64,
    /// The waiters' wake-ups the lock code counted.
    pub wakeups: u64,
    /// Failed acquires or releases (while draining too).
    pub errors: u64,
    /// Waits not served within [`DRAIN_LIMIT`] after the end (dropped).
    pub abandoned: u64,
    /// Time measured.
    pub elapsed: Duration,
    /// Acquisitions of each client.
    pub per_client: Vec<u64>,
}

impl HandoffSample {
    /// Hand-offs per second.
    pub fn handoffs_per_s(&self) -> f64 {
        per_second(self.handoffs, self.elapsed)
    }

    /// Acquisitions per second.
    pub fn acq_per_s(&self) -> f64 {
        per_second(self.acquisitions, self.elapsed)
    }

    /// Wake-ups per hand-off; `None` when nothing was handed off.
    pub fn wakeups_per_handoff(&self) -> Option<f64> {
        (self.handoffs > 0).then(|| self.wakeups as f64 / self.handoffs as f64)
    }

    /// Fewest / most acquisitions of any client (1 = perfectly even).
    pub fn fairness(&self) -> f64 {
        let most = self.per_client.iter().copied().max().unwrap_or(0);
        let fewest = self.per_client.iter().copied().min().unwrap_or(0);
        if most == 0 {
            0.0
        } else {
            fewest as f64 / most as f64
        }
    }
}

/// No client has held the lock yet.
const NOBODY: usize = usize::MAX;

/// The slice's counters, shared by its clients' tasks.
struct Counters {
    acquisitions: AtomicU64,
    handoffs: AtomicU64,
    last_holder: AtomicUsize,
    per_client: Vec<AtomicU64>,
}

impl Counters {
    /// Client `c` got the lock.
    fn acquired(&self, c: usize) {
        self.acquisitions.fetch_add(1, Ordering::Relaxed);
        self.per_client[c].fetch_add(1, Ordering::Relaxed);
        let before = self.last_holder.swap(c, Ordering::Relaxed);
        if before != NOBODY && before != c {
            self.handoffs.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One cycle of each client in turn on `key`, uncontended: connections
/// made and scripts loaded before a slice measures anything. Errors are
/// the caller's to see in the slice.
pub async fn warm_up(clients: &[Arc<Client>], key: &str, ttl: Duration) {
    for (i, client) in clients.iter().enumerate() {
        let owner = Owner::new(format!("bench-{}", std::process::id()), i as u64);
        if let Ok(Some(held)) = client.try_acquire(key, &owner, ttl).await {
            let _ = client.release(key, held).await;
        }
    }
}

/// Each of `clients` in a task of its own, acquiring `key` and at once
/// releasing it, for `slice`; `wakeups` is the counter their contexts
/// share. What was counted is read once at the end of the slice, all at
/// the same moment; the waits still open then are served (and released)
/// before this returns, within [`DRAIN_LIMIT`].
pub async fn handoff(
    clients: &[Arc<Client>],
    key: &str,
    ttl: Duration,
    wakeups: Arc<Wakeups>,
    slice: Duration,
) -> HandoffSample {
    let counters = Arc::new(Counters {
        acquisitions: AtomicU64::new(0),
        handoffs: AtomicU64::new(0),
        last_holder: AtomicUsize::new(NOBODY),
        per_client: clients.iter().map(|_| AtomicU64::new(0)).collect(),
    });
    let wakeups_before = wakeups.total();
    let start = Instant::now();
    let deadline = start + slice;
    // Reads every counter at the end, at one moment: the clients' tasks
    // go on until their waits are served.
    let reading = {
        let counters = counters.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(deadline.into()).await;
            let elapsed = start.elapsed();
            HandoffSample {
                acquisitions: counters.acquisitions.load(Ordering::Relaxed),
                handoffs: counters.handoffs.load(Ordering::Relaxed),
                wakeups: wakeups.total().saturating_sub(wakeups_before),
                errors: 0,
                abandoned: 0,
                elapsed,
                per_client: counters
                    .per_client
                    .iter()
                    .map(|n| n.load(Ordering::Relaxed))
                    .collect(),
            }
        })
    };
    let tasks: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(c, client)| {
            let (client, counters, key) = (client.clone(), counters.clone(), key.to_string());
            tokio::spawn(async move {
                let owner = Owner::new(format!("bench-{}", std::process::id()), c as u64);
                let (mut errors, mut abandoned) = (0, 0);
                while Instant::now() < deadline {
                    let served_by = deadline + DRAIN_LIMIT;
                    let acquire = client.acquire(&key, &owner, ttl);
                    match tokio::time::timeout_at(served_by.into(), acquire).await {
                        Ok(Ok(held)) => {
                            counters.acquired(c);
                            if client.release(&key, held).await.is_err() {
                                errors += 1;
                            }
                        }
                        Ok(Err(_)) => errors += 1,
                        Err(_) => abandoned += 1,
                    }
                }
                (errors, abandoned)
            })
        })
        .collect();
    let (mut errors, mut abandoned) = (0, 0);
    for task in tasks {
        // A task that panicked served nothing more: its wait is lost.
        let (e, a) = task.await.unwrap_or((0, 1));
        errors += e;
        abandoned += a;
    }
    let mut sample = reading.await.unwrap_or_else(|_| HandoffSample {
        acquisitions: 0,
        handoffs: 0,
        wakeups: 0,
        errors: 0,
        abandoned: 0,
        elapsed: slice,
        per_client: vec![0; clients.len()],
    });
    sample.errors = errors;
    sample.abandoned = abandoned;
    sample
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(clients: usize) -> Counters {
        Counters {
            acquisitions: AtomicU64::new(0),
            handoffs: AtomicU64::new(0),
            last_holder: AtomicUsize::new(NOBODY),
            per_client: (0..clients).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    #[test]
    fn only_a_pass_to_another_client_is_a_handoff() {
        let c = counters(3);
        for holder in [0, 0, 0, 1, 2, 2, 0] {
            c.acquired(holder);
        }
        assert_eq!(c.acquisitions.load(Ordering::Relaxed), 7);
        // 0 → 1, 1 → 2, 2 → 0: the first acquisition takes the lock from
        // nobody, and taking it back is no hand-off.
        assert_eq!(c.handoffs.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn wakeups_per_handoff_need_a_handoff() {
        let sample = HandoffSample {
            acquisitions: 10,
            handoffs: 4,
            wakeups: 10,
            errors: 0,
            abandoned: 0,
            elapsed: Duration::from_millis(100),
            per_client: vec![5, 5],
        };
        assert_eq!(sample.wakeups_per_handoff(), Some(2.5));
        assert!((sample.handoffs_per_s() - 40.0).abs() < 1e-9);
        assert_eq!(sample.fairness(), 1.0);
        let none = HandoffSample {
            handoffs: 0,
            ..sample
        };
        assert_eq!(none.wakeups_per_handoff(), None);
    }
}
