//! `locklab suite`: every scenario against every rung it names, judged and
//! compared with what the scenario expects: the safety matrix.

use crate::cell::run_cell;
use crate::matrix::{self, Cell};
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
    Ok(load_files(dir)?.into_iter().map(|(_, s)| s).collect())
}

/// Loads every scenario of a folder with the file it came from, in name
/// order; the first bad file stops it.
pub fn load_files(dir: &Path) -> Result<Vec<(PathBuf, Scenario)>, ScenarioError> {
    let files = scenario_files(dir).map_err(|message| ScenarioError {
        file: dir.display().to_string(),
        message,
    })?;
    files
        .into_iter()
        .map(|f| Scenario::load(&f).map(|s| (f, s)))
        .collect()
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

/// Runs one job: every seed; the cell keeps the most severe verdict and the
/// first seed that gave it.
fn run_job(job: &Job<'_>) -> Result<Cell, String> {
    let expected = job
        .scenario
        .expect
        .get(&job.rung)
        .copied()
        .unwrap_or(Verdict::Unknown);
    let mut worst: Option<Cell> = None;
    for &seed in &job.scenario.seeds {
        let judged = run_cell(job.scenario, &job.rung, seed)
            .map_err(|e| format!("{} / {}: {e}", job.scenario.name, job.rung))?;
        let cell = Cell::of(&judged, expected);
        if worst
            .as_ref()
            .is_none_or(|w| severity(cell.verdict) > severity(w.verdict))
        {
            worst = Some(cell);
        }
    }
    worst.ok_or_else(|| format!("{}: no seeds", job.scenario.name))
}

/// Runs every cell on `workers` threads (each simulation is independent
/// and single-threaded, so the cells' results do not depend on this).
/// Progress goes to `progress`.
pub fn run_suite(
    scenarios: &[Scenario],
    workers: usize,
    progress: &(dyn Fn(&Cell, usize, usize) + Sync),
) -> Result<Vec<Cell>, String> {
    let jobs: Vec<Job<'_>> = scenarios
        .iter()
        .flat_map(|s| {
            s.rungs.iter().map(move |v| Job {
                scenario: s,
                rung: v.clone(),
            })
        })
        .collect();
    let results: Vec<Mutex<Option<Result<Cell, String>>>> =
        jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(job) = jobs.get(i) else { break };
                    let result = run_job(job);
                    let n = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    if let Ok(cell) = &result {
                        progress(cell, n, jobs.len());
                    }
                    *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .unwrap_or_else(|| Err("a suite job did not run".into()))
        })
        .collect()
}

/// Writes `safety-matrix.{md,svg,json}` into `out`.
pub fn write_matrix(out: &Path, cells: &[Cell]) -> std::io::Result<()> {
    std::fs::create_dir_all(out)?;
    crate::output::write_whole(&out.join("safety-matrix.md"), &matrix::markdown(cells))?;
    crate::output::write_whole(&out.join("safety-matrix.json"), &matrix::json(cells))?;
    match matrix::svg(cells) {
        Ok(svg) => crate::output::write_whole(&out.join("safety-matrix.svg"), &svg)?,
        Err(e) => eprintln!("warning: safety-matrix.svg not drawn: {e}"),
    }
    Ok(())
}
