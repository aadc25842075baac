//! Agreement between the simulator and reality: for every cell of the
//! safety matrix, the simulator's verdict beside the verdicts of R real
//! runs, and whether they agree (`reports/reality.md` and `.json`).
//!
//! The rule, per the simulator's verdict:
//! - `violated`: reproduced when at least one real run is violated;
//! - `deadlock`: reproduced when at least one real run deadlocks;
//! - `safe`: agrees when no real run is violated or deadlocked;
//! - `unknown`: agrees when at least one real run is unknown.
//!
//! A cell real mode cannot stage is shown as such, with what it cannot
//! stage. Every disagreement is listed by name in the report, never only
//! counted.

use crate::cell::{CellOutcome, describe_outcome};
use serde::{Deserialize, Serialize};
use sim::verdict::Verdict;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// How a cell's real runs compare with the simulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Agreement {
    /// Reality gave what the simulator gave (rule in the module doc).
    Agree,
    /// It did not.
    Disagree,
    /// Real mode cannot stage this cell.
    NotStageable,
}

impl Agreement {
    /// `agree`, `disagree` or `not stageable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Agreement::Agree => "agree",
            Agreement::Disagree => "disagree",
            Agreement::NotStageable => "not stageable",
        }
    }
}

/// Whether real verdict counts agree with the simulator's verdict.
pub fn agreement(simulated: Verdict, outcome: &CellOutcome) -> Agreement {
    if matches!(outcome, CellOutcome::NotStageable(_)) {
        Agreement::NotStageable
    } else if agrees(simulated, &outcome.counts()) {
        Agreement::Agree
    } else {
        Agreement::Disagree
    }
}

/// The rule of the module doc, on counts of real verdicts.
pub fn agrees(simulated: Verdict, counts: &BTreeMap<Verdict, u32>) -> bool {
    let seen = |v: Verdict| counts.get(&v).copied().unwrap_or(0) > 0;
    match simulated {
        Verdict::Violated => seen(Verdict::Violated),
        Verdict::Deadlock => seen(Verdict::Deadlock),
        Verdict::Safe => !seen(Verdict::Violated) && !seen(Verdict::Deadlock),
        Verdict::Unknown => seen(Verdict::Unknown),
    }
}

/// One row of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The scenario.
    pub scenario: String,
    /// The rung.
    pub rung: String,
    /// The simulator's verdict (the most severe over the scenario's seeds,
    /// as in the safety matrix).
    pub simulated: Verdict,
    /// How many real runs gave each verdict.
    pub real: BTreeMap<Verdict, u32>,
    /// What real mode could not stage, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_stageable: Option<String>,
    /// Agree, disagree or not stageable.
    pub agreement: Agreement,
}

impl Row {
    /// The row of one cell.
    pub fn new(scenario: &str, rung: &str, simulated: Verdict, outcome: &CellOutcome) -> Row {
        Row {
            scenario: scenario.to_string(),
            rung: rung.to_string(),
            simulated,
            real: outcome.counts(),
            not_stageable: matches!(outcome, CellOutcome::NotStageable(_))
                .then(|| describe_outcome(outcome)),
            agreement: agreement(simulated, outcome),
        }
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Real runs per cell.
    pub repeat: u32,
    /// The server, as its `--version` names it (`redis-server 7.0.15`).
    pub server: String,
    /// Every cell, in matrix order.
    pub rows: Vec<Row>,
    /// Cells that agree.
    pub agree: usize,
    /// Cells that disagree.
    pub disagree: usize,
    /// Cells not stageable.
    pub not_stageable: usize,
    /// Wall time of the whole real suite, seconds.
    pub wall_s: u64,
    /// Set when the suite was interrupted: the cells not run are missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
}

impl Report {
    /// A report of `rows`, run on `server` ([`crate::nodes::ServerBin::description`]).
    pub fn new(
        repeat: u32,
        server: &str,
        rows: Vec<Row>,
        wall_s: u64,
        partial: Option<String>,
    ) -> Report {
        let count = |a: Agreement| rows.iter().filter(|r| r.agreement == a).count();
        Report {
            repeat,
            server: server.to_string(),
            agree: count(Agreement::Agree),
            disagree: count(Agreement::Disagree),
            not_stageable: count(Agreement::NotStageable),
            rows,
            wall_s,
            partial,
        }
    }

