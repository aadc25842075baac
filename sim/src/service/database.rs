//! What the database services share in the simulator: one server per
//! node, each with a wall clock of its own that its `now()` reads and the
//! nemesis moves, and the same answers to node faults: a commit is
//! synced before it is acknowledged, so a crash of either kind loses no
//! committed row (and every session, which the server's restart ends);
//! a single server has no standby to promote.

use super::{GroundTruth, LockService, SimDeployment, Software};
use crate::client_clock::{EPOCH_MS, Skew};
use crate::freeze::sim_now;
use crate::machines::Machines;
use crate::nemesis::ClockChange;
use model::fault::CrashKind;
use model::host::Host;
use model::scenario::{Topology, TopologyKind};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A database server's wall clock, in ms since the Unix epoch: what its
/// `now()` reads.
pub type WallClockMs = Arc<dyn Fn() -> i64 + Send + Sync>;

/// A database as a lock service: one server on each node of a
/// `standalone` deployment, which every client dials. What a database
/// does its own way is only its server; the rest of its
/// [`LockService`] is this file's.
pub trait DatabaseServer: Sync {
    /// The service's name, as its rungs name it.
    const NAME: &'static str;

    /// Builds the server of `host`, listening on `port`, its `now()`
    /// reading `wall_clock_ms`, its changes to the lock's names fed into
    /// `ground_truth`; returns its software.
    fn start_server(
        &self,
        host: Host,
        port: u16,
        wall_clock_ms: WallClockMs,
        ground_truth: &GroundTruth,
    ) -> Software;
}

impl<D: DatabaseServer> LockService for D {
    fn name(&self) -> &'static str {
        D::NAME
    }

    fn kinds(&self) -> &'static [TopologyKind] {
        &[TopologyKind::Standalone]
    }

    fn node_hosts(&self, topology: &Topology) -> Vec<Host> {
        topology.nodes()
    }

    fn lock_targets(&self, topology: &Topology, _client: usize) -> Vec<Host> {
        topology.nodes()
    }

    fn aliases(&self, _topology: &Topology) -> Vec<(Host, Host)> {
        Vec::new()
    }

    fn nodes_talk(&self, _topology: &Topology) -> bool {
        false
    }

    fn start_sim(
        &self,
        _seed: u64,
        topology: &Topology,
        machines: &Machines,
        ground_truth: GroundTruth,
    ) -> (Box<dyn SimDeployment>, Vec<(Host, Software)>) {
        start_servers(topology.nodes(), machines, |host, port, wall_clock_ms| {
            self.start_server(host, port, wall_clock_ms, &ground_truth)
        })
    }
}

/// Starts one server on each of `hosts`: `start(host, port, wall clock)`
/// builds the server listening on `port` and returns its software.
fn start_servers(
    hosts: Vec<Host>,
    machines: &Machines,
    mut start: impl FnMut(Host, u16, WallClockMs) -> Software,
) -> (Box<dyn SimDeployment>, Vec<(Host, Software)>) {
    let mut clocks = BTreeMap::new();
    let mut software = Vec::new();
    for host in hosts {
        let clock = Arc::new(Mutex::new(Skew::default()));
        let reads = clock.clone();
        let wall_clock_ms: WallClockMs = Arc::new(move || {
            let skew = *reads.lock().unwrap_or_else(|p| p.into_inner());
            skew.wall_ms(EPOCH_MS, sim_now().as_micros() as i64) as i64
        });
        software.push((host, start(host, machines.address(host).1, wall_clock_ms)));
        clocks.insert(host, clock);
    }
    (Box::new(DatabaseServers { clocks }), software)
}

/// The running servers of one run, by host, as their wall clocks.
struct DatabaseServers {
    clocks: BTreeMap<Host, Arc<Mutex<Skew>>>,
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

    /// A single server has no standby to promote.
    fn promote(&self, _host: Host) {}
}
