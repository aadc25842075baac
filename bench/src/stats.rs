//! Latency histograms, waits with their right-censored tail, medians with
//! their spread, and round-by-round ratios.

use hdrhistogram::Histogram;
use serde::Serialize;

/// The largest value a [`histogram`] holds: 100 s in µs.
const HIGHEST_US: u64 = 100_000_000;

/// A latency histogram in microseconds, 1 µs to 100 s, 3 significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_US, 3).expect("valid histogram bounds")
}

/// Records `us` (clamped into the histogram's range).
pub fn record(h: &mut Histogram<u64>, us: u64) {
    record_n(h, us, 1);
}

/// Records `us` `count` times (clamped into the histogram's range).
pub fn record_n(h: &mut Histogram<u64>, us: u64, count: u64) {
    let _ = h.record_n(us.clamp(1, HIGHEST_US), count);
}

/// The value at quantile `q` (0..=1), 0 when empty.
pub fn quantile_us(h: &Histogram<u64>, q: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(q)
    }
}

/// Waits for a lock: the completed ones, and the ones still open when a
/// slice ended.
///
/// A wait still open at the end is right-censored: it lasted at least its
/// open time, no one knows how much longer. Leaving it out would describe
/// only the workers that got the lock (a starved worker's wait would never
/// count); so it goes into the distribution at its open time, the standard
/// lower-bound treatment. Quantiles then count every waiter, and
/// [`Waits::quantile`] says which of them the censored mass makes lower
/// bounds.
#[derive(Debug, Clone)]
pub struct Waits {
    /// Completed waits (acquire call to lease), µs.
    pub completed: Histogram<u64>,
    /// Waits still open at a slice's end, each at its open time so far, µs.
    pub open: Histogram<u64>,
    /// Longest wait, completed or open, µs (exact, not bucketed).
    pub max_us: u64,
    /// Longest open wait, µs.
    pub open_max_us: u64,
}

/// One quantile of [`Waits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitQuantile {
    /// The quantile of all waits, open ones at their open time, µs.
    pub us: u64,
    /// Whether the true quantile may be larger: the completed waits no
    /// longer than `us` do not by themselves reach the quantile's rank, so
    /// some open wait counted below `us` may in truth have lasted longer.
    pub lower_bound: bool,
}

impl Default for Waits {
    fn default() -> Waits {
        Waits {
            completed: histogram(),
            open: histogram(),
            max_us: 0,
            open_max_us: 0,
        }
    }
}

impl Waits {
    /// A wait of `us` that ended with the lock.
    pub fn completed(&mut self, us: u64) {
        record(&mut self.completed, us);
        self.max_us = self.max_us.max(us);
    }

    /// A wait still open when the slice ended, `us` after it began.
    pub fn still_open(&mut self, us: u64) {
        record(&mut self.open, us);
        self.max_us = self.max_us.max(us);
        self.open_max_us = self.open_max_us.max(us);
    }

    /// Adds the waits of `other` (another worker, slice or round).
    pub fn add(&mut self, other: &Waits) {
        // Same bounds on both sides: adding cannot fail.
        let _ = self.completed.add(&other.completed);
        let _ = self.open.add(&other.open);
        self.max_us = self.max_us.max(other.max_us);
        self.open_max_us = self.open_max_us.max(other.open_max_us);
    }

    /// Waits still open at a slice's end.
    pub fn open_count(&self) -> u64 {
        self.open.len()
    }

    /// Every wait, the open ones at their open time.
    pub fn all(&self) -> Histogram<u64> {
        let mut all = self.completed.clone();
        let _ = all.add(&self.open);
        all
    }

    /// The value at quantile `q` (0..=1) of all waits, open ones included,
    /// and whether it is only a lower bound; 0 (exact) when there are none.
    pub fn quantile(&self, q: f64) -> WaitQuantile {
        let all = self.all();
        if all.is_empty() {
            return WaitQuantile {
                us: 0,
                lower_bound: false,
            };
        }
        // A bucket's highest equivalent value may pass the exact longest
        // wait; no quantile can.
        let us = all.value_at_quantile(q).min(self.max_us.max(1));
        // The rank hdrhistogram looks for. The value is exact when the
        // completed waits alone reach it: however long the open waits
        // really were, at least that many waits are no longer than `us`.
        let rank = ((q.min(1.0) * all.len() as f64).ceil() as u64).max(1);
        WaitQuantile {
            us,
            lower_bound: self.completed.count_between(0, us) < rank,
        }
    }

