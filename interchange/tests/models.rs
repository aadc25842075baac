//! The models that judge operations directly: Knossos's mutex and
//! Jepsen's lock-guarded set.

use interchange::models::lock_set::{LockSetDamage, check_lock_set};
use interchange::models::mutex::{check_mutex, check_mutex_bounded};
use interchange::op::{Op, OpType, Process};
use judge::check::Check;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Builds a history one operation at a time, each numbered by its
/// position and timed 1 µs after the one before.
#[derive(Default)]
struct History {
    ops: Vec<Op>,
}

impl History {
    fn op(&mut self, process: u64, kind: OpType, f: &str, value: Value) -> &mut Self {
        let index = self.ops.len() as u64;
        self.ops.push(Op {
            process: Process::Client(process),
            kind,
            f: f.to_string(),
            value,
            time_ns: Some(index * 1_000),
            clock_bound_ns: 0,
            index,
            fields: BTreeMap::new(),
            line: self.ops.len() + 1,
        });
        self
    }

    fn invoke(&mut self, process: u64, f: &str) -> &mut Self {
        self.op(process, OpType::Invoke, f, Value::Null)
    }

    fn ok(&mut self, process: u64, f: &str) -> &mut Self {
        self.op(process, OpType::Ok, f, Value::Null)
    }

    fn fail(&mut self, process: u64, f: &str) -> &mut Self {
        self.op(process, OpType::Fail, f, Value::Null)
    }

    fn info(&mut self, process: u64, f: &str) -> &mut Self {
        self.op(process, OpType::Info, f, Value::Null)
    }

    /// An operation invoked and completed `ok` with nothing in between.
    fn done(&mut self, process: u64, f: &str) -> &mut Self {
        self.invoke(process, f).ok(process, f)
    }
}

#[track_caller]
fn assert_invalid(check: &Check, witness: &[usize], why_parts: &[&str]) {
    assert!(check.is_invalid(), "expected invalid, got {check:?}");
    assert_eq!(check.witness(), witness, "{check:?}");
    let why = check.why().unwrap_or_default();
    for part in why_parts {
        assert!(why.contains(part), "{why:?} lacks {part:?}");
    }
}

// ---- mutex ----

#[test]
fn acquires_and_releases_that_alternate_are_valid() {
    let mut h = History::default();
    h.done(0, "acquire")
        .done(0, "release")
        .done(1, "acquire")
        .done(2, "release");
    assert_eq!(check_mutex(&h.ops), Check::Valid);
}

#[test]
fn an_empty_history_is_valid() {
    assert_eq!(check_mutex(&[]), Check::Valid);
}

#[test]
fn a_second_acquire_after_the_first_completed_is_invalid_with_both_as_witness() {
    let mut h = History::default();
    h.done(1, "acquire").done(3, "acquire");
    let check = check_mutex(&h.ops);
    assert_invalid(
        &check,
        &[0, 1, 2, 3],
        &[
            "process 3's acquire completed ok at index 3",
            "held since process 1's acquire (invoked at index 0, ok at index 1)",
            "no release could come between",
        ],
    );
}

#[test]
fn a_release_of_a_lock_never_taken_is_invalid() {
    let mut h = History::default();
    h.done(2, "release");
    let check = check_mutex(&h.ops);
    assert_invalid(
        &check,
        &[0, 1],
        &["process 2's release completed ok at index 1", "free"],
    );
}

#[test]
fn overlapping_release_and_acquire_may_take_effect_acquire_first() {
    // The release is invoked after the acquire and completes first; the
    // acquire may still have taken effect before it.
    let mut h = History::default();
    h.invoke(0, "acquire")
        .invoke(1, "release")
        .ok(1, "release")
        .ok(0, "acquire");
    assert_eq!(check_mutex(&h.ops), Check::Valid);
}

#[test]
fn a_release_that_completed_before_the_acquire_was_invoked_cannot_be_reordered() {
    let mut h = History::default();
    h.done(1, "release").done(0, "acquire");
    assert!(check_mutex(&h.ops).is_invalid());
}

