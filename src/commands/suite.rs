//! `locklab suite [--all]`: every scenario against every rung it names
//! (with `--all`, every rung): the safety matrix, its page, each cell's run
//! folder, and a JUnit report if asked (with `--real`, the simulator beside
//! real servers: [`super::real`]).

use super::{Outcome, workers, write_junit};
use crate::json::{GridName, NotRun, SuiteResult};
use judge::matrix::{Cell, Grid, SuiteRun};
use model::scenario::Scenario;
use report::output;
use sim::exit::ExitCode;
use sim::interrupt::Cause;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The arguments of `locklab suite`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Where the scenario files are, subfolders too (default:
    /// `scenarios/` when it exists here, else the built-in ones).
    #[arg(long)]
    pub scenarios: Option<PathBuf>,
    /// Where `safety-matrix.{md,svg,json}` go.
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
    /// Simulations run at once, at least 1 (default: the number of
    /// CPUs).
    #[arg(long)]
    pub jobs: Option<std::num::NonZeroUsize>,
    /// Every rung against every scenario, not only the rungs each names;
    /// writes `safety-matrix-all.{md,svg,json}`. Cells with no stated
    /// expectation are shown as found and do not decide the exit code.
    #[arg(long)]
    pub all: bool,
    /// Also write a JUnit XML report here: a test case per cell
    /// (classname the scenario, name the rung), failing when the cell
    /// differs from its expectation.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Print one JSON document on standard output (docs/json.md); the
    /// human text goes to standard error.
    #[arg(long)]
    pub json: bool,
    /// Also run the rung this rung file defines, in every scenario
    /// that names the rung it `plays` (with --all, in every scenario).
    #[arg(long, value_name = "FILE")]
    pub rung_file: Vec<PathBuf>,
    /// Also run every cell on real redis-server processes with real
    /// faults (`--repeat` times each) and write `reality.{md,json}`:
    /// the simulator's verdicts beside the real ones.
    #[arg(long, conflicts_with_all = ["all", "junit", "json"])]
    pub real: bool,
    /// Real mode: runs per cell.
    #[arg(long, default_value_t = real::cell::DEFAULT_REPEAT, requires = "real")]
    pub repeat: u32,
    /// Real mode: this server binary instead of `redis-server`.
    #[arg(long, value_name = "PATH", requires = "real")]
    pub server_bin: Option<PathBuf>,
}

/// `locklab suite`: exit 1 when a cell differs from a stated expectation
/// (cells without one judge nothing); the cells for the document.
pub fn execute(args: Args) -> Outcome<SuiteResult> {
    if args.real {
        return Outcome::failed(super::real::suite(
            args.scenarios.as_deref(),
            &args.out,
            args.repeat,
            &args.rung_file,
            args.server_bin.as_deref(),
        ));
    }
    let mut result = None;
    let code = on_simulator(&args, &mut result);
    Outcome::new(code, result)
}

/// The suite on the simulator; `result` gets what `--json` prints.
fn on_simulator(args: &Args, result: &mut Option<SuiteResult>) -> ExitCode {
    let grid = if args.all { Grid::All } else { Grid::Named };
    let out = args.out.as_path();
    let scenarios = match crate::rung_files::suite_scenarios(
        args.scenarios.as_deref(),
        &args.rung_file,
        args.all,
    ) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let workers = workers(args.jobs.map(|n| n.get()));
    for scenario in &scenarios {
        let rungs = sim::suite::rungs_of(grid, scenario);
        if let Some(note) = sim::estimate::suite_note(&scenario.name, scenario, &rungs, workers) {
            eprintln!("note: {note}");
        }
    }
    let (suite, unwritten) = run_cells(&scenarios, grid, workers, out);
    let suite = match suite {
        Ok(run) => run,
        Err(e) => {
            crate::error!("{e}");
            return ExitCode::BadInput;
        }
    };
    let junit = args.junit.as_deref();
    let junit_written = junit.is_none_or(|file| {
        write_junit(
            file,
            &report::junit::suite_xml(&suite),
            suite.interrupted.is_some(),
        )
    });
    let summary = result.insert(summarize(&suite, grid, junit.filter(|_| junit_written)));
    if let Some(cause) = suite.interrupted {
        let (code, md) = interrupted(out, &suite, cause);
        summary.matrix = md.map(|md| md.display().to_string());
        return code;
    }
    let cells = suite.cells;
    match write_matrix(out, grid, &cells) {
        Some(md) => summary.matrix = Some(md.display().to_string()),
        None => return ExitCode::BadInput,
    }
    for error in &unwritten {
        crate::error!("cannot write the run folder {error}");
    }
    eprintln!(
        "suite: report {} (each cell links its run under {})",
        out.join(report::html::suite::file_name(grid)).display(),
        out.join("runs").display()
    );
    out!("{}", report::suite::markdown(grid, &cells));
    let unexpected = cells.iter().filter(|c| c.differs()).count();
    outln!(
        "written to {}",
        out.join(format!("{}.md", report::suite::stem(grid)))
            .display()
    );
    if unexpected > 0 {
        ExitCode::Violated
    } else if !junit_written || !unwritten.is_empty() {
        ExitCode::BadInput
    } else {
        ExitCode::Success
    }
}

