//! `locklab suite`: every scenario against every rung it names, judged and
//! compared with what the scenario expects: the safety matrix.

use crate::cell::{Judged, run_cell};
use crate::interrupt::{self, Cause};
use crate::matrix::{self, Cell};
use crate::run::RunError;
use model::scenario::{Scenario, ScenarioError};
use model::verdict::Verdict;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The scenario files of a folder and its subfolders, in path order (the
/// same on every machine). Hidden entries (`.name`) are skipped, and a
/// symbolic link to a folder is not followed (a link loop would never end).
pub fn scenario_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    collect_toml(dir, &mut files)?;
    files.sort();
    if files.is_empty() {
        return Err(format!("{}: no scenario files (*.toml)", dir.display()));
    }
    Ok(files)
}

fn collect_toml(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
    let cannot = |e: std::io::Error| format!("{}: cannot list scenarios: {e}", dir.display());
    for entry in std::fs::read_dir(dir).map_err(cannot)? {
        let entry = entry.map_err(cannot)?;
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let kind = entry
            .file_type()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if kind.is_dir() {
            collect_toml(&path, files)?;
        } else if path.extension().is_some_and(|x| x == "toml") {
            files.push(path);
        }
    }
    Ok(())
}

/// Loads every scenario of a folder and its subfolders; the first bad file
/// stops it, and so does a name given twice.
pub fn load_all(dir: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    let files = scenario_files(dir).map_err(|message| ScenarioError {
        file: dir.display().to_string(),
        message,
    })?;
    let loaded = files
        .iter()
        .map(|f| Ok((f.display().to_string(), Scenario::load(f)?)))
        .collect::<Result<Vec<_>, ScenarioError>>()?;
    unique(loaded)
}

/// One scenario file held in memory, such as a built-in one.
#[derive(Debug, Clone, Copy)]
pub struct ScenarioText<'a> {
    /// How errors name the file.
    pub file: &'a str,
    /// The file's stem: the scenario's name unless it gives one.
    pub stem: &'a str,
    /// The file's contents.
    pub text: &'a str,
}

/// Parses scenario files held in memory, as [`load_all`] loads a folder:
/// the first bad one stops it, and so does a name given twice.
pub fn parse_all(files: &[ScenarioText<'_>]) -> Result<Vec<Scenario>, ScenarioError> {
    let parsed = files
        .iter()
        .map(|f| Ok((f.file.to_string(), Scenario::parse(f.text, f.file, f.stem)?)))
        .collect::<Result<Vec<_>, ScenarioError>>()?;
    unique(parsed)
}

/// The scenarios, refusing a name given twice (it names run folders and
/// matrix columns, so two files of one name would mix their results); the
/// error names both files.
fn unique(loaded: Vec<(String, Scenario)>) -> Result<Vec<Scenario>, ScenarioError> {
    let mut seen: std::collections::BTreeMap<String, String> = Default::default();
    for (file, scenario) in &loaded {
        if let Some(first) = seen.insert(scenario.name.clone(), file.clone()) {
            return Err(ScenarioError {
                file: file.clone(),
                message: format!(
                    "scenario name {:?} is already the name of {first}; each scenario needs \
                     its own name (it names run folders and matrix columns)",
                    scenario.name
                ),
            });
        }
    }
    Ok(loaded.into_iter().map(|(_, s)| s).collect())
}

/// Which cells a suite runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grid {
    /// Each scenario against the rungs it names (`locklab suite`): the
    /// safety matrix, every cell with its expectation.
    Named,
    /// Each scenario against every rung of the ladder and every library
    /// rung (`suite --all`); a rung the scenario does not name runs on its deployment, faults and
    /// resource as written, and has no expectation.
    All,
}

