//! etcd as a lock service in the simulator: `simetcd` members on turmoil
//! machines, speaking etcd's gRPC API to the etcd rungs.
//!
//! - `standalone`: one member, its own leader.
//! - `cluster`: three members (or `members`) that run Raft among
//!   themselves over turmoil's network, so a partition or a crash between
//!   them acts on the cluster as it would on etcd's: a write commits on a
//!   majority, a leader cut off steps down, the others elect a new one,
//!   and the new leader gives every lease its TTL and 1 s more. `redis-0`
//!   leads at the start (it stands for election on its first tick); each
//!   client dials member `client mod members` first and the next one when
//!   a dial fails, as clientv3 moves along its endpoints.
//!
//! A member's state lives outside its host, as etcd's does on disk (etcd
//! syncs every write before it answers), so a crash loses nothing it
//! acknowledged. Its leases run on its monotonic clock, so a jump or a
//! drift of its wall clock changes nothing: what Redis's TTLs are exposed
//! to, etcd's leases are not. Every change to a watched key (a lock key
//! under the lock's name) goes into the history once, when the first
//! member applies it, as ground truth; a lease's expiry as `expired`.

use super::{FirstSeen, GroundTruth, LockService, SimDeployment, Software};
use crate::machines::Machines;
use crate::nemesis::ClockChange;
use etcdproto::mvccpb::Event;
use etcdproto::mvccpb::event::EventType;
use model::fault::CrashKind;
use model::history::KeyChange;
use model::host::Host;
use model::scenario::{Topology, TopologyKind};
use simetcd::node::PEER_PORT;
use simetcd::{Identity, Member, Node, Place, Recheck};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// etcd: one member (`standalone`), or members that elect their leader
/// (`cluster`).
#[derive(Debug, Clone, Copy, Default)]
pub struct EtcdService;

impl LockService for EtcdService {
    fn name(&self) -> &'static str {
        "etcd"
    }

    fn kinds(&self) -> &'static [TopologyKind] {
        &[TopologyKind::Standalone, TopologyKind::Cluster]
    }

    fn node_hosts(&self, topology: &Topology) -> Vec<Host> {
        topology.nodes()
    }

    fn lock_targets(&self, topology: &Topology, client: usize) -> Vec<Host> {
        let mut members = topology.nodes();
        let first = client % members.len().max(1);
        members.rotate_left(first);
        members
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
        let size = hosts.len() as u64;
        let raft_id = |i: usize| i as u64 + 1;
        let peers: BTreeMap<u64, (String, u16)> = (hosts.iter().enumerate())
            .map(|(i, &h)| (raft_id(i), (machines.address(h).0, PEER_PORT)))
            .collect();
        let first_seen = Arc::new(Mutex::new(FirstSeen::default()));
        let mut members = BTreeMap::new();
        let mut software: Vec<(Host, Software)> = Vec::new();
        for (i, &host) in hosts.iter().enumerate() {
            let member = Member::new(Identity::of_member(raft_id(i), size));
            let feed = ground_truth.clone();
            let seen = first_seen.clone();
            member.observe(Arc::new(move |event: &Event, expiry: bool| {
                if seen
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .first(host, event.kv.as_ref().map_or(0, |kv| kv.mod_revision))
                {
                    record_ground_truth(&feed, host, event, expiry);
                }
            }));
            let place = Place {
                raft_id: raft_id(i),
                size,
                peers: (peers.iter())
                    .filter(|(id, _)| **id != raft_id(i))
                    .map(|(id, at)| (*id, at.clone()))
                    .collect(),
                seed,
                first_leader: i == 0,
            };
            let node = Node::new(member, place);
            let port = machines.address(host).1;
            let serving = node.clone();
            // The Lock service the etcd rungs call is 3.4's, as Debian's
            // etcd-server serves it.
            software.push((
                host,
                Box::new(move || Box::pin(simetcd::serve_sim(serving.clone(), port, Recheck::No))),
            ));
            members.insert(host, node);
        }
        (Box::new(EtcdMembers { members }), software)
    }
}

/// The running members of one run, by host.
struct EtcdMembers {
    members: BTreeMap<Host, Node>,
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

    /// Asks the leader to hand its leadership to `host` (etcd's
    /// `move-leader`); a member alone is always its own leader.
    fn promote(&self, host: Host) {
        let Some(to) = self.members.get(&host).map(|n| n.place().raft_id) else {
            return;
        };
        for node in self.members.values() {
            if node.is_leader() {
                node.transfer_leader(to);
            }
        }
    }
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
