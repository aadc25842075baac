//! The teaching scenarios: each rung's flaw is found by its scenario under a
//! pinned seed, with the witness pinned, and the next rung survives the
//! same fault. Also: determinism, and clear errors for bad scenario files.

use crate::common;

use judge::check::{Check, Checker};
use model::fault::FaultKind;
use model::history::{EventKind, KeyChange, Op, Outcome, Phase};
use model::scenario::Scenario;
use model::verdict::Verdict;
use sim::cell::{Judged, run_cell};
use std::collections::BTreeSet;

use common::scenario;

fn judge(name: &str, rung: &str) -> Judged {
    let s = scenario(name);
    let seed = s.seeds[0];
    run_cell(&s, rung, seed).unwrap_or_else(|e| panic!("{name}/{rung}: {e}"))
}

/// The witness events of a checker, as (client, op, outcome) triples, so a
/// test can pin what proves the flaw without pinning every timestamp.
fn witness_ops(judged: &Judged, check: &Check) -> Vec<(usize, Op, Option<Outcome>)> {
    check
        .witness()
        .iter()
        .filter_map(|&i| match &judged.history.events()[i].kind {
            EventKind::Invoke { client, op, .. } => Some((*client, *op, None)),
            EventKind::Complete {
                client,
                op,
                outcome,
                ..
            } => Some((*client, *op, Some(*outcome))),
            _ => None,
        })
        .collect()
}

/// Judges `rung` in scenario `name` and asserts its verdict; the judged
/// run.
fn judged_as(name: &str, rung: &str, verdict: Verdict) -> Judged {
    let judged = judge(name, rung);
    assert_eq!(
        judged.verdict, verdict,
        "{name}/{rung}: {:?}",
        judged.results
    );
    judged
}

/// Asserts that `rung` survives scenario `name`'s fault.
/// The clients in the mutual-exclusion checker's witness.
fn clients_inside_together(judged: &Judged) -> BTreeSet<usize> {
    witness_ops(judged, &judged.results.mutual_exclusion)
        .iter()
        .map(|w| w.0)
        .collect()
}

fn assert_survives(name: &str, rung: &str) {
    judged_as(name, rung, Verdict::Safe);
}

/// Asserts that `text` is refused at the start of `line` with `words`.
fn refused_at(text: &str, line: usize, words: &str) {
    let message = load_error(text, "s.toml");
    let at = format!("s.toml: line {line}, column 1:");
    assert!(message.starts_with(&at), "{message}");
    assert!(message.contains(words), "{message}");
}