/// Runs every cell of `grid` with a progress bar (or line), writing each
/// cell's run folder and page as it finishes: the suite, and the run
/// folders that could not be written.
fn run_cells(
    scenarios: &[Scenario],
    grid: Grid,
    workers: usize,
    out: &Path,
) -> (Result<SuiteRun, String>, Vec<String>) {
    let bar = crate::progress::Progress::new(
        match grid {
            Grid::All => "suite --all",
            Grid::Named => "suite",
        },
        0,
        crate::progress::Unit::Steps,
    );
    let progress = |cell: &Cell, done: usize, total: usize| {
        let line = progress_line(cell, done, total);
        bar.set_total(total as u64);
        let cell_name = format!("{} / {}", cell.scenario, cell.rung);
        bar.step(done as u64, &cell_name, || line.clone());
        // A cell that differs from its expectation stays on screen.
        if bar.drawn() && cell.differs() {
            bar.println(&line);
        }
    };
    // Each cell's run gets its folder and page, which the suite page links.
    let unwritten = Mutex::new(Vec::new());
    let keep = |scenario: &Scenario, judged: &sim::cell::Judged| {
        if let Err(e) = report::suite::write_cell_run(out, scenario, judged) {
            let dir = output::run_dir(out, judged);
            let mut errors = unwritten.lock().unwrap_or_else(|p| p.into_inner());
            errors.push(format!("{}: {e}", dir.display()));
        }
    };
    let suite = sim::suite::run_suite_keeping(scenarios, grid, workers, &progress, &keep);
    bar.finish();
    let unwritten = unwritten.into_inner().unwrap_or_else(|p| p.into_inner());
    (suite, unwritten)
}

/// One finished cell, as the progress shows it: `[done/total] scenario /
/// rung: verdict (expected ...) ok|UNEXPECTED`.
fn progress_line(cell: &Cell, done: usize, total: usize) -> String {
    let judged = match cell.expected {
        None => "(no expectation)".to_string(),
        Some(e) if e == cell.verdict => format!("(expected {e}) ok"),
        Some(e) => format!("(expected {e}) UNEXPECTED"),
    };
    let cut = cell
        .cut_short
        .as_ref()
        .map(|c| format!(": cut short: {}", c.why))
        .unwrap_or_default();
    format!(
        "[{done}/{total}] {} / {}: {} {judged}{cut}",
        cell.scenario,
        cell.rung,
        cell.verdict.as_str(),
    )
}

/// The document's result for a suite that ran (its matrix not yet
/// written); `junit` is the JUnit file written, if any.
fn summarize(suite: &SuiteRun, grid: Grid, junit: Option<&Path>) -> SuiteResult {
    SuiteResult {
        grid: match grid {
            Grid::Named => GridName::Named,
            Grid::All => GridName::All,
        },
        cells: suite.cells.clone(),
        cells_planned: suite.planned.len(),
        unexpected: suite.cells.iter().filter(|c| c.differs()).count(),
        matrix: None,
        junit: junit.map(|file| file.display().to_string()),
        interrupted_by: suite.interrupted,
        not_run: suite
            .not_run()
            .into_iter()
            .map(|(scenario, variant)| NotRun { variant, scenario })
            .collect(),
    }
}

/// Writes the finished matrix (removing an interrupted suite's older
/// partial one, said on standard error): the markdown's path, or `None`
/// with the error reported.
fn write_matrix(out: &Path, grid: Grid, cells: &[Cell]) -> Option<PathBuf> {
    match report::suite::write_matrix(out, grid, cells) {
        Ok(removed) => {
            for stale in removed {
                eprintln!(
                    "note: removed {}: an interrupted suite's matrix, older than this one",
                    stale.display()
                );
            }
            Some(out.join(format!("{}.md", report::suite::stem(grid))))
        }
        Err(e) => {
            crate::error!("cannot write the matrix to {}: {e}", out.display());
            None
        }
    }
}

/// The end of an interrupted suite: the finished cells go to the partial
/// matrix (a complete `safety-matrix.md` is left alone), and it says so;
/// returns the partial markdown's path too, when written.
fn interrupted(out: &Path, suite: &SuiteRun, cause: Cause) -> (ExitCode, Option<PathBuf>) {
    let (done, planned) = (suite.cells.len(), suite.planned.len());
    match report::suite::write_partial_matrix(out, suite, cause) {
        Ok(md) => {
            out!("{}", report::suite::partial_markdown(suite, cause));
            outln!("written to {}", md.display());
            eprintln!(
                "suite: interrupted by {cause}: {done} of {planned} cells finished; the matrix is \
                 PARTIAL: {} and .json ({}.md, if any, left as it was)",
                md.display(),
                report::suite::stem(suite.grid)
            );
            (ExitCode::Interrupted, Some(md))
        }
        Err(e) => {
            eprintln!(
                "suite: interrupted by {cause} after {done} of {planned} cells; error: cannot \
                 write the partial matrix to {}: {e}",
                out.display()
            );
            crate::json::record_error(format!(
                "cannot write the partial matrix to {}: {e}",
                out.display()
            ));
            (ExitCode::Interrupted, None)
        }
    }
}
