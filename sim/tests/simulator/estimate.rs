//! The cost estimate printed before long runs: it grows with everything
//! that makes a run longer, it warns about a big scenario, and it keeps
//! quiet about the scenarios shipped with locklab. Nothing here runs a
//! simulation.

use crate::common;

use model::scenario::Scenario;
use sim::estimate::{self, NOTE_ABOVE, expected_simulated_ms, run_note, run_wall, suite_note};
use std::time::Duration;

/// A scenario of `clients` clients on `masters` independent masters (1:
/// standalone) that runs `cycles` cycles with `think_ms` between them for
/// up to `duration_ms`, under `seeds` seeds and the given rungs.
fn scenario(
    duration_ms: u64,
    clients: usize,
    masters: usize,
    cycles: u32,
    think_ms: u64,
    seeds: usize,
    rungs: &[&str],
) -> Scenario {
    let kind = if masters == 1 {
        "standalone"
    } else {
        "independent"
    };
    let text = format!(
        "rungs = {rungs:?}\nseeds = {:?}\nduration_ms = {duration_ms}\n\
         [topology]\nkind = \"{kind}\"\nmasters = {masters}\n\
         [[clients]]\ncount = {clients}\ncycles = {cycles}\nthink_ms = {think_ms}\n\
         critical_section_ms = 5\n",
        (1..=seeds as u64).collect::<Vec<_>>()
    );
    Scenario::parse(&text, "big.toml", "big").unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn wall(s: &Scenario) -> Duration {
    estimate::estimate(s, &s.rungs, s.seeds.len()).total
}

/// A scenario's size: duration ms, clients, masters, cycles, think ms,
/// seeds.
type Size = (u64, usize, usize, u32, u64, usize);

#[test]
fn the_estimate_never_falls_when_a_scenario_grows() {
    let base = || -> Size { (2_000, 8, 1, 4, 500, 1) };
    let of = |(d, c, m, cy, t, seeds): Size| wall(&scenario(d, c, m, cy, t, seeds, &["set-nx-px"]));
    let b = base();
    let reference = of(b);
    // Each knob alone, up a ladder of values: never less, and the
    // obviously costlier ones strictly more.
    let ladders: [Vec<Size>; 6] = [
        [1, 100, 2_000, 60_000, 3_600_000]
            .map(|d| (d, b.1, b.2, b.3, b.4, b.5))
            .to_vec(),
        [1, 2, 8, 64, 256]
            .map(|c| (b.0, c, b.2, b.3, b.4, b.5))
            .to_vec(),
        [1, 2, 5, 9].map(|m| (b.0, b.1, m, b.3, b.4, b.5)).to_vec(),
        [0, 1, 4, 1_000, u32::MAX]
            .map(|cy| (b.0, b.1, b.2, cy, b.4, b.5))
            .to_vec(),
        [0, 10, 500, 3_600_000]
            .map(|t| (b.0, b.1, b.2, b.3, t, b.5))
            .to_vec(),
        [1, 2, 5, 100]
            .map(|s| (b.0, b.1, b.2, b.3, b.4, s))
            .to_vec(),
    ];
    for ladder in ladders {
        let costs: Vec<Duration> = ladder.iter().map(|p| of(*p)).collect();
        for pair in costs.windows(2) {
            assert!(pair[0] <= pair[1], "{ladder:?}: {costs:?}");
        }
        assert!(costs[0] < costs[costs.len() - 1], "{ladder:?}: {costs:?}");
    }
    // More rungs cost more too.
    let one = wall(&scenario(2_000, 8, 1, 4, 500, 1, &["set-nx-px"]));
    let three = wall(&scenario(
        2_000,
        8,
        1,
        4,
        500,
        1,
        &["set-nx-px", "lua-release", "watchdog"],
    ));
    assert!(one < three && reference == one, "{one:?} {three:?}");
}

#[test]
fn a_run_lasts_at_most_its_duration_and_at_least_until_its_clients_are_done() {
    // Idle clients: the run ends when their cycles do.
    let quick = scenario(60_000, 2, 1, 1, 0, 1, &["set-nx-px"]);
    assert!(expected_simulated_ms(&quick, "set-nx-px") < 1_000);
    // Think times beyond the duration: the duration.
    let slow = scenario(60_000, 2, 1, 10, 60_000, 1, &["set-nx-px"]);
    assert_eq!(expected_simulated_ms(&slow, "set-nx-px"), 60_000);
    // Contention: 256 clients taking turns last far longer than one
    // client's own cycle.
    let crowd = scenario(60_000, 256, 1, 1, 0, 1, &["set-nx-px"]);
    assert!(expected_simulated_ms(&crowd, "set-nx-px") >= 5_000);
    // ...unless they do not lock at all.
    let free = scenario(60_000, 256, 1, 1, 0, 1, &["no-lock"]);
    assert!(expected_simulated_ms(&free, "no-lock") < 1_000);
}

#[test]
fn a_big_scenario_gets_a_note_naming_its_size_and_the_time_to_expect() {
    let big = scenario(
        3_600_000,
        256,
        1,
        100,
        36_000,
        5,
        &["set-nx-px", "lua-release", "watchdog"],
    );
    let note = run_note("scenarios/big.toml", &big, &big.rungs, big.seeds.len())
        .expect("a note for an hour of 256 clients");
    assert!(
        note.starts_with(
            "scenarios/big.toml: simulates 60 min with 256 clients for 5 seeds × 3 rungs; expect about "
        ),
        "{note}"
    );
    assert!(note.ends_with(" days") || note.ends_with(" h"), "{note}");
    // One seed of one rung of a small scenario: no note.
    let small = scenario(2_000, 4, 1, 4, 500, 1, &["set-nx-px"]);
    assert_eq!(run_note("small.toml", &small, &small.rungs, 1), None);
    assert!(run_wall(&small, "set-nx-px") < NOTE_ABOVE);
    // The suite spreads the rungs over its workers: the note names the
    // longest job when the workers outnumber the rungs.
    let one_worker = suite_note("big.toml", &big, &big.rungs, 1).expect("a suite note");
    let many_workers = suite_note("big.toml", &big, &big.rungs, 64).expect("a suite note");
    assert_ne!(one_worker, many_workers);
}

#[test]
fn no_scenario_shipped_with_locklab_gets_a_note() {
    let dir = common::scenarios_dir();
    let scenarios = sim::suite::load_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    assert!(scenarios.len() >= 18);
    for s in &scenarios {
        let file = s.name.clone();
        assert_eq!(run_note(&file, s, &s.rungs, s.seeds.len()), None, "{file}");
        for workers in [1, 2] {
            assert_eq!(suite_note(&file, s, &s.rungs, workers), None, "{file}");
        }
    }
}

#[test]
fn durations_read_as_people_say_them() {
    for (secs, text) in [
        (0, "1 s"),
        (40, "40 s"),
        (240, "4 min"),
        (3 * 3600, "3 h"),
        (5 * 86_400, "5 days"),
    ] {
        assert_eq!(estimate::human(Duration::from_secs(secs)), text);
    }
}
