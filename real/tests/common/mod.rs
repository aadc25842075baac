//! What the real-mode tests of the lock services share: loading a
//! scenario of one service's folder, and running one cell on the
//! simulator and on real servers, one real run at a time.

#![allow(dead_code)] // each test file uses its own part of the helpers

use model::scenario::Scenario;
use model::verdict::Verdict;
use real::agreement::{Agreement, agreement};
use real::cell::{CellOutcome, describe_outcome, run_real_cell};
use sim::cell::run_cell;
use std::path::Path;
use std::sync::Mutex;

/// Real runs per cell in this test.
pub const REPEAT: u32 = 1;

/// Real runs are timed by the machine's clock: one at a time.
pub static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Loads `scenarios/<folder>/<name>.toml`.
pub fn scenario(folder: &str, name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(folder)
        .join(format!("{name}.toml"));
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `rung` in `scenario` on the simulator and `REPEAT` times on real
/// servers, and asserts that the simulator gives `expected` and reality
/// agrees.
pub fn assert_agrees(scenario: &Scenario, rung: &str, expected: Verdict) {
    let name = &scenario.name;
    let seed = scenario.seeds[0];
    let simulated = run_cell(scenario, rung, seed)
        .unwrap_or_else(|e| panic!("{name} / {rung} on the simulator: {e}"))
        .verdict;
    assert_eq!(
        simulated, expected,
        "{name} / {rung}: the simulator changed"
    );
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let outcome = run_real_cell(scenario, rung, seed, REPEAT, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{name} / {rung} on real servers: {e}"));
    eprintln!(
        "{name} / {rung}: simulator {}, real {}",
        simulated.as_str(),
        describe_outcome(&outcome)
    );
    let CellOutcome::Runs(runs) = &outcome else {
        panic!(
            "{name} / {rung}: not stageable: {}",
            describe_outcome(&outcome)
        );
    };
    assert_eq!(
        agreement(simulated, &outcome),
        Agreement::Agree,
        "{name} / {rung}: simulator {}, real {}; first real run:\n{}",
        simulated.as_str(),
        describe_outcome(&outcome),
        report::output::describe(&runs[0])
    );
}
