//! The etcd rungs of `locks` against a real etcd member (Debian's 3.4.23,
//! started by `harness`) and against the simulated member on a real TCP
//! port, the same code: clients that contend take turns, and the fenced
//! rung's tokens grow with each holder.

use harness::etcd::EtcdServer;
use locks::etcd::channel::channel;
use locks::etcd::rungs::{EtcdLock, RUNGS};
use locks::{Lock, LockConfig, LockContext, Owner, SystemClock, TcpDialer};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common;

/// Three clients take `rung`'s lock on one resource twice each; returns
/// each hold as (start, end, fence), in real time.
async fn take_turns(addr: SocketAddr, rung: &'static str) -> Vec<(Instant, Instant, Option<u64>)> {
    let mut tasks = Vec::new();
    for client in 0..3 {
        tasks.push(tokio::spawn(async move {
            let config = LockConfig {
                ttl: Duration::from_secs(5),
                max_wait: Duration::from_secs(20),
                ..LockConfig::default()
            };
            let ctx = LockContext::new(Arc::new(SystemClock::new()), client);
            let lock = EtcdLock::new(
                rung,
                channel(Arc::new(TcpDialer::new(addr.to_string()))),
                ctx,
                config,
            )
            .expect("an etcd rung");
            let owner = Owner::new(format!("client-{client}"), 0);
            let mut holds = Vec::new();
            for _ in 0..2 {
                let lease = lock.acquire("job", &owner).await.expect("acquired");
                let start = Instant::now();
                tokio::time::sleep(Duration::from_millis(30)).await;
                let end = Instant::now();
                lock.release(&lease).await.expect("released");
                holds.push((start, end, lease.fence));
            }
            holds
        }));
    }
    let mut holds = Vec::new();
    for t in tasks {
        holds.extend(t.await.expect("a client"));
    }
    holds.sort_by_key(|h| h.0);
    holds
}

fn check_turns(what: &str, rung: &str, holds: &[(Instant, Instant, Option<u64>)]) {
    assert_eq!(holds.len(), 6, "{what} {rung}");
    for w in holds.windows(2) {
        assert!(w[0].1 <= w[1].0, "{what} {rung}: two holders at once");
        if rung == "etcd-fenced" {
            assert!(
                w[0].2 < w[1].2,
                "{what} {rung}: tokens must grow: {:?} then {:?}",
                w[0].2,
                w[1].2
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_etcd_rung_takes_turns_on_real_etcd_and_on_the_simulated_member() {
    let simulated = common::start_simulated();
    for rung in RUNGS {
        let holds = take_turns(simulated, rung.id).await;
        check_turns("simulated", rung.id, &holds);
    }
    let real = match EtcdServer::start() {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "real etcd unavailable ({e}); skipping the real arm: scripts/setup installs it"
            );
            return;
        }
    };
    for rung in RUNGS {
        let holds = take_turns(real.addr(), rung.id).await;
        check_turns("real etcd", rung.id, &holds);
    }
}

/// Holds `rung`'s lock for 2.5 times its 2 s lease, then asks for it from
/// a second client for 300 ms: whether that second client got it.
async fn taken_while_held_past_the_lease(addr: SocketAddr, rung: &'static str) -> bool {
    let lock = |client: u64, max_wait_ms: u64| {
        let config = LockConfig {
            ttl: Duration::from_secs(2),
            max_wait: Duration::from_millis(max_wait_ms),
            ..LockConfig::default()
        };
        let ctx = LockContext::new(Arc::new(SystemClock::new()), client);
        EtcdLock::new(
            rung,
            channel(Arc::new(TcpDialer::new(addr.to_string()))),
            ctx,
            config,
        )
        .expect("an etcd rung")
    };
    let (holder, other) = (lock(0, 5_000), lock(1, 300));
    let lease = (holder.acquire("held", &Owner::new("holder", 0)).await).expect("acquired");
    tokio::time::sleep(Duration::from_millis(5_000)).await;
    let taken = (other.acquire("held", &Owner::new("other", 0)).await).is_ok();
    holder.release(&lease).await.expect("released");
    taken
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_keeps_its_lease_alive_past_its_ttl_on_real_etcd_and_on_the_simulated_member() {
    // etcd answers a keep-alive stream's headers only with its first
    // answer: a session that waited for them before its first keep-alive
    // would lose its lease after one TTL, and the second client would
    // get the lock.
    let simulated = common::start_simulated();
    assert!(
        !taken_while_held_past_the_lease(simulated, "etcd-mutex").await,
        "the simulated member let a second client in"
    );
    let real = EtcdServer::start().expect("etcd (scripts/setup installs it)");
    assert!(
        !taken_while_held_past_the_lease(real.addr(), "etcd-mutex").await,
        "real etcd let a second client in"
    );
}
