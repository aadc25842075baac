//! etcd cells of the safety matrix on real etcd (Debian's etcd-server
//! 3.4.23), with real faults: etcd 3.4's expired-waiter bug (a waiter
//! whose lease expired while its process was paused is still told it
//! holds the lock) reproduced for real, and the 3.5 mutex, which reads
//! its own key again, surviving the same run. A member's clock cannot be
//! moved (etcd reads it through the vDSO), so such a cell is refused with
//! the reason. A three-member cluster survives its leader's crash for
//! real, as in the simulator; a partition between members cannot be
//! staged, and says why. Needs etcd and redis-server (scripts/test
//! installs them).

mod common;

use model::scenario::Scenario;
use model::verdict::Verdict;
use real::cell::{CellOutcome, describe_outcome, run_real_cell};

fn scenario(name: &str) -> Scenario {
    common::scenario("etcd", name)
}

/// Runs one etcd cell on the simulator and on real servers, and asserts
/// that the simulator gives `expected` and reality agrees.
fn assert_agrees(name: &str, rung: &str, expected: Verdict) {
    assert!(
        harness::etcd::installed(),
        "etcd is not installed: run scripts/setup"
    );
    common::assert_agrees(&scenario(name), rung, expected);
}

#[test]
fn a_waiter_whose_lease_expired_while_paused_holds_etcd_3_4s_mutex_for_real_and_not_3_5s() {
    assert_agrees(
        "etcd-waiter-lease-expires",
        "etcd-mutex-3.4",
        Verdict::Violated,
    );
    assert_agrees("etcd-waiter-lease-expires", "etcd-mutex", Verdict::Safe);
}

/// Asserts that `name`'s `etcd-mutex` cell is refused, with a reason that
/// names `why`.
fn assert_not_stageable(name: &str, why: &str) {
    let scenario = scenario(name);
    let outcome = run_real_cell(
        &scenario,
        "etcd-mutex",
        scenario.seeds[0],
        1,
        &mut |_, _| {},
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let CellOutcome::NotStageable(reasons) = &outcome else {
        panic!("{name} was staged: {}", describe_outcome(&outcome));
    };
    assert!(reasons.iter().any(|r| r.contains(why)), "{reasons:?}");
}

#[test]
fn a_member_clock_jump_is_not_stageable_and_says_why() {
    assert_not_stageable("etcd-member-clock-jump", "vDSO");
}

#[test]
fn a_three_member_cluster_survives_its_leaders_crash_for_real() {
    assert_agrees("etcd-leader-crash", "etcd-mutex", Verdict::Safe);
}

#[test]
fn a_partition_between_members_is_not_stageable_and_says_why() {
    assert_not_stageable("etcd-leader-partitioned", "peer URL");
}
