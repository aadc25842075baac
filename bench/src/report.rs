//! The report's data, as `bench.json` has it: every figure with its unit in
//! its name, the machine and placement it was measured on, the versions,
//! the targets and what the run touched. `bench.md` renders the same
//! figures (see [`crate::markdown`]).

use crate::env::Machine;
use crate::interval::{Estimate, StopRule};
use crate::noise::{CpuUse, Modes};
use crate::placement::Placement;
use crate::targets::{ComparisonRecord, TargetRow};
use serde::Serialize;
use std::collections::BTreeMap;

/// Everything one run measured.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// Set when the run was stopped before the end: what it holds is what
    /// was measured until then.
    pub partial: Option<Partial>,
    /// The machine.
    pub machine: Machine,
    /// Where each process ran.
    pub placement: Placement,
    /// redis-server, rustc and crate versions.
    pub versions: BTreeMap<String, String>,
    /// Durations and repeats.
    pub settings: Settings,
    /// How the targets were measured.
    pub method: Method,
    /// What the machine was doing meanwhile.
    pub noise: Noise,
    /// What each workload measured.
    #[serde(flatten)]
    pub figures: Figures,
    /// The speed targets (see [`crate::targets`]), measured.
    pub targets: Vec<TargetRow>,
    /// Every pair the targets were read from.
    pub comparisons: Vec<ComparisonRecord>,
    /// What the run touched on servers it did not start.
    pub touched: Touched,
}

/// What a run stopped before its end holds.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Partial {
    /// What stopped it (`SIGTERM`, `SIGINT`).
    pub stopped_by: String,
    /// Seconds after the start.
    pub after_s: f64,
    /// The parts measured to the end before it stopped.
    pub completed: Vec<String>,
}

/// How the targets were measured: pairs of slices, until precise or out
/// of time.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Method {
    /// One uncontended pair's window, in which both sides' cycles
    /// alternate, ms.
    pub pair_slice_ms: u64,
    /// The longest one contention slice of a pair may take, ms.
    pub contention_pair_slice_ms: u64,
    /// The lock's acquisitions that end one contention slice of a pair.
    pub contention_pair_handoffs: u64,
    /// Pairs of each comparison measured first in each batch and
    /// discarded.
    pub warmup_pairs: usize,
    /// Batches the pairs were measured in.
    pub batches: u32,
    /// Whether each batch ran in a client process of its own.
    pub batch_processes: bool,
    /// When a comparison has enough pairs.
    pub stop_rule: StopRule,
    /// The time the pairs could take, s.
    pub budget_s: f64,
    /// The time they took, s.
    pub seconds: f64,
    /// Why the pairs stopped.
    pub ended: String,
    /// The widest half-width of any figure after the last batch, as a
    /// share of its median.
    pub reached: Option<f64>,
}

/// What the machine was doing while the run measured.
#[derive(Debug, Clone, Serialize, Default, schemars::JsonSchema)]
pub struct Noise {
    /// The reference `PING` loop on node 0, by phase and placement.
    pub reference: Vec<ReferenceRow>,
    /// CPU use of each phase of the run.
    pub phases: Vec<PhaseRow>,
    /// The 1-minute load average at the start and at the end.
    pub load_average: [f64; 2],
    /// What it all means for the figures, in one sentence.
    pub summary: String,
}

/// The reference `PING` loop in one phase and placement.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ReferenceRow {
    /// `before`, `between pairs`, `groups` or `after`.
    pub phase: String,
    /// `split` or `same-cpu`.
    pub placement: String,
    /// Slices measured.
    pub slices: usize,
    /// `PING`s per second: the median slice with its interval.
    pub ping_per_s: Option<Estimate>,
    /// The slowest slice.
    pub ping_per_s_min: f64,
    /// The fastest slice.
    pub ping_per_s_max: f64,
    /// Slices whose median round trip was in the slow mode (when the
    /// placement's round trip has two).
    pub slow_mode_slices: Option<usize>,
}

/// CPU use during one phase of the run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PhaseRow {
    /// What the run did.
    pub phase: String,
    /// How long it took, s.
    pub seconds: f64,
    /// Each CPU's steal and busy shares (all CPUs first).
    pub cpus: Vec<CpuUse>,
}

