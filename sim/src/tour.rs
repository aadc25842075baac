//! `locklab tour`: the ladder told rung by rung from live simulator runs.
//!
//! For each rung: what it fixes, its flaw, the scenario whose fault breaks
//! it, the timeline of the break, and the next rung surviving the same
//! fault. Everything shown is computed on the spot, not canned.

use crate::cell::{Judged, run_cell};
use crate::output::TIMELINE_WIDTH;
use crate::run::RunError;
use crate::timeline;
use judge::check::{Check, Checker};
use model::history::{EventKind, Op, Outcome};
use model::scenario::Scenario;
use model::verdict::Verdict;
use std::fmt::Write as _;

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

/// The finding to show: the damage to the resource first (what a user
/// sees), then mutual exclusion, then liveness.
fn first_finding(judged: &Judged) -> String {
    let mut checks = judged.results.all();
    checks.sort_by_key(|(checker, _)| match checker {
        Checker::Resource => 0,
        Checker::MutualExclusion => 1,
        Checker::Liveness => 2,
    });
    checks
        .into_iter()
        .find_map(|(name, check)| match check {
            Check::Invalid { why, .. } if judged.results.decides(name) => {
                Some(format!("{name}: {why}"))
            }
            _ => None,
        })
        .unwrap_or_else(|| survived(judged))
}

/// How a rung that came out safe got through: what the holders saw, and
/// what the lock or the store refused.
fn survived(judged: &Judged) -> String {
    let (mut refused_writes, mut lost_leases, mut failed_releases) = (0, 0, 0);
    for event in judged.history.events() {
        if let EventKind::Complete { op, outcome, .. } = &event.kind
            && *outcome == Outcome::Fail
        {
            match op {
                Op::Write => refused_writes += 1,
                Op::Check => lost_leases += 1,
                Op::Release => failed_releases += 1,
                _ => {}
            }
        }
    }
    let mut notes = Vec::new();
    if judged.results.mutual_exclusion.is_invalid()
        && !judged.results.decides(Checker::MutualExclusion)
    {
        notes.push("holders overlapped (information only)".to_string());
    }
    if refused_writes > 0 {
        notes.push(format!("the store refused {refused_writes} stale write(s)"));
    }
    if lost_leases > 0 {
        notes.push(format!(
            "{lost_leases} holder(s) found their lease gone before writing and stayed out"
        ));
    }
    if failed_releases > 0 {
        notes.push(format!(
            "{failed_releases} release(s) found the lock no longer theirs and left it alone"
        ));
    }
    if notes.is_empty() {
        "every checker passed".to_string()
    } else {
        format!("every checker passed: {}", notes.join("; "))
    }
}

/// Renders one stop as text; `file` is the path of the stop's scenario
/// file as the reader would open it (`scenarios/libraries/NAME.toml` for
/// one in a subfolder).
pub fn render_stop(stop: &Stop, scenarios: &[Scenario], file: &str) -> String {
    let mut out = String::new();
    let rung = stop.rung;
    let _ = writeln!(out, "━━ rung {}: {} ━━", rung.number, rung.id);
    let _ = writeln!(out, "acquire: {}", rung.acquire);
    let _ = writeln!(out, "release: {}", rung.release);
    let _ = writeln!(out, "fixes:   {}", rung.fixes);
    let _ = writeln!(out, "flaw:    {}", rung.flaw);
    let description = scenarios
        .iter()
        .find(|s| s.name == stop.scenario)
        .map(|s| {
            s.description
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    let _ = writeln!(out, "\nthe fault: {file}");
    let _ = writeln!(out, "  {description}");
    let _ = writeln!(
        out,
        "\n{} → {} (seed {})\n  {}",
        rung.id,
        stop.broken.verdict.as_str().to_uppercase(),
        stop.broken.seed,
        first_finding(&stop.broken)
    );
    out.push_str(&timeline::ascii(&stop.broken.history, TIMELINE_WIDTH));
    if let Some(next) = &stop.next {
        let _ = writeln!(
            out,
            "\nthe next rung, {}, under the same fault → {}\n  {}",
            next.rung,
            next.verdict.as_str().to_uppercase(),
            first_finding(next)
        );
        out.push_str(&timeline::ascii(&next.history, TIMELINE_WIDTH));
    }
    out.push('\n');
    out
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

/// The heading of the libraries chapter.
pub const LIBRARIES_HEADING: &str = "━━ libraries ━━\n\
     The locks people deploy, modelled from each library's own algorithm, under the \
     faults their users reported (scenarios/libraries/) and the ladder's: which \
     faults each survives, and why.\n";

/// Renders one library's chapter: what it does, then one line per
/// scenario: the verdict and its reason (the finding, or how it got
/// through).
pub fn render_library_stop(stop: &LibraryStop) -> String {
    let mut out = String::new();
    let rung = stop.rung;
    let _ = writeln!(out, "── {} ──", rung.id);
    let _ = writeln!(out, "acquire: {}", rung.acquire);
    let _ = writeln!(out, "release: {}", rung.release);
    let _ = writeln!(out, "flaw:    {}", rung.flaw);
    let width = stop
        .runs
        .iter()
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0);
    for (name, judged) in &stop.runs {
        let _ = writeln!(
            out,
            "  {name:<width$}  {:<8}  {}",
            judged.verdict.as_str().to_uppercase(),
            first_finding(judged)
        );
    }
    out.push('\n');
    out
}
