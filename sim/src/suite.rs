//! `locklab suite`: every scenario against every rung it names, judged and
//! compared with what the scenario expects: the safety matrix.

use crate::cell::run_cell;
use crate::interrupt::{self, Cause};
use crate::matrix::{self, Cell};
use crate::run::RunError;
use crate::scenario::{Scenario, ScenarioError};
use crate::verdict::Verdict;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The scenario files of a folder, in name order.
pub fn scenario_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: cannot list scenarios: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("{}: no scenario files (*.toml)", dir.display()));
    }
    Ok(files)
}

/// Loads every scenario of a folder; the first bad file stops it.
pub fn load_all(dir: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    let files = scenario_files(dir).map_err(|message| ScenarioError {
        file: dir.display().to_string(),
        message,
    })?;
    files.iter().map(|f| Scenario::load(f)).collect()
}

/// One job of the suite: a rung in a scenario (all its seeds).
struct Job<'a> {
    scenario: &'a Scenario,
    rung: String,
}

/// The verdict that matters most when seeds disagree.
fn severity(v: Verdict) -> u8 {
    match v {
        Verdict::Violated => 3,
        Verdict::Deadlock => 2,
        Verdict::Unknown => 1,
        Verdict::Safe => 0,
    }
}

/// Why a job gave no cell.
enum JobError {
    /// The user asked the process to stop: the job was abandoned.
    Interrupted,
    /// The job could not be run (a harness failure), named.
    Failed(String),
}

/// Runs one job: every seed; the cell keeps the most severe verdict and the
/// first seed that gave it.
fn run_job(job: &Job<'_>) -> Result<Cell, JobError> {
    let expected = job
        .scenario
        .expect
        .get(&job.rung)
        .copied()
        .unwrap_or(Verdict::Unknown);
    let mut worst: Option<Cell> = None;
    for &seed in &job.scenario.seeds {
        let judged = run_cell(job.scenario, &job.rung, seed).map_err(|e| match e {
            RunError::Interrupted(_) => JobError::Interrupted,
            e => JobError::Failed(format!("{} / {}: {e}", job.scenario.name, job.rung)),
        })?;
        let cell = Cell {
            rung: job.rung.clone(),
            scenario: job.scenario.name.clone(),
            verdict: judged.verdict,
            expected,
            seed,
            damage: judged.results.damage.clone(),
        };
        if worst
            .as_ref()
            .is_none_or(|w| severity(cell.verdict) > severity(w.verdict))
        {
            worst = Some(cell);
        }
    }
    worst.ok_or_else(|| JobError::Failed(format!("{}: no seeds", job.scenario.name)))
}

/// What a suite produced: every cell, or (when interrupted) the cells
/// finished before the stop.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteRun {
    /// The finished cells, in matrix order (scenario by scenario, each
    /// scenario's rungs in its own order).
    pub cells: Vec<Cell>,
    /// Every cell asked for, as (scenario, rung), in the same order.
    pub planned: Vec<(String, String)>,
    /// Set when the suite was asked to stop: then some planned cells are
    /// missing from `cells`.
    pub interrupted: Option<Cause>,
}

impl SuiteRun {
    /// The planned cells that have no result, as (scenario, rung).
    pub fn not_run(&self) -> Vec<(String, String)> {
        self.planned
            .iter()
            .filter(|(scenario, rung)| {
                !self
                    .cells
                    .iter()
                    .any(|c| &c.scenario == scenario && &c.rung == rung)
            })
            .cloned()
            .collect()
    }
}

