//! A figure with its uncertainty: the median of per-pair (or per-round)
//! values and a 95% bootstrap interval around it, and the rule that says
//! when enough pairs have been measured.
//!
//! Why the median of per-pair values: a pair's two slices ran back to back,
//! so whatever slowed the machine for a while (another process, a slow
//! cross-CPU wake-up mode) slowed both, and cancels out of their ratio;
//! the median then ignores the few pairs a change of mode cut in two.
//! Why no normal approximation: the per-pair values follow no known
//! distribution (bimodal round trips make them anything but normal). The
//! targets' intervals are order statistics ([`Estimate::median_interval`]):
//! whatever the distribution of independent values, the chance that the
//! true median lies between the `l`-th and the `u`-th smallest is a
//! binomial sum, so the 95% holds exactly, where a percentile bootstrap of
//! a median runs short on few values and on heavy tails. The tables keep a
//! percentile bootstrap ([`Estimate::of`]) over their few rounds.

use crate::rng::Seeded;
use crate::stats::median;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Fewest values for a bootstrap interval; fewer give their range.
pub const MIN_FOR_INTERVAL: usize = 5;
/// Resamples of one bootstrap.
pub const RESAMPLES: usize = 2_000;
/// Half-width, as a share of the median, beyond which a figure says
/// nothing: the report shows "too noisy" instead of it.
pub const MEANINGLESS_HALF_WIDTH: f64 = 0.25;

/// How an [`Estimate`]'s bounds were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum IntervalKind {
    /// The 2.5th and 97.5th percentiles of the medians of [`RESAMPLES`]
    /// resamples (percentile bootstrap, 95%).
    Bootstrap95,
    /// The order statistics around the quantile whose binomial coverage
    /// is at least 95% (at most 2.5% on each side), distribution-free.
    OrderStatistic95,
    /// The order-statistic interval widened, where it reaches further, to
    /// the order-statistic interval of the medians of the values' batches
    /// (stretches of time or client processes; see
    /// [`Estimate::median_over_batches`]).
    UnderDrift95,
    /// Too few values for an interval: the smallest and the largest.
    Range,
}

/// Fewest batches whose medians widen an interval: with six, the chance
/// that every batch median lies on one side of the true median is
/// 2 × 2⁻⁶ ≈ 3.1%, so their range is a 96.9% interval.
pub const BATCHES: usize = 6;
/// Fewest values per batch before the batches are used.
pub const MIN_PER_BATCH: usize = 3;

/// Where the median of a repeat run is expected to land: a prediction
/// interval, not a confidence interval. A 95% confidence interval holds
/// the true median 95% of the time, but another run's median carries its
/// own error as well, so it lands outside this run's confidence interval
/// far more often than 5% of the time (about one check in ten here).
/// Built from the batches' medians, which vary as runs do (each batch a
/// fresh process, at a different minute): with `k` of them, spread `s`,
/// the median of a run of as many batches differs from this one's by
/// about `s × √(2/k)`, scaled by Student's t with `k − 1` degrees of
/// freedom, as the spread is itself estimated from `k` values. Never
/// narrower than the confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Repeat {
    /// The interval's lower end.
    pub low: f64,
    /// The interval's upper end.
    pub high: f64,
    /// The chance that a repeat run's median lands inside, e.g. 0.9944.
    pub level: f64,
}

/// The median of some values and an interval around it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Estimate {
    /// The median of the values.
    pub median: f64,
    /// The interval's lower end.
    pub low: f64,
    /// The interval's upper end.
    pub high: f64,
    /// How many values (pairs or rounds).
    pub n: usize,
    /// How the interval was found.
    pub interval: IntervalKind,
    /// Where a repeat run's median is expected to land, when the values
    /// came in enough batches ([`Estimate::with_repeat`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat: Option<Repeat>,
}

