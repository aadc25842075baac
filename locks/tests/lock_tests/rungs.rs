//! Every rung against a real `redis-server`: acquire and release, mutual
//! exclusion under contention, ownership on release, nesting, and the flaws
//! that need no fault injection to show.

use crate::common;

use common::*;
use locks::{BoxFuture, Clock, LockError, SystemClock};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn every_rung_acquires_and_releases_with_its_real_commands() {
    let (server, raw_conn) = server_and_conn();
    for rung in locks::LADDER {
        let id = rung.id;
        let lock = lock(id, &server, rung.number.into(), config(2_000, 500));
        assert_eq!(lock.rung().id, id);
        let key = format!("locklab:test:basic:{id}");
        let lease = lock.acquire(&key, &owner("a", 1)).await.expect(id);
        // A rung that does not exclude writes nothing; the others leave a key.
        assert_eq!(exists(&raw_conn, &key).await, rung.excludes, "{id}");
        lock.before_write(&lease).await.expect(id);
        lock.release(&lease).await.expect(id);
        assert!(!exists(&raw_conn, &key).await, "{id} left its key behind");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_lock_concurrent_buyers_overlap_and_lose_updates() {
    let server = server();
    let seen = contend("no-lock", &[&server], 8, 20).await;
    assert!(seen.max_inside > 1, "{seen:?}");
    assert!(seen.counter < seen.expected, "{seen:?}");
}

async fn assert_exclusive(id: &str) {
    let server = server();
    let seen = contend(id, &[&server], 8, 20).await;
    assert_eq!(
        seen.max_inside, 1,
        "{id}: two clients inside at once: {seen:?}"
    );
    assert_eq!(seen.counter, seen.expected, "{id}: lost updates: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setnx_never_lets_two_contending_clients_in_at_once() {
    assert_exclusive("setnx").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setnx_expire_never_lets_two_contending_clients_in_at_once() {
    assert_exclusive("setnx-expire").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_timestamp_never_lets_two_contending_clients_in_at_once_when_clocks_agree() {
    assert_exclusive("set-timestamp").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_nx_px_never_lets_two_contending_clients_in_at_once() {
    assert_exclusive("set-nx-px").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_check_del_never_lets_two_contending_clients_in_at_once() {
    assert_exclusive("get-check-del").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lua_release_never_lets_two_contending_clients_in_at_once() {
    assert_exclusive("lua-release").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reentrant_never_lets_two_contending_clients_in_at_once() {
    assert_exclusive("reentrant").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_never_lets_two_contending_clients_in_at_once() {
    assert_exclusive("watchdog").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_never_lets_two_contending_clients_in_at_once_and_its_tokens_strictly_increase() {
    let server = server();
    let seen = contend("fenced", &[&server], 8, 20).await;
    assert_eq!(seen.max_inside, 1, "{seen:?}");
    assert_eq!(seen.counter, seen.expected, "{seen:?}");
    assert_eq!(seen.fences.len() as u64, seen.expected);
    assert!(
        seen.fences.windows(2).all(|w| w[0] < w[1]),
        "{:?}",
        seen.fences
    );
}

#[tokio::test]
async fn fencing_tokens_strictly_increase_across_clients_and_grants() {
    let server = server();
    let a = lock("fenced", &server, 1, config(2_000, 500));
    let b = lock("fenced", &server, 2, config(2_000, 500));
    let key = "locklab:test:fence";
    let mut last = 0;
    for round in 0..6 {
        let (lock, who) = if round % 2 == 0 { (&a, "a") } else { (&b, "b") };
        let lease = lock.acquire(key, &owner(who, 1)).await.expect("acquire");
        let fence = lease.fence.expect("fenced leases carry a token");
        assert!(fence > last, "token {fence} after {last}");
        last = fence;
        lock.release(&lease).await.expect("release");
    }
    // A refused acquire does not consume a token.
    let held = a.acquire(key, &owner("a", 1)).await.expect("acquire");
    let refused = b.acquire(key, &owner("b", 1)).await;
    assert!(matches!(refused, Err(LockError::NotAcquired { .. })));
    assert_eq!(held.fence, Some(last + 1));
}

#[tokio::test]
async fn releasing_another_owners_lock_is_refused_from_get_check_del_up() {
    let (server, raw_conn) = server_and_conn();
    for rung in rungs_from("get-check-del") {
        let (id, seed) = (rung.id, u64::from(rung.number));
        let a = lock(id, &server, 10 + seed, config(2_000, 300));
        let b = lock(id, &server, 50 + seed, config(2_000, 300));
        let key = format!("locklab:test:notheld:{id}");
        let old = a.acquire(&key, &owner("a", 1)).await.expect(id);
        a.release(&old).await.expect(id);
        let current = b.acquire(&key, &owner("b", 1)).await.expect(id);
        // A releases its old lease again: B holds the lock now.
        match a.release(&old).await {
            Err(LockError::NotHeld { resource }) => assert_eq!(resource, key),
            other => panic!("{id}: releasing B's lock gave {other:?}"),
        }
        assert!(exists(&raw_conn, &key).await, "{id}: B's lock was deleted");
        b.release(&current).await.expect(id);
    }
}

#[tokio::test]
async fn an_expired_lease_is_not_held_and_its_release_says_so_from_get_check_del_up() {
    let server = server();
    // A rung that renews its lease keeps it from expiring.
    for rung in rungs_from("get-check-del").filter(|r| !r.renews) {
        let id = rung.id;
        let a = lock(id, &server, 100 + u64::from(rung.number), config(100, 300));
        let key = format!("locklab:test:expired:{id}");
        let lease = a.acquire(&key, &owner("a", 1)).await.expect(id);
        tokio::time::sleep(Duration::from_millis(150)).await;
        let released = a.release(&lease).await;
        assert!(
            matches!(released, Err(LockError::NotHeld { .. })),
            "{id}: {released:?}"
        );
    }
}

#[tokio::test]
async fn set_nx_px_plain_del_removes_the_next_holders_lock_after_expiry() {
    let (server, raw_conn) = server_and_conn();
    let a = lock("set-nx-px", &server, 1, config(100, 300));
    let b = lock("set-nx-px", &server, 2, config(5_000, 300));
    let key = "locklab:test:plain-del";
    let late = a.acquire(key, &owner("a", 1)).await.expect("a");
    tokio::time::sleep(Duration::from_millis(150)).await; // A's lease expires
    let _current = b.acquire(key, &owner("b", 1)).await.expect("b");
    // The flaw: A's release succeeds and deletes B's lock.
    a.release(&late).await.expect("plain DEL never refuses");
    assert!(!exists(&raw_conn, key).await, "B's lock should be gone");
    // ...so a third client gets in while B still believes it holds.
    let c = lock("set-nx-px", &server, 3, config(5_000, 300));
    c.acquire(key, &owner("c", 1))
        .await
        .expect("c enters beside b");
}

#[tokio::test]
async fn setnx_release_deletes_whatever_lock_is_there() {
    let (server, raw_conn) = server_and_conn();
    let a = lock("setnx", &server, 1, config(2_000, 300));
    let key = "locklab:test:setnx-blind";
    let old = a.acquire(key, &owner("a", 1)).await.expect("a");
    a.release(&old).await.expect("a");
    let b = lock("setnx", &server, 2, config(2_000, 300));
    let _current = b.acquire(key, &owner("b", 1)).await.expect("b");
    a.release(&old).await.expect("never NotHeld");
    assert!(!exists(&raw_conn, key).await);
}

#[tokio::test]
async fn setnx_leaves_no_ttl_and_setnx_expire_leaves_one_in_whole_seconds() {
    let (server, raw_conn) = server_and_conn();
    let setnx = lock("setnx", &server, 1, config(1_500, 300));
    let lease = setnx
        .acquire("locklab:test:ttl:setnx", &owner("a", 1))
        .await
        .unwrap();
    assert_eq!(pttl(&raw_conn, "locklab:test:ttl:setnx").await, -1);
    setnx.release(&lease).await.unwrap();

    let expiring = lock("setnx-expire", &server, 2, config(1_500, 300));
    let key = "locklab:test:ttl:setnx-expire";
    let lease = expiring.acquire(key, &owner("a", 1)).await.unwrap();
    let left = pttl(&raw_conn, key).await;
    // 1.5 s rounds up to EXPIRE 2.
    assert!((1_500..=2_000).contains(&left), "pttl {left}");
    expiring.release(&lease).await.unwrap();
}

#[tokio::test]
async fn a_reentrant_owner_nests_and_unwinds_while_others_wait() {
    let (server, raw_conn) = server_and_conn();
    for rung in locks::LADDER.into_iter().filter(|r| r.reentrant) {
        let id = rung.id;
        let lock = lock(id, &server, rung.number.into(), config(2_000, 200));
        let key = format!("locklab:test:nest:{id}");
        let me = owner("a", 7);
        let mut leases = Vec::new();
        for depth in 1..=3 {
            let lease = lock.acquire(&key, &me).await.expect(id);
            assert_eq!(lease.depth, depth, "{id}");
            leases.push(lease);
        }
        let count: i64 = raw(&raw_conn, &["HGET", &key, &me.field()]).await;
        assert_eq!(count, 3, "{id}");
        // Another task of the same client is another owner: it waits.
        let other = lock.acquire(&key, &owner("a", 8)).await;
        assert!(
            matches!(other, Err(LockError::NotAcquired { .. })),
            "{id}: {other:?}"
        );
        while let Some(lease) = leases.pop() {
            lock.release(&lease).await.expect(id);
            assert_eq!(exists(&raw_conn, &key).await, !leases.is_empty(), "{id}");
        }
        let extra = lock
            .release(&lock.acquire(&key, &me).await.expect(id))
            .await;
        assert!(extra.is_ok(), "{id}");
        let once_more = lock.release(&forged_lease(&key, &me)).await;
        assert!(
            matches!(once_more, Err(LockError::NotHeld { .. })),
            "{id}: {once_more:?}"
        );
    }
}

/// A lease for `owner` on `key` that the server no longer has.
fn forged_lease(key: &str, owner: &locks::Owner) -> locks::Lease {
    locks::Lease::new(key, owner.field(), owner, Duration::ZERO)
}

#[tokio::test]
async fn a_nested_acquire_blocks_on_itself_on_the_rungs_that_are_not_reentrant() {
    let server = server();
    for rung in locks::excluding().filter(|r| !r.reentrant) {
        let id = rung.id;
        let lock = lock(id, &server, rung.number.into(), config(2_000, 100));
        let key = format!("locklab:test:self-block:{id}");
        let me = owner("a", 1);
        let outer = lock.acquire(&key, &me).await.expect(id);
        let nested = lock.acquire(&key, &me).await;
        match nested {
            Err(LockError::NotAcquired {
                attempts, waited, ..
            }) => {
                assert!(attempts > 1, "{id}");
                assert!(waited >= Duration::from_millis(100), "{id}");
            }
            other => panic!("{id}: nested acquire gave {other:?}"),
        }
        lock.release(&outer).await.expect(id);
    }
}

#[tokio::test]
async fn extend_rearms_the_ttl_where_the_rung_has_one_and_is_unsupported_otherwise() {
    let (server, raw_conn) = server_and_conn();
    for rung in locks::excluding() {
        let id = rung.id;
        let lock = lock(id, &server, rung.number.into(), config(1_000, 300));
        let key = format!("locklab:test:extend:{id}");
        let mut lease = lock.acquire(&key, &owner("a", 1)).await.expect(id);
        let extended = lock.extend(&mut lease).await;
        match id {
            "setnx" | "set-timestamp" => {
                assert!(
                    matches!(extended, Err(LockError::Unsupported { .. })),
                    "{id}"
                )
            }
            // `setnx-expire` re-arms in whole seconds.
            _ => {
                extended.expect(id);
                let left = pttl(&raw_conn, &key).await;
                assert!(left > 800, "{id}: pttl {left}");
            }
        }
        lock.release(&lease).await.expect(id);
    }
}

/// The machine's clock, shifted: a client whose wall clock is wrong.
struct SkewedClock {
    inner: SystemClock,
    ahead_ms: u64,
}

impl Clock for SkewedClock {
    fn wall_ms(&self) -> u64 {
        self.inner.wall_ms() + self.ahead_ms
    }
    fn monotonic(&self) -> Duration {
        self.inner.monotonic()
    }
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.inner.sleep(duration)
    }
}

#[tokio::test]
async fn set_timestamp_deletes_a_live_lock_when_the_waiters_clock_runs_ahead() {
    let (server, raw_conn) = server_and_conn();
    let key = "locklab:test:skew";
    let holder = lock("set-timestamp", &server, 1, config(5_000, 200));
    let held = holder.acquire(key, &owner("a", 1)).await.expect("holder");
    assert!(pttl(&raw_conn, key).await > 4_000, "the lock is alive");

    // A waiter whose clock agrees waits and gives up.
    let honest = lock("set-timestamp", &server, 2, config(5_000, 100));
    let refused = honest.acquire(key, &owner("b", 1)).await;
    assert!(
        matches!(refused, Err(LockError::NotAcquired { .. })),
        "{refused:?}"
    );

    // A waiter 10 s ahead judges the live lock stale, deletes it, enters.
    let skewed: Arc<dyn Clock> = Arc::new(SkewedClock {
        inner: SystemClock::new(),
        ahead_ms: 10_000,
    });
    let nodes = vec![conn(&server)];
    let ahead = locks::build(
        "set-timestamp",
        nodes,
        ctx_with(skewed, 3),
        config(5_000, 200),
    )
    .expect("rung");
    let stolen = ahead
        .acquire(key, &owner("c", 1))
        .await
        .expect("skewed waiter enters");
    assert_ne!(stolen.token, held.token);
    // Two holders now; the first one's release sees it is not its lock.
    let released = holder.release(&held).await;
    assert!(
        matches!(released, Err(LockError::NotHeld { .. })),
        "{released:?}"
    );
    ahead.release(&stolen).await.expect("release");
}
