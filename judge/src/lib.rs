//! The judge: what a history says about a lock, read from the history
//! alone (Jepsen's checker).
//!
//! [`check`] holds the checkers (mutual exclusion on holds in real-time
//! order, damage to the guarded resource, liveness); [`verdict`] combines
//! their results into a cell's verdict and writes `verdict.json`;
//! [`judged`] is a run with its judgement ([`judged::Judged`], what the
//! engines return) and its findings told for people; [`matrix`] is the
//! safety matrix's data: a suite's cells and what it produced. The judge
//! depends on the `model` crate only: it cannot tell, and need not know,
//! whether the history came from the simulator or from real servers.

pub mod check;
pub mod judged;
pub mod matrix;
pub mod verdict;
