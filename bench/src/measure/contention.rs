//! Many tasks of one client on one key or on many keys: the handoff.

use super::{Baselines, Session, TTL, shuffled, subject};
use crate::client::{Impl, Wait};
use crate::report::ContentionRow;
use crate::rng::Seeded;
use crate::stats::{Rounds, Waits, median, round3};
use crate::workload::{self, ContentionSample, SliceEnd};

/// The floor, rslock, and `lua-release` with each wait strategy.
fn contenders() -> Vec<Impl> {
    let waits = [Wait::Fixed, Wait::Backoff, Wait::Notify];
    let mut impls = vec![Impl::Floor, Impl::Rslock];
    impls.extend(waits.map(|wait| Impl::Rung("lua-release", wait)));
    impls
}

/// Concurrent tasks of one client.
const WORKERS: [usize; 4] = [1, 4, 16, 64];
/// The key counts: all tasks on one key, or spread over many.
const KEY_COUNTS: [usize; 2] = [1, 64];

/// Slices of one round of the contention table: what the run plans its
/// time with.
pub(super) fn planned_slices() -> usize {
    WORKERS.len() * KEY_COUNTS.len() * contenders().len()
}

/// One implementation's figures in one cell (workers × keys), summed over
/// rounds.
struct Tally {
    which: Impl,
    rates: Rounds,
    waits: Waits,
    fairness: Vec<f64>,
    /// The most starved workers in any one round: a sum would grow with
    /// the rounds and could no longer be read against the workers.
    starved: usize,
    errors: u64,
}

impl Tally {
    fn new(which: Impl) -> Tally {
        Tally {
            which,
            rates: Rounds::default(),
            waits: Waits::default(),
            fairness: Vec::new(),
            starved: 0,
            errors: 0,
        }
    }

    fn add(&mut self, sample: &ContentionSample) {
        self.rates.0.push(sample.rate());
        self.waits.add(&sample.waits);
        self.fairness.push(sample.fairness());
        self.starved = self.starved.max(sample.starved());
        self.errors += sample.errors;
    }

    fn row(&self, workers: usize, keys: usize, baselines: &Baselines, seed: u64) -> ContentionRow {
        let spread = self.rates.spread();
        let mut wait_lower_bounds = Vec::new();
        let mut quantile = |q: f64, field: &str| {
            let at = self.waits.quantile(q);
            if at.lower_bound {
                wait_lower_bounds.push(field.to_string());
            }
            at.us
        };
        let (wait_p50_us, wait_p99_us, wait_p999_us) = (
            quantile(0.5, "wait_p50_us"),
            quantile(0.99, "wait_p99_us"),
            quantile(0.999, "wait_p999_us"),
        );
        if self.waits.max_is_lower_bound() {
            wait_lower_bounds.push("wait_max_us".to_string());
        }
        ContentionRow {
            subject: subject(self.which, 1),
            workers,
            keys,
            acq_per_s: round3(spread.median),
            acq_per_s_min: round3(spread.min),
            acq_per_s_max: round3(spread.max),
            wait_p50_us,
            wait_p99_us,
            wait_p999_us,
            wait_max_us: self.waits.max_us,
            wait_lower_bounds,
            waits_open: self.waits.open_count(),
            fairness: round3(median(&self.fairness)),
            starved_workers: self.starved,
            errors: self.errors,
            ratios: baselines.ratios(&self.rates, seed),
        }
    }
}

