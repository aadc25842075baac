//! The simulated Redis nodes of a run (from the `simredis` crate) and the
//! store that holds the guarded resource.
//!
//! Each node is a turmoil host running `simredis::serve`; its
//! [`simredis::NodeHandle`] outlives restarts (clock, disk, role) and is
//! how the driver jumps its clock, declares the kind of a crash or promotes
//! it. Every change a node makes to a watched key (the lock, its fencing
//! counter) is written into the history as the server's ground truth.

use crate::client_clock::EPOCH_MS;
use crate::recorder::Recorder;
use model::fault::CrashKind;
use model::history::{EventKind, KeyChange};
use model::host::Host;
use model::scenario::Persistence;
use model::scenario::{Topology, TopologyKind};
use simredis::{ClockSpec, NodeConfig, NodeEvent, NodeHandle};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The nodes of one run, by host.
pub struct Nodes {
    handles: BTreeMap<Host, NodeHandle>,
    store: NodeHandle,
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

impl Nodes {
    /// Registers the deployment's nodes and the store as turmoil hosts.
    pub fn start(
        sim: &mut turmoil::Sim<'static>,
        topology: &Topology,
        recorder: Arc<Recorder>,
        watched: Vec<String>,
    ) -> Nodes {
        let clock = ClockSpec {
            epoch_ms: EPOCH_MS as i64,
            ..ClockSpec::default()
        };
        let mut handles = BTreeMap::new();
        for (i, host) in topology.nodes().into_iter().enumerate() {
            let name = host.to_string();
            let mut config = NodeConfig::new(&name)
                .persistence(node_persistence(topology.persistence))
                .clock(clock);
            if topology.kind == TopologyKind::Replicated && i > 0 {
                config = config
                    .replica_of(Host::Node(0).to_string())
                    .replication_delay(Duration::from_millis(topology.replication_delay_ms));
            }
            let handle = NodeHandle::new(config);
            let sink_recorder = recorder.clone();
            let watched = watched.clone();
            handle.set_sink(Arc::new(move |event: &NodeEvent| {
                record_ground_truth(&sink_recorder, &watched, event);
            }));
            let host_handle = handle.clone();
            sim.host(name.as_str(), move || simredis::serve(host_handle.clone()));
            handles.insert(host, handle);
        }
        let store_name = Host::Store.to_string();
        let store = NodeHandle::new(NodeConfig::new(&store_name).clock(clock));
        let store_handle = store.clone();
        sim.host(store_name, move || simredis::serve(store.clone()));
        Nodes {
            handles,
            store: store_handle,
        }
    }

    /// The first node (in host order, the store last) that has aborted a
    /// script for running past its instruction limit, with that limit.
    pub fn aborted_a_script(&self) -> Option<(Host, u64)> {
        self.handles
            .iter()
            .map(|(host, handle)| (*host, handle))
            .chain(std::iter::once((Host::Store, &self.store)))
            .find(|(_, handle)| handle.aborted_scripts() > 0)
            .map(|(host, handle)| (host, handle.config().script_instruction_limit))
    }

    /// Whether the deployment has that node.
    pub fn has(&self, host: Host) -> bool {
        self.handles.contains_key(&host)
    }

    /// The nodes, in order.
    pub fn hosts(&self) -> Vec<Host> {
        self.handles.keys().copied().collect()
    }

    /// Jumps a node's wall clock.
    pub fn jump_clock(&self, host: Host, jump_ms: i64) {
        if let Some(h) = self.handles.get(&host) {
            h.jump_clock(jump_ms);
        }
    }

    /// Sets a node's drift.
    pub fn set_drift(&self, host: Host, ppm: i64) {
        if let Some(h) = self.handles.get(&host) {
            h.set_drift(ppm as f64);
        }
    }

    /// Tells a node how it is about to die, before its host is crashed.
    pub fn prepare_crash(&self, host: Host, how: CrashKind) {
        if let Some(h) = self.handles.get(&host) {
            h.set_crash_kind(match how {
                CrashKind::ProcessKill => simredis::CrashKind::ProcessKill,
                CrashKind::PowerLoss => simredis::CrashKind::PowerLoss,
            });
        }
    }

    /// Promotes a replica to master (REPLICAOF NO ONE).
    pub fn promote(&self, host: Host) {
        if let Some(h) = self.handles.get(&host) {
            h.promote();
        }
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

fn record_ground_truth(recorder: &Recorder, watched: &[String], event: &NodeEvent) {
    let key = String::from_utf8_lossy(&event.key);
    if !watched.iter().any(|w| key.starts_with(w.as_str())) {
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
    recorder.record_at(
        event.at.as_micros() as u64,
        EventKind::Server {
            node,
            what,
            key: key.into_owned(),
            value,
        },
    );
}
