//! The ZooKeeper rows on a real ZooKeeper server: measured for real in
//! short slices (about two seconds of measuring, after the JVM's start),
//! and each ZooKeeper cycle held to the round-trip table by the server's
//! own count of the requests it received. Only counts and presence are
//! asserted, never speed: the machine is shared. Like the redis-server
//! tests, these skip, saying so, when ZooKeeper is not installed
//! (`scripts/setup` installs it).

use crate::common;

use bench::client::{Client, Common, Impl, Node};
use bench::physics::{self, ZOOKEEPER_ROWS};
use locks::Owner;
use std::time::Duration;

/// Whether both servers are here; says why the test is skipped if not.
fn servers_installed() -> bool {
    common::servers_installed("ZooKeeper", harness::zookeeper::installed())
}

#[test]
fn the_zookeeper_rows_are_measured_beside_redis_and_only_the_herd_wakes_every_waiter() {
    if !servers_installed() {
        return;
    }
    let zk = bench::zookeeper_rows(Duration::from_millis(80), 2, Duration::from_millis(250), 1)
        .expect("the ZooKeeper rows are measured");
    assert_eq!(zk.skipped, None);
    for r in &zk.uncontended {
        eprintln!(
            "{}: {} cycles/s",
            r.figures.subject.impl_, r.figures.cycles_per_s
        );
    }
    for r in &zk.handoff {
        eprintln!(
            "{}+{}: {} hand-offs/s, {:?} wake-ups per hand-off",
            r.subject.impl_, r.subject.wait, r.handoffs_per_s, r.wakeups_per_handoff
        );
    }
    let uncontended = |name: &str| {
        zk.uncontended
            .iter()
            .find(|r| r.figures.subject.impl_ == name)
            .unwrap_or_else(|| panic!("no uncontended row of {name}"))
    };
    assert!(uncontended("floor").figures.cycles_per_s > 0.0);
    for id in ZOOKEEPER_ROWS {
        let row = uncontended(id);
        assert!(row.figures.cycles_per_s > 0.0, "{id} never cycled: {row:?}");
        assert_eq!(row.figures.round_trips, Some(3), "{id}");
        assert!(row.figures.anomaly.is_none() && row.figures.bound_per_s.is_none());
        assert!(row.figures.ratios.vs_floor.is_some(), "{id}: no ratio");
        assert_eq!(row.wal_fsyncs_per_cycle, None, "only etcd counts them");
    }
    for r in &zk.handoff {
        assert_eq!(r.clients, 16);
        assert!(
            r.acq_per_s > 0.0,
            "{} never took the lock: {r:?}",
            r.subject.impl_
        );
        assert_eq!((r.errors, r.abandoned), (0, 0), "{r:?}");
    }
    // The queueing locks: a release wakes the one waiter watching the
    // node it deletes, give or take the slice's edges.
    for id in ["zk-recipe", "curator-mutex", "zk-fenced"] {
        let r = common::handoff(&zk, id);
        assert!(r.handoffs > 0, "{id}: {r:?}");
        let woken = r.wakeups_per_handoff.expect("watch events are counted");
        assert!(
            (0.7..=1.5).contains(&woken),
            "{id}: {woken} wake-ups per hand-off"
        );
    }
    // The herd: every change to the children wakes every waiter.
    let herd = common::handoff(&zk, "zk-herd");
    let woken = herd.wakeups_per_handoff.expect("counted");
    assert!(woken > 4.0, "zk-herd: only {woken} wake-ups per hand-off");
    assert!(zk.note.contains("herd") && zk.note.contains("fsync"));
}

/// Cycles counted per ZooKeeper rung, after the warm-up.
const CYCLES_SEEN: usize = 5;

/// The requests the server at `addr` has received, from `srvr`.
fn received(addr: &str) -> u64 {
    let answer = harness::zookeeper::four_letter(addr.parse().unwrap(), "srvr").expect("srvr");
    answer
        .lines()
        .find_map(|l| l.strip_prefix("Received:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Received: in {answer}"))
}

#[test]
fn each_zookeeper_cycle_sends_the_requests_the_round_trip_table_names() {
    if !harness::zookeeper::installed() {
        eprintln!("ZooKeeper not installed; skipped: scripts/setup installs it");
        return;
    }
    let server = harness::zookeeper::ZkServer::start().expect("a ZooKeeper server");
    let node = Node::zookeeper(&server);
    let common = Common {
        ttl: Duration::from_secs(10),
        max_wait: Duration::from_secs(5),
    };
    let rt = bench::client::runtime().expect("runtime");
    for id in ZOOKEEPER_ROWS {
        let cycle = physics::cycle(id).expect("a row of the table");
        let (before, after) = rt.block_on(async {
            let which = Impl::ZooKeeper(id);
            let client = Client::connect(which, std::slice::from_ref(&node), common, 1)
                .await
                .expect("connect");
            let key = format!("round-trips-{id}");
            let owner = Owner::new("round-trips", 0);
            let one_cycle = || async {
                let held = client
                    .try_acquire(&key, &owner, common.ttl)
                    .await
                    .expect("acquire")
                    .expect("uncontended");
                client.release(&key, held).await.expect("release");
            };
            // The session and the parents are made here.
            for _ in 0..3 {
                one_cycle().await;
            }
            let before = received(&node.addr);
            for _ in 0..CYCLES_SEEN {
                one_cycle().await;
            }
            (before, received(&node.addr))
        });
        let per_cycle = cycle.commands.len() * CYCLES_SEEN;
        // A session ping may fall among them: the cycles are far shorter
        // than the ping interval, so at most one.
        let seen = (after - before) as usize;
        assert!(
            (per_cycle..=per_cycle + 1).contains(&seen),
            "{id}: the server received {seen} requests in {CYCLES_SEEN} cycles, the table says {per_cycle}"
        );
        assert_eq!(
            physics::round_trips(Impl::ZooKeeper(id)),
            Some(cycle.commands.len() as u32),
            "{id}: one request at a time, a round trip each"
        );
    }
}
