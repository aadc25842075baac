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

/// The fair lock's queue, as the fair scripts keep it.
async fn fair_queue(conn: &Conn, key: &str) -> Vec<String> {
    let queue = locks::libraries::redisson_fair::queue_key(key);
    raw(conn, &["LRANGE", &queue, "0", "-1"]).await
}

/// A waiter's deadline in the fair lock's timeout set, if it has one.
async fn fair_deadline(conn: &Conn, key: &str, field: &str) -> Option<f64> {
    let timeouts = locks::libraries::redisson_fair::timeout_key(key);
    raw(conn, &["ZSCORE", &timeouts, field]).await
}

/// Waits until the fair lock's queue holds `n` waiters.
async fn until_queued(conn: &Conn, key: &str, n: usize) {
    for _ in 0..500 {
        if fair_queue(conn, key).await.len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("the queue never reached {n} waiters");
}

#[tokio::test]
async fn redisson_fair_grants_its_waiters_in_the_order_they_arrived() {
    let (server, raw_conn) = server_and_conn();
    let key = "locklab:test:lib:redisson-fair-order";
    let holder = lock("redisson-fair", &server, 1, config(2_000, 5_000));
    let held = holder.acquire(key, &owner("a", 1)).await.expect("free");
    let granted = tokio::sync::Mutex::new(Vec::new());
    let waiters: Vec<_> = ["b", "c", "d"]
        .iter()
        .zip(2u64..)
        .map(|(name, seed)| {
            (
                *name,
                lock("redisson-fair", &server, seed, config(2_000, 5_000)),
            )
        })
        .collect();
    let wait_in_turn = |i: usize| {
        let (name, waiter) = &waiters[i];
        let granted = &granted;
        let raw_conn = &raw_conn;
        async move {
            // Each joins the queue only once the one before it is in it.
            until_queued(raw_conn, key, i).await;
            let lease = waiter
                .acquire(key, &owner(name, 1))
                .await
                .expect("its turn");
            granted.lock().await.push(*name);
            tokio::time::sleep(Duration::from_millis(20)).await;
            waiter.release(&lease).await.expect("released");
        }
    };
    let release_when_all_wait = async {
        until_queued(&raw_conn, key, 3).await;
        assert_eq!(fair_queue(&raw_conn, key).await, ["b:1", "c:1", "d:1"]);
        holder.release(&held).await.expect("released");
    };
    tokio::join!(
        wait_in_turn(0),
        wait_in_turn(1),
        wait_in_turn(2),
        release_when_all_wait
    );
    assert_eq!(*granted.lock().await, ["b", "c", "d"]);
    assert!(fair_queue(&raw_conn, key).await.is_empty());
    assert!(!exists(&raw_conn, key).await);
}

#[tokio::test]
async fn a_redisson_fair_waiter_that_gives_up_leaves_the_queue_and_blocks_nobody() {
    let (server, raw_conn) = server_and_conn();
    let key = "locklab:test:lib:redisson-fair-give-up";
    let holder = lock("redisson-fair", &server, 1, config(2_000, 5_000));
    let held = holder.acquire(key, &owner("a", 1)).await.expect("free");
    // B waits 300 ms, so its deadline in the queue is the lock's TTL plus
    // 300 ms away, and C's is 5 s after B's.
    let quitter = lock("redisson-fair", &server, 2, config(2_000, 300));
    let patient = lock("redisson-fair", &server, 3, config(2_000, 5_000));
    let (b_left, b_has_left) = tokio::sync::oneshot::channel();
    let b_gives_up = async {
        let err = quitter
            .acquire(key, &owner("b", 1))
            .await
            .expect_err("held");
        assert!(matches!(err, LockError::NotAcquired { .. }), "{err:?}");
        b_left.send(()).expect("the holder listens");
    };
    let c_waits = async {
        until_queued(&raw_conn, key, 1).await;
        let lease = patient
            .acquire(key, &owner("c", 1))
            .await
            .expect("C's turn");
        let got_it = tokio::time::Instant::now();
        patient.release(&lease).await.expect("released");
        got_it
    };
    let release_after_b_left = async {
        until_queued(&raw_conn, key, 2).await;
        assert_eq!(fair_queue(&raw_conn, key).await, ["b:1", "c:1"]);
        let before = fair_deadline(&raw_conn, key, "c:1").await.expect("queued");
        b_has_left.await.expect("B gave up");
        // B is out of the queue and C moved up one step of B's (300 ms).
        assert_eq!(fair_queue(&raw_conn, key).await, ["c:1"]);
        assert_eq!(fair_deadline(&raw_conn, key, "b:1").await, None);
        let after = fair_deadline(&raw_conn, key, "c:1").await.expect("queued");
        assert_eq!(before - after, 300.0);
        holder.release(&held).await.expect("released");
        tokio::time::Instant::now()
    };
    let ((), got_it, released) = tokio::join!(b_gives_up, c_waits, release_after_b_left);
    // C did not wait for B's deadline (the lock's TTL and more away).
    assert!(
        got_it.duration_since(released) < Duration::from_millis(500),
        "{:?}",
        got_it.duration_since(released)
    );
}

/// A connection whose replies are due within `response_timeout_ms`.
fn conn_due_within(server: &harness::RedisServer, response_timeout_ms: u64) -> Conn {
    locks::ReconnectingConnection::new(
        locks::TcpDialer::new(server.addr().to_string()),
        locks::ConnConfig {
            connect_timeout: Duration::from_millis(500),
            response_timeout: Duration::from_millis(response_timeout_ms),
        },
    )
}

/// A connection whose replies are due within 100 ms.
fn quick_conn(server: &harness::RedisServer) -> Conn {
    conn_due_within(server, 100)
}

#[tokio::test]
async fn a_blpop_longer_than_the_response_timeout_is_not_taken_for_a_dead_server() {
    let (server, raw_conn) = server_and_conn();
    // A pop three times the response timeout: the pop's reply is due
    // within its own 3 s plus the 1 s response timeout, a margin wide
    // enough for a loaded machine's scheduling, where a bare 1 s
    // deadline would have failed it long before.
    let conn = conn_due_within(&server, 1_000);
    let key = "locklab:test:lib:blpop-long";
    let started = std::time::Instant::now();
    let blocked = async {
        let mut conn = conn.clone();
        let popped: redis::Value = redis::cmd("BLPOP")
            .arg(key)
            .arg("3")
            .query_async(&mut conn)
            .await
            .expect("a pop that times out on the server is an answer");
        popped
    };
    // Meanwhile the same client's other commands are answered at once:
    // the pop waits on a connection of its own.
    let meanwhile = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut conn = conn.clone();
        let _: () = redis::cmd("SET")
            .arg("locklab:test:lib:blpop-other")
            .arg(1)
            .query_async(&mut conn)
            .await
            .expect("answered within the response timeout beside the pop");
    };
    let (popped, ()) = tokio::join!(blocked, meanwhile);
    assert_eq!(popped, redis::Value::Nil);
    assert!(started.elapsed() >= Duration::from_millis(2_900));
    let _: i64 = raw(&raw_conn, &["DEL", "locklab:test:lib:blpop-other"]).await;
}

