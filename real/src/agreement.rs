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
use model::verdict::Verdict;
use serde::{Deserialize, Serialize};
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

    /// Its mark in the matrix view: ✓ agree, ✗ disagree (bold), ⊘ not
    /// stageable.
    pub fn mark(self) -> &'static str {
        match self {
            Agreement::Agree => "✓",
            Agreement::Disagree => "**✗**",
            Agreement::NotStageable => "⊘",
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
        let _ = writeln!(out, "# Reality: the simulator's verdicts on real servers\n");
        if let Some(partial) = &self.partial {
            let _ = writeln!(out, "**PARTIAL**: {partial}\n");
        }
        let _ = writeln!(out, "## {}\n", self.server);
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
        let _ = writeln!(out, "\n{}; wall time {} s.", self.counts(), self.wall_s);
        out.push_str(&self.matrix_markdown());
        out
    }

    /// `56 cells: 53 agree, 0 disagree, 3 not stageable` (the README
    /// quotes it).
    pub fn counts(&self) -> String {
        format!(
            "{} cells: {} agree, {} disagree, {} not stageable",
            self.rows.len(),
            self.agree,
            self.disagree,
            self.not_stageable
        )
    }

    /// The safety matrix with each cell's agreement: rungs as rows (ladder
    /// order), scenarios as columns (the report's order), each cell the
    /// simulator's verdict and a mark for what real runs said. The README
    /// links it as the matrix's real-mode view.
    pub fn matrix_markdown(&self) -> String {
        let mut scenarios: Vec<&str> = Vec::new();
        let mut rungs: Vec<&str> = Vec::new();
        for row in &self.rows {
            if !scenarios.contains(&row.scenario.as_str()) {
                scenarios.push(&row.scenario);
            }
            if !rungs.contains(&row.rung.as_str()) {
                rungs.push(&row.rung);
            }
        }
        // Stable: rungs of one number (rung files) keep their order.
        rungs.sort_by_key(|id| locks::rung(id).map_or(u8::MAX, |r| r.number));
        let mut out = String::new();
        let _ = writeln!(out, "\n## {MATRIX_HEADING}\n");
        let _ = writeln!(
            out,
            "Rows: rungs, in ladder order. Columns: scenarios. Each cell is the simulator's \
             verdict, then what the real runs said: {} agree, {} disagree, {} not stageable \
             (the reason is in the table above); — the rung is not in that scenario.\n",
            Agreement::Agree.mark(),
            Agreement::Disagree.mark(),
            Agreement::NotStageable.mark()
        );
        let _ = writeln!(out, "| rung | {} |", scenarios.join(" | "));
        let _ = writeln!(out, "|---|{}", "---|".repeat(scenarios.len()));
        for rung in rungs {
            let cells: Vec<String> = scenarios
                .iter()
                .map(|scenario| {
                    self.rows
                        .iter()
                        .find(|r| r.rung == rung && r.scenario == *scenario)
                        .map_or_else(
                            || "—".to_string(),
                            |r| format!("{} {}", r.simulated.as_str(), r.agreement.mark()),
                        )
                })
                .collect();
            let _ = writeln!(out, "| `{rung}` | {} |", cells.join(" | "));
        }
        out
    }
}

/// The heading of the matrix section of `reality.md` (the README links
/// it by its anchor).
pub const MATRIX_HEADING: &str = "Agreement in the safety matrix";

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
    fn the_matrix_view_marks_each_cell_with_its_agreement() {
        let row = |scenario: &str, rung: &str, simulated, agreement| Row {
            scenario: scenario.into(),
            rung: rung.into(),
            simulated,
            real: runs(&[simulated]),
            not_stageable: None,
            agreement,
        };
        let rows = vec![
            row("a", "lua-release", Verdict::Safe, Agreement::Agree),
            row("a", "set-nx-px", Verdict::Violated, Agreement::Disagree),
            row(
                "b",
                "lua-release",
                Verdict::Violated,
                Agreement::NotStageable,
            ),
        ];
        let matrix = Report::new(1, "redis-server 7.0.15", rows, 1, None).matrix_markdown();
        let lines: Vec<&str> = matrix.lines().filter(|l| l.starts_with("| `")).collect();
        assert_eq!(
            lines,
            [
                "| `set-nx-px` | violated **✗** | — |",
                "| `lua-release` | safe ✓ | violated ⊘ |"
            ]
        );
    }

    /// The committed reports: each `.md` is what its `.json` gives, and
    /// the README quotes their counts and links the Redis matrix.
    #[test]
    fn the_committed_reality_reports_and_the_readme_agree_with_their_json() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let read = |name: &str| {
            std::fs::read_to_string(root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
        };
        let readme = read("README.md")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for name in [
            "reality",
            "reality-valkey",
            "reality-etcd",
            "reality-zookeeper",
            "reality-databases",
        ] {
            let report: Report = serde_json::from_str(&read(&format!("reports/{name}.json")))
                .unwrap_or_else(|e| panic!("{name}.json: {e}"));
            let recounted = Report::new(
                report.repeat,
                &report.server,
                report.rows.clone(),
                report.wall_s,
                report.partial.clone(),
            );
            assert_eq!(
                (recounted.agree, recounted.disagree, recounted.not_stageable),
                (report.agree, report.disagree, report.not_stageable),
                "{name}.json's counts are its rows' counts"
            );
            assert!(
                read(&format!("reports/{name}.md")) == report.markdown(),
                "reports/{name}.md is not the view of reports/{name}.json (`locklab suite \
                 --real` writes both)"
            );
            assert!(
                readme.contains(&report.counts()),
                "README.md should quote {name}.json's counts: {:?}",
                report.counts()
            );
        }
        let anchor = MATRIX_HEADING.to_ascii_lowercase().replace(' ', "-");
        assert!(
            readme.contains(&format!("reports/reality.md#{anchor}")),
            "README.md should link the matrix view, reports/reality.md#{anchor}"
        );
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