/// The message of a scenario text that must not load.
fn load_error(text: &str, file: &str) -> String {
    match Scenario::parse(text, file, "s") {
        Ok(_) => panic!("{file} loaded, but must not"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn no_lock_oversells_the_inventory_and_setnx_does_not() {
    let judged = judged_as("inventory-contention", "no-lock", Verdict::Violated);
    let resource = judged.results.resource.clone().expect("resource checked");
    assert!(resource.is_invalid());
    assert!(judged.results.damage.resource.lost_updates > Some(0));
    assert_survives("inventory-contention", "setnx");
}

#[test]
fn setnx_deadlocks_when_the_holder_crashes_and_setnx_expire_recovers() {
    let judged = judged_as("crash-in-critical-section", "setnx", Verdict::Deadlock);
    assert!(judged.results.liveness.is_invalid());
    assert_survives("crash-in-critical-section", "setnx-expire");
}

#[test]
fn setnx_expire_deadlocks_after_a_crash_between_its_two_commands_and_set_timestamp_does_not() {
    judged_as(
        "crash-between-setnx-and-expire",
        "setnx-expire",
        Verdict::Deadlock,
    );
    assert_survives("crash-between-setnx-and-expire", "set-timestamp");
}

#[test]
fn set_timestamp_lets_a_skewed_waiter_delete_a_live_lock_and_set_nx_px_does_not() {
    let judged = judged_as("client-clock-skew", "set-timestamp", Verdict::Violated);
    let witness = witness_ops(&judged, &judged.results.mutual_exclusion);
    assert_eq!(
        &witness[..2],
        &[
            (0, Op::Acquire, Some(Outcome::Ok)),
            (1, Op::Acquire, Some(Outcome::Ok))
        ],
        "the holder and the skewed waiter both acquired"
    );
    assert_survives("client-clock-skew", "set-nx-px");
}

#[test]
fn set_nx_px_deletes_the_next_holders_lock_after_a_pause_at_release_start() {
    let judged = judged_as("pause-at-release-start", "set-nx-px", Verdict::Violated);
    // The two waiters (clients 1 and 2) end up inside together.
    assert_eq!(clients_inside_together(&judged), BTreeSet::from([1, 2]));
    assert_eq!(judged.results.damage.resource.lost_updates, Some(1));
    assert_survives("pause-at-release-start", "get-check-del");
}

#[test]
fn get_check_del_deletes_the_next_holders_lock_after_a_pause_between_get_and_del() {
    let judged = judged_as("pause-at-release-mid", "get-check-del", Verdict::Violated);
    assert_eq!(clients_inside_together(&judged), BTreeSet::from([1, 2]));
    assert_survives("pause-at-release-mid", "lua-release");
}

#[test]
fn lua_release_and_reentrant_lose_a_lease_shorter_than_the_work_and_the_watchdog_keeps_it() {
    for rung in ["lua-release", "reentrant"] {
        let judged = judged_as("long-critical-section", rung, Verdict::Violated);
        assert!(judged.results.damage.mutual_exclusion.overlap_ms > 0.0);
    }
    assert_survives("long-critical-section", "watchdog");
}

#[test]
fn lua_release_blocks_on_its_own_lock_and_reentrant_lets_the_owner_in_again() {
    let judged = judged_as("nested-acquire", "lua-release", Verdict::Deadlock);
    let witness = witness_ops(&judged, &judged.results.liveness);
    assert!(
        witness.contains(&(0, Op::Acquire, Some(Outcome::Fail))),
        "the witness shows the holder's own nested acquire failing: {witness:?}"
    );
    assert_survives("nested-acquire", "reentrant");
}

#[test]
fn the_watchdog_pauses_with_its_process_and_redlock_checks_its_validity() {
    judged_as("stop-the-world-pause", "watchdog", Verdict::Violated);
    assert_survives("stop-the-world-pause", "redlock");
}

#[test]
fn the_watchdog_loses_its_lock_to_a_partition_and_redlock_knows_its_validity() {
    judged_as("partition-from-redis", "watchdog", Verdict::Violated);
    assert_survives("partition-from-redis", "redlock");
}

#[test]
fn failover_with_asynchronous_replication_loses_the_watchdogs_lock_but_not_redlocks() {
    judged_as("failover-async-replication", "watchdog", Verdict::Violated);
    assert_survives("failover-async-replication", "redlock");
}

#[test]
fn redlock_breaks_on_a_clock_jump_and_a_fenced_store_refuses_the_stale_write() {
    judged_as("clock-jump-on-majority-node", "redlock", Verdict::Violated);
    let fenced = judged_as("clock-jump-on-majority-node", "fenced", Verdict::Safe);
    // The holders did overlap (information only): the store decided.
    assert!(fenced.results.mutual_exclusion.is_invalid());
    assert!(!fenced.results.decides(Checker::MutualExclusion));
}

#[test]
fn redlock_breaks_on_a_restart_without_fsync_and_a_delayed_restart_prevents_it() {
    judged_as("restart-without-fsync", "redlock", Verdict::Violated);
    assert_survives("delayed-restart", "redlock");
}

#[test]
fn a_pause_after_the_validity_check_breaks_redlock_and_fencing_fixes_it() {
    let judged = judged_as("pause-before-write", "redlock", Verdict::Violated);
    assert_eq!(judged.results.damage.resource.lost_updates, Some(1));
    assert_survives("pause-before-write", "fenced");
}

#[test]
fn a_failover_that_loses_the_fence_counter_hands_the_same_token_to_two_holders() {
    let judged = judged_as("failover-loses-fence-counter", "fenced", Verdict::Violated);
    assert_eq!(judged.results.damage.resource.repeated_tokens, Some(1));
}

#[test]
fn slow_replies_fool_set_nx_px_and_redlock_subtracts_the_time_its_acquire_took() {
    judged_as("replies-in-flight", "set-nx-px", Verdict::Violated);
    assert_survives("replies-in-flight", "redlock");
}

#[test]
fn the_same_seed_gives_a_byte_identical_history_and_other_seeds_differ() {
    for (name, rung) in [
        ("inventory-contention", "no-lock"),
        ("failover-async-replication", "redlock"),
        ("clock-jump-on-majority-node", "redlock"),
    ] {
        let s = scenario(name);
        let first = run_cell(&s, rung, 7).expect("run").history.to_jsonl();
        let again = run_cell(&s, rung, 7).expect("run").history.to_jsonl();
        assert_eq!(first, again, "{name}/{rung} did not replay");
        let other = run_cell(&s, rung, 8).expect("run").history.to_jsonl();
        assert!(
            first != other,
            "{name}/{rung}: seeds 7 and 8 gave the same history"
        );
    }
}

#[test]
fn a_scenario_with_a_wrong_type_names_the_file_line_and_column() {
    let text = "rungs = [\"setnx\"]\nduration_ms = \"long\"\n[[clients]]\ncount = 1\n";
    let err = Scenario::parse(text, "bad.toml", "bad").expect_err("must fail");
    let message = err.to_string();
    assert!(
        message.starts_with("bad.toml: line 2, column 15"),
        "{message}"
    );
    assert!(message.contains("expected u64"), "{message}");
}

#[test]
fn a_rung_named_in_faults_for_and_resource_for_gets_its_own_faults_and_resource() {
    let text = r#"
rungs = ["set-nx-px", "fenced"]
duration_ms = 3000

[[clients]]
count = 2
critical_section_ms = 10

[[faults]]
kind = "pause"
on = { client = 0, cycle = 1, point = "after-acquire" }
duration_ms = 20

[[faults_for.fenced]]
kind = "clock-jump"
at_ms = 5
target = "redis-0"
jump_ms = 1

[resource_for.fenced]
kind = "fenced"
stock = 50
"#;
    let scenario = Scenario::parse(text, "per-rung.toml", "per-rung").expect("loads");
    let faults_in = |rung: &str| -> Vec<FaultKind> {
        let judged = sim::cell::run_cell(&scenario, rung, 1).expect("runs");
        judged
            .history
            .events()
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Fault { fault, .. } => Some(*fault),
                _ => None,
            })
            .collect()
    };
    assert!(
        faults_in("set-nx-px")
            .iter()
            .all(|f| *f == FaultKind::Pause)
    );
    assert_eq!(faults_in("fenced"), [FaultKind::ClockJump]);
    assert_eq!(scenario.resource_of("fenced").stock, 50);
    assert_eq!(scenario.resource_of("set-nx-px").stock, 200);

    let unknown = text.replace("[[faults_for.fenced]]", "[[faults_for.redlock]]");
    let message = load_error(&unknown, "bad.toml");
    assert!(message.contains("`faults_for.redlock`"), "{message}");
}

/// When the node deleted the lock key, and when the client's release
/// completed, ms after a one-way hold of 200 ms from side `a` to side `b`
/// began at the start of the release.
fn deleted_and_released_ms(a: &str, b: &str) -> (u64, u64) {
    let text = format!(
        "rungs = [\"set-nx-px\"]\nduration_ms = 3000\n[[clients]]\n\n[[faults]]\nkind = \"delay\"\non = {{ client = 0, cycle = 1, point = \"release-start\" }}\na = [\"{a}\"]\nb = [\"{b}\"]\noneway = true\nduration_ms = 200\n"
    );
    let scenario = Scenario::parse(&text, "oneway.toml", "oneway").expect("loads");
    let judged = run_cell(&scenario, "set-nx-px", 1).expect("runs");
    let at = |want: &dyn Fn(&EventKind) -> bool| {
        judged
            .history
            .events()
            .iter()
            .find(|e| want(&e.kind))
            .map(|e| e.at_us / 1000)
            .expect("the event happened")
    };
    let held = at(&|k| {
        matches!(
            k,
            EventKind::Fault {
                phase: Phase::Start,
                ..
            }
        )
    });
    let deleted = at(&|k| {
        matches!(
            k,
            EventKind::Server {
                what: KeyChange::Deleted,
                ..
            }
        )
    });
    let released = at(&|k| {
        matches!(
            k,
            EventKind::Complete {
                op: Op::Release,
                outcome: Outcome::Ok,
                ..
            }
        )
    });
    (deleted - held, released - held)
}

#[test]
fn a_one_way_delay_of_replies_lets_the_node_act_long_before_the_client_hears() {
    let (deleted, released) = deleted_and_released_ms("redis-0", "client-0");
    assert!(
        deleted < 20,
        "the request went through: deleted after {deleted} ms"
    );
    assert!(
        released >= 200,
        "the reply was held: released after {released} ms"
    );
}

#[test]
fn a_one_way_delay_of_requests_holds_them_before_the_node_sees_them() {
    let (deleted, released) = deleted_and_released_ms("client-0", "redis-0");
    assert!(
        deleted >= 200,
        "the request was held: deleted after {deleted} ms"
    );
    assert!(released >= deleted, "released after {released} ms");
}

#[test]
fn a_pause_can_land_between_the_replies_of_a_redlock_round() {
    let text = r#"
rungs = ["redlock"]
duration_ms = 8000

[topology]
kind = "independent"
masters = 5

[lock]
ttl_ms = 1000

[[clients]]
count = 1

[[clients]]
count = 1
start_ms = 100

[[faults]]
kind = "pause"
on = { client = 0, cycle = 1, point = "acquire-reply", nth = 3 }
duration_ms = 1500
"#;
    let scenario = Scenario::parse(text, "mid-round.toml", "mid-round").expect("loads");
    let judged = run_cell(&scenario, "redlock", 1).expect("runs");
    let events = judged.history.events();
    let pause = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Fault {
                fault: FaultKind::Pause,
                phase: Phase::Start,
                detail,
                ..
            } => Some((e.at_us, detail.clone())),
            _ => None,
        })
        .expect("the pause fired");
    assert!(
        pause.1.contains("at acquire-reply of cycle 1"),
        "{}",
        pause.1
    );
    // The round was under way: client 0's first acquire began before the
    // pause and ended after it, with the lease it won already expired.
    let first_acquire = |kind: fn(&EventKind) -> bool| {
        events
            .iter()
            .find(|e| kind(&e.kind))
            .map(|e| e.at_us)
            .expect("client 0 acquired")
    };
    let invoked = first_acquire(|k| {
        matches!(
            k,
            EventKind::Invoke {
                client: 0,
                op: Op::Acquire,
                ..
            }
        )
    });
    let completed = first_acquire(|k| {
        matches!(
            k,
            EventKind::Complete {
                client: 0,
                op: Op::Acquire,
                ..
            }
        )
    });
    assert!(invoked < pause.0 && pause.0 + 1_500_000 <= completed);
    // Redlock checks the time its round took: a lease that ran out during
    // the pause is not used, and nobody else is harmed.
    assert_eq!(
        judged.verdict,
        Verdict::Safe,
        "{}",
        report::output::describe(&judged)
    );
    let later = text.replace("nth = 3", "nth = 6");
    let scenario = Scenario::parse(&later, "late.toml", "late").expect("loads");
    let judged = run_cell(&scenario, "redlock", 1).expect("runs");
    let detail = judged
        .history
        .events()
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Fault { detail, .. } => Some(detail.clone()),
            _ => None,
        })
        .expect("a fault aimed past the last reply fires at the next point");
    assert!(detail.contains("at after-acquire of cycle 1"), "{detail}");
}

