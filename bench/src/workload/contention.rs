//! Contention slices: many tasks of one client on one key (or a few),
//! counted in µs and in hand-offs, ending after a time or at a hand-off.

use super::{MAX_OPS, for_slice, per_second};
use crate::client::Client;
use crate::stats::Waits;
use locks::Owner;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// What one contention slice measured.
#[derive(Debug)]
pub struct ContentionSample {
    /// Acquisitions by all workers.
    pub acquisitions: u64,
    /// Failed acquires or releases.
    pub errors: u64,
    /// Time measured.
    pub elapsed: Duration,
    /// Wait (acquire call to lease) of each acquisition, and of each wait
    /// still open when the slice ended (at its open time: a lower bound).
    pub waits: Waits,
    /// The same waits in hand-offs ([`WorkerCount::handoffs`]).
    pub handoffs: Waits,
    /// Acquisitions of each worker.
    pub per_worker: Vec<u64>,
}

impl ContentionSample {
    /// Acquisitions per second.
    pub fn rate(&self) -> f64 {
        per_second(self.acquisitions, self.elapsed)
    }

    /// Fewest / most acquisitions of any worker (1 = perfectly even).
    pub fn fairness(&self) -> f64 {
        let most = self.per_worker.iter().copied().max().unwrap_or(0);
        let fewest = self.per_worker.iter().copied().min().unwrap_or(0);
        if most == 0 {
            0.0
        } else {
            fewest as f64 / most as f64
        }
    }

    /// Workers that never got the lock in the slice.
    pub fn starved(&self) -> usize {
        self.per_worker.iter().filter(|n| **n == 0).count()
    }

    /// The sample of the `workers` of one slice that took `elapsed`.
    pub fn of_workers(
        workers: impl IntoIterator<Item = WorkerCount>,
        elapsed: Duration,
    ) -> ContentionSample {
        let mut sample = ContentionSample {
            acquisitions: 0,
            errors: 0,
            elapsed,
            waits: Waits::default(),
            handoffs: Waits::default(),
            per_worker: Vec::new(),
        };
        for worker in workers {
            sample.waits.add(&worker.waits);
            sample.handoffs.add(&worker.handoffs);
            sample.acquisitions += worker.acquisitions;
            sample.errors += worker.errors;
            sample.per_worker.push(worker.acquisitions);
        }
        sample
    }
}

/// What one contention worker counted in a slice. The worker's loop only
/// reports what happened; the bookkeeping is here, so a made-up run can
/// drive it without Redis.
#[derive(Debug, Default)]
pub struct WorkerCount {
    /// Its waits, completed and (at most one) still open at the end.
    pub waits: Waits,
    /// The same waits counted in hand-offs instead of µs: the lock's
    /// acquisitions, by any worker, from the start of a wait to its end
    /// (its own included, so at least 1), or to the slice's end for an
    /// open one. A stall of the machine stretches a wait in µs but hands
    /// the lock to no one, so this is the lock's own share of the wait.
    pub handoffs: Waits,
    /// Acquisitions.
    pub acquisitions: u64,
    /// Failed acquires or releases.
    pub errors: u64,
}

impl WorkerCount {
    /// Got the lock after waiting `us` and `handoffs` hand-offs (its own
    /// included).
    pub fn acquired(&mut self, us: u64, handoffs: u64) {
        self.waits.completed(us);
        self.handoffs.completed(handoffs);
        self.acquisitions += 1;
    }

    /// An acquire or a release failed.
    pub fn failed(&mut self) {
        self.errors += 1;
    }

    /// The slice ended `us` and `handoffs` hand-offs (counting the one
    /// still to come) into a wait: it lasted at least that long.
    pub fn still_waiting_at_end(&mut self, us: u64, handoffs: u64) {
        self.waits.still_open(us);
        self.handoffs.still_open(handoffs);
    }
}

/// A tiny seeded generator for key choice (no dependency, same sequence
/// for every implementation).
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Where a contention slice ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceEnd {
    /// After this long.
    After(Duration),
    /// At the lock's `handoffs`-th acquisition, or after `at_most` if it
    /// has not been handed that often by then. Counted in hand-offs, a
    /// slice holds the same share of the lock's work however fast the
    /// machine runs at that moment, so what is read off it in hand-offs
    /// (fairness, a wait's tail, a wait still open at the end) does not
    /// move with the machine's speed.
    AtHandoff {
        /// Acquisitions by all workers that end the slice.
        handoffs: u64,
        /// The longest the slice may take.
        at_most: Duration,
    },
}

