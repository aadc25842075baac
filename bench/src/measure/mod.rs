//! The measurement, in phases: a reference `PING` loop; the targets'
//! comparisons in pairs ([`paired`]); the descriptive groups, each
//! interleaving its implementations round by round in a shuffled order
//! (the etcd, ZooKeeper, PostgreSQL and MariaDB rows among them,
//! [`beside`]); the reference loop again. Everything measured goes into
//! the session's [`Progress`] as soon as it is measured, so a run stopped
//! half-way still reports what it has.

mod batch;
mod beside;
mod contention;
mod database;
mod etcd;
mod inventory;
mod paired;
mod reference;
mod uncontended;
mod watchdog;
mod zookeeper;

use crate::client::{Client, Common, Impl, Node, Service};
use crate::env;
use crate::interval::Estimate;
use crate::noise::{self, CpuTicks, CpuUse};
use crate::options::Sizes;
use crate::placement::Pinning;
use crate::plot::LatencySeries;
use crate::report::{Figures, PhaseRow, Ratios, Subject};
use crate::rng::Seeded;
use crate::stats::Rounds;
use crate::targets::ComparisonRecord;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use batch::{Asked, BATCH_ENV, Launcher, child_main};
pub use beside::ServerAt;
pub use reference::{RefPhase, Reference};

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

/// Why the paired stage stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageEnd {
    /// Every comparison reached the finest precision asked for.
    Precise,
    /// The time budget ran out first.
    Budget,
}

/// The paired stage: its budget, the time it took, why it ended.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stage {
    /// The time it could take.
    pub budget: Duration,
    /// The time it took (so far).
    pub took: Duration,
    /// Why it ended (`None` while it runs).
    pub end: Option<StageEnd>,
    /// The widest half-width of any figure after the last batch, as a
    /// share of its median (`None` while some figure has no interval).
    pub reached: Option<f64>,
}

/// Everything measured so far, ready for the report.
#[derive(Default)]
pub struct Progress {
    /// redis-server, rustc and crate versions.
    pub versions: BTreeMap<String, String>,
    /// The figures of every descriptive group measured so far.
    pub figures: Figures,
    /// Latency of the single-node uncontended group, for the CDF plot.
    pub latency_cdf: Vec<LatencySeries>,
    /// The pairs of every comparison.
    pub comparisons: Vec<ComparisonRecord>,
    /// The paired stage (`None` until it starts).
    pub stage: Option<Stage>,
    /// The reference `PING` loop.
    pub reference: Reference,
    /// Phases ended, with their CPU use.
    pub phases: Vec<PhaseRow>,
    /// The phase under way: its name, start and CPU counters then.
    current: Option<(String, Instant, BTreeMap<String, CpuTicks>)>,
    /// Parts measured to their end.
    pub completed: Vec<String>,
}

impl Progress {
    /// Ends the phase under way, if any, recording its CPU use.
    pub fn end_phase(&mut self) {
        if let Some((phase, started, before)) = self.current.take() {
            let cpus: Vec<CpuUse> = noise::cpu_use(&before, &noise::cpu_ticks_now());
            self.phases.push(PhaseRow {
                phase,
                seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
                cpus,
            });
        }
    }
}

/// A run in progress: where to connect, how long each part takes, and the
/// prefix every key and channel of the run carries.
pub struct Session {
    sizes: Sizes,
    nodes: Vec<Node>,
    /// locklab's simulated node, for the rungs no server here can run.
    simulated_node: Option<Node>,
    prefix: String,
    pinning: Pinning,
    started: Instant,
    progress: RefCell<Progress>,
    sink: Option<Arc<dyn crate::progress::ProgressSink>>,
    /// How to start each batch of pairs in a process of its own (`None`:
    /// in this one).
    launcher: Option<Launcher>,
    /// Whether each batch of pairs gets fresh servers of its own (the
    /// run's servers are ours).
    fresh_servers: bool,
    /// Where the etcd rows are measured, or why not (`None`: this session
    /// has no etcd rows, as a batch of pairs has none).
    etcd: Option<ServerAt>,
    /// Where the ZooKeeper rows are measured, or why not (`None`: none).
    zookeeper: Option<ServerAt>,
    /// Where the PostgreSQL rows are measured, or why not (`None`: none).
    postgres: Option<ServerAt>,
    /// Where the MariaDB rows are measured, or why not (`None`: none).
    mysql: Option<ServerAt>,
}

