//! Uncontended acquire + release on one task, beside the raw `PING`.

use super::{Baselines, RefPhase, Session, TTL, shuffled, subject};
use crate::client::{Floor, Impl, Node, Wait};
use crate::interval::Estimate;
use crate::noise;
use crate::physics;
use crate::plot::LatencySeries;
use crate::report::{RttRow, SimulatedNode, UncontendedRow};
use crate::rng::Seeded;
use crate::stats::{Rounds, histogram, quantile_us, round3};
use crate::targets::Placement;
use crate::workload::{self, CycleSample};
use hdrhistogram::Histogram;

/// The closest comparisons, repeated with client and node 0 on one CPU:
/// same-CPU round trips are short and steady (cross-CPU wake-ups of a
/// virtual machine are not).
const SAME_CPU: [Impl; 7] = [
    Impl::Floor,
    Impl::Rslock,
    Impl::Rung("set-nx-px", Wait::Fixed),
    Impl::Rung("lua-release", Wait::Fixed),
    Impl::Rung("lua-release", Wait::Notify),
    Impl::Rung("redlock", Wait::Fixed),
    Impl::Rung("fenced", Wait::Fixed),
];

/// Redlock beside the floor, rslock and the `rslock` rung (the crate's
/// model) on as many nodes.
const SCALING: [Impl; 4] = [
    Impl::Floor,
    Impl::Rung("redlock", Wait::Fixed),
    Impl::Rslock,
    Impl::Rung("rslock", Wait::Fixed),
];

/// The baselines measured on the simulated node beside the rungs of
/// [`physics::SIMULATED_NODE_ROWS`]: the floor, and `lua-release`, whose
/// owner-checked release is the one `native-cad` does without Lua.
const SIMULATED_BASELINES: [Impl; 2] = [Impl::Floor, Impl::Rung("lua-release", Wait::Fixed)];

/// Node counts of the scaling group (one node is in the split group).
const SCALING_NODES: [usize; 2] = [3, 5];

/// What the report says of the rows measured on the simulated node.
const SIMULATED_NOTE: &str = "On locklab's simulated node (simredis) over TCP on 127.0.0.1, \
     not redis-server: no server here answers DELEX/DELIFEQ (Redis 8.4, Valkey 9.0), which \
     native-cad releases with. The floor and lua-release ran on the same node in the same \
     rounds: compare these rows with each other, never with the redis-server rows. No row here \
     is flagged for beating the floor: the allowance for a cheaper command on the floor's round \
     trips was measured on redis-server, and this node's commands and Lua cost otherwise.";

/// Where a group's `PING` slices are recorded besides the group.
#[derive(Debug, Clone, Copy)]
enum Pings {
    /// In the run's reference loop too, under this placement: node 0 is
    /// one of the run's servers.
    Reference(Placement),
    /// With the group only: a server apart from the run's.
    Own,
}

impl Pings {
    /// What the group's shuffle seed adds (the placement's, as before
    /// there were other `PING`s).
    fn seed(self) -> u64 {
        match self {
            Pings::Reference(placement) => placement as u64,
            Pings::Own => 0x51,
        }
    }
}

/// Rates by round and every cycle's latency, of one implementation or of
/// `PING`.
struct Cycles {
    rates: Rounds,
    latency: Histogram<u64>,
}

impl Cycles {
    fn new() -> Cycles {
        Cycles {
            rates: Rounds::default(),
            latency: histogram(),
        }
    }

    fn add(&mut self, sample: &CycleSample) {
        self.rates.0.push(sample.rate());
        let _ = self.latency.add(&sample.hist);
    }
}

/// One implementation's cycles in a group.
struct Measured {
    which: Impl,
    cycles: Cycles,
}

/// Which server a group measured: the physics' allowance for a cheaper
/// command on the same round trip ([`physics::SAME_TRIPS_ALLOWANCE`]) was
/// measured on redis-server, so only its rows are judged by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    /// The run's redis-server nodes (or those given by URL).
    Redis,
    /// locklab's simulated node, whose commands and Lua cost what they
    /// cost there.
    Simulated,
}

