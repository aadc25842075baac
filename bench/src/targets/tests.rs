use super::*;
use crate::client::Wait;
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
