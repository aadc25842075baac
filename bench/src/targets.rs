//! The speed targets: what the ladder is expected to reach against the
//! hand-written floor and against rslock, each a comparison of two
//! implementations named here, before anything is measured (never the
//! best of several: a maximum over noisy figures is biased upwards).
//!
//! Each comparison is measured in pairs of short slices, one of each side
//! back to back in a random order (the paired stage of the run, in
//! batches); each pair gives one value of each of its targets' figures,
//! and a target's figure is the median of its pairs' values with a
//! distribution-free 95% interval that holds when the machine drifts
//! during the run and when client processes differ
//! ([`Estimate::median_over_batches`]), and beside it where a repeat
//! run's median should land ([`Estimate::with_repeat`]). The verdict comes
//! from that repeat interval, not the median: met only when all of it
//! lies on the goal's side, so that the next run says the same.

use crate::client::{Impl, Wait};
use crate::interval::{Estimate, StopRule};
use crate::physics;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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

/// Where an uncontended comparison's slices run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Client and servers on different CPUs.
    Split,
    /// Node 0 moved onto the client's CPU (needs pinning).
    SameCpu,
}

impl Placement {
    /// `split` or `same-cpu`.
    pub fn label(self) -> &'static str {
        match self {
            Placement::Split => "split",
            Placement::SameCpu => "same-cpu",
        }
    }
}

/// What each slice of a comparison runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// One task acquiring and releasing back to back on the first `nodes`
    /// nodes.
    Uncontended {
        /// Nodes of the lock (and of the floor and rslock).
        nodes: usize,
        /// Where node 0 runs.
        placement: Placement,
    },
    /// `workers` tasks on one key of node 0, client and server split.
    Contention {
        /// Concurrent tasks.
        workers: usize,
    },
}

/// Two implementations measured pair by pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comparison {
    /// A short name, unique.
    pub id: &'static str,
    /// The side the figures are about (the numerator of a ratio).
    pub a: Impl,
    /// The side it is compared to.
    pub b: Impl,
    /// What each slice runs.
    pub work: Work,
}

impl Comparison {
    /// Nodes the comparison needs.
    pub fn nodes(&self) -> usize {
        match self.work {
            Work::Uncontended { nodes, .. } => nodes,
            Work::Contention { .. } => 1,
        }
    }

    /// Where its slices run.
    pub fn placement(&self) -> Placement {
        match self.work {
            Work::Uncontended { placement, .. } => placement,
            Work::Contention { .. } => Placement::Split,
        }
    }
}

/// The implementation the contention targets are about.
pub const NOTIFY: Impl = Impl::Rung("lua-release", Wait::Notify);
/// Workers of the contention comparison, all on one key.
pub const WORKERS: usize = 16;
/// Masters of the Redlock comparisons.
pub const MASTERS: usize = 5;

const fn uncontended(
    id: &'static str,
    a: Impl,
    b: Impl,
    nodes: usize,
    placement: Placement,
) -> Comparison {
    Comparison {
        id,
        a,
        b,
        work: Work::Uncontended { nodes, placement },
    }
}

/// Every comparison the targets read, in the order they are measured.
pub const COMPARISONS: [Comparison; 7] = [
    uncontended(
        "set-nx-px/floor split",
        Impl::Rung("set-nx-px", Wait::Fixed),
        Impl::Floor,
        1,
        Placement::Split,
    ),
    uncontended(
        "lua-release/floor split",
        Impl::Rung("lua-release", Wait::Fixed),
        Impl::Floor,
        1,
        Placement::Split,
    ),
    uncontended(
        "set-nx-px/floor same-cpu",
        Impl::Rung("set-nx-px", Wait::Fixed),
        Impl::Floor,
        1,
        Placement::SameCpu,
    ),
    uncontended(
        "lua-release/floor same-cpu",
        Impl::Rung("lua-release", Wait::Fixed),
        Impl::Floor,
        1,
        Placement::SameCpu,
    ),
    uncontended(
        "redlock/floor 5 nodes",
        Impl::Rung("redlock", Wait::Fixed),
        Impl::Floor,
        MASTERS,
        Placement::Split,
    ),
    uncontended(
        "redlock/rslock 5 nodes",
        Impl::Rung("redlock", Wait::Fixed),
        Impl::Rslock,
        MASTERS,
        Placement::Split,
    ),
    Comparison {
        id: "notify/rslock 16 workers",
        a: NOTIFY,
        b: Impl::Rslock,
        work: Work::Contention { workers: WORKERS },
    },
];

