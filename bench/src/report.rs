//! The report: `bench.json` (the schema of issue 5 §5, plus a few extra
//! fields) and `bench.md` (the same figures as tables).

use crate::env::{Machine, Placement};
use crate::stats::round3;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Everything one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The machine.
    pub machine: Machine,
    /// Where each process ran.
    pub placement: Placement,
    /// redis-server, rustc and crate versions.
    pub versions: BTreeMap<String, String>,
    /// Durations and repeats.
    pub settings: Settings,
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
    /// The targets of issue 5 §4, measured.
    pub targets: Vec<TargetRow>,
    /// What the run touched on servers it did not start.
    pub touched: Touched,
}

/// How the run was sized.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// `--quick`.
    pub quick: bool,
    /// Length of one uncontended slice, ms.
    pub slice_ms: u64,
    /// Length of one contention or inventory slice, ms.
    pub contention_slice_ms: u64,
    /// Rounds (each round runs every compared implementation once, in a
    /// rotated order).
    pub rounds: u32,
    /// Lease TTL, ms.
    pub ttl_ms: u64,
    /// Whether the servers were started by this run.
    pub own_servers: bool,
}

/// One uncontended figure.
#[derive(Debug, Clone, Serialize)]
pub struct UncontendedRow {
    /// `floor`, `rslock` or a rung id.
    #[serde(rename = "impl")]
    pub impl_: String,
    /// The wait strategy (irrelevant uncontended, except for its release).
    pub wait: String,
    /// Nodes used.
    pub nodes: usize,
    /// Median cycles per second over rounds.
    pub cycles_per_s: f64,
    /// Slowest round.
    pub cycles_per_s_min: f64,
    /// Fastest round.
    pub cycles_per_s_max: f64,
    /// Cycle latency, all rounds merged.
    pub p50_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p999_us: u64,
    /// Median of round-by-round ratios to the floor with as many nodes.
    pub vs_floor: Option<f64>,
    /// The same, to rslock.
    pub vs_rslock: Option<f64>,
}

/// One contention figure.
#[derive(Debug, Clone, Serialize)]
pub struct ContentionRow {
    /// `floor`, `rslock` or a rung id.
    #[serde(rename = "impl")]
    pub impl_: String,
    /// The wait strategy.
    pub wait: String,
    /// Nodes used.
    pub nodes: usize,
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
    /// Wait from acquire call to lease, all rounds merged.
    pub wait_p50_us: u64,
    /// 99th percentile.
    pub wait_p99_us: u64,
    /// 99.9th percentile.
    pub wait_p999_us: u64,
    /// Longest wait, including waits still running at a slice's end.
    pub wait_max_us: u64,
    /// Fewest / most acquisitions of any worker (median over rounds).
    pub fairness: f64,
    /// Failed acquires or releases.
    pub errors: u64,
    /// Median round-by-round ratio of acq/s to the floor's.
    pub vs_floor: Option<f64>,
    /// The same, to rslock's.
    pub vs_rslock: Option<f64>,
}

/// A raw round trip.
#[derive(Debug, Clone, Serialize)]
pub struct RttRow {
    /// `split` (client and server on different CPUs) or `same-cpu`.
    pub placement: String,
    /// Median `PING` round trip.
    pub rtt_p50_us: u64,
    /// 99th percentile.
    pub rtt_p99_us: u64,
    /// `PING`s per second, one at a time.
    pub ops_per_s: f64,
}

/// One inventory figure.
#[derive(Debug, Clone, Serialize)]
pub struct InventoryRow {
    /// `floor`, `rslock` or a rung id.
    #[serde(rename = "impl")]
    pub impl_: String,
    /// The wait strategy.
    pub wait: String,
    /// Nodes used by the lock.
    pub nodes: usize,
    /// Median sales per second.
    pub sales_per_s: f64,
    /// Sales beyond what the stock lost, summed over rounds.
    pub oversold: i64,
    /// Failed purchases.
    pub errors: u64,
    /// Median round-by-round ratio of sales/s to the floor's.
    pub vs_floor: Option<f64>,
    /// The same, to rslock's.
    pub vs_rslock: Option<f64>,
}

