//! `REPLICAOF host port` dials the port it names: inside turmoil (a master
//! listening on a non-default port) and on real TCP (two simulated nodes
//! served on ephemeral loopback ports, one following the other).

use crate::common;
use crate::common::real_tcp;

use std::time::Duration;

use common::{connect, connect_to, simulation};
use redis::aio::MultiplexedConnection;
use simredis::{MasterAddr, NodeConfig, NodeHandle, Role, serve};

const MASTER_PORT: u16 = 7000;

fn sim() -> turmoil::Sim<'static> {
    let one_ms = Duration::from_millis(1);
    simulation(1, Duration::from_secs(60), one_ms..=one_ms)
}

async fn query<T: redis::FromRedisValue>(
    con: &mut MultiplexedConnection,
    args: &[&str],
) -> redis::RedisResult<T> {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query_async(con).await
}

/// Reads `key` on `con` every 10 ms until it holds a value or `tries` run
/// out.
async fn read_until_set(
    con: &mut MultiplexedConnection,
    key: &str,
    tries: u32,
) -> redis::RedisResult<Option<String>> {
    for _ in 0..tries {
        let v: Option<String> = query(con, &["GET", key]).await?;
        if v.is_some() {
            return Ok(v);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(None)
}

/// Hosts "master" (listening on [`MASTER_PORT`]) and "replica" (built from
/// `replica`) in `s`; returns the replica's handle.
fn master_and(s: &mut turmoil::Sim<'static>, replica: NodeConfig) -> NodeHandle {
    let mut config = NodeConfig::new("master");
    config.port = MASTER_PORT;
    let master = NodeHandle::new(config);
    let replica = NodeHandle::new(replica);
    let r = replica.clone();
    s.host("master", move || serve(master.clone()));
    s.host("replica", move || serve(r.clone()));
    replica
}

#[test]
fn a_replica_follows_a_simulated_master_on_the_port_replicaof_names() {
    let mut s = sim();
    let mut config = NodeConfig::new("replica");
    config.port = MASTER_PORT + 1;
    let r = master_and(&mut s, config);
    s.client("app", async move {
        let mut rc = connect_to("replica", MASTER_PORT + 1).await?;
        let port = MASTER_PORT.to_string();
        let ok: String = query(&mut rc, &["REPLICAOF", "master", &port]).await?;
        assert_eq!(ok, "OK");
        assert_eq!(
            r.role(),
            Role::Replica(MasterAddr::new("master", MASTER_PORT))
        );
        let mut mc = connect_to("master", MASTER_PORT).await?;
        let ok: String = query(&mut mc, &["SET", "k", "v"]).await?;
        assert_eq!(ok, "OK");
        assert_eq!(
            read_until_set(&mut rc, "k", 100).await?.as_deref(),
            Some("v")
        );
        let role: (String, String, i64, String, i64) = query(&mut rc, &["ROLE"]).await?;
        assert_eq!(
            (role.0.as_str(), role.1.as_str(), role.2, role.3.as_str()),
            ("slave", "master", i64::from(MASTER_PORT), "connected")
        );
        let info: String = query(&mut rc, &["INFO", "replication"]).await?;
        assert!(info.contains("master_port:7000\r\n"), "{info}");
        Ok(())
    });
    s.run().unwrap();
}

#[test]
fn a_replica_pointed_at_a_port_nobody_listens_on_never_syncs_and_keeps_serving() {
    let mut s = sim();
    // The master is on 7000; the replica is told 6379 (the default).
    master_and(&mut s, NodeConfig::new("replica").replica_of("master"));
    s.client("app", async move {
        let mut mc = connect_to("master", MASTER_PORT).await?;
        let _: String = query(&mut mc, &["SET", "k", "v"]).await?;
        let mut rc = connect("replica").await?;
        assert_eq!(read_until_set(&mut rc, "k", 100).await?, None);
        let role: (String, String, i64, String, i64) = query(&mut rc, &["ROLE"]).await?;
        assert_eq!((role.2, role.3.as_str()), (6379, "connect"));
        // An unknown host is no different: the node retries and serves on.
        let ok: String = query(&mut rc, &["REPLICAOF", "nosuchhost", "6379"]).await?;
        assert_eq!(ok, "OK");
        tokio::time::sleep(Duration::from_millis(500)).await;
        let pong: String = query(&mut rc, &["PING"]).await?;
        assert_eq!(pong, "PONG");
        Ok(())
    });
    s.run().unwrap();
}

#[test]
fn on_real_tcp_a_node_replicates_another_node_on_the_port_replicaof_names() {
    real_tcp::run(async {
        let (master_addr, master) = real_tcp::serve(NodeConfig::new("master")).await;
        let (replica_addr, replica) = real_tcp::serve(NodeConfig::new("replica")).await;
        let master_port = master_addr.port();
        let talk = async {
            let open = |port: u16| async move {
                redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                    .unwrap()
                    .get_multiplexed_async_connection()
                    .await
                    .unwrap()
            };
            let mut rc = open(replica_addr.port()).await;
            let mut mc = open(master_port).await;
            let port = master_port.to_string();
            let ok: String = query(&mut rc, &["REPLICAOF", "127.0.0.1", &port])
                .await
                .unwrap();
            assert_eq!(ok, "OK");
            let ok: String = query(&mut mc, &["SET", "k", "v"]).await.unwrap();
            assert_eq!(ok, "OK");
            // Real time: up to 5 s for the link to come up and deliver.
            let v = read_until_set(&mut rc, "k", 500).await.unwrap();
            assert_eq!(v.as_deref(), Some("v"));
            let acked: i64 = query(&mut mc, &["WAIT", "1", "5000"]).await.unwrap();
            assert_eq!(acked, 1);
            let role: (String, String, i64, String, i64) = query(&mut rc, &["ROLE"]).await.unwrap();
            assert_eq!(
                (role.0.as_str(), role.1.as_str(), role.2, role.3.as_str()),
                ("slave", "127.0.0.1", i64::from(master_port), "connected")
            );
            let e = query::<String>(&mut rc, &["SET", "k", "w"])
                .await
                .unwrap_err();
            assert!(e.to_string().contains("read only replica"), "{e}");
        };
        tokio::select! {
            r = master => panic!("master ended: {r:?}"),
            r = replica => panic!("replica ended: {r:?}"),
            () = talk => {}
        }
    });
}

/// What redis-server 7.0.15 answers on a replica (checked by hand with
/// `redis-cli` against a real replica): a script whose shebang does not
/// declare `no-writes` is refused before it runs; one that does runs,
/// and its write is refused as a read-only script's.
#[test]
fn a_replica_refuses_a_script_that_may_write_and_runs_one_that_declares_no_writes() {
    let mut s = sim();
    let mut config = NodeConfig::new("replica");
    config.port = MASTER_PORT + 1;
    master_and(&mut s, config);
    s.client("app", async move {
        let mut rc = connect_to("replica", MASTER_PORT + 1).await?;
        let port = MASTER_PORT.to_string();
        let _: String = query(&mut rc, &["REPLICAOF", "master", &port]).await?;
        let may_write = query::<i64>(&mut rc, &["EVAL", "#!lua\nreturn 1", "0"]).await;
        let error = may_write.expect_err("refused").to_string();
        assert!(
            error.contains("You can't write against a read only replica"),
            "{error}"
        );
        assert!(!error.contains("script:"), "refused before it ran: {error}");
        let read: i64 = query(&mut rc, &["EVAL", "#!lua flags=no-writes\nreturn 1", "0"]).await?;
        assert_eq!(read, 1);
        let plain: i64 = query(&mut rc, &["EVAL", "return 1", "0"]).await?;
        assert_eq!(plain, 1);
        let write = "#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], 'v')";
        let refused = query::<String>(&mut rc, &["EVAL", write, "1", "k"]).await;
        let error = refused.expect_err("refused").to_string();
        assert!(
            error.contains("Write commands are not allowed from read-only scripts"),
            "{error}"
        );
        Ok(())
    });
    s.run().unwrap();
}
