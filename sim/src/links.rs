//! The link faults in force, counted, so that overlapping faults on one
//! link end one at a time.
//!
//! turmoil keeps one state per direction of a link (healthy, held or
//! partitioned) and its calls overwrite it: healing one partition heals a
//! second one on the same link, releasing a delay heals a partition, and a
//! restart's repair of a node's links heals both. [`Links`] counts the cuts
//! (partitions, one-way or two-way, and a power loss's silence) and holds
//! (delays) of every link and, when one fault ends, puts back whatever
//! else is still in force.

use model::host::Host;
use std::collections::BTreeMap;

/// Cuts and holds in force, by link.
#[derive(Debug, Default)]
pub struct Links {
    /// Partitions in force per direction (from, to).
    cuts: BTreeMap<(Host, Host), u32>,
    /// Delays in force per link (the smaller host first).
    holds: BTreeMap<(Host, Host), u32>,
}

/// A turmoil call that sets a link's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkCall {
    /// Partition both directions.
    Partition(Host, Host),
    /// Partition the messages from the first to the second.
    PartitionOneway(Host, Host),
    /// Repair both directions.
    Repair(Host, Host),
    /// Repair the messages from the first to the second.
    RepairOneway(Host, Host),
    /// Hold both directions.
    Hold(Host, Host),
    /// Deliver what is held, and heal both directions.
    Release(Host, Host),
}

fn link(x: Host, y: Host) -> (Host, Host) {
    if x <= y { (x, y) } else { (y, x) }
}

fn up(map: &mut BTreeMap<(Host, Host), u32>, key: (Host, Host)) {
    *map.entry(key).or_insert(0) += 1;
}

fn down(map: &mut BTreeMap<(Host, Host), u32>, key: (Host, Host)) {
    if let Some(n) = map.get_mut(&key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            map.remove(&key);
        }
    }
}

impl Links {
    /// No fault in force.
    pub fn new() -> Self {
        Links::default()
    }

    fn cut(&self, from: Host, to: Host) -> bool {
        self.cuts.contains_key(&(from, to))
    }

    fn held(&self, x: Host, y: Host) -> bool {
        self.holds.contains_key(&link(x, y))
    }

    /// A partition begins; the calls that make it.
    pub fn partition(&mut self, x: Host, y: Host, oneway: bool) -> Vec<LinkCall> {
        up(&mut self.cuts, (x, y));
        if oneway {
            return vec![LinkCall::PartitionOneway(x, y)];
        }
        up(&mut self.cuts, (y, x));
        vec![LinkCall::Partition(x, y)]
    }

    /// A partition ends; the calls that heal what nothing else cuts.
    pub fn heal(&mut self, x: Host, y: Host, oneway: bool) -> Vec<LinkCall> {
        down(&mut self.cuts, (x, y));
        if oneway {
            if self.cut(x, y) {
                return Vec::new();
            }
            return self.then_restore(LinkCall::RepairOneway(x, y), x, y);
        }
        down(&mut self.cuts, (y, x));
        match (self.cut(x, y), self.cut(y, x)) {
            (false, false) => self.then_restore(LinkCall::Repair(x, y), x, y),
            (true, false) => self.then_restore(LinkCall::RepairOneway(y, x), x, y),
            (false, true) => self.then_restore(LinkCall::RepairOneway(x, y), x, y),
            (true, true) => Vec::new(),
        }
    }

    /// A delay begins.
    pub fn hold(&mut self, x: Host, y: Host) -> Vec<LinkCall> {
        up(&mut self.holds, link(x, y));
        self.then_restore(LinkCall::Hold(x, y), x, y)
    }

    /// A delay ends: held messages move on, unless another delay still
    /// holds the link.
    pub fn release(&mut self, x: Host, y: Host) -> Vec<LinkCall> {
        down(&mut self.holds, link(x, y));
        if self.held(x, y) {
            return Vec::new();
        }
        self.then_restore(LinkCall::Release(x, y), x, y)
    }

    /// A restarted node's links are repaired (its power-loss silence is
    /// over); what other faults still cut or hold is put back.
    pub fn repair_all(&mut self, x: Host, y: Host) -> Vec<LinkCall> {
        self.then_restore(LinkCall::Repair(x, y), x, y)
    }

    /// `call`, then what is still in force on the link of `x` and `y` that
    /// the call overwrote.
    fn then_restore(&self, call: LinkCall, x: Host, y: Host) -> Vec<LinkCall> {
        let mut calls = vec![call];
        let resets_hold = !matches!(call, LinkCall::Hold(..));
        if resets_hold && self.held(x, y) {
            calls.push(LinkCall::Hold(x, y));
        }
        for (from, to) in [(x, y), (y, x)] {
            if self.cut(from, to) {
                calls.push(LinkCall::PartitionOneway(from, to));
            }
        }
        calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: Host = Host::Client(0);
    const N: Host = Host::Node(0);

    #[test]
    fn the_inner_of_two_overlapping_partitions_heals_nothing() {
        let mut links = Links::new();
        assert_eq!(links.partition(C, N, false), [LinkCall::Partition(C, N)]);
        assert_eq!(links.partition(C, N, false), [LinkCall::Partition(C, N)]);
        assert!(links.heal(C, N, false).is_empty());
        assert_eq!(links.heal(C, N, false), [LinkCall::Repair(C, N)]);
    }

    #[test]
    fn releasing_a_delay_puts_back_a_partition_still_in_force() {
        let mut links = Links::new();
        links.partition(C, N, true);
        links.hold(C, N);
        assert_eq!(
            links.release(C, N),
            [LinkCall::Release(C, N), LinkCall::PartitionOneway(C, N)]
        );
    }

    #[test]
    fn a_lone_fault_makes_the_same_single_call_as_before() {
        let mut links = Links::new();
        assert_eq!(links.hold(C, N), [LinkCall::Hold(C, N)]);
        assert_eq!(links.release(C, N), [LinkCall::Release(C, N)]);
        assert_eq!(
            links.partition(N, C, true),
            [LinkCall::PartitionOneway(N, C)]
        );
        assert_eq!(links.heal(N, C, true), [LinkCall::RepairOneway(N, C)]);
        assert_eq!(links.repair_all(C, N), [LinkCall::Repair(C, N)]);
    }
}
