//! The libraries' reported bugs (`scenarios/libraries/`): every scenario
//! there gives each rung it names the verdict its `expect` table pins,
//! under every seed it lists, and each cites the report it comes from.

use crate::common;

use model::scenario::Scenario;
use sim::cell::run_cell;
use std::path::PathBuf;

fn library_scenarios() -> Vec<(PathBuf, Scenario)> {
    let dir = common::scenarios_dir().join("libraries");
    sim::suite::scenario_files(&dir)
        .expect("scenarios/libraries/ lists its files")
        .into_iter()
        .map(|file| {
            let scenario = Scenario::load(&file).unwrap_or_else(|e| panic!("{e}"));
            (file, scenario)
        })
        .collect()
}

#[test]
fn at_least_six_reported_bugs_are_scenarios_each_citing_its_report() {
    let scenarios = library_scenarios();
    assert!(scenarios.len() >= 6, "{} scenarios", scenarios.len());
    for (file, scenario) in &scenarios {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(
            text.contains("https://github.com/"),
            "{}: cites no report",
            file.display()
        );
        for rung in &scenario.rungs {
            assert!(
                scenario.expect.contains_key(rung),
                "{}: no expectation for {rung}",
                scenario.name
            );
        }
    }
}

#[test]
fn every_library_scenario_gives_each_rung_its_pinned_verdict_under_every_seed() {
    for (_, scenario) in library_scenarios() {
        for rung in &scenario.rungs {
            for &seed in &scenario.seeds {
                let judged = run_cell(&scenario, rung, seed)
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
}

#[test]
fn every_library_rung_is_named_by_some_shipped_scenario() {
    let dir = common::scenarios_dir();
    let scenarios = sim::suite::load_all(&dir).expect("load");
    for rung in locks::LIBRARIES {
        assert!(
            scenarios
                .iter()
                .any(|s| s.rungs.iter().any(|r| r == rung.id)),
            "no scenario names {}",
            rung.id
        );
    }
}