impl Estimate {
    /// The median of `values` with a 95% percentile-bootstrap interval of
    /// the median (resampled with the stream of `seed`), or their range
    /// when there are fewer than [`MIN_FOR_INTERVAL`]; `None` when there
    /// are no finite values.
    pub fn of(values: &[f64], seed: u64) -> Option<Estimate> {
        let values: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let n = values.len();
        if n == 0 {
            return None;
        }
        let centre = median(&values);
        if n < MIN_FOR_INTERVAL {
            let low = values.iter().copied().fold(f64::INFINITY, f64::min);
            let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            return Some(Estimate {
                median: centre,
                low,
                high,
                n,
                interval: IntervalKind::Range,
                repeat: None,
            });
        }
        let mut rng = Seeded::new(seed);
        let mut scratch = vec![0.0; n];
        let mut medians: Vec<f64> = (0..RESAMPLES)
            .map(|_| {
                for slot in scratch.iter_mut() {
                    *slot = values[rng.below(n)];
                }
                median_in_place(&mut scratch)
            })
            .collect();
        medians.sort_by(f64::total_cmp);
        Some(Estimate {
            median: centre,
            low: percentile_sorted(&medians, 0.025),
            high: percentile_sorted(&medians, 0.975),
            n,
            interval: IntervalKind::Bootstrap95,
            repeat: None,
        })
    }

