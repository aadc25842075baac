//! One measured slice of each workload. A slice runs one implementation for
//! a fixed time (a target's contention pair: a fixed number of hand-offs);
//! the measurement interleaves slices of the compared implementations
//! round after round.

use crate::client::{Client, Floor, info_field};
use crate::stats::{Waits, histogram, record};
use hdrhistogram::Histogram;
use locks::Owner;
use redis::aio::MultiplexedConnection;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Cycles before each slice that are not measured (connections warm,
/// scripts loaded, caches hot).
pub const WARMUP_CYCLES: u32 = 20;

/// The most operations one slice may make: a bound on every loop even if
/// the clock misbehaved.
const MAX_OPS: u64 = 50_000_000;

/// What one uncontended slice measured.
#[derive(Debug)]
pub struct CycleSample {
    /// Completed cycles (or PINGs).
    pub ops: u64,
    /// Failed cycles (counted, not timed).
    pub errors: u64,
    /// Time measured.
    pub elapsed: Duration,
    /// Latency of each cycle in µs.
    pub hist: Histogram<u64>,
    /// The median time of one cycle (failed ones included), when each was
    /// timed on its own (an interleaved window's sides).
    pub median_cycle: Option<Duration>,
}

impl CycleSample {
    /// Cycles per second.
    pub fn rate(&self) -> f64 {
        per_second(self.ops, self.elapsed)
    }

    /// Cycles per second at the median cycle time, scaled by the share of
    /// cycles that succeeded; [`rate`](Self::rate) when cycles were not
    /// timed one by one. Unlike the mean, one cycle that the machine
    /// stalled (the hypervisor took the CPU, a migration) cannot move it:
    /// a pair's two sides alternate cycle by cycle, and such a stall lands
    /// on whichever side was running, a coin toss that only noise comes of.
    pub fn typical_rate(&self) -> f64 {
        match self.median_cycle {
            Some(median) if self.ops > 0 => {
                let succeeded = self.ops as f64 / (self.ops + self.errors) as f64;
                succeeded / median.as_secs_f64().max(1e-9)
            }
            _ => self.rate(),
        }
    }
}

/// The median of `times` (the upper one of an even count); `None` when
/// there are none.
pub fn median_time(mut times: Vec<Duration>) -> Option<Duration> {
    if times.is_empty() {
        return None;
    }
    let middle = times.len() / 2;
    Some(*times.select_nth_unstable(middle).1)
}

/// `count` per second of `elapsed` (a zero-length slice counts as 1 ns).
fn per_second(count: u64, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(1e-9)
}

/// One task running acquire + release on `key` back to back, for `slice`.
pub async fn uncontended(
    client: &Client,
    key: &str,
    ttl: Duration,
    slice: Duration,
) -> CycleSample {
    let owner = Owner::new(format!("bench-{}", std::process::id()), 0);
    back_to_back(slice, || cycle(client, key, &owner, ttl)).await
}

/// One acquire + release of `key`; whether both succeeded.
async fn cycle(client: &Client, key: &str, owner: &Owner, ttl: Duration) -> bool {
    match client.try_acquire(key, owner, ttl).await {
        Ok(Some(held)) => client.release(key, held).await.is_ok(),
        _ => false,
    }
}

/// Two implementations' acquire + release cycles interleaved one by one
/// for `window`, in the order A B B A A B B A ... (B first when `a_first`
/// is false), each timed alone: every cycle of one side runs within a
/// cycle of the other's, on the same machine state, so a shift of the
/// machine (the round trip changing mode, a noisy neighbour) falls on
/// both sides alike instead of on whichever slice it hit. Each side's
/// `elapsed` is the time its own cycles took, failed ones included, and
/// its `median_cycle` the median of those cycles' times.
pub async fn uncontended_interleaved(
    a: &Client,
    b: &Client,
    keys: (&str, &str),
    ttl: Duration,
    window: Duration,
    a_first: bool,
) -> (CycleSample, CycleSample) {
    let owner = Owner::new(format!("bench-{}", std::process::id()), 0);
    for _ in 0..WARMUP_CYCLES {
        cycle(a, keys.0, &owner, ttl).await;
        cycle(b, keys.1, &owner, ttl).await;
    }
    let mut sides = [Timed::new(), Timed::new()];
    let start = Instant::now();
    for step in 0..MAX_OPS {
        // A B, then B A: each side goes first as often as the other, so
        // whatever the one before leaves behind (a warm cache, a socket
        // just read) is shared evenly.
        let a_now = (step % 2 == 0) == a_first;
        for side in if a_now { [0, 1] } else { [1, 0] } {
            let (client, key) = if side == 0 { (a, keys.0) } else { (b, keys.1) };
            let t0 = Instant::now();
            let ok = cycle(client, key, &owner, ttl).await;
            sides[side].add(ok, t0.elapsed());
        }
        if start.elapsed() >= window {
            break;
        }
    }
    let [a, b] = sides;
    (a.sample(), b.sample())
}

/// One side's cycles of an interleaved window, as they are timed.
struct Timed {
    ops: u64,
    errors: u64,
    elapsed: Duration,
    hist: Histogram<u64>,
    /// Every cycle's time, failed ones included, for the median.
    cycles: Vec<Duration>,
}

impl Timed {
    fn new() -> Timed {
        Timed {
            ops: 0,
            errors: 0,
            elapsed: Duration::ZERO,
            hist: histogram(),
            cycles: Vec::new(),
        }
    }

    /// A cycle that took `took`: timed when it succeeded, counted either way.
    fn add(&mut self, ok: bool, took: Duration) {
        self.elapsed += took;
        self.cycles.push(took);
        if ok {
            record(&mut self.hist, took.as_micros() as u64);
            self.ops += 1;
        } else {
            self.errors += 1;
        }
    }

    fn sample(self) -> CycleSample {
        CycleSample {
            ops: self.ops,
            errors: self.errors,
            elapsed: self.elapsed,
            hist: self.hist,
            median_cycle: median_time(self.cycles),
        }
    }
}

/// `PING` back to back on the floor's connection, for `slice`.
pub async fn ping(floor: &Floor, slice: Duration) -> CycleSample {
    back_to_back(slice, || async { floor.ping().await.is_ok() }).await
}

/// Runs `op` (true when it succeeded) [`WARMUP_CYCLES`] times unmeasured,
/// then back to back for `slice`, timing each success.
async fn back_to_back<F, Fut>(slice: Duration, op: F) -> CycleSample
where
    F: Fn() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..WARMUP_CYCLES {
        op().await;
    }
    let mut hist = histogram();
    let (mut ops, mut errors) = (0, 0);
    let start = Instant::now();
    for _ in 0..MAX_OPS {
        let t0 = Instant::now();
        if op().await {
            record(&mut hist, t0.elapsed().as_micros() as u64);
            ops += 1;
        } else {
            errors += 1;
        }
        if start.elapsed() >= slice {
            break;
        }
    }
    CycleSample {
        ops,
        errors,
        elapsed: start.elapsed(),
        hist,
        median_cycle: None,
    }
}

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

