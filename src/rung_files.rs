//! `--rung-file`: a rung defined in a file, for `run`, `suite`, `explore`
//! and `replay` (the format: `rungs/README.md`).

use model::scenario::Scenario;
use sim::exit::ExitCode;
use std::path::Path;

/// The name of the copy of the rung file kept in a run's folder, so that
/// `locklab replay` runs the same rung again.
pub const KEPT: &str = "rung-file.toml";

/// Loads and registers the rung file at `path`: its id, or the error
/// printed and exit 3.
pub fn load(path: &Path) -> Result<&'static str, ExitCode> {
    sim::rung_file::load(path).map_err(|e| {
        crate::error!("--rung-file: {e}");
        ExitCode::BadInput
    })
}

/// Loads every rung file given: their ids, or the first error printed
/// and exit 3.
pub fn load_all(paths: &[std::path::PathBuf]) -> Result<Vec<&'static str>, ExitCode> {
    paths.iter().map(|p| load(p)).collect()
}

/// `scenario` with the rung `id` given its part, or the error printed and
/// exit 3.
pub fn adopt(scenario: &Scenario, id: &str) -> Result<Scenario, ExitCode> {
    sim::rung_file::adopt(scenario, id).map_err(|e| {
        crate::error!("{e}");
        ExitCode::BadInput
    })
}

/// The scenarios of a suite with each registered rung `ids` adopted: in
/// every scenario that gives it a part (with `all`, in every scenario).
pub fn adopt_all(
    scenarios: Vec<Scenario>,
    ids: &[&str],
    all: bool,
) -> Result<Vec<Scenario>, ExitCode> {
    scenarios
        .into_iter()
        .map(|mut scenario| {
            for id in ids {
                if all || sim::rung_file::has_part(&scenario, id) {
                    scenario = adopt(&scenario, id)?;
                }
            }
            Ok(scenario)
        })
        .collect()
}

/// A suite's scenarios (`dir`, as [`crate::commands::load_all`] finds
/// them) with the rung of each file in `rung_files` adopted where it has
/// a part (with `all`, everywhere); the error is printed.
pub fn suite_scenarios(
    dir: Option<&Path>,
    rung_files: &[std::path::PathBuf],
    all: bool,
) -> Result<Vec<Scenario>, ExitCode> {
    let ids = load_all(rung_files)?;
    let scenarios = crate::commands::load_all(dir).ok_or(ExitCode::BadInput)?;
    adopt_all(scenarios, &ids, all)
}

/// Keeps a copy of the rung file in a run's folder.
pub fn keep(dir: &Path, rung_file: &Path) -> std::io::Result<()> {
    std::fs::copy(rung_file, dir.join(KEPT)).map(drop)
}

/// For `replay`: registers the rung file kept in a run's folder, if there
/// is one, and gives its rung its part in the recorded scenario.
pub fn recorded(dir: &Path, scenario: Scenario, rung: &str) -> Result<Scenario, String> {
    let kept = dir.join(KEPT);
    if !kept.exists() {
        return Ok(scenario);
    }
    let id = sim::rung_file::load(&kept)?;
    if id != rung {
        return Err(format!(
            "{}: defines rung {id:?}, but the run is of {rung:?}",
            kept.display()
        ));
    }
    sim::rung_file::adopt(&scenario, id)
}
