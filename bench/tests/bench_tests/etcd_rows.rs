//! The etcd rows on a real etcd member: measured for real in short slices
//! (about 15 s in all), and each etcd cycle held to the round-trip table
//! by the member's own request counters. Only counts and presence are
//! asserted, never speed: the machine is shared. Like the redis-server
//! tests, these skip, saying so, when etcd is not installed
//! (`scripts/setup` installs it).

use crate::common;

use bench::client::{Client, Common, Impl, Node};
use bench::etcd_member::Metrics;
use bench::physics::{self, ETCD_ROWS, ETCD_SESSION_ALONGSIDE};
use locks::Owner;
use std::time::Duration;

/// Whether both servers are here; says why the test is skipped if not.
fn servers_installed() -> bool {
    common::servers_installed("etcd", harness::etcd::installed())
}

#[test]
fn the_etcd_rows_are_measured_beside_redis_and_a_handoff_wakes_one_etcd_waiter() {
    if !servers_installed() {
        return;
    }
    let etcd = bench::etcd_rows(Duration::from_millis(200), 2, Duration::from_millis(500), 2)
        .expect("the etcd rows are measured");
    assert_eq!(etcd.skipped, None);
    for r in &etcd.uncontended {
        eprintln!(
            "{}: {} cycles/s, {:?} WAL fsyncs per cycle",
            r.figures.subject.impl_, r.figures.cycles_per_s, r.wal_fsyncs_per_cycle
        );
    }
    for r in &etcd.handoff {
        eprintln!(
            "{}+{}: {} hand-offs/s, {:?} wake-ups per hand-off",
            r.subject.impl_, r.subject.wait, r.handoffs_per_s, r.wakeups_per_handoff
        );
    }

    let uncontended = |name: &str| {
        etcd.uncontended
            .iter()
            .find(|r| r.figures.subject.impl_ == name)
            .unwrap_or_else(|| panic!("no uncontended row of {name}"))
    };
    for name in ["floor", "lua-release"] {
        let row = uncontended(name);
        assert!(row.figures.cycles_per_s > 0.0, "{name}: {row:?}");
        assert_eq!(row.wal_fsyncs_per_cycle, None, "{name} is no etcd row");
    }
    for id in ETCD_ROWS {
        let row = uncontended(id);
        assert!(row.figures.cycles_per_s > 0.0, "{id} never cycled: {row:?}");
        assert_eq!(row.figures.round_trips, Some(4), "{id}");
        assert!(row.figures.anomaly.is_none() && row.figures.bound_per_s.is_none());
        assert!(
            row.figures.ratios.vs_floor.is_some(),
            "{id}: no ratio to the floor"
        );
        // Four writes per cycle (lease grant, put, delete, revoke), each
        // acknowledged only once fsynced; one client waits for each, so
        // none can share another's fsync.
        let fsyncs = row.wal_fsyncs_per_cycle.expect("the member's fsyncs");
        assert!(fsyncs >= 3.9, "{id}: {fsyncs} WAL fsyncs per cycle");
    }

    for r in &etcd.handoff {
        let name = &r.subject.impl_;
        assert_eq!(r.clients, 16);
        assert!(r.acq_per_s > 0.0, "{name} never took the lock: {r:?}");
        assert_eq!((r.errors, r.abandoned), (0, 0), "{name}: {r:?}");
    }
    // etcd queues its waiters: every release hands the lock on.
    for id in ETCD_ROWS {
        let r = common::handoff(&etcd, id);
        assert!(r.handoffs_per_s > 0.0 && r.handoffs > 0, "{id}: {r:?}");
    }
    // A polling releaser often takes the lock straight back, so it may
    // hand it off rarely, even never in a short slice: its wake-ups are
    // compared as counts, which need no hand-off.
    let wakeups = |label| common::handoff(&etcd, label).wakeups.expect("counted");
    let (polling, notified) = (
        common::handoff(&etcd, "set-nx-px"),
        common::handoff(&etcd, "lua-release+notify"),
    );
    assert!(wakeups("set-nx-px") > 0 && wakeups("lua-release+notify") > 0);
    for id in ["etcd-mutex-3.4", "etcd-mutex", "etcd-fenced"] {
        let r = common::handoff(&etcd, id);
        let woken = r.wakeups_per_handoff.expect("watch responses are counted");
        // A release wakes the one waiter watching that key: one watch
        // response per hand-off, give or take the slice's edges.
        assert!(
            (0.8..=1.3).contains(&woken),
            "{id}: {woken} wake-ups per hand-off"
        );
        for redis in [polling, notified] {
            let redis_woken = redis.wakeups.expect("counted") as f64;
            assert!(
                redis_woken > woken * redis.handoffs as f64,
                "{id}: {woken} wake-ups per hand-off, {} woke {redis_woken} for {} hand-offs",
                redis.subject.impl_,
                redis.handoffs
            );
        }
    }
    // The Lock RPC waits in the member: the client has nothing to count.
    let rpc = common::handoff(&etcd, "etcd-lock-rpc");
    assert_eq!((rpc.wakeups_per_handoff, rpc.wakeups), (None, None));
    assert!(etcd.note.contains("fsync") && etcd.note.contains("lease grant"));
}

