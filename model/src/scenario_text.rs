//! A scenario written back as a file: what a search leaves for its
//! counterexample and what a suite's run folder holds, so that `locklab
//! run` and `locklab replay` read it again.

use crate::scenario::Scenario;

/// The scenario as a TOML file, with a comment naming how it was found and
/// how to replay it.
pub fn scenario_toml(scenario: &Scenario, header: &str) -> String {
    let body = toml::to_string(scenario).unwrap_or_default();
    let mut text = String::new();
    for line in header.lines() {
        text.push_str("# ");
        text.push_str(line);
        text.push('\n');
    }
    text.push('\n');
    text.push_str(&body);
    text
}