    /// `reality.json`.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// `reality.md`.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Reality: the simulator's verdicts on real Redis\n");
        if let Some(partial) = &self.partial {
            let _ = writeln!(out, "**PARTIAL**: {partial}\n");
        }
        let _ = writeln!(
            out,
            "Every cell of the safety matrix run {} times on real {} processes \
             (`locklab suite --real`), with real faults: client pauses freeze the client's \
             thread, node crashes are `SIGKILL` and restarts, network faults go through \
             locklab's proxy. A violation agrees when at least one real run reproduces it; a \
             safe cell agrees when no real run is violated or deadlocked.\n",
            self.repeat, self.server
        );
        let _ = writeln!(
            out,
            "| scenario | rung | simulator | real runs | agreement |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|");
        for row in &self.rows {
            let real = match &row.not_stageable {
                Some(why) => why.clone(),
                None => crate::cell::describe_counts(&row.real),
            };
            let agreement = match row.agreement {
                Agreement::Disagree => "**disagree**",
                other => other.as_str(),
            };
            let _ = writeln!(
                out,
                "| `{}` | `{}` | {} | {} | {} |",
                row.scenario,
                row.rung,
                row.simulated.as_str(),
                real,
                agreement
            );
        }
        let disagreements: Vec<&Row> = self
            .rows
            .iter()
            .filter(|r| r.agreement == Agreement::Disagree)
            .collect();
        let _ = writeln!(out, "\n## Disagreements\n");
        if disagreements.is_empty() {
            let _ = writeln!(out, "None.");
        }
        for row in disagreements {
            let _ = writeln!(
                out,
                "- `{}` / `{}`: the simulator says {}, real runs gave {}; not yet explained.",
                row.scenario,
                row.rung,
                row.simulated.as_str(),
                crate::cell::describe_counts(&row.real)
            );
        }
        let _ = writeln!(
            out,
            "\n{} cells: {} agree, {} disagree, {} not stageable; wall time {} s.",
            self.rows.len(),
            self.agree,
            self.disagree,
            self.not_stageable,
            self.wall_s
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(verdicts: &[Verdict]) -> BTreeMap<Verdict, u32> {
        let mut counts = BTreeMap::new();
        for v in verdicts {
            *counts.entry(*v).or_insert(0) += 1;
        }
        counts
    }

    fn agreement_of(simulated: Verdict, real: &[Verdict]) -> bool {
        agrees(simulated, &runs(real))
    }

    #[test]
    fn a_not_stageable_cell_is_neither_agreement_nor_disagreement() {
        let outcome = CellOutcome::NotStageable(vec!["a node clock jump".into()]);
        assert_eq!(
            agreement(Verdict::Violated, &outcome),
            Agreement::NotStageable
        );
        let row = Row::new("s", "r", Verdict::Violated, &outcome);
        assert!(
            row.not_stageable
                .unwrap()
                .starts_with("not stageable in real mode: ")
        );
    }

    #[test]
    fn one_violated_run_reproduces_a_violation_and_breaks_a_safe_cell() {
        use Verdict::*;
        assert!(agreement_of(Violated, &[Safe, Violated, Safe]));
        assert!(!agreement_of(Violated, &[Safe, Safe, Safe]));
        assert!(!agreement_of(Safe, &[Safe, Violated, Safe]));
        assert!(!agreement_of(Safe, &[Safe, Deadlock, Safe]));
        assert!(agreement_of(Safe, &[Safe, Unknown, Safe]));
        assert!(agreement_of(Deadlock, &[Safe, Deadlock]));
        assert!(!agreement_of(Deadlock, &[Safe, Safe]));
    }

    #[test]
    fn the_markdown_names_every_disagreement() {
        let rows = vec![Row {
            scenario: "pause".into(),
            rung: "set-nx-px".into(),
            simulated: Verdict::Violated,
            real: runs(&[Verdict::Safe; 3]),
            not_stageable: None,
            agreement: Agreement::Disagree,
        }];
        let md = Report::new(3, "redis-server 7.0.15", rows, 1, None).markdown();
        assert!(md.contains("- `pause` / `set-nx-px`: the simulator says violated"));
        assert!(md.contains("0 agree, 1 disagree, 0 not stageable"));
    }
}
