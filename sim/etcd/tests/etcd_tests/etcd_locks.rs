//! The etcd rungs of `locks`, unmodified, against the simulated member on
//! turmoil's network: the 3.4 Mutex's bug found (a waiter whose lease
//! expired while it was cut off is told it holds the lock while another
//! client holds it), 3.5's re-check refusing it, and the lease problem
//! every etcd mutex shares (a holder cut off past its TTL).

use locks::etcd::channel::channel;
use locks::etcd::rungs::EtcdLock;
use locks::{BoxFuture, Clock, Dialer, Lock, LockConfig, LockContext, LockError, Owner};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PORT: u16 = 2379;

/// Dials the member through turmoil.
struct TurmoilDialer;

impl Dialer for TurmoilDialer {
    type Stream = turmoil::net::TcpStream;

    fn dial(&self) -> BoxFuture<'static, std::io::Result<Self::Stream>> {
        Box::pin(turmoil::net::TcpStream::connect(("etcd", PORT)))
    }
}

/// The client's clocks in simulated time (the etcd rungs read only the
/// monotonic one: leases run on the member's clock).
struct SimClock;

impl Clock for SimClock {
    fn wall_ms(&self) -> u64 {
        turmoil::sim_elapsed().unwrap_or_default().as_millis() as u64
    }

