//! What the search within the rungs' promises found (`scenarios/findings/`,
//! `reports/findings.md`): every finding is a scenario that says how it
//! was found, gives each rung it names its pinned verdict under every
//! seed, and shows a peer surviving the same fault. And the case the
//! search shrank it from, generated again, still fails the same way.

use crate::common;

use model::scenario::Scenario;
use model::verdict::Verdict;
use sim::cell::run_cell;
use sim::explore::{FaultMode, assumptions};
use std::path::PathBuf;

fn findings() -> Vec<(PathBuf, Scenario)> {
    common::scenarios_in("findings")
}

#[test]
fn every_finding_says_how_it_was_found_and_a_peer_survives_its_fault() {
    let found = findings();
    assert!(!found.is_empty(), "scenarios/findings/ is empty");
    for (file, scenario) in &found {
        assert!(
            scenario.description.contains("--faults assumed"),
            "{}: does not say the search found it",
            file.display()
        );
        assert!(
            scenario.expect.values().any(|v| *v == Verdict::Safe),
            "{}: no rung survives the fault",
            file.display()
        );
    }
}

#[test]
fn every_finding_gives_each_rung_its_pinned_verdict_under_every_seed() {
    for (_, scenario) in findings() {
        common::assert_pinned_verdicts(&scenario);
    }
}

#[test]
fn rslocks_silent_master_is_within_rslocks_assumptions_and_deadlocks_it() {
    // The case the property search first failed on, shrunk: one client,
    // one master of three without power for good, a reply timeout as long
    // as the TTL. It lies within rslock's written assumptions (a minority
    // of masters lost), so the deadlock breaks a promise.
    let text = "rungs = [\"rslock\"]\nduration_ms = 10000\n\
        [topology]\nkind = \"independent\"\nmasters = 3\n\
        [lock]\nttl_ms = 500\nmax_wait_ms = 3000\nresponse_timeout_ms = 500\n\
        [[clients]]\n\n\
        [[faults]]\nkind = \"crash\"\nat_ms = 0\ntarget = \"redis-1\"\nhow = \"power-loss\"\n";
    let scenario = Scenario::parse(text, "silent-master.toml", "s").expect("loads");
    let judged = run_cell(&scenario, "rslock", 1).expect("runs");
    assert_eq!(judged.verdict, Verdict::Deadlock, "{:?}", judged.results);
    let rslock = assumptions("rslock").expect("written");
    let mut case = sim::explore::generate("rslock", &FaultMode::Assumed, 1);
    case.topology = scenario.topology.clone();
    case.lock = scenario.lock.clone();
    case.clients = scenario.clients.clone();
    case.faults = scenario.faults.clone();
    assert_eq!(rslock.admits(&case), Ok(()));
}
