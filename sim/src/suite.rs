//! `locklab suite`: every scenario against every rung it names, judged and
//! compared with what the scenario expects: the safety matrix.

use crate::cell::{Judged, run_cell};
use crate::interrupt;
use crate::run::RunError;
pub use judge::matrix::{Cell, Grid, SuiteRun};
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

/// The rungs `grid` runs in `scenario`: the ones it names, or
/// every built-in rung whose lock service runs the scenario's deployment.
pub fn rungs_of(grid: Grid, scenario: &Scenario) -> Vec<String> {
    match grid {
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
            // A rung whose service cannot run the deployment (an etcd
            // rung in a replicated Redis scenario) has no cell there.
            let runs_here =
                |r: &&&str| crate::service::lock_service(r, scenario.topology_of(r)).is_ok();
            (ladder.iter().filter(runs_here))
                .map(|r| r.to_string())
                .chain(others)
                .collect()
        }
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
        for rung in rungs_of(grid, scenario) {
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
/// suite` writes its folder and page (the report crate's `write_cell_run`).
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
    cell.server = newer_redis_server(&job.scenario, &job.rung);
    cell.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(cell)
}

/// The server a Redis rung's nodes are in `scenario`, when it is not
/// Redis 7.0 (the matrix names it).
fn newer_redis_server(scenario: &Scenario, rung: &str) -> Option<String> {
    let is_redis = locks::rung(rung).is_none_or(|r| r.service == "redis");
    let server = crate::world::deployment_of(scenario, rung).server?;
    (is_redis && server != locks::redis_server::RedisServer::Redis7_0)
        .then(|| server.name().to_string())
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