/// What each workload measured.
#[derive(Debug, Clone, Serialize, Default, schemars::JsonSchema)]
pub struct Figures {
    /// Acquire + release back to back on one task (client and servers on
    /// different CPUs).
    pub uncontended: Vec<UncontendedRow>,
    /// The closest comparisons again (floor, rslock, `set-nx-px`,
    /// `lua-release` with and without notify, `redlock` and `fenced` on one
    /// node) with client and node 0 on one CPU.
    pub uncontended_same_cpu: Vec<UncontendedRow>,
    /// Many tasks of one client on one key or on many keys.
    pub contention: Vec<ContentionRow>,
    /// `PING` round trips of node 0, per placement.
    pub raw_rtt: Vec<RttRow>,
    /// The inventory sale under load.
    pub inventory: Vec<InventoryRow>,
    /// The watchdog on long critical sections.
    pub watchdog: Vec<WatchdogRow>,
    /// The rows measured on locklab's simulated node instead of
    /// redis-server (null when the run did not get that far).
    pub simulated_node: Option<SimulatedNode>,
    /// The etcd rungs on a real etcd member beside redis-server (null
    /// when the run did not get that far; skipped, saying why, when no
    /// member could be started).
    pub etcd: Option<BesideRedis>,
    /// The ZooKeeper rungs on a real ZooKeeper server beside redis-server
    /// (null when the run did not get that far; skipped, saying why, when
    /// no server could be started).
    pub zookeeper: Option<BesideRedis>,
    /// The PostgreSQL rungs on a real PostgreSQL server beside
    /// redis-server (null when the run did not get that far; skipped,
    /// saying why, when no server could be started).
    pub postgres: Option<BesideRedis>,
    /// `mysql-get-lock` on a real MariaDB server beside redis-server (null
    /// when the run did not get that far; skipped, saying why, when no
    /// server could be started).
    pub mysql: Option<BesideRedis>,
}

/// The rungs of a service other than Redis (etcd, ZooKeeper, PostgreSQL,
/// MariaDB) measured on
/// one real server of it started by the run, beside redis-server node 0
/// in the same rounds.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct BesideRedis {
    /// Why there are no rows (the service not installed, or its server did
    /// not start); null when they were measured.
    pub skipped: Option<String>,
    /// What the rows are, how they were measured, and what the service
    /// pays for.
    pub note: String,
    /// Acquire + release back to back on one task: the floor and
    /// `lua-release` on redis-server and each of the service's rungs on
    /// its server, interleaved round by round in a shuffled order.
    pub uncontended: Vec<BesideUncontendedRow>,
    /// Clients of their own taking turns on one key: the service's locks
    /// beside Redis rungs that poll and that are woken by pub/sub.
    pub handoff: Vec<HandoffRow>,
}

/// The etcd section's type, by the name it had before ZooKeeper shared it.
pub type Etcd = BesideRedis;

/// An uncontended row of a section beside Redis.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct BesideUncontendedRow {
    /// The row's figures, as in the other uncontended tables (no bound:
    /// no round trip of the other server's was measured).
    #[serde(flatten)]
    pub figures: UncontendedRow,
    /// Log fsyncs per cycle, by the server's own counter: an etcd
    /// member's write-ahead log fsyncs over the row's slices; PostgreSQL's
    /// WAL syncs (`pg_stat_wal.wal_sync`) and InnoDB's fsyncs in MariaDB
    /// (`Innodb_data_fsyncs`, its redo log's included) over a counting pass of their own after
    /// the timed rounds. Null for the redis-server and ZooKeeper rows, and
    /// when the counters could not be read.
    pub wal_fsyncs_per_cycle: Option<f64>,
}

/// One row of the hand-off: `clients` clients, each with connections of
/// its own, acquire one key and release it at once, for a slice per round.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HandoffRow {
    /// What was measured.
    #[serde(flatten)]
    pub subject: Subject,
    /// Clients contending.
    pub clients: usize,
    /// Hand-offs (acquisitions by a client other than the one that held
    /// the lock last) per second: the median over rounds.
    pub handoffs_per_s: f64,
    /// The same with its interval over rounds.
    pub handoffs_per_s_interval: Option<Estimate>,
    /// Acquisitions per second, a client taking the lock back included
    /// (median over rounds).
    pub acq_per_s: f64,
    /// Hand-offs counted, over all rounds.
    pub handoffs: u64,
    /// Wake-ups counted, over all rounds (null when the client cannot
    /// count them).
    pub wakeups: Option<u64>,
    /// Waiters' wake-ups per hand-off, as the lock code counts them: all
    /// rounds' wake-ups over all their hand-offs; null when the client
    /// cannot count them (`etcd-lock-rpc` waits inside the member) or
    /// nothing was handed off.
    pub wakeups_per_handoff: Option<f64>,
    /// The median of the rounds' own ratios (those with a hand-off), with
    /// its interval over rounds.
    pub wakeups_per_handoff_interval: Option<Estimate>,
    /// Fewest / most acquisitions of any client (median over rounds).
    pub fairness: f64,
    /// Failed acquires or releases, summed over rounds.
    pub errors: u64,
    /// Waits dropped when not served within the drain after a slice.
    pub abandoned: u64,
}