#[test]
fn a_fault_aimed_at_master_hits_whichever_node_is_master_then() {
    let text = r#"
rungs = ["set-nx-px"]
duration_ms = 3000

[topology]
kind = "replicated"
replicas = 1

[[clients]]

[[faults]]
kind = "failover"
at_ms = 50
promote_after_ms = 10

[[faults]]
kind = "crash"
at_ms = 500
target = "master"
restart_after_ms = 100
"#;
    let scenario = Scenario::parse(text, "master.toml", "master").expect("`master` is a host");
    let judged = run_cell(&scenario, "set-nx-px", 1).expect("runs");
    let crashed = judged
        .history
        .events()
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Fault {
                fault: FaultKind::Crash,
                phase: Phase::Start,
                target,
                ..
            } => Some(target.to_string()),
            _ => None,
        })
        .expect("the crash fired");
    assert_eq!(
        crashed, "redis-1",
        "the promoted replica is the master by then"
    );
}

/// When client 0's first acquire completed `ok`, ms into the run, with the
/// fault tables `faults` between it and the node.
fn first_grant_ms(faults: &str) -> u64 {
    let text = format!(
        "rungs = [\"set-nx-px\"]\nduration_ms = 5000\n[lock]\nmax_wait_ms = 4000\nresponse_timeout_ms = 100\n[[clients]]\nstart_ms = 300\n{faults}"
    );
    let scenario = Scenario::parse(&text, "links.toml", "links").expect("loads");
    let judged = run_cell(&scenario, "set-nx-px", 1).expect("runs");
    judged
        .history
        .events()
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Complete {
                op: Op::Acquire,
                outcome: Outcome::Ok,
                ..
            } => Some(e.at_us / 1000),
            _ => None,
        })
        .expect("the client acquired in the end")
}

