//! The herd scenario: 33 clients want one lock at once. An etcd waiter
//! watches only its predecessor's key, so each hand-off wakes one waiter;
//! set-nx-px's waiters poll, so each hand-off wakes every one of them
//! (about twice: they poll every 50 ms, the holder holds for 100 ms).

use model::scenario::Scenario;
use sim::cell::run_cell;
use std::path::Path;

fn herd() -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/etcd/etcd-herd.toml");
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// (hand-offs, wake-ups per hand-off) of `rung` in the herd, seed 1.
fn waiting(rung: &str) -> (u64, f64) {
    let judged = run_cell(&herd(), rung, 1).unwrap_or_else(|e| panic!("{rung}: {e}"));
    let waiting = judged.results.damage.waiting;
    let per = waiting
        .wakeups_per_handoff
        .unwrap_or_else(|| panic!("{rung}: no wake-ups counted"));
    (waiting.handoffs, per)
}

#[test]
fn each_etcd_hand_off_wakes_one_waiter_and_each_polling_hand_off_wakes_the_herd() {
    for rung in ["etcd-mutex", "etcd-mutex-3.4", "etcd-fenced"] {
        let (handoffs, per) = waiting(rung);
        assert_eq!(handoffs, 32, "{rung}: every waiter gets the lock once");
        assert_eq!(per, 1.0, "{rung}: one watch response per hand-off");
    }
    let (handoffs, per) = waiting("set-nx-px");
    assert_eq!(handoffs, 32, "set-nx-px: every waiter gets the lock once");
    assert!(
        per >= 16.0,
        "set-nx-px: {per} wake-ups per hand-off; polling waiters should wake by the dozen"
    );
}
