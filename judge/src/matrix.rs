//! The safety matrix's data: a cell's result ([`Cell`]), which cells a
//! suite runs ([`Grid`]) and what it produced ([`SuiteRun`]). The suite
//! (the simulator's, or real mode's) fills them; the reports render them.

use crate::check::Damage;
use crate::judged::{Judged, describe_checks};
use crate::verdict::CutShortEntry;
use model::interrupt::Cause;
use model::verdict::Verdict;
use serde::{Deserialize, Serialize};

/// One cell: one rung in one scenario under one seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Cell {
    /// The rung's id (`variant` in schema 1 of the JSON).
    #[serde(rename = "variant")]
    pub rung: String,
    /// The scenario's name.
    pub scenario: String,
    /// What the checkers found.
    pub verdict: Verdict,
    /// What the scenario expects; `None` when it states nothing for this
    /// rung (the field is then left out of the JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Verdict>,
    /// The seed it ran with.
    pub seed: u64,
    /// The damage figures.
    pub damage: Damage,
    /// Why that seed's run ended before its scenario did, when it did (its
    /// verdict is then `unknown`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_short: Option<CutShortEntry>,
    /// The server a Redis rung's nodes were, when not Redis 7.0 (e.g.
    /// `redis-8.4` for a rung built on its compare-and-delete); absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// What the checkers found, for people: each checker's result and its
    /// witness events (as `locklab run` prints them, without the
    /// timeline). Not part of the JSON.
    #[serde(skip)]
    pub findings: String,
    /// Wall time the cell took (all its seeds), in ms: for reports such as
    /// JUnit only, never part of the matrix, whose bytes stay the same run
    /// to run.
    #[serde(skip)]
    pub wall_ms: u64,
}

impl Cell {
    /// The cell of one judged run, for which the scenario expects
    /// `expected` (`None`: it states nothing for this rung).
    pub fn of(judged: &Judged, expected: Option<Verdict>) -> Cell {
        Cell {
            rung: judged.rung.clone(),
            scenario: judged.scenario.clone(),
            verdict: judged.verdict,
            expected,
            seed: judged.seed,
            damage: judged.results.damage.clone(),
            cut_short: judged.results.cut_short.clone().map(CutShortEntry::new),
            findings: format!(
                "seed {}\n{} / {}: {}\n{}",
                judged.seed,
                judged.scenario,
                judged.rung,
                judged.verdict,
                describe_checks(judged)
            ),
            wall_ms: 0,
            server: None,
        }
    }

    /// Whether the verdict differs from a stated expectation.
    pub fn differs(&self) -> bool {
        self.expected.is_some_and(|e| e != self.verdict)
    }

    /// Whether the verdict is the expected one, or nothing is expected.
    pub fn as_expected(&self) -> bool {
        !self.differs()
    }
}

/// The whole of `safety-matrix.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MatrixDoc {
    /// Every cell, in the order given.
    pub cells: Vec<Cell>,
}

/// Whether every cell's verdict is the expected one (the suite's exit 0).
pub fn all_as_expected(cells: &[Cell]) -> bool {
    cells.iter().all(Cell::as_expected)
}

/// Which cells a suite runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grid {
    /// Each scenario against the rungs it names (`locklab suite`): the
    /// safety matrix, every cell with its expectation.
    Named,
    /// Each scenario against every rung of the ladder and every library
    /// rung (`suite --all`); a rung the scenario does not name runs on its deployment, faults and
    /// resource as written, and has no expectation.
    All,
}

/// What a suite produced: every cell, or (when interrupted) the cells
/// finished before the stop.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteRun {
    /// Which cells were asked for.
    pub grid: Grid,
    /// The finished cells, in matrix order (scenario by scenario, each
    /// scenario's rungs in its own order, or in ladder order for the full
    /// grid).
    pub cells: Vec<Cell>,
    /// Every cell asked for, as (scenario, rung), in the same order.
    pub planned: Vec<(String, String)>,
    /// Set when the suite was asked to stop: then some planned cells are
    /// missing from `cells`.
    pub interrupted: Option<Cause>,
}

impl SuiteRun {
    /// The planned cells that have no result, as (scenario, rung).
    pub fn not_run(&self) -> Vec<(String, String)> {
        self.planned
            .iter()
            .filter(|(scenario, rung)| {
                !self
                    .cells
                    .iter()
                    .any(|c| &c.scenario == scenario && &c.rung == rung)
            })
            .cloned()
            .collect()
    }
}
