//! Redlock against five real `redis-server` masters: a majority is enough,
//! a minority is not, and the holder checks its validity before writing.

mod common;

use common::*;
use locks::LockError;
use std::time::Duration;

#[tokio::test]
async fn redlock_acquires_with_two_of_five_masters_stopped() {
    let mut masters = servers(5);
    let lock = lock_on(
        "redlock",
        &masters.iter().collect::<Vec<_>>(),
        1,
        config(2_000, 300),
    );
    let live: Vec<Conn> = masters[..3].iter().map(conn).collect();
    for _ in 0..2 {
        masters.pop().expect("master").stop();
    }
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
async fn redlock_refuses_with_three_of_five_masters_stopped_and_leaves_no_key_behind() {
    let mut masters = servers(5);
    let lock = lock_on(
        "redlock",
        &masters.iter().collect::<Vec<_>>(),
        1,
        config(2_000, 200),
    );
    let live: Vec<Conn> = masters[..2].iter().map(conn).collect();
    for _ in 0..3 {
        masters.pop().expect("master").stop();
    }
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