#[test]
fn two_overlapping_acquires_with_a_release_between_them_in_time_are_valid() {
    // Acquire 0 spans everything; acquire 1 and the release fit inside
    // it: 1 acquires, the release frees, 0 acquires.
    let mut h = History::default();
    h.invoke(0, "acquire")
        .done(1, "acquire")
        .done(2, "release")
        .ok(0, "acquire");
    assert_eq!(check_mutex(&h.ops), Check::Valid);
}

#[test]
fn a_release_between_two_acquires_only_helps_if_it_fits_between_them() {
    // Acquire 1 completes before the release is invoked, and the release
    // completes before acquire 2 is invoked: 1, release, 2 is the order,
    // which is fine; but with acquire 2 before the release in time, no
    // order works.
    let mut fits = History::default();
    fits.done(1, "acquire")
        .done(0, "release")
        .done(2, "acquire");
    assert_eq!(check_mutex(&fits.ops), Check::Valid);

    let mut does_not = History::default();
    does_not
        .done(1, "acquire")
        .done(2, "acquire")
        .done(0, "release");
    assert_invalid(&check_mutex(&does_not.ops), &[0, 1, 2, 3], &[]);
}

#[test]
fn failed_operations_did_not_take_effect() {
    let mut h = History::default();
    h.done(0, "acquire")
        .invoke(1, "release")
        .fail(1, "release")
        .done(2, "acquire");
    assert!(check_mutex(&h.ops).is_invalid());

    let mut failed_acquire = History::default();
    failed_acquire
        .done(0, "acquire")
        .invoke(1, "acquire")
        .fail(1, "acquire")
        .done(0, "release");
    assert_eq!(check_mutex(&failed_acquire.ops), Check::Valid);
}

#[test]
fn an_info_acquire_that_must_have_taken_effect_explains_a_later_release() {
    let mut h = History::default();
    h.invoke(0, "acquire").info(0, "acquire").done(1, "release");
    assert_eq!(check_mutex(&h.ops), Check::Valid);
}

#[test]
fn an_info_acquire_need_not_have_taken_effect_where_it_would_get_in_the_way() {
    let mut h = History::default();
    h.invoke(0, "acquire")
        .info(0, "acquire")
        .done(1, "acquire")
        .done(1, "release")
        .done(2, "acquire");
    assert_eq!(check_mutex(&h.ops), Check::Valid);
}

#[test]
fn an_info_acquire_may_take_effect_long_after_its_invoke() {
    // The info acquire's request is still in flight: it takes the lock
    // between the two releases.
    let mut h = History::default();
    h.invoke(0, "acquire")
        .info(0, "acquire")
        .done(1, "acquire")
        .done(1, "release")
        .done(2, "release");
    assert_eq!(check_mutex(&h.ops), Check::Valid);
}

#[test]
fn an_info_acquire_takes_effect_at_most_once() {
    let mut h = History::default();
    h.invoke(0, "acquire")
        .info(0, "acquire")
        .done(1, "release")
        .done(2, "release");
    assert_invalid(
        &check_mutex(&h.ops),
        &[2, 3, 4, 5],
        &[
            "process 2's release completed ok at index 5",
            "free since process 1's release (invoked at index 2, ok at index 3)",
        ],
    );
}

#[test]
fn an_info_acquire_invoked_after_a_release_cannot_explain_it() {
    let mut h = History::default();
    h.done(1, "release").invoke(0, "acquire").info(0, "acquire");
    assert!(check_mutex(&h.ops).is_invalid());
}

#[test]
fn an_acquire_the_history_never_completes_is_treated_as_info() {
    let mut h = History::default();
    h.invoke(0, "acquire").done(1, "release");
    assert_eq!(check_mutex(&h.ops), Check::Valid);
}

#[test]
fn an_info_release_may_free_the_lock_for_a_later_acquire() {
    let mut h = History::default();
    h.done(0, "acquire")
        .invoke(0, "release")
        .info(0, "release")
        .done(1, "acquire");
    assert_eq!(check_mutex(&h.ops), Check::Valid);
}

