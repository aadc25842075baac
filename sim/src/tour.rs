//! `locklab tour`: the ladder told rung by rung from live simulator runs.
//!
//! For each rung: what it fixes, its flaw, the scenario whose fault breaks
//! it, the timeline of the break, and the next rung surviving the same
//! fault. Everything shown is computed on the spot, not canned. The
//! runs are made here; the report crate's `tour` tells them.

use crate::cell::{Judged, run_cell};
use crate::run::RunError;
use model::scenario::Scenario;
use model::verdict::Verdict;

/// One stop of the tour.
#[derive(Debug)]
pub struct Stop {
    /// The rung.
    pub rung: &'static locks::Rung,
    /// The scenario that breaks it.
    pub scenario: String,
    /// The rung in that scenario.
    pub broken: Judged,
    /// The next rung in the same scenario, when the scenario names it.
    pub next: Option<Judged>,
}

/// The scenario of `scenarios` that shows `rung`'s flaw: the first of its
/// `shown_by` names that is present, preferring one in which the next rung
/// is expected to survive, then one that at least runs the next rung.
pub fn scenario_for<'a>(rung: &locks::Rung, scenarios: &'a [Scenario]) -> Option<&'a Scenario> {
    let next = locks::LADDER.get(rung.number as usize + 1).map(|r| r.id);
    let named: Vec<&Scenario> = rung
        .shown_by
        .split(',')
        .map(str::trim)
        .filter_map(|name| scenarios.iter().find(|s| s.name == name))
        .filter(|s| s.rungs.iter().any(|v| v == rung.id))
        .collect();
    let next_survives =
        |s: &&&Scenario| next.is_some_and(|n| s.expect.get(n).is_some_and(|v| *v == Verdict::Safe));
    let runs_next = |s: &&&Scenario| next.is_some_and(|n| s.rungs.iter().any(|v| v == n));
    named
        .iter()
        .find(next_survives)
        .or_else(|| named.iter().find(runs_next))
        .or(named.first())
        .copied()
}

/// Runs the tour's stops, in ladder order (rungs with no scenario skipped).
pub fn stops(scenarios: &[Scenario]) -> Result<Vec<Stop>, String> {
    let mut out = Vec::new();
    for rung in locks::LADDER {
        out.extend(stop(rung, scenarios).map_err(|e| e.to_string())?);
    }
    Ok(out)
}

/// Runs `rung`'s stop: the rung in the scenario that breaks it, and the
/// next rung in the same scenario; `None` when no scenario shows its flaw.
pub fn stop(rung: &'static locks::Rung, scenarios: &[Scenario]) -> Result<Option<Stop>, RunError> {
    let Some(scenario) = scenario_for(rung, scenarios) else {
        return Ok(None);
    };
    let seed = scenario.seeds.first().copied().unwrap_or(1);
    let broken = run_cell(scenario, rung.id, seed)?;
    let next = match locks::LADDER.get(rung.number as usize + 1) {
        Some(n) if scenario.rungs.iter().any(|v| v == n.id) => {
            Some(run_cell(scenario, n.id, seed)?)
        }
        _ => None,
    };
    Ok(Some(Stop {
        rung,
        scenario: scenario.name.clone(),
        broken,
        next,
    }))
}

/// One library rung's chapter of the tour: the rung in every scenario that
/// names it, each under the scenario's first seed.
#[derive(Debug)]
pub struct LibraryStop {
    /// The library rung.
    pub rung: &'static locks::Rung,
    /// Each scenario naming it (by name), and the rung judged there.
    pub runs: Vec<(String, Judged)>,
}

/// Runs `rung`'s chapter: every scenario of `scenarios` that names it, in
/// their order; `None` when none does.
pub fn library_stop(
    rung: &'static locks::Rung,
    scenarios: &[Scenario],
) -> Result<Option<LibraryStop>, RunError> {
    let mut runs = Vec::new();
    for scenario in scenarios
        .iter()
        .filter(|s| s.rungs.iter().any(|r| r == rung.id))
    {
        let seed = scenario.seeds.first().copied().unwrap_or(1);
        runs.push((scenario.name.clone(), run_cell(scenario, rung.id, seed)?));
    }
    Ok((!runs.is_empty()).then_some(LibraryStop { rung, runs }))
}
