//! The `notify` wait strategy against a real `redis-server`: waiters are
//! woken by the release's pub/sub message (not by their fallback poll),
//! exclusion holds, a client's tasks take turns strictly in order, a
//! reentrant holder is not stuck behind its own waiters, and subscriptions
//! end with the waits.

use crate::common;

use common::*;
use locks::{ConnConfig, LockConfig, ReleaseNotifier, TcpDialer, WaitStrategy};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Notify with a fallback so long that only messages can explain fast waits.
fn notify_config(fallback_ms: u64) -> LockConfig {
    LockConfig {
        wait: WaitStrategy::Notify {
            fallback: Duration::from_millis(fallback_ms),
        },
        ..config(5_000, 10_000)
    }
}

fn notifier(server: &harness::RedisServer) -> Arc<ReleaseNotifier> {
    Arc::new(ReleaseNotifier::new(
        TcpDialer::new(server.addr().to_string()),
        ConnConfig::default(),
    ))
}

#[tokio::test]
async fn waiters_are_woken_by_the_release_message_in_turn_and_exclusively() {
    let server = server();
    let ctx = ctx(1).with_notifier(notifier(&server));
    for id in locks::LADDER
        .into_iter()
        .filter(|r| r.publishes)
        .map(|r| r.id)
    {
        let lock = Arc::new(
            locks::build(id, vec![conn(&server)], ctx.clone(), notify_config(2_000)).unwrap(),
        );
        let key = format!("locklab:test:notify:{id}");
        let inside = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for task in 0..8u64 {
            let (lock, key, inside) = (lock.clone(), key.clone(), inside.clone());
            tasks.push(tokio::spawn(async move {
                let me = owner("client", task);
                let mut got = 0u32;
                for _ in 0..20 {
                    let lease = lock.acquire(&key, &me).await.expect("acquire");
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                    tokio::time::sleep(Duration::from_micros(200)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    lock.release(&lease).await.expect("release");
                    got += 1;
                }
                got
            }));
        }
        for task in tasks {
            assert_eq!(task.await.unwrap(), 20);
        }
        // 160 handoffs: with a 2 s fallback, polling alone would take
        // minutes; messages make it well under a second here.
        let took = started.elapsed();
        assert!(took < Duration::from_secs(4), "{id}: {took:?}");
    }
    // Subscriptions end once nobody waits (unsubscribed in the background).
    let n = ctx.notifier.clone().unwrap();
    for _ in 0..100 {
        if n.subscribed_channels().await == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(n.subscribed_channels().await, 0);
}

#[tokio::test]
async fn a_lock_that_is_not_reentrant_is_taken_by_its_clients_tasks_strictly_in_turn() {
    // A 1 ms fallback: a queued task that tried on its own would often find
    // the lock free between a release and the head's try, and take a turn
    // out of order. Only the head of the queue tries, so the order of the
    // first round repeats exactly, however the turns are timed.
    const TASKS: usize = 4;
    const ROUNDS: usize = 15;
    let server = server();
    let ctx = ctx(3).with_notifier(notifier(&server));
    let lock =
        Arc::new(locks::build("lua-release", vec![conn(&server)], ctx, notify_config(1)).unwrap());
    let key = "locklab:test:notify:in-turn";
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let (lock, order) = (lock.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let me = owner("client", task as u64);
            for _ in 0..ROUNDS {
                let lease = lock.acquire(key, &me).await.expect("acquire");
                order.lock().unwrap().push(task);
                tokio::time::sleep(Duration::from_millis(3)).await;
                lock.release(&lease).await.expect("release");
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let order = order.lock().unwrap().clone();
    assert_eq!(order.len(), TASKS * ROUNDS);
    for turn in TASKS..order.len() {
        assert_eq!(
            order[turn],
            order[turn - TASKS],
            "turn {turn} out of order: {order:?}"
        );
    }
}

#[tokio::test]
async fn a_reentrant_holder_re_enters_although_its_client_has_waiters_queued() {
    let server = server();
    let ctx = ctx(2).with_notifier(notifier(&server));
    let lock =
        Arc::new(locks::build("reentrant", vec![conn(&server)], ctx, notify_config(20)).unwrap());
    let key = "locklab:test:notify:nested";
    let holder = owner("client", 1);
    let outer = lock.acquire(key, &holder).await.unwrap();
    let waiter = {
        let lock = lock.clone();
        tokio::spawn(async move { lock.acquire(key, &owner("client", 2)).await })
    };
    tokio::time::sleep(Duration::from_millis(30)).await;
    // The waiter heads the queue; the holder's nested acquire still succeeds
    // (it tries every fallback while queued).
    let inner = tokio::time::timeout(Duration::from_secs(2), lock.acquire(key, &holder))
        .await
        .expect("nested acquire stuck behind a waiter")
        .unwrap();
    assert_eq!(inner.depth, 2);
    lock.release(&inner).await.unwrap();
    lock.release(&outer).await.unwrap();
    let lease = waiter
        .await
        .unwrap()
        .expect("waiter acquires after release");
    lock.release(&lease).await.unwrap();
}

#[tokio::test]
async fn without_a_notifier_notify_polls_every_fallback() {
    let server = server();
    let lock = lock("lua-release", &server, 3, notify_config(5));
    let other = lock_on("lua-release", &[&server], 4, notify_config(5));
    let key = "locklab:test:notify:poll";
    let held = lock.acquire(key, &owner("a", 1)).await.unwrap();
    let waiter = tokio::spawn(async move { other.acquire(key, &owner("b", 1)).await.map(|_| ()) });
    tokio::time::sleep(Duration::from_millis(20)).await;
    lock.release(&held).await.unwrap();
    tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .expect("poll")
        .unwrap()
        .unwrap();
}
