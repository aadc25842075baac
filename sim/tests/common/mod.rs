//! What the simulator's integration tests share: where the project's
//! scenario and rung files are, and loading one scenario by name (a
//! broken file fails the test with the loader's own message).

#![allow(dead_code)] // each test file uses its own part of the helpers

use model::scenario::Scenario;
use std::path::PathBuf;

/// The project's root (the `sim` crate's parent folder).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The project's `scenarios/` folder.
pub fn scenarios_dir() -> PathBuf {
    root().join("scenarios")
}

/// The path of `scenarios/<name>.toml`.
pub fn scenario_path(name: &str) -> PathBuf {
    scenarios_dir().join(format!("{name}.toml"))
}

/// Loads `scenarios/<name>.toml`.
pub fn scenario(name: &str) -> Scenario {
    Scenario::load(&scenario_path(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// Loads `scenarios/<name>.toml` with its text.
pub fn scenario_with_text(name: &str) -> (Scenario, String) {
    Scenario::load_text(&scenario_path(name)).unwrap_or_else(|e| panic!("{e}"))
}
