//! The library rungs against real `redis-server`: what each library's
//! algorithm does that the ladder's rungs do not (Redisson's reentrancy
//! and renewal, redsync's `WithSetNXOnExtend`, rslock's extension that
//! misses its quorum, node-redlock's lock returned already expired). About
//! two seconds with redis-server.

use crate::common;

use common::*;
use locks::libraries::redsync::Redsync;
use locks::{Lock, LockError};
use std::time::Duration;

#[tokio::test]
async fn redisson_reenters_counts_down_and_keeps_the_key_past_its_ttl() {
    let (server, raw_conn) = server_and_conn();
    let lock = lock("redisson", &server, 1, config(300, 1_000));
    let key = "locklab:test:lib:redisson";
    let me = owner("a", 1);
    let outer = lock.acquire(key, &me).await.expect("acquired");
    let inner = lock.acquire(key, &me).await.expect("re-entered");
    assert_eq!(inner.depth, 2);
    // Three TTLs later the watchdog has kept it.
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert!(exists(&raw_conn, key).await);
    lock.before_write(&outer).await.expect("no check fails");
    lock.release(&inner).await.expect("inner release");
    assert!(exists(&raw_conn, key).await, "one hold is left");
    lock.release(&outer).await.expect("outer release");
    assert!(!exists(&raw_conn, key).await);
}

#[tokio::test]
async fn redsync_with_set_nx_on_extend_puts_back_a_key_a_master_lost() {
    let masters = servers(3);
    let conns: Vec<Conn> = masters.iter().map(conn).collect();
    let key = "locklab:test:lib:redsync";
    for set_nx in [false, true] {
        let mut mutex = Redsync::new(conns.clone(), ctx(7), config(5_000, 1_000));
        if set_nx {
            mutex = mutex.with_set_nx_on_extend();
        }
        let mut lease = mutex.acquire(key, &owner("a", 1)).await.expect("quorum");
        let _: i64 = raw(&conns[0], &["DEL", key]).await;
        mutex
            .extend(&mut lease)
            .await
            .expect("two of three re-armed");
        assert_eq!(exists(&conns[0], key).await, set_nx, "set_nx = {set_nx}");
        mutex.release(&lease).await.expect("released");
    }
}

#[tokio::test]
async fn an_rslock_extension_short_of_its_quorum_deletes_the_lock_everywhere() {
    let masters = servers(3);
    let all: Vec<_> = masters.iter().collect();
    let conns: Vec<Conn> = masters.iter().map(conn).collect();
    let lock = lock_on("rslock", &all, 3, config(5_000, 1_000));
    let key = "locklab:test:lib:rslock";
    let mut lease = lock.acquire(key, &owner("a", 1)).await.expect("quorum");
    for node in &conns[..2] {
        let _: i64 = raw(node, &["DEL", key]).await;
    }
    assert!(exists(&conns[2], key).await);
    let err = lock.extend(&mut lease).await.expect_err("one of three");
    assert!(matches!(err, LockError::LeaseLost { .. }), "{err:?}");
    assert!(
        !exists(&conns[2], key).await,
        "the failed extension deleted the one key that was left"
    );
}

#[tokio::test]
async fn node_redlock_hands_over_a_lock_won_late_already_expired_and_aborts_it() {
    let (server, _raw) = server_and_conn();
    let key = "locklab:test:lib:node-redlock";
    let first = lock("node-redlock", &server, 1, config(300, 5_000));
    let second = lock("node-redlock", &server, 2, config(300, 5_000));
    let held = first.acquire(key, &owner("a", 1)).await.expect("free");
    let release_later = async {
        tokio::time::sleep(Duration::from_millis(400)).await;
        first.release(&held).await.expect("released");
    };
    let b = owner("b", 1);
    let (won, ()) = tokio::join!(second.acquire(key, &b), release_later);
    let won = won.expect("won on a retry after the release");
    // Its expiration (first attempt + 300 ms − drift) is past: the first
    // automatic extension is refused at once and aborts the routine.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let err = second.before_write(&won).await.expect_err("aborted");
    assert!(matches!(err, LockError::LeaseLost { .. }), "{err:?}");
    second
        .release(&won)
        .await
        .expect("the key itself was still set");
}
