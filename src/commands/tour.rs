//! `locklab tour`: the ladder told rung by rung from live simulator runs,
//! then the libraries chapter, the etcd chapter and the ZooKeeper chapter.

use super::{DEFAULT_SCENARIOS, Outcome, load_all};
use crate::json::{TourResult, TourStop};
use model::scenario::Scenario;
use sim::exit::ExitCode;
use sim::run::RunError;
use std::path::{Path, PathBuf};

/// The arguments of `locklab tour`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Where the scenario files are, subfolders too (default:
    /// `scenarios/` when it exists here, else the built-in ones).
    #[arg(long)]
    pub scenarios: Option<PathBuf>,
    /// Only this rung's stop.
    #[arg(long, alias = "variant")]
    pub rung: Option<String>,
    /// Print one JSON document on standard output (docs/json.md); the
    /// human text goes to standard error.
    #[arg(long)]
    pub json: bool,
}

/// `locklab tour [--rung ID]`: the stops shown, for the document.
pub fn execute(args: Args) -> Outcome<TourResult> {
    let mut result = None;
    let code = show(args.scenarios.as_deref(), args.rung.as_deref(), &mut result);
    Outcome::new(code, result)
}

/// `locklab tour`: every stop shown as soon as it has run; `result` gets
/// what `--json` prints.
fn show(dir: Option<&Path>, only: Option<&str>, result: &mut Option<TourResult>) -> ExitCode {
    let Some(scenarios) = load_all(dir) else {
        return ExitCode::BadInput;
    };
    if let Some(id) = only
        && locks::rung(id).is_none()
    {
        crate::error!(
            "--rung {id:?}: unknown rung; expected one of {}",
            locks::ids().join(", ")
        );
        return ExitCode::BadInput;
    }
    let files = scenario_files(dir, &scenarios);
    outln!("The lock ladder, rung by rung, from live runs on simulated Redis nodes.\n");
    // Each stop is shown as soon as it has run, so an interrupted tour
    // keeps every stop it finished.
    let rungs: Vec<&'static locks::Rung> = locks::LADDER
        .into_iter()
        .filter(|r| only.is_none_or(|id| r.id == id))
        .collect();
    let mut shown = 0;
    let summary = result.insert(TourResult::default());
    for (i, rung) in rungs.iter().enumerate() {
        match sim::tour::stop(rung, &scenarios) {
            Ok(Some(stop)) => {
                let file = files.get(&stop.scenario).map_or("", String::as_str);
                out!(
                    "{}",
                    report::tour::render_stop(&crate::present::tour_stop(&stop), &scenarios, file)
                );
                summary.stops.push(TourStop::of(&stop));
                shown += 1;
            }
            Ok(None) => {}
            Err(e) => {
                if let RunError::Interrupted(cause) = e {
                    summary.interrupted_by = Some(cause);
                }
                let left = rungs.len() - i - 1;
                let abandoned = format!(
                    "the stop of `{}` was abandoned and {left} later rung(s) not reached",
                    rung.id
                );
                return cannot_show(e, shown, &abandoned);
            }
        }
    }
    let libraries = Group {
        rungs: &locks::LIBRARIES,
        heading: report::tour::LIBRARIES_HEADING,
    };
    let etcd = Group {
        rungs: &locks::etcd::rungs::RUNGS,
        heading: report::tour::ETCD_HEADING,
    };
    let zookeeper = Group {
        rungs: &locks::zookeeper::rungs::RUNGS,
        heading: report::tour::ZOOKEEPER_HEADING,
    };
    let databases = Group {
        rungs: &locks::database::rungs::RUNGS,
        heading: report::tour::DATABASES_HEADING,
    };
    for group in [&libraries, &etcd, &zookeeper, &databases] {
        match tour_group(&scenarios, only, shown, group) {
            Ok(more) => shown = more,
            Err(code) => return code,
        }
    }
    ExitCode::Success
}

/// A chapter of rungs beside the ladder, each shown in every scenario
/// that names it.
struct Group {
    rungs: &'static [&'static locks::Rung],
    heading: &'static str,
}

/// One chapter after the ladder (the libraries, etcd, ZooKeeper, the
/// databases): each of its
/// rungs (or only the one asked for) in every scenario that names it.
/// Returns how many stops have been shown in all, or the exit code of a
/// tour that stops here.
fn tour_group(
    scenarios: &[Scenario],
    only: Option<&str>,
    mut shown: usize,
    group: &Group,
) -> Result<usize, ExitCode> {
    let rungs: Vec<&'static locks::Rung> = (group.rungs.iter().copied())
        .filter(|r| only.is_none_or(|id| r.id == id))
        .collect();
    let mut headed = false;
    for (i, rung) in rungs.iter().enumerate() {
        match sim::tour::library_stop(rung, scenarios) {
            Ok(Some(stop)) => {
                if !headed {
                    outln!("{}", group.heading);
                    headed = true;
                }
                out!(
                    "{}",
                    report::tour::render_library_stop(&crate::present::library_stop(&stop))
                );
                shown += 1;
            }
            Ok(None) => {}
            Err(e) => {
                let left = rungs.len() - i - 1;
                let abandoned = format!(
                    "the chapter of `{}` was abandoned and {left} later rung(s) of its group not reached",
                    rung.id
                );
                return Err(cannot_show(e, shown, &abandoned));
            }
        }
    }
    Ok(shown)
}

/// The end of a tour whose next stop could not be run: interrupted (said,
/// with the `shown` stops and what was `abandoned`) or failed (reported).
fn cannot_show(e: RunError, shown: usize, abandoned: &str) -> ExitCode {
    match e {
        RunError::Interrupted(cause) => {
            eprintln!("tour: interrupted by {cause}: PARTIAL: {shown} stop(s) shown; {abandoned}");
            ExitCode::Interrupted
        }
        e => {
            crate::error!("{e}");
            ExitCode::BadInput
        }
    }
}

/// The path of each scenario's file by scenario name, as the tour shows
/// it: the scenarios folder's name and the file's path inside it,
/// subfolders included (`scenarios/libraries/NAME.toml`), the same for the
/// built-in set and for the folder it was built from. Scenarios load in
/// file order, so the files and the scenarios pair up one to one.
fn scenario_files(
    dir: Option<&Path>,
    scenarios: &[Scenario],
) -> std::collections::BTreeMap<String, String> {
    let default = Path::new(DEFAULT_SCENARIOS);
    let folder = dir.or(default.is_dir().then_some(default));
    let files: Vec<String> = match folder {
        Some(folder) => {
            let name = folder
                .canonicalize()
                .ok()
                .and_then(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| DEFAULT_SCENARIOS.to_string());
            sim::suite::scenario_files(folder)
                .unwrap_or_default()
                .iter()
                .map(|f| {
                    let inside = f.strip_prefix(folder).unwrap_or(f);
                    let parts: Vec<String> = inside
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect();
                    format!("{name}/{}", parts.join("/"))
                })
                .collect()
        }
        None => crate::builtin::FILES
            .iter()
            .map(|(path, _)| format!("{DEFAULT_SCENARIOS}/{path}"))
            .collect(),
    };
    scenarios
        .iter()
        .zip(files)
        .map(|(s, file)| (s.name.clone(), file))
        .collect()
}
