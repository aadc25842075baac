//! A judged run: one rung in one scenario under one seed, its history and
//! what the checkers found in it ([`Judged`]), and those findings told for
//! people ([`describe_checks`]).

use crate::check::{Check, CheckResults};
use model::history::History;
use model::verdict::Verdict;
use std::fmt::Write as _;
use std::time::Duration;

/// A judged run.
#[derive(Debug, Clone)]
pub struct Judged {
    /// The scenario's name.
    pub scenario: String,
    /// The rung.
    pub rung: String,
    /// The seed.
    pub seed: u64,
    /// What happened.
    pub history: History,
    /// What the checkers found.
    pub results: CheckResults,
    /// The cell's verdict.
    pub verdict: Verdict,
    /// Simulated time the run took.
    pub sim_elapsed: Duration,
}

/// Each checker's result (with its witness events, one JSON line each)
/// and the damage figures, for people: what `locklab run` prints without
/// its head and timeline, and the findings of a matrix cell.
pub fn describe_checks(judged: &Judged) -> String {
    let mut out = String::new();
    if let Some(cut) = &judged.results.cut_short {
        let _ = writeln!(out, "  cut short: {cut}");
    }
    for (name, check) in judged.results.all() {
        let note = if judged.results.decides(name) {
            ""
        } else {
            " (information)"
        };
        match check {
            Check::Valid => {
                let _ = writeln!(out, "  {name}: valid{note}");
            }
            Check::Invalid { witness, why } => {
                let _ = writeln!(out, "  {name}: INVALID{note}: {why}");
                for &i in witness {
                    if let Some(event) = judged.history.events().get(i) {
                        let line = serde_json::to_string(event).unwrap_or_default();
                        let _ = writeln!(out, "    {line}");
                    }
                }
            }
            Check::Unknown { why } => {
                let _ = writeln!(out, "  {name}: unknown{note}: {why}");
            }
        }
    }
    let damage = serde_json::to_string(&judged.results.damage).unwrap_or_default();
    let _ = writeln!(out, "  damage: {damage}");
    out
}
