//! Many clients: a run of the largest scenario a file may describe (256
//! clients) is as deterministic as a small one, whether its clients share
//! the simulated machine of the clients no fault touches or have one of
//! their own (`sim/src/machines.rs`).

use model::history::EventKind;
use model::scenario::Scenario;
use sim::explore::speed::sweep_scenario;

/// The sweep's 256 clients, three of them hit by faults that give them a
/// machine of their own (a partition, a crash that restarts) or leave them
/// on the shared one (a pause).
fn crowd_with_faults() -> Scenario {
    let mut scenario = sweep_scenario(256);
    scenario.duration_ms = 2_000;
    let faults = r#"
name = "faults"
description = "faults"
rungs = ["set-nx-px"]
seeds = [1]
duration_ms = 2000
[[clients]]
count = 256
cycles = 1
critical_section_ms = 100
[[faults]]
kind = "partition"
at_ms = 50
a = ["client-0"]
b = ["redis-0"]
duration_ms = 300
[[faults]]
kind = "crash"
at_ms = 20
target = "client-1"
restart_after_ms = 100
[[faults]]
kind = "pause"
at_ms = 30
target = "client-2"
duration_ms = 200
"#;
    scenario.faults = Scenario::parse(faults, "faults.toml", "faults")
        .unwrap_or_else(|e| panic!("{e}"))
        .faults;
    scenario
}

#[test]
fn a_run_of_256_clients_gives_the_same_history_bytes_twice() {
    let scenario = crowd_with_faults();
    let first = sim::run::run(&scenario, "set-nx-px", 7).expect("runs");
    let again = sim::run::run(&scenario, "set-nx-px", 7).expect("runs");
    assert_eq!(first.history.to_jsonl(), again.history.to_jsonl());
    // Every client started its cycle, on either kind of machine, and the
    // faults all fired.
    let invoked: std::collections::BTreeSet<usize> = first
        .history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Invoke { client, .. } => Some(*client),
            _ => None,
        })
        .collect();
    assert_eq!(invoked.len(), 256);
    let faults = first
        .history
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Fault { .. }))
        .count();
    assert!(faults >= 3, "{faults} fault records");
}