impl Session {
    /// Every cell of keys × workers, on node 0.
    pub(super) async fn contention(&self) -> anyhow::Result<Vec<ContentionRow>> {
        let contenders = contenders();
        let clients = self.connect_all(&contenders, 1, 100).await?;
        let mut rows = Vec::new();
        let mut rng = Seeded::new(0x636f_6e74);
        for keys in KEY_COUNTS {
            for workers in WORKERS {
                let mut tallies: Vec<Tally> = contenders.iter().map(|w| Tally::new(*w)).collect();
                for round in 0..self.sizes.contention_rounds {
                    for i in shuffled(&mut rng, contenders.len()) {
                        let which = contenders[i];
                        let prefix = format!(
                            "{}c:{workers}:{keys}:{}:{round}:",
                            self.prefix,
                            which.label()
                        );
                        let s = workload::contention(
                            clients[i].clone(),
                            &prefix,
                            workers,
                            keys,
                            TTL,
                            SliceEnd::After(self.sizes.contention_slice),
                        )
                        .await;
                        let p999 = s.waits.quantile(0.999);
                        self.progress(&format!(
                            "contention {workers} workers / {keys} key(s) round {}/{}: {} {:.0} acq/s wait p99.9 {}{} µs fairness {:.2} starved {}",
                            round + 1,
                            self.sizes.contention_rounds,
                            which.label(),
                            s.rate(),
                            if p999.lower_bound { "≥ " } else { "" },
                            p999.us,
                            s.fairness(),
                            s.starved()
                        ));
                        tallies[i].add(&s);
                    }
                }
                let baselines = Baselines::find(tallies.iter().map(|t| (t.which, &t.rates)));
                let seed = 1000 + rows.len() as u64;
                rows.extend(
                    (seed..)
                        .zip(&tallies)
                        .map(|(seed, t)| t.row(workers, keys, &baselines, seed)),
                );
            }
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Wait;
    use crate::workload::WorkerCount;
    use std::time::Duration;

    /// A slice's length in the made-up runs.
    const SLICE_US: u64 = 400_000;
    /// Every completed wait of the made-up runs.
    const HANDOFF_US: u64 = 60;

    /// A made-up slice of `workers` on one key: worker 0 takes the lock
    /// `served` times with a wait of [`HANDOFF_US`] each and ends 30 µs
    /// into a wait; every other worker waits the whole slice and never
    /// gets it.
    fn one_lucky_worker(workers: usize, served: u64) -> ContentionSample {
        let mut lucky = WorkerCount::default();
        for _ in 0..served {
            lucky.acquired(HANDOFF_US, 1);
        }
        lucky.still_waiting_at_end(30, 1);
        let starved = (1..workers).map(|_| {
            let mut w = WorkerCount::default();
            w.still_waiting_at_end(SLICE_US, served + 1);
            w
        });
        ContentionSample::of_workers(
            std::iter::once(lucky).chain(starved),
            Duration::from_micros(SLICE_US),
        )
    }

    /// A made-up slice in which all `workers` take turns, `each` times
    /// apiece, and end a short wait into the next turn.
    fn everyone_served(workers: usize, each: u64) -> ContentionSample {
        let all = (0..workers).map(|_| {
            let mut w = WorkerCount::default();
            for _ in 0..each {
                w.acquired(HANDOFF_US, workers as u64);
            }
            w.still_waiting_at_end(HANDOFF_US / 2, workers as u64 / 2);
            w
        });
        ContentionSample::of_workers(all, Duration::from_micros(SLICE_US))
    }

    fn row_of(samples: &[ContentionSample], workers: usize) -> ContentionRow {
        let mut tally = Tally::new(Impl::Rung("lua-release", Wait::Fixed));
        for s in samples {
            tally.add(s);
        }
        tally.row(workers, 1, &Baselines::find([]), 1)
    }

    #[test]
    fn starved_workers_raise_the_percentiles_to_at_least_their_open_time() {
        // 15 of 16 workers starve: 15 censored waits among 1016, 1.5 %.
        let sample = one_lucky_worker(16, 1000);
        // Counting only the completed waits, as before, the lucky worker's
        // handoffs are all there is.
        let completed_p99_us = sample.waits.completed.value_at_quantile(0.99);
        assert!(completed_p99_us < 100, "{completed_p99_us}");
        let row = row_of(&[sample], 16);
        assert!(row.wait_p99_us >= SLICE_US, "{}", row.wait_p99_us);
        assert!(row.wait_p999_us >= SLICE_US, "{}", row.wait_p999_us);
        assert_eq!(row.wait_max_us, SLICE_US);
        // The median is among the completed handoffs and is exact.
        assert!(row.wait_p50_us < 100, "{}", row.wait_p50_us);
        assert_eq!(
            row.wait_lower_bounds,
            ["wait_p99_us", "wait_p999_us", "wait_max_us"]
        );
        assert_eq!(row.waits_open, 16);
    }

    #[test]
    fn the_starved_count_is_the_workers_never_served_in_the_worst_round() {
        let samples = [
            one_lucky_worker(16, 1000),
            everyone_served(16, 100),
            one_lucky_worker(16, 2000),
        ];
        assert_eq!(samples.each_ref().map(|s| s.starved()), [15, 0, 15]);
        let row = row_of(&samples, 16);
        assert_eq!(row.starved_workers, 15);
        assert_eq!(row.waits_open, 16 * 3);
    }

    #[test]
    fn when_everyone_is_served_nothing_starves_and_rare_open_waits_leave_the_tail_exact() {
        // 16 short open waits among 32 016: fewer than 0.1 %, so even the
        // p99.9 is reached by completed waits alone.
        let row = row_of(&[everyone_served(16, 2000)], 16);
        assert_eq!(row.starved_workers, 0);
        assert_eq!(row.fairness, 1.0);
        assert!(row.wait_p999_us < 100, "{}", row.wait_p999_us);
        assert!(
            row.wait_lower_bounds.is_empty(),
            "{:?}",
            row.wait_lower_bounds
        );
        // 16 among 1616 (1 %): the p99.9 falls where an open wait may in
        // truth have been longer, so it is only a lower bound.
        let row = row_of(&[everyone_served(16, 100)], 16);
        assert_eq!(row.starved_workers, 0);
        assert_eq!(row.wait_lower_bounds, ["wait_p999_us"]);
    }
}