    /// The median of `values` with its distribution-free 95% interval
    /// ([`quantile_ranks`] at one half), or their range when there are too
    /// few for one (five or fewer); `None` when there are no finite values.
    pub fn median_interval(values: &[f64]) -> Option<Estimate> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let centre = median(&sorted);
        let (low, high, interval) = match quantile_ranks(n, 0.5) {
            Some((l, u)) => (sorted[l - 1], sorted[u - 1], IntervalKind::OrderStatistic95),
            None => (*sorted.first()?, *sorted.last()?, IntervalKind::Range),
        };
        Some(Estimate {
            median: centre,
            low,
            high,
            n,
            interval,
            repeat: None,
        })
    }

    /// The median of `values`, given in the order they were measured, with
    /// an interval that holds when the machine drifts: the values cut into
    /// [`BATCHES`] consecutive batches, as [`Estimate::median_over_batches`]
    /// takes them.
    ///
    /// Why: the order-statistic interval assumes independent values, and
    /// on a shared machine neighbouring pairs are not: its state (another
    /// tenant, a cross-CPU wake-up mode, the clock speed) lasts for
    /// seconds, so a run's pairs come in stretches that lean one way, and
    /// an interval from them alone is narrower than the figure's real
    /// spread from one run to the next. Batches of consecutive pairs are
    /// far closer to independent than single pairs (batch means, the
    /// classic remedy for correlated simulation output).
    pub fn median_interval_under_drift(values: &[f64]) -> Option<Estimate> {
        let n = values.len();
        if n < BATCHES * MIN_PER_BATCH {
            return Estimate::median_interval(values);
        }
        let batches: Vec<&[f64]> = (0..BATCHES)
            .map(|b| &values[b * n / BATCHES..(b + 1) * n / BATCHES])
            .collect();
        Estimate::median_over_batches(&batches)
    }

    /// The median of the values of every batch together, with the
    /// order-statistic interval ([`Estimate::median_interval`]) widened,
    /// where it reaches less far, to the order-statistic interval of the
    /// batches' medians, when at least [`BATCHES`] batches have
    /// [`MIN_PER_BATCH`] finite values or more (batches with fewer count
    /// for the median only). With six batches that interval is their
    /// medians' range, a 96.9% interval for the median whatever the
    /// distribution (every batch median on one side of it has chance
    /// 2 × 2⁻⁶). With several batches but fewer usable ones there is no
    /// such interval: the estimate is then a [`IntervalKind::Range`]
    /// reaching every batch's median, which gives no verdict. The values
    /// of one batch alone get the plain interval, which cannot show what
    /// the batch had fixed.
    ///
    /// A batch is a stretch of time, or (in `locklab bench`) a client
    /// process of its own: what stays the same for a whole process (where
    /// its code and heap landed, its connections) then varies between
    /// batches as it does between runs, and the interval covers it.
    pub fn median_over_batches(batches: &[&[f64]]) -> Option<Estimate> {
        let finite_batches = finite_batches(batches);
        let plain = Estimate::median_interval(&finite_batches.concat())?;
        let mut batch_medians = usable_medians(&finite_batches);
        if !plain.is_interval() || finite_batches.len() < 2 {
            return Some(plain);
        }
        if batch_medians.len() < BATCHES {
            let medians = finite_batches.iter().map(|b| median(b));
            return Some(Estimate {
                low: medians.clone().fold(plain.low, f64::min),
                high: medians.fold(plain.high, f64::max),
                interval: IntervalKind::Range,
                ..plain
            });
        }
        batch_medians.sort_by(f64::total_cmp);
        let (l, u) = quantile_ranks(batch_medians.len(), 0.5)?;
        let (lowest, highest) = (batch_medians[l - 1], batch_medians[u - 1]);
        if lowest >= plain.low && highest <= plain.high {
            return Some(plain);
        }
        Some(Estimate {
            low: plain.low.min(lowest),
            high: plain.high.max(highest),
            interval: IntervalKind::UnderDrift95,
            ..plain
        })
    }

    /// The same estimate with the interval where a repeat run's median is
    /// expected to land, at `level` ([`Repeat`]), when at least
    /// [`BATCHES`] of `batches` have [`MIN_PER_BATCH`] finite values or
    /// more; unchanged otherwise (with fewer, the batches' spread says
    /// too little of the spread between runs).
    pub fn with_repeat(self, batches: &[&[f64]], level: f64) -> Estimate {
        let medians = usable_medians(&finite_batches(batches));
        let k = medians.len();
        if k < BATCHES || !self.is_interval() || !(0.0..1.0).contains(&level) {
            return self;
        }
        let Ok(t) = StudentsT::new(0.0, 1.0, (k - 1) as f64) else {
            return self;
        };
        let half = t.inverse_cdf(1.0 - (1.0 - level) / 2.0)
            * standard_deviation(&medians)
            * (2.0 / k as f64).sqrt();
        Estimate {
            repeat: Some(Repeat {
                low: self.low.min(self.median - half),
                high: self.high.max(self.median + half),
                level,
            }),
            ..self
        }
    }

    /// The widest interval given: where a repeat run's median lands, or
    /// without one the interval itself. Verdicts and the stop rule read
    /// this one: a verdict should hold from one run to the next.
    pub fn outer(&self) -> (f64, f64) {
        self.repeat
            .map_or((self.low, self.high), |r| (r.low, r.high))
    }

    /// Half the interval's width as a share of the median (infinite when
    /// the median is 0).
    pub fn relative_half_width(&self) -> f64 {
        self.relative_half_width_of(self.low, self.high)
    }

    /// Half the [`Estimate::outer`] interval's width as a share of the
    /// median.
    pub fn outer_relative_half_width(&self) -> f64 {
        let (low, high) = self.outer();
        self.relative_half_width_of(low, high)
    }

    fn relative_half_width_of(&self, low: f64, high: f64) -> f64 {
        let half = (high - low) / 2.0;
        if self.median.abs() > 0.0 {
            half / self.median.abs()
        } else if half > 0.0 {
            f64::INFINITY
        } else {
            0.0
        }
    }

    /// Whether the interval is a 95% one (not a bare range).
    pub fn is_interval(&self) -> bool {
        self.interval != IntervalKind::Range
    }

    /// Whether the interval is so wide that the figure says nothing (see
    /// [`MEANINGLESS_HALF_WIDTH`]).
    pub fn is_meaningless(&self) -> bool {
        self.outer_relative_half_width() > MEANINGLESS_HALF_WIDTH
    }

    /// The decimals that show this estimate to its precision: three
    /// significant digits of the median, more when the interval is so
    /// narrow that its bounds would otherwise print alike (its width keeps
    /// two significant digits); at most six.
    pub fn decimals(&self) -> usize {
        let magnitude = |x: f64| {
            if x == 0.0 || !x.is_finite() {
                0
            } else {
                x.abs().log10().floor() as i32
            }
        };
        let of_median = 2 - magnitude(self.median);
        // The narrower interval sets the precision both are shown to.
        let width = self.high - self.low;
        let of_width = if width > 0.0 && width.is_finite() {
            1 - magnitude(width)
        } else {
            of_median
        };
        of_median.max(of_width).clamp(0, 6) as usize
    }

    /// The same estimate with every figure rounded to
    /// [`Estimate::decimals`] for the report.
    pub fn rounded(self) -> Estimate {
        let f = 10f64.powi(self.decimals() as i32);
        let round = |x: f64| (x * f).round() / f;
        Estimate {
            median: round(self.median),
            low: round(self.low),
            high: round(self.high),
            repeat: self.repeat.map(|r| Repeat {
                low: round(r.low),
                high: round(r.high),
                ..r
            }),
            ..self
        }
    }
}

