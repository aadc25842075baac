//! ZooKeeper as a lock service in the simulator: a `simzk` server on a
//! turmoil machine, speaking ZooKeeper's client protocol to the ZooKeeper
//! rungs.
//!
//! - `standalone`: one server.
//! - `cluster`: an ensemble of three servers (or `members`) that run ZAB
//!   among themselves over turmoil's network (`simzk::member`): a write
//!   commits on a majority, a member cut off from the majority stops
//!   serving and drops its clients, and the others elect a leader among
//!   themselves. As in ZooKeeper's election, the highest server id wins
//!   when the logs are level, so the last node (`redis-2`) leads at the
//!   start. Sessions expire on the leader's clock; a new leader gives
//!   every session its whole timeout again. Each client starts at server
//!   `client mod members` and moves along the list when its connection
//!   is lost, as a connect string is walked. The members of a killed one
//!   learn of it at once, as its closed connections tell ZooKeeper's; a
//!   member that loses power falls silent, and they wait out the sync
//!   limit.
//!
//! The server's tree and sessions live outside its host, as ZooKeeper's
//! do on disk (it syncs its log before it answers), so a crash loses
//! nothing it acknowledged; at a restart every session gets its whole
//! timeout again, as ZooKeeper reloads its sessions and restarts their
//! timers. Sessions expire on the server's monotonic clock, so a jump or
//! a drift of its wall clock changes nothing but the `ctime` and `mtime`
//! it writes. Every change to a node under the lock's node goes into the
//! history once, from the first server that applies it, as ground truth: a lock node's creation as `set` (its
//! value the session that owns it), its deletion as `deleted`, or as
//! `expired` when the session's expiry deleted it.

use super::{FirstSeen, GroundTruth, LockService, SimDeployment, Software};
use crate::client_clock::EPOCH_MS;
use crate::machines::Machines;
use crate::nemesis::ClockChange;
use model::fault::CrashKind;
use model::history::KeyChange;
use model::host::Host;
use model::scenario::{Topology, TopologyKind};
use simzk::{Change, ChangeKind, Config, Place, Server};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// ZooKeeper: one standalone server, or an ensemble whose members elect
/// their leader (`cluster`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ZooKeeperService;

impl LockService for ZooKeeperService {
    fn name(&self) -> &'static str {
        "zookeeper"
    }

    fn kinds(&self) -> &'static [TopologyKind] {
        &[TopologyKind::Standalone, TopologyKind::Cluster]
    }

    fn node_hosts(&self, topology: &Topology) -> Vec<Host> {
        topology.nodes()
    }

    fn lock_targets(&self, topology: &Topology, client: usize) -> Vec<Host> {
        // As a connect string: each client starts at a different server
        // and moves along the list when a connection is lost.
        let mut servers = topology.nodes();
        let first = client % servers.len().max(1);
        servers.rotate_left(first);
        servers
    }

    fn aliases(&self, _topology: &Topology) -> Vec<(Host, Host)> {
        Vec::new()
    }

    fn nodes_talk(&self, topology: &Topology) -> bool {
        topology.kind == TopologyKind::Cluster
    }

    fn start_sim(
        &self,
        seed: u64,
        topology: &Topology,
        machines: &Machines,
        ground_truth: GroundTruth,
    ) -> (Box<dyn SimDeployment>, Vec<(Host, Software)>) {
        let hosts = self.node_hosts(topology);
        let machine_names: Vec<String> = hosts.iter().map(|&h| machines.address(h).0).collect();
        let names: Vec<&str> = machine_names.iter().map(String::as_str).collect();
        let first_seen = Arc::new(Mutex::new(FirstSeen::default()));
        let mut servers = BTreeMap::new();
        let mut member_ids = BTreeMap::new();
        let mut software: Vec<(Host, Software)> = Vec::new();
        for (i, &host) in hosts.iter().enumerate() {
            let config = Config::new(Arc::new(wall_clock_ms));
            let server = match topology.kind {
                TopologyKind::Cluster => {
                    member_ids.insert(host, i as u64 + 1);
                    Server::member(config, Place::of(i as u64 + 1, &names, seed))
                }
                _ => Server::new(config),
            };
            let feed = ground_truth.clone();
            let seen = first_seen.clone();
            server.observe(Arc::new(move |change: &Change| {
                let first = (seen.lock())
                    .unwrap_or_else(|p| p.into_inner())
                    .first(host, change.zxid);
                if first {
                    record_ground_truth(&feed, host, change);
                }
            }));
            let port = machines.address(host).1;
            let serving = server.clone();
            software.push((
                host,
                Box::new(move || Box::pin(simzk::serve_sim(serving.clone(), port))),
            ));
            servers.insert(host, server);
        }
        let deployment = ZooKeeperServers {
            servers,
            member_ids,
        };
        (Box::new(deployment), software)
    }
}