    /// Whether [`Waits::max_us`] is an open wait's, so only a lower bound.
    pub fn max_is_lower_bound(&self) -> bool {
        !self.open.is_empty() && self.open_max_us >= self.max_us
    }
}

/// A rate measured once per round.
#[derive(Debug, Clone, Default)]
pub struct Rounds(pub Vec<f64>);

/// Median and range of a per-round figure.
#[derive(Debug, Clone, Copy, Serialize, Default, schemars::JsonSchema)]
pub struct Spread {
    /// The median over rounds.
    pub median: f64,
    /// The smallest round.
    pub min: f64,
    /// The largest round.
    pub max: f64,
}

impl Rounds {
    /// Median, min and max.
    pub fn spread(&self) -> Spread {
        Spread {
            median: median(&self.0),
            min: self.0.iter().copied().fold(f64::INFINITY, f64::min),
            max: self.0.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
        .finite()
    }

    /// The round-by-round ratios `self[r] / other[r]` (rounds where
    /// `other` measured nothing left out): both were measured in the same
    /// round, so slow drift of a shared, noisy machine cancels out of each.
    pub fn ratios_to(&self, other: &Rounds) -> Vec<f64> {
        self.0
            .iter()
            .zip(&other.0)
            .filter(|(_, b)| **b > 0.0)
            .map(|(a, b)| a / b)
            .collect()
    }
}

impl Spread {
    fn finite(self) -> Spread {
        let fix = |x: f64| if x.is_finite() { x } else { 0.0 };
        Spread {
            median: fix(self.median),
            min: fix(self.min),
            max: fix(self.max),
        }
    }

    /// Half the range as a percentage of the median.
    pub fn pct(&self) -> f64 {
        if self.median > 0.0 {
            (self.max - self.min) / 2.0 / self.median * 100.0
        } else {
            0.0
        }
    }
}

/// The median of `xs` (0 when empty).
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Rounds a figure for the report (3 significant digits are plenty on a
/// noisy machine).
pub fn round3(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return 0.0;
    }
    let digits = 3 - x.abs().log10().ceil() as i32;
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `completed` waits of `us` each, then one still open at `open_us`.
    fn waits_with_one_open(completed: usize, us: u64, open_us: u64) -> Waits {
        let mut waits = Waits::default();
        for _ in 0..completed {
            waits.completed(us);
        }
        waits.still_open(open_us);
        waits
    }

    #[test]
    fn an_open_wait_counts_at_its_open_time_and_makes_the_tail_a_lower_bound() {
        let waits = waits_with_one_open(99, 50, 1_000_000);
        assert_eq!(waits.open_count(), 1);
        let median = waits.quantile(0.5);
        assert!(median.us < 60 && !median.lower_bound, "{median:?}");
        let top = waits.quantile(0.999);
        assert!(top.us >= 1_000_000 && top.lower_bound, "{top:?}");
        assert_eq!(waits.max_us, 1_000_000);
        assert!(waits.max_is_lower_bound());
    }

    #[test]
    fn a_short_open_wait_below_a_quantile_leaves_it_exact() {
        let waits = waits_with_one_open(1000, 100, 5);
        let p99 = waits.quantile(0.99);
        assert!((100..=101).contains(&p99.us) && !p99.lower_bound, "{p99:?}");
        assert!(!waits.max_is_lower_bound());
        assert_eq!(waits.quantile(1.0).us, 100, "no quantile passes the max");
        // The lowest quantile is the open wait itself: it may have lasted
        // longer, so it is only a lower bound.
        assert!(waits.quantile(0.0001).lower_bound);
    }

    #[test]
    fn no_waits_give_exact_zeros() {
        let waits = Waits::default();
        assert_eq!(
            waits.quantile(0.99),
            WaitQuantile {
                us: 0,
                lower_bound: false
            }
        );
        assert!(!waits.max_is_lower_bound());
    }

    #[test]
    fn adding_waits_keeps_both_parts_and_the_longest() {
        let (mut a, mut b) = (Waits::default(), Waits::default());
        a.completed(10);
        b.still_open(20);
        b.completed(30);
        a.add(&b);
        assert_eq!((a.completed.len(), a.open_count()), (2, 1));
        assert_eq!((a.max_us, a.open_max_us), (30, 20));
        assert_eq!(a.all().len(), 3);
    }
}
