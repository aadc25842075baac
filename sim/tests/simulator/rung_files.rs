//! The rung file format is complete: the ladder's `lua-release`,
//! `reentrant`, `watchdog` and `redlock`, written as rung files
//! (`rungs/*.toml`) and run by the generic file-driven lock, give the
//! built-in rung's verdict, damage figures and history in every scenario
//! and seed where the built-in rung appears. And the file is what runs: a
//! copy of `lua-release.toml` whose release skips the owner check is
//! violated where the built-in is safe.
//!
//! What is compared, per (scenario, seed): the verdict, every damage
//! figure, and the history as JSON Lines byte for byte (a history does
//! not carry the rung's name, so the histories of a faithful file are the
//! same). About 60 runs on worker threads: about 10 s in release on two
//! CPUs.

use crate::common;

use model::scenario::Scenario;
use model::verdict::Verdict;
use sim::cell::{Judged, run_cell};

/// (rung file, the built-in rung it plays)
const FILES: [(&str, &str); 4] = [
    ("lua-release.toml", "lua-release"),
    ("reentrant.toml", "reentrant"),
    ("watchdog.toml", "watchdog"),
    ("redlock.toml", "redlock"),
];

use common::root;

fn scenarios() -> Vec<Scenario> {
    sim::suite::load_all(&root().join("scenarios")).unwrap_or_else(|e| panic!("{e}"))
}

fn load_rung(file: &str) -> &'static str {
    sim::rung_file::load(&root().join("rungs").join(file)).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `cells` on worker threads; the results in the same order.
fn run_all(cells: &[(Scenario, String, u64)]) -> Vec<Judged> {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some((scenario, rung, seed)) = cells.get(i) else {
                        return;
                    };
                    let judged = run_cell(scenario, rung, *seed)
                        .unwrap_or_else(|e| panic!("{} / {rung} / {seed}: {e}", scenario.name));
                    results.lock().expect("results").push((i, judged));
                }
            });
        }
    });
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, j)| j).collect()
}

#[test]
fn each_ladder_rung_written_as_a_rung_file_gets_the_same_verdict_damage_and_history() {
    let mut cells = Vec::new();
    let mut compared = Vec::new();
    for (file, built_in) in FILES {
        let id = load_rung(file);
        for scenario in scenarios() {
            if !scenario.rungs.iter().any(|r| r == built_in) {
                continue;
            }
            let adopted = sim::rung_file::adopt(&scenario, id).expect("adopts");
            assert_eq!(
                adopted.expect.get(id),
                scenario.expect.get(built_in),
                "the file takes the part of {built_in} in {}",
                scenario.name
            );
            for &seed in &scenario.seeds {
                compared.push((scenario.name.clone(), built_in, id, seed));
                cells.push((adopted.clone(), built_in.to_string(), seed));
                cells.push((adopted.clone(), id.to_string(), seed));
            }
        }
    }
    assert!(compared.len() >= 25, "{} comparisons", compared.len());
    let judged = run_all(&cells);
    for (pair, (name, built_in, id, seed)) in judged.chunks(2).zip(&compared) {
        let (ladder, file) = (&pair[0], &pair[1]);
        let at = format!("{name} seed {seed}: {built_in} vs {id}");
        assert_eq!(ladder.verdict, file.verdict, "{at}: verdict");
        assert_eq!(ladder.results.damage, file.results.damage, "{at}: damage");
        let (a, b) = (ladder.history.to_jsonl(), file.history.to_jsonl());
        if a != b {
            let first = a.lines().zip(b.lines()).position(|(x, y)| x != y);
            panic!("{at}: histories differ at event {first:?}");
        }
    }
}

/// `lua-release.toml` with a release that deletes whatever lock is there.
fn without_owner_check() -> String {
    let text = std::fs::read_to_string(root().join("rungs/lua-release.toml")).expect("reads");
    let checked = "if redis.call('get', KEYS[1]) == ARGV[1] then\n    return redis.call('del', KEYS[1])\nelse\n    return 0\nend\n";
    let (head, tail) = text.split_once("[release]").expect("a release");
    let release = tail.replacen(checked, "return redis.call('del', KEYS[1])\n", 1);
    assert_ne!(release, tail, "the owner check was found and removed");
    format!("{head}[release]{release}").replace(
        "id = \"lua-release-file\"",
        "id = \"lua-release-no-owner-check\"",
    )
}

#[test]
fn a_rung_file_whose_release_skips_the_owner_check_is_violated_where_lua_release_is_safe() {
    let id = sim::rung_file::load_text(&without_owner_check(), "no-owner-check.toml")
        .unwrap_or_else(|e| panic!("{e}"));
    // The holder pauses as its release starts, past its TTL: the next
    // holder's lock is the one a blind release deletes.
    let scenario = scenarios()
        .into_iter()
        .find(|s| s.name == "pause-at-release-start")
        .expect("the scenario");
    let mut both = sim::rung_file::adopt(&scenario, id).expect("adopts");
    both.rungs.push("lua-release".into());
    let seed = scenario.seeds[0];
    let judged = run_all(&[
        (both.clone(), "lua-release".into(), seed),
        (both, id.to_string(), seed),
    ]);
    assert_eq!(judged[0].verdict, Verdict::Safe, "the built-in lua-release");
    assert_eq!(
        judged[1].verdict,
        Verdict::Violated,
        "the copy without the owner check"
    );
}
