//! The watchdog on long critical sections: how often it renews, and what
//! that costs beside `lua-release` with a TTL longer than the section.

use super::{COMMON, MAX_WAIT, Session, TTL};
use crate::client::{Client, Common, Impl, Wait};
use crate::report::WatchdogRow;
use crate::stats::{Rounds, round3};
use crate::workload;
use redis::aio::MultiplexedConnection;
use std::sync::Arc;
use std::time::Duration;

/// Watchdog TTL: short, so that long sections need many renewals.
const WATCHDOG_TTL: Duration = Duration::from_millis(60);
/// Tasks holding a lease each, on keys of their own.
const HOLDERS: usize = 4;

/// The time the watchdog part takes: what the run plans its time with.
pub(super) fn planned(sizes: &crate::options::Sizes) -> Duration {
    sizes
        .watchdog_cs_ms
        .iter()
        .map(|&cs_ms| slice(sizes, Duration::from_millis(cs_ms)) * 2 * sizes.watchdog_rounds)
        .sum()
}

/// One slice of the watchdog part, holding for `cs`: several sections
/// long, and at least four uncontended slices.
fn slice(sizes: &crate::options::Sizes, cs: Duration) -> Duration {
    (sizes.slice * 4).max(cs * 3)
}

/// The two compared clients and the connection that reads the server's
/// command counts.
struct Holders {
    watchdog: Arc<Client>,
    baseline: Arc<Client>,
    stats_conn: MultiplexedConnection,
}

/// One section length's figures, summed over rounds.
#[derive(Default)]
struct Tally {
    watchdog_rates: Rounds,
    baseline_rates: Rounds,
    renewals: u64,
    holds: u64,
    lost: u64,
}

impl Tally {
    fn row(&self, cs_ms: u64) -> WatchdogRow {
        WatchdogRow {
            cs_ms,
            ttl_ms: WATCHDOG_TTL.as_millis() as u64,
            renewals: if self.holds > 0 {
                round3(self.renewals as f64 / self.holds as f64)
            } else {
                0.0
            },
            cycles_per_s: round3(self.watchdog_rates.spread().median),
            baseline_cycles_per_s: round3(self.baseline_rates.spread().median),
            lost: self.lost,
        }
    }
}

impl Session {
    /// Each section length of the sizes, on node 0.
    pub(super) async fn watchdog(&self) -> anyhow::Result<Vec<WatchdogRow>> {
        let node0 = &self.nodes[..1];
        let watchdog_common = Common {
            ttl: WATCHDOG_TTL,
            max_wait: MAX_WAIT,
        };
        let holders = Holders {
            watchdog: Arc::new(
                Client::connect(
                    Impl::Rung("watchdog", Wait::Fixed),
                    node0,
                    watchdog_common,
                    300,
                )
                .await?,
            ),
            baseline: Arc::new(
                Client::connect(Impl::Rung("lua-release", Wait::Fixed), node0, COMMON, 301).await?,
            ),
            stats_conn: crate::client::raw_connection(&self.nodes[0].addr).await?,
        };
        let mut rows = Vec::new();
        for &cs_ms in self.sizes.watchdog_cs_ms {
            let mut tally = Tally::default();
            for round in 0..self.sizes.watchdog_rounds {
                self.watchdog_round(&holders, cs_ms, round, &mut tally)
                    .await;
            }
            rows.push(tally.row(cs_ms));
        }
        Ok(rows)
    }

    /// One slice of the watchdog, then one of the baseline, holding for
    /// `cs_ms`.
    async fn watchdog_round(&self, holders: &Holders, cs_ms: u64, round: u32, tally: &mut Tally) {
        let cs = Duration::from_millis(cs_ms);
        let slice = slice(&self.sizes, cs);
        let prefix = format!("{}w:{cs_ms}:{round}:", self.prefix);
        let before = workload::evalsha_calls(&holders.stats_conn).await;
        let held = workload::long_sections(
            holders.watchdog.clone(),
            &prefix,
            HOLDERS,
            WATCHDOG_TTL,
            cs,
            slice,
        )
        .await;
        let after = workload::evalsha_calls(&holders.stats_conn).await;
        // Each hold is one acquire and one release script; the rest are
        // renewals (and the two INFO reads are not EVALSHA).
        let renewals = after.saturating_sub(before).saturating_sub(2 * held.cycles);
        let baseline = workload::long_sections(
            holders.baseline.clone(),
            &format!("{prefix}base:"),
            HOLDERS,
            TTL,
            cs,
            slice,
        )
        .await;
        self.progress(&format!(
            "watchdog {cs_ms} ms sections: {:.1} cycles/s (lua-release {:.1}), {renewals} renewals, {} lost",
            held.rate(),
            baseline.rate(),
            held.lost
        ));
        tally.renewals += renewals;
        tally.holds += held.cycles;
        tally.lost += held.lost;
        tally.watchdog_rates.0.push(held.rate());
        tally.baseline_rates.0.push(baseline.rate());
    }
}