/// Rows measured on locklab's simulated node (`simredis`) served on real
/// TCP on 127.0.0.1, not on redis-server: for the library rungs whose
/// commands no server on this machine answers. Compare them with each
/// other only, never with the redis-server rows.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SimulatedNode {
    /// Why these rows are here and what they may be compared with.
    pub note: String,
    /// Where the node ran.
    pub placement: String,
    /// Its `PING` round trip, from the `PING` slices of its rounds.
    pub raw_rtt: RttRow,
    /// Acquire + release back to back on one task, interleaved round by
    /// round with the floor and `lua-release` on the same node; the bound
    /// is from this node's round trip.
    pub uncontended: Vec<UncontendedRow>,
}

/// Which implementation a row is about, and on how many nodes.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Subject {
    /// `floor`, `rslock` (the crate) or a rung id; the `rslock` library
    /// rung, the crate's model, is `rslock-model`.
    #[serde(rename = "impl")]
    pub impl_: String,
    /// The wait strategy.
    pub wait: String,
    /// Nodes used by the lock.
    pub nodes: usize,
}

/// A row's rate against the floor's and rslock's, measured in the same
/// rounds (with as many nodes).
#[derive(Debug, Clone, Copy, Serialize, schemars::JsonSchema)]
pub struct Ratios {
    /// Median of the round-by-round ratios to the floor, with its
    /// interval over rounds.
    pub vs_floor: Option<Estimate>,
    /// The same, to rslock.
    pub vs_rslock: Option<Estimate>,
}

/// How the run was sized.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Settings {
    /// `--quick`.
    pub quick: bool,
    /// Length of one uncontended slice, ms.
    pub slice_ms: u64,
    /// Length of one contention or inventory slice, ms.
    pub contention_slice_ms: u64,
    /// Rounds of the uncontended tables (each round runs every compared
    /// implementation once, in a shuffled order).
    pub rounds: u32,
    /// Rounds of the contention and inventory tables.
    pub contention_rounds: u32,
    /// Lease TTL, ms.
    pub ttl_ms: u64,
    /// Whether the servers were started by this run.
    pub own_servers: bool,
}

/// One uncontended figure.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct UncontendedRow {
    /// What was measured (its wait strategy is irrelevant uncontended,
    /// except for its release).
    #[serde(flatten)]
    pub subject: Subject,
    /// Round trips per cycle (see [`crate::physics::CYCLES`]).
    pub round_trips: Option<u32>,
    /// Median cycles per second over rounds.
    pub cycles_per_s: f64,
    /// Slowest round.
    pub cycles_per_s_min: f64,
    /// Fastest round.
    pub cycles_per_s_max: f64,
    /// The median over rounds with its interval.
    pub cycles_per_s_interval: Option<Estimate>,
    /// The most cycles per second the round trips allow at the fast mode
    /// of the measured `PING` round trip: 1 / (round trips × RTT).
    pub bound_per_s: Option<f64>,
    /// Cycle latency, all rounds merged.
    pub p50_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p999_us: u64,
    /// Its rate against the floor's and rslock's.
    #[serde(flatten)]
    pub ratios: Ratios,
    /// Set when its ratio to the floor is physically implausible (see
    /// [`crate::physics::beats_the_floor_impossibly`]): why.
    pub anomaly: Option<String>,
}