/// The comparison named `id`.
pub fn comparison(id: &str) -> Option<&'static Comparison> {
    COMPARISONS.iter().find(|c| c.id == id)
}

/// What one side measured in one slice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SideSample {
    /// Cycles (uncontended) or acquisitions (contention) per second.
    pub rate: f64,
    /// p99.9 wait, µs (contention; open waits at their open time).
    pub wait_p999_us: u64,
    /// Whether that p99.9 is only a lower bound (open waits reach it).
    pub wait_p999_lower_bound: bool,
    /// p99.9 wait in hand-offs: acquisitions by any worker from a wait's
    /// start to its end (contention; see
    /// [`WorkerCount::handoffs`](crate::workload::WorkerCount::handoffs)).
    #[serde(default)]
    pub wait_p999_handoffs: u64,
    /// Whether that p99.9 is only a lower bound (open waits reach it).
    #[serde(default)]
    pub wait_p999_handoffs_lower_bound: bool,
    /// Fewest / most acquisitions of any worker (contention).
    pub fairness: f64,
}

/// One pair: both sides, measured back to back.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PairSample {
    /// Side `a`.
    pub a: SideSample,
    /// Side `b`.
    pub b: SideSample,
    /// Whether `a` ran first.
    pub a_first: bool,
    /// The batch it was measured in (from 0): a stretch of the paired
    /// stage, each in a client process of its own in `locklab bench`.
    pub batch: u32,
}

/// A figure read off each pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statistic {
    /// `a`'s rate ÷ `b`'s.
    RateRatio,
    /// `a`'s p99.9 wait ÷ `b`'s, in hand-offs (in µs the tail moves with
    /// every stall of the machine; the pairs keep it, as `wait_p999_us`).
    HandoffP999Ratio,
    /// `a`'s fairness.
    FairnessOfA,
}

impl Statistic {
    /// The figure of one pair (not finite when it has none, e.g. a zero
    /// rate on side `b`).
    pub fn of(self, pair: &PairSample) -> f64 {
        match self {
            Statistic::RateRatio => pair.a.rate / pair.b.rate,
            Statistic::HandoffP999Ratio => {
                pair.a.wait_p999_handoffs as f64 / pair.b.wait_p999_handoffs.max(1) as f64
            }
            Statistic::FairnessOfA => pair.a.fairness,
        }
    }
}

/// One speed target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// What is compared, in a few words.
    pub what: &'static str,
    /// Why the goal is what it is.
    pub why: &'static str,
    /// The goal.
    pub goal: Goal,
    /// The [`Comparison::id`] it reads.
    pub comparison: &'static str,
    /// The figure it reads off each pair.
    pub statistic: Statistic,
}

/// Why every single-node rung-vs-floor goal is 0.95.
const SINGLE_NODE_WHY: &str = "a correct lock on one node needs nothing beyond the floor's \
    `SET NX PX` and scripted release (the same two round trips), so the ladder's safety should \
    cost at most 5% of its speed";

