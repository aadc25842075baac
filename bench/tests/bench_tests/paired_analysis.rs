//! The analysis of paired measurements on made-up series whose true ratio
//! is known: the interval covers it, the verdicts follow the interval, the
//! anomaly flag and the stopping rule work. Nothing here is timed or needs
//! Redis; every series comes from a fixed seed (the whole file runs in
//! about 2 s in release).

use bench::interval::{Estimate, IntervalKind, StopRule, quantile_ranks};
use bench::rng::Seeded;
use bench::targets::{self, ComparisonRecord, PairSample, SideSample, TARGETS, Verdict};

/// Round trips of the two modes seen on the test machine, µs.
const FAST_US: f64 = 35.0;
const SLOW_US: f64 = 112.0;

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut Seeded) -> f64 {
    let (u1, u2) = (rng.unit().max(1e-12), rng.unit());
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A machine whose round trip switches between two modes now and then:
/// each slice stays in the mode of the slice before with probability
/// `1 - switch`, or (with `every`) the mode changes every so many slices.
struct Machine {
    rng: Seeded,
    slow: bool,
    switch: f64,
    every: Option<usize>,
    slices: usize,
    /// Slice-to-slice noise of a rate, as a log-normal σ.
    sigma: f64,
}

impl Machine {
    fn new(seed: u64, switch: f64, sigma: f64) -> Machine {
        Machine {
            rng: Seeded::new(seed),
            slow: false,
            switch,
            every: None,
            slices: 0,
            sigma,
        }
    }

    /// One slice of an implementation that runs at `speed` × the floor:
    /// two round trips per cycle in whatever mode the machine is in.
    fn slice(&mut self, speed: f64) -> SideSample {
        self.slices += 1;
        let switch = match self.every {
            Some(n) => self.slices.is_multiple_of(n),
            None => self.rng.unit() < self.switch,
        };
        if switch {
            self.slow = !self.slow;
        }
        let rtt = if self.slow { SLOW_US } else { FAST_US };
        let noise = (self.sigma * normal(&mut self.rng)).exp();
        SideSample {
            rate: speed * 1e6 / (2.0 * rtt) * noise,
            ..SideSample::default()
        }
    }

    /// One pair: `a` runs at `ratio` × `b`, in a random order.
    fn pair(&mut self, ratio: f64) -> PairSample {
        let a_first = self.rng.coin();
        let (first, second) = (
            self.slice(if a_first { ratio } else { 1.0 }),
            self.slice(if a_first { 1.0 } else { ratio }),
        );
        let (a, b) = if a_first {
            (first, second)
        } else {
            (second, first)
        };
        PairSample {
            a,
            b,
            a_first,
            batch: 0,
        }
    }
}

fn ratios(pairs: &[PairSample]) -> Vec<f64> {
    pairs.iter().map(|p| p.a.rate / p.b.rate).collect()
}

#[test]
fn the_paired_interval_covers_the_true_ratio_on_a_bimodal_machine() {
    let truth = 0.9;
    let (series, pairs) = (200, 30);
    let mut covered = 0;
    let mut widths = Vec::new();
    for seed in 0..series {
        let mut machine = Machine::new(seed, 0.1, 0.1);
        let sample: Vec<PairSample> = (0..pairs).map(|_| machine.pair(truth)).collect();
        let e = Estimate::median_interval(&ratios(&sample)).unwrap();
        assert_eq!(e.interval, IntervalKind::OrderStatistic95);
        if e.low <= truth && truth <= e.high {
            covered += 1;
        }
        widths.push(e.relative_half_width());
    }
    // At least 95% in law (the ranks of 30 values give 95.7%); 200 series
    // measure it to about ±1.5%.
    let coverage = covered as f64 / series as f64;
    assert!(coverage >= 0.93, "coverage {coverage}");
    // Sane width: the per-pair noise is σ√2 ≈ 14%, so about ±6%.
    widths.sort_by(f64::total_cmp);
    let typical = widths[widths.len() / 2];
    assert!(
        (0.02..0.10).contains(&typical),
        "typical half-width {typical}"
    );
}

/// A distribution by its quantile function: a draw from a uniform one.
type Quantile = fn(f64) -> f64;

/// Heavy-tailed and lopsided distributions, named, with their medians.
const SKEWED: [(&str, Quantile, f64); 3] = [
    // Pareto, α = 1.1: no variance; median 2^(1/1.1).
    ("pareto", |u| (1.0 - u).powf(-1.0 / 1.1), 1.877861821),
    // Cauchy around 1, scaled 0.05: no mean.
    (
        "cauchy",
        |u| 1.0 + 0.05 * (std::f64::consts::PI * (u - 0.5)).tan(),
        1.0,
    ),
    // Round trips in two modes, 60% at 35-45 µs, 40% at 112-142 µs:
    // median 35 + 10 × 0.5 / 0.6.
    (
        "two modes",
        |u| {
            if u < 0.6 {
                35.0 + 10.0 * u / 0.6
            } else {
                112.0 + 30.0 * (u - 0.6) / 0.4
            }
        },
        35.0 + 10.0 * 0.5 / 0.6,
    ),
];

/// Share of `series` fixed-seed samples of `n` draws of `draw` whose
/// interval from `interval` holds `truth`.
fn coverage(
    n: usize,
    series: u64,
    draw: Quantile,
    truth: f64,
    interval: impl Fn(&[f64], u64) -> Estimate,
) -> f64 {
    let held = (0..series)
        .filter(|&seed| {
            let mut rng = Seeded::new(1_000 + seed);
            let values: Vec<f64> = (0..n).map(|_| draw(rng.unit())).collect();
            let e = interval(&values, seed);
            e.low <= truth && truth <= e.high
        })
        .count();
    held as f64 / series as f64
}

#[test]
fn the_order_statistic_interval_covers_the_median_of_heavy_tailed_draws_at_any_count() {
    let series = 400;
    for (name, draw, median) in SKEWED {
        for n in [8, 10, 15, 30, 80] {
            let ranks = coverage(n, series, draw, median, |v, _| {
                Estimate::median_interval(v).unwrap()
            });
            // At least 95% in law; 400 series measure it to about ±1.1%.
            assert!(ranks >= 0.93, "{name}, {n} values: {ranks}");
            // The percentile bootstrap it replaced runs short on few
            // values (91-94% here at 8 and 10, where the ranks give 97-99%).
            if n <= 10 {
                let bootstrap = coverage(n, series, draw, median, |v, seed| {
                    Estimate::of(v, seed).unwrap()
                });
                assert!(ranks > bootstrap, "{name}, {n}: {ranks} vs {bootstrap}");
            }
        }
    }
}

#[test]
fn the_order_statistic_interval_covers_a_p999_of_heavy_tailed_draws() {
    // The ranks of a tail quantile, checked the same way: 10 000 Pareto
    // draws (α = 1.1), whose p99.9 is 1000^(1/1.1).
    let (n, q, series) = (10_000, 0.999, 200);
    let truth = 1000f64.powf(1.0 / 1.1);
    let (l, u) = quantile_ranks(n, q).unwrap();
    let held = (0..series)
        .filter(|&seed| {
            let mut rng = Seeded::new(7_000 + seed);
            let mut values: Vec<f64> = (0..n).map(|_| SKEWED[0].1(rng.unit())).collect();
            values.sort_by(f64::total_cmp);
            values[l - 1] <= truth && truth <= values[u - 1]
        })
        .count();
    let share = held as f64 / series as f64;
    assert!(share >= 0.92, "p99.9 coverage {share}");
}

#[test]
fn pairing_cancels_the_modes_that_comparing_medians_of_each_side_does_not() {
    let truth = 0.9;
    // Half the time in each mode, as in the runs that gave 1.07, 1.6 and
    // 3.23 for one ratio.
    let mut machine = Machine {
        every: Some(7),
        ..Machine::new(7, 0.0, 0.05)
    };
    let sample: Vec<PairSample> = (0..60).map(|_| machine.pair(truth)).collect();
    let paired = Estimate::of(&ratios(&sample), 1).unwrap();
    // The unpaired way: each side's median rate, then their ratio; its
    // spread over resamples of each side on its own.
    let a: Vec<f64> = sample.iter().map(|p| p.a.rate).collect();
    let b: Vec<f64> = sample.iter().map(|p| p.b.rate).collect();
    let (ea, eb) = (Estimate::of(&a, 2).unwrap(), Estimate::of(&b, 3).unwrap());
    let unpaired_half_width = (ea.high / eb.low - ea.low / eb.high) / 2.0 / (ea.median / eb.median);
    assert!(
        paired.relative_half_width() * 3.0 < unpaired_half_width,
        "paired ±{:.3}, unpaired ±{unpaired_half_width:.3}",
        paired.relative_half_width()
    );
    assert!(paired.low <= truth && truth <= paired.high, "{paired:?}");
}

/// A record of `pairs` made-up pairs of comparison `id` at `ratio`.
fn record(id: &'static str, seed: u64, pairs: usize, ratio: f64, sigma: f64) -> ComparisonRecord {
    let mut machine = Machine::new(seed, 0.1, sigma);
    ComparisonRecord {
        pairs: (0..pairs).map(|_| machine.pair(ratio)).collect(),
        ..ComparisonRecord::new(id)
    }
}

const QUICK: StopRule = StopRule {
    min_pairs: 10,
    precision: 0.10,
    finest: 0.03,
    max_pairs: 400,
};

fn verdict_of(id: &str, records: &[ComparisonRecord]) -> (Verdict, String) {
    let rows = targets::evaluate(records, &QUICK);
    let at = TARGETS.iter().position(|t| t.comparison == id).unwrap();
    (rows[at].verdict, rows[at].reason.clone())
}

#[test]
fn verdicts_follow_the_interval_met_not_met_or_too_noisy() {
    let id = "lua-release/floor split";
    // Clearly above the goal of 0.95 (the interval allows for the machine
    // drifting, so 5% above it with this noise would not be clear).
    let met = record(id, 1, 60, 1.05, 0.03);
    assert_eq!(verdict_of(id, &[met]).0, Verdict::Met);
    // Clearly below.
    let missed = record(id, 2, 60, 0.8, 0.03);
    assert_eq!(verdict_of(id, &[missed]).0, Verdict::NotMet);
    // Right at the goal, and so noisy that the interval spans it widely.
    let noisy = record(id, 3, 12, 0.95, 0.6);
    let (verdict, why) = verdict_of(id, &[noisy]);
    assert_eq!(verdict, Verdict::Inconclusive);
    assert!(why.contains("machine too noisy"), "{why}");
    // Too few pairs for any verdict.
    let few = record(id, 4, 5, 1.0, 0.01);
    let (verdict, why) = verdict_of(id, &[few]);
    assert_eq!(verdict, Verdict::Inconclusive);
    assert!(why.contains("only 5 pairs"), "{why}");
}

#[test]
fn a_rung_beating_the_floor_beyond_its_interval_is_an_anomaly_not_a_result() {
    let id = "set-nx-px/floor split";
    // Same round trips as the floor, yet 1.5× faster: impossible.
    let (verdict, why) = verdict_of(id, &[record(id, 5, 40, 1.5, 0.03)]);
    assert_eq!(verdict, Verdict::Anomaly);
    assert!(why.contains("round trips"), "{why}");
    // 4% faster is within what a cheaper command can save: a result.
    assert_eq!(
        verdict_of(id, &[record(id, 6, 40, 1.04, 0.02)]).0,
        Verdict::Met
    );
}

#[test]
fn measuring_goes_on_until_the_interval_is_narrow_enough() {
    let id = "redlock/floor 5 nodes";
    // Feed pairs one at a time, as the scheduler does.
    let pairs_needed = |sigma: f64| {
        let mut machine = Machine::new(11, 0.1, sigma);
        let mut record = ComparisonRecord::new(id);
        while record.needs_more(&QUICK) {
            record.pairs.push(machine.pair(0.97));
        }
        let last = record.estimates()[0].unwrap();
        (record.pairs.len(), last)
    };
    let (steady, e) = pairs_needed(0.05);
    assert_eq!(
        steady, QUICK.min_pairs,
        "a steady machine needs only the minimum"
    );
    assert!(e.relative_half_width() <= QUICK.precision);
    let (noisy, e) = pairs_needed(0.4);
    assert!(noisy > steady, "{noisy} pairs");
    assert!(
        e.relative_half_width() <= QUICK.precision || noisy == QUICK.max_pairs,
        "stopped at ±{:.3} after {noisy}",
        e.relative_half_width()
    );
}

/// Ratios of `pairs` pairs on a machine whose state drifts: the ratio the
/// two sides reach wanders around `truth` (in logarithms, an
/// autoregressive walk of stationary spread `drift` that keeps each state
/// for a few pairs: 0.7 correlation from one pair to the next), and each
/// pair adds noise of its own, `sigma`.
fn drifting_ratios(seed: u64, pairs: usize, truth: f64, drift: f64, sigma: f64) -> Vec<f64> {
    let mut rng = Seeded::new(seed);
    let keep: f64 = 0.7;
    let mut state = drift * normal(&mut rng);
    (0..pairs)
        .map(|_| {
            state = keep * state + (1.0 - keep * keep).sqrt() * drift * normal(&mut rng);
            truth * (state + sigma * normal(&mut rng)).exp()
        })
        .collect()
}

#[test]
fn on_a_drifting_machine_the_batched_interval_covers_the_truth_where_independent_pairs_would_not() {
    let truth = 0.965;
    let (series, pairs) = (300, 36);
    let (mut plain_covered, mut drift_covered) = (0, 0);
    let mut widened = 0;
    for seed in 0..series {
        let values = drifting_ratios(1_000 + seed, pairs, truth, 0.02, 0.01);
        let plain = Estimate::median_interval(&values).unwrap();
        let under_drift = Estimate::median_interval_under_drift(&values).unwrap();
        assert_eq!(under_drift.median, plain.median);
        assert!(under_drift.low <= plain.low && plain.high <= under_drift.high);
        if under_drift.interval == IntervalKind::UnderDrift95 {
            widened += 1;
        }
        plain_covered += usize::from(plain.low <= truth && truth <= plain.high);
        drift_covered += usize::from(under_drift.low <= truth && truth <= under_drift.high);
    }
    let plain = plain_covered as f64 / series as f64;
    let under_drift = drift_covered as f64 / series as f64;
    // Pairs that lean together fool the interval built for independent
    // ones; the batches see the wandering and keep the promised 95%.
    assert!(plain < 0.85, "independent-pairs coverage {plain}");
    assert!(under_drift >= 0.93, "batched coverage {under_drift}");
    assert!(widened > series / 2, "widened {widened} of {series}");
}

#[test]
fn without_drift_the_batched_interval_stays_close_to_the_plain_one() {
    let (series, pairs) = (200, 36);
    let mut ratio_of_widths = Vec::new();
    for seed in 0..series {
        let values = drifting_ratios(5_000 + seed, pairs, 1.0, 0.0, 0.02);
        let plain = Estimate::median_interval(&values).unwrap();
        let under_drift = Estimate::median_interval_under_drift(&values).unwrap();
        ratio_of_widths.push(under_drift.relative_half_width() / plain.relative_half_width());
    }
    ratio_of_widths.sort_by(f64::total_cmp);
    // Six batch medians of six pairs each spread a little beyond the
    // interval of all 36: the price of not assuming independence.
    let typical = ratio_of_widths[ratio_of_widths.len() / 2];
    assert!((1.0..1.8).contains(&typical), "typical widening {typical}");
}

#[test]
fn too_few_values_for_batches_give_the_plain_interval() {
    let values: Vec<f64> = (0..17).map(|i| 1.0 + f64::from(i) / 100.0).collect();
    assert_eq!(
        Estimate::median_interval_under_drift(&values),
        Estimate::median_interval(&values)
    );
}

/// One made-up run of `batches` client processes of `per_batch` pairs
/// each: every process has an offset of its own from `truth` (where its
/// code and heap landed), of spread `process` in logarithms, fixed for
/// all its pairs, and each pair adds noise of spread `sigma`.
fn run_of_processes(
    rng: &mut Seeded,
    batches: usize,
    per_batch: usize,
    truth: f64,
    process: f64,
    sigma: f64,
) -> Vec<Vec<f64>> {
    (0..batches)
        .map(|_| {
            let offset = process * normal(rng);
            (0..per_batch)
                .map(|_| truth * (offset + sigma * normal(rng)).exp())
                .collect()
        })
        .collect()
}

#[test]
fn batches_in_processes_of_their_own_carry_what_is_fixed_per_process_into_the_interval() {
    // As measured here: processes differ by about ±0.3%, pairs by ±0.4%.
    let (truth, process, sigma) = (1.02, 0.003, 0.004);
    let mut rng = Seeded::new(77);
    let runs: Vec<(Estimate, Estimate)> = (0..300)
        .map(|_| {
            let batches = run_of_processes(&mut rng, 6, 8, truth, process, sigma);
            let slices: Vec<&[f64]> = batches.iter().map(Vec::as_slice).collect();
            let all: Vec<f64> = batches.concat();
            (
                Estimate::median_interval(&all).unwrap(),
                Estimate::median_over_batches(&slices).unwrap(),
            )
        })
        .collect();
    let covers = |e: &Estimate, x: f64| e.low <= x && x <= e.high;
    let share = |f: &dyn Fn(&(Estimate, Estimate)) -> bool| {
        runs.iter().filter(|r| f(r)).count() as f64 / runs.len() as f64
    };
    // One process's pairs all lean its way: the interval over pairs alone
    // misses the truth far more often than 5%; the batches' does not.
    let plain = share(&|(plain, _)| covers(plain, truth));
    let batched = share(&|(_, batched)| covers(batched, truth));
    assert!(plain < 0.85, "plain coverage {plain}");
    assert!(batched >= 0.95, "batched coverage {batched}");
    // And the next run's median falls inside this run's interval, which is
    // what a reader checking one run against another sees.
    let next_inside = |pick: fn(&(Estimate, Estimate)) -> &Estimate| {
        runs.windows(2)
            .filter(|w| covers(pick(&w[0]), w[1].1.median))
            .count() as f64
            / (runs.len() - 1) as f64
    };
    let plain_next = next_inside(|r| &r.0);
    let batched_next = next_inside(|r| &r.1);
    assert!(plain_next < 0.75, "plain: next median inside {plain_next}");
    assert!(
        batched_next >= 0.88,
        "batched: next median inside {batched_next}"
    );
}

#[test]
fn too_few_usable_batches_give_a_range_that_reaches_every_batch_and_no_verdict() {
    let big: Vec<f64> = (0..10).map(|i| 1.0 + f64::from(i) / 1000.0).collect();
    let tiny = [5.0, 6.0];
    let mut batches: Vec<&[f64]> = vec![&big; 5];
    batches.push(&tiny);
    // Five batches of ten and one of two: fewer than six usable batches,
    // so no interval; the range reaches the small batch's median too.
    let all: Vec<f64> = batches.concat();
    let plain = Estimate::median_interval(&all).unwrap();
    let e = Estimate::median_over_batches(&batches).unwrap();
    assert_eq!(e.interval, IntervalKind::Range);
    assert!(!e.is_interval());
    assert_eq!((e.median, e.low, e.high), (plain.median, plain.low, 5.5));
    // One batch alone: the plain interval.
    assert_eq!(
        Estimate::median_over_batches(&[&big]),
        Estimate::median_interval(&big)
    );
}

#[test]
fn a_repeat_runs_median_lands_inside_the_repeat_interval_about_as_often_as_its_level_says() {
    // The same machine as above: processes differ by about ±0.3%, pairs
    // by ±0.4%; runs of six batches of eight pairs.
    let (truth, process, sigma) = (1.02, 0.003, 0.004);
    let mut rng = Seeded::new(78);
    let estimates: Vec<Estimate> = (0..600)
        .map(|_| {
            let batches = run_of_processes(&mut rng, 6, 8, truth, process, sigma);
            let slices: Vec<&[f64]> = batches.iter().map(Vec::as_slice).collect();
            Estimate::median_over_batches(&slices)
                .unwrap()
                .with_repeat(&slices, targets::REPEAT_LEVEL)
        })
        .collect();
    let inside = |e: &Estimate, x: f64| {
        let (low, high) = e.outer();
        low <= x && x <= high
    };
    // Each run against the next, as a reader sets two reports side by side.
    let next_inside = estimates
        .windows(2)
        .filter(|w| inside(&w[0], w[1].median))
        .count() as f64
        / (estimates.len() - 1) as f64;
    let level = targets::REPEAT_LEVEL;
    assert!(level > 0.99 && level < 0.995, "{level}");
    assert!(
        next_inside >= 0.985,
        "next run's median inside {next_inside}"
    );
    // The confidence interval alone, as before: about one run in ten falls
    // outside it.
    let ci_next = estimates
        .windows(2)
        .filter(|w| w[0].low <= w[1].median && w[1].median <= w[0].high)
        .count() as f64
        / (estimates.len() - 1) as f64;
    assert!(ci_next < 0.95, "confidence interval: next inside {ci_next}");
    // Not by being wide: about ±1%, where the goals are 5% away.
    let mut halves: Vec<f64> = estimates
        .iter()
        .map(Estimate::outer_relative_half_width)
        .collect();
    halves.sort_by(f64::total_cmp);
    let typical = halves[halves.len() / 2];
    assert!(typical < 0.012, "typical half-width {typical}");
    assert!(
        estimates
            .iter()
            .all(|e| e.repeat.is_some_and(|r| r.low <= e.low && e.high <= r.high)),
        "a repeat interval is never narrower than the confidence interval"
    );
}

#[test]
fn fewer_than_six_usable_batches_give_no_repeat_interval() {
    let values: Vec<f64> = (0..10).map(|i| 1.0 + f64::from(i) / 1000.0).collect();
    let five: Vec<&[f64]> = vec![&values; 5];
    let e = Estimate::median_over_batches(&five).unwrap();
    assert_eq!(e.with_repeat(&five, 0.99).repeat, None);
    let six: Vec<&[f64]> = vec![&values; 6];
    let e = Estimate::median_over_batches(&six).unwrap();
    // Six identical batches: no spread between them, so the repeat
    // interval is the confidence interval itself.
    let r = e.with_repeat(&six, 0.99).repeat.unwrap();
    assert_eq!((r.low, r.high, r.level), (e.low, e.high, 0.99));
}
