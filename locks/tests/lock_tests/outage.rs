//! Acquiring through an outage against a real `redis-server`: an acquire
//! that starts while Redis is down gets the lock once it is back within
//! `max_wait`, one whose server never comes back ends after `max_wait` with
//! the last error, and an attempt whose reply was lost (the server stalled
//! past the reply timeout, then ran the `SET`) is recognised as the
//! acquire's own grant by the rungs with a random token, and left to the
//! documented risk by the others.

use crate::common;

use common::*;
use locks::{
    ConnConfig, Lock, LockConfig, LockError, ReconnectingConnection, ReleaseNotifier, TcpDialer,
    WaitStrategy,
};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Quick timeouts, so that each attempt during the outage fails fast.
const QUICK: ConnConfig = ConnConfig {
    connect_timeout: Duration::from_millis(100),
    response_timeout: Duration::from_millis(100),
};

/// A loopback port nothing listens on until a test starts a server there,
/// held so that no other test's server can take it and answer meanwhile.
fn reserved_port() -> harness::ReservedPort {
    harness::ReservedPort::new().expect("reserve a loopback port")
}

/// A `redis-server` started by hand on a port chosen in advance, so that
/// clients can be pointed at it before it runs (the harness picks its own
/// port at start). Killed when dropped.
struct LateServer {
    child: Child,
}