#[test]
fn the_inner_of_two_overlapping_partitions_does_not_heal_the_outer_one() {
    let partition = |at: u64, ms: u64| {
        format!(
            "[[faults]]\nkind = \"partition\"\nat_ms = {at}\na = [\"client-0\"]\nb = [\"redis-0\"]\nduration_ms = {ms}\n"
        )
    };
    let granted = first_grant_ms(&(partition(0, 1500) + &partition(100, 100)));
    assert!(
        granted >= 1500,
        "granted at {granted} ms, inside the outer partition"
    );
}

#[test]
fn a_node_restart_does_not_heal_a_partition_still_in_force() {
    let faults = "[[faults]]\nkind = \"partition\"\nat_ms = 0\na = [\"client-0\"]\nb = [\"redis-0\"]\nduration_ms = 1500\n\n[[faults]]\nkind = \"crash\"\nat_ms = 100\ntarget = \"redis-0\"\nhow = \"power-loss\"\nrestart_after_ms = 100\n";
    let granted = first_grant_ms(faults);
    assert!(
        granted >= 1500,
        "granted at {granted} ms, inside the partition"
    );
}

/// Client 0's first acquire against a node that `crash` took down before
/// it started: how long it took (ms) and the error it ended with.
fn first_acquire_after(crash: &str) -> (u64, String) {
    let text = format!(
        "rungs = [\"set-nx-px\"]\nduration_ms = 2000\n[lock]\nmax_wait_ms = 0\nresponse_timeout_ms = 500\n[[clients]]\nstart_ms = 300\n\n[[faults]]\nkind = \"crash\"\nat_ms = 100\ntarget = \"redis-0\"\n{crash}"
    );
    let scenario = Scenario::parse(&text, "killed.toml", "killed").expect("loads");
    let judged = run_cell(&scenario, "set-nx-px", 1).expect("runs");
    let events = judged.history.events();
    let invoked = events
        .iter()
        .find(|e| {
            matches!(
                e.kind,
                EventKind::Invoke {
                    op: Op::Acquire,
                    ..
                }
            )
        })
        .expect("the client tried to acquire");
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Complete {
                op: Op::Acquire,
                error: Some(error),
                ..
            } => Some(((e.at_us - invoked.at_us) / 1000, error.clone())),
            _ => None,
        })
        .expect("the acquire failed")
}

