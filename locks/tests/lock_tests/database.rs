//! The database rungs against the simulated PostgreSQL (simpg) or
//! MariaDB (simmysql), as the rung's service says, on a real TCP port: each acquires, excludes a second owner, releases, and says
//! what its session or row says when the lock is no longer its own.

use locks::database::pool::SessionPool;
use locks::database::rungs::{MYSQL_SERVICE, RUNGS, SERVICE, build, pool};
use locks::{ConnConfig, Lock, LockConfig, LockContext, LockError, Owner, SystemClock, TcpDialer};
use std::sync::Arc;
use std::time::Duration;

/// A simulated server of `service` on a free loopback port, served until
/// the test ends.
async fn serve(service: &str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let wall = Arc::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    });
    if service == MYSQL_SERVICE {
        let server = simmysql::Server::new(simmysql::Config::new(wall));
        tokio::spawn(simmysql::serve_tcp(
            server,
            listener,
            std::future::pending(),
        ));
    } else {
        let server = simpg::Server::new(simpg::Config::new(wall));
        tokio::spawn(simpg::serve_tcp(server, listener, std::future::pending()));
    }
    addr
}

fn lock(id: &str, addr: &str, seed: u64) -> Box<dyn Lock> {
    lock_in_pool(id, addr, seed, None)
}

fn lock_in_pool(id: &str, addr: &str, seed: u64, pool: Option<Arc<SessionPool>>) -> Box<dyn Lock> {
    let ctx = LockContext::new(Arc::new(SystemClock::new()), seed);
    let config = LockConfig {
        ttl: Duration::from_millis(2_000),
        max_wait: Duration::from_millis(300),
        ..LockConfig::default()
    };
    let conn = ConnConfig::default();
    build(id, TcpDialer::new(addr), conn, pool, ctx, config).expect("a database rung")
}

#[tokio::test]
async fn two_callers_sharing_a_pool_of_one_connection_both_hold_the_pooled_advisory_lock() {
    let addr = serve(SERVICE).await;
    let shared = Arc::new(pool(
        SERVICE,
        TcpDialer::new(&addr),
        ConnConfig::default(),
        1,
    ));
    let (a, b) = (
        lock_in_pool("pg-advisory-pooled", &addr, 1, Some(shared.clone())),
        lock_in_pool("pg-advisory-pooled", &addr, 2, Some(shared)),
    );
    // A third process, with a session of its own, is kept out.
    let outsider = lock("pg-advisory", &addr, 3);
    let first = a
        .acquire("lock:pooled", &Owner::new("a", 1))
        .await
        .expect("a");
    let second = b.acquire("lock:pooled", &Owner::new("b", 1)).await;
    let second = second.expect("b is handed the connection that holds the lock, and re-enters it");
    let kept_out = outsider.acquire("lock:pooled", &Owner::new("c", 1)).await;
    assert!(
        matches!(kept_out, Err(LockError::NotAcquired { .. })),
        "{kept_out:?}"
    );
    a.release(&first).await.expect("one level");
    b.release(&second).await.expect("the other");
    let again = a.release(&first).await;
    assert!(matches!(again, Err(LockError::NotHeld { .. })), "{again:?}");
}

#[tokio::test]
async fn every_database_rung_excludes_a_second_owner_until_the_first_releases() {
    for rung in RUNGS {
        let addr = serve(rung.service).await;
        let (a, b) = (lock(rung.id, &addr, 1), lock(rung.id, &addr, 2));
        let resource = format!("lock:{}", rung.id);
        let first = a.acquire(&resource, &Owner::new("a", 1)).await;
        let first = first.unwrap_or_else(|e| panic!("{}: {e}", rung.id));
        let second = b.acquire(&resource, &Owner::new("b", 1)).await;
        assert!(
            matches!(second, Err(LockError::NotAcquired { .. })),
            "{}: {second:?}",
            rung.id
        );
        a.release(&first)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", rung.id));
        let after = b.acquire(&resource, &Owner::new("b", 1)).await;
        let after = after.unwrap_or_else(|e| panic!("{}: {e}", rung.id));
        assert_eq!(after.fence.is_some(), rung.fencing, "{}", rung.id);
        if rung.fencing {
            assert!(after.fence > first.fence, "{}: the version grows", rung.id);
        }
        b.release(&after)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", rung.id));
    }
}

#[tokio::test]
async fn mariadbs_named_lock_is_reentrant_in_its_session_and_takes_long_names() {
    let addr = serve(MYSQL_SERVICE).await;
    let (a, b) = (
        lock("mysql-get-lock", &addr, 1),
        lock("mysql-get-lock", &addr, 2),
    );
    let resource = format!("lock:{}", "long".repeat(30));
    let owner = Owner::new("a", 1);
    let outer = a.acquire(&resource, &owner).await.expect("outer");
    let inner = a.acquire(&resource, &owner).await.expect("inner");
    a.release(&inner).await.expect("inner release");
    let still = b.acquire(&resource, &Owner::new("b", 1)).await;
    assert!(
        matches!(still, Err(LockError::NotAcquired { .. })),
        "one level left: {still:?}"
    );
    a.release(&outer).await.expect("outer release");
    let again = a.release(&outer).await;
    assert!(matches!(again, Err(LockError::NotHeld { .. })), "{again:?}");
    let taken = b.acquire(&resource, &Owner::new("b", 1)).await;
    b.release(&taken.expect("free now"))
        .await
        .expect("released");
}
