//! The measurement: every workload group in turn, each interleaving the
//! compared implementations round by round.

mod contention;
mod inventory;
mod uncontended;
mod watchdog;

use crate::client::{Client, Common, Impl, Node};
use crate::env;
use crate::options::Sizes;
use crate::placement::Pinning;
use crate::plot::LatencySeries;
use crate::report::{Figures, Ratios, Subject};
use crate::stats::{Rounds, round3};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Lease TTL of every workload but the watchdog's: far longer than any
/// cycle, so no lease expires while held.
pub const TTL: Duration = Duration::from_millis(10_000);
/// Acquire budget of the rungs: a slice ends long before it.
const MAX_WAIT: Duration = Duration::from_secs(60);
/// The client settings of every workload but the watchdog's.
const COMMON: Common = Common {
    ttl: TTL,
    max_wait: MAX_WAIT,
};

/// Everything a run measured, ready for the report.
pub struct Measurement {
    /// redis-server, rustc and crate versions.
    pub versions: BTreeMap<String, String>,
    /// The figures of every workload.
    pub figures: Figures,
    /// Latency of the single-node uncontended group, for the CDF plot.
    pub latency_cdf: Vec<LatencySeries>,
}

/// A run in progress: where to connect, how long each part takes, and the
/// prefix every key and channel of the run carries.
pub struct Session {
    sizes: Sizes,
    nodes: Vec<Node>,
    prefix: String,
    pinning: Pinning,
    started: Instant,
}

impl Session {
    /// A session over `nodes` (node 0 first), placed as `pinning` says.
    pub fn new(sizes: Sizes, nodes: Vec<Node>, prefix: String, pinning: Pinning) -> Session {
        Session {
            sizes,
            nodes,
            prefix,
            pinning,
            started: Instant::now(),
        }
    }

    /// Measures every group: uncontended (split and same-CPU placement,
    /// Redlock scaling), contention, inventory and the watchdog.
    pub async fn measure(&self) -> anyhow::Result<Measurement> {
        let versions = env::versions(&self.nodes[0]).await;
        let split = self.uncontended_split().await?;
        let mut figures = Figures {
            uncontended: split.rows(1),
            raw_rtt: vec![split.rtt_row("split")],
            ..Figures::default()
        };
        if let Some(same_cpu) = self.uncontended_same_cpu().await? {
            figures.raw_rtt.push(same_cpu.rtt_row("same-cpu"));
            figures.uncontended_same_cpu = same_cpu.rows(1);
        }
        figures.uncontended.extend(self.redlock_scaling().await?);
        figures.contention = self.contention().await?;
        figures.inventory = self.inventory().await?;
        figures.watchdog = self.watchdog().await?;
        Ok(Measurement {
            versions,
            figures,
            latency_cdf: split.latency_series(),
        })
    }

    /// One progress line on standard error, with the time since the start.
    fn progress(&self, what: &str) {
        let t = self.started.elapsed().as_secs();
        eprintln!("[{:02}:{:02}] {what}", t / 60, t % 60);
    }

    /// Connects each of `impls` to the first `nodes` nodes, each with a
    /// seed of its own from `first_seed` on.
    async fn connect_all(
        &self,
        impls: &[Impl],
        nodes: usize,
        first_seed: u64,
    ) -> anyhow::Result<Vec<Arc<Client>>> {
        let mut clients = Vec::new();
        for (seed, which) in (first_seed..).zip(impls) {
            clients.push(Arc::new(
                Client::connect(*which, &self.nodes[..nodes], COMMON, seed).await?,
            ));
        }
        Ok(clients)
    }
}

/// The order of `len` implementations in round `round`: rotated each round
/// so no implementation always runs first or right after the same
/// neighbour.
fn rotated(round: u32, len: usize) -> impl Iterator<Item = usize> {
    (0..len).map(move |step| (step + round as usize) % len)
}

/// The floor's and rslock's rates by round, which every row is compared to.
struct Baselines {
    floor: Option<Rounds>,
    rslock: Option<Rounds>,
}

impl Baselines {
    /// The floor's and rslock's rates among `rates`, wherever they are.
    fn find<'a>(rates: impl IntoIterator<Item = (Impl, &'a Rounds)>) -> Baselines {
        let mut baselines = Baselines {
            floor: None,
            rslock: None,
        };
        for (which, rounds) in rates {
            match which {
                Impl::Floor => baselines.floor = Some(rounds.clone()),
                Impl::Rslock => baselines.rslock = Some(rounds.clone()),
                Impl::Rung(..) => {}
            }
        }
        baselines
    }

    /// Median round-by-round ratios of `rates` to the floor's and
    /// rslock's.
    fn ratios(&self, rates: &Rounds) -> Ratios {
        Ratios {
            vs_floor: ratio(rates, self.floor.as_ref()),
            vs_rslock: ratio(rates, self.rslock.as_ref()),
        }
    }
}

/// The report's name of `which` on `nodes` nodes.
fn subject(which: Impl, nodes: usize) -> Subject {
    Subject {
        impl_: which.name().to_string(),
        wait: which.wait().to_string(),
        nodes,
    }
}

fn ratio(rates: &Rounds, baseline: Option<&Rounds>) -> Option<f64> {
    baseline.and_then(|b| rates.ratio_to(b)).map(round3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_round_starts_one_later_and_runs_everyone_once() {
        let orders: Vec<Vec<usize>> = (0..3).map(|r| rotated(r, 3).collect()).collect();
        assert_eq!(orders, [[0, 1, 2], [1, 2, 0], [2, 0, 1]]);
    }

    #[test]
    fn ratios_are_to_the_floor_and_rslock_wherever_they_are() {
        let floor = Rounds(vec![100.0, 200.0]);
        let rslock = Rounds(vec![50.0, 100.0]);
        let rung = Rounds(vec![100.0, 200.0]);
        let baselines = Baselines::find([
            (Impl::Rung("lua-release", crate::client::Wait::Fixed), &rung),
            (Impl::Rslock, &rslock),
            (Impl::Floor, &floor),
        ]);
        let ratios = baselines.ratios(&rung);
        assert_eq!(ratios.vs_floor, Some(1.0));
        assert_eq!(ratios.vs_rslock, Some(2.0));
        assert_eq!(Baselines::find([]).ratios(&rung).vs_floor, None);
    }
}
