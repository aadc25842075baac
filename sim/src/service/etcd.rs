//! etcd as a lock service in the simulator: one `simetcd` member on a
//! turmoil machine, speaking etcd's gRPC API to the etcd rungs.
//!
//! The member's state lives outside its host, as etcd's does on disk
//! (etcd syncs every write before it answers), so a crash loses nothing
//! it acknowledged; a restarted member gives every lease its TTL and 1 s
//! more, as a new leader does. Its leases run on its monotonic clock, so a jump or a
//! drift of its wall clock changes nothing: what Redis's TTLs are exposed
//! to, etcd's leases are not. Every change it makes to a watched key (a
//! lock key under the lock's name) goes into the history as ground truth,
//! a lease's expiry as `expired`.

use super::{GroundTruth, LockService, SimDeployment, Software};
use crate::machines::Machines;
use crate::nemesis::ClockChange;
use etcdproto::mvccpb::Event;
use etcdproto::mvccpb::event::EventType;
use model::fault::CrashKind;
use model::history::KeyChange;
use model::host::Host;
use model::scenario::{Topology, TopologyKind};
use simetcd::{Member, Recheck};
use std::collections::BTreeMap;
use std::sync::Arc;

/// etcd: one member (`standalone`).
#[derive(Debug, Clone, Copy, Default)]
pub struct EtcdService;

impl LockService for EtcdService {
    fn name(&self) -> &'static str {
        "etcd"
    }

    fn kinds(&self) -> &'static [TopologyKind] {
        &[TopologyKind::Standalone]
    }

    fn node_hosts(&self, topology: &Topology) -> Vec<Host> {
        topology.nodes()
    }

    fn lock_targets(&self, _topology: &Topology) -> Vec<Host> {
        vec![Host::Node(0)]
    }

    fn aliases(&self, _topology: &Topology) -> Vec<(Host, Host)> {
        Vec::new()
    }

    fn nodes_talk(&self, _topology: &Topology) -> bool {
        false
    }

    fn start_sim(
        &self,
        topology: &Topology,
        machines: &Machines,
        ground_truth: GroundTruth,
    ) -> (Box<dyn SimDeployment>, Vec<(Host, Software)>) {
        let mut members = BTreeMap::new();
        let mut software: Vec<(Host, Software)> = Vec::new();
        for host in self.node_hosts(topology) {
            let member = Member::default();
            let feed = ground_truth.clone();
            member.observe(Arc::new(move |event: &Event, expiry: bool| {
                record_ground_truth(&feed, host, event, expiry);
            }));
            let port = machines.address(host).1;
            let serving = member.clone();
            // The Lock service the etcd rungs call is 3.4's, as Debian's
            // etcd-server serves it.
            software.push((
                host,
                Box::new(move || Box::pin(simetcd::serve_sim(serving.clone(), port, Recheck::No))),
            ));
            members.insert(host, member);
        }
        (Box::new(EtcdMembers { members }), software)
    }
}

/// The running members of one run, by host.
struct EtcdMembers {
    members: BTreeMap<Host, Member>,
}

impl SimDeployment for EtcdMembers {
    fn hosts(&self) -> Vec<Host> {
        self.members.keys().copied().collect()
    }

    fn has(&self, host: Host) -> bool {
        self.members.contains_key(&host)
    }

    /// Leases run on the member's monotonic clock: its wall clock moving
    /// changes nothing.
    fn move_clock(&self, _host: Host, _change: ClockChange) {}

    /// Every acknowledged write is on disk: a crash of either kind loses
    /// nothing.
    fn prepare_crash(&self, _host: Host, _how: CrashKind) {}

    /// One member is always its own leader.
    fn promote(&self, _host: Host) {}
}

fn record_ground_truth(feed: &GroundTruth, node: Host, event: &Event, expiry: bool) {
    let Some(kv) = &event.kv else {
        return;
    };
    let key = String::from_utf8_lossy(&kv.key).into_owned();
    if !feed.watches(&key) {
        return;
    }
    let (what, value) = if event.r#type == EventType::Put as i32 {
        (
            KeyChange::Set,
            Some(String::from_utf8_lossy(&kv.value).into_owned()),
        )
    } else if expiry {
        (KeyChange::Expired, None)
    } else {
        (KeyChange::Deleted, None)
    };
    let at_us = turmoil::sim_elapsed().unwrap_or_default().as_micros() as u64;
    feed.record(at_us, node, what, key, value);
}
