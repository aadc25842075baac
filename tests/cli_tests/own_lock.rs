//! The example of a lock defined outside `locks/` (`examples/own_lock/`):
//! `cargo test` builds the example itself, and this test runs its logic
//! (the same file) through the public API: registered as a rung, the
//! suite over the scenarios that name `lua-release` (the part it plays),
//! and a short search. About 5 s in release on two CPUs.

#[path = "../../examples/own_lock/lock.rs"]
mod lock;

use model::verdict::Verdict;
use std::path::Path;

#[test]
fn a_lock_defined_outside_the_ladder_runs_through_the_suite_and_explore() {
    let id = lock::register();
    assert_eq!(locks::rung(id).map(|r| r.number), Some(u8::MAX));
    let scenarios = sim::suite::load_all(&Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios"))
        .expect("scenarios");
    let suite = lock::suite(&scenarios, 2).expect("suite");
    let verdict_in = |name: &str| {
        suite
            .cells
            .iter()
            .find(|c| c.scenario == name && c.rung == id)
            .map(|c| (c.verdict, c.expected))
    };
    // Its cells carry lua-release's expectations: it shares its flaw (a
    // lease that expires under a long critical section) and survives a
    // pause between its release's steps (it has one step).
    assert_eq!(
        verdict_in("long-critical-section"),
        Some((Verdict::Violated, Some(Verdict::Violated)))
    );
    assert_eq!(
        verdict_in("pause-at-release-mid"),
        Some((Verdict::Safe, Some(Verdict::Safe)))
    );
    assert!(suite.cells.iter().all(|c| c.rung == id));
    // The search runs the same lock; with every fault kind allowed it
    // finds a violation among a few cases (a pause past the TTL).
    let outcome = lock::explore(16, 2);
    assert_eq!(outcome.stats.cases, 16);
    let found = outcome.first.expect("a counterexample");
    assert_eq!(found.shrunk.rung, id);
    assert_eq!(found.judged.verdict, Verdict::Violated);
}
