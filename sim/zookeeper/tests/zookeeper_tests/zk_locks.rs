//! The ZooKeeper locks of `locks::zookeeper` against the simulated server
//! on turmoil: hand-offs, and a holder cut off past its session timeout.

use crate::common;

use common::server_at;
use locks::{BoxFuture, Dialer, Lock, LockConfig, LockContext, LockError, Owner, SystemClock};
use simzk::serve_sim;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use turmoil::net::TcpStream;

const PORT: u16 = 2181;
const RUNGS: [&str; 4] = ["zk-recipe", "zk-herd", "curator-mutex", "zk-fenced"];

/// Dials the simulated server `zk` on turmoil's network.
struct SimDialer;

impl Dialer for SimDialer {
    type Stream = TcpStream;

    fn dial(&self) -> BoxFuture<'static, std::io::Result<TcpStream>> {
        Box::pin(TcpStream::connect(("zk", PORT)))
    }
}

fn config() -> LockConfig {
    LockConfig {
        ttl: Duration::from_millis(3_000),
        max_wait: Duration::from_millis(20_000),
        ..LockConfig::default()
    }
}

fn lock(rung: &str, seed: u64) -> Box<dyn Lock> {
    let ctx = LockContext::new(Arc::new(SystemClock::new()), seed);
    locks::zookeeper::rungs::build(rung, vec![SimDialer], ctx, config()).expect("a zookeeper rung")
}

/// One hold: when it began and ended, and its fencing token.
type Hold = (Duration, Duration, Option<u64>);

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
fn every_zookeeper_rung_hands_the_lock_to_one_client_at_a_time() {
    for rung in RUNGS {
        let mut sim = sim(60);
        let server = server_at(0);
        sim.host("zk", move || serve_sim(server.clone(), PORT));
        let holds: Arc<Mutex<Vec<Hold>>> = Arc::default();
        let origin = Instant::now();
        for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
            let holds = holds.clone();
            sim.client(name, async move {
                let lock = lock(rung, i as u64 + 1);
                let me = Owner::new(name, 1);
                for _cycle in 0..2 {
                    let lease = lock.acquire("stock", &me).await?;
                    let start = origin.elapsed();
                    lock.before_write(&lease).await?;
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    let end = origin.elapsed();
                    lock.release(&lease).await?;
                    holds.lock().unwrap().push((start, end, lease.fence));
                }
                Ok(())
            });
        }
        sim.run().unwrap_or_else(|e| panic!("{rung}: {e}"));
        let mut holds = holds.lock().unwrap().clone();
        assert_eq!(holds.len(), 6, "{rung}");
        holds.sort();
        for pair in holds.windows(2) {
            assert!(pair[0].1 <= pair[1].0, "{rung}: overlapping holds {pair:?}");
            if rung == "zk-fenced" {
                assert!(pair[0].2 < pair[1].2, "{rung}: fences grow {pair:?}");
            }
        }
    }
}

#[test]
fn a_holder_cut_off_past_its_session_loses_its_node_and_only_curator_stops_writing() {
    for rung in RUNGS {
        let mut sim = sim(60);
        let server = server_at(0);
        sim.host("zk", move || serve_sim(server.clone(), PORT));
        let b_took_it = Arc::new(Mutex::new(None::<Duration>));
        let origin = Instant::now();
        let seen = b_took_it.clone();
        sim.client("a", async move {
            let lock = lock(rung, 1);
            let lease = lock.acquire("stock", &Owner::new("a", 1)).await?;
            turmoil::partition("a", "zk");
            tokio::time::sleep(Duration::from_secs(8)).await;
            turmoil::repair("a", "zk");
            tokio::time::sleep(Duration::from_secs(2)).await;
            let write = lock.before_write(&lease).await;
            match rung {
                // The recipe never asks its session: it would write.
                "zk-recipe" | "zk-herd" => assert!(write.is_ok(), "{rung}: {write:?}"),
                // Curator's state handling: LOST by now.
                _ => assert!(
                    matches!(write, Err(LockError::NotHeld { .. })),
                    "{rung}: {write:?}"
                ),
            }
            let released = lock.release(&lease).await;
            assert!(
                matches!(released, Err(LockError::NotHeld { .. })),
                "{rung}: {released:?}"
            );
            assert!(
                seen.lock().unwrap().is_some(),
                "{rung}: b took it meanwhile"
            );
            // The lock opens a new session for the next cycle.
            let again = lock.acquire("stock", &Owner::new("a", 2)).await?;
            lock.release(&again).await?;
            Ok(())
        });
        let took = b_took_it.clone();
        sim.client("b", async move {
            // Well after A holds, whatever the network's latencies.
            tokio::time::sleep(Duration::from_millis(1_000)).await;
            let lock = lock(rung, 2);
            let lease = lock.acquire("stock", &Owner::new("b", 1)).await?;
            *took.lock().unwrap() = Some(origin.elapsed());
            tokio::time::sleep(Duration::from_millis(500)).await;
            lock.release(&lease).await?;
            Ok(())
        });
        sim.run().unwrap_or_else(|e| panic!("{rung}: {e}"));
        let took = b_took_it.lock().unwrap().expect("b acquired");
        // A's session (3 s) expired while it was cut off, not before.
        assert!(
            took > Duration::from_secs(3) && took < Duration::from_secs(8),
            "{rung}: {took:?}"
        );
    }
}

