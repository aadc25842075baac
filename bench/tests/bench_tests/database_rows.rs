//! The database rows on real servers: the PostgreSQL rungs on PostgreSQL
//! and `mysql-get-lock` on MariaDB, measured for real in short slices
//! (the slices of `zookeeper_rows.rs`: a few seconds each, after the
//! server's start), each row with its round trips and the log fsyncs the
//! database itself counted per cycle. Only counts and presence are
//! asserted, never speed: the machine is shared. Like the redis-server
//! tests, these skip, saying so, when a server is not installed
//! (`scripts/setup` installs them).

use crate::common;

use bench::physics::{self, MYSQL_ROWS, POSTGRES_ROWS};
use bench::report::BesideRedis;
use std::time::Duration;

/// The uncontended row of `name` in `rows`.
fn uncontended<'a>(rows: &'a BesideRedis, name: &str) -> &'a bench::report::BesideUncontendedRow {
    rows.uncontended
        .iter()
        .find(|r| r.figures.subject.impl_ == name)
        .unwrap_or_else(|| panic!("no uncontended row of {name}: {:#?}", rows.uncontended))
}

/// What every database section has: each rung measured both ways with
/// its round trips, a ratio to the floor, its fsyncs counted, and every
/// hand-off served without an error; the polling waiters' wake-ups
/// counted.
fn check_measured(rows: &BesideRedis, ids: &[&str]) {
    assert_eq!(rows.skipped, None);
    for r in &rows.uncontended {
        eprintln!(
            "{}: {} cycles/s, {:?} log fsyncs per cycle",
            r.figures.subject.impl_, r.figures.cycles_per_s, r.wal_fsyncs_per_cycle
        );
    }
    for r in &rows.handoff {
        eprintln!(
            "{}+{}: {} hand-offs/s, {:?} wake-ups per hand-off",
            r.subject.impl_, r.subject.wait, r.handoffs_per_s, r.wakeups_per_handoff
        );
    }
    assert!(uncontended(rows, "floor").figures.cycles_per_s > 0.0);
    assert_eq!(uncontended(rows, "floor").wal_fsyncs_per_cycle, None);
    for id in ids {
        let row = uncontended(rows, id);
        assert!(row.figures.cycles_per_s > 0.0, "{id} never cycled: {row:?}");
        let cycle = physics::cycle(id).expect("a row of the table");
        assert_eq!(row.figures.round_trips, Some(cycle.round_trips), "{id}");
        assert_eq!(row.figures.subject.wait, "fixed", "{id}");
        assert!(row.figures.anomaly.is_none() && row.figures.bound_per_s.is_none());
        assert!(row.figures.ratios.vs_floor.is_some(), "{id}: no ratio");
        assert!(
            row.wal_fsyncs_per_cycle.is_some(),
            "{id}: fsyncs not counted"
        );
    }
    for r in &rows.handoff {
        assert_eq!(r.clients, 16);
        assert!(
            r.acq_per_s > 0.0,
            "{} never took the lock: {r:?}",
            r.subject.impl_
        );
        assert_eq!((r.errors, r.abandoned), (0, 0), "{r:?}");
    }
    for id in ids {
        let r = common::handoff(rows, id);
        assert!(
            r.wakeups.is_some(),
            "{id}: a polling waiter's retries are counted"
        );
    }
    assert!(rows.note.contains("fsync") && rows.note.contains("polls"));
}

#[test]
fn the_postgres_rows_are_measured_beside_redis_and_only_the_row_locks_fsync() {
    if !common::servers_installed("PostgreSQL", harness::postgres::installed()) {
        return;
    }
    let pg = bench::postgres_rows(Duration::from_millis(80), 2, Duration::from_millis(250), 1)
        .expect("the PostgreSQL rows are measured");
    check_measured(&pg, &POSTGRES_ROWS);
    let fsyncs = |id: &str| uncontended(&pg, id).wal_fsyncs_per_cycle.expect("counted");
    // Every row that changes is a commit, fsynced before the answer: two
    // per cycle (the expiry rung's reaper finds nothing and writes
    // nothing), give or take the server's own (a checkpoint's).
    for id in ["db-unique-row", "db-unique-row-expiry", "db-fenced"] {
        let f = fsyncs(id);
        assert!((1.9..=2.3).contains(&f), "{id}: {f} WAL fsyncs per cycle");
    }
    // The advisory locks live in memory: nothing to write.
    for id in ["pg-advisory", "pg-advisory-xact"] {
        let f = fsyncs(id);
        assert!(f <= 0.1, "{id}: {f} WAL fsyncs per cycle");
    }
}

#[test]
fn the_mariadb_row_is_measured_beside_redis_and_writes_nothing() {
    if !common::servers_installed("MariaDB", harness::mariadb::installed()) {
        return;
    }
    let my = bench::mysql_rows(Duration::from_millis(80), 2, Duration::from_millis(250), 1)
        .expect("the MariaDB rows are measured");
    check_measured(&my, &MYSQL_ROWS);
    let f = uncontended(&my, "mysql-get-lock")
        .wal_fsyncs_per_cycle
        .expect("counted");
    assert!(f <= 0.1, "mysql-get-lock: {f} InnoDB fsyncs per cycle");
}
