//! # Lock services: what the locks run on
//!
//! A *lock service* is the kind of server a lock keeps its state on:
//! Redis, etcd, ZooKeeper, PostgreSQL or MySQL (MariaDB). The
//! engines (the simulator's [`World`](crate::world::World), real mode's
//! world in the `real` crate) and the nemesis know nothing of any one
//! service: they ask the run's service, through [`LockService`], which
//! hosts its deployment has, which of them a lock dials, which names
//! (such as `master`) point where at the start, and how to build its
//! simulated nodes (the world places their software on machines,
//! [`crate::machines`]); and they control the running nodes through
//! [`SimDeployment`]: move a node's clock, tell it how it is about to
//! die, promote it. turmoil crashes and restarts the hosts themselves.
//!
//! The guarded resource is not the service's: the `store` host is a
//! simulated Redis node whatever the lock runs on
//! (`sim/src/store_host.rs`), because the workload's sales speak Redis.
//!
//! One service, one file beside this one ([`redis`], [`etcd`],
//! [`zookeeper`], [`postgres`], [`mysql`]), registered in
//! [`SERVICES`]. Real mode has the other half of each service, its real
//! servers (`real::service`), so that a service has one API and two
//! backends, as a madsim crate does.

pub mod database;
pub mod etcd;
pub mod mysql;
pub mod postgres;
pub mod redis;
pub mod zookeeper;

use crate::machines::Machines;
use crate::nemesis::ClockChange;
use crate::recorder::Recorder;
use crate::run::RunError;
use futures::future::LocalBoxFuture;
use model::fault::CrashKind;
use model::history::{EventKind, KeyChange};
use model::host::Host;
use model::scenario::{Topology, TopologyKind};
use std::sync::Arc;

/// Every lock service the simulator knows, the default first.
pub const SERVICES: &[&dyn LockService] = &[
    &redis::RedisService,
    &etcd::EtcdService,
    &zookeeper::ZooKeeperService,
    &postgres::PostgresService,
    &mysql::MySqlService,
];

/// A kind of server locks keep their state on, as the simulator sees it.
pub trait LockService: Sync {
    /// Its name, as a person would write it (`redis`).
    fn name(&self) -> &'static str;
    /// The deployment kinds it can run.
    fn kinds(&self) -> &'static [TopologyKind];
    /// The hosts of its nodes in `topology`, in order (the store aside).
    fn node_hosts(&self, topology: &Topology) -> Vec<Host>;
    /// The hosts the lock of client number `client` dials in `topology`:
    /// names such as `master` resolve through the directory at each dial.
    /// A lock that talks to one node of a cluster at a time tries them in
    /// this order.
    fn lock_targets(&self, topology: &Topology, client: usize) -> Vec<Host>;
    /// The names the directory points before the run: (name, host).
    fn aliases(&self, topology: &Topology) -> Vec<(Host, Host)>;
    /// Whether its nodes in `topology` send each other messages (a
    /// replica following its master): such nodes never share a machine
    /// ([`crate::machines`]).
    fn nodes_talk(&self, topology: &Topology) -> bool;
    /// Builds its nodes for a run with `seed`, in host order, each listening where `machines`
    /// puts it and feeding `ground_truth` with its changes to watched
    /// keys; returns them, and each node's software for the world to run
    /// on its machine.
    fn start_sim(
        &self,
        seed: u64,
        topology: &Topology,
        machines: &Machines,
        ground_truth: GroundTruth,
    ) -> (Box<dyn SimDeployment>, Vec<(Host, Software)>);
}

/// What one simulated server runs: its machine calls it at the start and
/// again at every restart.
pub type Software = Box<dyn Fn() -> LocalBoxFuture<'static, turmoil::Result>>;

/// A service's running simulated nodes: the parts of each that outlive
/// its host's crashes, through which the driver stages node faults.
pub trait SimDeployment {
    /// Its nodes, in order.
    fn hosts(&self) -> Vec<Host>;
    /// Whether `host` is one of its nodes.
    fn has(&self, host: Host) -> bool;
    /// Jumps or drifts a node's own clock.
    fn move_clock(&self, host: Host, change: ClockChange);
    /// Tells a node how it is about to die, before turmoil crashes its
    /// host (a power loss loses what its disk had not synced).
    fn prepare_crash(&self, host: Host, how: CrashKind);
    /// Makes a replica the leader its peers follow.
    fn promote(&self, host: Host);
    /// The first node that aborted a runaway script, with its instruction
    /// limit: such a run is cut short. Never, for a service that runs no
    /// scripts.
    fn aborted_a_script(&self) -> Option<(Host, u64)> {
        None
    }
}

/// Where a service's nodes write their ground truth: every change to
/// the lock's keys becomes a `server` event of the history.
#[derive(Debug, Clone)]
pub struct GroundTruth {
    recorder: Arc<Recorder>,
    watched: Vec<String>,
}

impl GroundTruth {
    /// Records into `recorder` the changes of keys that start with one of
    /// the `watched` prefixes (the lock key: the lock and its counters).
    pub fn new(recorder: Arc<Recorder>, watched: Vec<String>) -> GroundTruth {
        GroundTruth { recorder, watched }
    }

    /// The watched prefixes: the lock's key.
    pub fn watched(&self) -> &[String] {
        &self.watched
    }

    /// Whether changes to `key` go into the history.
    pub fn watches(&self, key: &str) -> bool {
        self.watched.iter().any(|w| key.starts_with(w.as_str()))
    }

    /// Records that `node` changed `key` at true time `at_us`.
    pub fn record(
        &self,
        at_us: u64,
        node: Host,
        what: KeyChange,
        key: String,
        value: Option<String>,
    ) {
        let event = EventKind::Server {
            node,
            what,
            key,
            value,
        };
        self.recorder.record_at(at_us, event);
    }
}

/// Which node applied each change first, by the change's place in the
/// service's one order (etcd's revision, ZooKeeper's zxid): every node of a
/// cluster applies every change, and the history records each once, from
/// the first.
#[derive(Debug, Default)]
pub(crate) struct FirstSeen {
    order: i64,
    by: Option<Host>,
}

impl FirstSeen {
    /// Whether `host` applying the change at `order` is its first
    /// application (or another change at the same place that `host`
    /// applied first, as one transaction's changes share it).
    pub(crate) fn first(&mut self, host: Host, order: i64) -> bool {
        if order > self.order {
            self.order = order;
            self.by = Some(host);
            return true;
        }
        order == self.order && self.by == Some(host)
    }
}

/// The lock service `rung` keeps its state on (its metadata's
/// `service`), checked against the deployment `topology` asks for.
pub fn lock_service(rung: &str, topology: &Topology) -> Result<&'static dyn LockService, RunError> {
    let name = locks::rung(rung).map_or("redis", |r| r.service);
    let service = SERVICES
        .iter()
        .copied()
        .find(|s| s.name() == name)
        .ok_or_else(|| {
            RunError::BadInput(format!(
                "{rung}: no simulated lock service is named {name:?}"
            ))
        })?;
    if service.kinds().contains(&topology.kind) {
        Ok(service)
    } else {
        Err(RunError::BadInput(format!(
            "{rung}: the lock service {} cannot run a {:?} deployment; it runs {}",
            service.name(),
            topology.kind,
            service
                .kinds()
                .iter()
                .map(|k| format!("{k:?}").to_lowercase())
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }
}