impl SliceEnd {
    /// The longest the slice may take.
    pub fn at_most(self) -> Duration {
        match self {
            SliceEnd::After(time) | SliceEnd::AtHandoff { at_most: time, .. } => time,
        }
    }

    /// The acquisitions that end the slice (none: only time ends it).
    fn handoffs(self) -> Option<u64> {
        match self {
            SliceEnd::After(_) => None,
            SliceEnd::AtHandoff { handoffs, .. } => Some(handoffs),
        }
    }
}

/// The lock's acquisitions in one contention slice, by every worker: the
/// clock of the waits in hand-offs, and what ends a slice counted in them.
struct Handoffs {
    count: AtomicU64,
    /// The acquisition that ends the slice, if one does.
    limit: Option<u64>,
    /// Set when that acquisition happened, which ends every wait.
    ended: tokio::sync::watch::Sender<bool>,
    /// When it happened.
    ended_at: OnceLock<Instant>,
}

impl Handoffs {
    fn new(end: SliceEnd) -> Handoffs {
        Handoffs {
            count: AtomicU64::new(0),
            limit: end.handoffs(),
            ended: tokio::sync::watch::Sender::new(false),
            ended_at: OnceLock::new(),
        }
    }

    fn so_far(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Counts one acquisition; the one at the limit ends the slice.
    /// Returns the count with it.
    fn acquired(&self) -> u64 {
        let now = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        if self.limit == Some(now) {
            let _ = self.ended_at.set(Instant::now());
            self.ended.send_replace(true);
        }
        now
    }

    fn has_ended(&self) -> bool {
        *self.ended.borrow()
    }
}

/// `workers` tasks of one client, each acquiring and at once releasing a
/// key out of `keys` (1: all on one key; more: a random one each time),
/// until `end`. The critical section is empty: this measures handoff.
pub async fn contention(
    client: Arc<Client>,
    prefix: &str,
    workers: usize,
    keys: usize,
    ttl: Duration,
    end: SliceEnd,
) -> ContentionSample {
    let handed = Arc::new(Handoffs::new(end));
    let start = Instant::now();
    let run = for_slice(workers, end.at_most(), |w, deadline| {
        let client = client.clone();
        let prefix = prefix.to_string();
        let handed = handed.clone();
        async move {
            let owner = Owner::new(format!("bench-{}", std::process::id()), w as u64);
            let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ (w as u64 + 1));
            let mut counted = WorkerCount::default();
            let mut ended = handed.ended.subscribe();
            for _ in 0..MAX_OPS {
                let now = Instant::now();
                if now >= deadline || handed.has_ended() {
                    break;
                }
                let key = format!("{prefix}{}", rng.next() % keys as u64);
                let t0 = Instant::now();
                let handed_before = handed.so_far();
                let acquire =
                    tokio::time::timeout(deadline - now, client.acquire(&key, &owner, ttl));
                // The end of the slice first: it is set before the
                // acquisition that ended it releases, so no wait that
                // ends after it counts as an acquisition.
                let outcome = tokio::select! {
                    biased;
                    _ = ended.wait_for(|ended| *ended) => None,
                    outcome = acquire => outcome.ok(),
                };
                match outcome {
                    Some(Ok(held)) => {
                        let handed_now = handed.acquired();
                        counted
                            .acquired(t0.elapsed().as_micros() as u64, handed_now - handed_before);
                        if client.release(&key, held).await.is_err() {
                            counted.failed();
                        }
                    }
                    Some(Err(_)) => counted.failed(),
                    // Still waiting at the end: a lower bound on that wait,
                    // which must count, or a starved worker would not.
                    None => counted.still_waiting_at_end(
                        t0.elapsed().as_micros() as u64,
                        handed.so_far() - handed_before + 1,
                    ),
                }
            }
            counted
        }
    })
    .await;
    let elapsed = match handed.ended_at.get() {
        Some(at) => at.duration_since(start),
        None => {
            let slice = end.at_most();
            slice.max(run.elapsed.min(slice + Duration::from_millis(1)))
        }
    };
    ContentionSample::of_workers(run.results, elapsed)
}
