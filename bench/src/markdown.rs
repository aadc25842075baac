//! `bench.md`: the report's figures as Markdown tables, with the settings,
//! the placement and what the targets mean. The cells' forms are in
//! `cells.rs`, the tables' in `table.rs`.

mod cells;
mod table;

pub use cells::{figure, repeat_figure};

use crate::client::{Impl, Service};
use crate::report::{BesideRedis, Report, UncontendedRow};
use crate::stats::round3;
use crate::targets::{TARGETS, Verdict};
use crate::write::PLOTS;
use cells::{batch_ranks, rate, rate_range, wait_cell};
use std::fmt::Write as _;
use table::{Table, heading};

/// The heading of the etcd rows.
const ETCD_TITLE: &str = "etcd beside Redis";

/// The heading of the ZooKeeper rows.
const ZOOKEEPER_TITLE: &str = "ZooKeeper beside Redis";

/// The heading of the PostgreSQL rows.
const POSTGRES_TITLE: &str = "PostgreSQL beside Redis";

/// The heading of the MariaDB rows.
const MYSQL_TITLE: &str = "MariaDB beside Redis";

/// The heading of the rows measured on the simulated node: what they are
/// measured on, so nobody compares them with the redis-server rows.
const SIMULATED_TITLE: &str = "Uncontended on locklab's simulated node over TCP, not redis-server \
     (no server here answers DELEX/DELIFEQ)";

