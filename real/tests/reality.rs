//! A bounded subset of the safety matrix on real redis-server, with real
//! faults of each kind real mode stages: a client's stop-the-world pause
//! (at a fault point), a node kill and restart, a partition through the
//! proxy, and a failover. For each cell the simulator's verdict is
//! computed here too, and the real runs must agree with it: a violation
//! the simulator finds is reproduced in at least one of the real runs,
//! and a cell the simulator calls safe is never violated or deadlocked.
//! A node clock jump is staged by shifting the node's key deadlines. Needs
//! redis-server (scripts/test installs it).

use model::scenario::Scenario;
use model::verdict::Verdict;
use real::agreement::{Agreement, agreement};
use real::cell::{CellOutcome, run_real_cell};
use sim::cell::{Judged, run_cell};
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

/// Real runs per cell in this test.
const REPEAT: u32 = 2;

/// Real runs are timed by the machine's clock: one at a time, so that the
/// tests of this file do not slow each other's clients down.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn scenario(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(format!("{name}.toml"));
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs one cell on the simulator and `REPEAT` times on real servers;
/// returns the simulator's verdict and the real outcome.
fn both(name: &str, rung: &str) -> (Verdict, CellOutcome) {
    let scenario = scenario(name);
    let seed = scenario.seeds[0];
    let simulated = run_cell(&scenario, rung, seed)
        .unwrap_or_else(|e| panic!("{name} / {rung} on the simulator: {e}"))
        .verdict;
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let started = Instant::now();
    let outcome = run_real_cell(&scenario, rung, seed, REPEAT, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{name} / {rung} on real servers: {e}"));
    eprintln!(
        "{name} / {rung}: simulator {}, real {} in {:.1} s",
        simulated.as_str(),
        real::cell::describe_outcome(&outcome),
        started.elapsed().as_secs_f64()
    );
    (simulated, outcome)
}

/// Asserts that the simulator still gives `expected` for one cell and
/// that the real runs agree with it; the real runs.
fn assert_agrees(name: &str, rung: &str, expected: Verdict) -> Vec<Judged> {
    let (simulated, outcome) = both(name, rung);
    assert_eq!(
        simulated, expected,
        "{name} / {rung}: the simulator changed"
    );
    let runs = match &outcome {
        CellOutcome::Runs(runs) => runs,
        CellOutcome::NotStageable(why) => panic!("{name} / {rung}: not stageable: {why:?}"),
    };
    assert_eq!(
        agreement(simulated, &outcome),
        Agreement::Agree,
        "{name} / {rung}: simulator {}, real {}; first real run:\n{}",
        simulated.as_str(),
        real::cell::describe_outcome(&outcome),
        report::output::describe(&runs[0])
    );
    runs.clone()
}

#[test]
fn a_client_paused_at_release_start_breaks_set_nx_px_for_real_and_not_get_check_del() {
    assert_agrees("pause-at-release-start", "set-nx-px", Verdict::Violated);
    assert_agrees("pause-at-release-start", "get-check-del", Verdict::Safe);
}

#[test]
fn a_stop_the_world_pause_freezes_the_watchdog_for_real() {
    assert_agrees("stop-the-world-pause", "watchdog", Verdict::Violated);
}

#[test]
fn a_node_killed_and_restarted_empty_breaks_redlock_for_real() {
    assert_agrees("restart-without-fsync", "redlock", Verdict::Violated);
}

#[test]
fn a_partition_through_the_proxy_breaks_the_watchdog_and_not_redlock() {
    assert_agrees("partition-from-redis", "watchdog", Verdict::Violated);
    assert_agrees("partition-from-redis", "redlock", Verdict::Safe);
}

#[test]
fn a_failover_loses_the_watchdogs_lock_for_real() {
    assert_agrees("failover-async-replication", "watchdog", Verdict::Violated);
}

#[test]
fn a_node_clock_jump_staged_by_shifting_deadlines_breaks_redlock_and_not_fenced() {
    for (rung, expected) in [("redlock", Verdict::Violated), ("fenced", Verdict::Safe)] {
        let runs = assert_agrees("clock-jump-on-majority-node", rung, expected);
        let jumped = runs[0].history.events().iter().any(|e| {
            matches!(&e.kind, model::history::EventKind::Fault { fault, .. }
                if *fault == model::fault::FaultKind::ClockJump)
        });
        assert!(jumped, "{rung}: the history does not record the jump");
    }
}