/// The watchdog on long critical sections.
#[derive(Debug, Clone, Serialize)]
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

/// A target of issue 5 §4.
#[derive(Debug, Clone, Serialize)]
pub struct TargetRow {
    /// What is compared.
    pub target: String,
    /// The measured value.
    pub measured: f64,
    /// The goal.
    pub goal: String,
    /// Whether it was met in this run.
    pub met: bool,
}

/// What the run did on servers it did not start.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Touched {
    /// The key prefix every key and channel of this run has.
    pub key_prefix: String,
    /// Servers given with `--redis`.
    pub external_servers: Vec<String>,
    /// Keys under the prefix deleted at the end.
    pub keys_deleted: u64,
}

fn opt_ratio(r: Option<f64>) -> String {
    r.map_or("–".to_string(), |x| format!("{:.2}×", x))
}

fn rate(x: f64) -> String {
    if x >= 10_000.0 {
        format!("{:.1}k", x / 1000.0)
    } else {
        format!("{}", round3(x))
    }
}

impl Report {
    /// The Markdown report.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# locklab bench\n");
        let _ = writeln!(
            s,
            "Machine: {} ({} CPUs, {} MiB, Linux {}). Runtime: {}. Settings: {} mode, {} rounds, \
             slices of {} ms (contention/inventory {} ms), TTL {} ms; servers {}.\n",
            self.machine.cpu_model,
            self.machine.cpus,
            self.machine.memory_mib,
            self.machine.kernel,
            self.placement.runtime,
            if self.settings.quick { "quick" } else { "full" },
            self.settings.rounds,
            self.settings.slice_ms,
            self.settings.contention_slice_ms,
            self.settings.ttl_ms,
            if self.settings.own_servers {
                "started by this run on loopback"
            } else {
                "given with --redis"
            },
        );
        let _ = writeln!(s, "Placement: {}.  ", self.placement.policy);
        let _ = writeln!(s, "Sharing: {}.  ", self.placement.sharing);
        let mut procs = vec![&self.placement.client];
        procs.extend(self.placement.servers.iter());
        let listed: Vec<String> = procs
            .iter()
            .map(|p| {
                format!(
                    "{} (pid {}) CPUs {} last on {}",
                    p.role,
                    p.pid,
                    p.cpus_allowed,
                    p.last_cpu.map_or("?".to_string(), |c| c.to_string())
                )
            })
            .collect();
        let _ = writeln!(s, "Processes: {}.\n", listed.join("; "));
        let versions: Vec<String> = self
            .versions
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(s, "Versions: {}.\n", versions.join(", "));
        let _ = writeln!(
            s,
            "Every figure is the median over rounds (range in brackets); ratios are medians of \
             round-by-round ratios to the floor and to rslock measured back to back in the same run. \
             The floor is a hand-written `SET NX PX` + `EVALSHA` release on one connection per node \
             (all nodes at once when N > 1).\n"
        );