impl Grid {
    /// The stem of the matrix files: `safety-matrix` or `safety-matrix-all`.
    pub fn stem(self) -> &'static str {
        match self {
            Grid::Named => "safety-matrix",
            Grid::All => "safety-matrix-all",
        }
    }

    /// The markdown matrix's title.
    pub fn title(self) -> &'static str {
        match self {
            Grid::Named => matrix::TITLE,
            Grid::All => matrix::TITLE_ALL,
        }
    }

    /// The rungs this grid runs in `scenario`: the ones it names, or
    /// every rung of the ladder.
    pub fn rungs(self, scenario: &Scenario) -> Vec<String> {
        match self {
            Grid::Named => scenario.rungs.clone(),
            // The ladder and the libraries, then any other rung the
            // scenario names (a registered one).
            Grid::All => {
                let ladder = locks::all_ids();
                let others = scenario
                    .rungs
                    .iter()
                    .filter(|r| !ladder.contains(&r.as_str()))
                    .cloned();
                ladder.iter().map(|r| r.to_string()).chain(others).collect()
            }
        }
    }

    /// The complete matrix's markdown.
    pub fn markdown(self, cells: &[Cell]) -> String {
        matrix::markdown_titled(self.title(), cells)
    }

    /// The files of a partial matrix: [`PARTIAL_FILES`] for the named
    /// grid, `safety-matrix-all.partial.{md,json}` for the full one.
    pub fn partial_files(self) -> [String; 2] {
        ["md", "json"].map(|ext| format!("{}.partial.{ext}", self.stem()))
    }
}

/// One job of the suite: a rung in a scenario (all its seeds). For a rung
/// the scenario does not name (the full grid), `scenario` is a copy that
/// names it too, so that [`crate::run::run`] keeps refusing unnamed rungs
/// everywhere else; naming a rung changes nothing else in a run.
struct Job<'a> {
    scenario: std::borrow::Cow<'a, Scenario>,
    rung: String,
}

/// The jobs of a grid, in matrix order: scenario by scenario, each
/// scenario's rungs in its own order (named grid) or in ladder order (full
/// grid).
fn jobs(scenarios: &[Scenario], grid: Grid) -> Vec<Job<'_>> {
    use std::borrow::Cow;
    let mut jobs = Vec::new();
    for scenario in scenarios {
        for rung in grid.rungs(scenario) {
            let scenario = if scenario.rungs.contains(&rung) {
                Cow::Borrowed(scenario)
            } else {
                let mut admitted = scenario.clone();
                admitted.rungs.push(rung.clone());
                Cow::Owned(admitted)
            };
            jobs.push(Job { scenario, rung });
        }
    }
    jobs
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

/// What a suite does with the run behind each finished cell (the run of
/// the seed the cell keeps), given with the scenario it ran: `locklab
/// suite` writes its folder and page ([`write_cell_run`]).
pub type KeepRun<'a> = &'a (dyn Fn(&Scenario, &Judged) + Sync);

/// Runs one job: every seed; the cell keeps the most severe verdict and the
/// first seed that gave it, and hands that seed's run to `keep`.
fn run_job(job: &Job<'_>, keep: KeepRun<'_>) -> Result<Cell, JobError> {
    let expected = job.scenario.expect.get(&job.rung).copied();
    // Wall time, outside any simulation: for reports that show it only.
    let started = std::time::Instant::now();
    let mut worst: Option<(Cell, Judged)> = None;
    for &seed in &job.scenario.seeds {
        let judged = run_cell(&job.scenario, &job.rung, seed).map_err(|e| match e {
            RunError::Interrupted(_) => JobError::Interrupted,
            e => JobError::Failed(format!("{} / {}: {e}", job.scenario.name, job.rung)),
        })?;
        let cell = Cell::of(&judged, expected);
        if worst
            .as_ref()
            .is_none_or(|(w, _)| severity(cell.verdict) > severity(w.verdict))
        {
            worst = Some((cell, judged));
        }
    }
    let (mut cell, judged) =
        worst.ok_or_else(|| JobError::Failed(format!("{}: no seeds", job.scenario.name)))?;
    keep(&job.scenario, &judged);
    cell.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(cell)
}

