//! A target's goal: a bound on a figure, written once, and what an
//! interval says about it (the verdict).

use crate::interval::{Estimate, StopRule};
#[cfg(doc)]
use crate::physics;
use serde::Serialize;

/// Which side of its threshold a measured value must be on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The value must be at least the threshold.
    AtLeast,
    /// The value must be at most the threshold.
    AtMost,
}

/// A bound on a measured value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Goal {
    /// Which side.
    pub bound: Bound,
    /// The threshold.
    pub threshold: f64,
}

/// What a target's interval says about its goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The whole interval lies on the goal's side.
    Met,
    /// The whole interval lies on the other side.
    NotMet,
    /// The interval holds the threshold, or there are too few pairs.
    Inconclusive,
    /// The figure is physically implausible (see
    /// [`physics::beats_the_floor_impossibly`]): a measurement fault, not a
    /// result.
    Anomaly,
    /// Nothing was measured (the comparison needs pinning, five nodes, or
    /// the run was interrupted first).
    NotMeasured,
}

impl Verdict {
    /// The verdict as the report writes it.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::NotMet => "not met",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Anomaly => "measurement anomaly",
            Verdict::NotMeasured => "not measured",
        }
    }
}

impl Goal {
    /// The value must be `threshold` or more.
    pub const fn at_least(threshold: f64) -> Goal {
        Goal {
            bound: Bound::AtLeast,
            threshold,
        }
    }

    /// The value must be `threshold` or less.
    pub const fn at_most(threshold: f64) -> Goal {
        Goal {
            bound: Bound::AtMost,
            threshold,
        }
    }

    /// Whether a single value meets the goal.
    pub fn is_met_by(&self, measured: f64) -> bool {
        match self.bound {
            Bound::AtLeast => measured >= self.threshold,
            Bound::AtMost => measured <= self.threshold,
        }
    }

    /// The verdict of `estimate` and why, under `rule`: met when the whole
    /// interval meets the goal, not met when none of it does, else
    /// inconclusive: the machine too noisy (half-width above the rule's
    /// precision), or the figure too close to the goal to tell. The
    /// interval is the repeat-run one when there is one
    /// ([`Estimate::outer`]): a verdict should hold from run to run. Fewer
    /// pairs than the rule's minimum give no verdict.
    pub fn verdict(&self, estimate: Option<&Estimate>, rule: &StopRule) -> (Verdict, String) {
        let Some(e) = estimate else {
            return (Verdict::NotMeasured, "no pairs measured".to_string());
        };
        if e.n < rule.min_pairs {
            return (
                Verdict::Inconclusive,
                format!("only {} pairs ({} needed)", e.n, rule.min_pairs),
            );
        }
        if !e.is_interval() {
            return (
                Verdict::Inconclusive,
                "too few batches of pairs for an interval".to_string(),
            );
        }
        let (low, high) = e.outer();
        let (low_ok, high_ok) = (self.is_met_by(low), self.is_met_by(high));
        let half = e.outer_relative_half_width();
        let which = if e.repeat.is_some() {
            "repeat-run interval"
        } else {
            "interval"
        };
        let pct = |x: f64| format!("{:.1}%", x * 100.0);
        if low_ok && high_ok {
            (Verdict::Met, format!("the whole {which} meets the goal"))
        } else if !low_ok && !high_ok {
            (
                Verdict::NotMet,
                format!("the whole {which} misses the goal"),
            )
        } else if half > rule.precision {
            (
                Verdict::Inconclusive,
                format!(
                    "machine too noisy: half-width {} > {}",
                    pct(half),
                    pct(rule.precision)
                ),
            )
        } else {
            (
                Verdict::Inconclusive,
                format!("too close to the goal to tell (half-width {})", pct(half)),
            )
        }
    }

    /// The goal as the report writes it: `≥ 0.95`, `≥ 1.0`, `≤ 0.1`.
    pub fn text(&self) -> String {
        let sign = match self.bound {
            Bound::AtLeast => "≥",
            Bound::AtMost => "≤",
        };
        // `{:?}` keeps one decimal on whole numbers (`1.0`, not `1`).
        format!("{sign} {:?}", self.threshold)
    }
}