#[test]
fn a_killed_nodes_machine_refuses_a_dial_at_once_and_a_powered_off_one_leaves_it_to_time_out() {
    let (killed_ms, killed_error) = first_acquire_after("");
    assert!(
        killed_ms <= 5,
        "a dial to a killed process's port took {killed_ms} ms"
    );
    assert!(
        killed_error.contains("connection refused"),
        "{killed_error}"
    );
    let (dark_ms, dark_error) = first_acquire_after("how = \"power-loss\"\n");
    assert!(
        dark_ms >= 500,
        "a dial to a machine without power ended after {dark_ms} ms: {dark_error}"
    );
    assert!(!dark_error.contains("connection refused"), "{dark_error}");
}

#[test]
fn a_one_way_delay_needs_clients_on_exactly_one_side() {
    let text = "rungs = [\"set-nx-px\"]\nduration_ms = 3000\n[topology]\nkind = \"replicated\"\nreplicas = 1\n[[clients]]\n\n[[faults]]\nkind = \"delay\"\nat_ms = 0\na = [\"redis-0\"]\nb = [\"redis-1\"]\noneway = true\nduration_ms = 200\n";
    let message = load_error(text, "n.toml");
    assert!(message.contains("clients on exactly one side"), "{message}");
}

#[test]
fn an_unknown_field_inside_a_fault_is_reported_at_its_own_line() {
    let text = "rungs = [\"setnx\"]\nduration_ms = 1000\n[[clients]]\n\n[[faults]]\nkind = \"pause\"\nat_ms = 5\nduration_ms = 5\ntarget = \"client-0\"\nbogus = 3\n";
    refused_at(text, 10, "unknown field `bogus`");
}