#[tokio::test]
async fn a_blpop_given_up_by_its_client_does_not_take_the_next_element() {
    let (server, raw_conn) = server_and_conn();
    let conn = quick_conn(&server);
    let key = "locklab:test:lib:blpop-given-up";
    let mut blocking = conn.clone();
    let mut blpop = redis::cmd("BLPOP");
    blpop.arg(key).arg(5);
    let pop = blpop.query_async::<redis::Value>(&mut blocking);
    assert!(
        tokio::time::timeout(Duration::from_millis(100), pop)
            .await
            .is_err(),
        "nothing to pop yet"
    );
    // Give the server a moment to see the given-up connection close.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _: i64 = raw(&raw_conn, &["LPUSH", key, "1"]).await;
    assert_eq!(
        raw::<i64>(&raw_conn, &["LLEN", key]).await,
        1,
        "a client that is gone popped the element"
    );
    let _: i64 = raw(&raw_conn, &["DEL", key]).await;
}

#[tokio::test]
async fn python_redis_lock_wakes_its_waiter_with_the_release_signal_and_renews() {
    let (server, raw_conn) = server_and_conn();
    let key = "lock:locklab-test-pyrl";
    let first = lock("python-redis-lock", &server, 1, config(300, 5_000));
    let second = lock("python-redis-lock", &server, 2, config(300, 5_000));
    let held = first.acquire(key, &owner("a", 1)).await.expect("free");
    // Three TTLs later the renewal thread has kept it.
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert!(exists(&raw_conn, key).await);
    let released_at = std::time::Instant::now();
    let release_later = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        first.release(&held).await.expect("released");
    };
    let b = owner("b", 1);
    let (won, ()) = tokio::join!(second.acquire(key, &b), release_later);
    let won = won.expect("acquired after the release");
    // Woken by the signal, not by its 5 s BLPOP timeout.
    assert!(released_at.elapsed() < Duration::from_millis(1_000));
    let err = first.release(&held).await.expect_err("not the owner now");
    assert!(matches!(err, LockError::NotHeld { .. }), "{err:?}");
    second.release(&won).await.expect("released");
    assert!(!exists(&raw_conn, key).await);
    assert!(exists(&raw_conn, "lock-signal:locklab-test-pyrl").await);
}