/// Every target, in report order.
pub const TARGETS: [Target; 9] = [
    Target {
        what: "set-nx-px ÷ floor, cycles/s, split",
        why: SINGLE_NODE_WHY,
        goal: Goal::at_least(0.95),
        comparison: "set-nx-px/floor split",
        statistic: Statistic::RateRatio,
    },
    Target {
        what: "lua-release ÷ floor, cycles/s, split",
        why: SINGLE_NODE_WHY,
        goal: Goal::at_least(0.95),
        comparison: "lua-release/floor split",
        statistic: Statistic::RateRatio,
    },
    Target {
        what: "set-nx-px ÷ floor, cycles/s, same CPU",
        why: SINGLE_NODE_WHY,
        goal: Goal::at_least(0.95),
        comparison: "set-nx-px/floor same-cpu",
        statistic: Statistic::RateRatio,
    },
    Target {
        what: "lua-release ÷ floor, cycles/s, same CPU",
        why: SINGLE_NODE_WHY,
        goal: Goal::at_least(0.95),
        comparison: "lua-release/floor same-cpu",
        statistic: Statistic::RateRatio,
    },
    Target {
        what: "redlock on 5 masters ÷ 5-node floor, cycles/s",
        why: "Redlock asks every master at once, as the floor does, so five masters should \
              cost it no more than they cost the floor",
        goal: Goal::at_least(0.95),
        comparison: "redlock/floor 5 nodes",
        statistic: Statistic::RateRatio,
    },
    Target {
        what: "redlock on 5 masters ÷ rslock on 5 masters, cycles/s",
        why: "Redlock should be as fast as rslock, the crate a Rust user would pick instead: \
              the same two concurrent rounds per cycle. \"As fast\" within the 5% the floor \
              targets allow: a goal of ≥ 1.0 on two equal figures could never be shown met",
        goal: Goal::at_least(0.95),
        comparison: "redlock/rslock 5 nodes",
        statistic: Statistic::RateRatio,
    },
    Target {
        what: "16 workers on one key: p99.9 wait in hand-offs, lua-release+notify ÷ rslock",
        why: "waking waiters when the lock is released, instead of retrying on a timer as \
              rslock does, should cut the tail wait at least tenfold. Counted in hand-offs \
              (the lock's acquisitions while one waits), the lock's own clock: in µs the \
              tail also moves with every stall of the machine, by ±25% within a run here, \
              and the µs figures are in the contention table",
        goal: Goal::at_most(0.1),
        comparison: "notify/rslock 16 workers",
        statistic: Statistic::HandoffP999Ratio,
    },
    Target {
        what: "16 workers on one key: acq/s, lua-release+notify ÷ rslock",
        why: "the wake-ups should not cost much throughput: at least 80% of rslock's",
        goal: Goal::at_least(0.8),
        comparison: "notify/rslock 16 workers",
        statistic: Statistic::RateRatio,
    },
    Target {
        what: "16 workers on one key: fairness of lua-release+notify",
        why: "no worker should starve: the least served gets at least 70% of the \
              acquisitions of the most served",
        goal: Goal::at_least(0.7),
        comparison: "notify/rslock 16 workers",
        statistic: Statistic::FairnessOfA,
    },
];

/// The chance each target's repeat interval holds a repeat run's median:
/// 95% for all the targets of a report at once (Bonferroni: each misses
/// with at most 5% ÷ the number of targets), as a reader sets two reports
/// side by side and compares every figure, not one.
pub const REPEAT_LEVEL: f64 = 1.0 - 0.05 / TARGETS.len() as f64;

/// The targets that read comparison `id`.
pub fn targets_of(id: &str) -> impl Iterator<Item = &'static Target> + '_ {
    TARGETS.iter().filter(move |t| t.comparison == id)
}

/// Every pair one comparison measured.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ComparisonRecord {
    /// The [`Comparison::id`].
    pub id: &'static str,
    /// The pairs that count (after the warm-up).
    pub pairs: Vec<PairSample>,
    /// Pairs measured and discarded as warm-up.
    pub warmup_pairs: usize,
    /// Time spent on it, s.
    pub seconds: f64,
    /// Why this run could not measure it, if it could not.
    pub skipped: Option<String>,
}

impl ComparisonRecord {
    /// A record with nothing measured yet.
    pub fn new(id: &'static str) -> ComparisonRecord {
        ComparisonRecord {
            id,
            pairs: Vec::new(),
            warmup_pairs: 0,
            seconds: 0.0,
            skipped: None,
        }
    }

    /// The estimate of `target` from the pairs so far, its interval
    /// widened by the spread of the batches' medians
    /// ([`Estimate::median_over_batches`]), with where a repeat run's
    /// median should land ([`Estimate::with_repeat`], at [`REPEAT_LEVEL`]).
    pub fn estimate(&self, target: &Target) -> Option<Estimate> {
        let mut batches: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
        for p in &self.pairs {
            batches
                .entry(p.batch)
                .or_default()
                .push(target.statistic.of(p));
        }
        let batches: Vec<&[f64]> = batches.values().map(Vec::as_slice).collect();
        Estimate::median_over_batches(&batches).map(|e| e.with_repeat(&batches, REPEAT_LEVEL))
    }

    /// The estimate of each target reading this comparison.
    pub fn estimates(&self) -> Vec<Option<Estimate>> {
        targets_of(self.id).map(|t| self.estimate(t)).collect()
    }

    /// Whether the rule wants more pairs of this comparison.
    pub fn needs_more(&self, rule: &StopRule) -> bool {
        rule.needs_more(self.pairs.len(), &self.estimates())
    }
}

/// One target, measured.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TargetRow {
    /// What is compared.
    pub target: String,
    /// The comparison it reads.
    pub comparison: String,
    /// The median over pairs with its 95% interval (none when nothing
    /// was measured).
    pub estimate: Option<Estimate>,
    /// The goal, as `≥ 0.95` or `≤ 0.1`.
    pub goal: String,
    /// What the interval says about the goal.
    pub verdict: Verdict,
    /// Why, in words.
    pub reason: String,
}

