//! What the simulator's integration tests share: where the project's
//! scenario and rung files are, and loading one scenario by name (a
//! broken file fails the test with the loader's own message).

#![allow(dead_code)] // each test file uses its own part of the helpers

use model::scenario::Scenario;
use std::path::PathBuf;

/// The project's root (the `sim` crate's parent folder).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The project's `scenarios/` folder.
pub fn scenarios_dir() -> PathBuf {
    root().join("scenarios")
}

/// The path of `scenarios/<name>.toml`.
pub fn scenario_path(name: &str) -> PathBuf {
    scenarios_dir().join(format!("{name}.toml"))
}

/// Loads `scenarios/<name>.toml`.
pub fn scenario(name: &str) -> Scenario {
    Scenario::load(&scenario_path(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// Loads `scenarios/<name>.toml` with its text.
pub fn scenario_with_text(name: &str) -> (Scenario, String) {
    Scenario::load_text(&scenario_path(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs every scenario under `scenarios/<folder>/` for every rung it
/// names and every seed it lists (at least six), asserting each verdict
/// is the expected one; at least `min_scenarios` scenarios and
/// `min_runs` runs in all.
pub fn assert_every_expectation(folder: &str, min_scenarios: usize, min_runs: usize) {
    let dir = scenarios_dir().join(folder);
    let scenarios = sim::suite::load_all(&dir).unwrap_or_else(|e| panic!("{folder}: {e}"));
    assert!(
        scenarios.len() >= min_scenarios,
        "{} scenarios",
        scenarios.len()
    );
    let mut runs = 0;
    for s in &scenarios {
        assert!(s.seeds.len() >= 6, "{}: seeds {:?}", s.name, s.seeds);
        for rung in &s.rungs {
            let expected = s.expect[rung];
            for &seed in &s.seeds {
                let judged = sim::cell::run_cell(s, rung, seed).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(
                    judged.verdict, expected,
                    "{}/{rung} seed {seed}: {:?}",
                    s.name, judged.results
                );
                runs += 1;
            }
        }
    }
    assert!(runs >= min_runs, "{runs} runs");
}

/// Every scenario file under `scenarios/<folder>/`, loaded, with its path.
pub fn scenarios_in(folder: &str) -> Vec<(PathBuf, Scenario)> {
    let dir = scenarios_dir().join(folder);
    sim::suite::scenario_files(&dir)
        .unwrap_or_else(|e| panic!("scenarios/{folder}/ lists its files: {e}"))
        .into_iter()
        .map(|file| {
            let scenario = Scenario::load(&file).unwrap_or_else(|e| panic!("{e}"));
            (file, scenario)
        })
        .collect()
}

/// Runs every rung `scenario` names under every seed it lists, and checks
/// each gets the verdict its `expect` table pins.
pub fn assert_pinned_verdicts(scenario: &Scenario) {
    for rung in &scenario.rungs {
        for &seed in &scenario.seeds {
            let judged = sim::cell::run_cell(scenario, rung, seed)
                .unwrap_or_else(|e| panic!("{}/{rung}: {e}", scenario.name));
            assert_eq!(
                Some(&judged.verdict),
                scenario.expect.get(rung),
                "{}/{rung} seed {seed}: {:?}",
                scenario.name,
                judged.results
            );
        }
    }
}