#[tokio::test]
async fn redisson_rw_readers_share_the_lock_and_a_writer_waits_until_the_last_leaves() {
    let (server, raw_conn) = server_and_conn();
    let key = "locklab:test:lib:redisson-rw-share";
    let rw = |seed| lock("redisson-rw", &server, seed, config(2_000, 300));
    let (a, b, writer) = (rw(1), rw(2), rw(3));
    let read_a = a.acquire_shared(key, &owner("a", 1)).await.expect("free");
    let read_b = b.acquire_shared(key, &owner("b", 1)).await.expect("shared");
    assert!(read_a.shared && read_b.shared);
    let mode: Option<String> = raw(&raw_conn, &["HGET", key, "mode"]).await;
    assert_eq!(mode.as_deref(), Some("read"));
    let kept_out = writer.acquire(key, &owner("w", 1)).await;
    assert!(
        matches!(kept_out, Err(LockError::NotAcquired { .. })),
        "{kept_out:?}"
    );
    a.release(&read_a).await.expect("released");
    assert!(exists(&raw_conn, key).await, "b still reads");
    b.release(&read_b).await.expect("released");
    assert!(
        !exists(&raw_conn, key).await,
        "the last reader deletes the hash"
    );
    let write = writer.acquire(key, &owner("w", 1)).await.expect("free");
    assert!(!write.shared);
    let mode: Option<String> = raw(&raw_conn, &["HGET", key, "mode"]).await;
    assert_eq!(mode.as_deref(), Some("write"));
    let reader_kept_out = a.acquire_shared(key, &owner("a", 1)).await;
    assert!(reader_kept_out.is_err(), "{reader_kept_out:?}");
    writer.release(&write).await.expect("released");
    assert!(!exists(&raw_conn, key).await);
}

#[tokio::test]
async fn a_redisson_rw_readers_watchdog_re_arms_a_dead_readers_hold_too() {
    let (server, raw_conn) = server_and_conn();
    let key = "locklab:test:lib:redisson-rw-zombie";
    let ttl_ms = 600;
    let dead = lock("redisson-rw", &server, 1, config(ttl_ms, 300));
    let live = lock("redisson-rw", &server, 2, config(ttl_ms, 300));
    dead.acquire_shared(key, &owner("dead", 1))
        .await
        .expect("free");
    // The dead reader's process is gone: its watchdog with it.
    drop(dead);
    let dead_hold = locks::libraries::redisson_rw::timeout_prefix(key, "dead:1") + ":1";
    let held = live
        .acquire_shared(key, &owner("live", 1))
        .await
        .expect("shared");
    // Past the dead hold's own lease, the live reader's ticks (every
    // TTL/3) have kept it alive.
    tokio::time::sleep(Duration::from_millis(ttl_ms * 2)).await;
    assert!(
        exists(&raw_conn, &dead_hold).await,
        "the dead hold was re-armed"
    );
    live.release(&held).await.expect("released");
    // The live reader is gone, but the hash lives on for the dead hold.
    assert!(exists(&raw_conn, key).await);
    let left = pttl(&raw_conn, key).await;
    assert!(left > 0 && left <= ttl_ms as i64, "{left}");
}

/// The semaphore's free permits, as its counter holds them.
async fn free_permits(conn: &Conn, key: &str) -> Option<i64> {
    raw(conn, &["GET", key]).await
}

/// The permit ids in the semaphore's timeout set.
async fn permit_ids(conn: &Conn, key: &str) -> Vec<String> {
    let timeouts = locks::libraries::redisson_semaphore::timeout_key(key);
    raw(conn, &["ZRANGE", &timeouts, "0", "-1"]).await
}

