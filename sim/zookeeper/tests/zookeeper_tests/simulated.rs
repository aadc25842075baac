//! The server as a turmoil host: sessions expire on simulated time while
//! their client is silent, and the server's state outlives a crash of its
//! host.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Client, server_at};
use simzk::{ChangeKind, serve_sim};
use turmoil::net::TcpStream;
use zkproto::codes::{CreateMode, ErrorCode, EventType};

const PORT: u16 = 2181;

/// The seed every simulation here runs on: turmoil draws its message
/// latencies from its seed, which is random unless set.
const SEED: u64 = 1;

/// A simulation of `secs` seconds on [`SEED`].
fn sim(secs: u64) -> turmoil::Sim<'static> {
    turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(secs))
        .rng_seed(SEED)
        .build()
}

#[test]
fn a_silent_clients_session_expires_deleting_its_ephemeral_and_firing_anothers_watch() {
    let mut sim = sim(60);
    let server = server_at(0);
    let changes = Arc::new(Mutex::new(Vec::new()));
    let seen = changes.clone();
    server.observe(Arc::new(move |c| seen.lock().unwrap().push(c.clone())));
    let s = server.clone();
    sim.host("zk", move || serve_sim(s.clone(), PORT));
    sim.client("holder", async {
        let stream = TcpStream::connect(("zk", PORT)).await?;
        let mut holder = Client::connect(stream, 4_000).await?;
        assert_eq!(holder.timeout_ms, 4_000);
        holder
            .create("/lock", Some(b"me"), CreateMode::Ephemeral)
            .await?
            .map_err(|e| format!("create: {e}"))?;
        // Silent from here on: no pings, the connection left open.
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert!(holder.closed_by_server().await, "the expiry closed it");
        Ok(())
    });
    sim.client("watcher", async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let stream = TcpStream::connect(("zk", PORT)).await?;
        let mut watcher = Client::connect(stream, 4_000).await?;
        let (data, _) = watcher
            .get("/lock", true)
            .await?
            .map_err(|e| format!("get: {e}"))?;
        assert_eq!(data.as_deref(), Some(&b"me"[..]));
        let started = tokio::time::Instant::now();
        let notices = watcher.wait_notices(Duration::from_secs(1)).await?;
        let waited = started.elapsed();
        assert_eq!(notices.len(), 1);
        assert_eq!(notices[0].r#type, EventType::NodeDeleted.code());
        assert_eq!(notices[0].path, "/lock");
        // 4 s after the holder's last packet, rounded up to a tick.
        assert!(waited >= Duration::from_secs(2), "{waited:?}");
        assert!(waited <= Duration::from_secs(6), "{waited:?}");
        let gone = watcher.exists("/lock", false).await?;
        assert_eq!(gone, Err(ErrorCode::NoNode.code()));
        Ok(())
    });
    sim.run().unwrap();
    let changes = changes.lock().unwrap();
    let last = changes.last().unwrap();
    assert_eq!(last.path, "/lock");
    assert_eq!(last.kind, ChangeKind::Deleted { by_expiry: true });
}

#[test]
fn a_restart_of_the_server_host_keeps_the_tree_and_its_sessions() {
    let mut sim = sim(60);
    let server = server_at(0);
    let s = server.clone();
    sim.host("zk", move || serve_sim(s.clone(), PORT));
    let session = Arc::new(Mutex::new(None));
    let out = session.clone();
    sim.client("writer", async move {
        let stream = TcpStream::connect(("zk", PORT)).await?;
        let mut writer = Client::connect(stream, 10_000).await?;
        writer
            .create("/kept", Some(b"v"), CreateMode::Persistent)
            .await?
            .map_err(|e| format!("create: {e}"))?;
        writer
            .create("/mine", None, CreateMode::Ephemeral)
            .await?
            .map_err(|e| format!("create: {e}"))?;
        *out.lock().unwrap() = Some((writer.session_id, writer.passwd.clone()));
        Ok(())
    });
    sim.run().unwrap();
    sim.crash("zk");
    // Down for longer than the session's timeout: its clock starts over
    // when the server is back.
    for _ in 0..15_000 {
        sim.step().unwrap();
    }
    sim.bounce("zk");
    let resume = session.lock().unwrap().clone();
    sim.client("reader", async move {
        let stream = TcpStream::connect(("zk", PORT)).await?;
        let mut reader = Client::resume(stream, 10_000, resume).await?;
        let (data, stat) = reader
            .get("/kept", false)
            .await?
            .map_err(|e| format!("get: {e}"))?;
        assert_eq!(data.as_deref(), Some(&b"v"[..]));
        assert_eq!(stat.czxid, 2);
        let mine = reader.exists("/mine", false).await?;
        assert!(mine.is_ok(), "the session survived, and its ephemeral node");
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn an_emptied_container_is_swept_within_a_minute_and_a_never_used_one_stays() {
    let mut sim = sim(200);
    let server = server_at(0);
    let s = server.clone();
    sim.host("zk", move || serve_sim(s.clone(), PORT));
    sim.client("user", async {
        let stream = TcpStream::connect(("zk", PORT)).await?;
        let mut c = Client::connect(stream, 10_000).await?;
        for path in ["/used", "/unused"] {
            let created = c.create_container(path).await?;
            assert_eq!(created, Ok(path.to_string()));
        }
        c.create("/used/x", None, CreateMode::Persistent)
            .await?
            .map_err(|e| format!("create: {e}"))?;
        assert_eq!(c.delete("/used/x", -1).await?, 0);
        for _ in 0..65 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            c.ping().await?;
        }
        assert_eq!(
            c.exists("/used", false).await?,
            Err(ErrorCode::NoNode.code())
        );
        assert!(c.exists("/unused", false).await?.is_ok());
        Ok(())
    });
    sim.run().unwrap();
}