#[test]
fn a_client_count_error_names_the_count_line() {
    let text = "rungs = [\"setnx\"]\nduration_ms = 1000\n\n[[clients]]\ncount = 300\n";
    refused_at(text, 5, "at most 256 clients");
}

#[test]
fn old_spellings_still_load_with_a_note_naming_the_new_one() {
    let old = "variants = [\"setnx\"]\nduration_ms = 10\n[[clients]]\nops = 2\n\n[[faults]]\nkind = \"pause\"\nduration_ms = 5\non = { client = 0, op = 2, point = \"after-acquire\" }\n";
    let new = "rungs = [\"setnx\"]\nduration_ms = 10\n[[clients]]\ncycles = 2\n\n[[faults]]\nkind = \"pause\"\nduration_ms = 5\non = { client = 0, cycle = 2, point = \"after-acquire\" }\n";
    let from_old = Scenario::parse(old, "old.toml", "s").expect("old spellings load");
    let from_new = Scenario::parse(new, "new.toml", "s").expect("new spellings load");
    assert_eq!(from_old.notes.len(), 3, "{:?}", from_old.notes);
    assert!(from_old.notes[0].contains("`variants` is the old spelling of `rungs`"));
    assert!(from_old.notes[1].contains("`ops` is the old spelling of `cycles`"));
    assert!(from_old.notes[2].contains("`on.op` is the old spelling of `on.cycle`"));
    assert!(from_new.notes.is_empty(), "{:?}", from_new.notes);
    let without_notes = Scenario {
        notes: Vec::new(),
        ..from_old
    };
    assert_eq!(without_notes, from_new);
}

