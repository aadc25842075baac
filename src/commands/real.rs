//! `locklab run --real` and `locklab suite --real`: the same scenarios on
//! real `redis-server` processes with real faults (the `real` crate).

use super::{choose_runs, run_exit, worst};
use crate::say::emit;
use model::verdict::Verdict;
use real::agreement::{Agreement, Report, Row};
use real::cell::{CellOutcome, describe_outcome, run_real_cell_on};
use real::nodes::ServerBin;
use real::service::{servers_for, servers_of};
use sim::cell::Judged;
use sim::exit::ExitCode;
use sim::run::RunError;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn say(text: &str) {
    emit(format_args!("{text}"), true);
}

/// The server binary of a real run: `--server-bin PATH`, else
/// `redis-server`; `None` (with the reason printed) when it cannot run.
fn server_bin(path: Option<&Path>) -> Option<ServerBin> {
    let probed = match path {
        Some(path) => ServerBin::probe(&path.to_string_lossy())
            .map_err(|e| format!("--server-bin {}: {e}", path.display())),
        None => ServerBin::redis_server().map_err(|e| {
            format!(
                "real mode needs redis-server on PATH (`sudo apt-get install -y redis-server`, \
                 or scripts/test, which installs it), or --server-bin PATH: {e}"
            )
        }),
    };
    probed.map_err(|e| crate::error!("{e}")).ok()
}

/// The server binary of real runs repeated `repeat` times; `None` (the
/// error reported) when there is none or `repeat` is 0.
fn server_for(repeat: u32, path: Option<&Path>) -> Option<ServerBin> {
    if repeat == 0 {
        crate::error!("--repeat 0: a real cell needs at least one run");
        return None;
    }
    server_bin(path)
}

/// `locklab run SCENARIO --real [--rung ID | --rung-file F] [--seed N]
/// [--repeat R]`. A rung file's rung runs as a built-in rung does: the
/// same generic lock the simulator runs, its file kept in each run folder
/// so that `replay` re-checks the run with it.
pub fn run(
    path: &Path,
    rung: Option<&str>,
    rung_file: Option<&Path>,
    seed: Option<u64>,
    out: &Path,
    repeat: u32,
    server: Option<&Path>,
) -> ExitCode {
    let (scenario, text, rungs) = match choose_runs(path, rung, rung_file) {
        Ok(chosen) => (chosen.scenario, chosen.text, chosen.rungs),
        Err(code) => return code,
    };
    let Some(bin) = server_for(repeat, server) else {
        return ExitCode::BadInput;
    };
    let seed = seed.unwrap_or_else(|| scenario.seeds.first().copied().unwrap_or(1));
    let mut verdicts = Vec::new();
    let mut failed = false;
    for rung in &rungs {
        let mut write = |k: u32, judged: &Judged| {
            say(&format!("real run {k} of {repeat}"));
            say(&report::output::describe(judged));
            let dir = real::cell::run_dir(out, judged, k);
            let written = report::output::write_run(&dir, judged, &text)
                .and_then(|()| real::cell::write_marker(&dir, k, repeat, &servers_for(rung, &bin)))
                .and_then(|()| rung_file.map_or(Ok(()), |f| crate::rung_files::keep(&dir, f)));
            match written {
                Ok(()) => say(&format!("  written to {}\n", dir.display())),
                Err(e) => {
                    crate::error!("cannot write {}: {e}", dir.display());
                    failed = true;
                }
            }
        };
        match run_real_cell_on(&bin, &scenario, rung, seed, repeat, &mut write) {
            Ok(outcome) => {
                say(&format!(
                    "{} / {} on real {}: {}",
                    scenario.name,
                    rung,
                    servers_for(rung, &bin),
                    describe_outcome(&outcome)
                ));
                match outcome {
                    CellOutcome::Runs(runs) => verdicts.extend(runs.iter().map(|j| j.verdict)),
                    CellOutcome::NotStageable(_) => verdicts.push(Verdict::Unknown),
                }
            }
            Err(RunError::Interrupted(cause)) => {
                eprintln!(
                    "run: interrupted by {cause}: PARTIAL: {} real runs finished (their \
                     folders are under {}); the run in progress was abandoned, every server \
                     and proxy it started stopped",
                    verdicts.len(),
                    out.join("real-runs").display()
                );
                return ExitCode::Interrupted;
            }
            Err(e) => {
                crate::error!("{}: {rung}: {e}", path.display());
                failed = true;
            }
        }
    }
    run_exit(worst(&verdicts), failed)
}

