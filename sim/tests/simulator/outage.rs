//! An acquire that starts during an outage gets the lock after the
//! failover, within its `max_wait_ms`: `scenarios/acquire-during-outage.toml`
//! run on the simulator for every rung it names, under several seeds. And
//! an acquire whose `SET` landed while its reply was lost recognises the
//! key as its own when it tries again.

use crate::common;

use model::fault::FaultKind;
use model::history::{Event, EventKind, Op, Outcome, Phase};
use model::scenario::Scenario;
use sim::cell::run_cell;

fn scenario() -> Scenario {
    common::scenario("acquire-during-outage")
}

/// When the failover's phase `phase` was recorded, µs.
fn failover(events: &[Event], phase: Phase) -> u64 {
    events
        .iter()
        .find(|e| {
            matches!(&e.kind, EventKind::Fault { fault: FaultKind::Failover, phase: p, .. } if *p == phase)
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

/// One client, two cycles; right after its first release, the replies from
/// Redis to it are lost for 400 ms, so the `SET` of its second acquire
/// lands but its answer never comes. The TTL outlasts `max_wait`: an
/// acquire that took its own key for a stranger's would wait in vain.
/// (`get-check-del` shares the acquire of `set-nx-px` and `lua-release`;
/// its `release-mid` comes before its `DEL`, whose reply would be lost.)
const LOST_REPLY: &str = r#"
rungs = ["set-nx-px", "lua-release", "fenced"]
duration_ms = 10000

[lock]
ttl_ms = 5000
max_wait_ms = 3000
retry_ms = 20
response_timeout_ms = 200

[[clients]]
count = 1
cycles = 2

[[faults]]
kind = "partition"
on = { client = 0, cycle = 1, point = "release-mid" }
a = ["redis-0"]
b = ["client-0"]
oneway = true
duration_ms = 400

[expect]
set-nx-px = "safe"
lua-release = "safe"
fenced = "safe"
"#;

#[test]
fn an_acquire_whose_set_landed_without_an_answer_recognises_the_key_as_its_own() {
    let s = Scenario::parse(LOST_REPLY, "lost-reply.toml", "lost-reply").expect("valid");
    for rung in &s.rungs {
        let judged = run_cell(&s, rung, 1).unwrap_or_else(|e| panic!("{rung}: {e}"));
        assert_eq!(
            Some(&judged.verdict),
            s.expect.get(rung),
            "{rung}: {:?}",
            judged.results
        );
        let events = judged.history.events();
        let healed = events
            .iter()
            .find(|e| {
                matches!(
                    e.kind,
                    EventKind::Fault {
                        phase: Phase::End,
                        ..
                    }
                )
            })
            .expect("the partition heals")
            .at_us;
        let (invoke, complete) = events
            .iter()
            .filter(|e| match &e.kind {
                EventKind::Invoke { op, n, .. } | EventKind::Complete { op, n, .. } => {
                    *op == Op::Acquire && *n == 2
                }
                _ => false,
            })
            .fold((None, None), |(i, c), e| match e.kind {
                EventKind::Invoke { .. } => (Some(e), c),
                _ => (i, Some(e)),
            });
        let (invoke, complete) = (invoke.expect("invoked"), complete.expect("completed"));
        // The lost SET: the node set the key while the reply could not come.
        let landed = events
            .iter()
            .filter(|e| e.at_us >= invoke.at_us && e.at_us < healed)
            .find_map(|e| match &e.kind {
                EventKind::Server { key, value, .. } if key == &s.lock.key => value.clone(),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{rung}: the second SET did not land"));
        let EventKind::Complete {
            outcome,
            token,
            error,
            ..
        } = &complete.kind
        else {
            panic!("{rung}: not a completion");
        };
        assert_eq!(*outcome, Outcome::Ok, "{rung}: {error:?}");
        assert!(complete.at_us > healed, "{rung}");
        assert_eq!(token.as_deref(), Some(landed.as_str()), "{rung}");
        if rung == "fenced" {
            let EventKind::Complete { fence, .. } = &complete.kind else {
                unreachable!()
            };
            assert_eq!(*fence, Some(2), "the lost grant's fencing token");
        }
    }
}
