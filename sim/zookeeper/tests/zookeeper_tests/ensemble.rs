//! An ensemble of three simulated servers on turmoil: a leader elected,
//! writes through any member, a member cut off dropping its clients, a
//! minority that cannot commit, a leader's crash, a silent session's
//! expiry on the leader's clock, `sync` on a follower that lags, and a
//! session that moves: revalidated by the leader, and its old member's
//! writes refused.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::Client;
use simzk::zab::Role;
use simzk::{Change, ChangeKind, Config, Place, Server, serve_sim};
use turmoil::net::TcpStream;
use zkproto::codes::{CreateMode, ErrorCode, OpCode};
use zkproto::records::PathRequest;

const PORT: u16 = 2181;
const HOSTS: [&str; 3] = ["zk1", "zk2", "zk3"];

/// A simulation of `secs` at most whose network draws from `seed`.
fn sim(secs: u64, seed: u64) -> turmoil::Sim<'static> {
    turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(secs))
        .rng_seed(seed)
        .build()
}

/// Three members on `zk1`..`zk3`, each serving clients on [`PORT`].
fn ensemble(sim: &mut turmoil::Sim<'static>, seed: u64) -> Vec<Server> {
    (1..=3u64)
        .map(|id| {
            let server = Server::member(
                Config::new(Arc::new(|| 1_700_000_000_000)),
                Place::of(id, &HOSTS, seed),
            );
            let s = server.clone();
            sim.host(HOSTS[id as usize - 1], move || serve_sim(s.clone(), PORT));
            server
        })
        .collect()
}

