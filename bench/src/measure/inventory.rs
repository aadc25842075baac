//! The inventory sale under load: whether a lock keeps the stock right,
//! and at what speed.

use super::{Baselines, Session, TTL, shuffled, subject};
use crate::client::{Impl, Wait, raw_connection};
use crate::report::InventoryRow;
use crate::rng::Seeded;
use crate::stats::{Rounds, round3};
use crate::workload::{self, SaleSample};

/// Concurrent buyers.
const BUYERS: usize = 16;
/// The most nodes a multi-node rung sells over.
const MAX_NODES: usize = 5;

/// One implementation's sales, summed over rounds.
struct Tally {
    which: Impl,
    nodes: usize,
    rates: Rounds,
    oversold: i64,
    errors: u64,
}

impl Tally {
    fn add(&mut self, sample: &SaleSample) {
        self.rates.0.push(sample.rate());
        self.oversold += sample.oversold;
        self.errors += sample.errors;
    }

    fn row(&self, baselines: &Baselines, seed: u64) -> InventoryRow {
        InventoryRow {
            subject: subject(self.which, self.nodes),
            sales_per_s: round3(self.rates.spread().median),
            oversold: self.oversold,
            errors: self.errors,
            ratios: baselines.ratios(&self.rates, seed),
        }
    }
}

/// Slices of one round of the sale: what the run plans its time with.
pub(super) fn planned_slices() -> usize {
    sellers().len()
}

/// The floor, rslock and every rung (`no-lock` too, to show the damage),
/// each waiting with notify where its release publishes, else backing off.
fn sellers() -> Vec<Impl> {
    let mut impls = vec![Impl::Floor, Impl::Rslock];
    impls.extend(locks::LADDER.iter().map(|rung| {
        let wait = if rung.publishes {
            Wait::Notify
        } else {
            Wait::Backoff
        };
        Impl::Rung(rung.id, wait)
    }));
    impls
}

impl Session {
    /// Interleaved rounds of the sale by every seller; the stock is on
    /// node 0.
    pub(super) async fn inventory(&self) -> anyhow::Result<Vec<InventoryRow>> {
        let impls = sellers();
        let mut tallies = Vec::new();
        let mut clients = Vec::new();
        for (seed, which) in (200..).zip(&impls) {
            let nodes = if which.multi_node() {
                self.nodes.len().min(MAX_NODES)
            } else {
                1
            };
            clients.extend(self.connect_all(&[*which], nodes, seed).await?);
            tallies.push(Tally {
                which: *which,
                nodes,
                rates: Rounds::default(),
                oversold: 0,
                errors: 0,
            });
        }
        let stock_conn = raw_connection(&self.nodes[0].addr).await?;
        let rounds = self.sizes.contention_rounds;
        let mut rng = Seeded::new(0x0069_6e76);
        for round in 0..rounds {
            for i in shuffled(&mut rng, impls.len()) {
                let prefix = format!("{}i:{}:{round}:", self.prefix, impls[i].label());
                let s = workload::inventory(
                    clients[i].clone(),
                    &stock_conn,
                    &prefix,
                    BUYERS,
                    TTL,
                    self.sizes.contention_slice,
                )
                .await?;
                self.progress(&format!(
                    "inventory round {}/{rounds}: {} {:.0} sales/s, oversold {}",
                    round + 1,
                    impls[i].label(),
                    s.rate(),
                    s.oversold
                ));
                tallies[i].add(&s);
            }
        }
        let baselines = Baselines::find(tallies.iter().map(|t| (t.which, &t.rates)));
        Ok((2000..)
            .zip(&tallies)
            .map(|(seed, t)| t.row(&baselines, seed))
            .collect())
    }
}