/// What one uncontended group measured.
pub(super) struct Group {
    measured: Vec<Measured>,
    /// The group's `PING` slices on node 0.
    pings: Cycles,
    server: Server,
}

impl Group {
    /// An empty group of `impls` on the run's redis-server nodes (and,
    /// for a service beside Redis, its server), filled slice by slice with
    /// [`Group::add`] by a measurement of its own, without `PING`s.
    pub(super) fn of(impls: &[Impl]) -> Group {
        Group {
            measured: impls
                .iter()
                .map(|which| Measured {
                    which: *which,
                    cycles: Cycles::new(),
                })
                .collect(),
            pings: Cycles::new(),
            server: Server::Redis,
        }
    }

    /// Adds a slice of the group's `i`th implementation.
    pub(super) fn add(&mut self, i: usize, sample: &CycleSample) {
        self.measured[i].cycles.add(sample);
    }

    /// The report's rows, on `nodes` nodes; the intervals' bootstraps are
    /// seeded from `seed` on.
    pub(super) fn rows(&self, nodes: usize, seed: u64) -> Vec<UncontendedRow> {
        let baselines = Baselines::find(self.measured.iter().map(|m| (m.which, &m.cycles.rates)));
        (seed..)
            .zip(&self.measured)
            .map(|(seed, Measured { which, cycles })| {
                let spread = cycles.rates.spread();
                let ratios = baselines.ratios(&cycles.rates, seed);
                let round_trips = physics::round_trips(*which);
                let anomaly = match self.server {
                    Server::Redis => anomaly(*which, &ratios),
                    Server::Simulated => None,
                };
                UncontendedRow {
                    subject: subject(*which, nodes),
                    round_trips,
                    cycles_per_s: round3(spread.median),
                    cycles_per_s_min: round3(spread.min),
                    cycles_per_s_max: round3(spread.max),
                    cycles_per_s_interval: Estimate::of(&cycles.rates.0, seed ^ 0xc1)
                        .map(Estimate::rounded),
                    bound_per_s: None,
                    p50_us: quantile_us(&cycles.latency, 0.5),
                    p99_us: quantile_us(&cycles.latency, 0.99),
                    p999_us: quantile_us(&cycles.latency, 0.999),
                    anomaly,
                    ratios,
                }
            })
            .collect()
    }

    /// Each implementation's latency, for the CDF plot.
    pub(super) fn latency_series(&self) -> Vec<LatencySeries> {
        self.measured
            .iter()
            .map(|Measured { which, cycles }| LatencySeries {
                label: which.label(),
                latency: cycles.latency.clone(),
            })
            .collect()
    }
}

/// Why a row's ratio to the floor is physically implausible, if it is: it
/// beats the floor beyond its interval with at least as many round trips.
/// An etcd or ZooKeeper row is not judged: its round trips are to
/// another server, whose round trip is not the floor's.
fn anomaly(which: Impl, ratios: &crate::report::Ratios) -> Option<String> {
    if which.service().is_some() {
        return None;
    }
    let vs_floor = ratios.vs_floor.filter(Estimate::is_interval)?;
    let (trips, floor) = (
        physics::round_trips(which)?,
        physics::round_trips(Impl::Floor)?,
    );
    (which != Impl::Floor && physics::beats_the_floor_impossibly(trips, floor, vs_floor.low)).then(
        || {
            format!(
                "{trips} round trips per cycle to the floor's {floor}, yet {:.2}–{:.2}× the floor",
                vs_floor.low, vs_floor.high
            )
        },
    )
}

