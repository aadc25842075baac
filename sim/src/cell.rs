//! One cell of the safety matrix: a rung, a scenario and a seed, run and
//! judged.

use crate::check::{CheckConfig, CheckResults, check_all};
use crate::history::History;
use crate::run::{RunError, run};
use crate::scenario::Scenario;
use crate::verdict::Verdict;
use std::time::Duration;

/// A judged run.
#[derive(Debug, Clone)]
pub struct Judged {
    /// The scenario's name.
    pub scenario: String,
    /// The rung.
    pub rung: String,
    /// The seed.
    pub seed: u64,
    /// What happened.
    pub history: History,
    /// What the checkers found.
    pub results: CheckResults,
    /// The cell's verdict.
    pub verdict: Verdict,
    /// Simulated time the run took.
    pub sim_elapsed: Duration,
}

/// What the checkers need to know about a scenario and rung.
pub fn check_config(scenario: &Scenario, rung: &str) -> CheckConfig {
    CheckConfig {
        resource: Some(scenario.resource_of(rung)),
        liveness_bound: Duration::from_millis(scenario.liveness_bound_ms()),
        // A fencing rung's claim is about the resource, not about who
        // holds the lock (`docs/ladder.md`, verdict rules).
        resource_decides_safety: locks::rung(rung).is_some_and(|r| r.fencing),
    }
}

/// Judges a history of `rung` in `scenario`.
pub fn judge(scenario: &Scenario, rung: &str, history: &History) -> (CheckResults, Verdict) {
    let results = check_all(history, &check_config(scenario, rung));
    let verdict = Verdict::of(&results);
    (results, verdict)
}

/// Runs and judges one cell.
pub fn run_cell(scenario: &Scenario, rung: &str, seed: u64) -> Result<Judged, RunError> {
    let output = run(scenario, rung, seed)?;
    let (results, verdict) = judge(scenario, rung, &output.history);
    Ok(Judged {
        scenario: scenario.name.clone(),
        rung: rung.to_string(),
        seed,
        history: output.history,
        results,
        verdict,
        sim_elapsed: output.sim_elapsed,
    })
}
