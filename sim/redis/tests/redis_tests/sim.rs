//! The node inside turmoil, reached by the unmodified `redis` crate client:
//! clock jumps, failover, persistence, WAIT, ground-truth events, and the
//! real-TCP server mode (its long scripts: `tests/real_tcp.rs`).

use crate::common;

use common::{connect, simulation};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use simredis::{
    ClockSpec, CrashKind, EventKind, NodeConfig, NodeEvent, NodeHandle, Persistence, serve,
};

fn sim(seed: u64) -> turmoil::Sim<'static> {
    let one_ms = Duration::from_millis(1);
    simulation(seed, Duration::from_secs(600), one_ms..=one_ms)
}

async fn set_nx_px(con: &mut MultiplexedConnection, key: &str, val: &str, ms: u64) -> bool {
    let r: Option<String> = redis::cmd("SET")
        .arg(key)
        .arg(val)
        .arg("NX")
        .arg("PX")
        .arg(ms)
        .query_async(con)
        .await
        .unwrap();
    r.is_some()
}

/// Hosts "master" and "replica" (following it `delay` behind) in `sim`.
fn master_and_replica(
    sim: &mut turmoil::Sim<'static>,
    delay: Duration,
) -> (NodeHandle, NodeHandle) {
    let master = NodeHandle::new(NodeConfig::new("master"));
    let replica = NodeHandle::new(
        NodeConfig::new("replica")
            .replica_of("master")
            .replication_delay(delay),
    );
    let (m, r) = (master.clone(), replica.clone());
    sim.host("master", move || serve(m.clone()));
    sim.host("replica", move || serve(r.clone()));
    (master, replica)
}

/// Waits for the replica's first sync, then takes "lock" on the master as
/// "A"; returns the connection.
async fn lock_on_master_once_synced() -> redis::RedisResult<MultiplexedConnection> {
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut con = connect("master").await?;
    assert!(set_nx_px(&mut con, "lock", "A", 30_000).await);
    Ok(con)
}

type Events = Arc<Mutex<Vec<NodeEvent>>>;

fn record(h: &NodeHandle) -> Events {
    let ev: Events = Arc::default();
    let e = ev.clone();
    h.set_sink(Arc::new(move |x: &NodeEvent| {
        e.lock().unwrap().push(x.clone())
    }));
    ev
}

#[test]
fn the_redis_crate_client_locks_and_releases_through_the_simulated_node() {
    let mut sim = sim(1);
    let node = NodeHandle::new(NodeConfig::new("redis"));
    let h = node.clone();
    sim.host("redis", move || serve(h.clone()));
    sim.client("app", async {
        let mut con = connect("redis").await?;
        assert!(set_nx_px(&mut con, "lock", "A", 30_000).await);
        assert!(!set_nx_px(&mut con, "lock", "B", 30_000).await);
        let release = redis::Script::new(include_str!("../../../../locks/src/lua/release.lua"));
        let n: i64 = release.key("lock").arg("B").invoke_async(&mut con).await?;
        assert_eq!(n, 0);
        let n: i64 = release.key("lock").arg("A").invoke_async(&mut con).await?;
        assert_eq!(n, 1);
        let v: Option<String> = redis::cmd("GET").arg("lock").query_async(&mut con).await?;
        assert_eq!(v, None);
        Ok(())
    });
    sim.run().unwrap();
}

fn run_clock_jump(seed: u64) -> Vec<NodeEvent> {
    let mut sim = sim(seed);
    let node = NodeHandle::new(NodeConfig::new("redis").clock(ClockSpec::default()));
    let events = record(&node);
    let h = node.clone();
    sim.host("redis", move || serve(h.clone()));
    let n = node.clone();
    sim.client("app", async move {
        let mut con = connect("redis").await?;
        assert!(set_nx_px(&mut con, "lock", "A", 30_000).await);
        tokio::time::sleep(Duration::from_secs(1)).await;
        n.jump_clock(31_000);
        // The active expiry cycle (10 Hz) removes it without any access.
        tokio::time::sleep(Duration::from_millis(150)).await;
        let mut other = connect("redis").await?;
        assert!(set_nx_px(&mut other, "lock", "B", 30_000).await);
        Ok(())
    });
    sim.run().unwrap();
    events.lock().unwrap().clone()
}

#[test]
fn a_forward_clock_jump_expires_a_lock_key_early_and_deterministically() {
    let ev = run_clock_jump(42);
    let expired: Vec<&NodeEvent> = ev
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Expired { .. }))
        .collect();
    assert_eq!(expired.len(), 1);
    // Expired about 1 s into the run, not 30 s: the clock jumped.
    assert!(expired[0].at < Duration::from_secs(2), "{:?}", expired[0]);
    let writes = ev
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Written { .. }))
        .count();
    assert_eq!(writes, 2);
    assert_eq!(ev, run_clock_jump(42), "same seed, same history");
}

