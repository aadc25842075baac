//! The libraries' reported bugs (`scenarios/libraries/`): every scenario
//! there gives each rung it names the verdict its `expect` table pins,
//! under every seed it lists, and each cites the report it comes from.

use crate::common;

use model::history::{Event, EventKind, Op, Outcome};
use model::scenario::Scenario;
use model::verdict::Verdict;
use sim::cell::run_cell;
use std::path::PathBuf;

fn library_scenarios() -> Vec<(PathBuf, Scenario)> {
    common::scenarios_in("libraries")
}

#[test]
fn at_least_six_reported_bugs_are_scenarios_each_citing_its_report() {
    let scenarios = library_scenarios();
    assert!(scenarios.len() >= 6, "{} scenarios", scenarios.len());
    for (file, scenario) in &scenarios {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(
            text.contains("https://github.com/"),
            "{}: cites no report",
            file.display()
        );
        for rung in &scenario.rungs {
            assert!(
                scenario.expect.contains_key(rung),
                "{}: no expectation for {rung}",
                scenario.name
            );
        }
    }
}

#[test]
fn every_library_scenario_gives_each_rung_its_pinned_verdict_under_every_seed() {
    for (_, scenario) in library_scenarios() {
        common::assert_pinned_verdicts(&scenario);
    }
}

#[test]
fn every_library_rung_is_named_by_some_shipped_scenario() {
    let dir = common::scenarios_dir();
    let scenarios = sim::suite::load_all(&dir).expect("load");
    for rung in locks::LIBRARIES {
        assert!(
            scenarios
                .iter()
                .any(|s| s.rungs.iter().any(|r| r == rung.id)),
            "no scenario names {}",
            rung.id
        );
    }
}

/// A holder that works 300 ms and a waiter that comes 50 ms after it, with
/// an acquire timeout (and so a `BLPOP` timeout) of 4 s.
const SIGNALLED_HAND_OFF: &str = r#"
description = "python-redis-lock: the release's signal wakes the waiter"
rungs = ["python-redis-lock"]
duration_ms = 6000

[lock]
ttl_ms = 2000
max_wait_ms = 4000
retry_ms = 20

[[clients]]
count = 1
cycles = 1
critical_section_ms = 300

[[clients]]
count = 1
cycles = 1
start_ms = 50
critical_section_ms = 50

[expect]
python-redis-lock = "safe"
"#;

/// When `client`'s first `op` was invoked and when it completed (ok), µs.
fn first_op(events: &[Event], client: usize, op: Op) -> (u64, u64) {
    let mut ours = events.iter().filter_map(|e| match &e.kind {
        EventKind::Invoke {
            client: c, op: o, ..
        } if *c == client && *o == op => Some((e.at_us, None)),
        EventKind::Complete {
            client: c,
            op: o,
            outcome,
            ..
        } if *c == client && *o == op => Some((e.at_us, Some(*outcome))),
        _ => None,
    });
    let (invoked, _) = ours.next().expect("the invoke");
    let (completed, outcome) = ours.next().expect("the completion");
    assert_eq!(outcome, Some(Outcome::Ok), "client {client}'s {op:?}");
    (invoked, completed)
}

#[test]
fn a_python_redis_lock_waiter_is_woken_by_the_release_signal_long_before_its_blpop_times_out() {
    let scenario = Scenario::parse(
        SIGNALLED_HAND_OFF,
        "signalled-hand-off.toml",
        "signalled-hand-off",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let judged = run_cell(&scenario, "python-redis-lock", 1).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(judged.verdict, Verdict::Safe, "{:?}", judged.results);
    let events = judged.history.events();
    let (released_at, _) = first_op(events, 0, Op::Release);
    let (waited_from, acquired_at) = first_op(events, 1, Op::Acquire);
    assert!(
        acquired_at > released_at,
        "the waiter got in before the release"
    );
    assert!(
        acquired_at - released_at < 50_000,
        "the waiter acquired {} µs after the release began: not woken by its signal",
        acquired_at - released_at
    );
    assert!(
        acquired_at - waited_from < 1_000_000,
        "the waiter waited {} µs, near its 4 s BLPOP timeout",
        acquired_at - waited_from
    );
    // One hand-off, one wake-up: the one BLPOP that popped the signal.
    assert_eq!(
        judged.results.damage.waiting.wakeups_per_handoff,
        Some(1.0),
        "{:?}",
        judged.results.damage.waiting
    );
}

#[test]
fn rslock_acquires_on_the_two_masters_left_when_the_third_is_killed_for_good() {
    // rslock sets no per-node timeout, so a master that stays silent costs
    // every round its reply timeout (here the whole TTL) and no `lock()`
    // could succeed. A killed server's machine refuses the dial at once,
    // as on real redis-server, and the client locks on the other two.
    let text = "rungs = [\"rslock\"]\nduration_ms = 6000\n\
        [topology]\nkind = \"independent\"\nmasters = 3\n\
        [lock]\nttl_ms = 500\nmax_wait_ms = 3000\nretry_ms = 50\nresponse_timeout_ms = 500\n\
        [[clients]]\ncycles = 2\n\n\
        [[faults]]\nkind = \"crash\"\ntarget = \"redis-0\"\non = { client = 0, cycle = 1, point = \"acquire-mid\" }\n";
    let scenario = Scenario::parse(text, "rslock-lost-master.toml", "s").expect("loads");
    let judged = run_cell(&scenario, "rslock", 1).expect("runs");
    assert_eq!(judged.verdict, Verdict::Safe, "{:?}", judged.results);
    let grants = judged
        .history
        .events()
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::Complete {
                    op: Op::Acquire,
                    outcome: Outcome::Ok,
                    ..
                }
            )
        })
        .count();
    assert_eq!(grants, 2, "both cycles lock on the two live masters");
}
