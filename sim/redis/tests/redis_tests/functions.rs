//! Function libraries outlive what Redis's outlive: they reach the
//! replicas (a replica attached later gets them in its snapshot, and a
//! `FUNCTION DELETE` or `FLUSH` follows), they survive a restart with
//! persistence (and not without it), and `FUNCTION DUMP` round-trips
//! through `FUNCTION RESTORE`. Scripts, unlike them, are neither
//! replicated nor persisted.

use crate::common;

use common::{connect, simulation};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use simredis::{NodeConfig, NodeHandle, Persistence, serve};

/// `hello` may run on a replica (`no-writes`); `set` may not.
const LIBRARY: &str = "#!lua name=lib\nredis.register_function{function_name='hello', callback=function(keys, args) return 'hi ' .. args[1] end, flags={'no-writes'}}\nredis.register_function('set', function(keys, args) return redis.call('set', keys[1], args[1]) end)";

async fn load(con: &mut MultiplexedConnection, code: &str) -> redis::RedisResult<String> {
    redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(code)
        .query_async(con)
        .await
}

async fn hello(con: &mut MultiplexedConnection) -> redis::RedisResult<String> {
    redis::cmd("FCALL")
        .arg("hello")
        .arg(0)
        .arg("there")
        .query_async(con)
        .await
}

#[test]
fn a_loaded_library_reaches_the_replica_and_its_deletion_follows() {
    let mut sim = simulation(
        5,
        Duration::from_secs(20),
        Duration::from_millis(1)..=Duration::from_millis(5),
    );
    let master = NodeHandle::new(NodeConfig::new("master"));
    let replica = NodeHandle::new(NodeConfig::new("replica").replica_of("master"));
    let late = NodeHandle::new(NodeConfig::new("late"));
    let (m, r, l) = (master.clone(), replica.clone(), late.clone());
    sim.host("master", move || serve(m.clone()));
    sim.host("replica", move || serve(r.clone()));
    sim.host("late", move || serve(l.clone()));
    sim.client("app", async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut con = connect("master").await?;
        assert_eq!(load(&mut con, LIBRARY).await?, "lib");
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut rep = connect("replica").await?;
        assert_eq!(hello(&mut rep).await?, "hi there");
        // A function that may write does not run on a replica.
        let write = redis::cmd("FCALL")
            .arg("set")
            .arg(1)
            .arg("k")
            .arg("v")
            .query_async::<()>(&mut rep)
            .await
            .unwrap_err();
        assert!(write.to_string().contains("read only replica"), "{write}");
        // A replica refuses to change its libraries itself.
        let refused = load(&mut rep, LIBRARY).await.unwrap_err();
        assert!(
            refused.to_string().contains("read only replica"),
            "{refused}"
        );
        // A replica attached after the load gets the library in its
        // snapshot.
        let mut late = connect("late").await?;
        let _: () = redis::cmd("REPLICAOF")
            .arg("master")
            .arg(6379)
            .query_async(&mut late)
            .await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(hello(&mut late).await?, "hi there");
        let _: () = redis::cmd("FUNCTION")
            .arg("DELETE")
            .arg("lib")
            .query_async(&mut con)
            .await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        for c in [&mut rep, &mut late] {
            let gone = hello(c).await.unwrap_err();
            assert_eq!(gone.detail(), Some("Function not found"));
        }
        Ok(())
    });
    sim.run().unwrap();
}

/// Loads the library, restarts the node, and says whether it survived.
fn library_survives_a_restart(persistence: Persistence) -> bool {
    let mut sim = simulation(
        3,
        Duration::from_secs(20),
        Duration::from_millis(1)..=Duration::from_millis(1),
    );
    let node = NodeHandle::new(NodeConfig::new("node").persistence(persistence));
    let n = node.clone();
    sim.host("node", move || serve(n.clone()));
    sim.client("app", async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut con = connect("node").await?;
        load(&mut con, LIBRARY).await?;
        Ok(())
    });
    for _ in 0..300 {
        sim.step().unwrap();
    }
    sim.crash("node");
    sim.bounce("node");
    let survived = std::rc::Rc::new(std::cell::Cell::new(false));
    let s = survived.clone();
    sim.client("after", async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut con = connect("node").await?;
        s.set(hello(&mut con).await.is_ok());
        Ok(())
    });
    sim.run().unwrap();
    survived.get()
}

#[test]
fn a_library_survives_a_restart_with_persistence_and_not_without() {
    assert!(library_survives_a_restart(Persistence::AofAlways));
    assert!(library_survives_a_restart(Persistence::AofEverysec));
    assert!(!library_survives_a_restart(Persistence::None));
}

#[test]
fn a_dump_restores_the_libraries_it_was_taken_from() {
    let mut sim = simulation(
        1,
        Duration::from_secs(20),
        Duration::from_millis(1)..=Duration::from_millis(1),
    );
    let node = NodeHandle::new(NodeConfig::new("node"));
    let n = node.clone();
    sim.host("node", move || serve(n.clone()));
    sim.client("app", async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut con = connect("node").await?;
        load(&mut con, LIBRARY).await?;
        let payload: Vec<u8> = redis::cmd("FUNCTION")
            .arg("DUMP")
            .query_async(&mut con)
            .await?;
        // Appending what is already there collides.
        let clash = redis::cmd("FUNCTION")
            .arg("RESTORE")
            .arg(&payload)
            .query_async::<()>(&mut con)
            .await
            .unwrap_err();
        assert_eq!(clash.detail(), Some("Library lib already exists"));
        let _: () = redis::cmd("FUNCTION")
            .arg("FLUSH")
            .query_async(&mut con)
            .await?;
        assert!(hello(&mut con).await.is_err());
        let _: () = redis::cmd("FUNCTION")
            .arg("RESTORE")
            .arg(&payload)
            .query_async(&mut con)
            .await?;
        assert_eq!(hello(&mut con).await?, "hi there");
        let _: () = redis::cmd("FUNCTION")
            .arg("RESTORE")
            .arg(&payload)
            .arg("REPLACE")
            .query_async(&mut con)
            .await?;
        // A damaged payload is refused, the libraries untouched.
        let mut bad = payload.clone();
        bad[1] ^= 0xff;
        let refused = redis::cmd("FUNCTION")
            .arg("RESTORE")
            .arg(&bad)
            .arg("FLUSH")
            .query_async::<()>(&mut con)
            .await
            .unwrap_err();
        assert_eq!(
            refused.detail(),
            Some("DUMP payload version or checksum are wrong")
        );
        assert_eq!(hello(&mut con).await?, "hi there");
        Ok(())
    });
    sim.run().unwrap();
}
