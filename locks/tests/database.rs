//! The database rungs against the simulated PostgreSQL (simpg) on a real
//! TCP port: each acquires, excludes a second owner, releases, and says
//! what its session or row says when the lock is no longer its own.

use locks::database::rungs::{RUNGS, build};
use locks::{ConnConfig, Lock, LockConfig, LockContext, LockError, Owner, SystemClock, TcpDialer};
use std::sync::Arc;
use std::time::Duration;

/// A simulated server on a free loopback port, served until the test ends.
async fn serve() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let wall = Arc::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    });
    let server = simpg::Server::new(simpg::Config::new(wall));
    tokio::spawn(simpg::serve_tcp(server, listener, std::future::pending()));
    addr
}

fn lock(id: &str, addr: &str, seed: u64) -> Box<dyn Lock> {
    let ctx = LockContext::new(Arc::new(SystemClock::new()), seed);
    let config = LockConfig {
        ttl: Duration::from_millis(2_000),
        max_wait: Duration::from_millis(300),
        ..LockConfig::default()
    };
    build(id, TcpDialer::new(addr), ConnConfig::default(), ctx, config).expect("a database rung")
}

#[tokio::test]
async fn every_database_rung_excludes_a_second_owner_until_the_first_releases() {
    let addr = serve().await;
    for rung in RUNGS {
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