/// Waits until one member leads and every member in `among` serves;
/// returns the leader's index.
async fn leader_among(servers: &[Server], among: &[usize]) -> usize {
    loop {
        let leader = among
            .iter()
            .copied()
            .find(|&i| servers[i].role() == Some(Role::Leading));
        if let Some(leader) = leader
            && among.iter().all(|&i| servers[i].is_serving())
        {
            return leader;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn connect(index: usize) -> std::io::Result<Client<TcpStream>> {
    Client::connect(TcpStream::connect((HOSTS[index], PORT)).await?, 10_000).await
}

fn others(of: usize) -> [usize; 2] {
    [(of + 1) % 3, (of + 2) % 3]
}

#[test]
fn three_members_elect_a_leader_and_a_create_through_a_follower_is_visible_on_all_three() {
    let mut sim = sim(60, 1);
    let servers = ensemble(&mut sim, 1);
    sim.client("app", async move {
        let leader = leader_among(&servers, &[0, 1, 2]).await;
        let follower = others(leader)[0];
        let mut c = connect(follower).await?;
        let path = c
            .create("/x", Some(b"v"), CreateMode::Persistent)
            .await?
            .map_err(|e| format!("create: {e}"))?;
        assert_eq!(path, "/x");
        // The follower answered once it had applied it.
        assert!(servers[follower].tree().get("/x").is_some());
        tokio::time::sleep(Duration::from_millis(500)).await;
        let czxids: Vec<i64> = servers
            .iter()
            .map(|s| s.tree().get("/x").expect("on every member").stat.czxid)
            .collect();
        assert!(czxids.iter().all(|&z| z == czxids[0]), "{czxids:?}");
        assert!(czxids[0] >> 32 >= 1, "a zxid of the leader's epoch");
        for i in 0..3 {
            let mut reader = connect(i).await?;
            let (data, _) = reader
                .get("/x", false)
                .await?
                .map_err(|e| format!("get: {e}"))?;
            assert_eq!(data.as_deref(), Some(&b"v"[..]));
        }
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_follower_cut_off_drops_its_clients_and_a_client_moves_to_another_member_with_its_session() {
    let mut sim = sim(60, 2);
    let servers = ensemble(&mut sim, 2);
    sim.client("app", async move {
        let leader = leader_among(&servers, &[0, 1, 2]).await;
        let [cut, other] = others(leader);
        let mut c = connect(cut).await?;
        c.create("/mine", None, CreateMode::Ephemeral)
            .await?
            .map_err(|e| format!("create: {e}"))?;
        turmoil::partition(HOSTS[cut], HOSTS[leader]);
        turmoil::partition(HOSTS[cut], HOSTS[other]);
        let started = tokio::time::Instant::now();
        assert!(c.closed_by_server().await, "the cut-off member drops it");
        assert!(started.elapsed() < Duration::from_secs(6));
        assert!(!servers[cut].is_serving());
        // It refuses new connections while it is cut off.
        let refused = connect(cut).await;
        assert!(
            refused.is_err(),
            "a member out of its ensemble serves nobody"
        );
        let stream = TcpStream::connect((HOSTS[other], PORT)).await?;
        let mut moved =
            Client::resume(stream, 10_000, Some((c.session_id, c.passwd.clone()))).await?;
        assert_eq!(moved.session_id, c.session_id);
        let stat = moved
            .exists("/mine", false)
            .await?
            .map_err(|e| format!("exists: {e}"))?;
        assert_eq!(stat.ephemeral_owner, c.session_id);
        // Well past the session's timeout, pinging the new member keeps it.
        for _ in 0..15 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            moved.ping().await?;
        }
        assert!(moved.exists("/mine", false).await?.is_ok());
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn the_minority_cannot_commit_while_the_majority_goes_on() {
    let mut sim = sim(90, 3);
    let servers = ensemble(&mut sim, 3);
    sim.client("app", async move {
        let old = leader_among(&servers, &[0, 1, 2]).await;
        let majority = others(old);
        let mut lonely = connect(old).await?;
        turmoil::partition(HOSTS[old], HOSTS[majority[0]]);
        turmoil::partition(HOSTS[old], HOSTS[majority[1]]);
        // Proposed by a leader without a quorum: never answered, and its
        // connection closes when the leader steps down.
        let minority = lonely
            .create("/minority", None, CreateMode::Persistent)
            .await;
        assert!(minority.is_err(), "{:?}", minority.map(|_| ()));
        assert_ne!(servers[old].role(), Some(Role::Leading));
        let new = leader_among(&servers, &majority).await;
        let mut c = connect(new).await?;
        c.create("/majority", None, CreateMode::Persistent)
            .await?
            .map_err(|e| format!("create: {e}"))?;
        assert!(servers[old].tree().get("/majority").is_none());
        turmoil::repair(HOSTS[old], HOSTS[majority[0]]);
        turmoil::repair(HOSTS[old], HOSTS[majority[1]]);
        leader_among(&servers, &[0, 1, 2]).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        for server in &servers {
            let tree = server.tree();
            assert!(tree.get("/majority").is_some());
            assert!(tree.get("/minority").is_none(), "never committed");
        }
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_leader_crash_lets_the_others_elect_a_new_one_and_acknowledged_writes_survive() {
    let mut sim = sim(120, 4);
    let servers = ensemble(&mut sim, 4);
    // 0: writing; 1: written, crash the leader (at `crashed`); 2: crashed;
    // 3: bring it back; 4: done.
    let phase = Arc::new(AtomicUsize::new(0));
    let crashed = Arc::new(AtomicUsize::new(usize::MAX));
    let (p, k, s) = (phase.clone(), crashed.clone(), servers.clone());
    sim.client("app", async move {
        let leader = leader_among(&s, &[0, 1, 2]).await;
        let mut c = connect(leader).await?;
        for path in ["/a", "/b"] {
            c.create(path, Some(b"acked"), CreateMode::Persistent)
                .await?
                .map_err(|e| format!("create: {e}"))?;
        }
        k.store(leader, Ordering::SeqCst);
        p.store(1, Ordering::SeqCst);
        while p.load(Ordering::SeqCst) < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let new = leader_among(&s, &others(leader)).await;
        assert_ne!(new, leader);
        let mut c = connect(new).await?;
        for path in ["/a", "/b"] {
            let (data, _) = c
                .get(path, false)
                .await?
                .map_err(|e| format!("get {path}: {e}"))?;
            assert_eq!(data.as_deref(), Some(&b"acked"[..]));
        }
        c.create("/c", None, CreateMode::Persistent)
            .await?
            .map_err(|e| format!("create: {e}"))?;
        p.store(3, Ordering::SeqCst);
        // The old leader, back, catches up as a follower.
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if s[leader].is_serving() && s[leader].tree().get("/c").is_some() {
                break;
            }
        }
        assert!(matches!(s[leader].role(), Some(Role::Following(_))));
        p.store(4, Ordering::SeqCst);
        Ok(())
    });
    loop {
        if sim.step().unwrap() {
            break;
        }
        match phase.load(Ordering::SeqCst) {
            1 => {
                sim.crash(HOSTS[crashed.load(Ordering::SeqCst)]);
                phase.store(2, Ordering::SeqCst);
            }
            3 => {
                sim.bounce(HOSTS[crashed.load(Ordering::SeqCst)]);
                phase.store(30, Ordering::SeqCst);
            }
            _ => {}
        }
    }
    assert_eq!(phase.load(Ordering::SeqCst), 4);
    let zxids: Vec<i64> = servers.iter().map(Server::last_zxid).collect();
    assert!(zxids.iter().all(|&z| z == zxids[0]), "{zxids:?}");
}

#[test]
fn a_session_whose_client_is_silent_expires_once_and_its_ephemeral_goes_on_every_member() {
    let mut sim = sim(60, 5);
    let servers = ensemble(&mut sim, 5);
    let seen: Arc<Mutex<Vec<(usize, Change)>>> = Arc::default();
    for (i, server) in servers.iter().enumerate() {
        let seen = seen.clone();
        server.observe(Arc::new(move |c| seen.lock().unwrap().push((i, c.clone()))));
    }
    let s = servers.clone();
    sim.client("app", async move {
        let leader = leader_among(&s, &[0, 1, 2]).await;
        let follower = others(leader)[0];
        let stream = TcpStream::connect((HOSTS[follower], PORT)).await?;
        let mut holder = Client::connect(stream, 2_000).await?;
        holder
            .create("/eph", None, CreateMode::Ephemeral)
            .await?
            .map_err(|e| format!("create: {e}"))?;
        // Silent from here on.
        let started = tokio::time::Instant::now();
        assert!(holder.closed_by_server().await, "the expiry closed it");
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(1_500), "{waited:?}");
        assert!(waited <= Duration::from_secs(4), "{waited:?}");
        tokio::time::sleep(Duration::from_secs(1)).await;
        for server in &s {
            assert!(server.tree().get("/eph").is_none());
            assert!(!server.session_ids().contains(&holder.session_id));
        }
        Ok(())
    });
    sim.run().unwrap();
    let seen = seen.lock().unwrap();
    let deletions: Vec<&(usize, Change)> = seen
        .iter()
        .filter(|(_, c)| c.path == "/eph" && matches!(c.kind, ChangeKind::Deleted { .. }))
        .collect();
    assert_eq!(deletions.len(), 3, "once per member: {deletions:?}");
    for (_, change) in &deletions {
        assert_eq!(change.kind, ChangeKind::Deleted { by_expiry: true });
        assert_eq!(change.zxid, deletions[0].1.zxid, "one transaction");
    }
}

#[test]
fn sync_on_a_lagging_follower_returns_only_after_it_has_the_leaders_writes() {
    let mut sim = sim(60, 6);
    let servers = ensemble(&mut sim, 6);
    sim.client("app", async move {
        let leader = leader_among(&servers, &[0, 1, 2]).await;
        let lagging = others(leader)[0];
        let mut writer = connect(leader).await?;
        let mut reader = connect(lagging).await?;
        turmoil::hold(HOSTS[leader], HOSTS[lagging]);
        writer
            .create("/w", None, CreateMode::Persistent)
            .await?
            .map_err(|e| format!("create: {e}"))?;
        // A read on the follower lags.
        assert_eq!(
            reader.exists("/w", false).await?.map(|_| ()),
            Err(ErrorCode::NoNode.code())
        );
        let started = tokio::time::Instant::now();
        let release = async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            turmoil::release(HOSTS[leader], HOSTS[lagging]);
        };
        let root = PathRequest { path: "/".into() };
        let (synced, ()) = tokio::join!(reader.call(OpCode::Sync, &root), release);
        assert_eq!(synced?.header.err, 0);
        assert!(started.elapsed() >= Duration::from_secs(1));
        assert!(reader.exists("/w", false).await?.is_ok(), "caught up");
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_session_resumed_on_a_lagging_follower_waits_for_the_leader_and_sees_its_commits() {
    let mut sim = sim(60, 6);
    let servers = ensemble(&mut sim, 6);
    sim.client("app", async move {
        let leader = leader_among(&servers, &[0, 1, 2]).await;
        let lagging = others(leader)[0];
        let mut c = connect(leader).await?;
        turmoil::hold(HOSTS[leader], HOSTS[lagging]);
        c.create("/w", None, CreateMode::Persistent)
            .await?
            .map_err(|e| format!("create: {e}"))?;
        let started = tokio::time::Instant::now();
        let release = async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            turmoil::release(HOSTS[leader], HOSTS[lagging]);
        };
        let resume = async {
            let stream = TcpStream::connect((HOSTS[lagging], PORT)).await?;
            Client::resume(stream, 10_000, Some((c.session_id, c.passwd.clone()))).await
        };
        let (moved, ()) = tokio::join!(resume, release);
        let mut moved = moved?;
        assert_eq!(moved.session_id, c.session_id);
        assert!(
            started.elapsed() >= Duration::from_secs(1),
            "the handshake waits for the leader's revalidation"
        );
        assert!(
            moved.exists("/w", false).await?.is_ok(),
            "the resumed session reads what the leader had committed"
        );
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_write_sent_through_a_member_its_session_has_left_fails_with_session_moved() {
    let mut sim = sim(60, 8);
    let servers = ensemble(&mut sim, 8);
    sim.client("app", async move {
        let leader = leader_among(&servers, &[0, 1, 2]).await;
        let [old, new] = others(leader);
        let mut c = connect(old).await?;
        turmoil::hold(HOSTS[old], HOSTS[leader]);
        // The create is on its way to the leader, held; the client gives up.
        let late = tokio::time::timeout(
            Duration::from_millis(300),
            c.create("/late", None, CreateMode::Persistent),
        )
        .await;
        assert!(late.is_err(), "held on its way to the leader");
        let stream = TcpStream::connect((HOSTS[new], PORT)).await?;
        let mut moved =
            Client::resume(stream, 10_000, Some((c.session_id, c.passwd.clone()))).await?;
        turmoil::release(HOSTS[old], HOSTS[leader]);
        tokio::time::sleep(Duration::from_secs(1)).await;
        let root = PathRequest { path: "/".into() };
        assert_eq!(moved.call(OpCode::Sync, &root).await?.header.err, 0);
        assert_eq!(
            moved.exists("/late", false).await?.map(|_| ()),
            Err(ErrorCode::NoNode.code()),
            "the leader refused the create its session's old member forwarded"
        );
        moved
            .create("/now", None, CreateMode::Persistent)
            .await?
            .map_err(|e| format!("a write through the new member: {e}"))?;
        Ok(())
    });
    sim.run().unwrap();
}

/// How long after its leader's crash the other two serve under a new
/// leader: told of the crash at once (`reset`, as a killed process's
/// closed connections tell them), or left to notice its silence.
fn new_leader_after_crash(reset: bool) -> Duration {
    let mut sim = sim(60, 12);
    let servers = ensemble(&mut sim, 12);
    // 0: electing; 1: crash the leader (at `crashed`); 2: crashed; 3: done.
    let phase = Arc::new(AtomicUsize::new(0));
    let crashed = Arc::new(AtomicUsize::new(usize::MAX));
    let took = Arc::new(Mutex::new(Duration::ZERO));
    let (p, k, s, t) = (
        phase.clone(),
        crashed.clone(),
        servers.clone(),
        took.clone(),
    );
    sim.client("app", async move {
        let leader = leader_among(&s, &[0, 1, 2]).await;
        k.store(leader, Ordering::SeqCst);
        p.store(1, Ordering::SeqCst);
        while p.load(Ordering::SeqCst) < 2 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let started = tokio::time::Instant::now();
        leader_among(&s, &others(leader)).await;
        *t.lock().unwrap() = started.elapsed();
        p.store(3, Ordering::SeqCst);
        Ok(())
    });
    loop {
        if sim.step().unwrap() || phase.load(Ordering::SeqCst) == 3 {
            break;
        }
        if phase.load(Ordering::SeqCst) == 1 {
            let leader = crashed.load(Ordering::SeqCst);
            if reset {
                for i in others(leader) {
                    servers[i].peer_reset(leader as u64 + 1);
                }
            }
            sim.crash(HOSTS[leader]);
            phase.store(2, Ordering::SeqCst);
        }
    }
    *took.lock().unwrap()
}

#[test]
fn a_killed_leaders_followers_elect_another_at_once_and_a_silent_ones_after_the_sync_limit() {
    // Five ticks of 500 ms: ZooKeeper's sample syncLimit.
    let sync_limit = Duration::from_millis(2500);
    let killed = new_leader_after_crash(true);
    let silent = new_leader_after_crash(false);
    assert!(killed < Duration::from_secs(1), "killed: {killed:?}");
    assert!(silent >= sync_limit, "silent: {silent:?}");
}

/// What each member's observer saw, with when (simulated ms).
type Observed = Vec<Vec<(u128, Change)>>;

/// A run of writes through every member, a follower cut off and back:
/// what each member's observer saw, with the simulated time it saw it.
fn observed_run(seed: u64) -> Observed {
    let mut sim = sim(60, seed);
    let servers = ensemble(&mut sim, seed);
    let seen: Arc<Mutex<Observed>> = Arc::new(Mutex::new(vec![Vec::new(); 3]));
    for (i, server) in servers.iter().enumerate() {
        let seen = seen.clone();
        server.observe(Arc::new(move |c| {
            let at = turmoil::elapsed().as_millis();
            seen.lock().unwrap()[i].push((at, c.clone()));
        }));
    }
    sim.client("app", async move {
        let leader = leader_among(&servers, &[0, 1, 2]).await;
        let [cut, other] = others(leader);
        for (n, i) in [leader, cut, other].into_iter().enumerate() {
            let mut c = connect(i).await?;
            let path = format!("/n{n}");
            c.create(&path, Some(b"v"), CreateMode::PersistentSequential)
                .await?
                .map_err(|e| format!("create: {e}"))?;
        }
        turmoil::partition(HOSTS[cut], HOSTS[leader]);
        turmoil::partition(HOSTS[cut], HOSTS[other]);
        let mut c = connect(other).await?;
        c.create("/during", None, CreateMode::Persistent)
            .await?
            .map_err(|e| format!("create: {e}"))?;
        turmoil::repair(HOSTS[cut], HOSTS[leader]);
        turmoil::repair(HOSTS[cut], HOSTS[other]);
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if servers[cut].is_serving() && servers[cut].tree().get("/during").is_some() {
                return Ok(());
            }
        }
    });
    sim.run().unwrap();
    let seen = seen.lock().unwrap();
    seen.clone()
}

#[test]
fn every_member_observes_the_same_changes_and_a_seed_replays_them_at_the_same_times() {
    let first = observed_run(7);
    let changes = |member: &Vec<(u128, Change)>| -> Vec<Change> {
        member.iter().map(|(_, c)| c.clone()).collect()
    };
    assert!(changes(&first[0]).len() >= 4, "{:?}", first[0]);
    assert_eq!(changes(&first[0]), changes(&first[1]));
    assert_eq!(changes(&first[0]), changes(&first[2]));
    assert_eq!(first, observed_run(7), "the same seed, the same history");
}
