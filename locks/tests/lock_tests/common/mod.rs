//! Helpers shared by the real-Redis tests: servers, connections, rungs,
//! raw commands, and the contention workload.

#![allow(dead_code)] // each test binary uses its own subset

use harness::RedisServer;
use locks::{
    Clock, ConnConfig, Lock, LockConfig, LockContext, Owner, ReconnectingConnection, Rung,
    SystemClock, TcpDialer, WaitStrategy,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Mutex;

/// A connection to one real server.
pub type Conn = ReconnectingConnection<TcpDialer>;

/// Starts one server, or fails the test with the harness's install hint.
pub fn server() -> RedisServer {
    RedisServer::start().unwrap_or_else(|e| panic!("{e}"))
}

/// Starts one server, with a raw connection to look at what rungs leave
/// there.
pub fn server_and_conn() -> (RedisServer, Conn) {
    let server = server();
    let raw_conn = conn(&server);
    (server, raw_conn)
}

/// Starts `n` independent servers.
pub fn servers(n: usize) -> Vec<RedisServer> {
    RedisServer::start_many(n).unwrap_or_else(|e| panic!("{e}"))
}

/// A fresh connection to `server`.
pub fn conn(server: &RedisServer) -> Conn {
    ReconnectingConnection::new(
        TcpDialer::new(server.addr().to_string()),
        ConnConfig::default(),
    )
}

/// A context on the machine's clocks, seeded per client so tokens differ.
pub fn ctx(seed: u64) -> LockContext {
    LockContext::new(Arc::new(SystemClock::new()), seed)
}

/// A context on a given clock.
pub fn ctx_with(clock: Arc<dyn Clock>, seed: u64) -> LockContext {
    LockContext::new(clock, seed)
}

/// Short TTL and quick polling, so tests finish fast.
pub fn config(ttl_ms: u64, max_wait_ms: u64) -> LockConfig {
    LockConfig {
        ttl: Duration::from_millis(ttl_ms),
        max_wait: Duration::from_millis(max_wait_ms),
        wait: WaitStrategy::Fixed {
            interval: Duration::from_millis(2),
        },
        node_timeout: Duration::from_millis(250),
    }
}

/// Builds rung `id` over the given servers (one connection each).
pub fn lock_on(id: &str, servers: &[&RedisServer], seed: u64, config: LockConfig) -> Box<dyn Lock> {
    let nodes = servers.iter().map(|s| conn(s)).collect();
    locks::build(id, nodes, ctx(seed), config).expect("known rung")
}

/// Builds rung `id` over one server.
pub fn lock(id: &str, server: &RedisServer, seed: u64, config: LockConfig) -> Box<dyn Lock> {
    lock_on(id, &[server], seed, config)
}

/// The owner of task `task` of client `client`.
pub fn owner(client: &str, task: u64) -> Owner {
    Owner::new(client, task)
}

/// The rungs from `first` up, in ladder order.
pub fn rungs_from(first: &str) -> impl Iterator<Item = &'static Rung> {
    let first = locks::rung(first).expect("known rung").number;
    locks::LADDER.into_iter().filter(move |r| r.number >= first)
}

/// Runs a raw command and returns its reply.
pub async fn raw<T: redis::FromRedisValue>(conn: &Conn, args: &[&str]) -> T {
    let mut conn = conn.clone();
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query_async(&mut conn).await.expect("redis command")
}

/// Whether `key` exists.
pub async fn exists(conn: &Conn, key: &str) -> bool {
    raw::<i64>(conn, &["EXISTS", key]).await == 1
}

/// The key's remaining TTL in ms (-1: none, -2: no key).
pub async fn pttl(conn: &Conn, key: &str) -> i64 {
    raw(conn, &["PTTL", key]).await
}

/// What the contention workload saw.
#[derive(Debug)]
pub struct Contention {
    /// Most clients inside the critical section at once.
    pub max_inside: usize,
    /// The shared counter at the end.
    pub counter: u64,
    /// What it would be without lost updates.
    pub expected: u64,
    /// Fencing tokens in the order their holders entered.
    pub fences: Vec<u64>,
}

/// `clients` clients (each its own connection, seed and lock object)
/// each run `cycles` lock cycles around a read-modify-write of a shared
/// in-memory counter, with an await between the read and the write.
pub async fn contend(id: &str, servers: &[&RedisServer], clients: u64, cycles: u64) -> Contention {
    let inside = Arc::new(AtomicUsize::new(0));
    let max_inside = Arc::new(AtomicUsize::new(0));
    let counter = Arc::new(AtomicU64::new(0));
    let fences = Arc::new(Mutex::new(Vec::new()));
    let resource = format!("locklab:test:contend:{id}");
    let mut tasks = Vec::new();
    for client in 0..clients {
        let lock = lock_on(id, servers, 1_000 + client, config(5_000, 20_000));
        let (inside, max_inside, counter, fences) = (
            inside.clone(),
            max_inside.clone(),
            counter.clone(),
            fences.clone(),
        );
        let resource = resource.clone();
        tasks.push(tokio::spawn(async move {
            let me = owner(&format!("client-{client}"), client);
            for _ in 0..cycles {
                let lease = lock.acquire(&resource, &me).await.expect("acquire");
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                max_inside.fetch_max(now, Ordering::SeqCst);
                if let Some(fence) = lease.fence {
                    fences.lock().await.push(fence);
                }
                lock.before_write(&lease).await.expect("still valid");
                let read = counter.load(Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(1)).await;
                counter.store(read + 1, Ordering::SeqCst);
                inside.fetch_sub(1, Ordering::SeqCst);
                lock.release(&lease).await.expect("release");
            }
        }));
    }
    for task in tasks {
        task.await.expect("client task");
    }
    let fences = fences.lock().await.clone();
    Contention {
        max_inside: max_inside.load(Ordering::SeqCst),
        counter: counter.load(Ordering::SeqCst),
        expected: clients * cycles,
        fences,
    }
}