#[test]
fn many_info_acquires_and_releases_are_counted_not_searched() {
    // 200 crashed acquires and 200 crashed releases, then alternating
    // acquires: every later acquire after the first needs one info
    // release, and there are enough.
    let mut h = History::default();
    let mut process = 0;
    for _ in 0..200 {
        h.invoke(process, "acquire").info(process, "acquire");
        process += 1;
        h.invoke(process, "release").info(process, "release");
        process += 1;
    }
    for _ in 0..200 {
        h.done(process, "acquire");
        process += 1;
    }
    assert_eq!(check_mutex_bounded(&h.ops, 16), Check::Valid);
    h.done(process, "acquire");
    // 201 acquires need 200 releases between them: there are exactly 200.
    assert_eq!(check_mutex_bounded(&h.ops, 16), Check::Valid);
    h.done(process + 1, "acquire");
    assert!(check_mutex_bounded(&h.ops, 16).is_invalid());
}

#[test]
fn other_functions_and_named_processes_are_ignored() {
    let mut h = History::default();
    h.done(0, "acquire").done(0, "write").done(0, "release");
    h.ops.push(Op {
        process: Process::Named("nemesis".to_string()),
        kind: OpType::Info,
        f: "acquire".to_string(),
        value: Value::Null,
        time_ns: None,
        clock_bound_ns: 0,
        index: 6,
        fields: BTreeMap::new(),
        line: 7,
    });
    assert_eq!(check_mutex(&h.ops), Check::Valid);
}

#[test]
fn too_many_configurations_give_unknown_naming_the_bound() {
    // The lock is held; four long releases and four acquires are in
    // flight. When the first acquire completes, any of the four releases
    // may have come before it: four configurations, over a bound of 3.
    let mut h = History::default();
    h.done(0, "acquire");
    for p in 1..=4 {
        h.invoke(p, "release");
    }
    for p in 5..=8 {
        h.invoke(p, "acquire");
    }
    h.ok(5, "acquire");
    for p in 1..=4 {
        h.ok(p, "release");
    }
    for p in 6..=8 {
        h.ok(p, "acquire");
    }
    let check = check_mutex_bounded(&h.ops, 3);
    assert!(check.is_unknown(), "{check:?}");
    assert!(
        check.why().unwrap_or_default().contains("more than 3"),
        "{check:?}"
    );
    // The same history within the default bound is decided.
    assert_eq!(check_mutex(&h.ops), Check::Valid);
}

#[test]
fn a_completion_without_its_invoke_is_unknown_not_a_panic() {
    let mut h = History::default();
    h.ok(0, "acquire");
    assert!(check_mutex(&h.ops).is_unknown());
}

#[test]
fn a_process_with_two_operations_in_flight_is_unknown_naming_it() {
    let mut h = History::default();
    h.invoke(4, "acquire").invoke(4, "release");
    let check = check_mutex(&h.ops);
    assert!(check.is_unknown(), "{check:?}");
    assert!(
        check
            .why()
            .unwrap_or_default()
            .contains("process 4 invoked a release at index 1"),
        "{check:?}"
    );
}

/// A small seeded generator (SplitMix64), so that the test needs no
/// randomness crate and draws the same history every run.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What a simulated client is doing.
#[derive(Clone, Copy, PartialEq)]
enum Client {
    Idle,
    /// Invoked an acquire; `effected` once the lock granted it.
    Acquiring {
        effected: bool,
    },
    Holding,
    /// Invoked a release; `effected` once the lock is free.
    Releasing {
        effected: bool,
    },
}