#[tokio::test]
async fn redisson_semaphore_sets_its_one_permit_takes_it_and_gives_it_back() {
    let (server, raw_conn) = server_and_conn();
    let key = "locklab:test:lib:semaphore";
    let first = lock("redisson-semaphore", &server, 1, config(2_000, 300));
    let second = lock("redisson-semaphore", &server, 2, config(2_000, 300));
    let held = first.acquire(key, &owner("a", 1)).await.expect("free");
    assert_eq!(free_permits(&raw_conn, key).await, Some(0));
    assert_eq!(permit_ids(&raw_conn, key).await, [held.token.as_str()]);
    // The second caller's trySetPermits(1) finds the counter at 0 and
    // leaves it: the permit is taken, not missing.
    let err = second
        .acquire(key, &owner("b", 1))
        .await
        .expect_err("one permit");
    assert!(matches!(err, LockError::NotAcquired { .. }), "{err:?}");
    assert_eq!(free_permits(&raw_conn, key).await, Some(0));
    // Not reentrant: the holder's own second acquire waits like anyone.
    first
        .acquire(key, &owner("a", 1))
        .await
        .expect_err("a semaphore does not re-enter");
    first.release(&held).await.expect("released in time");
    assert_eq!(free_permits(&raw_conn, key).await, Some(1));
    assert!(permit_ids(&raw_conn, key).await.is_empty());
    let again = second
        .acquire(key, &owner("b", 1))
        .await
        .expect("free again");
    second.release(&again).await.expect("released");
    let _: i64 = raw(&raw_conn, &["DEL", key]).await;
}

#[tokio::test]
async fn a_redisson_semaphore_permit_past_its_lease_goes_to_the_next_caller() {
    let (server, raw_conn) = server_and_conn();
    let key = "locklab:test:lib:semaphore-expiry";
    let first = lock("redisson-semaphore", &server, 1, config(300, 5_000));
    let second = lock("redisson-semaphore", &server, 2, config(300, 5_000));
    let held = first.acquire(key, &owner("a", 1)).await.expect("free");
    let started = std::time::Instant::now();
    let won = second
        .acquire(key, &owner("b", 1))
        .await
        .expect("the lease ends and the next try sweeps it");
    // Not before the lease ended: the sweep is what freed it.
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert_eq!(permit_ids(&raw_conn, key).await, [won.token.as_str()]);
    // The first holder was never told; its release is.
    first.before_write(&held).await.expect("no check fails");
    let err = first.release(&held).await.expect_err("swept");
    assert!(matches!(err, LockError::NotHeld { .. }), "{err:?}");
    assert_eq!(free_permits(&raw_conn, key).await, Some(0), "B's permit");
    second.release(&won).await.expect("released");
    let _: i64 = raw(&raw_conn, &["DEL", key]).await;
}

#[tokio::test]
async fn a_late_redisson_semaphore_release_gives_the_permit_back_and_throws() {
    let (server, raw_conn) = server_and_conn();
    let key = "locklab:test:lib:semaphore-late";
    let holder = lock("redisson-semaphore", &server, 1, config(200, 1_000));
    let held = holder.acquire(key, &owner("a", 1)).await.expect("free");
    // Past its lease, but nobody swept it: the id is still in the set.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(permit_ids(&raw_conn, key).await, [held.token.as_str()]);
    let err = holder.release(&held).await.expect_err("late");
    assert!(matches!(err, LockError::NotHeld { .. }), "{err:?}");
    // Given back all the same: one free permit, no more.
    assert_eq!(free_permits(&raw_conn, key).await, Some(1));
    assert!(permit_ids(&raw_conn, key).await.is_empty());
    let err = holder.release(&held).await.expect_err("already released");
    assert!(matches!(err, LockError::NotHeld { .. }), "{err:?}");
    assert_eq!(free_permits(&raw_conn, key).await, Some(1));
    let _: i64 = raw(&raw_conn, &["DEL", key]).await;
}

#[tokio::test]
async fn redisson_semaphore_update_lease_time_keeps_a_permit_only_while_it_lasts() {
    let (server, raw_conn) = server_and_conn();
    let key = "locklab:test:lib:semaphore-update";
    let holder = lock("redisson-semaphore", &server, 1, config(300, 1_000));
    let mut held = holder.acquire(key, &owner("a", 1)).await.expect("free");
    // Moved three times, each before the lease ended: still mine at 600 ms.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        holder.extend(&mut held).await.expect("in time");
    }
    assert_eq!(permit_ids(&raw_conn, key).await, [held.token.as_str()]);
    // Too late: the update's own sweep gives the permit back first.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let err = holder.extend(&mut held).await.expect_err("ended");
    assert!(matches!(err, LockError::NotHeld { .. }), "{err:?}");
    assert_eq!(free_permits(&raw_conn, key).await, Some(1));
    let _: i64 = raw(&raw_conn, &["DEL", key]).await;
}
