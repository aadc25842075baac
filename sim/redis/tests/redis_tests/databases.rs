//! Databases other than 0 over replication, persistence and ground-truth
//! events: a write to database 3 reaches a replica's database 3 (and not
//! its database 0), a transaction's writes to several databases arrive
//! together, a restart keeps every database, and only database 0 (where
//! locks live) is reported as events.

use crate::common;

use common::{connect, simulation};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use simredis::{NodeConfig, NodeEvent, NodeHandle, Persistence, serve};

/// `GET key` in database `db`, then back to database 0.
async fn get_in(con: &mut MultiplexedConnection, db: i64, key: &str) -> Option<String> {
    let _: () = redis::cmd("SELECT").arg(db).query_async(con).await.unwrap();
    let v: Option<String> = redis::cmd("GET").arg(key).query_async(con).await.unwrap();
    let _: () = redis::cmd("SELECT").arg(0).query_async(con).await.unwrap();
    v
}

#[test]
fn a_write_to_database_3_reaches_the_replicas_database_3_only() {
    let mut sim = simulation(
        7,
        Duration::from_secs(20),
        Duration::from_millis(1)..=Duration::from_millis(5),
    );
    let master = NodeHandle::new(NodeConfig::new("master"));
    let replica = NodeHandle::new(NodeConfig::new("replica").replica_of("master"));
    let events: Arc<Mutex<Vec<NodeEvent>>> = Arc::default();
    let e = events.clone();
    master.set_sink(Arc::new(move |x: &NodeEvent| {
        e.lock().unwrap().push(x.clone())
    }));
    let (m, r) = (master.clone(), replica.clone());
    sim.host("master", move || serve(m.clone()));
    sim.host("replica", move || serve(r.clone()));
    sim.client("app", async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut con = connect("master").await?;
        let _: () = redis::cmd("SELECT").arg(3).query_async(&mut con).await?;
        let _: () = redis::cmd("SET")
            .arg("k")
            .arg("three")
            .query_async(&mut con)
            .await?;
        // A transaction writing two databases: one batch.
        let (a, b): (String, String) = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg("t")
            .arg("in3")
            .cmd("SELECT")
            .arg(0)
            .cmd("SET")
            .arg("t")
            .arg("in0")
            .query_async(&mut con)
            .await
            .map(|(a, _, b): (String, String, String)| (a, b))?;
        assert_eq!((a.as_str(), b.as_str()), ("OK", "OK"));
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut rep = connect("replica").await?;
        assert_eq!(get_in(&mut rep, 0, "k").await, None);
        assert_eq!(get_in(&mut rep, 3, "k").await.as_deref(), Some("three"));
        assert_eq!(get_in(&mut rep, 3, "t").await.as_deref(), Some("in3"));
        assert_eq!(get_in(&mut rep, 0, "t").await.as_deref(), Some("in0"));
        Ok(())
    });
    sim.run().unwrap();
    let keys: Vec<Vec<u8>> = events
        .lock()
        .unwrap()
        .iter()
        .map(|e| e.key.clone())
        .collect();
    assert_eq!(keys, vec![b"t".to_vec()], "only database 0 is reported");
}

#[test]
fn a_restart_keeps_every_database() {
    let mut sim = simulation(
        3,
        Duration::from_secs(20),
        Duration::from_millis(1)..=Duration::from_millis(1),
    );
    let node = NodeHandle::new(NodeConfig::new("node").persistence(Persistence::AofAlways));
    let n = node.clone();
    sim.host("node", move || serve(n.clone()));
    sim.client("app", async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut con = connect("node").await?;
        let _: () = redis::cmd("SELECT").arg(9).query_async(&mut con).await?;
        let _: () = redis::cmd("SET")
            .arg("k")
            .arg("nine")
            .query_async(&mut con)
            .await?;
        Ok(())
    });
    for _ in 0..300 {
        sim.step().unwrap();
    }
    sim.crash("node");
    sim.bounce("node");
    sim.client("after", async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut con = connect("node").await?;
        assert_eq!(get_in(&mut con, 9, "k").await.as_deref(), Some("nine"));
        assert_eq!(get_in(&mut con, 0, "k").await, None);
        Ok(())
    });
    sim.run().unwrap();
}
