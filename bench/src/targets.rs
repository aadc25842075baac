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

mod comparison;
mod goal;

pub use comparison::{
    COMPARISONS, Comparison, MASTERS, NOTIFY, PairSample, Placement, SideSample, WORKERS, Work,
    comparison,
};
pub use goal::{Bound, Goal, Verdict};

use crate::client::Impl;
use crate::interval::{Estimate, StopRule};
use crate::physics;
use serde::Serialize;
use std::collections::BTreeMap;

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
mod tests;
