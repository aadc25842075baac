//! The run's proxy links by host pair, and how the simulator's link calls
//! ([`sim::links::LinkCall`], counted by [`sim::links::Links`] so that
//! overlapping faults end one at a time) become settings of those links.
//!
//! A link is named by the host that dials and the host it reaches: a
//! client and a node (or the store), a replica and the node it
//! replicates from, or two members of an ensemble. A pair may have more
//! than one link (a ZooKeeper member dials a peer's quorum port and its
//! election port): a fault between them acts on every one. A call between two hosts that have no link (two
//! clients, two independent masters) changes nothing: no traffic flows
//! between them.

use crate::proxy::{Link, Way};
use model::host::Host;
use sim::links::LinkCall;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// Every link of a run.
#[derive(Debug, Default)]
pub struct LinkTable {
    links: BTreeMap<(Host, Host), Vec<Link>>,
}

impl LinkTable {
    /// No link yet.
    pub fn new() -> Self {
        LinkTable::default()
    }

    /// Adds a link from `dialer` to `target` (beside any it has).
    pub fn insert(&mut self, dialer: Host, target: Host, link: Link) {
        self.links.entry((dialer, target)).or_default().push(link);
    }

    /// The address `dialer` connects to in order to reach `target` (its
    /// first link's).
    pub fn addr(&self, dialer: Host, target: Host) -> Option<SocketAddr> {
        (self.links.get(&(dialer, target)))
            .and_then(|links| links.first())
            .map(Link::addr)
    }

    /// The links that carry messages from `from` to `to`, each with the
    /// direction that does: the ones `from` dials forward, the ones `to`
    /// dials back.
    fn carrying(&self, from: Host, to: Host) -> Vec<(&Link, Way)> {
        let forward =
            (self.links.get(&(from, to)).into_iter().flatten()).map(|l| (l, Way::Forward));
        let back = (self.links.get(&(to, from)).into_iter().flatten()).map(|l| (l, Way::Back));
        forward.chain(back).collect()
    }

    /// Both directions between two hosts, on every link they have.
    fn both(&self, x: Host, y: Host) -> Vec<(&Link, Way)> {
        let mut both = self.carrying(x, y);
        both.extend(self.carrying(y, x));
        both
    }

    /// Cuts or heals the messages from `from` to `to`.
    pub fn set_cut(&self, from: Host, to: Host, cut: bool) {
        for (link, way) in self.carrying(from, to) {
            link.set_cut(way, cut);
        }
    }

    /// Holds, or lets go, the messages from `from` to `to`.
    pub fn set_held(&self, from: Host, to: Host, held: bool) {
        for (link, way) in self.carrying(from, to) {
            link.set_held(way, held);
        }
    }

    /// Sets the latency of both directions between two hosts.
    pub fn set_latency(&self, x: Host, y: Host, latency: Duration) {
        for (link, way) in self.both(x, y) {
            link.set_latency(way, latency);
        }
    }

    /// Sets the latency of the messages from `from` to `to` only.
    pub fn set_latency_from(&self, from: Host, to: Host, latency: Duration) {
        for (link, way) in self.carrying(from, to) {
            link.set_latency(way, latency);
        }
    }

    /// Makes the simulator's link calls on the proxy.
    pub fn make(&self, calls: &[LinkCall]) {
        for &call in calls {
            match call {
                LinkCall::Partition(x, y) => {
                    self.set_cut(x, y, true);
                    self.set_cut(y, x, true);
                }
                LinkCall::PartitionOneway(x, y) => self.set_cut(x, y, true),
                LinkCall::Repair(x, y) => {
                    self.set_cut(x, y, false);
                    self.set_cut(y, x, false);
                }
                LinkCall::RepairOneway(x, y) => self.set_cut(x, y, false),
                LinkCall::Hold(x, y) => {
                    self.set_held(x, y, true);
                    self.set_held(y, x, true);
                }
                // As in turmoil: what was held moves on and both
                // directions heal (the counted faults still in force are
                // put back by the calls that follow).
                LinkCall::Release(x, y) => {
                    for (from, to) in [(x, y), (y, x)] {
                        self.set_held(from, to, false);
                        self.set_cut(from, to, false);
                    }
                }
            }
        }
    }
}
