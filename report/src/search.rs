//! A search for counterexamples (`locklab explore`) as its page and its
//! JUnit report show it: what was searched, the totals, and the first
//! counterexample with its judged run. The command line fills it from the
//! engine's outcome.

use judge::judged::Judged;
use model::interrupt::Cause;
use model::search::{Limit, Stats};
use model::verdict::Verdict;

/// A search, as the reports show it.
#[derive(Debug, Clone)]
pub struct Search<'a> {
    /// The rung searched.
    pub rung: &'a str,
    /// The faults drawn, as `--faults` names them: `all`, `assumed` or a
    /// comma-separated list of kinds.
    pub faults: String,
    /// How long it went on.
    pub limit: Limit,
    /// The first seed.
    pub seed: u64,
    /// This shard's index and the number of shards.
    pub shard: (u64, u64),
    /// Whether the first counterexample was shrunk (not `--no-shrink`).
    pub shrink: bool,
    /// The most runs the shrinker may spend.
    pub shrink_runs: usize,
    /// The totals.
    pub stats: Stats,
    /// Set when the user asked the search to stop: the totals count the
    /// cases finished before.
    pub interrupted: Option<Cause>,
    /// The first counterexample, if any.
    pub first: Option<Counterexample<'a>>,
}

/// A search's first counterexample.
#[derive(Debug, Clone)]
pub struct Counterexample<'a> {
    /// The case's seed (also the run's).
    pub seed: u64,
    /// The verdict of the case as generated (`violated` or `deadlock`).
    pub verdict: Verdict,
    /// The case as generated.
    pub generated: CaseSize,
    /// The case after shrinking (as generated when not shrunk).
    pub shrunk: CaseSize,
    /// Runs the shrinker spent.
    pub shrink_runs: usize,
    /// What to say when an interruption cut the shrinking short.
    pub shrink_note: Option<String>,
    /// The shrunk case, run and judged.
    pub judged: &'a Judged,
    /// The command that replays it from the scenario file it was written
    /// to; `None` when it was not written.
    pub replay: Option<String>,
}

/// How big a case is: its faults (by kind, in order) and its clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseSize {
    /// The kinds of its faults, in order (`pause`, `crash`, ...).
    pub faults: Vec<String>,
    /// How many clients it has.
    pub clients: usize,
}
