//! A cell's verdict (one rung in one scenario) and `verdict.json`.
//!
//! The rules (`docs/ladder.md`, "Verdicts"): `unknown` when the run was
//! cut short (a node aborted a runaway script); else `violated` when a safety checker (mutual exclusion, the
//! resource) finds a violation; else `deadlock` when liveness fails; else
//! `unknown` when a checker cannot decide; else `safe`. When the resource
//! decides safety (the `fenced` rung), mutual exclusion is reported as
//! information only.

use crate::check::{Check, CheckResults, Damage};
use model::cut_short::CutShort;
use model::history::SCHEMA_VERSION;
use model::verdict::Verdict;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The verdict of a set of checker results.
pub fn verdict_of(results: &CheckResults) -> Verdict {
    // A history that stops where the simulator stopped being faithful
    // proves nothing either way about the lock.
    if results.cut_short.is_some() {
        return Verdict::Unknown;
    }
    let deciding: Vec<&Check> = results
        .all()
        .into_iter()
        .filter(|(checker, _)| results.decides(*checker))
        .map(|(_, check)| check)
        .collect();
    let safety_invalid = results
        .all()
        .into_iter()
        .filter(|(checker, _)| checker.is_safety() && results.decides(*checker))
        .any(|(_, check)| check.is_invalid());
    if safety_invalid {
        Verdict::Violated
    } else if results.liveness.is_invalid() {
        Verdict::Deadlock
    } else if deciding.iter().any(|c| c.is_unknown()) {
        Verdict::Unknown
    } else {
        Verdict::Safe
    }
}

/// One checker's entry in `verdict.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckerEntry {
    /// `valid`, `invalid` or `unknown`.
    pub verdict: String,
    /// The event indices that prove a violation (empty otherwise).
    pub witness: Vec<usize>,
    /// The violation, or why it could not be decided, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// True when this checker is reported for information and does not
    /// decide the verdict (mutual exclusion on the `fenced` rung).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub informational: bool,
}

/// The whole of `verdict.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerdictDoc {
    /// The history's schema version ([`SCHEMA_VERSION`]).
    pub schema: u32,
    /// locklab's version.
    pub locklab: String,
    /// The scenario's name.
    pub scenario: String,
    /// The rung's id (`variant` in schema 1 of the JSON).
    #[serde(rename = "variant")]
    pub rung: String,
    /// The seed (below 2^53).
    pub seed: u64,
    /// The cell's verdict.
    pub verdict: Verdict,
    /// Every checker's result, by name.
    pub checkers: BTreeMap<String, CheckerEntry>,
    /// The damage figures.
    pub damage: Damage,
    /// Why the run ended before its scenario did, when it did (the verdict
    /// is then `unknown`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_short: Option<CutShortEntry>,
}

/// `cut_short` in `verdict.json`: what cut the run short, in fields and in
/// words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CutShortEntry {
    /// What it was (`kind`, and that kind's fields).
    #[serde(flatten)]
    pub cause: CutShort,
    /// The reason, in words.
    pub why: String,
}

impl CutShortEntry {
    /// The entry of `cause`, with its reason in words.
    pub fn new(cause: CutShort) -> CutShortEntry {
        CutShortEntry {
            why: cause.to_string(),
            cause,
        }
    }
}

impl VerdictDoc {
    /// Builds the document for one run.
    pub fn new(results: &CheckResults, scenario: &str, rung: &str, seed: u64) -> VerdictDoc {
        let checkers = results
            .all()
            .into_iter()
            .map(|(checker, check)| {
                (
                    checker.name().to_string(),
                    CheckerEntry {
                        verdict: check.name().to_string(),
                        witness: check.witness().to_vec(),
                        why: check.why().map(str::to_string),
                        informational: !results.decides(checker),
                    },
                )
            })
            .collect();
        VerdictDoc {
            schema: SCHEMA_VERSION,
            locklab: env!("CARGO_PKG_VERSION").to_string(),
            scenario: scenario.to_string(),
            rung: rung.to_string(),
            seed,
            verdict: crate::verdict::verdict_of(results),
            checkers,
            damage: results.damage.clone(),
            cut_short: results.cut_short.clone().map(CutShortEntry::new),
        }
    }

    /// Pretty-printed JSON, ending in a newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// `verdict.json` for one run: `{"schema", "locklab", "scenario", "variant",
/// "seed", "verdict", "checkers": {name: {"verdict", "witness", ...}},
/// "damage": {...}}`, pretty-printed, ending in a newline.
pub fn verdict_json(results: &CheckResults, scenario: &str, rung: &str, seed: u64) -> String {
    VerdictDoc::new(results, scenario, rung, seed).to_json()
}
