//! A three-member etcd cluster on loopback: it elects a leader, elects
//! another when the leader is killed, takes the killed member back, and
//! hands leadership to whichever member it is told to.

use harness::etcd::EtcdCluster;
use std::time::{Duration, Instant};

/// Generous: CI runs this on a loaded two-core machine.
const ELECTION: Duration = Duration::from_secs(30);

#[test]
fn an_etcd_cluster_replaces_a_killed_leader_and_hands_leadership_back() {
    if !harness::etcd::installed() {
        panic!("etcd is not installed (scripts/setup installs it)");
    }
    let started = Instant::now();
    let mut cluster = EtcdCluster::start(3).expect("a three-member cluster");
    eprintln!("cluster started in {:?}", started.elapsed());
    assert_eq!(cluster.members().len(), 3);
    let names: Vec<&str> = cluster.members().iter().map(|m| m.name()).collect();
    assert_eq!(names, ["member-0", "member-1", "member-2"]);
    let first = cluster.wait_leader(ELECTION).expect("a leader");

    let killed = Instant::now();
    cluster.kill(first).expect("killed");
    assert!(!cluster.member(first).is_some_and(|m| m.running()));
    let second = cluster.wait_leader(ELECTION).expect("a new leader");
    eprintln!(
        "member {second} elected {:?} after member {first}, the leader, was killed",
        killed.elapsed()
    );
    assert_ne!(second, first, "the killed member still leads");

    let restarted = Instant::now();
    cluster.restart(first).expect("restarted");
    eprintln!(
        "member {first} back and healthy in {:?}",
        restarted.elapsed()
    );
    assert!(cluster.member(first).is_some_and(|m| m.running()));

    let moved = Instant::now();
    cluster.move_leader(first).expect("leadership moved");
    eprintln!(
        "leadership moved to member {first} in {:?}",
        moved.elapsed()
    );
    assert_eq!(cluster.leader(), Some(first));

    assert!(cluster.kill(3).is_err(), "a member the cluster lacks");
    assert!(
        cluster.move_leader(7).is_err(),
        "a member the cluster lacks"
    );
}
