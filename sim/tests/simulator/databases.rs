//! The database scenarios (`scenarios/databases/`): every expectation
//! holds under every seed each scenario lists, and what each one teaches
//! is pinned from the server's own record: a crash ends the holder's
//! session and its advisory lock (or MariaDB's named lock) at once, a
//! restart ends every session, a cut leaves the session (and its lock)
//! alone, the reaper deletes a paused holder's row, and a pooled
//! connection carries its session's lock from one caller to the next.

use crate::common;

use judge::check::Check;
use model::history::{EventKind, KeyChange, Op, Outcome};
use model::host::Host;
use model::scenario::Scenario;
use model::verdict::Verdict;
use sim::cell::{Judged, run_cell};

fn scenario(name: &str) -> Scenario {
    common::scenario(&format!("databases/{name}"))
}

fn judge(name: &str, rung: &str, seed: u64) -> Judged {
    run_cell(&scenario(name), rung, seed).unwrap_or_else(|e| panic!("{name}/{rung}: {e}"))
}

/// The server's changes to the lock, in order: (µs, what, value).
fn server_changes(judged: &Judged) -> Vec<(u64, KeyChange, Option<String>)> {
    (judged.history.events().iter())
        .filter_map(|e| match &e.kind {
            EventKind::Server { what, value, .. } => Some((e.at_us, *what, value.clone())),
            _ => None,
        })
        .collect()
}

/// The changes node `node` made to the lock, in order: (µs, what, value).
fn changes_on(judged: &Judged, node: Host) -> Vec<(u64, KeyChange, Option<String>)> {
    (judged.history.events().iter())
        .filter_map(|e| match &e.kind {
            EventKind::Server {
                node: n,
                what,
                value,
                ..
            } if *n == node => Some((e.at_us, *what, value.clone())),
            _ => None,
        })
        .collect()
}