impl Session {
    /// A session over `nodes` (node 0 first), placed as `pinning` says.
    pub fn new(sizes: Sizes, nodes: Vec<Node>, prefix: String, pinning: Pinning) -> Session {
        Session {
            sizes,
            nodes,
            simulated_node: None,
            prefix,
            pinning,
            started: Instant::now(),
            progress: RefCell::new(Progress::default()),
            sink: None,
            launcher: None,
            fresh_servers: false,
            etcd: None,
            zookeeper: None,
            postgres: None,
            mysql: None,
        }
    }

    /// The session with the rows of `service` measured where `at` says
    /// (or reported skipped, saying why).
    pub fn with_beside(mut self, service: Service, at: Option<ServerAt>) -> Session {
        match service {
            Service::Etcd => self.etcd = at,
            Service::ZooKeeper => self.zookeeper = at,
            Service::Postgres => self.postgres = at,
            Service::MySql => self.mysql = at,
        }
        self
    }

    /// Where the rows of `service` are measured, or why not.
    fn server_of(&self, service: Service) -> Option<&ServerAt> {
        match service {
            Service::Etcd => self.etcd.as_ref(),
            Service::ZooKeeper => self.zookeeper.as_ref(),
            Service::Postgres => self.postgres.as_ref(),
            Service::MySql => self.mysql.as_ref(),
        }
    }

    /// The session with its progress going to `sink` (`None`: a line per
    /// step on standard error).
    pub fn with_progress(
        mut self,
        sink: Option<Arc<dyn crate::progress::ProgressSink>>,
    ) -> Session {
        self.sink = sink;
        self
    }

    /// The session with each batch of pairs in a process `launcher`
    /// starts (`None`: in this process).
    pub fn with_launcher(mut self, launcher: Option<Launcher>) -> Session {
        self.launcher = launcher;
        self
    }

    /// The session with fresh servers for each batch of pairs when
    /// `fresh` (the run's servers are its own).
    pub fn with_fresh_servers(mut self, fresh: bool) -> Session {
        self.fresh_servers = fresh;
        self
    }

    /// The session with `node`, locklab's simulated node, for the rungs
    /// of [`physics::SIMULATED_NODE_ROWS`](crate::physics::SIMULATED_NODE_ROWS).
    pub fn with_simulated_node(mut self, node: Option<Node>) -> Session {
        self.simulated_node = node;
        self
    }

