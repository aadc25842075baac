//! One cell of the safety matrix: a rung, a scenario and a seed, run and
//! judged.

use crate::run::{RunError, RunOutput, run};
use judge::check::{CheckConfig, CheckResults, check_all};
pub use judge::judged::Judged;
use model::history::History;
use model::scenario::Scenario;
use model::verdict::Verdict;
use std::time::Duration;

/// What the checkers need to know about a scenario and rung.
pub fn check_config(scenario: &Scenario, rung: &str) -> CheckConfig {
    CheckConfig {
        resource: Some(scenario.resource_of(rung)),
        liveness_bound: Duration::from_millis(scenario.liveness_bound_ms()),
        // A fencing rung's claim is about the resource, not about who
        // holds the lock (`docs/ladder.md`, verdict rules).
        resource_decides_safety: locks::rung(rung).is_some_and(|r| r.fencing),
        cut_short: None,
    }
}

/// Judges a complete history of `rung` in `scenario`.
pub fn judge(scenario: &Scenario, rung: &str, history: &History) -> (CheckResults, Verdict) {
    let results = check_all(history, &check_config(scenario, rung));
    let verdict = judge::verdict::verdict_of(&results);
    (results, verdict)
}

/// Judges what a run of `rung` in `scenario` with `seed` produced,
/// including a run that was cut short.
pub fn judge_output(scenario: &Scenario, rung: &str, seed: u64, output: RunOutput) -> Judged {
    let config = CheckConfig {
        cut_short: output.cut_short,
        ..check_config(scenario, rung)
    };
    let results = check_all(&output.history, &config);
    Judged {
        scenario: scenario.name.clone(),
        rung: rung.to_string(),
        seed,
        verdict: judge::verdict::verdict_of(&results),
        history: output.history,
        results,
        sim_elapsed: output.sim_elapsed,
    }
}

/// Runs and judges one cell.
pub fn run_cell(scenario: &Scenario, rung: &str, seed: u64) -> Result<Judged, RunError> {
    let output = run(scenario, rung, seed)?;
    Ok(judge_output(scenario, rung, seed, output))
}