        let _ = writeln!(s, "## Targets (issue 5 §4)\n");
        let _ = writeln!(s, "| target | measured | goal | met |\n|---|---|---|---|");
        for t in &self.targets {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                t.target,
                round3(t.measured),
                t.goal,
                if t.met { "yes" } else { "**no**" }
            );
        }

        let _ = writeln!(s, "\n## Raw round trip (PING, node 0)\n");
        let _ = writeln!(
            s,
            "| placement | p50 µs | p99 µs | PINGs/s |\n|---|---|---|---|"
        );
        for r in &self.raw_rtt {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                r.placement,
                r.rtt_p50_us,
                r.rtt_p99_us,
                rate(r.ops_per_s)
            );
        }

        for (title, rows) in [
            (
                "Uncontended acquire + release (client and servers on different CPUs)",
                &self.uncontended,
            ),
            (
                "Uncontended, client and node 0 on the same CPU",
                &self.uncontended_same_cpu,
            ),
        ] {
            let _ = writeln!(s, "\n## {title}\n");
            let _ = writeln!(
                s,
                "| impl | wait | nodes | cycles/s | p50 µs | p99 µs | p99.9 µs | × floor | × rslock |\n|---|---|---|---|---|---|---|---|---|"
            );
            for r in rows {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} [{}–{}] | {} | {} | {} | {} | {} |",
                    r.impl_,
                    r.wait,
                    r.nodes,
                    rate(r.cycles_per_s),
                    rate(r.cycles_per_s_min),
                    rate(r.cycles_per_s_max),
                    r.p50_us,
                    r.p99_us,
                    r.p999_us,
                    opt_ratio(r.vs_floor),
                    opt_ratio(r.vs_rslock)
                );
            }
        }

        let _ = writeln!(
            s,
            "\n## Contention (empty critical section; one client, many tasks)\n"
        );
        let _ = writeln!(
            s,
            "| impl | wait | nodes | workers | keys | acq/s | wait p50 µs | p99 µs | p99.9 µs | max µs | fairness | errors | × floor | × rslock |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for r in &self.contention {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} [{}–{}] | {} | {} | {} | {} | {:.2} | {} | {} | {} |",
                r.impl_,
                r.wait,
                r.nodes,
                r.workers,
                r.keys,
                rate(r.acq_per_s),
                rate(r.acq_per_s_min),
                rate(r.acq_per_s_max),
                r.wait_p50_us,
                r.wait_p99_us,
                r.wait_p999_us,
                r.wait_max_us,
                r.fairness,
                r.errors,
                opt_ratio(r.vs_floor),
                opt_ratio(r.vs_rslock)
            );
        }

        let _ = writeln!(
            s,
            "\n## Inventory sale under load (16 buyers, GET + SET of the stock under the lock)\n"
        );
        let _ = writeln!(
            s,
            "| impl | wait | nodes | sales/s | oversold | errors | × floor | × rslock |\n|---|---|---|---|---|---|---|---|"
        );
        for r in &self.inventory {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                r.impl_,
                r.wait,
                r.nodes,
                rate(r.sales_per_s),
                r.oversold,
                r.errors,
                opt_ratio(r.vs_floor),
                opt_ratio(r.vs_rslock)
            );
        }

        let _ = writeln!(
            s,
            "\n## Watchdog on long critical sections (4 holders, own keys)\n"
        );
        let _ = writeln!(
            s,
            "| critical section ms | watchdog TTL ms | renewals per hold | cycles/s | lua-release (long TTL) cycles/s | overhead | lost |\n|---|---|---|---|---|---|---|"
        );
        for r in &self.watchdog {
            let overhead = if r.baseline_cycles_per_s > 0.0 {
                format!(
                    "{:+.1}%",
                    (r.baseline_cycles_per_s / r.cycles_per_s.max(1e-9) - 1.0) * 100.0
                )
            } else {
                "–".to_string()
            };
            let _ = writeln!(
                s,
                "| {} | {} | {:.1} | {} | {} | {} | {} |",
                r.cs_ms,
                r.ttl_ms,
                r.renewals,
                round3(r.cycles_per_s),
                round3(r.baseline_cycles_per_s),
                overhead,
                r.lost
            );
        }

        let _ = writeln!(s, "\n## Plots\n");
        for (file, what) in [
            ("bench-latency-cdf.svg", "latency CDF per rung"),
            ("bench-throughput.svg", "acquisitions/s vs workers"),
            ("bench-wait-p999.svg", "p99.9 wait vs workers"),
            ("bench-redlock-scaling.svg", "Redlock scaling with N"),
        ] {
            let _ = writeln!(s, "![{what}]({file})");
        }
        if !self.touched.external_servers.is_empty() {
            let _ = writeln!(
                s,
                "\n## Touched\n\nServers {}: only keys and channels under `{}`; {} keys deleted at the end; nothing flushed.",
                self.touched.external_servers.join(", "),
                self.touched.key_prefix,
                self.touched.keys_deleted
            );
        }
        s
    }
}