impl Report {
    /// The Markdown report.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        self.write_setup(&mut s);
        self.write_method(&mut s);
        self.write_targets(&mut s);
        self.write_noise(&mut s);
        self.write_raw_rtt(&mut s);
        self.write_uncontended(&mut s);
        self.write_contention(&mut s);
        write_beside(
            &mut s,
            ETCD_TITLE,
            Service::Etcd,
            self.figures.etcd.as_ref(),
        );
        write_beside(
            &mut s,
            ZOOKEEPER_TITLE,
            Service::ZooKeeper,
            self.figures.zookeeper.as_ref(),
        );
        write_beside(
            &mut s,
            POSTGRES_TITLE,
            Service::Postgres,
            self.figures.postgres.as_ref(),
        );
        write_beside(
            &mut s,
            MYSQL_TITLE,
            Service::MySql,
            self.figures.mysql.as_ref(),
        );
        self.write_inventory(&mut s);
        self.write_watchdog(&mut s);
        write_plots(&mut s);
        self.write_touched(&mut s);
        s
    }

    /// The title, a partial run's notice, the machine, settings, placement
    /// and versions.
    fn write_setup(&self, s: &mut String) {
        let _ = writeln!(s, "# locklab bench\n");
        if let Some(p) = &self.partial {
            let _ = writeln!(
                s,
                "**Partial report: the run was stopped by {} after {} s.** Parts measured to \
                 their end: {}. Whatever else is below was measured before the stop; \
                 intervals with few pairs are wide, and empty sections were not reached.\n",
                p.stopped_by,
                p.after_s,
                if p.completed.is_empty() {
                    "none".to_string()
                } else {
                    p.completed.join(", ")
                }
            );
        }
        let _ = writeln!(
            s,
            "Machine: {} ({} CPUs, {} MiB, Linux {}). Runtime: {}. Settings: {} mode; tables of \
             {} rounds of {} ms slices (contention/inventory {} ms); TTL {} ms; servers {}.\n",
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
        let listed: Vec<String> = std::iter::once(&self.placement.client)
            .chain(&self.placement.servers)
            .chain(&self.placement.simulated_node)
            .chain(&self.placement.etcd)
            .chain(&self.placement.zookeeper)
            .chain(&self.placement.postgres)
            .chain(&self.placement.mysql)
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
    }

    /// How the targets were measured and judged, in one paragraph.
    fn write_method(&self, s: &mut String) {
        let m = &self.method;
        let _ = writeln!(
            s,
            "**Method.** Each target compares two implementations named in advance, in pairs. An \
             uncontended pair is a {} ms window in which the two sides' cycles alternate one by one \
             (A B, B A, ...), so both see the same machine, each side's rate taken at its median \
             cycle time (a stall of the machine lands on one cycle of whichever side ran, and \
             should not decide the pair; the tables keep mean rates and tails); a contention pair \
             is a slice of each back to back, each ending at the lock's {}th acquisition (or \
             after {} ms), so that both sides and every run read fairness and the tail over the \
             same share of the lock's work, however fast the machine ran. Who goes first is \
             drawn per pair by a seeded generator. The pairs come in {} batches, each its share \
             of the time and {}; in a batch, the first {} of each comparison {} discarded as \
             warm-up, and each round gives every comparison one pair. A figure is the median of \
             its pairs' values with a 95% interval between two of them, the ranks the binomial \
             law gives for independent pairs, widened where it reaches further to the same \
             interval over the batches' medians ({}): the machine's state lasts for seconds, \
             and some of what sets a ratio stays fixed for a whole process (where its \
             code and heap landed, its connections), so neither neighbouring pairs nor one \
             process's pairs are independent, and the batches show how far the figure moves with \
             both. Beside it stands where a repeat run's median should land: another run's median \
             carries its own error, so it falls outside this run's 95% interval far more often \
             than one time in twenty; from the batches' medians (k of them, spread s) the two runs' \
             medians differ by about s·√(2/k), scaled by Student's t with k − 1 degrees of freedom \
             at the level that holds for every target of the report at once (95% split over them, \
             Bonferroni). Measuring stops when the {:.0} s budget is spent, or once every repeat \
             interval's half-width is at most {:.0}% of its median after {} batches (it took {:.0} \
             s: {}). A target is met only when its whole repeat interval lies on the goal's side, \
             so that the verdict holds from run to run, not met when it lies wholly on the other, \
             else inconclusive (\"machine too noisy\" when its \
             half-width passes {:.0}%); a rung beating the floor with at least as many round \
             trips is a measurement anomaly, not a result. The tables interleave their \
             implementations in rounds in a shuffled order, intervals over rounds (a range when \
             there are too few). A reference `PING` loop on node 0 ran before, between the rounds \
             of pairs and after: its spread, the round trip's modes and the CPU steal time say how \
             far this machine can be trusted. The floor is a hand-written `SET NX PX` + `EVALSHA` \
             release on one connection per node (all nodes at once when N > 1).\n",
            m.pair_slice_ms,
            m.contention_pair_handoffs,
            m.contention_pair_slice_ms,
            m.batches,
            match (m.batch_processes, self.settings.own_servers) {
                (true, true) => "each in a fresh client process against fresh servers",
                (true, false) => "each in a fresh client process",
                (false, true) => "each against fresh servers, all in the run's own process",
                (false, false) => "all in the run's own process",
            },
            if m.warmup_pairs == 1 {
                "pair".to_string()
            } else {
                format!("{} pairs", m.warmup_pairs)
            },
            if m.warmup_pairs == 1 { "is" } else { "are" },
            batch_ranks(m.batches as usize),
            m.budget_s,
            m.stop_rule.finest * 100.0,
            crate::interval::BATCHES,
            m.seconds,
            m.ended,
            m.stop_rule.precision * 100.0,
        );
    }

    fn write_targets(&self, s: &mut String) {
        let _ = writeln!(s, "## Targets\n");
        let _ = writeln!(s, "What the ladder is expected to reach, and why:\n");
        // Targets that share their goal and its reason are listed together.
        for group in TARGETS.chunk_by(|a, b| a.why == b.why && a.goal == b.goal) {
            let whats: Vec<&str> = group.iter().map(|t| t.what).collect();
            let _ = writeln!(
                s,
                "- {} {}: {}.",
                whats.join("; "),
                group[0].goal.text(),
                group[0].why
            );
        }
        let _ = writeln!(s);
        let mut table = Table::new(
            s,
            &[
                "target",
                "median [95% interval]",
                "a repeat run's median",
                "pairs",
                "goal",
                "verdict",
            ],
        );
        for t in &self.targets {
            let verdict = match t.verdict {
                Verdict::Met | Verdict::NotMet => format!("**{}**", t.verdict.text()),
                other => format!("**{}**: {}", other.text(), t.reason),
            };
            table.row(&[
                t.target.clone(),
                t.estimate.as_ref().map_or("–".to_string(), figure),
                t.estimate.as_ref().map_or("–".to_string(), repeat_figure),
                t.estimate.map_or("0".to_string(), |e| e.n.to_string()),
                t.goal.clone(),
                verdict,
            ]);
        }
    }

    fn write_noise(&self, s: &mut String) {
        heading(s, "What the machine was doing");
        let _ = writeln!(s, "{}\n", self.noise.summary);
        let mut table = Table::new(
            s,
            &[
                "reference PING loop",
                "placement",
                "slices",
                "PINGs/s, median [95% interval]",
                "slowest–fastest slice",
                "slices in the slow mode",
            ],
        );
        for r in &self.noise.reference {
            table.row(&[
                r.phase.clone(),
                r.placement.clone(),
                r.slices.to_string(),
                r.ping_per_s.as_ref().map_or("–".to_string(), figure),
                format!("{}–{}", rate(r.ping_per_s_min), rate(r.ping_per_s_max)),
                r.slow_mode_slices.map_or("– (one mode)".to_string(), |n| {
                    format!("{n} of {}", r.slices)
                }),
            ]);
        }
        let _ = writeln!(s);
        let mut table = Table::new(
            s,
            &["phase", "s", "CPU steal %", "CPU busy % (all processes)"],
        );
        for p in &self.noise.phases {
            let each = |f: fn(&crate::noise::CpuUse) -> f64| {
                p.cpus
                    .iter()
                    .map(|c| format!("{} {}", c.cpu, f(c)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            table.row(&[
                p.phase.clone(),
                p.seconds.to_string(),
                each(|c| c.steal_pct),
                each(|c| c.busy_pct),
            ]);
        }
        let _ = writeln!(
            s,
            "\nLoad average (1 min): {} at the start, {} at the end.",
            self.noise.load_average[0], self.noise.load_average[1]
        );
    }

    fn write_raw_rtt(&self, s: &mut String) {
        let mut table = Table::section(
            s,
            "Raw round trip (PING, node 0, every slice of the run)",
            &[
                "placement",
                "slices",
                "p50 µs",
                "p99 µs",
                "PINGs/s",
                "modes",
            ],
        );
        for r in &self.figures.raw_rtt {
            table.row(&[
                r.placement.clone(),
                r.slices.to_string(),
                r.rtt_p50_us.to_string(),
                r.rtt_p99_us.to_string(),
                rate(r.ops_per_s),
                format!(
                    "{}: {}",
                    if r.modes.bimodal { "two" } else { "one" },
                    r.modes.describe()
                ),
            ]);
        }
    }

    fn write_uncontended(&self, s: &mut String) {
        for (title, rows) in [
            (
                "Uncontended acquire + release (client and servers on different CPUs)",
                &self.figures.uncontended,
            ),
            (
                "Uncontended, client and node 0 on the same CPU",
                &self.figures.uncontended_same_cpu,
            ),
        ] {
            write_uncontended_table(s, title, rows);
        }
        if let Some(sim) = &self.figures.simulated_node {
            write_uncontended_table(s, SIMULATED_TITLE, &sim.uncontended);
            let rtt = &sim.raw_rtt;
            let _ = writeln!(
                s,
                "\n{} The node ran {}. Its `PING` round trip: p50 {} µs, p99 {} µs, {} PINGs/s \
                 ({} slices; {}).",
                sim.note,
                sim.placement,
                rtt.rtt_p50_us,
                rtt.rtt_p99_us,
                rate(rtt.ops_per_s),
                rtt.slices,
                rtt.modes.describe()
            );
        }
    }

    fn write_contention(&self, s: &mut String) {
        let mut table = Table::of_subjects(
            s,
            "Contention (empty critical section; one client, many tasks)",
            &[
                "workers",
                "keys",
                "acq/s",
                "wait p50 µs",
                "p99 µs",
                "p99.9 µs",
                "max µs",
                "open waits",
                "fairness",
                "starved",
                "errors",
            ],
        );
        for r in &self.figures.contention {
            let figures = [
                r.workers.to_string(),
                r.keys.to_string(),
                rate_range(r.acq_per_s, r.acq_per_s_min, r.acq_per_s_max),
                wait_cell(r, "wait_p50_us", r.wait_p50_us),
                wait_cell(r, "wait_p99_us", r.wait_p99_us),
                wait_cell(r, "wait_p999_us", r.wait_p999_us),
                wait_cell(r, "wait_max_us", r.wait_max_us),
                r.waits_open.to_string(),
                format!("{:.2}", r.fairness),
                r.starved_workers.to_string(),
                r.errors.to_string(),
            ];
            table.subject_row(&r.subject, &figures, &r.ratios);
        }
        let _ = writeln!(
            s,
            "\nA wait still open when a slice ended counts in the wait percentiles at its open time \
             (right-censored: it lasted at least that long), so every waiter counts, the starved ones \
             too; *open waits* is how many there were over all rounds. A figure marked ≥ is only a \
             lower bound: open waits counted at or below it may in truth have lasted longer. \
             *starved* is the most workers that never got the lock in any one round's slice."
        );
    }

    fn write_inventory(&self, s: &mut String) {
        let mut table = Table::of_subjects(
            s,
            "Inventory sale under load (16 buyers, GET + SET of the stock under the lock)",
            &["sales/s", "oversold", "errors"],
        );
        for r in &self.figures.inventory {
            let figures = [
                rate(r.sales_per_s),
                r.oversold.to_string(),
                r.errors.to_string(),
            ];
            table.subject_row(&r.subject, &figures, &r.ratios);
        }
    }

    fn write_watchdog(&self, s: &mut String) {
        let mut table = Table::section(
            s,
            "Watchdog on long critical sections (4 holders, own keys)",
            &[
                "critical section ms",
                "watchdog TTL ms",
                "renewals per hold",
                "cycles/s",
                "lua-release (long TTL) cycles/s",
                "overhead",
                "lost",
            ],
        );
        for r in &self.figures.watchdog {
            let overhead = if r.baseline_cycles_per_s > 0.0 {
                format!(
                    "{:+.1}%",
                    (r.baseline_cycles_per_s / r.cycles_per_s.max(1e-9) - 1.0) * 100.0
                )
            } else {
                "–".to_string()
            };
            table.row(&[
                r.cs_ms.to_string(),
                r.ttl_ms.to_string(),
                format!("{:.1}", r.renewals),
                round3(r.cycles_per_s).to_string(),
                round3(r.baseline_cycles_per_s).to_string(),
                overhead,
                r.lost.to_string(),
            ]);
        }
    }

    fn write_touched(&self, s: &mut String) {
        if self.touched.external_servers.is_empty() {
            return;
        }
        let _ = writeln!(
            s,
            "\n## Touched\n\nServers {}: only keys and channels under `{}`; {} keys deleted at the end; nothing flushed.",
            self.touched.external_servers.join(", "),
            self.touched.key_prefix,
            self.touched.keys_deleted
        );
    }
}

fn write_uncontended_table(s: &mut String, title: &str, rows: &[UncontendedRow]) {
    let mut table = Table::of_subjects(
        s,
        title,
        &[
            "round trips",
            "cycles/s [interval]",
            "bound /s (share)",
            "p50 µs",
            "p99 µs",
            "p99.9 µs",
        ],
    );
    for r in rows {
        let bound = match r.bound_per_s {
            Some(b) if b > 0.0 => format!("{} ({:.0}%)", rate(b), r.cycles_per_s / b * 100.0),
            _ => "–".to_string(),
        };
        let figures = [
            r.round_trips.map_or("?".to_string(), |t| t.to_string()),
            r.cycles_per_s_interval.map_or_else(
                || rate_range(r.cycles_per_s, r.cycles_per_s_min, r.cycles_per_s_max),
                |e| format!("{} [{}–{}]", rate(e.median), rate(e.low), rate(e.high)),
            ),
            bound,
            r.p50_us.to_string(),
            r.p99_us.to_string(),
            r.p999_us.to_string(),
        ];
        let mut ratios = r.ratios;
        if r.anomaly.is_some() {
            // Not a result: shown as what it is.
            ratios.vs_floor = None;
        }
        table.subject_row(&r.subject, &figures, &ratios);
        if let Some(why) = &r.anomaly {
            let _ = writeln!(table.out, "| ↳ measurement anomaly | {why} |");
        }
    }
    let _ = writeln!(
        s,
        "\n*bound*: the most cycles per second the row's round trips allow at the fast mode of \
         the `PING` round trip measured in this placement, 1 / (round trips × RTT), and the share \
         of it reached. Cycles also cost CPU on both ends, so a share near 100% is as fast as the \
         network allows."
    );
}

/// The rows of `service` beside Redis under `title`, or the line saying
/// why there are none; nothing when the run did not get that far. A
/// service whose log fsyncs are counted has a column for them.
fn write_beside(s: &mut String, title: &str, service: Service, section: Option<&BesideRedis>) {
    let Some(section) = section else {
        return;
    };
    if let Some(why) = &section.skipped {
        heading(s, title);
        let _ = writeln!(s, "Skipped: {why}.");
        return;
    }
    let fsyncs = fsync_column(service);
    let mut columns = vec![
        "impl",
        "wait",
        "server",
        "round trips",
        "cycles/s [interval]",
    ];
    if let Some(column) = fsyncs {
        columns.push(column);
    }
    columns.extend(["p50 µs", "p99 µs", "p99.9 µs", "× floor"]);
    let mut table = Table::section(
        s,
        &format!("{title}: uncontended acquire + release"),
        &columns,
    );
    for row in &section.uncontended {
        let r = &row.figures;
        let server = Impl::named(&r.subject.impl_)
            .and_then(|which| which.service())
            .map_or("redis-server", Service::name);
        let mut cells = vec![
            r.subject.impl_.clone(),
            r.subject.wait.clone(),
            server.to_string(),
            r.round_trips.map_or("?".to_string(), |t| t.to_string()),
            r.cycles_per_s_interval.map_or_else(
                || rate_range(r.cycles_per_s, r.cycles_per_s_min, r.cycles_per_s_max),
                |e| format!("{} [{}–{}]", rate(e.median), rate(e.low), rate(e.high)),
            ),
        ];
        if fsyncs.is_some() {
            cells.push(
                row.wal_fsyncs_per_cycle
                    .map_or("–".to_string(), |f| format!("{f:.2}")),
            );
        }
        cells.extend([
            r.p50_us.to_string(),
            r.p99_us.to_string(),
            r.p999_us.to_string(),
            if r.subject.impl_ == "floor" {
                "itself".to_string()
            } else {
                cells::ratio(r.ratios.vs_floor)
            },
        ]);
        table.row(&cells);
    }
    let clients = section.handoff.first().map_or(0, |r| r.clients);
    let mut table = Table::section(
        s,
        &format!("{title}: {clients} clients on one lock, the hand-off"),
        &[
            "impl",
            "wait",
            "hand-offs/s [interval]",
            "acq/s",
            "hand-offs",
            "wake-ups per hand-off (median of rounds [interval])",
            "fairness",
            "errors",
            "abandoned",
        ],
    );
    for r in &section.handoff {
        table.row(&[
            r.subject.impl_.clone(),
            r.subject.wait.clone(),
            r.handoffs_per_s_interval.map_or_else(
                || rate(r.handoffs_per_s),
                |e| format!("{} [{}–{}]", rate(e.median), rate(e.low), rate(e.high)),
            ),
            rate(r.acq_per_s),
            r.handoffs.to_string(),
            match (r.wakeups_per_handoff, r.wakeups_per_handoff_interval) {
                (Some(w), Some(e)) => format!("{w:.2} (rounds: {})", figure(&e)),
                (Some(w), None) => format!("{w:.2}"),
                (None, _) => match r.wakeups {
                    Some(woken) if woken > 0 => format!("{woken} wake-ups, no hand-off"),
                    _ => "–".to_string(),
                },
            },
            format!("{:.2}", r.fairness),
            r.errors.to_string(),
            r.abandoned.to_string(),
        ]);
    }
    let _ = writeln!(s, "\n{}", section.note);
}

/// The column of the log fsyncs `service` counts (ZooKeeper counts none).
fn fsync_column(service: Service) -> Option<&'static str> {
    match service {
        Service::Etcd | Service::Postgres => Some("WAL fsyncs per cycle"),
        Service::MySql => Some("InnoDB fsyncs per cycle"),
        Service::ZooKeeper => None,
    }
}

fn write_plots(s: &mut String) {
    heading(s, "Plots");
    for plot in &PLOTS {
        let _ = writeln!(s, "![{}]({})", plot.what, plot.file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{BesideUncontendedRow, HandoffRow, Ratios, Subject};

    fn subject(which: Impl) -> Subject {
        Subject {
            impl_: which.name().to_string(),
            wait: which.wait().to_string(),
            nodes: 1,
        }
    }

    fn uncontended(which: Impl, cycles_per_s: f64, fsyncs: Option<f64>) -> BesideUncontendedRow {
        BesideUncontendedRow {
            figures: UncontendedRow {
                subject: subject(which),
                round_trips: crate::physics::round_trips(which),
                cycles_per_s,
                cycles_per_s_min: cycles_per_s,
                cycles_per_s_max: cycles_per_s,
                cycles_per_s_interval: None,
                bound_per_s: None,
                p50_us: 100,
                p99_us: 200,
                p999_us: 300,
                ratios: Ratios {
                    vs_floor: None,
                    vs_rslock: None,
                },
                anomaly: None,
            },
            wal_fsyncs_per_cycle: fsyncs,
        }
    }

    fn handoff(which: Impl, wakeups_per_handoff: f64) -> HandoffRow {
        HandoffRow {
            subject: subject(which),
            clients: 16,
            handoffs_per_s: 100.0,
            handoffs_per_s_interval: None,
            acq_per_s: 100.0,
            handoffs: 40,
            wakeups: Some((wakeups_per_handoff * 40.0) as u64),
            wakeups_per_handoff: Some(wakeups_per_handoff),
            wakeups_per_handoff_interval: None,
            fairness: 0.9,
            errors: 0,
            abandoned: 0,
        }
    }

    fn section(service: Service, rung: &'static str, fsyncs: Option<f64>) -> BesideRedis {
        BesideRedis {
            skipped: None,
            note: format!("the {} note", service.name()),
            uncontended: vec![
                uncontended(Impl::Floor, 9000.0, None),
                uncontended(service.rung(rung), 900.0, fsyncs),
            ],
            handoff: vec![handoff(service.rung(rung), 15.0)],
        }
    }

    #[test]
    fn the_zookeeper_rows_name_their_server_and_have_no_fsync_column() {
        let mut s = String::new();
        let zk = section(Service::ZooKeeper, "zk-herd", None);
        write_beside(&mut s, ZOOKEEPER_TITLE, Service::ZooKeeper, Some(&zk));
        assert!(s.contains("## ZooKeeper beside Redis: uncontended acquire + release"));
        assert!(s.contains("## ZooKeeper beside Redis: 16 clients on one lock, the hand-off"));
        assert!(!s.contains("WAL fsyncs"), "{s}");
        assert!(
            s.contains("| zk-herd | watch-parent | ZooKeeper | 3 |"),
            "{s}"
        );
        assert!(s.contains("| floor | poll-1ms | redis-server | 2 |"), "{s}");
        assert!(s.contains("| itself |"), "{s}");
        assert!(s.contains("| 15.00 |"), "{s}");
        assert!(s.trim_end().ends_with("the ZooKeeper note"), "{s}");
        // Every row has as many cells as its table's heading.
        for table in s.split("\n\n").filter(|t| t.starts_with('|')) {
            let cells: Vec<usize> = table.lines().map(|l| l.matches('|').count()).collect();
            assert!(cells.iter().all(|c| *c == cells[0]), "{table}");
        }
    }

    #[test]
    fn the_etcd_rows_keep_their_fsyncs_beside_the_zookeeper_rows() {
        let etcd = section(Service::Etcd, "etcd-mutex", Some(4.0));
        let zk = section(Service::ZooKeeper, "zk-recipe", None);
        let mut s = String::new();
        write_beside(&mut s, ETCD_TITLE, Service::Etcd, Some(&etcd));
        write_beside(&mut s, ZOOKEEPER_TITLE, Service::ZooKeeper, Some(&zk));
        assert!(s.contains("WAL fsyncs per cycle"), "{s}");
        assert!(s.contains("| etcd-mutex | watch | etcd | 4 |"), "{s}");
        assert!(s.contains("| 4.00 |"), "{s}");
        assert!(s.contains("| zk-recipe | watch | ZooKeeper | 3 |"), "{s}");
        assert!(s.find("## etcd beside Redis") < s.find("## ZooKeeper beside Redis"));
    }

    #[test]
    fn the_database_rows_name_their_server_and_their_logs_fsyncs() {
        let pg = section(Service::Postgres, "db-fenced", Some(2.0));
        let my = section(Service::MySql, "mysql-get-lock", Some(0.0));
        let mut s = String::new();
        write_beside(&mut s, POSTGRES_TITLE, Service::Postgres, Some(&pg));
        write_beside(&mut s, MYSQL_TITLE, Service::MySql, Some(&my));
        assert!(s.contains("## PostgreSQL beside Redis: uncontended"), "{s}");
        assert!(s.contains("| db-fenced | fixed | PostgreSQL | 2 |"), "{s}");
        assert!(s.contains("| 2.00 |") && s.contains("| 0.00 |"), "{s}");
        assert!(s.contains("InnoDB fsyncs per cycle"), "{s}");
        assert!(
            s.contains("| mysql-get-lock | fixed | MariaDB | 2 |"),
            "{s}"
        );
        assert!(s.find("## PostgreSQL beside Redis") < s.find("## MariaDB beside Redis"));
    }

    #[test]
    fn skipped_rows_say_why_and_rows_never_reached_say_nothing() {
        let skipped = BesideRedis {
            skipped: Some("no ZooKeeper server could be started: not installed".into()),
            note: String::new(),
            uncontended: Vec::new(),
            handoff: Vec::new(),
        };
        let mut s = String::new();
        write_beside(&mut s, ZOOKEEPER_TITLE, Service::ZooKeeper, Some(&skipped));
        assert_eq!(
            s,
            "\n## ZooKeeper beside Redis\n\nSkipped: no ZooKeeper server could be started: not installed.\n"
        );
        let mut s = String::new();
        write_beside(&mut s, ZOOKEEPER_TITLE, Service::ZooKeeper, None);
        assert!(s.is_empty());
    }
}
