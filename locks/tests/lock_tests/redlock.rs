//! Redlock against five real `redis-server` masters: a majority is enough,
//! a minority is not, and the holder checks its validity before writing.

use crate::common;

use common::*;
use harness::RedisServer;
use locks::{Lock, LockError};
use std::time::Duration;

/// A Redlock over five masters, `silent` of which are then frozen (they
/// answer nothing, as if cut off): the lock, and raw connections to the
/// masters that still answer. Every server runs until the returned ones
/// are dropped. Frozen rather than stopped: a stopped master's port is
/// free, and a server another test starts at that moment may take it and
/// grant the lock in its place.
fn redlock_over_five_with_silent(
    silent: usize,
    max_wait_ms: u64,
) -> (Box<dyn Lock>, Vec<Conn>, Vec<RedisServer>) {
    let masters = servers(5);
    let all: Vec<_> = masters.iter().collect();
    let lock = lock_on("redlock", &all, 1, config(2_000, max_wait_ms));
    let answering = 5 - silent;
    for master in &masters[answering..] {
        master.freeze().unwrap_or_else(|e| panic!("{e}"));
    }
    let live = masters[..answering].iter().map(conn).collect();
    (lock, live, masters)
}

#[tokio::test]
async fn redlock_acquires_with_two_of_five_masters_silent() {
    let (lock, live, _servers) = redlock_over_five_with_silent(2, 300);
    let key = "locklab:test:redlock:majority";
    let lease = lock
        .acquire(key, &owner("a", 1))
        .await
        .expect("majority grants");
    let validity = lease.validity.expect("redlock tracks validity");
    assert!(validity > Duration::from_millis(1_500) && validity < Duration::from_millis(2_000));
    for node in &live {
        let value: Option<String> = raw(node, &["GET", key]).await;
        assert_eq!(value.as_deref(), Some(lease.token.as_str()));
    }
    lock.before_write(&lease).await.expect("valid");
    lock.release(&lease)
        .await
        .expect("release on the live majority");
    for node in &live {
        assert!(!exists(node, key).await);
    }
}

#[tokio::test]
async fn redlock_refuses_with_three_of_five_masters_silent_and_leaves_no_key_behind() {
    let (lock, live, _servers) = redlock_over_five_with_silent(3, 200);
    let key = "locklab:test:redlock:minority";
    let refused = lock.acquire(key, &owner("a", 1)).await;
    assert!(
        matches!(refused, Err(LockError::NotAcquired { .. })),
        "{refused:?}"
    );
    // Each failed attempt released what the minority granted.
    for node in &live {
        assert!(!exists(node, key).await, "a failed attempt left its key");
    }
}

#[tokio::test]
async fn a_redlock_holder_stops_writing_once_its_validity_is_spent() {
    let masters = servers(3);
    let lock = lock_on(
        "redlock",
        &masters.iter().collect::<Vec<_>>(),
        1,
        config(200, 300),
    );
    let lease = lock
        .acquire("locklab:test:redlock:validity", &owner("a", 1))
        .await
        .unwrap();
    lock.before_write(&lease)
        .await
        .expect("fresh lease is valid");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let write = lock.before_write(&lease).await;
    assert!(
        matches!(write, Err(LockError::LeaseLost { .. })),
        "{write:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_never_lets_two_contending_clients_in_at_once() {
    let masters = servers(5);
    let seen = contend("redlock", &masters.iter().collect::<Vec<_>>(), 8, 20).await;
    assert_eq!(seen.max_inside, 1, "{seen:?}");
    assert_eq!(seen.counter, seen.expected, "{seen:?}");
}