/// One contention figure.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ContentionRow {
    /// What was measured.
    #[serde(flatten)]
    pub subject: Subject,
    /// Concurrent tasks.
    pub workers: usize,
    /// Keys they spread over.
    pub keys: usize,
    /// Median acquisitions per second over rounds.
    pub acq_per_s: f64,
    /// Slowest round.
    pub acq_per_s_min: f64,
    /// Fastest round.
    pub acq_per_s_max: f64,
    /// Wait from acquire call to lease, all rounds merged; a wait still
    /// open at a slice's end counts at its open time (right-censored), so
    /// every waiter counts, starved ones too.
    pub wait_p50_us: u64,
    /// 99th percentile.
    pub wait_p99_us: u64,
    /// 99.9th percentile.
    pub wait_p999_us: u64,
    /// Longest wait, including waits still running at a slice's end.
    pub wait_max_us: u64,
    /// Which of the wait figures above (`wait_p50_us`, `wait_p99_us`,
    /// `wait_p999_us`, `wait_max_us`) are only lower bounds: the open
    /// waits counted at or below them may in truth have lasted longer.
    pub wait_lower_bounds: Vec<String>,
    /// Waits still open at a slice's end (the censored ones), summed over
    /// rounds.
    pub waits_open: u64,
    /// Fewest / most acquisitions of any worker (median over rounds).
    pub fairness: f64,
    /// Workers that never got the lock in a slice: the most in any one
    /// round (out of `workers`).
    pub starved_workers: usize,
    /// Failed acquires or releases.
    pub errors: u64,
    /// Its rate against the floor's and rslock's.
    #[serde(flatten)]
    pub ratios: Ratios,
}

/// A raw round trip: every `PING` of one placement in the run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RttRow {
    /// `split` (client and server on different CPUs) or `same-cpu`.
    pub placement: String,
    /// Slices of `PING`s measured.
    pub slices: usize,
    /// Median `PING` round trip.
    pub rtt_p50_us: u64,
    /// 99th percentile.
    pub rtt_p99_us: u64,
    /// `PING`s per second, one at a time (median slice).
    pub ops_per_s: f64,
    /// The round trip's modes.
    pub modes: Modes,
}

/// One inventory figure.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct InventoryRow {
    /// What was measured.
    #[serde(flatten)]
    pub subject: Subject,
    /// Median sales per second.
    pub sales_per_s: f64,
    /// Sales beyond what the stock lost, summed over rounds.
    pub oversold: i64,
    /// Failed purchases.
    pub errors: u64,
    /// Its rate against the floor's and rslock's.
    #[serde(flatten)]
    pub ratios: Ratios,
}

/// The watchdog on long critical sections.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct WatchdogRow {
    /// Critical section length, ms.
    pub cs_ms: u64,
    /// The watchdog's lease TTL, ms (renewal every ttl/3).
    pub ttl_ms: u64,
    /// Renewals per hold, counted by the server (EVALSHA calls beyond the
    /// acquire and the release).
    pub renewals: f64,
    /// Median cycles per second of all holders, watchdog.
    pub cycles_per_s: f64,
    /// The same for `lua-release` with a TTL longer than the section.
    pub baseline_cycles_per_s: f64,
    /// Holds whose lease was lost (should be 0).
    pub lost: u64,
}

/// What the run did on servers it did not start.
#[derive(Debug, Clone, Serialize, Default, schemars::JsonSchema)]
pub struct Touched {
    /// The key prefix every key and channel of this run has.
    pub key_prefix: String,
    /// Servers given with `--redis`.
    pub external_servers: Vec<String>,
    /// Keys under the prefix deleted at the end.
    pub keys_deleted: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_keeps_its_json_fields_in_order() {
        let row = InventoryRow {
            subject: Subject {
                impl_: "redlock".to_string(),
                wait: "notify".to_string(),
                nodes: 5,
            },
            sales_per_s: 1.0,
            oversold: 0,
            errors: 0,
            ratios: Ratios {
                vs_floor: Some(Estimate {
                    median: 1.0,
                    low: 0.9,
                    high: 1.1,
                    n: 2,
                    interval: crate::interval::IntervalKind::Range,
                    repeat: None,
                }),
                vs_rslock: None,
            },
        };
        let json = serde_json::to_string(&row).unwrap();
        assert_eq!(
            json,
            r#"{"impl":"redlock","wait":"notify","nodes":5,"sales_per_s":1.0,"oversold":0,"errors":0,"vs_floor":{"median":1.0,"low":0.9,"high":1.1,"n":2,"interval":"range"},"vs_rslock":null}"#
        );
    }
}