    /// Measures everything, phase by phase; what is measured is in
    /// [`Session::take_progress`], also when this future is dropped
    /// half-way.
    pub async fn measure(&self) -> anyhow::Result<()> {
        self.with(|p| p.versions.clear());
        let mut versions = env::versions(&self.nodes[0]).await;
        if let Some(ServerAt::Server(_)) = &self.etcd
            && let Some(etcd) = harness::etcd::version()
        {
            let number = etcd.strip_prefix("etcd ").unwrap_or(&etcd);
            versions.insert("etcd".to_string(), number.to_string());
        }
        if let Some(ServerAt::Server(_)) = &self.zookeeper
            && let Some(zk) = harness::zookeeper::version()
        {
            let number = zk.strip_prefix("zookeeper ").unwrap_or(&zk);
            versions.insert("zookeeper".to_string(), number.to_string());
        }
        // Both name themselves as `<server> <number>`.
        for (service, version) in [
            (
                Service::Postgres,
                harness::postgres::version as fn() -> Option<String>,
            ),
            (Service::MySql, harness::mariadb::version),
        ] {
            if let Some(ServerAt::Server(_)) = self.server_of(service)
                && let Some((server, number)) = version().as_deref().and_then(|v| v.split_once(' '))
            {
                versions.insert(server.to_string(), number.to_string());
            }
        }
        self.with(|p| p.versions = versions);
        let reference = self.reference_floor().await?;

        self.phase("reference before");
        self.reference_loop(&reference, RefPhase::Before).await;
        self.completed("reference before");

        self.phase("targets in pairs");
        self.paired().await?;
        self.completed("targets in pairs");

        self.phase("uncontended tables");
        let split = self.uncontended_split().await?;
        self.with(|p| {
            p.figures.uncontended = split.rows(1, 10);
            p.latency_cdf = split.latency_series();
        });
        if let Some(same_cpu) = self.uncontended_same_cpu().await? {
            self.with(|p| p.figures.uncontended_same_cpu = same_cpu.rows(1, 40));
        }
        let scaling = self.redlock_scaling().await?;
        self.with(|p| p.figures.uncontended.extend(scaling));
        let simulated = self.uncontended_simulated().await?;
        self.with(|p| p.figures.simulated_node = simulated);
        self.completed("uncontended tables");

        self.phase("contention table");
        let contention = self.contention().await?;
        self.with(|p| p.figures.contention = contention);
        self.completed("contention table");

        if self.etcd.is_some() {
            self.phase("etcd beside redis");
            let etcd = self.beside(Service::Etcd).await?;
            self.with(|p| p.figures.etcd = etcd);
            self.completed("etcd beside redis");
        }
        if self.zookeeper.is_some() {
            self.phase("zookeeper beside redis");
            let zookeeper = self.beside(Service::ZooKeeper).await?;
            self.with(|p| p.figures.zookeeper = zookeeper);
            self.completed("zookeeper beside redis");
        }
        if self.postgres.is_some() {
            self.phase("postgres beside redis");
            let postgres = self.beside(Service::Postgres).await?;
            self.with(|p| p.figures.postgres = postgres);
            self.completed("postgres beside redis");
        }
        if self.mysql.is_some() {
            self.phase("mysql beside redis");
            let mysql = self.beside(Service::MySql).await?;
            self.with(|p| p.figures.mysql = mysql);
            self.completed("mysql beside redis");
        }

        self.phase("inventory and watchdog");
        let inventory = self.inventory().await?;
        self.with(|p| p.figures.inventory = inventory);
        let watchdog = self.watchdog().await?;
        self.with(|p| p.figures.watchdog = watchdog);
        self.completed("inventory and watchdog");

        self.phase("reference after");
        self.reference_loop(&reference, RefPhase::After).await;
        self.completed("reference after");
        self.with(Progress::end_phase);
        Ok(())
    }

    /// Everything measured so far, the phase under way ended; the session
    /// keeps an empty record.
    pub fn take_progress(&self) -> Progress {
        let mut progress = self.progress.take();
        progress.end_phase();
        progress
    }

    /// Seconds since the session began.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Runs `f` on the progress record (never across an `await`).
    fn with<T>(&self, f: impl FnOnce(&mut Progress) -> T) -> T {
        f(&mut self.progress.borrow_mut())
    }

    /// Ends the phase under way and starts `name`.
    fn phase(&self, name: &str) {
        self.with(|p| {
            p.end_phase();
            p.current = Some((name.to_string(), Instant::now(), noise::cpu_ticks_now()));
        });
    }

    /// Notes that `part` was measured to its end.
    fn completed(&self, part: &str) {
        self.with(|p| p.completed.push(part.to_string()));
    }

    /// One step of progress: to the sink, else a line on standard error
    /// with the time since the start.
    fn progress(&self, what: &str) {
        let elapsed = self.started.elapsed();
        match &self.sink {
            Some(sink) => sink.step(elapsed, self.planned_total(), what),
            None => eprintln!("{}", crate::progress::line(elapsed, what)),
        }
    }

    /// About how long the whole measurement takes: a quick run's total
    /// budget, else the reference loop, the pairs' budget and the rest as
    /// planned (an upper estimate: the pairs stop once precise).
    fn planned_total(&self) -> Duration {
        let s = &self.sizes;
        s.total_budget.unwrap_or_else(|| {
            s.reference_slice * s.reference_slices + s.target_budget + self.planned_after_pairs()
        })
    }