/// Cycles counted per etcd rung, after the warm-up.
const CYCLES_SEEN: usize = 5;

#[test]
fn each_etcd_cycle_sends_the_requests_the_round_trip_table_names() {
    if !harness::etcd::installed() {
        eprintln!("etcd not installed; skipped: scripts/setup installs it");
        return;
    }
    let member = harness::etcd::EtcdServer::start().expect("an etcd member");
    let node = Node::etcd(&member);
    let common = Common {
        ttl: Duration::from_secs(10),
        max_wait: Duration::from_secs(5),
    };
    let rt = bench::client::runtime().expect("runtime");
    for id in ETCD_ROWS {
        let cycle = physics::cycle(id).expect("a row of the table");
        let (before, after) = rt.block_on(async {
            let client = Client::connect(Impl::Etcd(id), std::slice::from_ref(&node), common, 1)
                .await
                .expect("connect");
            let key = format!("round-trips/{id}");
            let owner = Owner::new("round-trips", 0);
            let one_cycle = || async {
                let held = client
                    .try_acquire(&key, &owner, common.ttl)
                    .await
                    .expect("acquire")
                    .expect("uncontended");
                client.release(&key, held).await.expect("release");
            };
            for _ in 0..3 {
                one_cycle().await;
            }
            let before = Metrics::read(&node.addr).await.expect("/metrics");
            for _ in 0..CYCLES_SEEN {
                one_cycle().await;
            }
            let after = Metrics::read(&node.addr).await.expect("/metrics");
            (before, after)
        });
        let sent: Vec<(String, f64)> = after
            .requests_by_method()
            .into_iter()
            .map(|(method, n)| {
                let delta = n - before.requests(&method);
                (method, delta)
            })
            .filter(|(_, delta)| *delta > 0.0)
            .collect();
        for command in cycle.commands {
            let times = cycle.commands.iter().filter(|c| *c == command).count();
            let seen = sent
                .iter()
                .find(|(m, _)| m == command)
                .map_or(0.0, |(_, n)| *n);
            assert_eq!(
                seen,
                (times * CYCLES_SEEN) as f64,
                "{id}: {command} per {CYCLES_SEEN} cycles; the member saw {sent:?}"
            );
        }
        for (method, n) in &sent {
            if cycle.commands.contains(&method.as_str()) {
                continue;
            }
            assert!(
                method == ETCD_SESSION_ALONGSIDE && *n <= CYCLES_SEEN as f64,
                "{id}: {n} {method} beyond the table's requests: {sent:?}"
            );
        }
        assert_eq!(
            physics::round_trips(Impl::Etcd(id)),
            Some(cycle.commands.len() as u32),
            "{id}: one request at a time, a round trip each"
        );
    }
}
