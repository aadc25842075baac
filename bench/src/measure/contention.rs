//! Many tasks of one client on one key or on many keys: the handoff.

use super::{Baselines, Session, TTL, rotated, subject};
use crate::client::{Impl, Wait};
use crate::report::ContentionRow;
use crate::stats::{Rounds, histogram, median, quantile_us, round3};
use crate::workload::{self, ContentionSample};
use hdrhistogram::Histogram;

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

/// One implementation's figures in one cell (workers × keys), summed over
/// rounds.
struct Tally {
    which: Impl,
    rates: Rounds,
    wait: Histogram<u64>,
    wait_max_us: u64,
    fairness: Vec<f64>,
    errors: u64,
}

impl Tally {
    fn new(which: Impl) -> Tally {
        Tally {
            which,
            rates: Rounds::default(),
            wait: histogram(),
            wait_max_us: 0,
            fairness: Vec::new(),
            errors: 0,
        }
    }

    fn add(&mut self, sample: &ContentionSample) {
        self.rates.0.push(sample.rate());
        let _ = self.wait.add(&sample.wait);
        self.wait_max_us = self.wait_max_us.max(sample.wait_max_us);
        self.fairness.push(sample.fairness());
        self.errors += sample.errors;
    }

    fn row(&self, workers: usize, keys: usize, baselines: &Baselines) -> ContentionRow {
        let spread = self.rates.spread();
        ContentionRow {
            subject: subject(self.which, 1),
            workers,
            keys,
            acq_per_s: round3(spread.median),
            acq_per_s_min: round3(spread.min),
            acq_per_s_max: round3(spread.max),
            wait_p50_us: quantile_us(&self.wait, 0.5),
            wait_p99_us: quantile_us(&self.wait, 0.99),
            wait_p999_us: quantile_us(&self.wait, 0.999),
            wait_max_us: self.wait_max_us,
            fairness: round3(median(&self.fairness)),
            errors: self.errors,
            ratios: baselines.ratios(&self.rates),
        }
    }
}

impl Session {
    /// Every cell of keys × workers, on node 0.
    pub(super) async fn contention(&self) -> anyhow::Result<Vec<ContentionRow>> {
        let contenders = contenders();
        let clients = self.connect_all(&contenders, 1, 100).await?;
        let mut rows = Vec::new();
        for keys in KEY_COUNTS {
            for workers in WORKERS {
                let mut tallies: Vec<Tally> = contenders.iter().map(|w| Tally::new(*w)).collect();
                for round in 0..self.sizes.contention_rounds {
                    for i in rotated(round, contenders.len()) {
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
                            self.sizes.contention_slice,
                        )
                        .await;
                        self.progress(&format!(
                            "contention {workers} workers / {keys} key(s) round {}/{}: {} {:.0} acq/s wait p99.9 {} µs fairness {:.2}",
                            round + 1,
                            self.sizes.contention_rounds,
                            which.label(),
                            s.rate(),
                            quantile_us(&s.wait, 0.999),
                            s.fairness()
                        ));
                        tallies[i].add(&s);
                    }
                }
                let baselines = Baselines::find(tallies.iter().map(|t| (t.which, &t.rates)));
                rows.extend(tallies.iter().map(|t| t.row(workers, keys, &baselines)));
            }
        }
        Ok(rows)
    }
}
