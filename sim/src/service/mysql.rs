//! MySQL (MariaDB) as a lock service in the simulator: a `simmysql`
//! server on a turmoil machine, speaking the MySQL wire protocol to the
//! MariaDB rung (`mysql-get-lock`).
//!
//! - `standalone`: one server.
//!
//! The server's committed rows live outside its host, as InnoDB's do in
//! its redo log, so a crash loses no committed row; its sessions, and
//! every named lock they held, end with the process, as MariaDB's do. A
//! crash of a client's host closes its connections, as a killed
//! process's kernel would, so the server ends their sessions at once.
//! `NOW()` reads the server's own wall clock, which the nemesis can jump
//! or drift (no rung here reads it yet; a lock row's expiry would).
//!
//! Ground truth: the named lock of a watched lock
//! ([`locks::database::rungs::mysql_lock_name`] of its name, the name
//! itself unless it is longer than MariaDB takes) is `set` when a session
//! takes it (its value the holder's connection id), `deleted` when
//! `RELEASE_LOCK` or `RELEASE_ALL_LOCKS()` lets it go, `expired` when its
//! session ended under it.

use super::{GroundTruth, LockService, SimDeployment, Software};
use crate::client_clock::{EPOCH_MS, Skew};
use crate::freeze::sim_now;
use crate::machines::Machines;
use crate::nemesis::ClockChange;
use locks::database::rungs::mysql_lock_name;
use model::fault::CrashKind;
use model::history::KeyChange;
use model::host::Host;
use model::scenario::{Topology, TopologyKind};
use simmysql::{Change, Config, ReleaseReason, Server};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// MySQL (MariaDB): one server.
#[derive(Debug, Clone, Copy, Default)]
pub struct MySqlService;

impl LockService for MySqlService {
    fn name(&self) -> &'static str {
        locks::database::rungs::MYSQL_SERVICE
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
        let mut servers = BTreeMap::new();
        let mut software: Vec<(Host, Software)> = Vec::new();
        for host in self.node_hosts(topology) {
            let clock = Arc::new(Mutex::new(Skew::default()));
            let reads = clock.clone();
            let wall_clock_ms = Arc::new(move || {
                let skew = *reads.lock().unwrap_or_else(|p| p.into_inner());
                skew.wall_ms(EPOCH_MS, sim_now().as_micros() as i64) as i64
            });
            let server = Server::new(Config::new(wall_clock_ms));
            let feed = ground_truth.clone();
            let names: BTreeMap<String, String> = (feed.watched().iter())
                .map(|name| (mysql_lock_name(name), name.clone()))
                .collect();
            server.observe(Arc::new(move |change: &Change| {
                record_ground_truth(&feed, &names, host, change);
            }));
            let port = machines.address(host).1;
            let serving = server.clone();
            software.push((
                host,
                Box::new(move || Box::pin(simmysql::serve_sim(serving.clone(), port))),
            ));
            servers.insert(host, (server, clock));
        }
        (Box::new(MySqlServers { servers }), software)
    }
}

/// The running servers of one run, by host, with their wall clocks.
struct MySqlServers {
    servers: BTreeMap<Host, (Server, Arc<Mutex<Skew>>)>,
}

impl SimDeployment for MySqlServers {
    fn hosts(&self) -> Vec<Host> {
        self.servers.keys().copied().collect()
    }

    fn has(&self, host: Host) -> bool {
        self.servers.contains_key(&host)
    }

    /// `NOW()` reads the server's wall clock: a jump or a drift moves
    /// every expiry a lock row would compare it with.
    fn move_clock(&self, host: Host, change: ClockChange) {
        let Some((_, clock)) = self.servers.get(&host) else {
            return;
        };
        let mut skew = clock.lock().unwrap_or_else(|p| p.into_inner());
        match change {
            ClockChange::JumpMs(ms) => skew.jump(ms),
            ClockChange::DriftPpm(ppm) => skew.set_drift(sim_now().as_micros() as i64, ppm),
        }
    }

    /// A commit is on disk before it is acknowledged: a crash of either
    /// kind loses no committed row, and every session either way.
    fn prepare_crash(&self, _host: Host, _how: CrashKind) {}

    /// A single server has no replica to promote.
    fn promote(&self, _host: Host) {}
}

/// A change to a watched lock's named lock, into the history.
fn record_ground_truth(
    feed: &GroundTruth,
    names: &BTreeMap<String, String>,
    node: Host,
    change: &Change,
) {
    let recorded = match change {
        Change::LockGranted { name, id } => names.get(name).map(|lock| {
            (
                KeyChange::Set,
                lock.clone(),
                Some(format!("connection {id}")),
            )
        }),
        Change::LockReleased { name, why, .. } => names.get(name).map(|lock| {
            let what = match why {
                ReleaseReason::SessionEnded => KeyChange::Expired,
                ReleaseReason::ReleaseLock | ReleaseReason::ReleaseAll => KeyChange::Deleted,
            };
            (what, lock.clone(), None)
        }),
        Change::RowCommitted { .. } => None,
    };
    if let Some((what, key, value)) = recorded {
        let at_us = turmoil::sim_elapsed().unwrap_or_default().as_micros() as u64;
        feed.record(at_us, node, what, key, value);
    }
}
