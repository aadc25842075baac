//! The engines' results handed to the `report` crate: the views its pages,
//! JUnit reports and tour text are rendered from, filled from what the
//! simulator's search and tour return (the report crate cannot name the
//! engine, so the command line does it).

use sim::explore::search::{self as s, Finding, Outcome, SearchConfig};
use std::path::Path;

/// A search as its page and JUnit report show it; `path` is where its
/// first counterexample was written (then the view carries the command
/// that replays it).
pub fn search<'a>(
    config: &'a SearchConfig,
    outcome: &'a Outcome,
    path: Option<&Path>,
) -> report::search::Search<'a> {
    report::search::Search {
        rung: &config.rung,
        faults: config.mode.to_string(),
        limit: config.limit,
        seed: config.seed,
        shard: config.shard,
        shrink: config.shrink,
        shrink_runs: config.shrink_runs,
        stats: outcome.stats,
        interrupted: outcome.interrupted,
        first: outcome.first.as_ref().map(|f| counterexample(f, path)),
    }
}

/// A search's first counterexample, as the reports show it.
fn counterexample<'a>(f: &'a Finding, path: Option<&Path>) -> report::search::Counterexample<'a> {
    let size = |case: &sim::explore::case::Case| report::search::CaseSize {
        faults: case.fault_names(),
        clients: case.clients.len(),
    };
    report::search::Counterexample {
        seed: f.seed,
        verdict: f.verdict,
        generated: size(&f.original),
        shrunk: size(&f.shrunk),
        shrink_runs: f.shrink_runs,
        shrink_note: s::shrink_note(f),
        judged: &f.judged,
        replay: path.map(|p| s::replay_command(p, f)),
    }
}

/// A stop of the tour, as its text tells it.
pub fn tour_stop(stop: &sim::tour::Stop) -> report::tour::Stop<'_> {
    report::tour::Stop {
        rung: stop.rung,
        scenario: &stop.scenario,
        broken: &stop.broken,
        next: stop.next.as_ref(),
    }
}

/// A library rung's chapter of the tour, as its text tells it.
pub fn library_stop(stop: &sim::tour::LibraryStop) -> report::tour::LibraryStop<'_> {
    report::tour::LibraryStop {
        rung: stop.rung,
        runs: &stop.runs,
    }
}