/// A history of about `len` operations of `clients` clients against a
/// correct lock, with overlapping operations, failed acquires, and
/// crashed (`info`) operations both before and after they took effect.
fn correct_lock_history(seed: u64, clients: usize, len: usize) -> Vec<Op> {
    let mut rng = SplitMix(seed);
    let mut h = History::default();
    let mut process: Vec<u64> = (0..clients as u64).collect();
    let mut next_process = clients as u64;
    let mut state = vec![Client::Idle; clients];
    let mut held = false;
    while h.ops.len() < len {
        let c = rng.below(clients as u64) as usize;
        let p = process[c];
        let crash = rng.below(50) == 0;
        match state[c] {
            Client::Idle => {
                h.invoke(p, "acquire");
                state[c] = Client::Acquiring { effected: false };
            }
            Client::Acquiring { effected: false } => {
                if !held {
                    held = true;
                    state[c] = Client::Acquiring { effected: true };
                } else if rng.below(10) == 0 {
                    h.fail(p, "acquire");
                    state[c] = Client::Idle;
                } else if crash {
                    // Crashed before the lock granted it: it never will.
                    h.info(p, "acquire");
                    process[c] = next_process;
                    next_process += 1;
                    state[c] = Client::Idle;
                }
            }
            Client::Acquiring { effected: true } => {
                h.ok(p, "acquire");
                state[c] = Client::Holding;
            }
            Client::Holding => {
                h.invoke(p, "release");
                state[c] = Client::Releasing { effected: false };
            }
            Client::Releasing { effected: false } => {
                held = false;
                state[c] = Client::Releasing { effected: true };
            }
            Client::Releasing { effected: true } => {
                if crash {
                    // Crashed after the lock was freed.
                    h.info(p, "release");
                    process[c] = next_process;
                    next_process += 1;
                } else {
                    h.ok(p, "release");
                }
                state[c] = Client::Idle;
            }
        }
    }
    h.ops
}

#[test]
fn a_generated_history_of_100000_operations_against_a_correct_lock_is_valid() {
    let ops = correct_lock_history(7, 6, 100_000);
    assert!(ops.len() >= 100_000);
    assert!(ops.iter().any(|op| op.kind == OpType::Info));
    assert!(ops.iter().any(|op| op.kind == OpType::Fail));
    assert_eq!(check_mutex(&ops), Check::Valid);
}

#[test]
fn a_generated_history_with_one_release_dropped_is_invalid() {
    // Removing the first ok release (and its invoke) leaves the next
    // acquire with the lock held; nothing else can free it in time.
    let ops = correct_lock_history(11, 3, 2_000);
    let completion = ops
        .iter()
        .position(|op| op.f == "release" && op.kind == OpType::Ok)
        .expect("an ok release");
    let invoke = ops[..completion]
        .iter()
        .rposition(|op| op.process == ops[completion].process && op.kind == OpType::Invoke)
        .expect("its invoke");
    let mut cut = ops.clone();
    cut.remove(completion);
    cut.remove(invoke);
    let check = check_mutex(&cut);
    assert!(check.is_invalid(), "{check:?}");
    assert!(
        check
            .why()
            .unwrap_or_default()
            .contains("acquire completed ok"),
        "{check:?}"
    );
}

// ---- lock-set ----

fn add(h: &mut History, process: u64, x: i64, outcome: OpType) {
    h.op(process, OpType::Invoke, "add", json!(x));
    h.op(process, outcome, "add", json!(x));
}

fn read(h: &mut History, process: u64, set: Value) {
    h.op(process, OpType::Invoke, "read", Value::Null);
    h.op(process, OpType::Ok, "read", set);
}

#[test]
fn a_lock_set_whose_final_read_holds_every_acknowledged_add_is_valid() {
    let mut h = History::default();
    add(&mut h, 0, 1, OpType::Ok);
    add(&mut h, 1, 2, OpType::Ok);
    add(&mut h, 2, 3, OpType::Fail);
    read(&mut h, 0, json!([1, 2]));
    let (check, damage) = check_lock_set(&h.ops);
    assert_eq!(check, Check::Valid);
    assert_eq!(
        damage,
        LockSetDamage {
            attempted: 3,
            acknowledged: 2,
            lost: Some(0),
            recovered: Some(0),
            unexpected: Some(0),
            not_yet_read: Some(0),
        }
    );
}

#[test]
fn a_lost_add_is_invalid_with_its_completion_and_the_read_as_witness() {
    let mut h = History::default();
    add(&mut h, 0, 1, OpType::Ok);
    add(&mut h, 1, 2, OpType::Ok); // positions 2, 3
    read(&mut h, 0, json!([1])); // positions 4, 5
    let (check, damage) = check_lock_set(&h.ops);
    assert_invalid(
        &check,
        &[3, 4, 5],
        &["1 element(s)", "2 (added ok at index 3)", "final read"],
    );
    assert_eq!(damage.lost, Some(1));
}

