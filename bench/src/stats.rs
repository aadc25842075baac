//! Latency histograms, medians with their spread, and pairwise ratios.

use hdrhistogram::Histogram;
use serde::Serialize;

/// A latency histogram in microseconds, 1 µs to 100 s, 3 significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000, 3).expect("valid histogram bounds")
}

/// Records `us` (clamped into the histogram's range).
pub fn record(h: &mut Histogram<u64>, us: u64) {
    let _ = h.record(us.clamp(1, 100_000_000));
}

/// The value at quantile `q` (0..=1), 0 when empty.
pub fn quantile_us(h: &Histogram<u64>, q: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(q)
    }
}

/// A rate measured once per round.
#[derive(Debug, Clone, Default)]
pub struct Rounds(pub Vec<f64>);

/// Median and range of a per-round figure.
#[derive(Debug, Clone, Copy, Serialize, Default)]
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

    /// The median of the round-by-round ratios `self[r] / other[r]`: each
    /// pair was measured back to back, so slow drift of a shared, noisy
    /// machine cancels out of the ratio.
    pub fn ratio_to(&self, other: &Rounds) -> Option<f64> {
        let ratios: Vec<f64> = self
            .0
            .iter()
            .zip(&other.0)
            .filter(|(_, b)| **b > 0.0)
            .map(|(a, b)| a / b)
            .collect();
        if ratios.is_empty() {
            None
        } else {
            Some(median(&ratios))
        }
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
