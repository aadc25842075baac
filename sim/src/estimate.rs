//! How long a scenario's runs will take, estimated from the file before
//! they start, so that a run that will take minutes says so first.
//!
//! A run's time is turmoil's stepping and the work its clients make. At
//! every 1 ms step ([`TICK`]) turmoil ticks each machine's runtime and
//! each machine looks through the network's links for messages to it; the
//! hosts that no fault touches share two machines
//! ([`crate::machines`]), so that part grows with the faulted hosts, not
//! with the clients. The clients' work grows with the clients and the
//! nodes each dials: a waiting client retries every `retry_ms`, a holder
//! reads, writes and releases. The model:
//!
//! wall per run = [`STARTUP_S`] + steps × ([`MACHINE_US`] × machines +
//! [`CLIENT_US`] × clients × nodes dialed) µs
//!
//! fitted to times measured on this project's 2-CPU build machine (an AMD
//! EPYC guest, one CPU per run); `sim/tests/simulator/estimate.rs` pins its shape,
//! not its constants. Fitted on 2026-11-27 to runs of 2 to 256 clients on
//! 1 to 9 nodes, 2 to 30 simulated seconds, it predicts each within a
//! factor of about 2 (256 clients for 5 s: 0.51 s measured, 0.8 s
//! predicted; 128 clients on 5 masters for 2 s: 1.24 s and 0.78 s; the
//! standard search case: 1.31 s and 0.9 s). The steps are the simulated
//! time until the clients are done: their own cycles and think
//! times or, when they contend for the lock, their holds one after
//! another, each client giving up after `max_wait_ms` per cycle; never
//! more than `duration_ms`, and never less than the time of the last
//! timed fault.
//!
//! What it leaves out: requests that time out before their reply can come
//! (a `response_timeout_ms` shorter than the round trip) make a client
//! redial at every attempt, which costs up to 4 times as much per step.

use crate::machines::Machines;
use crate::run::TICK;
use model::scenario::{Scenario, TopologyKind};
use std::time::Duration;

/// Fixed cost of one run: building the world, the audit, writing files, s.
pub const STARTUP_S: f64 = 0.005;
/// Cost of one machine per step, µs.
pub const MACHINE_US: f64 = 3.0;
/// Cost of one client per node it dials per step, µs.
pub const CLIENT_US: f64 = 0.6;

/// Runs estimated to take longer than this (in wall time) get a note
/// before they start.
pub const NOTE_ABOVE: Duration = Duration::from_secs(30);

/// What one scenario's runs are expected to cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The longest simulated time one of its runs is expected to last, ms.
    pub simulated_ms: u64,
    /// Its clients.
    pub clients: usize,
    /// Seeds run.
    pub seeds: usize,
    /// Rungs run.
    pub rungs: usize,
    /// Expected wall time of every run one after another, on one CPU.
    pub total: Duration,
    /// Expected wall time of the longest single run.
    pub longest_run: Duration,
}

/// The simulated time, ms, a run of `rung` in `scenario` is expected to
/// last: until its clients are done, at most `duration_ms`.
pub fn expected_simulated_ms(scenario: &Scenario, rung: &str) -> u64 {
    let lock = &scenario.lock;
    let network = &scenario.network;
    // f64 throughout: cycles and writes are unbounded counts, and an
    // estimate may saturate but never wrap around.
    let round_trip = 2.0 * network.latency_ms as f64 + network.jitter_ms as f64 + 1.0;
    let hold = |writes: u32, critical_section_ms: u64, nested: bool| {
        f64::from(writes) * (critical_section_ms as f64 + 2.0 * round_trip)
            + round_trip * if nested { 3.0 } else { 2.0 }
    };
    // Holders of a real lock take their turns one after another.
    let serialized = locks::rung(rung).is_none_or(|r| r.excludes);
    let serial: f64 = if serialized {
        scenario
            .clients
            .iter()
            .map(|g| {
                g.count as f64
                    * f64::from(g.cycles)
                    * hold(g.writes, g.critical_section_ms, g.nested)
            })
            .sum()
    } else {
        0.0
    };
    let clients_done = scenario
        .clients
        .iter()
        .map(|g| {
            let start = g.start_ms as f64;
            let cycles = f64::from(g.cycles);
            let own_hold = hold(g.writes, g.critical_section_ms, g.nested);
            let own = start + cycles * (g.think_ms as f64 + own_hold);
            // A waiter gives up after `max_wait_ms` in each cycle.
            let gives_up = start
                + cycles * (g.think_ms as f64 + lock.max_wait_ms as f64 + own_hold + round_trip);
            own.max(start + serial).min(gives_up)
        })
        .fold(0.0, f64::max);
    let faults_done = scenario
        .faults_of(rung)
        .iter()
        .filter_map(|f| f.when.at_ms)
        .map(|at_ms| at_ms as f64)
        .fold(0.0, f64::max);
    let duration = scenario.duration_ms as f64;
    clients_done.max(faults_done).min(duration).max(1.0) as u64
}