#[test]
fn an_info_add_may_be_present_or_not() {
    let mut present = History::default();
    add(&mut present, 0, 1, OpType::Info);
    read(&mut present, 1, json!([1]));
    let (check, damage) = check_lock_set(&present.ops);
    assert_eq!(check, Check::Valid);
    assert_eq!(damage.recovered, Some(1));

    let mut absent = History::default();
    add(&mut absent, 0, 1, OpType::Info);
    read(&mut absent, 1, json!([]));
    let (check, damage) = check_lock_set(&absent.ops);
    assert_eq!(check, Check::Valid);
    assert_eq!(damage.recovered, Some(0));
}

#[test]
fn an_element_no_add_attempted_is_unexpected() {
    let mut h = History::default();
    add(&mut h, 0, 1, OpType::Ok);
    read(&mut h, 0, json!([1, 99]));
    let (check, damage) = check_lock_set(&h.ops);
    assert_invalid(&check, &[2, 3], &["never added: 99"]);
    assert_eq!(damage.unexpected, Some(1));
}

#[test]
fn an_add_still_in_flight_when_the_read_began_is_not_proven_lost() {
    let mut h = History::default();
    h.op(0, OpType::Invoke, "add", json!(1));
    h.op(1, OpType::Invoke, "read", Value::Null);
    h.op(0, OpType::Ok, "add", json!(1));
    h.op(1, OpType::Ok, "read", json!([]));
    let (check, damage) = check_lock_set(&h.ops);
    assert_eq!(check, Check::Valid);
    assert_eq!(damage.not_yet_read, Some(1));
    assert_eq!(damage.lost, Some(0));
}

#[test]
fn the_last_ok_read_is_the_final_one() {
    let mut h = History::default();
    add(&mut h, 0, 1, OpType::Ok);
    read(&mut h, 1, json!([1]));
    add(&mut h, 0, 2, OpType::Ok);
    read(&mut h, 1, json!([1, 2]));
    assert_eq!(check_lock_set(&h.ops).0, Check::Valid);
}

#[test]
fn a_lock_set_without_an_ok_read_is_unknown() {
    let mut h = History::default();
    add(&mut h, 0, 1, OpType::Ok);
    h.op(1, OpType::Invoke, "read", Value::Null);
    h.op(1, OpType::Info, "read", Value::Null);
    let (check, damage) = check_lock_set(&h.ops);
    assert_eq!(check, Check::unknown("no final read: no read completed ok"));
    assert_eq!(damage.lost, None);
    assert_eq!(damage.attempted, 1);
}

#[test]
fn a_final_read_whose_value_is_not_a_set_is_unknown() {
    let mut h = History::default();
    add(&mut h, 0, 1, OpType::Ok);
    read(&mut h, 1, json!(7));
    let (check, _) = check_lock_set(&h.ops);
    assert!(check.is_unknown(), "{check:?}");
    assert!(
        check.why().unwrap_or_default().contains("not a set"),
        "{check:?}"
    );
}

#[test]
fn lock_set_damage_serializes_with_its_field_names() {
    let damage = LockSetDamage {
        attempted: 3,
        acknowledged: 2,
        lost: Some(1),
        recovered: None,
        unexpected: Some(0),
        not_yet_read: Some(0),
    };
    assert_eq!(
        serde_json::to_value(&damage).expect("serialize"),
        json!({"attempted": 3, "acknowledged": 2, "lost": 1, "recovered": null,
               "unexpected": 0, "not_yet_read": 0})
    );
}

// ---- mutex against a brute-force search ----

/// One operation for the brute-force search: its kind, invoke position,
/// completion position (`None`: never, for `info` and unfinished ones),
/// and whether it must have taken effect (`ok`).
#[derive(Clone, Copy)]
struct Brute {
    acquire: bool,
    invoke: usize,
    completion: Option<usize>,
    must: bool,
}

