//! Each rung's properties ([`locks::Rung`]) against what it does on a real
//! `redis-server`: tests and tools pick rungs by these flags, so a flag that
//! no longer matches the code would silently test or measure the wrong rungs.

use crate::common;

use common::*;
use futures::StreamExt;
use locks::{Lease, Lock, LockConfig, LockError, Rung, WaitStrategy};
use std::time::Duration;

/// The key rung `rung` locks in the test named `test`.
fn key(test: &str, rung: &Rung) -> String {
    format!("locklab:test:property:{test}:{}", rung.id)
}

/// Rung `rung` on `server`, its key for `test`, and a lease on that key
/// held by owner `a:1`.
async fn holding(
    rung: &Rung,
    server: &harness::RedisServer,
    test: &str,
) -> (Box<dyn Lock>, String, Lease) {
    let lock = lock(rung.id, server, 1, config(2_000, 50));
    let key = key(test, rung);
    let lease = lock.acquire(&key, &owner("a", 1)).await.expect(rung.id);
    (lock, key, lease)
}

#[tokio::test]
async fn a_rung_excludes_exactly_when_a_second_owner_must_wait() {
    let server = server();
    for rung in locks::LADDER {
        let (holder, key, held) = holding(rung, &server, "excludes").await;
        let rival = lock(rung.id, &server, 2, config(2_000, 50));
        let second = rival.acquire(&key, &owner("b", 1)).await;
        let waited = matches!(second, Err(LockError::NotAcquired { .. }));
        assert_eq!(waited, rung.excludes, "{}: {second:?}", rung.id);
        holder.release(&held).await.expect(rung.id);
    }
}

#[tokio::test]
async fn a_rung_is_reentrant_exactly_when_its_holder_can_acquire_it_again() {
    let server = server();
    for rung in locks::LADDER {
        let (lock, key, outer) = holding(rung, &server, "reentrant").await;
        let nested = lock.acquire(&key, &owner("a", 1)).await;
        let nests = matches!(&nested, Ok(lease) if lease.depth == 2);
        assert_eq!(nests, rung.reentrant, "{}: {nested:?}", rung.id);
        if let Ok(inner) = nested {
            lock.release(&inner).await.expect(rung.id);
        }
        lock.release(&outer).await.expect(rung.id);
    }
}

#[tokio::test]
async fn a_rung_fences_exactly_when_each_grant_carries_a_greater_token() {
    let server = server();
    for rung in locks::LADDER {
        let lock = lock(rung.id, &server, 1, config(2_000, 50));
        let key = key("fencing", rung);
        let mut fences = Vec::new();
        for _ in 0..2 {
            let lease = lock.acquire(&key, &owner("a", 1)).await.expect(rung.id);
            fences.push(lease.fence);
            lock.release(&lease).await.expect(rung.id);
        }
        let fenced = matches!(fences[..], [Some(first), Some(second)] if first < second);
        assert_eq!(fenced, rung.fencing, "{}: {fences:?}", rung.id);
    }
}

#[tokio::test]
async fn a_rung_publishes_exactly_when_its_release_wakes_a_subscriber() {
    let server = server();
    let client = redis::Client::open(server.url()).expect("redis url");
    // The notify strategy without a notifier: releases publish, waits poll.
    let notify = LockConfig {
        wait: WaitStrategy::Notify {
            fallback: Duration::from_millis(5),
        },
        ..config(2_000, 50)
    };
    for rung in locks::LADDER {
        let key = key("publishes", rung);
        let mut subscriber = client.get_async_pubsub().await.expect("subscribe");
        subscriber
            .subscribe(locks::notify::channel(&key))
            .await
            .expect("subscribe");
        let lock = lock(rung.id, &server, 1, notify);
        let lease = lock.acquire(&key, &owner("a", 1)).await.expect(rung.id);
        lock.release(&lease).await.expect(rung.id);
        let mut messages = subscriber.on_message();
        let heard = tokio::time::timeout(Duration::from_millis(200), messages.next())
            .await
            .is_ok_and(|message| message.is_some());
        assert_eq!(heard, rung.publishes, "{}", rung.id);
    }
}

/// Whether the key of a lease held by `rung` outlives the TTL it was first
/// given: holds it, waits that TTL and a margin, and looks. A key with no
/// TTL, or none at all, is not renewed.
async fn outlives_its_first_ttl(rung: &'static Rung, server: &harness::RedisServer) -> bool {
    let raw_conn = conn(server);
    let key = key("renews", rung);
    let lock = lock(rung.id, server, 1, config(300, 50));
    let lease: Lease = lock.acquire(&key, &owner("a", 1)).await.expect(rung.id);
    let first_ttl_ms = pttl(&raw_conn, &key).await;
    let renewed = if first_ttl_ms > 0 {
        let margin_ms = 200;
        tokio::time::sleep(Duration::from_millis(first_ttl_ms as u64 + margin_ms)).await;
        exists(&raw_conn, &key).await
    } else {
        false
    };
    // Expired leases answer `NotHeld`; that is not what this test is about.
    let _ = lock.release(&lease).await;
    renewed
}

#[tokio::test]
async fn a_rung_renews_exactly_when_its_key_outlives_its_first_ttl_while_held() {
    let server = server();
    let observed =
        futures::future::join_all(locks::LADDER.map(|rung| outlives_its_first_ttl(rung, &server)))
            .await;
    for (rung, renewed) in locks::LADDER.into_iter().zip(observed) {
        assert_eq!(renewed, rung.renews, "{}", rung.id);
    }
}

#[tokio::test]
async fn a_rung_is_multi_node_exactly_when_it_locks_on_every_node_it_is_given() {
    let nodes = servers(3);
    let node_refs: Vec<_> = nodes.iter().collect();
    let raw_conns: Vec<Conn> = nodes.iter().map(conn).collect();
    for rung in locks::excluding() {
        let key = key("multi-node", rung);
        let lock = lock_on(rung.id, &node_refs, 1, config(2_000, 50));
        let lease = lock.acquire(&key, &owner("a", 1)).await.expect(rung.id);
        let mut holding = 0;
        for raw_conn in &raw_conns {
            holding += usize::from(exists(raw_conn, &key).await);
        }
        assert_eq!(holding > 1, rung.multi_node, "{}: {holding}", rung.id);
        lock.release(&lease).await.expect(rung.id);
    }
}