/// Every target's verdict from the pairs measured, under `rule`.
pub fn evaluate(records: &[ComparisonRecord], rule: &StopRule) -> Vec<TargetRow> {
    TARGETS
        .iter()
        .map(|t| {
            let record = records.iter().find(|r| r.id == t.comparison);
            let estimate = record.and_then(|r| r.estimate(t));
            let (mut verdict, mut reason) = t.goal.verdict(estimate.as_ref(), rule);
            if let Some(why) = record.and_then(|r| r.skipped.as_ref()) {
                reason = why.clone();
            }
            if let (Some(e), Some(c)) = (estimate, comparison(t.comparison))
                && let Some(why) = anomaly(c, t.statistic, &e)
            {
                (verdict, reason) = (Verdict::Anomaly, why);
            }
            if let Some(note) = record.and_then(|r| censoring_note(r, t.statistic)) {
                reason = format!("{reason}; {note}");
            }
            TargetRow {
                target: t.what.to_string(),
                comparison: t.comparison.to_string(),
                estimate: estimate.map(Estimate::rounded),
                goal: t.goal.text(),
                verdict,
                reason,
            }
        })
        .collect()
}

/// Why a rate ratio to the floor is a measurement anomaly, if it is.
fn anomaly(c: &Comparison, statistic: Statistic, e: &Estimate) -> Option<String> {
    if statistic != Statistic::RateRatio || c.b != Impl::Floor || !e.is_interval() {
        return None;
    }
    let (trips, floor) = (physics::round_trips(c.a)?, physics::round_trips(c.b)?);
    physics::beats_the_floor_impossibly(trips, floor, e.low).then(|| {
        format!(
            "{} needs {trips} round trips per cycle to the floor's {floor}, yet beats it \
             beyond its interval: not a result",
            c.a.label()
        )
    })
}