impl LateServer {
    fn start_on(port: u16) -> LateServer {
        let port = port.to_string();
        let dbfile = format!("locklab-outage-{port}.rdb");
        let child = Command::new("redis-server")
            .args(["--port", &port, "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "no", "--daemonize", "no", "--dir", "/tmp"])
            .args(["--dbfilename", &dbfile, "--loglevel", "warning"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed");
        LateServer { child }
    }
}

impl Drop for LateServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Rung `id` over one connection to `addr` with quick timeouts.
fn lock_at(id: &str, addr: &str, seed: u64, config: LockConfig) -> Box<dyn Lock> {
    let conn = ReconnectingConnection::new(TcpDialer::new(addr), QUICK);
    locks::build(id, vec![conn], ctx(seed), config).expect("known rung")
}

/// Every rung that talks to Redis.
fn locking_rungs() -> impl Iterator<Item = &'static locks::Rung> {
    locks::LADDER.into_iter().filter(|r| r.excludes)
}

/// Starts a server on `port` after `after`, from a thread (starting one
/// blocks until it answers); the handle yields the server to keep it alive.
fn start_later(port: u16, after: Duration) -> std::thread::JoinHandle<LateServer> {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        LateServer::start_on(port)
    })
}

#[tokio::test]
async fn an_acquire_that_starts_while_redis_is_down_gets_the_lock_once_it_is_back() {
    for rung in locking_rungs() {
        let id = rung.id;
        let port = reserved_port();
        let addr = port.addr().to_string();
        let lock = lock_at(id, &addr, rung.number.into(), config(2_000, 5_000));
        let outage = Duration::from_millis(300);
        let comeback = start_later(port.port(), outage);
        let started = Instant::now();
        let lease = lock
            .acquire("locklab:test:outage", &owner("a", 1))
            .await
            .unwrap_or_else(|e| panic!("{id}: {e}"));
        let waited = started.elapsed();
        let _server = comeback.join().expect("server started");
        assert!(waited >= outage, "{id} acquired while Redis was down");
        assert!(waited < Duration::from_millis(5_000), "{id}: {waited:?}");
        lock.release(&lease).await.expect(id);
    }
}

#[tokio::test]
async fn a_notified_waiter_that_starts_while_redis_is_down_gets_the_lock_once_it_is_back() {
    let port = reserved_port();
    let addr = port.addr().to_string();
    let notifier = Arc::new(ReleaseNotifier::new(TcpDialer::new(addr.clone()), QUICK));
    let config = LockConfig {
        wait: WaitStrategy::Notify {
            fallback: Duration::from_millis(20),
        },
        ..config(2_000, 5_000)
    };
    let conn = ReconnectingConnection::new(TcpDialer::new(addr), QUICK);
    let lock = locks::build(
        "lua-release",
        vec![conn],
        ctx(1).with_notifier(notifier),
        config,
    )
    .expect("known rung");
    let comeback = start_later(port.port(), Duration::from_millis(300));
    let lease = lock
        .acquire("locklab:test:outage:notify", &owner("a", 1))
        .await
        .expect("acquired after the outage");
    let _server = comeback.join().expect("server started");
    lock.release(&lease).await.expect("released");
}

#[tokio::test]
async fn an_acquire_whose_server_never_comes_back_ends_after_max_wait_with_the_last_error() {
    // Redlock is not among them: its round counts a master's error as a
    // missing vote and undoes itself, so it ends `NotAcquired` (below).
    for rung in locking_rungs().filter(|r| !r.multi_node) {
        let id = rung.id;
        let port = reserved_port();
        let addr = port.addr().to_string();
        let lock = lock_at(id, &addr, 1, config(2_000, 300));
        let started = Instant::now();
        let err = lock
            .acquire("locklab:test:never", &owner("a", 1))
            .await
            .expect_err("nothing to acquire from");
        assert!(started.elapsed() >= Duration::from_millis(300), "{id}");
        match &err {
            LockError::Redis(e) => assert!(e.is_connection_refusal(), "{id}: {e}"),
            other => panic!("{id}: not the last error but {other:?}"),
        }
        assert!(err.outcome_unknown(), "{id}");
    }
    let port = reserved_port();
    let addr = port.addr().to_string();
    let redlock = lock_at("redlock", &addr, 1, config(2_000, 300));
    let err = redlock
        .acquire("locklab:test:never", &owner("a", 1))
        .await
        .expect_err("no master");
    assert!(matches!(err, LockError::NotAcquired { .. }), "{err:?}");
}

/// A server that runs `DEBUG SLEEP` (to stall while a `SET` waits).
fn stallable_server() -> harness::RedisServer {
    harness::RedisServer::start_with_args(&["--enable-debug-command", "yes"])
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs one acquire of `id` during which the server stalls for 500 ms:
/// the first attempt's `SET` waits in the server past the reply timeout
/// (its reply is lost: the client has given up on that connection), and
/// runs when the stall ends. Returns the rung's own key
/// (`locklab:test:lost-reply:<id>`), what the acquire answered, and a raw
/// connection to look at the server.
async fn acquire_through_a_stall(
    id: &str,
    config: LockConfig,
) -> (
    String,
    Result<locks::Lease, LockError>,
    Box<dyn Lock>,
    Conn,
    harness::RedisServer,
) {
    let server = stallable_server();
    let raw_conn = conn(&server);
    // Scripts loaded before the stall, so the lost attempt is the script
    // itself, not an EVALSHA that would only have answered NOSCRIPT.
    for (_, source) in locks::scripts::all() {
        let _: String = raw(&raw_conn, &["SCRIPT", "LOAD", source]).await;
    }
    let lock_conn = ReconnectingConnection::new(TcpDialer::new(server.addr().to_string()), QUICK);
    // Connected before the stall, so the first SET is sent at once.
    lock_conn.connect().await.expect("connect");
    let lock = locks::build(id, vec![lock_conn], ctx(1), config).expect("known rung");
    let staller = raw_conn.clone();
    let stall = tokio::spawn(async move {
        let _: String = raw(&staller, &["DEBUG", "SLEEP", "0.5"]).await;
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let key = format!("locklab:test:lost-reply:{id}");
    let got = lock.acquire(&key, &owner("a", 1)).await;
    stall.await.expect("stall ended");
    (key, got, lock, raw_conn, server)
}

#[tokio::test]
async fn a_lost_reply_is_recognised_as_the_acquires_own_grant_on_the_rungs_with_a_random_token() {
    // The TTL outlasts the wait: an acquire that took the lost grant for a
    // stranger's lock would wait for it in vain.
    let config = config(10_000, 2_000);
    for id in ["set-nx-px", "get-check-del", "lua-release", "fenced"] {
        let (key, got, lock, raw_conn, _server) = acquire_through_a_stall(id, config).await;
        let lease = got.unwrap_or_else(|e| panic!("{id}: {e}"));
        let value: Option<String> = raw(&raw_conn, &["GET", &key]).await;
        assert_eq!(value.as_deref(), Some(lease.token.as_str()), "{id}");
        if id == "fenced" {
            assert_eq!(lease.fence, Some(1), "the one grant's fencing token");
            let counter: Option<String> = raw(&raw_conn, &["GET", &format!("{key}:fence")]).await;
            assert_eq!(counter.as_deref(), Some("1"));
        }
        // Re-armed for a whole TTL when it was recognised.
        assert!(pttl(&raw_conn, &key).await > 9_000, "{id}");
        lock.release(&lease).await.expect(id);
        assert!(!exists(&raw_conn, &key).await, "{id}");
    }
}

#[tokio::test]
async fn after_a_lost_reply_setnx_waits_for_its_own_key_which_never_expires() {
    // The documented risk of a rung whose value names no owner: the lost
    // SETNX created the key, the acquire cannot tell it is its own, and
    // the key has no TTL. It ends after max_wait with the last error.
    for id in ["setnx", "setnx-expire"] {
        let (key, got, _lock, raw_conn, _server) =
            acquire_through_a_stall(id, config(2_000, 1_000)).await;
        let err = got.expect_err("its own key blocks it");
        assert!(err.outcome_unknown(), "{id}: {err:?}");
        assert_eq!(pttl(&raw_conn, &key).await, -1, "{id}: a key with no TTL");
    }
}

#[tokio::test]
async fn after_a_lost_reply_the_reentrant_rungs_count_the_lost_grant_too() {
    // The documented risk of the hash lock: the retried script finds the
    // owner's field that the lost one created and counts up. The key then
    // outlives the release by one TTL.
    for id in ["reentrant", "watchdog"] {
        let (key, got, lock, raw_conn, _server) =
            acquire_through_a_stall(id, config(10_000, 2_000)).await;
        let lease = got.unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(lease.depth, 2, "{id}");
        lock.release(&lease).await.expect(id);
        assert!(exists(&raw_conn, &key).await, "{id}");
        assert!(pttl(&raw_conn, &key).await > 0, "{id}: it expires");
    }
}