/// Whether some order of the operations, each `ok` one included and
/// any uncertain one included or not, respects real time and alternates
/// acquires and releases from a free lock: every order is tried.
fn brute_force_linearizable(ops: &[Op]) -> bool {
    let mut open: BTreeMap<Process, usize> = BTreeMap::new();
    let mut calls: Vec<Brute> = Vec::new();
    for (pos, op) in ops.iter().enumerate() {
        if op.kind == OpType::Invoke {
            open.insert(op.process.clone(), calls.len());
            calls.push(Brute {
                acquire: op.f == "acquire",
                invoke: pos,
                completion: None,
                must: false,
            });
        } else {
            let id = open.remove(&op.process).expect("an invoke");
            calls[id].completion = (op.kind != OpType::Info).then_some(pos);
            calls[id].must = op.kind == OpType::Ok;
            if op.kind == OpType::Fail {
                // Did not take effect: never linearized, never required.
                calls[id].invoke = usize::MAX;
            }
        }
    }
    let calls: Vec<Brute> = calls
        .into_iter()
        .filter(|c| c.invoke != usize::MAX)
        .collect();
    let mut failed = std::collections::BTreeSet::new();
    search(&calls, 0, false, &mut failed)
}

fn search(
    calls: &[Brute],
    done: u64,
    locked: bool,
    failed: &mut std::collections::BTreeSet<(u64, bool)>,
) -> bool {
    let pending = |i: usize| done & (1 << i) == 0;
    if (0..calls.len()).all(|i| !pending(i) || !calls[i].must) {
        return true;
    }
    if failed.contains(&(done, locked)) {
        return false;
    }
    for (i, call) in calls.iter().enumerate() {
        if !pending(i) || call.acquire == locked {
            continue;
        }
        // It can come next only if no required operation still to come
        // completed before it was invoked.
        let blocked = calls.iter().enumerate().any(|(j, other)| {
            j != i && pending(j) && other.must && other.completion.is_some_and(|c| c < call.invoke)
        });
        if !blocked && search(calls, done | (1 << i), !locked, failed) {
            return true;
        }
    }
    failed.insert((done, locked));
    false
}

/// A random history of up to `events` events of `processes` processes,
/// from no lock at all: acquires and releases at random, each completing
/// `ok`, `fail` or `info` at random, some never completing.
fn random_history(rng: &mut SplitMix, processes: u64, events: usize) -> Vec<Op> {
    let mut h = History::default();
    let mut process: Vec<u64> = (0..processes).collect();
    let mut next = processes;
    let mut busy: Vec<Option<&str>> = vec![None; processes as usize];
    for _ in 0..events {
        let c = rng.below(processes) as usize;
        match busy[c] {
            None => {
                let f = if rng.below(2) == 0 {
                    "acquire"
                } else {
                    "release"
                };
                h.invoke(process[c], f);
                busy[c] = Some(f);
            }
            Some(f) => {
                match rng.below(10) {
                    0 => {
                        h.fail(process[c], f);
                    }
                    1 | 2 => {
                        h.info(process[c], f);
                        process[c] = next;
                        next += 1;
                    }
                    _ => {
                        h.ok(process[c], f);
                    }
                }
                busy[c] = None;
            }
        }
    }
    h.ops
}

#[test]
fn the_mutex_search_agrees_with_trying_every_order_on_small_random_histories() {
    let mut rng = SplitMix(2026);
    let (mut valid, mut invalid) = (0, 0);
    for _ in 0..20_000 {
        let processes = 2 + rng.below(3);
        let events = 4 + rng.below(24) as usize;
        let ops = random_history(&mut rng, processes, events);
        let expected = brute_force_linearizable(&ops);
        let check = check_mutex(&ops);
        assert!(!check.is_unknown(), "{check:?}");
        assert_eq!(check == Check::Valid, expected, "{check:?} for {ops:#?}");
        if expected {
            valid += 1;
        } else {
            invalid += 1;
        }
    }
    // Both answers were exercised, many times.
    assert!(
        valid > 1_000 && invalid > 1_000,
        "{valid} valid, {invalid} invalid"
    );
}
