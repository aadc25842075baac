//! The built-in scenarios: the project's `scenarios/` folder (subfolders
//! too), embedded in the binary at build time (see `build.rs`), so that
//! `tour` and `suite` work from any folder. A scenarios folder on disk
//! overrides them; [`export`] writes them out to edit.

use model::scenario::{Scenario, ScenarioError};
use sim::suite::ScenarioText;
use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/builtin_scenarios.rs"));

/// How errors and notes name a built-in file.
pub fn label(relative: &str) -> String {
    format!("(built-in) scenarios/{relative}")
}

/// Every built-in scenario, parsed and checked as a folder would be.
pub fn load() -> Result<Vec<Scenario>, ScenarioError> {
    let labels: Vec<String> = FILES.iter().map(|(path, _)| label(path)).collect();
    let texts: Vec<ScenarioText<'_>> = FILES
        .iter()
        .zip(&labels)
        .map(|((path, text), file)| ScenarioText {
            file,
            stem: stem(path),
            text,
        })
        .collect();
    sim::suite::parse_all(&texts)
}

/// The text of the built-in scenario file whose stem is `name`.
pub fn text_of(name: &str) -> Option<&'static str> {
    FILES
        .iter()
        .find(|(path, _)| stem(path) == name)
        .map(|(_, text)| *text)
}

/// A `/`-separated path's file name without `.toml`.
fn stem(path: &str) -> &str {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.strip_suffix(".toml").unwrap_or(file)
}

/// Writes every built-in scenario file under `dir` (created if need be),
/// keeping their subfolders, and returns the paths written. Nothing is
/// overwritten: when any of the files exists already, nothing is written
/// and the error names every one of them. Each file appears whole or not
/// at all (written beside, then linked into place, which fails rather
/// than replace a file that appeared meanwhile).
pub fn export(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let targets: Vec<(PathBuf, &str)> = FILES
        .iter()
        .map(|(path, text)| {
            (
                path.split('/').fold(dir.to_path_buf(), |p, c| p.join(c)),
                *text,
            )
        })
        .collect();
    let existing: Vec<String> = targets
        .iter()
        .filter(|(path, _)| path.symlink_metadata().is_ok())
        .map(|(path, _)| path.display().to_string())
        .collect();
    if !existing.is_empty() {
        return Err(format!(
            "{} file(s) exist already, and export overwrites nothing (move them away or \
             export to another folder): {}",
            existing.len(),
            existing.join(", ")
        ));
    }
    let mut written = Vec::new();
    for (path, text) in targets {
        write_new_in_folder(&path, text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// Writes `text` to `path`, which must not exist, making its folder first
/// (whole or not at all: [`harness::atomic::write_new`]).
fn write_new_in_folder(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    harness::atomic::write_new(path, text)
}
