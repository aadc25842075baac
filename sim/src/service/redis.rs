//! Redis as a lock service in the simulator: `simredis` nodes as turmoil
//! hosts.
//!
//! Each node is a turmoil host running `simredis::serve`; its
//! [`simredis::NodeHandle`] outlives restarts (clock, disk, role) and is
//! how the driver jumps its clock, declares the kind of a crash or
//! promotes it. The deployments: one node (`standalone`), a master with
//! replicas that clients reach as `master` (`replicated`, failover
//! re-points the name), or independent masters that a Redlock-style rung
//! dials all at once (`independent`). Every change a node makes to a
//! watched key (the lock, its fencing counter) goes into the history as
//! the server's ground truth.

use super::{GroundTruth, LockService, SimDeployment};
use crate::client_clock::EPOCH_MS;
use crate::nemesis::ClockChange;
use model::fault::CrashKind;
use model::history::KeyChange;
use model::host::Host;
use model::scenario::{Persistence, Topology, TopologyKind};
use simredis::{ClockSpec, NodeConfig, NodeEvent, NodeHandle};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Redis: standalone, replicated with failover, or independent masters.
#[derive(Debug, Clone, Copy, Default)]
pub struct RedisService;

impl LockService for RedisService {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn kinds(&self) -> &'static [TopologyKind] {
        &[
            TopologyKind::Standalone,
            TopologyKind::Replicated,
            TopologyKind::Independent,
        ]
    }

    fn node_hosts(&self, topology: &Topology) -> Vec<Host> {
        topology.nodes()
    }

    fn lock_targets(&self, topology: &Topology) -> Vec<Host> {
        match topology.kind {
            TopologyKind::Standalone => vec![Host::Node(0)],
            TopologyKind::Replicated => vec![Host::Master],
            TopologyKind::Independent => topology.nodes(),
        }
    }

    fn aliases(&self, topology: &Topology) -> Vec<(Host, Host)> {
        match topology.kind {
            TopologyKind::Replicated => vec![(Host::Master, Host::Node(0))],
            TopologyKind::Standalone | TopologyKind::Independent => Vec::new(),
        }
    }

    fn start_sim(
        &self,
        sim: &mut turmoil::Sim<'static>,
        topology: &Topology,
        ground_truth: GroundTruth,
    ) -> Box<dyn SimDeployment> {
        let mut handles = BTreeMap::new();
        for (i, host) in self.node_hosts(topology).into_iter().enumerate() {
            let name = host.to_string();
            let mut config = NodeConfig::new(&name)
                .persistence(node_persistence(topology.persistence))
                .clock(node_clock());
            if topology.kind == TopologyKind::Replicated && i > 0 {
                config = config
                    .replica_of(Host::Node(0).to_string())
                    .replication_delay(Duration::from_millis(topology.replication_delay_ms));
            }
            let handle = NodeHandle::new(config);
            let feed = ground_truth.clone();
            handle.set_sink(Arc::new(move |event: &NodeEvent| {
                record_ground_truth(&feed, event);
            }));
            let host_handle = handle.clone();
            sim.host(name.as_str(), move || simredis::serve(host_handle.clone()));
            handles.insert(host, handle);
        }
        Box::new(RedisNodes { handles })
    }
}

/// Every simulated node's clock: it starts at the simulation's epoch.
pub(crate) fn node_clock() -> ClockSpec {
    ClockSpec {
        epoch_ms: EPOCH_MS as i64,
        ..ClockSpec::default()
    }
}

/// The running nodes of one run, by host.
struct RedisNodes {
    handles: BTreeMap<Host, NodeHandle>,
}

impl SimDeployment for RedisNodes {
    fn hosts(&self) -> Vec<Host> {
        self.handles.keys().copied().collect()
    }

    fn has(&self, host: Host) -> bool {
        self.handles.contains_key(&host)
    }

    fn move_clock(&self, host: Host, change: ClockChange) {
        if let Some(h) = self.handles.get(&host) {
            match change {
                ClockChange::JumpMs(ms) => h.jump_clock(ms),
                ClockChange::DriftPpm(ppm) => h.set_drift(ppm as f64),
            }
        }
    }

    fn prepare_crash(&self, host: Host, how: CrashKind) {
        if let Some(h) = self.handles.get(&host) {
            h.set_crash_kind(match how {
                CrashKind::ProcessKill => simredis::CrashKind::ProcessKill,
                CrashKind::PowerLoss => simredis::CrashKind::PowerLoss,
            });
        }
    }

    /// `REPLICAOF NO ONE`.
    fn promote(&self, host: Host) {
        if let Some(h) = self.handles.get(&host) {
            h.promote();
        }
    }

    fn aborted_a_script(&self) -> Option<(Host, u64)> {
        self.handles
            .iter()
            .find(|(_, handle)| handle.aborted_scripts() > 0)
            .map(|(host, handle)| (*host, handle.config().script_instruction_limit))
    }
}

/// The simulated node's persistence mode for a scenario's.
fn node_persistence(mode: Persistence) -> simredis::Persistence {
    match mode {
        Persistence::None => simredis::Persistence::None,
        Persistence::AofAlways => simredis::Persistence::AofAlways,
        Persistence::AofEverysec => simredis::Persistence::AofEverysec,
    }
}

/// Describes a stored value for the history.
fn describe(value: &simredis::Value) -> String {
    match value {
        simredis::Value::Str(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        simredis::Value::Hash(fields) => fields
            .iter()
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    String::from_utf8_lossy(k),
                    String::from_utf8_lossy(v)
                )
            })
            .collect::<Vec<_>>()
            .join(","),
    }
}

fn record_ground_truth(feed: &GroundTruth, event: &NodeEvent) {
    let key = String::from_utf8_lossy(&event.key);
    if !feed.watches(&key) {
        return;
    }
    let (what, value) = match &event.kind {
        simredis::EventKind::Written { value, .. } => (KeyChange::Set, Some(describe(value))),
        simredis::EventKind::Expired { .. } => (KeyChange::Expired, None),
        simredis::EventKind::Deleted { .. } => (KeyChange::Deleted, None),
    };
    // Only the deployment's nodes are watched, and they are named by Host.
    let Ok(node) = event.node.to_string().parse::<Host>() else {
        return;
    };
    let at_us = event.at.as_micros() as u64;
    feed.record(at_us, node, what, key.into_owned(), value);
}