/// What one buyer counted.
struct Buyer {
    sales: u64,
    errors: u64,
}

/// What one holder counted.
struct Holder {
    cycles: u64,
    lost: u64,
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

/// What one inventory slice measured.
#[derive(Debug)]
pub struct SaleSample {
    /// Sales the buyers counted.
    pub sales: u64,
    /// Sales beyond what the stock lost: lost updates.
    pub oversold: i64,
    /// Failed purchases (lock errors).
    pub errors: u64,
    /// Time measured.
    pub elapsed: Duration,
}

impl SaleSample {
    /// Sales per second.
    pub fn rate(&self) -> f64 {
        per_second(self.sales, self.elapsed)
    }
}

/// The stock a sale starts from: large enough never to run out.
pub const INITIAL_STOCK: i64 = 1_000_000_000;

/// The sources' inventory sale: `buyers` tasks each lock, `GET` the stock,
/// `SET` it one lower and unlock, for `slice`. Oversold = sales counted −
/// (initial − final stock), measured on the real server.
pub async fn inventory(
    client: Arc<Client>,
    stock_conn: &MultiplexedConnection,
    prefix: &str,
    buyers: usize,
    ttl: Duration,
    slice: Duration,
) -> anyhow::Result<SaleSample> {
    let stock_key = format!("{prefix}stock");
    let lock_key = format!("{prefix}stock-lock");
    let mut c = stock_conn.clone();
    let () = redis::cmd("SET")
        .arg(&stock_key)
        .arg(INITIAL_STOCK)
        .query_async(&mut c)
        .await?;
    let run = for_slice(buyers, slice, |b, deadline| {
        let (client, mut conn) = (client.clone(), stock_conn.clone());
        let (stock_key, lock_key) = (stock_key.clone(), lock_key.clone());
        async move {
            let owner = Owner::new(format!("buyer-{}", std::process::id()), b as u64);
            let (mut sales, mut errors) = (0u64, 0u64);
            for _ in 0..MAX_OPS {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                let held = match tokio::time::timeout(
                    deadline - now,
                    client.acquire(&lock_key, &owner, ttl),
                )
                .await
                {
                    Ok(Ok(h)) => h,
                    Ok(Err(_)) => {
                        errors += 1;
                        continue;
                    }
                    Err(_) => break,
                };
                let sold = async {
                    client.before_write(&held).await?;
                    let stock: i64 = redis::cmd("GET")
                        .arg(&stock_key)
                        .query_async(&mut conn)
                        .await?;
                    if stock > 0 {
                        let () = redis::cmd("SET")
                            .arg(&stock_key)
                            .arg(stock - 1)
                            .query_async(&mut conn)
                            .await?;
                    }
                    anyhow::Ok(stock > 0)
                }
                .await;
                match sold {
                    Ok(true) => sales += 1,
                    Ok(false) => {}
                    Err(_) => errors += 1,
                }
                if client.release(&lock_key, held).await.is_err() {
                    errors += 1;
                }
            }
            Buyer { sales, errors }
        }
    })
    .await;
    let sales = run.results.iter().map(|b| b.sales).sum();
    let errors = run.results.iter().map(|b| b.errors).sum();
    let left: i64 = redis::cmd("GET")
        .arg(&stock_key)
        .query_async(&mut c)
        .await?;
    Ok(SaleSample {
        sales,
        oversold: sales as i64 - (INITIAL_STOCK - left),
        errors,
        elapsed: run.elapsed,
    })
}

/// What one watchdog slice measured.
#[derive(Debug)]
pub struct HoldSample {
    /// Completed cycles.
    pub cycles: u64,
    /// Holds that found their lease lost before the end of the section.
    pub lost: u64,
    /// Time measured.
    pub elapsed: Duration,
}

impl HoldSample {
    /// Cycles per second.
    pub fn rate(&self) -> f64 {
        per_second(self.cycles, self.elapsed)
    }
}

/// `holders` tasks, each on its own key, acquire, hold for `cs` (checking
/// the lease at the end, as a write would) and release, for `slice`.
pub async fn long_sections(
    client: Arc<Client>,
    prefix: &str,
    holders: usize,
    ttl: Duration,
    cs: Duration,
    slice: Duration,
) -> HoldSample {
    let run = for_slice(holders, slice, |h, deadline| {
        let client = client.clone();
        let key = format!("{prefix}hold-{h}");
        async move {
            let owner = Owner::new(format!("holder-{}", std::process::id()), h as u64);
            let (mut cycles, mut lost) = (0u64, 0u64);
            for _ in 0..MAX_OPS {
                if Instant::now() >= deadline {
                    break;
                }
                let Ok(held) = client.acquire(&key, &owner, ttl).await else {
                    lost += 1;
                    continue;
                };
                tokio::time::sleep(cs).await;
                if client.before_write(&held).await.is_err() {
                    lost += 1;
                }
                if client.release(&key, held).await.is_err() {
                    lost += 1;
                }
                cycles += 1;
            }
            Holder { cycles, lost }
        }
    })
    .await;
    HoldSample {
        cycles: run.results.iter().map(|h| h.cycles).sum(),
        lost: run.results.iter().map(|h| h.lost).sum(),
        elapsed: run.elapsed,
    }
}

/// `calls` of `EVALSHA` the server has served (INFO commandstats), to
/// count the watchdog's renewals from the server's side.
pub async fn evalsha_calls(conn: &MultiplexedConnection) -> u64 {
    info_field(conn, "commandstats", "cmdstat_evalsha:calls=")
        .await
        .as_deref()
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(cycles_us: &[u64], failed: usize) -> CycleSample {
        let mut t = Timed::new();
        for (i, us) in cycles_us.iter().enumerate() {
            t.add(i >= failed, Duration::from_micros(*us));
        }
        t.sample()
    }

    #[test]
    fn one_stalled_cycle_does_not_move_the_typical_rate_but_drags_the_mean() {
        let mut cycles = vec![100; 19];
        cycles.push(10_000);
        let s = timed(&cycles, 0);
        assert!((s.typical_rate() - 10_000.0).abs() < 1e-6);
        // The mean counts the stall: 20 cycles in 11.9 ms.
        assert!((s.rate() - 20.0 / 0.0119).abs() < 1e-6);
    }

    #[test]
    fn failed_cycles_take_their_share_off_the_typical_rate() {
        let s = timed(&[100; 10], 5);
        assert_eq!(s.ops, 5);
        assert!((s.typical_rate() - 5_000.0).abs() < 1e-6);
    }

    #[test]
    fn a_sample_without_cycle_times_falls_back_to_the_mean_rate() {
        let s = CycleSample {
            ops: 10,
            errors: 0,
            elapsed: Duration::from_millis(5),
            hist: histogram(),
            median_cycle: None,
        };
        assert!((s.typical_rate() - 2_000.0).abs() < 1e-6);
        assert_eq!(median_time(Vec::new()), None);
        assert_eq!(
            median_time(vec![Duration::from_micros(3), Duration::from_micros(1)]),
            Some(Duration::from_micros(3))
        );
    }
}