/// Slices of the uncontended groups per round on `nodes` nodes, `PING`
/// included, and of the simulated node's group when there is one: what
/// the run plans its time with.
pub(super) fn planned_slices(nodes: usize, simulated_node: bool) -> usize {
    let scaling = SCALING_NODES.iter().filter(|n| **n <= nodes).count();
    let simulated = if simulated_node {
        simulated_group().len() + 1
    } else {
        0
    };
    split_group().len() + 1 + SAME_CPU.len() + 1 + scaling * (SCALING.len() + 1) + simulated
}

/// The floor and `lua-release`, then the rungs of
/// [`physics::SIMULATED_NODE_ROWS`]: what runs on the simulated node.
fn simulated_group() -> Vec<Impl> {
    let mut impls = SIMULATED_BASELINES.to_vec();
    impls.extend(
        physics::SIMULATED_NODE_ROWS
            .into_iter()
            .filter_map(locks::rung)
            .map(|rung| Impl::Rung(rung.id, Wait::Fixed)),
    );
    impls
}

/// The floor, rslock, every rung that excludes, the library rungs of
/// [`physics::LIBRARY_ROWS`], and `lua-release` again with notify (its
/// release publishes, which costs a little).
fn split_group() -> Vec<Impl> {
    let mut impls = vec![Impl::Floor, Impl::Rslock];
    impls.extend(locks::excluding().map(|rung| Impl::Rung(rung.id, Wait::Fixed)));
    impls.extend(
        physics::LIBRARY_ROWS
            .into_iter()
            .filter_map(locks::rung)
            .map(|rung| Impl::Rung(rung.id, Wait::Fixed)),
    );
    impls.push(Impl::Rung("lua-release", Wait::Notify));
    impls
}

impl Session {
    /// One node, client and servers on different CPUs.
    pub(super) async fn uncontended_split(&self) -> anyhow::Result<Group> {
        self.uncontended_group(&split_group(), 1, Placement::Split)
            .await
    }

    /// The rungs no server here can run, with the floor and `lua-release`,
    /// on the simulated node (`None` when the run has none).
    pub(super) async fn uncontended_simulated(&self) -> anyhow::Result<Option<SimulatedNode>> {
        let Some(node) = &self.simulated_node else {
            return Ok(None);
        };
        let group = self
            .rounds(
                &simulated_group(),
                std::slice::from_ref(node),
                "simulated node",
                Pings::Own,
            )
            .await?;
        let mut uncontended = group.rows(1, 60);
        let modes = noise::modes(&group.pings.latency);
        let fast_rtt_us = modes.modes.first().map(|m| m.median_us as f64);
        for row in &mut uncontended {
            row.bound_per_s = row
                .round_trips
                .zip(fast_rtt_us)
                .map(|(trips, rtt)| round3(physics::bound_per_s(trips, rtt)))
                .filter(|b| *b > 0.0);
        }
        let rates = &group.pings.rates.0;
        Ok(Some(SimulatedNode {
            note: SIMULATED_NOTE.to_string(),
            placement: self.simulated_placement(),
            raw_rtt: RttRow {
                placement: Placement::Split.label().to_string(),
                slices: rates.len(),
                rtt_p50_us: quantile_us(&group.pings.latency, 0.5),
                rtt_p99_us: quantile_us(&group.pings.latency, 0.99),
                ops_per_s: round3(crate::stats::median(rates)),
                modes,
            },
            uncontended,
        }))
    }

    /// Where the simulated node ran, in words.
    fn simulated_placement(&self) -> String {
        let threads = "in this process, on threads of its own (the node's and its sockets')";
        if self.pinning.pinned {
            format!(
                "{threads}, pinned to CPU {} as redis-server node 0 is; the client on CPU {}",
                crate::placement::server_cpu(0, self.pinning.cpus),
                crate::placement::CLIENT_CPU
            )
        } else {
            format!("{threads}, not pinned: the kernel places them")
        }
    }

    /// The closest comparisons with node 0 on the client's CPU; `None`
    /// when nothing is pinned or the servers are not ours.
    pub(super) async fn uncontended_same_cpu(&self) -> anyhow::Result<Option<Group>> {
        let Some(_beside) = self.pinning.node0_beside_client() else {
            return Ok(None);
        };
        Ok(Some(
            self.uncontended_group(&SAME_CPU, 1, Placement::SameCpu)
                .await?,
        ))
    }

