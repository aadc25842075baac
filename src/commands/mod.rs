//! What each `locklab` subcommand does, in terms of the library crates:
//! one file per command. Each takes its parsed arguments (`Args`, the
//! command-line face in the same file) and returns an [`Outcome`]: the exit
//! code and the typed result its `--json` document carries. Human text goes
//! out through [`crate::say`], errors through [`crate::error!`], so every
//! error a command reports is in its document's `errors` too.

pub mod bench;
pub mod check;
pub mod explore;
pub mod ladder;
pub mod real;
pub mod replay;
pub mod run;
pub mod scenarios;
pub mod sim_server;
pub mod suite;
pub mod tour;

use crate::json::{self, CommandName};
use model::scenario::Scenario;
use model::verdict::Verdict;
use serde::Serialize;
use sim::exit::ExitCode;
use std::path::Path;

/// How a command ended: its exit code, and the result its `--json`
/// document carries (`None` when it failed before it had one: the
/// document's `errors` then say why).
#[derive(Debug)]
pub struct Outcome<R> {
    /// The process's exit code.
    pub code: ExitCode,
    /// The command's own result.
    pub result: Option<R>,
}

impl<R: Serialize> Outcome<R> {
    /// An outcome with a result.
    pub fn new(code: ExitCode, result: Option<R>) -> Outcome<R> {
        Outcome { code, result }
    }

    /// Ended before there was a result.
    pub fn failed(code: ExitCode) -> Outcome<R> {
        Outcome { code, result: None }
    }

    /// Prints the `--json` document of `command` (when `--json` is on) and
    /// returns the exit code.
    pub fn finish(self, command: CommandName) -> ExitCode {
        json::finish(command, self.code, self.result)
    }
}

/// The worker threads of a command that runs simulations at once: `jobs`,
/// else one per CPU.
pub fn workers(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

/// The worst verdict decides the exit code: violated, then deadlock, then
/// unknown, then safe.
pub fn worst(verdicts: &[Verdict]) -> Verdict {
    let rank = |v: &Verdict| match v {
        Verdict::Violated => 3,
        Verdict::Deadlock => 2,
        Verdict::Unknown => 1,
        Verdict::Safe => 0,
    };
    verdicts
        .iter()
        .copied()
        .max_by_key(rank)
        .unwrap_or(Verdict::Safe)
}

/// The exit of `run`: a violation, deadlock or unknown verdict is never
/// hidden by a failure elsewhere; a failure turns a safe run into bad input.
pub(crate) fn run_exit(worst: Verdict, failed: bool) -> ExitCode {
    match (worst, failed) {
        (Verdict::Safe, true) => ExitCode::BadInput,
        (verdict, _) => ExitCode::of_verdict(verdict),
    }
}

/// The scenarios folder used when none is given, if it exists in the
/// current folder.
pub const DEFAULT_SCENARIOS: &str = "scenarios";

/// The scenarios of `dir` (subfolders too), or when none is given, of
/// [`DEFAULT_SCENARIOS`] if it exists here, else the built-in ones (said
/// on standard error); their notes printed. `None` (the error printed)
/// when one cannot be loaded.
pub(crate) fn load_all(dir: Option<&Path>) -> Option<Vec<Scenario>> {
    let default = Path::new(DEFAULT_SCENARIOS);
    let loaded = match dir {
        Some(dir) => sim::suite::load_all(dir),
        None if default.is_dir() => sim::suite::load_all(default),
        None => {
            eprintln!(
                "note: no {DEFAULT_SCENARIOS}/ folder here: using the {} built-in scenarios \
                 (`locklab scenarios --export DIR` writes them out to edit; --scenarios DIR \
                 uses a folder)",
                crate::builtin::FILES.len()
            );
            crate::builtin::load()
        }
    };
    match loaded {
        Ok(all) => {
            print_notes(&all.iter().collect::<Vec<_>>());
            Some(all)
        }
        Err(e) => {
            crate::error!("{e}");
            None
        }
    }
}

/// What `run` (on the simulator or on real servers) was asked to run.
pub(crate) struct Chosen {
    /// The scenario, with a rung file's rung given its part.
    pub scenario: Scenario,
    /// The scenario's text, read once: the run folder keeps exactly the
    /// text that was run, even when it came from a pipe that cannot be
    /// read again.
    pub text: String,
    /// The rungs to run: the one asked for, else every rung it names.
    pub rungs: Vec<String>,
}

/// Loads `run`'s rung file first (a scenario may name its rung), then the
/// scenario, and picks the rungs; an error is reported and is exit 3.
pub(crate) fn choose_runs(
    path: &Path,
    rung: Option<&str>,
    rung_file: Option<&Path>,
) -> Result<Chosen, ExitCode> {
    let from_file = rung_file.map(crate::rung_files::load).transpose()?;
    let rung = rung.or(from_file);
    let (scenario, text) = load_scenario_arg(path).map_err(|e| {
        crate::error!("{e}");
        ExitCode::BadInput
    })?;
    let scenario = match from_file {
        Some(id) => crate::rung_files::adopt(&scenario, id)?,
        None => scenario,
    };
    let rungs = match rung {
        Some(v) if scenario.rungs.iter().any(|x| x == v) => vec![v.to_string()],
        Some(v) => {
            crate::error!(
                "{}: rung {v:?} is not in this scenario; it names {}",
                path.display(),
                scenario.rungs.join(", ")
            );
            return Err(ExitCode::BadInput);
        }
        None => scenario.rungs.clone(),
    };
    Ok(Chosen {
        scenario,
        text,
        rungs,
    })
}

/// The scenario `run` was given: a file, or when no such file exists and
/// the argument is a bare name, the built-in scenario of that name (so
/// `locklab run stop-the-world-pause` works from any folder). Returns the
/// text too, for the run folder.
pub(crate) fn load_scenario_arg(
    path: &Path,
) -> Result<(Scenario, String), model::scenario::ScenarioError> {
    let bare_name = path.components().count() == 1 && path.extension().is_none();
    let builtin = path
        .to_str()
        .filter(|_| bare_name && !path.exists())
        .and_then(|name| Some((name, crate::builtin::text_of(name)?)));
    match builtin {
        Some((name, text)) => {
            let file = crate::builtin::label(&format!("{name}.toml"));
            eprintln!("note: no file {name:?} here: running the built-in scenario {name}");
            Ok((Scenario::parse(text, &file, name)?, text.to_string()))
        }
        None => Scenario::load_text(path),
    }
}

/// Prints each scenario's notes (old spellings and the like) to standard
/// error: they do not stop a run, but the reader should know.
pub(crate) fn print_notes(scenarios: &[&Scenario]) {
    for scenario in scenarios {
        for note in &scenario.notes {
            eprintln!("note: scenario {}: {note}", scenario.name);
        }
    }
}

/// Writes a JUnit report whole (write, then rename), saying where on
/// standard error; `false` (the error printed) when it cannot be written.
pub(crate) fn write_junit(file: &Path, xml: &str, partial: bool) -> bool {
    let written = file
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| harness::atomic::write_whole(file, xml));
    match written {
        Ok(()) => {
            let partial = if partial { " (PARTIAL)" } else { "" };
            eprintln!("JUnit report{partial} written to {}", file.display());
            true
        }
        Err(e) => {
            crate::error!("--junit: cannot write {}: {e}", file.display());
            false
        }
    }
}
