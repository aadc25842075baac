//! An acquire that starts during an outage gets the lock after the
//! failover, within its `max_wait_ms`: `scenarios/acquire-during-outage.toml`
//! run on the simulator for every rung it names, under several seeds.

use sim::cell::run_cell;
use sim::history::{Event, EventKind, FaultName, Op, Outcome, Phase};
use sim::scenario::Scenario;
use std::path::PathBuf;

fn scenario() -> Scenario {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/acquire-during-outage.toml");
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// When the failover's phase `phase` was recorded, µs.
fn failover(events: &[Event], phase: Phase) -> u64 {
    events
        .iter()
        .find(|e| {
            matches!(&e.kind, EventKind::Fault { fault: FaultName::Failover, phase: p, .. } if *p == phase)
        })
        .unwrap_or_else(|| panic!("no failover {phase:?} in the history"))
        .at_us
}

/// The invoke and the completion of `client`'s first acquire.
fn first_acquire(events: &[Event], client: usize) -> (&Event, &Event) {
    let mut acquires = events.iter().filter(|e| match &e.kind {
        EventKind::Invoke { client: c, op, .. } | EventKind::Complete { client: c, op, .. } => {
            *c == client && *op == Op::Acquire
        }
        _ => false,
    });
    let invoke = acquires.next().expect("the acquire's invoke");
    let complete = acquires.next().expect("the acquire's completion");
    assert!(matches!(invoke.kind, EventKind::Invoke { .. }));
    (invoke, complete)
}

#[test]
fn a_client_that_starts_an_acquire_during_an_outage_acquires_after_the_failover_within_max_wait() {
    let s = scenario();
    let max_wait_us = s.lock.max_wait_ms * 1_000;
    let clients: usize = s.clients.iter().map(|g| g.count).sum();
    for rung in &s.rungs {
        for seed in 1..=4 {
            let judged = run_cell(&s, rung, seed).unwrap_or_else(|e| panic!("{rung}/{seed}: {e}"));
            let events = judged.history.events();
            let down = failover(events, Phase::Start);
            let promoted = failover(events, Phase::End);
            for client in 0..clients {
                let (invoke, complete) = first_acquire(events, client);
                let at = format!("{rung}, seed {seed}, client {client}");
                assert!(
                    down <= invoke.at_us && invoke.at_us < promoted,
                    "{at}: the acquire did not start while there was no master"
                );
                let EventKind::Complete { outcome, error, .. } = &complete.kind else {
                    panic!("{at}: not a completion");
                };
                assert_eq!(*outcome, Outcome::Ok, "{at}: {error:?}");
                assert!(complete.at_us >= promoted, "{at}: acquired with no master");
                assert!(
                    complete.at_us - invoke.at_us <= max_wait_us,
                    "{at}: acquired only after max_wait"
                );
            }
            assert_eq!(
                Some(&judged.verdict),
                s.expect.get(rung),
                "{rung}, seed {seed}: {:?}",
                judged.results
            );
        }
    }
}