    fn monotonic(&self) -> Duration {
        turmoil::sim_elapsed().unwrap_or_default()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

fn lock_of(rung: &str, ttl: Duration) -> EtcdLock {
    let config = LockConfig {
        ttl,
        max_wait: Duration::from_secs(60),
        ..LockConfig::default()
    };
    let ctx = LockContext::new(Arc::new(SimClock), 1);
    EtcdLock::new(rung, channel(Arc::new(TurmoilDialer)), ctx, config).expect("an etcd rung")
}

/// A simulation of at most `secs` seconds, seeded, with one member on
/// host `etcd` whose Lock service re-checks as `recheck` says.
fn simulation(secs: u64, recheck: simetcd::Recheck) -> turmoil::Sim<'static> {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(secs))
        .tick_duration(Duration::from_millis(1))
        .rng_seed(1)
        .build();
    let node = simetcd::Node::alone(simetcd::Member::default());
    sim.host("etcd", move || {
        simetcd::serve_sim(node.clone(), PORT, recheck)
    });
    sim
}

/// What a client did, in simulated seconds since the start.
#[derive(Debug, Clone, PartialEq)]
enum Did {
    Held {
        client: &'static str,
        from_s: f64,
        until_s: f64,
    },
    Refused {
        client: &'static str,
        at_s: f64,
        why: String,
    },
}

type Log = Arc<Mutex<Vec<Did>>>;

fn now_s() -> f64 {
    turmoil::sim_elapsed().unwrap_or_default().as_secs_f64()
}

/// A client that waits `start_s`, acquires with a lease of `ttl_s`, holds
/// for `hold_s`, releases, and logs what happened.
fn client(
    sim: &mut turmoil::Sim<'_>,
    name: &'static str,
    rung: &'static str,
    ttl_s: u64,
    start_s: f64,
    hold_s: f64,
    log: Log,
) {
    sim.client(name, async move {
        tokio::time::sleep(Duration::from_secs_f64(start_s)).await;
        let lock = lock_of(rung, Duration::from_secs(ttl_s));
        let owner = Owner::new(name, 0);
        match lock.acquire("job", &owner).await {
            Ok(lease) => {
                let from_s = now_s();
                tokio::time::sleep(Duration::from_secs_f64(hold_s)).await;
                // The hold ends as the release begins: once the key is
                // deleted the next waiter may hold while this client still
                // waits for its release (the delete, then the lease's
                // revoke) to answer.
                let until_s = now_s();
                let _ = lock.release(&lease).await;
                log.lock().unwrap().push(Did::Held {
                    client: name,
                    from_s,
                    until_s,
                });
            }
            Err(e) => log.lock().unwrap().push(Did::Refused {
                client: name,
                at_s: now_s(),
                why: e.to_string(),
            }),
        }
        Ok(())
    });
}

/// The waiter-lease case (3.4's expired-waiter bug, docs/ladder.md
/// section 14): A holds for 15 s; B queues
/// with a 3 s lease and is cut off from the member from 2 s to 18 s, so
/// its lease expires and its key is deleted; C queues behind; A releases
/// at 15 s and C takes the lock; B's link comes back at 18 s.
fn waiter_lease_expires(rung: &'static str) -> Vec<Did> {
    let mut sim = simulation(120, simetcd::Recheck::No);
    let log: Log = Arc::default();
    client(&mut sim, "a", rung, 30, 0.0, 15.0, log.clone());
    client(&mut sim, "b", rung, 3, 1.0, 1.0, log.clone());
    client(&mut sim, "c", rung, 30, 3.0, 10.0, log.clone());
    let mut cut = false;
    while !sim.step().expect("the simulation runs") {
        let t = sim.elapsed().as_secs_f64();
        if !cut && (2.0..18.0).contains(&t) {
            sim.hold("b", "etcd");
            cut = true;
        }
        if cut && t >= 18.0 {
            sim.release("b", "etcd");
            cut = false;
        }
    }
    log.lock().unwrap().clone()
}

fn held(log: &[Did], who: &str) -> Option<(f64, f64)> {
    log.iter().find_map(|d| match d {
        Did::Held {
            client,
            from_s,
            until_s,
        } if *client == who => Some((*from_s, *until_s)),
        _ => None,
    })
}

#[test]
fn etcd_3_4_mutex_tells_a_waiter_whose_lease_expired_that_it_holds_the_lock() {
    let log = waiter_lease_expires("etcd-mutex-3.4");
    let (b_from, b_until) = held(&log, "b").expect("b is told it holds the lock");
    let (c_from, c_until) = held(&log, "c").expect("c holds the lock");
    assert!(
        b_from < c_until && c_from < b_until,
        "b and c hold the lock at once: {log:?}"
    );
}

#[test]
fn etcd_lock_rpc_of_3_4_tells_the_expired_waiter_it_holds_the_lock_too() {
    let log = waiter_lease_expires("etcd-lock-rpc");
    let (b_from, b_until) = held(&log, "b").expect("b is told it holds the lock");
    let (c_from, c_until) = held(&log, "c").expect("c holds the lock");
    assert!(b_from < c_until && c_from < b_until, "{log:?}");
}

#[test]
fn etcd_3_5_mutex_tells_the_expired_waiter_its_session_expired() {
    let log = waiter_lease_expires("etcd-mutex");
    assert!(held(&log, "b").is_none(), "{log:?}");
    assert!(
        log.iter().any(|d| matches!(d, Did::Refused { client: "b", why, .. } if why.contains("session is expired"))),
        "{log:?}"
    );
    assert!(held(&log, "c").is_some(), "{log:?}");
}

#[test]
fn an_etcd_mutex_hands_the_lock_from_holder_to_waiter_without_overlap() {
    let mut sim = simulation(60, simetcd::Recheck::No);
    let log: Log = Arc::default();
    for (i, name) in ["a", "b", "c", "d"].into_iter().enumerate() {
        client(
            &mut sim,
            name,
            "etcd-mutex",
            5,
            0.1 * i as f64,
            1.0,
            log.clone(),
        );
    }
    sim.run().expect("the simulation runs");
    let log = log.lock().unwrap().clone();
    let mut spans: Vec<(f64, f64)> = ["a", "b", "c", "d"]
        .iter()
        .filter_map(|c| held(&log, c))
        .collect();
    assert_eq!(spans.len(), 4, "{log:?}");
    spans.sort_by(|x, y| x.0.total_cmp(&y.0));
    for w in spans.windows(2) {
        assert!(w[0].1 <= w[1].0, "overlap: {log:?}");
    }
}

#[test]
fn a_holder_cut_off_past_its_lease_still_believes_it_holds_an_etcd_mutex() {
    // A holds with a 3 s lease for 10 s and is cut off from 1 s to 9 s;
    // its key goes with its lease, and B, waiting, takes the lock.
    let mut sim = simulation(60, simetcd::Recheck::OwnKey);
    let log: Log = Arc::default();
    client(&mut sim, "a", "etcd-mutex", 3, 0.0, 10.0, log.clone());
    client(&mut sim, "b", "etcd-mutex", 3, 0.5, 1.0, log.clone());
    let mut cut = false;
    while !sim.step().expect("the simulation runs") {
        let t = sim.elapsed().as_secs_f64();
        if !cut && (1.0..9.0).contains(&t) {
            sim.hold("a", "etcd");
            cut = true;
        }
        if cut && t >= 9.0 {
            sim.release("a", "etcd");
            cut = false;
        }
    }
    let log = log.lock().unwrap().clone();
    let (a_from, a_until) = held(&log, "a").expect("a believes it held the lock throughout");
    let (b_from, b_until) = held(&log, "b").expect("b took the lock when a's lease expired");
    assert!(b_from < a_until && a_from < b_until, "{log:?}");
}

#[test]
fn lock_errors_from_a_refused_session_are_not_worth_retrying() {
    let e = LockError::Etcd {
        message: "mutex: session is expired".into(),
        transient: false,
    };
    assert!(!e.transient());
}