    /// Connects each of `impls` to the first `nodes` nodes, each with a
    /// seed of its own from `first_seed` on.
    async fn connect_all(
        &self,
        impls: &[Impl],
        nodes: usize,
        first_seed: u64,
    ) -> anyhow::Result<Vec<Arc<Client>>> {
        self.connect_to(impls, &self.nodes[..nodes], first_seed)
            .await
    }

    /// Connects each of `impls` to `nodes`, each with a seed of its own
    /// from `first_seed` on.
    async fn connect_to(
        &self,
        impls: &[Impl],
        nodes: &[Node],
        first_seed: u64,
    ) -> anyhow::Result<Vec<Arc<Client>>> {
        let mut clients = Vec::new();
        for (seed, which) in (first_seed..).zip(impls) {
            clients.push(Arc::new(
                Client::connect(*which, nodes, COMMON, seed).await?,
            ));
        }
        Ok(clients)
    }

    /// How long the descriptive groups and the closing reference loop are
    /// planned to take: what the paired stage must leave of the run's
    /// total budget.
    fn planned_after_pairs(&self) -> Duration {
        let s = &self.sizes;
        // Warm-up cycles, connecting and the progress line of each slice.
        let per_slice = Duration::from_millis(10);
        let uncontended_slices =
            (uncontended::planned_slices(self.nodes.len(), self.simulated_node.is_some())) as u32
                * s.rounds;
        let contention_slices = (contention::planned_slices() + inventory::planned_slices()) as u32
            * s.contention_rounds;
        let beside: Duration = Service::ALL
            .into_iter()
            .filter(|service| matches!(self.server_of(*service), Some(ServerAt::Server(_))))
            .map(|service| beside::planned(service, s))
            .sum();
        (s.slice + per_slice) * uncontended_slices
            + (s.contention_slice + per_slice * 2) * contention_slices
            + watchdog::planned(s)
            + beside
            + (s.reference_slice + per_slice) * s.reference_slices
    }
}

/// The order of `len` implementations in one round: shuffled, so that no
/// implementation always runs first or after the same neighbour.
fn shuffled(rng: &mut Seeded, len: usize) -> Vec<usize> {
    rng.permutation(len)
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
                Impl::Rung(..)
                | Impl::Etcd(_)
                | Impl::ZooKeeper(_)
                | Impl::Postgres(_)
                | Impl::MySql(_) => {}
            }
        }
        baselines
    }

    /// The round-by-round ratios of `rates` to the floor's and rslock's,
    /// each a median with its interval over rounds (bootstrap seeded by
    /// `seed`).
    fn ratios(&self, rates: &Rounds, seed: u64) -> Ratios {
        let ratio = |baseline: &Option<Rounds>, seed| {
            baseline
                .as_ref()
                .and_then(|b| Estimate::of(&rates.ratios_to(b), seed))
                .map(Estimate::rounded)
        };
        Ratios {
            vs_floor: ratio(&self.floor, seed),
            vs_rslock: ratio(&self.rslock, seed ^ 0x5a5a),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_round_runs_everyone_once_in_an_order_of_its_own() {
        let mut rng = Seeded::new(1);
        let orders: Vec<Vec<usize>> = (0..8).map(|_| shuffled(&mut rng, 5)).collect();
        for order in &orders {
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2, 3, 4]);
        }
        let firsts: std::collections::BTreeSet<usize> = orders.iter().map(|o| o[0]).collect();
        assert!(firsts.len() > 1, "always the same one first: {orders:?}");
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
        let ratios = baselines.ratios(&rung, 1);
        assert_eq!(ratios.vs_floor.map(|e| e.median), Some(1.0));
        assert_eq!(ratios.vs_rslock.map(|e| e.median), Some(2.0));
        assert!(Baselines::find([]).ratios(&rung, 1).vs_floor.is_none());
    }
}