/// The finite values of each batch, batches left with none dropped.
fn finite_batches(batches: &[&[f64]]) -> Vec<Vec<f64>> {
    batches
        .iter()
        .map(|b| {
            b.iter()
                .copied()
                .filter(|v| v.is_finite())
                .collect::<Vec<f64>>()
        })
        .filter(|b| !b.is_empty())
        .collect()
}

/// The medians of the batches with [`MIN_PER_BATCH`] values or more: the
/// ones whose spread says how the batches differ.
fn usable_medians(finite_batches: &[Vec<f64>]) -> Vec<f64> {
    finite_batches
        .iter()
        .filter(|b| b.len() >= MIN_PER_BATCH)
        .map(|b| median(b))
        .collect()
}

/// The sample standard deviation of `xs` (n − 1 in the divisor).
fn standard_deviation(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

/// Share of the probability each end of a 95% interval may miss by.
const TAIL: f64 = 0.025;

/// The 1-based ranks `(l, u)` of the order statistics that hold the `q`
/// quantile of independent draws from any continuous distribution with
/// probability at least 95%, of `n` draws; `None` when `n` is too small
/// for that (for the median: five or fewer).
///
/// Why these ranks: with `B` the number of draws below the true quantile,
/// `B` is binomial(`n`, `q`), and the `l`-th smallest draw lies below the
/// quantile exactly when `B ≥ l`, the `u`-th above it when `B < u`. So
/// `l` is the largest rank with `P(B < l) ≤ 2.5%` and `u` the smallest
/// with `P(B ≥ u) ≤ 2.5%`: no resampling, nothing assumed about the
/// distribution, and exact for a tail quantile as for the median.
pub fn quantile_ranks(n: usize, q: f64) -> Option<(usize, usize)> {
    if n == 0 || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let pmf = binomial_pmf(n, q);
    // l: the largest rank with P(B ≤ l − 1) ≤ TAIL (0 when even B = 0 is
    // likelier than that).
    let mut below = 0.0;
    let mut l = 0;
    for (k, p) in pmf.iter().enumerate() {
        below += p;
        if below > TAIL {
            break;
        }
        l = k + 1;
    }
    // u: the smallest rank with P(B ≥ u) ≤ TAIL (n + 1 when none).
    let mut above = 0.0;
    let mut u = n + 1;
    for (k, p) in pmf.iter().enumerate().rev() {
        above += p;
        if above > TAIL {
            break;
        }
        u = k;
    }
    (l >= 1 && u <= n && l < u).then_some((l, u))
}

/// The probabilities of 0..=n successes in `n` trials of chance `q`,
/// computed in logarithms (the plain powers underflow for large `n`).
fn binomial_pmf(n: usize, q: f64) -> Vec<f64> {
    let nf = n as f64;
    let (ln_q, ln_not_q) = (q.ln(), (1.0 - q).ln());
    let mut ln_choose = 0.0;
    (0..=n)
        .map(|k| {
            let kf = k as f64;
            if k > 0 {
                ln_choose += (nf - kf + 1.0).ln() - kf.ln();
            }
            // 0 × ln 0 is 0 here: q = 0 or 1 put all the mass at one end.
            let term = |count: f64, ln_p: f64| if count == 0.0 { 0.0 } else { count * ln_p };
            (ln_choose + term(kf, ln_q) + term(nf - kf, ln_not_q)).exp()
        })
        .collect()
}

/// The median of `xs`, reordering them (linear time: this runs thousands
/// of times per interval).
fn median_in_place(xs: &mut [f64]) -> f64 {
    let n = xs.len();
    let mid = n / 2;
    let (below, at, _) = xs.select_nth_unstable_by(mid, f64::total_cmp);
    let upper = *at;
    if n % 2 == 1 {
        upper
    } else {
        let lower = below.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lower + upper) / 2.0
    }
}

/// The `q` quantile of sorted values, interpolated between neighbours.
fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    let next = sorted[(i + 1).min(sorted.len() - 1)];
    sorted[i] + (next - sorted[i]) * frac
}

