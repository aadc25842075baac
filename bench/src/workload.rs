//! One measured slice of each workload. A slice runs one implementation for
//! a fixed time (a target's contention pair: a fixed number of hand-offs);
//! the measurement interleaves slices of the compared implementations
//! round after round. One file per kind of slice, as in `measure/`:
//! uncontended cycles and `PING`s, contention, the hand-off between
//! clients of their own, the inventory sale, long sections under the
//! watchdog; the task runner they share is here.

mod contention;
mod handoff;
mod inventory;
mod uncontended;
mod watchdog;

pub use contention::{ContentionSample, SliceEnd, WorkerCount, contention};
pub use handoff::{DRAIN_LIMIT, HandoffSample, handoff, warm_up};
pub use inventory::{INITIAL_STOCK, SaleSample, inventory};
pub use uncontended::{
    CycleSample, WARMUP_CYCLES, median_time, ping, uncontended, uncontended_interleaved,
};
pub use watchdog::{HoldSample, evalsha_calls, long_sections};

use std::time::{Duration, Instant};

/// The most operations one slice may make: a bound on every loop even if
/// the clock misbehaved.
const MAX_OPS: u64 = 50_000_000;

/// `count` per second of `elapsed` (a zero-length slice counts as 1 ns).
fn per_second(count: u64, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(1e-9)
}

/// What the tasks of one slice returned, and how long they all took.
struct Finished<T> {
    /// The results of the tasks that finished; a task that panicked counts
    /// for nothing, as its slice's work is lost.
    results: Vec<T>,
    /// From the start until the last task ended.
    elapsed: Duration,
}

/// Spawns `count` tasks, task `i` running `task(i, deadline)` with the
/// deadline `slice` from now, and waits for them all.
async fn for_slice<T, F, Fut>(count: usize, slice: Duration, task: F) -> Finished<T>
where
    F: Fn(usize, Instant) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let start = Instant::now();
    let deadline = start + slice;
    let tasks: Vec<_> = (0..count)
        .map(|i| tokio::spawn(task(i, deadline)))
        .collect();
    let mut results = Vec::new();
    for handle in tasks {
        if let Ok(result) = handle.await {
            results.push(result);
        }
    }
    Finished {
        results,
        elapsed: start.elapsed(),
    }
}
