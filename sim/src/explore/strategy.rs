//! proptest strategies over cases, with shrinking that walks
//! [`simplifications`].
//!
//! A tree starts from the case of a seed drawn by proptest's runner, so a
//! failure proptest reports (and its regression file keeps) names that
//! seed inside the case; the shrunk case proptest prints is the same kind
//! of [`Case`] that `locklab explore` writes out.

use super::case::Case;
use super::generate::{SEED_LIMIT, generate};
use super::kinds::FaultMode;
use super::shrink::simplifications;
use proptest::strategy::{NewTree, Strategy, ValueTree};
use proptest::test_runner::TestRunner;

/// Cases of one rung under one fault mode.
#[derive(Debug, Clone)]
pub struct CaseStrategy {
    rung: String,
    mode: FaultMode,
}

/// The strategy of cases for `rung` under `mode`.
pub fn cases(rung: &str, mode: FaultMode) -> CaseStrategy {
    CaseStrategy {
        rung: rung.to_string(),
        mode,
    }
}

impl Strategy for CaseStrategy {
    type Tree = CaseTree;
    type Value = Case;

    fn new_tree(&self, runner: &mut TestRunner) -> NewTree<Self> {
        let seed = (0..SEED_LIMIT).new_tree(runner)?.current();
        Ok(CaseTree::new(generate(&self.rung, &self.mode, seed)))
    }
}

/// A case and the way down to simpler ones.
#[derive(Debug, Clone)]
pub struct CaseTree {
    accepted: Case,
    current: Case,
    candidates: Vec<Case>,
    next: usize,
}

impl CaseTree {
    /// A tree rooted at `case`.
    pub fn new(case: Case) -> CaseTree {
        CaseTree {
            accepted: case.clone(),
            current: case,
            candidates: Vec::new(),
            next: 0,
        }
    }

    fn advance(&mut self) -> bool {
        match self.candidates.get(self.next) {
            Some(c) => {
                self.current = c.clone();
                self.next += 1;
                true
            }
            None => {
                self.current = self.accepted.clone();
                false
            }
        }
    }
}

impl ValueTree for CaseTree {
    type Value = Case;

    fn current(&self) -> Case {
        self.current.clone()
    }

    /// Called when `current` failed: it becomes the case to beat, and its
    /// first simpler neighbour is tried next.
    fn simplify(&mut self) -> bool {
        self.accepted = self.current.clone();
        self.candidates = simplifications(&self.accepted);
        self.next = 0;
        self.advance()
    }

    /// Called when `current` passed: try the next neighbour of the last
    /// failing case.
    fn complicate(&mut self) -> bool {
        self.advance()
    }
}
