//! # Exploring fault schedules: swarm search, assumptions, shrinking
//!
//! Hand-written scenarios show the flaws we know. This module searches for
//! the ones nobody wrote down:
//!
//! 1. [`generate`](mod@generate) turns a seed into a [`Case`] (a workload, a topology and
//!    a fault schedule), swarm style: each case draws from a random subset
//!    of the fault kinds ([`FaultKind`]). [`FaultMode::Assumed`] draws only
//!    schedules within the rung's [`assumptions`](mod@assumptions).
//! 2. [`search`](mod@search) runs many cases (split into shards by seed), judges each
//!    with the usual checkers, and keeps the first counterexample.
//! 3. [`shrink`](mod@shrink) cuts a counterexample down (fewer faults, clients, cycles,
//!    shorter durations) while it still fails the same way; [`strategy`]
//!    offers the same cases and the same shrinking to proptest.
//! 4. A case maps to a [`model::scenario::Scenario`], so a counterexample is
//!    an ordinary scenario file that `locklab run` replays byte for byte.
//!
//! [`speed`] measures how fast all this goes.

pub mod assumptions;
pub mod case;
pub mod generate;
pub mod kinds;
pub mod search;
pub mod service_assumptions;
pub mod shrink;
pub mod speed;
pub mod strategy;

pub use assumptions::{Assumptions, assumptions};
pub use case::Case;
pub use generate::generate;
pub use kinds::{FaultKind, FaultMode};
pub use search::{Finding, Limit, Outcome, SearchConfig, Stats, search};
pub use shrink::{shrink, simplifications};