/// When a comparison has been measured enough: at least `min_pairs`
/// pairs, and an interval no wider than `precision` (half-width as a share
/// of the median) on each of its figures. The time budget is the caller's
/// (the paired stage of the measurement): it ends the measuring whatever
/// this says.
///
/// The rule looks at the interval's width only, never at where it lies:
/// measuring until an interval happens to clear the goal would make a
/// verdict likelier the more often one looks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StopRule {
    /// Fewest pairs (after the warm-up) before a comparison may stop.
    pub min_pairs: usize,
    /// Largest half-width, as a share of the median, a figure should
    /// have: one wider whose interval holds the goal is inconclusive
    /// because the machine was too noisy.
    pub precision: f64,
    /// The half-width every figure must be within, after the fewest
    /// batches, for measuring to stop before its budget is spent.
    pub finest: f64,
    /// Most pairs of one comparison (a bound should the interval never
    /// narrow).
    pub max_pairs: usize,
}

impl StopRule {
    /// The same rule aiming at `precision`.
    pub fn aiming_at(self, precision: f64) -> StopRule {
        StopRule { precision, ..self }
    }

    /// Whether a comparison whose figures are `estimates` (one per figure,
    /// `None` while one cannot be computed), from `pairs` pairs, needs
    /// more pairs.
    pub fn needs_more(&self, pairs: usize, estimates: &[Option<Estimate>]) -> bool {
        if pairs >= self.max_pairs {
            return false;
        }
        pairs < self.min_pairs
            || estimates.iter().any(|e| {
                e.is_none_or(|e| !e.is_interval() || e.outer_relative_half_width() > self.precision)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_keeps_a_narrow_interval_apart_and_a_wide_one_at_three_digits() {
        let narrow = Estimate {
            median: 1.023_41,
            low: 1.021_34,
            high: 1.025_52,
            n: 50,
            interval: IntervalKind::OrderStatistic95,
            repeat: None,
        }
        .rounded();
        assert_eq!(
            (narrow.median, narrow.low, narrow.high),
            (1.0234, 1.0213, 1.0255)
        );
        let wide = Estimate {
            median: 0.974_2,
            low: 0.931_7,
            high: 1.012_9,
            ..narrow
        }
        .rounded();
        assert_eq!((wide.median, wide.low, wide.high), (0.974, 0.932, 1.013));
    }

    #[test]
    fn few_values_give_their_range_not_an_interval() {
        let e = Estimate::of(&[1.0, 3.0, 2.0], 1).unwrap();
        assert_eq!((e.median, e.low, e.high, e.n), (2.0, 1.0, 3.0, 3));
        assert_eq!(e.interval, IntervalKind::Range);
        assert!(Estimate::of(&[], 1).is_none());
        assert!(Estimate::of(&[f64::NAN], 1).is_none());
    }

    #[test]
    fn identical_values_give_a_zero_width_interval() {
        let e = Estimate::of(&[0.97; 40], 1).unwrap();
        assert_eq!((e.low, e.median, e.high), (0.97, 0.97, 0.97));
        assert_eq!(e.relative_half_width(), 0.0);
    }

    #[test]
    fn the_interval_holds_the_median_and_narrows_with_more_values() {
        let spread = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|i| 1.0 + ((i * 37) % 101) as f64 / 500.0)
                .collect()
        };
        let few = Estimate::of(&spread(20), 5).unwrap();
        let many = Estimate::of(&spread(400), 5).unwrap();
        for e in [few, many] {
            assert!(e.low <= e.median && e.median <= e.high, "{e:?}");
        }
        assert!(many.relative_half_width() < few.relative_half_width() / 2.0);
    }

    #[test]
    fn the_same_values_and_seed_give_the_same_interval() {
        let values: Vec<f64> = (0..50).map(|i| (i as f64).sin() + 2.0).collect();
        assert_eq!(Estimate::of(&values, 9), Estimate::of(&values, 9));
    }

    #[test]
    fn the_median_in_place_agrees_with_the_sorted_median() {
        for n in 1..12 {
            let xs: Vec<f64> = (0..n).map(|i| ((i * 7919) % 13) as f64).collect();
            let mut scratch = xs.clone();
            assert_eq!(median_in_place(&mut scratch), median(&xs), "{xs:?}");
        }
    }

    #[test]
    fn the_median_ranks_are_the_textbook_ones() {
        assert_eq!(quantile_ranks(5, 0.5), None, "1/32 each side is over 2.5%");
        assert_eq!(quantile_ranks(6, 0.5), Some((1, 6)));
        assert_eq!(quantile_ranks(10, 0.5), Some((2, 9)));
        assert_eq!(quantile_ranks(30, 0.5), Some((10, 21)));
        assert_eq!(quantile_ranks(100, 0.5), Some((40, 61)));
        // Large counts do not underflow.
        let (l, u) = quantile_ranks(5_000, 0.5).unwrap();
        assert!(
            (2_425..2_435).contains(&l) && (2_565..2_575).contains(&u),
            "{l} {u}"
        );
    }

    #[test]
    fn a_tail_quantile_needs_enough_draws_beyond_it() {
        // The p99.9 of 1000 draws: B ≥ 1000 has chance 0.999^1000 ≈ 37%
        // below the top, so no upper rank exists.
        assert_eq!(quantile_ranks(1_000, 0.999), None);
        // Of 100 000 draws, about 100 lie beyond it, give or take 20.
        let (l, u) = quantile_ranks(100_000, 0.999).unwrap();
        let (beyond_low, beyond_high) = (100_000 - l, 100_000 - u);
        assert!((115..125).contains(&beyond_low), "{beyond_low}");
        assert!((78..86).contains(&beyond_high), "{beyond_high}");
        assert_eq!(quantile_ranks(0, 0.5), None);
        assert_eq!(quantile_ranks(10, 1.5), None);
    }

    #[test]
    fn the_median_interval_is_made_of_the_values_at_its_ranks() {
        let values: Vec<f64> = (1..=10).rev().map(f64::from).chain([f64::NAN]).collect();
        let e = Estimate::median_interval(&values).unwrap();
        assert_eq!((e.low, e.median, e.high, e.n), (2.0, 5.5, 9.0, 10));
        assert_eq!(e.interval, IntervalKind::OrderStatistic95);
        assert!(e.is_interval());
        let few = Estimate::median_interval(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(
            (few.low, few.high, few.interval),
            (1.0, 3.0, IntervalKind::Range)
        );
        assert!(!few.is_interval());
        assert!(Estimate::median_interval(&[f64::NAN]).is_none());
    }

    fn estimate(median: f64, half: f64, n: usize) -> Option<Estimate> {
        Some(Estimate {
            median,
            low: median - half,
            high: median + half,
            n,
            interval: IntervalKind::Bootstrap95,
            repeat: None,
        })
    }

    #[test]
    fn measuring_stops_only_when_every_figure_is_precise_enough_after_the_minimum() {
        let rule = StopRule {
            min_pairs: 10,
            precision: 0.03,
            finest: 0.03,
            max_pairs: 500,
        };
        // Precise, but too few pairs.
        assert!(rule.needs_more(9, &[estimate(1.0, 0.01, 9)]));
        // Enough pairs, precise: stop.
        assert!(!rule.needs_more(10, &[estimate(1.0, 0.025, 10)]));
        // One of two figures too wide: go on.
        assert!(rule.needs_more(30, &[estimate(1.0, 0.01, 30), estimate(0.5, 0.02, 30)]));
        // A figure that cannot be computed yet: go on.
        assert!(rule.needs_more(30, &[None]));
        // A range is not an interval.
        let range = Estimate::of(&[1.0, 1.0], 1);
        assert!(rule.needs_more(30, &[range]));
        // The bound on pairs ends it however wide.
        assert!(!rule.needs_more(500, &[estimate(1.0, 0.5, 500)]));
    }

    #[test]
    fn aiming_finer_asks_for_more_pairs() {
        let rule = StopRule {
            min_pairs: 10,
            precision: 0.10,
            finest: 0.03,
            max_pairs: 500,
        };
        let finer = rule.aiming_at(0.05);
        assert!(finer.needs_more(40, &[estimate(1.0, 0.07, 40)]));
        assert!(!rule.needs_more(40, &[estimate(1.0, 0.07, 40)]));
    }
}