/// The expected wall time of one run of `rung` in `scenario`.
pub fn run_wall(scenario: &Scenario, rung: &str) -> Duration {
    // The workload, then stocking the store and reading it at the end,
    // which take a few trips each on a slow network.
    let trip_ms = (scenario.network.latency_ms + scenario.network.jitter_ms) as f64;
    let simulated_ms = expected_simulated_ms(scenario, rung) as f64 + 8.0 * trip_ms;
    let steps = simulated_ms * 1_000.0 / TICK.as_micros() as f64;
    let topology = scenario.topology_of(rung);
    let dialed = match topology.kind {
        TopologyKind::Independent => topology.node_count(),
        // A cluster's client talks to one member at a time.
        TopologyKind::Standalone | TopologyKind::Replicated | TopologyKind::Cluster => 1,
    } as f64;
    let clients = scenario.client_count();
    let machines = machines_of(scenario, rung) as f64;
    let step_us = MACHINE_US * machines + CLIENT_US * clients as f64 * dialed;
    Duration::try_from_secs_f64(STARTUP_S + steps * step_us / 1e6).unwrap_or(Duration::MAX)
}

/// How many machines a run of `rung` in `scenario` has
/// ([`crate::machines`]).
fn machines_of(scenario: &Scenario, rung: &str) -> usize {
    let topology = scenario.topology_of(rung);
    let clients = scenario.client_count();
    let Ok(service) = crate::service::lock_service(rung, topology) else {
        // No run: a machine per host is the most it could have.
        return clients + topology.node_count() + 1;
    };
    let nodes = service.node_hosts(topology);
    let faults = scenario.faults_of(rung);
    Machines::plan(faults, clients, &nodes, service.nodes_talk(topology)).count()
}

/// `d` times `n`, saturating.
fn times(d: Duration, n: usize) -> Duration {
    d.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX))
}

/// The estimate of running `rungs` of `scenario` under `seeds` seeds each.
pub fn estimate(scenario: &Scenario, rungs: &[String], seeds: usize) -> Estimate {
    let per_rung: Vec<Duration> = rungs.iter().map(|r| run_wall(scenario, r)).collect();
    let longest_run = per_rung.iter().copied().max().unwrap_or_default();
    let total = per_rung.iter().fold(Duration::ZERO, |sum, d| {
        sum.saturating_add(times(*d, seeds))
    });
    Estimate {
        simulated_ms: rungs
            .iter()
            .map(|r| expected_simulated_ms(scenario, r))
            .max()
            .unwrap_or(0),
        clients: scenario.client_count(),
        seeds,
        rungs: rungs.len(),
        total,
        longest_run,
    }
}

/// The note printed before runs expected to take longer than
/// [`NOTE_ABOVE`], naming `file`; `wall` is the time they are expected to
/// take as they will be run (one after another, or spread over workers).
pub fn note(file: &str, estimate: &Estimate, wall: Duration) -> Option<String> {
    (wall > NOTE_ABOVE).then(|| {
        format!(
            "{file}: simulates {} with {} client{} for {} seed{} × {} rung{}; expect about {}",
            human(Duration::from_millis(estimate.simulated_ms)),
            estimate.clients,
            plural(estimate.clients),
            estimate.seeds,
            plural(estimate.seeds),
            estimate.rungs,
            plural(estimate.rungs),
            human(wall)
        )
    })
}

/// The note for `locklab run`, whose runs go one after another.
pub fn run_note(file: &str, scenario: &Scenario, rungs: &[String], seeds: usize) -> Option<String> {
    let estimate = estimate(scenario, rungs, seeds);
    note(file, &estimate, estimate.total)
}

/// The note for one scenario of `locklab suite`, whose jobs (one of
/// `rungs`, every seed) are spread over `workers` threads.
pub fn suite_note(
    file: &str,
    scenario: &Scenario,
    rungs: &[String],
    workers: usize,
) -> Option<String> {
    let estimate = estimate(scenario, rungs, scenario.seeds.len());
    let longest_job = times(estimate.longest_run, scenario.seeds.len());
    let spread = estimate
        .total
        .div_f64(workers.clamp(1, rungs.len().max(1)) as f64);
    note(file, &estimate, spread.max(longest_job))
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A duration for people: "40 s", "4 min", "3 h", "2 days".
pub fn human(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 90.0 {
        format!("{:.0} s", s.max(1.0))
    } else if s < 90.0 * 60.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 48.0 * 3600.0 {
        format!("{:.0} h", s / 3600.0)
    } else {
        format!("{:.0} days", s / 86_400.0)
    }
}
