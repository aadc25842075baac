//! One cell of the safety matrix: a rung, a scenario and a seed, run and
//! judged.

use crate::check::resource::{ResourceKind, ResourceSpec};
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
    pub variant: String,
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
pub fn check_config(scenario: &Scenario, variant: &str) -> CheckConfig {
    let kind = if scenario.resource.kind == "fenced" {
        ResourceKind::Fenced
    } else {
        ResourceKind::Inventory
    };
    CheckConfig {
        resource: Some(ResourceSpec {
            kind,
            initial: scenario.resource.stock,
        }),
        liveness_bound: Duration::from_millis(scenario.liveness_bound_ms()),
        // The fenced rung's claim is about the resource (LADDER.md).
        resource_decides_safety: variant == "fenced",
    }
}

/// Judges a history of `variant` in `scenario`.
pub fn judge(scenario: &Scenario, variant: &str, history: &History) -> (CheckResults, Verdict) {
    let results = check_all(history, &check_config(scenario, variant));
    let verdict = Verdict::of(&results);
    (results, verdict)
}

/// Runs and judges one cell.
pub fn run_cell(scenario: &Scenario, variant: &str, seed: u64) -> Result<Judged, RunError> {
    let output = run(scenario, variant, seed)?;
    let (results, verdict) = judge(scenario, variant, &output.history);
    Ok(Judged {
        scenario: scenario.name.clone(),
        variant: variant.to_string(),
        seed,
        history: output.history,
        results,
        verdict,
        sim_elapsed: output.sim_elapsed,
    })
}