/// When the fault of kind `kind` struck, in µs.
fn fault_at(judged: &Judged, kind: &str) -> u64 {
    (judged.history.events().iter())
        .find_map(|e| match &e.kind {
            EventKind::Fault { fault, .. } if fault.name() == kind => Some(e.at_us),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {kind} fault"))
}

#[test]
fn every_database_scenario_meets_its_expectations_under_every_seed() {
    common::assert_every_expectation("databases", 7, 246);
}

#[test]
fn a_crashed_holders_advisory_lock_ends_with_its_session_at_the_crash() {
    for rung in ["pg-advisory", "pg-advisory-xact", "mysql-get-lock"] {
        let judged = judge("db-holder-crashes", rung, 1);
        let crash = fault_at(&judged, "crash");
        let changes = server_changes(&judged);
        assert!(
            changes.contains(&(crash, KeyChange::Expired, None)),
            "{rung}: {changes:?}"
        );
    }
}

#[test]
fn a_crashed_holders_row_stays_for_ever_without_an_expiry_and_is_reaped_with_one() {
    let kept = server_changes(&judge("db-holder-crashes", "db-unique-row", 1));
    assert_eq!(
        kept.iter()
            .filter(|(_, what, _)| *what == KeyChange::Set)
            .count(),
        1,
        "one insert, never deleted: {kept:?}"
    );
    assert!(kept.iter().all(|(_, what, _)| *what == KeyChange::Set));
    let reaped = server_changes(&judge("db-holder-crashes", "db-unique-row-expiry", 1));
    let deletes = reaped.iter().filter(|(_, w, _)| *w == KeyChange::Deleted);
    assert!(deletes.count() >= 2, "{reaped:?}");
}

#[test]
fn a_restart_ends_every_session_and_the_holders_advisory_lock_with_it() {
    for rung in ["pg-advisory", "pg-advisory-xact", "mysql-get-lock"] {
        let judged = judge("db-restart-under-holder", rung, 1);
        let crash = fault_at(&judged, "crash");
        let changes = server_changes(&judged);
        let lost = changes
            .iter()
            .find(|(_, what, _)| *what == KeyChange::Expired)
            .map(|c| c.0);
        // The host's tasks end with it, within a tick.
        assert!(
            lost.is_some_and(|at| (crash..crash + 10_000).contains(&at)),
            "{rung}: crash at {crash}: {changes:?}"
        );
        // The second holder is another session of the restarted server.
        let holders: Vec<_> = (changes.iter())
            .filter(|(_, what, _)| *what == KeyChange::Set)
            .collect();
        assert!(holders.len() >= 2, "{rung}: {changes:?}");
        assert_ne!(holders[0].2, holders[1].2, "{rung}");
    }
}

#[test]
fn a_cut_off_holder_keeps_its_advisory_lock_until_it_releases_it() {
    for rung in ["pg-advisory", "pg-advisory-xact", "mysql-get-lock"] {
        let judged = judge("db-partitioned-from-holder", rung, 1);
        let changes = server_changes(&judged);
        assert!(
            !changes
                .iter()
                .any(|(_, what, _)| *what == KeyChange::Expired),
            "{rung}: no session ended: {changes:?}"
        );
        // A's hold ends by its own unlock, after the cut healed.
        let healed_us = (300 + 3000) * 1000;
        let first_release = changes
            .iter()
            .find(|(_, what, _)| *what == KeyChange::Deleted)
            .map(|c| c.0);
        assert!(
            first_release.is_some_and(|at| at > healed_us),
            "{rung}: {changes:?}"
        );
    }
}

#[test]
fn the_reaper_deletes_a_paused_holders_row_and_the_fence_refuses_its_late_write() {
    let reaped = judge("db-holder-paused", "db-unique-row-expiry", 1);
    let pause = fault_at(&reaped, "pause");
    let changes = server_changes(&reaped);
    let deleted = (changes.iter())
        .find(|(_, what, _)| *what == KeyChange::Deleted)
        .map(|c| c.0);
    assert!(
        deleted.is_some_and(|at| at > pause && at < pause + 8_000_000),
        "reaped during the pause: {changes:?}"
    );
    let fenced = judge("db-holder-paused", "db-fenced", 1);
    let versions: Vec<String> = (server_changes(&fenced).into_iter())
        .filter_map(|(_, _, v)| v)
        .filter(|v| v.contains("version"))
        .collect();
    assert!(
        versions.iter().any(|v| v.ends_with("version 2")),
        "the second holder's version: {versions:?}"
    );
    assert_eq!(fenced.verdict, Verdict::Safe);
    assert_eq!(
        fenced.results.damage.resource.stale_writes_accepted,
        Some(0)
    );
    assert!(
        matches!(reaped.results.resource, Some(Check::Invalid { .. })),
        "without a fence the paused holder's write lands"
    );
}

#[test]
fn a_promoted_standby_has_the_replicated_lock_row_and_none_of_the_advisory_locks() {
    let row = judge("db-failover-to-standby", "db-unique-row", 1);
    let failover = fault_at(&row, "failover");
    let replayed = changes_on(&row, Host::Node(1));
    // A's row reached the standby a lag after its commit, before the
    // failover; B's row is written on the standby once A released.
    assert!(
        replayed
            .first()
            .is_some_and(|(at, what, _)| *at < failover && *what == KeyChange::Set),
        "{replayed:?}"
    );
    for rung in ["pg-advisory", "pg-advisory-xact"] {
        let judged = judge("db-failover-to-standby", rung, 1);
        let failover = fault_at(&judged, "failover");
        let primary = changes_on(&judged, Host::Node(0));
        let standby = changes_on(&judged, Host::Node(1));
        // The old primary's last word is A's session ending with its
        // host, within a tick of the failover.
        assert!(
            primary.last().is_some_and(
                |(at, what, _)| *what == KeyChange::Expired && *at < failover + 10_000
            ),
            "{rung}: {primary:?}"
        );
        // Nothing of the advisory lock was replayed: the standby's first
        // change is B's grant, after the failover, while A holds.
        assert!(
            standby
                .first()
                .is_some_and(|(at, what, _)| *at > failover && *what == KeyChange::Set),
            "{rung}: {standby:?}"
        );
        assert_eq!(judged.verdict, Verdict::Violated, "{rung}");
    }
}

#[test]
fn a_failover_within_the_lag_loses_the_lock_row_and_hands_the_fence_version_out_again() {
    let fenced = judge("db-failover-within-the-lag", "db-fenced", 1);
    let versions = |node| -> Vec<String> {
        (changes_on(&fenced, node).into_iter())
            .filter_map(|(_, _, v)| v)
            .filter(|v| v.contains("version"))
            .collect()
    };
    let (primary, standby) = (versions(Host::Node(0)), versions(Host::Node(1)));
    assert!(
        primary.first().is_some_and(|v| v.ends_with("version 1")),
        "{primary:?}"
    );
    assert!(
        standby.first().is_some_and(|v| v.ends_with("version 1")),
        "B is given A's version again: {standby:?}"
    );
    assert_eq!(fenced.verdict, Verdict::Violated);
}

#[test]
fn two_callers_of_one_pooled_process_hold_through_one_session_while_another_process_waits() {
    let judged = judge("db-pooled-connection-handed-on", "pg-advisory-pooled", 1);
    assert_eq!(judged.verdict, Verdict::Violated);
    // The server saw one session take the lock and, once both callers
    // had released it, another session (C's) take it: never two at once.
    let changes = server_changes(&judged);
    let sets: Vec<_> = (changes.iter())
        .filter(|(_, what, _)| *what == KeyChange::Set)
        .collect();
    assert_eq!(sets.len(), 2, "{changes:?}");
    assert_ne!(sets[0].2, sets[1].2, "{changes:?}");
    let freed = (changes.iter())
        .find(|(_, what, _)| *what == KeyChange::Deleted)
        .map_or(u64::MAX, |c| c.0);
    // Both of the pooled process's callers acquired inside the first
    // session's hold; C (client 2) only after it.
    let acquired_at = |client: usize| {
        (judged.history.events().iter())
            .find_map(|e| match &e.kind {
                EventKind::Complete {
                    client: c,
                    op: Op::Acquire,
                    outcome: Outcome::Ok,
                    ..
                } if *c == client => Some(e.at_us),
                _ => None,
            })
            .unwrap_or_else(|| panic!("client {client} never acquired"))
    };
    for caller in [0, 1] {
        assert!(
            (sets[0].0..freed).contains(&acquired_at(caller)),
            "{changes:?}"
        );
    }
    assert!(acquired_at(2) > freed, "{changes:?}");
}
