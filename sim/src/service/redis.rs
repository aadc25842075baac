//! Redis as a lock service in the simulator: `simredis` nodes on turmoil
//! machines.
//!
//! Each node runs `simredis::serve` on its machine; its
//! [`simredis::NodeHandle`] outlives restarts (clock, disk, role) and is
//! how the driver jumps its clock, declares the kind of a crash or
//! promotes it. The deployments: one node (`standalone`), a master with
//! replicas that clients reach as `master` (`replicated`, failover
//! re-points the name), or independent masters that a Redlock-style rung
//! dials all at once (`independent`). Every change a node makes to a
//! watched key (the lock, its fencing counter) goes into the history as
//! the server's ground truth.

use super::{GroundTruth, LockService, SimDeployment, Software};
use crate::client_clock::EPOCH_MS;
use crate::machines::Machines;
use crate::nemesis::ClockChange;
use locks::redis_server::RedisServer;
use model::fault::CrashKind;
use model::history::KeyChange;
use model::host::Host;
use model::scenario::{Persistence, Topology, TopologyKind};
use simredis::{ClockSpec, MasterAddr, NodeConfig, NodeEvent, NodeHandle, ServerVersion};
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

    fn lock_targets(&self, topology: &Topology, _client: usize) -> Vec<Host> {
        match topology.kind {
            TopologyKind::Standalone => vec![Host::Node(0)],
            TopologyKind::Replicated => vec![Host::Master],
            // Not a Redis deployment (`kinds` refuses it before a run).
            TopologyKind::Independent | TopologyKind::Cluster => topology.nodes(),
        }
    }

    fn aliases(&self, topology: &Topology) -> Vec<(Host, Host)> {
        match topology.kind {
            TopologyKind::Replicated => vec![(Host::Master, Host::Node(0))],
            TopologyKind::Standalone | TopologyKind::Independent | TopologyKind::Cluster => {
                Vec::new()
            }
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
        let mut handles = BTreeMap::new();
        let mut software: Vec<(Host, Software)> = Vec::new();
        for (i, host) in self.node_hosts(topology).into_iter().enumerate() {
            let mut config = NodeConfig::new(host.to_string())
                .persistence(node_persistence(topology.persistence))
                .clock(node_clock())
                .version(node_version(topology.server.unwrap_or_default()));
            config.port = machines.address(host).1;
            if topology.kind == TopologyKind::Replicated && i > 0 {
                let (machine, port) = machines.address(Host::Node(0));
                config = config
                    .replica_of(MasterAddr::new(machine, port))
                    .replication_delay(Duration::from_millis(topology.replication_delay_ms));
            }
            let handle = NodeHandle::new(config);
            let feed = ground_truth.clone();
            handle.set_sink(Arc::new(move |event: &NodeEvent| {
                record_ground_truth(&feed, event);
            }));
            software.push((host, serving(handle.clone())));
            handles.insert(host, handle);
        }
        (Box::new(RedisNodes { handles }), software)
    }
}

/// The software of a simulated Redis node: `simredis::serve`, which
/// binds the port of its config.
pub(crate) fn serving(handle: NodeHandle) -> Software {
    Box::new(move || Box::pin(simredis::serve(handle.clone())))
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

/// The simulated node's version for the scenario's server (of the same
/// name: a test holds the two lists together).
pub(crate) fn node_version(server: RedisServer) -> ServerVersion {
    match server {
        RedisServer::Redis7_0 => ServerVersion::Redis7_0,
        RedisServer::Redis8_4 => ServerVersion::Redis8_4,
        RedisServer::Valkey8_1 => ServerVersion::Valkey8_1,
        RedisServer::Valkey9_0 => ServerVersion::Valkey9_0,
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
        simredis::Value::List(items) => items
            .iter()
            .map(|i| String::from_utf8_lossy(i).into_owned())
            .collect::<Vec<_>>()
            .join(","),
        simredis::Value::Set(members) => members
            .iter()
            .map(|m| String::from_utf8_lossy(m).into_owned())
            .collect::<Vec<_>>()
            .join(","),
        simredis::Value::ZSet(zset) => zset
            .iter()
            .map(|(m, s)| format!("{}={s}", String::from_utf8_lossy(m)))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scenario_server_is_the_node_version_of_the_same_name() {
        for server in RedisServer::ALL {
            assert_eq!(node_version(server).name(), server.name());
        }
        assert_eq!(RedisServer::ALL.len(), ServerVersion::ALL.len());
    }
}
