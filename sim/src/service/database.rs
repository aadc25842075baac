//! What the database services share in the simulator: one server per
//! node, each with a wall clock of its own that its `now()` reads and the
//! nemesis moves, and the same answers to node faults: a commit is
//! synced before it is acknowledged, so a crash of either kind loses no
//! committed row (and every session, which the server's restart ends).
//!
//! A `replicated` deployment, for a database that has standbys
//! ([`DatabaseServer::KINDS`]), is a primary on `node-0` and hot standbys
//! on the other nodes replaying its commits `replication_delay_ms`
//! behind; clients dial `master`, which a failover points at the
//! promoted standby.

use super::{GroundTruth, LockService, SimDeployment, Software};
use crate::client_clock::{EPOCH_MS, Skew};
use crate::freeze::sim_now;
use crate::machines::Machines;
use crate::nemesis::ClockChange;
use futures::future::LocalBoxFuture;
use model::fault::CrashKind;
use model::host::Host;
use model::scenario::{Topology, TopologyKind};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A database server's wall clock, in ms since the Unix epoch: what its
/// `now()` reads.
pub type WallClockMs = Arc<dyn Fn() -> i64 + Send + Sync>;

/// A database as a lock service: one server on each node, which every
/// client dials (standalone), or a primary and its standbys (replicated).
/// What a database does its own way is only its server; the rest of its
/// [`LockService`] is this file's.
pub trait DatabaseServer: Sync {
    /// The service's name, as its rungs name it.
    const NAME: &'static str;
    /// The deployments it runs: `replicated` only if it has standbys.
    const KINDS: &'static [TopologyKind] = &[TopologyKind::Standalone];
    /// One server: clones are the same server, which outlives its host.
    type Server: Clone + 'static;

    /// Builds the server of `host`, its `now()` reading `wall_clock_ms`,
    /// its changes to the lock's names fed into `ground_truth`; a hot
    /// standby of `primary`, if given.
    fn new_server(
        &self,
        host: Host,
        wall_clock_ms: WallClockMs,
        ground_truth: &GroundTruth,
        primary: Option<&Self::Server>,
    ) -> Self::Server;

    /// Serves `server` on `port` until its host goes down.
    fn serve(server: &Self::Server, port: u16) -> LocalBoxFuture<'static, turmoil::Result>;

    /// Replays `primary`'s commits on `standby`, `lag` behind, until it is
    /// promoted. Never called for a database without standbys.
    fn follow(
        standby: &Self::Server,
        primary: &Self::Server,
        lag: Duration,
    ) -> LocalBoxFuture<'static, ()>;

    /// Ends a standby's recovery: it stops following and takes writes.
    fn promote(server: &Self::Server);
}

impl<D: DatabaseServer> LockService for D {
    fn name(&self) -> &'static str {
        D::NAME
    }

    fn kinds(&self) -> &'static [TopologyKind] {
        D::KINDS
    }

    fn node_hosts(&self, topology: &Topology) -> Vec<Host> {
        topology.nodes()
    }

    fn lock_targets(&self, topology: &Topology, _client: usize) -> Vec<Host> {
        match topology.kind {
            TopologyKind::Replicated => vec![Host::Master],
            _ => topology.nodes(),
        }
    }

    fn aliases(&self, topology: &Topology) -> Vec<(Host, Host)> {
        match topology.kind {
            TopologyKind::Replicated => vec![(Host::Master, Host::Node(0))],
            _ => Vec::new(),
        }
    }

    fn nodes_talk(&self, topology: &Topology) -> bool {
        topology.kind == TopologyKind::Replicated
    }

    fn start_sim(
        &self,
        _seed: u64,
        topology: &Topology,
        machines: &Machines,
        ground_truth: GroundTruth,
    ) -> (Box<dyn SimDeployment>, Vec<(Host, Software)>) {
        let replicated = topology.kind == TopologyKind::Replicated;
        let lag = Duration::from_millis(topology.replication_delay_ms);
        let mut clocks = BTreeMap::new();
        let mut promoters: BTreeMap<Host, Box<dyn Fn()>> = BTreeMap::new();
        let mut software: Vec<(Host, Software)> = Vec::new();
        let mut primary: Option<D::Server> = None;
        for host in topology.nodes() {
            let (clock, wall_clock_ms) = wall_clock();
            let of = primary.as_ref().filter(|_| replicated);
            let server = self.new_server(host, wall_clock_ms, &ground_truth, of);
            let port = machines.address(host).1;
            let serving: Software = match of {
                Some(of) => {
                    let (server, of) = (server.clone(), of.clone());
                    Box::new(move || {
                        let serve = D::serve(&server, port);
                        let follow = D::follow(&server, &of, lag);
                        Box::pin(async move { futures::join!(serve, follow).0 })
                    })
                }
                None => {
                    let server = server.clone();
                    Box::new(move || D::serve(&server, port))
                }
            };
            software.push((host, serving));
            let promoted = server.clone();
            promoters.insert(host, Box::new(move || D::promote(&promoted)));
            clocks.insert(host, clock);
            primary.get_or_insert(server);
        }
        let servers = DatabaseServers { clocks, promoters };
        (Box::new(servers), software)
    }
}

/// A server's movable wall clock, and the reading its `now()` takes.
fn wall_clock() -> (Arc<Mutex<Skew>>, WallClockMs) {
    let clock = Arc::new(Mutex::new(Skew::default()));
    let reads = clock.clone();
    let wall_clock_ms: WallClockMs = Arc::new(move || {
        let skew = *reads.lock().unwrap_or_else(|p| p.into_inner());
        skew.wall_ms(EPOCH_MS, sim_now().as_micros() as i64) as i64
    });
    (clock, wall_clock_ms)
}

/// The running servers of one run, by host: their wall clocks, and what
/// promotes each.
struct DatabaseServers {
    clocks: BTreeMap<Host, Arc<Mutex<Skew>>>,
    promoters: BTreeMap<Host, Box<dyn Fn()>>,
}

impl SimDeployment for DatabaseServers {
    fn hosts(&self) -> Vec<Host> {
        self.clocks.keys().copied().collect()
    }

    fn has(&self, host: Host) -> bool {
        self.clocks.contains_key(&host)
    }

    /// `now()` reads the server's wall clock: a jump or a drift moves
    /// every expiry a lock row compares it with.
    fn move_clock(&self, host: Host, change: ClockChange) {
        let Some(clock) = self.clocks.get(&host) else {
            return;
        };
        let mut skew = clock.lock().unwrap_or_else(|p| p.into_inner());
        match change {
            ClockChange::JumpMs(ms) => skew.jump(ms),
            ClockChange::DriftPpm(ppm) => skew.set_drift(sim_now().as_micros() as i64, ppm),
        }
    }

    /// A commit is synced before it is acknowledged: a crash of either
    /// kind loses no committed row, and every session either way.
    fn prepare_crash(&self, _host: Host, _how: CrashKind) {}

    /// Ends a standby's recovery (`pg_promote()`); nothing, for a
    /// primary or a server on its own.
    fn promote(&self, host: Host) {
        if let Some(promote) = self.promoters.get(&host) {
            promote();
        }
    }
}
