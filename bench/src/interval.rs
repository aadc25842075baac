//! A figure with its uncertainty: the median of per-pair (or per-round)
//! values and a 95% bootstrap interval around it, and the rule that says
//! when enough pairs have been measured.
//!
//! Why the median of per-pair values: a pair's two slices ran back to back,
//! so whatever slowed the machine for a while (another process, a slow
//! cross-CPU wake-up mode) slowed both, and cancels out of their ratio;
//! the median then ignores the few pairs a change of mode cut in two.
//! Why a bootstrap: the per-pair values follow no known distribution
//! (bimodal round trips make them anything but normal), and resampling the
//! values themselves assumes none.

use crate::rng::Seeded;
use crate::stats::{median, round3};
use serde::Serialize;

/// Fewest values for a bootstrap interval; fewer give their range.
pub const MIN_FOR_INTERVAL: usize = 5;
/// Resamples of one bootstrap for the report.
pub const RESAMPLES: usize = 2_000;
/// Resamples of the bootstraps that only decide whether to measure on
/// (run after every round of pairs: cheaper, and a width needs fewer).
pub const QUICK_RESAMPLES: usize = 400;
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
    /// Too few values for an interval: the smallest and the largest.
    Range,
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
}

impl Estimate {
    /// The median of `values` with a 95% percentile-bootstrap interval of
    /// the median (resampled with the stream of `seed`), or their range
    /// when there are fewer than [`MIN_FOR_INTERVAL`]; `None` when there
    /// are no finite values.
    pub fn of(values: &[f64], seed: u64) -> Option<Estimate> {
        Estimate::resampled(values, seed, RESAMPLES)
    }

    /// [`Estimate::of`] with `resamples` resamples.
    pub fn resampled(values: &[f64], seed: u64, resamples: usize) -> Option<Estimate> {
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
            });
        }
        let mut rng = Seeded::new(seed);
        let mut scratch = vec![0.0; n];
        let mut medians: Vec<f64> = (0..resamples.max(1))
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
        })
    }

    /// Half the interval's width as a share of the median (infinite when
    /// the median is 0).
    pub fn relative_half_width(&self) -> f64 {
        let half = (self.high - self.low) / 2.0;
        if self.median.abs() > 0.0 {
            half / self.median.abs()
        } else if half > 0.0 {
            f64::INFINITY
        } else {
            0.0
        }
    }

    /// Whether the interval is a bootstrap one (not a bare range).
    pub fn is_interval(&self) -> bool {
        self.interval == IntervalKind::Bootstrap95
    }

    /// Whether the interval is so wide that the figure says nothing (see
    /// [`MEANINGLESS_HALF_WIDTH`]).
    pub fn is_meaningless(&self) -> bool {
        self.relative_half_width() > MEANINGLESS_HALF_WIDTH
    }

    /// The same estimate with every figure rounded for the report.
    pub fn rounded(self) -> Estimate {
        Estimate {
            median: round3(self.median),
            low: round3(self.low),
            high: round3(self.high),
            ..self
        }
    }
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
    /// Largest half-width, as a share of the median, to stop at.
    pub precision: f64,
    /// Once every comparison is within `precision` and time remains, the
    /// precision is halved, down to this, and measuring goes on.
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

    /// The next, finer precision to aim at once every comparison is
    /// within `aim`; `None` when `aim` is already the finest.
    pub fn finer_than(&self, aim: f64) -> Option<f64> {
        (aim > self.finest * 1.001).then(|| (aim / 2.0).max(self.finest))
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
                e.is_none_or(|e| !e.is_interval() || e.relative_half_width() > self.precision)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn estimate(median: f64, half: f64, n: usize) -> Option<Estimate> {
        Some(Estimate {
            median,
            low: median - half,
            high: median + half,
            n,
            interval: IntervalKind::Bootstrap95,
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
    fn with_time_left_the_aim_halves_down_to_the_finest() {
        let rule = StopRule {
            min_pairs: 10,
            precision: 0.10,
            finest: 0.03,
            max_pairs: 500,
        };
        assert_eq!(rule.finer_than(0.10), Some(0.05));
        assert_eq!(rule.finer_than(0.05), Some(0.03));
        assert_eq!(rule.finer_than(0.03), None);
        let finer = rule.aiming_at(0.05);
        assert!(finer.needs_more(40, &[estimate(1.0, 0.07, 40)]));
        assert!(!rule.needs_more(40, &[estimate(1.0, 0.07, 40)]));
    }
}