/// Runs every cell on `workers` threads (each simulation is independent
/// and single-threaded, so the cells' results do not depend on this).
/// Progress goes to `progress`. When [`crate::interrupt`] asks for a stop,
/// no new cell starts and the cells in progress are abandoned; the
/// finished ones are kept. A cell that cannot be run is an error (the
/// first in matrix order).
pub fn run_suite(
    scenarios: &[Scenario],
    workers: usize,
    progress: &(dyn Fn(&Cell, usize, usize) + Sync),
) -> Result<SuiteRun, String> {
    let jobs: Vec<Job<'_>> = scenarios
        .iter()
        .flat_map(|s| {
            s.rungs.iter().map(move |v| Job {
                scenario: s,
                rung: v.clone(),
            })
        })
        .collect();
    let results: Vec<Mutex<Option<Result<Cell, JobError>>>> =
        jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            scope.spawn(|| {
                while !interrupt::requested() {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(job) = jobs.get(i) else { break };
                    let result = run_job(job);
                    if let Ok(cell) = &result {
                        let n = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                        progress(cell, n, jobs.len());
                    }
                    *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
                }
            });
        }
    });
    let cause = interrupt::cause();
    let mut cells = Vec::new();
    for slot in results {
        match slot.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(Ok(cell)) => cells.push(cell),
            Some(Err(JobError::Failed(message))) => return Err(message),
            Some(Err(JobError::Interrupted)) | None if cause.is_some() => {}
            Some(Err(JobError::Interrupted)) | None => {
                return Err("a suite job did not run".into());
            }
        }
    }
    // A signal that came after the last cell finished cut nothing short.
    let interrupted = cause.filter(|_| cells.len() < jobs.len());
    Ok(SuiteRun {
        cells,
        planned: jobs
            .iter()
            .map(|j| (j.scenario.name.clone(), j.rung.clone()))
            .collect(),
        interrupted,
    })
}

/// The files of a partial matrix, beside the complete ones: an
/// interrupted suite never overwrites a complete matrix.
pub const PARTIAL_FILES: [&str; 2] = ["safety-matrix.partial.md", "safety-matrix.partial.json"];

/// Writes `safety-matrix.{md,svg,json}` into `out`, and removes the partial
/// matrix an earlier interrupted suite may have left there (it would be
/// older than this one). Returns the partial files removed.
pub fn write_matrix(out: &Path, cells: &[Cell]) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out)?;
    crate::output::write_whole(&out.join("safety-matrix.md"), &matrix::markdown(cells))?;
    crate::output::write_whole(&out.join("safety-matrix.json"), &matrix::json(cells))?;
    match matrix::svg(cells) {
        Ok(svg) => crate::output::write_whole(&out.join("safety-matrix.svg"), &svg)?,
        Err(e) => eprintln!("warning: safety-matrix.svg not drawn: {e}"),
    }
    let mut removed = Vec::new();
    for name in PARTIAL_FILES {
        let stale = out.join(name);
        if stale.exists() {
            std::fs::remove_file(&stale)?;
            removed.push(stale);
        }
    }
    Ok(removed)
}

/// The markdown of a partial matrix: the finished cells' table under a
/// title and a notice that say it is partial and why, then the cells that
/// were not run.
pub fn partial_markdown(run: &SuiteRun, cause: Cause) -> String {
    let table = matrix::markdown(&run.cells);
    let table = table.strip_prefix("# Safety matrix\n").unwrap_or(&table);
    let mut out = format!(
        "# Safety matrix (partial)\n\n**Partial: the suite was interrupted by {cause} after {} \
         of {} cells.** The cells not run are listed at the end (`—` in the table, or no \
         column at all); `safety-matrix.md`, if there is one, is from an earlier complete \
         suite and was left as it was.\n",
        run.cells.len(),
        run.planned.len()
    );
    out.push_str(table);
    out.push_str("\nNot run:\n\n");
    for (scenario, rung) in run.not_run() {
        out.push_str(&format!("- {scenario} / `{rung}`\n"));
    }
    out
}

/// The JSON of a partial matrix: the cells of `safety-matrix.json` (so
/// [`matrix::from_json`] reads it), plus `partial`, `interrupted_by`,
/// `cells_planned` and `not_run`.
pub fn partial_json(run: &SuiteRun, cause: Cause) -> String {
    let not_run: Vec<serde_json::Value> = run
        .not_run()
        .into_iter()
        .map(|(scenario, rung)| serde_json::json!({ "variant": rung, "scenario": scenario }))
        .collect();
    let doc = serde_json::json!({
        "partial": true,
        "interrupted_by": cause.name(),
        "cells_planned": run.planned.len(),
        "cells": run.cells,
        "not_run": not_run,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// Writes the partial matrix of an interrupted suite to
/// [`PARTIAL_FILES`] in `out`, leaving any complete matrix alone; returns
/// the markdown file's path.
pub fn write_partial_matrix(out: &Path, run: &SuiteRun, cause: Cause) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(out)?;
    let [md, json] = PARTIAL_FILES.map(|name| out.join(name));
    crate::output::write_whole(&md, &partial_markdown(run, cause))?;
    crate::output::write_whole(&json, &partial_json(run, cause))?;
    Ok(md)
}