/// `locklab suite --real [--repeat R] [--rung-file F] [--server-bin PATH]`:
/// every cell of the safety matrix (with each rung file's rung where it
/// has a part) on the simulator and R times on real servers;
/// `reality.{md,json}`.
pub fn suite(
    dir: Option<&Path>,
    out: &Path,
    repeat: u32,
    rung_files: &[PathBuf],
    server: Option<&Path>,
) -> ExitCode {
    let scenarios = match crate::rung_files::suite_scenarios(dir, rung_files, false) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let Some(bin) = server_for(repeat, server) else {
        return ExitCode::BadInput;
    };
    let started = Instant::now();
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let quiet = |_: &judge::matrix::Cell, _: usize, _: usize| {};
    let simulated =
        match sim::suite::run_suite(&scenarios, sim::suite::Grid::Named, workers, &quiet) {
            Ok(run) => run,
            Err(e) => {
                crate::error!("{e}");
                return ExitCode::BadInput;
            }
        };
    let mut rows = Vec::new();
    let mut interrupted = simulated.interrupted;
    let total = simulated.cells.len();
    for (n, cell) in simulated.cells.iter().enumerate() {
        if interrupted.is_some() {
            break;
        }
        let Some(scenario) = scenarios.iter().find(|s| s.name == cell.scenario) else {
            continue;
        };
        let mut quiet_run = |_: u32, _: &Judged| {};
        match run_real_cell_on(
            &bin,
            scenario,
            &cell.rung,
            cell.seed,
            repeat,
            &mut quiet_run,
        ) {
            Ok(outcome) => {
                let row = Row::new(&cell.scenario, &cell.rung, cell.verdict, &outcome);
                eprintln!(
                    "[{}/{total}] {} / {}: simulator {}, real {}: {}",
                    n + 1,
                    cell.scenario,
                    cell.rung,
                    cell.verdict.as_str(),
                    describe_outcome(&outcome),
                    row.agreement.as_str()
                );
                rows.push(row);
            }
            Err(RunError::Interrupted(cause)) => interrupted = Some(cause),
            Err(e) => {
                crate::error!("{} / {}: {e}", cell.scenario, cell.rung);
                return ExitCode::BadInput;
            }
        }
    }
    let partial = interrupted.map(|cause| {
        format!(
            "interrupted by {cause}: {} of {total} cells run",
            rows.len()
        )
    });
    let wall_s = started.elapsed().as_secs();
    let run = rows
        .iter()
        .filter(|row| row.agreement != Agreement::NotStageable);
    let servers = servers_of(run.map(|row| row.rung.as_str()), &bin);
    let report = Report::new(repeat, &servers, rows, wall_s, partial);
    let (md, json) = if report.partial.is_some() {
        ("reality.partial.md", "reality.partial.json")
    } else {
        ("reality.md", "reality.json")
    };
    let written = std::fs::create_dir_all(out)
        .and_then(|()| harness::atomic::write_whole(&out.join(md), report.markdown()))
        .and_then(|()| harness::atomic::write_whole(&out.join(json), report.json()));
    if let Err(e) = written {
        crate::error!("cannot write {}: {e}", out.join(md).display());
        return ExitCode::BadInput;
    }
    emit(format_args!("{}", report.markdown()), false);
    say(&format!("written to {}", out.join(md).display()));
    if let Some(cause) = interrupted {
        eprintln!("suite --real: interrupted by {cause}: PARTIAL");
        return ExitCode::Interrupted;
    }
    if report.disagree > 0 {
        ExitCode::Violated
    } else {
        ExitCode::Success
    }
}