#[test]
fn a_lock_is_lost_after_failover_when_the_replica_had_not_received_it() {
    let mut sim = sim(3);
    let (_, replica) = master_and_replica(&mut sim, Duration::from_millis(500));
    sim.client("a", async {
        lock_on_master_once_synced().await?;
        Ok(())
    });
    // Run until A holds the lock, then crash the master before the
    // replication delay has passed, and promote the replica.
    for _ in 0..400 {
        sim.step().unwrap();
    }
    sim.crash("master");
    replica.promote();
    let r = replica.clone();
    sim.client("b", async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(r.role(), simredis::Role::Master);
        let mut con = connect("replica").await?;
        assert!(
            set_nx_px(&mut con, "lock", "B", 30_000).await,
            "B takes the lock A believed it held"
        );
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_replica_receives_writes_and_wait_counts_its_acknowledgement() {
    let mut sim = sim(4);
    master_and_replica(&mut sim, Duration::from_millis(50));
    sim.client("app", async {
        let mut con = lock_on_master_once_synced().await?;
        let n: i64 = redis::cmd("WAIT")
            .arg(1)
            .arg(1000)
            .query_async(&mut con)
            .await?;
        assert_eq!(n, 1);
        let mut rc = connect("replica").await?;
        let v: Option<String> = redis::cmd("GET").arg("lock").query_async(&mut rc).await?;
        assert_eq!(v.as_deref(), Some("A"));
        let pttl: i64 = redis::cmd("PTTL").arg("lock").query_async(&mut rc).await?;
        assert!(pttl > 29_000 && pttl <= 30_000, "{pttl}");
        let e: redis::RedisResult<String> = redis::cmd("SET")
            .arg("x")
            .arg("y")
            .query_async(&mut rc)
            .await;
        let e = e.unwrap_err().to_string();
        assert!(e.contains("read only replica"), "{e}");
        Ok(())
    });
    sim.run().unwrap();
}

fn restart_keeps(persistence: Persistence, crash: CrashKind) -> Option<String> {
    let mut sim = sim(5);
    let node = NodeHandle::new(NodeConfig::new("redis").persistence(persistence));
    let h = node.clone();
    sim.host("redis", move || serve(h.clone()));
    sim.client("write", async {
        let mut con = connect("redis").await?;
        assert!(set_nx_px(&mut con, "lock", "A", 60_000).await);
        Ok(())
    });
    for _ in 0..200 {
        sim.step().unwrap();
    }
    node.set_crash_kind(crash);
    sim.crash("redis");
    sim.bounce("redis");
    let out: Arc<Mutex<Option<String>>> = Arc::default();
    let o = out.clone();
    sim.client("read", async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let mut con = connect("redis").await?;
        *o.lock().unwrap() = redis::cmd("GET").arg("lock").query_async(&mut con).await?;
        Ok(())
    });
    sim.run().unwrap();
    out.lock().unwrap().clone()
}

#[test]
fn persistence_decides_what_survives_a_restart() {
    assert_eq!(
        restart_keeps(Persistence::None, CrashKind::ProcessKill),
        None
    );
    assert_eq!(
        restart_keeps(Persistence::AofAlways, CrashKind::PowerLoss).as_deref(),
        Some("A")
    );
    assert_eq!(
        restart_keeps(Persistence::AofEverysec, CrashKind::ProcessKill).as_deref(),
        Some("A")
    );
    assert_eq!(
        restart_keeps(Persistence::AofEverysec, CrashKind::PowerLoss),
        None
    );
}

/// Serves a node with `config` on a real loopback port and runs `talk`
/// against it with a client of the redis crate; the server must outlive it.
fn on_real_tcp<F, Fut>(config: NodeConfig, talk: F)
where
    F: FnOnce(redis::Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = NodeHandle::new(simredis::real_time(config));
        let server = simredis::serve_tcp_listener(listener, handle);
        let client = redis::Client::open(format!("redis://{addr}")).unwrap();
        tokio::select! {
            r = server => panic!("server ended: {r:?}"),
            _ = talk(client) => {}
        }
    });
}

#[test]
fn the_real_tcp_server_mode_serves_the_redis_crate() {
    on_real_tcp(NodeConfig::new("tcp"), |client| async move {
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        assert!(set_nx_px(&mut con, "lock", "A", 1000).await);
        let ttl: i64 = redis::cmd("PTTL")
            .arg("lock")
            .query_async(&mut con)
            .await
            .unwrap();
        assert!(ttl > 900 && ttl <= 1000);
        let s: String = redis::cmd("PING").query_async(&mut con).await.unwrap();
        assert_eq!(s, "PONG");
    });
}

#[test]
fn an_endless_script_in_a_simulation_is_aborted_by_instruction_count_and_the_run_ends() {
    let mut s = sim(1);
    let mut config = NodeConfig::new("redis");
    config.script_instruction_limit = 1_000_000;
    let node = NodeHandle::new(config);
    let h = node.clone();
    s.host("redis", move || serve(h.clone()));
    s.client("app", async {
        let mut con = connect("redis").await?;
        let r: redis::RedisResult<()> = redis::cmd("EVAL")
            .arg("redis.call('set','k','v') while true do end")
            .arg(0)
            .query_async(&mut con)
            .await;
        let e = r.unwrap_err().to_string();
        assert!(e.contains("Script aborted"), "{e}");
        // What the script wrote before it was aborted stays (Redis has no
        // rollback either), and the node goes on serving.
        let v: Option<String> = redis::cmd("GET").arg("k").query_async(&mut con).await?;
        assert_eq!(v.as_deref(), Some("v"));
        Ok(())
    });
    s.run().unwrap();
}