/// The simulated wall clock a server stamps `ctime` and `mtime` with.
fn wall_clock_ms() -> i64 {
    let elapsed = turmoil::sim_elapsed().unwrap_or_default().as_millis() as u64;
    (EPOCH_MS + elapsed) as i64
}

/// The running servers of one run, by host, with each member's id in its
/// ensemble (none for a standalone server).
struct ZooKeeperServers {
    servers: BTreeMap<Host, Server>,
    member_ids: BTreeMap<Host, u64>,
}

impl SimDeployment for ZooKeeperServers {
    fn hosts(&self) -> Vec<Host> {
        self.servers.keys().copied().collect()
    }

    fn has(&self, host: Host) -> bool {
        self.servers.contains_key(&host)
    }

    /// Sessions expire on the server's monotonic clock: its wall clock
    /// moving changes no lock.
    fn move_clock(&self, _host: Host, _change: ClockChange) {}

    /// Every acknowledged write is on disk: a crash of either kind loses
    /// nothing. A killed member's kernel resets its connections, so the
    /// other members learn of it at once; a member without power falls
    /// silent, and they wait out the sync limit.
    fn prepare_crash(&self, host: Host, how: CrashKind) {
        let Some(&dying) = self.member_ids.get(&host) else {
            return;
        };
        if how != CrashKind::ProcessKill {
            return;
        }
        for (other, server) in &self.servers {
            if *other != host {
                server.peer_reset(dying);
            }
        }
    }

    /// ZooKeeper has no command to hand leadership over: a standalone
    /// server has no one to hand over to, and an ensemble's leader is
    /// whom its election chose.
    fn promote(&self, _host: Host) {}
}

/// The history's name for a node: its path under the lock root, without
/// the leading root, so that the lock's key (`lock:stock`) is a prefix of
/// every node of the lock (`lock:stock/lock-0000000003`).
fn key_of(path: &str) -> Option<&str> {
    path.strip_prefix(locks::zookeeper::ROOT)?.strip_prefix('/')
}

fn record_ground_truth(feed: &GroundTruth, node: Host, change: &Change) {
    let Some(key) = key_of(&change.path) else {
        return;
    };
    if !feed.watches(key) {
        return;
    }
    let (what, value) = match &change.kind {
        ChangeKind::Created {
            ephemeral_owner, ..
        } => (
            KeyChange::Set,
            Some(format!("session {ephemeral_owner:#x}")),
        ),
        ChangeKind::DataSet { data } => (
            KeyChange::Set,
            Some(String::from_utf8_lossy(data.as_deref().unwrap_or_default()).into_owned()),
        ),
        ChangeKind::Deleted { by_expiry: true } => (KeyChange::Expired, None),
        ChangeKind::Deleted { by_expiry: false } => (KeyChange::Deleted, None),
    };
    let at_us = turmoil::sim_elapsed().unwrap_or_default().as_micros() as u64;
    feed.record(at_us, node, what, key.to_string(), value);
}