/// What a suite produced: every cell, or (when interrupted) the cells
/// finished before the stop.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteRun {
    /// Which cells were asked for.
    pub grid: Grid,
    /// The finished cells, in matrix order (scenario by scenario, each
    /// scenario's rungs in its own order, or in ladder order for the full
    /// grid).
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
    grid: Grid,
    workers: usize,
    progress: &(dyn Fn(&Cell, usize, usize) + Sync),
) -> Result<SuiteRun, String> {
    run_suite_keeping(
        scenarios,
        grid,
        workers,
        progress,
        &|_: &Scenario, _: &Judged| {},
    )
}

/// [`run_suite`], handing the run behind each finished cell to `keep` (on
/// the worker that ran it, before its progress is told).
pub fn run_suite_keeping(
    scenarios: &[Scenario],
    grid: Grid,
    workers: usize,
    progress: &(dyn Fn(&Cell, usize, usize) + Sync),
    keep: KeepRun<'_>,
) -> Result<SuiteRun, String> {
    let jobs = jobs(scenarios, grid);
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
                    let result = run_job(job, keep);
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
        grid,
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

/// Writes `<stem>.{md,svg,json}` ([`Grid::stem`]) and the suite page
/// ([`crate::html::suite::file_name`]) into `out`, and removes the partial
/// matrix an earlier interrupted suite of the same grid may have left
/// there (it would be older than this one). Returns the partial files
/// removed.
pub fn write_matrix(out: &Path, grid: Grid, cells: &[Cell]) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out)?;
    let file = |ext: &str| out.join(format!("{}.{ext}", grid.stem()));
    harness::atomic::write_whole(&file("md"), grid.markdown(cells))?;
    harness::atomic::write_whole(&file("json"), matrix::json(cells))?;
    match matrix::svg(cells) {
        Ok(svg) => harness::atomic::write_whole(&file("svg"), &svg)?,
        Err(e) => eprintln!("warning: {}.svg not drawn: {e}", grid.stem()),
    }
    harness::atomic::write_whole(
        &out.join(crate::html::suite::file_name(grid)),
        crate::html::suite_page(grid, cells),
    )?;
    let mut removed = Vec::new();
    for name in grid.partial_files() {
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
    let title = run.grid.title();
    let table = matrix::markdown_titled(title, &run.cells);
    let table = table
        .strip_prefix(&format!("# {title}\n"))
        .unwrap_or(&table);
    let mut out = format!(
        "# {title} (partial)\n\n**Partial: the suite was interrupted by {cause} after {} \
         of {} cells.** The cells not run are listed at the end (`—` in the table, or no \
         column at all); `{}.md`, if there is one, is from an earlier complete \
         suite and was left as it was.\n",
        run.cells.len(),
        run.planned.len(),
        run.grid.stem()
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
    let [md, json] = run.grid.partial_files().map(|name| out.join(name));
    harness::atomic::write_whole(&md, partial_markdown(run, cause))?;
    harness::atomic::write_whole(&json, partial_json(run, cause))?;
    Ok(md)
}

/// Writes the folder of the run behind a cell, under `out` as `locklab
/// run` would ([`crate::output::run_dir`]), with its page: the scenario
/// file in it is the scenario as run (for a rung the scenario does not
/// name, naming it too), so that `locklab replay` runs it again. Returns
/// the folder.
pub fn write_cell_run(
    out: &Path,
    scenario: &Scenario,
    judged: &Judged,
) -> std::io::Result<PathBuf> {
    let dir = crate::output::run_dir(out, judged);
    let header = format!(
        "Written by locklab suite: scenario {:?} as it ran rung {} with seed {}.\n\
         Replay: locklab replay {}",
        scenario.name,
        judged.rung,
        judged.seed,
        dir.display()
    );
    let text = crate::explore::case::scenario_toml(scenario, &header);
    crate::output::write_run(&dir, judged, &text)?;
    Ok(dir)
}