/// What censored waits mean for a p99.9 ratio, if any pair had them.
fn censoring_note(record: &ComparisonRecord, statistic: Statistic) -> Option<String> {
    let censored: fn(&SideSample) -> bool = match statistic {
        Statistic::HandoffP999Ratio => |s| s.wait_p999_handoffs_lower_bound,
        Statistic::RateRatio | Statistic::FairnessOfA => return None,
    };
    let count = |side: fn(&PairSample) -> &SideSample| {
        record.pairs.iter().filter(|p| censored(side(p))).count()
    };
    let (a, b) = (count(|p| &p.a), count(|p| &p.b));
    let mut notes = Vec::new();
    if b > 0 {
        notes.push(format!(
            "the divisor's p99.9 is only a lower bound in {b} of {} pairs (waits still open \
             at a slice's end), so the true ratio there is at most the one shown",
            record.pairs.len()
        ));
    }
    if a > 0 {
        notes.push(format!(
            "the dividend's p99.9 is only a lower bound in {a} pairs, so the true ratio there \
             may be higher"
        ));
    }
    (!notes.is_empty()).then(|| notes.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interval::IntervalKind;

    const RULE: StopRule = StopRule {
        min_pairs: 10,
        precision: 0.05,
        finest: 0.05,
        max_pairs: 1000,
    };

    fn interval(low: f64, median: f64, high: f64) -> Estimate {
        Estimate {
            median,
            low,
            high,
            n: 30,
            interval: IntervalKind::OrderStatistic95,
            repeat: None,
        }
    }

    #[test]
    fn goal_text_and_check_come_from_one_threshold() {
        let goal = Goal::at_least(0.95);
        assert_eq!(goal.text(), "≥ 0.95");
        assert!(goal.is_met_by(0.95) && !goal.is_met_by(0.949));
        let goal = Goal::at_most(0.1);
        assert_eq!(goal.text(), "≤ 0.1");
        assert!(goal.is_met_by(0.1) && !goal.is_met_by(0.11));
        assert_eq!(Goal::at_least(1.0).text(), "≥ 1.0");
    }

    #[test]
    fn a_goal_is_met_only_when_the_whole_interval_meets_it() {
        let goal = Goal::at_least(0.95);
        let verdict = |e: Estimate| goal.verdict(Some(&e), &RULE).0;
        assert_eq!(verdict(interval(0.96, 0.98, 1.0)), Verdict::Met);
        assert_eq!(verdict(interval(0.95, 0.97, 0.99)), Verdict::Met);
        assert_eq!(verdict(interval(0.90, 0.92, 0.94)), Verdict::NotMet);
        // The median meets it, the interval does not: no verdict.
        assert_eq!(verdict(interval(0.94, 0.96, 0.98)), Verdict::Inconclusive);
        let at_most = Goal::at_most(0.1);
        let e = interval(0.02, 0.03, 0.05);
        assert_eq!(at_most.verdict(Some(&e), &RULE).0, Verdict::Met);
        let e = interval(0.11, 0.2, 0.3);
        assert_eq!(at_most.verdict(Some(&e), &RULE).0, Verdict::NotMet);
    }

    #[test]
    fn an_interval_across_the_goal_says_whether_the_machine_was_too_noisy() {
        let goal = Goal::at_least(0.95);
        let (v, why) = goal.verdict(Some(&interval(0.7, 1.0, 1.3)), &RULE);
        assert_eq!(v, Verdict::Inconclusive);
        assert!(
            why.contains("machine too noisy") && why.contains("30.0%"),
            "{why}"
        );
        let (v, why) = goal.verdict(Some(&interval(0.94, 0.955, 0.97)), &RULE);
        assert_eq!(v, Verdict::Inconclusive);
        assert!(why.contains("too close"), "{why}");
    }

    #[test]
    fn too_few_pairs_or_none_give_no_verdict() {
        let goal = Goal::at_least(0.95);
        let few = Estimate {
            n: 4,
            ..interval(0.99, 1.0, 1.01)
        };
        let (v, why) = goal.verdict(Some(&few), &RULE);
        assert_eq!(v, Verdict::Inconclusive);
        assert!(why.contains("only 4 pairs"), "{why}");
        assert_eq!(goal.verdict(None, &RULE).0, Verdict::NotMeasured);
    }

    fn pair(a_rate: f64, b_rate: f64) -> PairSample {
        let side = |rate| SideSample {
            rate,
            ..SideSample::default()
        };
        PairSample {
            a: side(a_rate),
            b: side(b_rate),
            a_first: true,
            batch: 0,
        }
    }

    fn record(id: &'static str, ratio: impl Fn(usize) -> f64) -> ComparisonRecord {
        ComparisonRecord {
            pairs: (0..40).map(|i| pair(ratio(i) * 1000.0, 1000.0)).collect(),
            ..ComparisonRecord::new(id)
        }
    }

    #[test]
    fn more_round_trips_than_the_floor_beating_it_is_flagged_not_reported() {
        // A made-up comparison: a rung of three round trips.
        let three = Comparison {
            id: "get-check-del/floor",
            a: Impl::Rung("get-check-del", Wait::Fixed),
            b: Impl::Floor,
            work: Work::Uncontended {
                nodes: 1,
                placement: Placement::Split,
            },
        };
        let fast = interval(1.2, 1.3, 1.4);
        assert!(anomaly(&three, Statistic::RateRatio, &fast).is_some());
        let slow = interval(0.6, 0.66, 0.7);
        assert!(anomaly(&three, Statistic::RateRatio, &slow).is_none());
        // Through `evaluate`: a two-trip rung far beyond the allowance.
        let rows = evaluate(&[record("set-nx-px/floor split", |_| 1.5)], &RULE);
        assert_eq!(rows[0].verdict, Verdict::Anomaly, "{:?}", rows[0]);
        assert!(rows[0].reason.contains("round trips"), "{}", rows[0].reason);
    }

    #[test]
    fn targets_read_their_named_comparison_never_a_best_of() {
        let rows = evaluate(
            &[
                record("set-nx-px/floor split", |i| 0.97 + (i % 3) as f64 * 0.01),
                record("lua-release/floor split", |i| 0.80 + (i % 3) as f64 * 0.01),
            ],
            &RULE,
        );
        assert_eq!(rows.len(), TARGETS.len());
        assert_eq!(rows[0].verdict, Verdict::Met);
        assert_eq!(rows[1].verdict, Verdict::NotMet);
        assert!(rows[2..].iter().all(|r| r.verdict == Verdict::NotMeasured));
    }

    #[test]
    fn every_target_reads_a_comparison_that_exists() {
        for t in &TARGETS {
            assert!(comparison(t.comparison).is_some(), "{}", t.comparison);
        }
        for c in &COMPARISONS {
            assert!(
                targets_of(c.id).count() > 0,
                "{} is read by no target",
                c.id
            );
        }
    }
}
