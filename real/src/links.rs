//! The run's proxy links by host pair, and how the simulator's link calls
//! ([`sim::links::LinkCall`], counted by [`sim::links::Links`] so that
//! overlapping faults end one at a time) become settings of those links.
//!
//! A link is named by the host that dials and the host it reaches: a
//! client and a node (or the store), or a replica and the node it
//! replicates from. A call between two hosts that have no link (two
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
    links: BTreeMap<(Host, Host), Link>,
}

impl LinkTable {
    /// No link yet.
    pub fn new() -> Self {
        LinkTable::default()
    }

    /// Adds the link from `dialer` to `target`.
    pub fn insert(&mut self, dialer: Host, target: Host, link: Link) {
        self.links.insert((dialer, target), link);
    }

    /// The address `dialer` connects to in order to reach `target`.
    pub fn addr(&self, dialer: Host, target: Host) -> Option<SocketAddr> {
        self.links.get(&(dialer, target)).map(Link::addr)
    }

    /// The link that carries messages from `from` to `to`, and in which
    /// direction.
    fn carrying(&self, from: Host, to: Host) -> Option<(&Link, Way)> {
        if let Some(link) = self.links.get(&(from, to)) {
            return Some((link, Way::Forward));
        }
        self.links.get(&(to, from)).map(|link| (link, Way::Back))
    }

    /// Both directions between two hosts, if they have a link.
    fn both(&self, x: Host, y: Host) -> Vec<(&Link, Way)> {
        [self.carrying(x, y), self.carrying(y, x)]
            .into_iter()
            .flatten()
            .collect()
    }

    /// Cuts or heals the messages from `from` to `to`.
    pub fn set_cut(&self, from: Host, to: Host, cut: bool) {
        if let Some((link, way)) = self.carrying(from, to) {
            link.set_cut(way, cut);
        }
    }

    /// Holds, or lets go, the messages from `from` to `to`.
    pub fn set_held(&self, from: Host, to: Host, held: bool) {
        if let Some((link, way)) = self.carrying(from, to) {
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
        if let Some((link, way)) = self.carrying(from, to) {
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