#[test]
fn a_host_name_that_is_not_canonical_is_rejected_with_the_expected_spellings() {
    for host in ["client-01", "client-+0", "redis-00", "node-1"] {
        let text = format!(
            "rungs = [\"setnx\"]\nduration_ms = 10\n[[clients]]\n\n[[faults]]\nkind = \"crash\"\nat_ms = 5\ntarget = \"{host}\"\n"
        );
        // Read field by field, the fault's error points at the value.
        let message = load_error(&text, "s.toml");
        assert!(
            message.starts_with("s.toml: line 8, column 10: `faults[0].target`:"),
            "{message}"
        );
        assert!(
            message.contains("expected client-N, redis-N, store or master"),
            "{message}"
        );
    }
}

#[test]
fn a_scenario_with_an_unknown_rung_or_fault_point_says_what_was_expected() {
    let text = "rungs = [\"setnxx\"]\nduration_ms = 10\n[[clients]]\n";
    let message = load_error(text, "a.toml");
    assert!(message.contains("unknown rung \"setnxx\""), "{message}");
    assert!(
        message.starts_with("a.toml: line 1, column 1:"),
        "{message}"
    );
    assert!(message.contains("set-nx-px"), "{message}");

    let text = "rungs = [\"setnx\"]\nduration_ms = 10\n[[clients]]\n\n[[faults]]\nkind = \"pause\"\nduration_ms = 5\non = { client = 0, point = \"middle\" }\n";
    let message = load_error(text, "b.toml");
    assert!(
        message.starts_with("b.toml: line 8, column 28: `faults[0].on.point`:"),
        "{message}"
    );
    assert!(
        message.contains("unknown fault point \"middle\""),
        "{message}"
    );

    let text = "rungs = [\"setnx\"]\nduration_ms = 10\nclients = 3\n";
    let message = load_error(text, "c.toml");
    assert!(message.contains("line 3"), "{message}");
}

#[test]
fn every_shipped_scenario_loads_and_names_its_expectations() {
    let dir = common::scenarios_dir();
    let scenarios = sim::suite::load_all(&dir).expect("load");
    assert!(scenarios.len() >= 17);
    for s in &scenarios {
        for v in &s.rungs {
            assert!(
                s.expect.contains_key(v),
                "{}: no expectation for {v}",
                s.name
            );
        }
    }
    // Every rung's flaw is shown by at least one scenario it fails in.
    for rung in locks::LADDER {
        assert!(
            sim::tour::scenario_for(rung, &scenarios).is_some(),
            "no scenario shows {}",
            rung.id
        );
    }
}

#[test]
fn the_example_in_the_scenario_format_documentation_is_a_valid_scenario() {
    let readme = std::fs::read_to_string(common::scenarios_dir().join("README.md"))
        .expect("scenarios/README.md");
    let start = readme.find("```toml\n").expect("a toml example") + "```toml\n".len();
    let end = start + readme[start..].find("```").expect("end of example");
    let example = Scenario::parse(&readme[start..end], "scenarios/README.md", "example")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(example.faults.len(), 8, "every fault kind is shown");
    // And it runs.
    let judged = run_cell(&example, "set-nx-px", 1).expect("run");
    assert!(!judged.history.is_empty());
}

