//! Uncontended slices: one task's acquire + release cycles back to back,
//! two implementations' cycles interleaved one by one, and `PING` round
//! trips.

use super::{MAX_OPS, per_second};
use crate::client::{Client, Floor};
use crate::stats::{histogram, record};
use hdrhistogram::Histogram;
use locks::Owner;
use std::time::{Duration, Instant};

/// Cycles before each slice that are not measured (connections warm,
/// scripts loaded, caches hot).
pub const WARMUP_CYCLES: u32 = 20;

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