    /// Redlock against the floor and rslock on 3 and 5 nodes (those there
    /// are).
    pub(super) async fn redlock_scaling(&self) -> anyhow::Result<Vec<UncontendedRow>> {
        let mut rows = Vec::new();
        for nodes in SCALING_NODES {
            if nodes > self.nodes.len() {
                continue;
            }
            let group = self
                .uncontended_group(&SCALING, nodes, Placement::Split)
                .await?;
            rows.extend(group.rows(nodes, 20 + nodes as u64 * 4));
        }
        Ok(rows)
    }

    /// Interleaved rounds of single-task acquire + release of each of
    /// `impls` on the first `nodes` nodes, and of `PING` on node 0 (the
    /// reference loop's `PING`, recorded there), each round in a shuffled
    /// order. The caller has placed node 0 as `placement` says.
    async fn uncontended_group(
        &self,
        impls: &[Impl],
        nodes: usize,
        placement: Placement,
    ) -> anyhow::Result<Group> {
        let tag = format!("{} {nodes} node(s)", placement.label());
        self.rounds(
            impls,
            &self.nodes[..nodes],
            &tag,
            Pings::Reference(placement),
        )
        .await
    }

    /// Interleaved rounds of single-task acquire + release of each of
    /// `impls` on `nodes`, and of `PING` on the first of them, each round
    /// in a shuffled order; `pings` says where the `PING`s are recorded
    /// besides the group. `tag` names the group in the progress lines.
    async fn rounds(
        &self,
        impls: &[Impl],
        nodes: &[Node],
        tag: &str,
        pings: Pings,
    ) -> anyhow::Result<Group> {
        let clients = self.connect_to(impls, nodes, 1).await?;
        let floor = Floor::connect(&nodes[..1], TTL).await?;
        let mut group = Group::of(impls);
        group.server = match pings {
            Pings::Reference(_) => Server::Redis,
            Pings::Own => Server::Simulated,
        };
        let mut rng = Seeded::new(0x756e_636f + nodes.len() as u64 * 2 + pings.seed());
        // `PING` takes a place in the shuffle too.
        let ping_at = impls.len();
        for round in 0..self.sizes.rounds {
            let of_rounds = format!("round {}/{}", round + 1, self.sizes.rounds);
            for i in shuffled(&mut rng, impls.len() + 1) {
                if i == ping_at {
                    let s = match pings {
                        Pings::Reference(placement) => {
                            self.reference_slice(
                                &floor,
                                RefPhase::Groups,
                                placement,
                                self.sizes.slice,
                            )
                            .await
                        }
                        Pings::Own => workload::ping(&floor, self.sizes.slice).await,
                    };
                    self.progress(&format!(
                        "uncontended [{tag}] {of_rounds}: PING {:.0}/s p50 {} µs",
                        s.rate(),
                        quantile_us(&s.hist, 0.5)
                    ));
                    group.pings.add(&s);
                    continue;
                }
                let key = format!("{}u:{}:{}", self.prefix, nodes.len(), impls[i].label());
                let s = workload::uncontended(&clients[i], &key, TTL, self.sizes.slice).await;
                self.progress(&format!(
                    "uncontended [{tag}] {of_rounds}: {} {:.0} cycles/s p50 {} µs{}",
                    impls[i].label(),
                    s.rate(),
                    quantile_us(&s.hist, 0.5),
                    errors_note(s.errors)
                ));
                group.measured[i].cycles.add(&s);
            }
        }
        Ok(group)
    }
}

/// ` (N errors)` after a slice's figures in a progress line, or nothing.
pub(super) fn errors_note(errors: u64) -> String {
    if errors > 0 {
        format!(" ({errors} errors)")
    } else {
        String::new()
    }
}