/// Holds every reply on the streams it makes until a shared instant, as
/// a one-way delay from the server would.
#[derive(Clone, Default)]
struct ReplyHold(Arc<Mutex<Option<Instant>>>);

struct HeldStream {
    inner: TcpStream,
    hold: ReplyHold,
    sleep: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl tokio::io::AsyncRead for HeldStream {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let until = *self.hold.0.lock().unwrap();
        if let Some(until) = until.filter(|u| *u > Instant::now()) {
            let sleep = self
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
            if sleep.as_mut().poll(cx).is_pending() {
                return std::task::Poll::Pending;
            }
            self.sleep = None;
        }
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for HeldStream {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

struct HeldDialer(ReplyHold);

impl Dialer for HeldDialer {
    type Stream = HeldStream;

    fn dial(&self) -> BoxFuture<'static, std::io::Result<HeldStream>> {
        let hold = self.0.clone();
        Box::pin(async move {
            let inner = TcpStream::connect(("zk", PORT)).await?;
            Ok(HeldStream {
                inner,
                hold,
                sleep: None,
            })
        })
    }
}

/// Starts a 2.5 s hold of the replies the second time an acquire passes
/// `acquire-mid` (just before its create goes out): the first cycle made
/// the lock's parent, so the held create makes a node.
struct HoldAtCreate(ReplyHold, Mutex<u32>);

impl locks::FaultHook for HoldAtCreate {
    fn reached(&self, point: locks::FaultPoint, _resource: &str) -> BoxFuture<'static, ()> {
        let mut until = self.0.0.lock().unwrap();
        let mut passes = self.1.lock().unwrap();
        if point == locks::FaultPoint::AcquireMid {
            *passes += 1;
        }
        if point == locks::FaultPoint::AcquireMid && *passes == 2 && until.is_none() {
            *until = Some(Instant::now() + Duration::from_millis(2_500));
        }
        Box::pin(std::future::ready(()))
    }
}

#[test]
fn a_lost_create_reply_leaves_the_recipe_behind_its_own_orphan_while_curator_finds_its_node() {
    for rung in ["zk-recipe", "curator-mutex", "zk-fenced"] {
        let mut sim = sim(60);
        let server = server_at(0);
        let watched = server.clone();
        sim.host("zk", move || serve_sim(server.clone(), PORT));
        sim.client("a", async move {
            let hold = ReplyHold::default();
            let ctx = LockContext::new(Arc::new(SystemClock::new()), 1)
                .with_hook(Arc::new(HoldAtCreate(hold.clone(), Mutex::new(0))));
            let config = LockConfig {
                max_wait: Duration::from_secs(8),
                ..config()
            };
            let lock = locks::zookeeper::rungs::build(rung, vec![HeldDialer(hold)], ctx, config)
                .expect("a zookeeper rung");
            let first = lock.acquire("stock", &Owner::new("a", 1)).await?;
            lock.release(&first).await?;
            let acquired = lock.acquire("stock", &Owner::new("a", 2)).await;
            let nodes: Vec<String> = (watched.tree().paths())
                .filter(|(path, _)| path.starts_with("/locklab/stock/"))
                .map(|(path, _)| path.clone())
                .collect();
            match rung {
                "zk-recipe" => {
                    assert!(
                        matches!(acquired, Err(LockError::NotAcquired { .. })),
                        "{rung}: {acquired:?}"
                    );
                    assert_eq!(nodes.len(), 1, "{rung}: the orphan stays: {nodes:?}");
                }
                _ => {
                    let lease = acquired.unwrap_or_else(|e| panic!("{rung}: {e}"));
                    assert_eq!(nodes.len(), 1, "{rung}: no orphan: {nodes:?}");
                    lock.release(&lease).await?;
                }
            }
            Ok(())
        });
        sim.run().unwrap_or_else(|e| panic!("{rung}: {e}"));
    }
}
