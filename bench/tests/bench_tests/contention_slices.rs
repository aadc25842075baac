//! A target's contention slice ends at a number of hand-offs, not after a
//! time: the lock's work in it is then the same however fast the machine
//! runs, and so are the figures read in hand-offs. Against one
//! redis-server, in a second or two.

use bench::client::{Client, Common, Impl, Node, Wait};
use bench::workload::{self, SliceEnd};
use std::sync::Arc;
use std::time::Duration;

const COMMON: Common = Common {
    ttl: Duration::from_secs(10),
    max_wait: Duration::from_secs(30),
};

/// One slice of `workers` workers of `which` on one key, until `end`.
fn slice(which: Impl, node: &Node, workers: usize, end: SliceEnd) -> workload::ContentionSample {
    let rt = bench::client::runtime().expect("runtime");
    rt.block_on(async {
        let client = Client::connect(which, std::slice::from_ref(node), COMMON, 1)
            .await
            .expect("connect");
        let prefix = format!("slices:{}:", which.label());
        workload::contention(Arc::new(client), &prefix, workers, 1, COMMON.ttl, end).await
    })
}

/// A fresh redis-server and its node, or `None` (the test skipped) when
/// none is installed. The server stops when its handle drops.
fn server() -> Option<(harness::RedisServer, Node)> {
    if !harness::installed() {
        eprintln!("redis-server not installed; skipped");
        return None;
    }
    let server = harness::RedisServer::start().expect("redis-server");
    let node = Node::of(&server);
    Some((server, node))
}

#[test]
fn a_slice_counted_in_handoffs_ends_at_that_acquisition_and_counts_every_waiter_left() {
    let Some((_server, node)) = server() else {
        return;
    };
    let end = SliceEnd::AtHandoff {
        handoffs: 400,
        at_most: Duration::from_secs(20),
    };
    let notify = slice(Impl::Rung("lua-release", Wait::Notify), &node, 16, end);
    // One key: one holder at a time, and the waits the 400th ended are
    // cut there, so exactly 400 acquisitions, long before the 20 s bound.
    assert_eq!(notify.acquisitions, 400);
    assert!(
        notify.elapsed < Duration::from_secs(10),
        "{:?}",
        notify.elapsed
    );
    // Served in turn: 25 each.
    assert_eq!(notify.per_worker, vec![25; 16], "{:?}", notify.per_worker);
    assert_eq!(notify.fairness(), 1.0);
    // Every other worker was waiting when it ended: 15 open waits, each
    // counted (a lower bound), none lost.
    assert_eq!(notify.handoffs.open_count(), 15);
    assert_eq!(notify.waits.open_count(), 15);
    // rslock retries on a timer, so some waiter is passed over: its wait
    // reaches the slice's end, all 400 hand-offs and the one to come.
    let rslock = slice(Impl::Rslock, &node, 16, end);
    assert_eq!(rslock.acquisitions, 400);
    assert!(rslock.fairness() < 1.0, "{:?}", rslock.per_worker);
    let tail = rslock.handoffs.quantile(0.999);
    assert!(tail.lower_bound && tail.us > 100, "{tail:?}");
    assert!(tail.us <= 401, "{tail:?}");
}

#[test]
fn a_slice_whose_lock_is_never_handed_that_often_ends_at_its_time_bound() {
    let Some((_server, node)) = server() else {
        return;
    };
    let end = SliceEnd::AtHandoff {
        handoffs: u64::MAX,
        at_most: Duration::from_millis(200),
    };
    let s = slice(Impl::Rung("lua-release", Wait::Notify), &node, 4, end);
    assert!(s.acquisitions > 0);
    assert!(
        s.elapsed >= Duration::from_millis(200) && s.elapsed <= Duration::from_millis(201),
        "{:?}",
        s.elapsed
    );
}
