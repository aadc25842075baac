//! The watchdog rung against a real `redis-server`: renewal while held,
//! no renewal after release, and the lost-lease report.

use crate::common;

use common::*;
use locks::{Lock, LockError};
use std::time::Duration;

const TTL_MS: u64 = 300;

/// A fresh server, a raw connection to it, and a watchdog lock on it with
/// a short TTL.
fn watchdog() -> (harness::RedisServer, Conn, Box<dyn Lock>) {
    let (server, raw_conn) = server_and_conn();
    let lock = lock("watchdog", &server, 1, config(TTL_MS, 100));
    (server, raw_conn, lock)
}

#[tokio::test]
async fn the_watchdog_keeps_a_lock_alive_across_three_ttls_while_held() {
    let (_server, raw_conn, lock) = watchdog();
    let key = "locklab:test:watchdog:alive";
    let lease = lock.acquire(key, &owner("a", 1)).await.expect("acquire");
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(TTL_MS)).await;
        assert!(exists(&raw_conn, key).await, "the key expired while held");
        assert!(pttl(&raw_conn, key).await > 0);
    }
    // 4 × TTL later it is still ours: others wait, the holder may write.
    let rival = lock.acquire(key, &owner("b", 1)).await;
    assert!(
        matches!(rival, Err(LockError::NotAcquired { .. })),
        "{rival:?}"
    );
    lock.before_write(&lease).await.expect("still valid");
    assert!(!lease.reported_lost());
    lock.release(&lease).await.expect("release");
    assert!(!exists(&raw_conn, key).await);
}

#[tokio::test]
async fn the_watchdog_stops_renewing_after_the_final_release() {
    let (_server, raw_conn, lock) = watchdog();
    let key = "locklab:test:watchdog:stops";
    let me = owner("a", 1);
    let outer = lock.acquire(key, &me).await.expect("outer");
    let inner = lock.acquire(key, &me).await.expect("nested");
    // The nested release leaves the outer hold renewed.
    lock.release(&inner).await.expect("inner release");
    tokio::time::sleep(Duration::from_millis(2 * TTL_MS)).await;
    assert!(
        exists(&raw_conn, key).await,
        "renewal stopped at a nested release"
    );
    lock.release(&outer).await.expect("outer release");
    assert!(!exists(&raw_conn, key).await);

    // Recreate the hash with the same owner field: a renewal still running
    // would keep re-arming it; stopped, it expires on its own TTL.
    let _: i64 = raw(&raw_conn, &["HSET", key, &me.field(), "1"]).await;
    let _: i64 = raw(&raw_conn, &["PEXPIRE", key, &TTL_MS.to_string()]).await;
    tokio::time::sleep(Duration::from_millis(2 * TTL_MS)).await;
    assert!(
        !exists(&raw_conn, key).await,
        "something kept renewing after release"
    );
}

#[tokio::test]
async fn the_watchdog_reports_the_lease_lost_when_a_renewal_finds_it_gone() {
    let (_server, raw_conn, lock) = watchdog();
    let key = "locklab:test:watchdog:lost";
    let lease = lock.acquire(key, &owner("a", 1)).await.expect("acquire");
    // Someone deletes the key under the holder (as a failover would).
    let _: i64 = raw(&raw_conn, &["DEL", key]).await;
    tokio::time::sleep(Duration::from_millis(TTL_MS)).await;
    assert!(lease.reported_lost());
    let write = lock.before_write(&lease).await;
    assert!(
        matches!(write, Err(LockError::LeaseLost { .. })),
        "{write:?}"
    );
    let released = lock.release(&lease).await;
    assert!(
        matches!(released, Err(LockError::NotHeld { .. })),
        "{released:?}"
    );
}