/// The witness of each rung's flaw in its scenario under the pinned seed,
/// event by event: (client, operation, outcome; `None` for an invoke).
/// A change that finds the flaw differently, or not at all, shows here.
#[test]
fn every_rungs_flaw_is_found_with_its_pinned_minimal_witness() {
    use Op::{Acquire as A, Check as C, Read as R, Release as Rel, Write as W};
    const OK: Option<Outcome> = Some(Outcome::Ok);
    const FAIL: Option<Outcome> = Some(Outcome::Fail);
    type Witness = Vec<(usize, Op, Option<Outcome>)>;
    let lost_update =
        |a: usize, b: usize| -> Witness { vec![(a, R, OK), (b, R, OK), (a, W, OK), (b, W, OK)] };
    let cases: Vec<(&str, &str, Checker, Witness)> = vec![
        (
            "inventory-contention",
            "no-lock",
            Checker::Resource,
            lost_update(0, 1),
        ),
        (
            "crash-in-critical-section",
            "setnx",
            Checker::Liveness,
            vec![(1, A, None), (0, A, OK)],
        ),
        (
            "crash-between-setnx-and-expire",
            "setnx-expire",
            Checker::Liveness,
            vec![(1, A, None)],
        ),
        (
            "client-clock-skew",
            "set-timestamp",
            Checker::MutualExclusion,
            vec![(0, A, OK), (1, A, OK), (1, Rel, None), (0, Rel, None)],
        ),
        (
            "pause-at-release-start",
            "set-nx-px",
            Checker::MutualExclusion,
            vec![(1, A, OK), (2, A, OK), (1, Rel, None), (2, Rel, None)],
        ),
        (
            "pause-at-release-mid",
            "get-check-del",
            Checker::MutualExclusion,
            vec![(1, A, OK), (2, A, OK), (1, Rel, None), (2, Rel, None)],
        ),
        (
            "long-critical-section",
            "lua-release",
            Checker::MutualExclusion,
            vec![(0, A, OK), (1, A, OK), (0, Rel, None), (1, Rel, None)],
        ),
        (
            "nested-acquire",
            "lua-release",
            Checker::Liveness,
            vec![(0, A, OK), (0, A, None), (0, A, FAIL)],
        ),
        (
            "long-critical-section",
            "reentrant",
            Checker::MutualExclusion,
            vec![(0, A, OK), (1, A, OK), (0, Rel, None), (1, Rel, None)],
        ),
        (
            "stop-the-world-pause",
            "watchdog",
            Checker::MutualExclusion,
            vec![(1, A, OK), (0, A, OK), (0, C, FAIL), (1, Rel, None)],
        ),
        (
            "partition-from-redis",
            "watchdog",
            Checker::MutualExclusion,
            vec![(0, A, OK), (1, A, OK), (1, Rel, None), (0, C, FAIL)],
        ),
        (
            "failover-async-replication",
            "watchdog",
            Checker::MutualExclusion,
            vec![(0, A, OK), (1, A, OK), (1, Rel, None), (0, C, FAIL)],
        ),
        (
            "clock-jump-on-majority-node",
            "redlock",
            Checker::MutualExclusion,
            vec![(0, A, OK), (1, A, OK), (1, Rel, None), (0, Rel, None)],
        ),
        (
            "restart-without-fsync",
            "redlock",
            Checker::MutualExclusion,
            vec![(0, A, OK), (1, A, OK), (1, Rel, None), (0, Rel, None)],
        ),
        (
            "pause-before-write",
            "redlock",
            Checker::Resource,
            vec![(0, R, OK), (1, R, OK), (1, W, OK), (0, W, OK)],
        ),
        (
            "failover-loses-fence-counter",
            "fenced",
            Checker::Resource,
            vec![(1, W, OK), (0, W, OK)],
        ),
    ];
    for (name, rung, checker, expected) in cases {
        let judged = judge(name, rung);
        let check = judged
            .results
            .all()
            .into_iter()
            .find(|(c, _)| *c == checker)
            .map(|(_, c)| c.clone())
            .unwrap_or_else(|| panic!("{name}/{rung}: no {checker} checker"));
        assert!(check.is_invalid(), "{name}/{rung}: {checker} found nothing");
        assert_eq!(
            witness_ops(&judged, &check),
            expected,
            "{name}/{rung}: {checker} witness"
        );
    }
}
