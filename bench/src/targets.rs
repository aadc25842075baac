//! The speed targets: what the ladder is expected to reach against the
//! hand-written floor and against rslock. Each target's threshold is
//! written once, in [`TARGETS`]; the goal's text in the report and the
//! check of the measured value both come from it.

use crate::client::{Impl, Wait};
use crate::report::{ContentionRow, Figures, Ratios, TargetRow, UncontendedRow};

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

    /// Whether `measured` meets the goal.
    pub fn is_met_by(&self, measured: f64) -> bool {
        match self.bound {
            Bound::AtLeast => measured >= self.threshold,
            Bound::AtMost => measured <= self.threshold,
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

/// One value a target reads off the figures, with what it compares.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// What is compared, with the names and figures it came from.
    pub target: String,
    /// The value the goal applies to.
    pub measured: f64,
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
    /// The values the goal applies to (none when the run lacks the
    /// figures, e.g. fewer than five nodes).
    pub read: fn(&Figures) -> Vec<Reading>,
}

/// Every target, in report order.
pub const TARGETS: [Target; 6] = [
    Target {
        what: "best single-node rung ÷ floor, cycles/s, per placement",
        why: "a correct lock on one node needs nothing beyond the floor's `SET NX PX` and \
              scripted release, so the ladder's safety should cost at most 5% of its speed",
        goal: Goal::at_least(0.95),
        read: best_single_node_vs_floor,
    },
    Target {
        what: "Redlock on 5 masters ÷ 5-node floor, cycles/s",
        why: "Redlock asks every master at once, as the floor does, so five masters should \
              cost it no more than they cost the floor",
        goal: Goal::at_least(0.95),
        read: multi_node_vs_floor,
    },
    Target {
        what: "Redlock on 5 masters ÷ rslock on 5 masters, cycles/s",
        why: "Redlock should be no slower than rslock, the crate a Rust user would pick \
              instead",
        goal: Goal::at_least(1.0),
        read: multi_node_vs_rslock,
    },
    Target {
        what: "16 workers on one key: p99.9 wait, lua-release+notify ÷ rslock",
        why: "waking waiters when the lock is released, instead of retrying on a timer as \
              rslock does, should cut the tail wait at least tenfold",
        goal: Goal::at_most(0.1),
        read: notify_wait_vs_rslock,
    },
    Target {
        what: "16 workers on one key: acq/s, lua-release+notify ÷ rslock",
        why: "the wake-ups should not cost much throughput: at least 80% of rslock's",
        goal: Goal::at_least(0.8),
        read: notify_rate_vs_rslock,
    },
    Target {
        what: "16 workers on one key: fairness of lua-release+notify",
        why: "no worker should starve: the least served gets at least 70% of the \
              acquisitions of the most served",
        goal: Goal::at_least(0.7),
        read: notify_fairness,
    },
];

/// Every target's readings against its goal.
pub fn evaluate(figures: &Figures) -> Vec<TargetRow> {
    TARGETS
        .iter()
        .flat_map(|t| {
            (t.read)(figures).into_iter().map(|r| TargetRow {
                met: t.goal.is_met_by(r.measured),
                target: r.target,
                measured: r.measured,
                goal: t.goal.text(),
            })
        })
        .collect()
}

/// Whether a row's implementation is a rung of the ladder (not the floor
/// or rslock).
fn is_rung(row: &UncontendedRow) -> bool {
    locks::rung(&row.subject.impl_).is_some()
}

/// Whether a row's implementation is a rung over several nodes.
fn is_multi_node(row: &UncontendedRow) -> bool {
    locks::rung(&row.subject.impl_).is_some_and(|r| r.multi_node)
}

fn best_single_node_vs_floor(figures: &Figures) -> Vec<Reading> {
    let vs_floor = |u: &UncontendedRow| u.ratios.vs_floor.unwrap_or(0.0);
    [
        ("split", &figures.uncontended),
        ("same-cpu", &figures.uncontended_same_cpu),
    ]
    .into_iter()
    .filter_map(|(placement, rows)| {
        let best = rows
            .iter()
            .filter(|u| u.subject.nodes == 1 && is_rung(u))
            .max_by(|a, b| vs_floor(a).total_cmp(&vs_floor(b)))?;
        Some(Reading {
            target: format!(
                "best single-node rung ({}) cycles/s ÷ floor, {placement}",
                best.subject.impl_
            ),
            measured: vs_floor(best),
        })
    })
    .collect()
}

/// Masters of the Redlock targets.
const MASTERS: usize = 5;

/// The multi-node rung on [`MASTERS`] nodes against `baseline` (so named
/// in the target), by the ratio `pick` takes from its row.
fn multi_node_reading(
    figures: &Figures,
    baseline: &str,
    pick: fn(&Ratios) -> Option<f64>,
) -> Vec<Reading> {
    figures
        .uncontended
        .iter()
        .filter(|u| is_multi_node(u) && u.subject.nodes == MASTERS)
        .take(1)
        .map(|row| Reading {
            target: format!(
                "{}, {MASTERS} masters: cycles/s ÷ {baseline}",
                row.subject.impl_
            ),
            measured: pick(&row.ratios).unwrap_or(0.0),
        })
        .collect()
}

fn multi_node_vs_floor(figures: &Figures) -> Vec<Reading> {
    multi_node_reading(figures, &format!("{MASTERS}-node floor"), |r| r.vs_floor)
}

fn multi_node_vs_rslock(figures: &Figures) -> Vec<Reading> {
    multi_node_reading(figures, &format!("rslock ({MASTERS} nodes)"), |r| {
        r.vs_rslock
    })
}

/// Workers of the contention targets, all on one key.
const WORKERS: usize = 16;
/// The implementation the contention targets are about.
const NOTIFY: Impl = Impl::Rung("lua-release", Wait::Notify);

fn contention_row(figures: &Figures, which: Impl) -> Option<&ContentionRow> {
    figures.contention.iter().find(|c| {
        c.subject.impl_ == which.name()
            && c.subject.wait == which.wait()
            && c.workers == WORKERS
            && c.keys == 1
    })
}

/// A reading of the notify row at [`WORKERS`] on one key, `what` of it.
fn notify_reading(
    figures: &Figures,
    what: &str,
    measured: fn(&ContentionRow) -> f64,
) -> Vec<Reading> {
    contention_row(figures, NOTIFY)
        .map(|notify| Reading {
            target: format!("{WORKERS} workers, one key: {what}"),
            measured: measured(notify),
        })
        .into_iter()
        .collect()
}

fn notify_wait_vs_rslock(figures: &Figures) -> Vec<Reading> {
    let (Some(notify), Some(rslock)) = (
        contention_row(figures, NOTIFY),
        contention_row(figures, Impl::Rslock),
    ) else {
        return Vec::new();
    };
    vec![Reading {
        target: format!(
            "{WORKERS} workers, one key: p99.9 wait {} ÷ rslock ({} µs vs {} µs)",
            NOTIFY.label(),
            notify.wait_p999_us,
            rslock.wait_p999_us
        ),
        measured: notify.wait_p999_us as f64 / (rslock.wait_p999_us.max(1) as f64),
    }]
}

fn notify_rate_vs_rslock(figures: &Figures) -> Vec<Reading> {
    notify_reading(
        figures,
        &format!("acq/s {} ÷ rslock", NOTIFY.label()),
        |row| row.ratios.vs_rslock.unwrap_or(0.0),
    )
}

fn notify_fairness(figures: &Figures) -> Vec<Reading> {
    notify_reading(
        figures,
        &format!("fairness (fewest/most) of {}", NOTIFY.label()),
        |row| row.fairness,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn no_figures_no_readings() {
        assert!(evaluate(&Figures::default()).is_empty());
    }
}
