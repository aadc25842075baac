//! Database cells of the safety matrix on a real PostgreSQL 15 and a real
//! MariaDB 10.11 (Debian's), with real faults: the server killed and
//! restarted under a holder ends every session, so a session's advisory
//! (or named) lock goes under its holder and a second holder enters,
//! while a committed lock row comes back from the log; and a holder cut
//! off from the server keeps its session and its advisory lock through
//! the cut, while the reaper takes its row; a failover to a streaming
//! standby loses every advisory lock. A server's clock cannot be
//! moved honestly, so such a cell is refused with the reason. Needs
//! PostgreSQL 15, MariaDB and redis-server (scripts/test installs them).

mod common;

use model::scenario::Scenario;
use model::verdict::Verdict;
use real::cell::{CellOutcome, describe_outcome, run_real_cell};

/// Runs one database cell on the simulator and on a real server, and
/// asserts that the simulator gives `expected` and reality agrees.
fn assert_agrees(name: &str, rung: &str, expected: Verdict) {
    assert!(
        harness::postgres::installed(),
        "PostgreSQL 15 is not installed: run scripts/setup"
    );
    common::assert_agrees(&common::scenario("databases", name), rung, expected);
}

#[test]
fn a_restart_of_the_server_loses_the_advisory_lock_for_real_and_keeps_the_row() {
    assert_agrees("db-restart-under-holder", "pg-advisory", Verdict::Violated);
    assert_agrees("db-restart-under-holder", "db-unique-row", Verdict::Safe);
}

#[test]
fn a_cut_reaps_the_row_for_real_and_leaves_the_advisory_lock_alone() {
    assert_agrees(
        "db-partitioned-from-holder",
        "db-unique-row-expiry",
        Verdict::Violated,
    );
    assert_agrees("db-partitioned-from-holder", "pg-advisory", Verdict::Safe);
}

#[test]
fn a_restart_of_mariadb_loses_the_named_lock_for_real() {
    assert!(
        harness::mariadb::installed(),
        "MariaDB is not installed: run scripts/setup"
    );
    common::assert_agrees(
        &common::scenario("databases", "db-restart-under-holder"),
        "mysql-get-lock",
        Verdict::Violated,
    );
}

#[test]
fn a_server_clock_jump_is_not_stageable_and_says_why() {
    let text = "rungs = [\"pg-advisory\"]\nduration_ms = 2000\n\
                [[clients]]\ncount = 1\n\
                [[faults]]\nkind = \"clock-jump\"\nat_ms = 100\ntarget = \"redis-0\"\njump_ms = 5000\n\
                [expect]\npg-advisory = \"safe\"\n";
    let scenario = Scenario::parse(text, "jump.toml", "pg-server-clock-jump")
        .unwrap_or_else(|e| panic!("{e}"));
    let outcome = run_real_cell(&scenario, "pg-advisory", 1, 1, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{e}"));
    let CellOutcome::NotStageable(reasons) = &outcome else {
        panic!("the jump was staged: {}", describe_outcome(&outcome));
    };
    assert!(
        reasons.iter().any(|r| r.contains("wall clock")),
        "{reasons:?}"
    );
}

/// (That the promoted standby keeps the replicated rows, for real:
/// harness/tests/pg_standby.rs.)
#[test]
fn a_failover_to_the_standby_loses_the_advisory_lock_for_real() {
    assert_agrees("db-failover-to-standby", "pg-advisory", Verdict::Violated);
}

#[test]
fn a_pooled_connection_carries_its_advisory_lock_to_the_next_caller_for_real() {
    assert_agrees(
        "db-pooled-connection-handed-on",
        "pg-advisory-pooled",
        Verdict::Violated,
    );
}
