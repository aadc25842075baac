//! What a server keeps across a crash.

use super::message::{Txn, epoch_of};

/// A server's durable state: ZooKeeper's transaction log and its
/// `acceptedEpoch` and `currentEpoch` files, with how far the log is known
/// committed and applied.
///
/// The core changes it as if each change were fsynced before the next
/// message goes out; the caller keeps it outside a crashing host
/// ([`Zab::durable`](super::Zab::durable)) and hands it back to
/// [`Zab::restart`](super::Zab::restart).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Durable {
    /// Every transaction logged, committed or not, in zxid order.
    pub log: Vec<Txn>,
    /// The highest epoch this server promised a leader
    /// (ZooKeeper's `acceptedEpoch`).
    pub accepted_epoch: u64,
    /// The epoch of the last leader whose history this server took
    /// (ZooKeeper's `currentEpoch`).
    pub current_epoch: u64,
    /// The highest zxid known committed.
    pub committed: u64,
    /// The highest zxid handed out by [`Zab::ready`](super::Zab::ready):
    /// the state machine it was applied to outlives a crash too.
    pub delivered: u64,
    /// How many times this server has set out to join a leader. Numbers
    /// each attempt, as a TCP connection would, so that messages of an
    /// older attempt are known stale even after a restart.
    pub attempts: u64,
}

impl Durable {
    /// The last logged zxid, 0 for an empty log.
    pub fn last_zxid(&self) -> u64 {
        self.log.last().map_or(0, |txn| txn.zxid)
    }

    /// The committed transactions, in order: what a state machine rebuilt
    /// from scratch applies.
    pub fn committed_txns(&self) -> &[Txn] {
        &self.log[..self.count_through(self.committed)]
    }

    /// How many logged transactions have a zxid of at most `zxid`.
    pub(super) fn count_through(&self, zxid: u64) -> usize {
        self.log.partition_point(|txn| txn.zxid <= zxid)
    }

    /// Whether `zxid` is logged (0, the empty history, always is).
    pub(super) fn contains(&self, zxid: u64) -> bool {
        zxid == 0 || self.log.binary_search_by_key(&zxid, |txn| txn.zxid).is_ok()
    }

    /// The transactions after `zxid`.
    pub(super) fn after(&self, zxid: u64) -> &[Txn] {
        &self.log[self.count_through(zxid)..]
    }

    /// The last zxid of each epoch in the log, in order.
    pub(super) fn epoch_ends(&self) -> Vec<u64> {
        let mut ends: Vec<u64> = Vec::new();
        for txn in &self.log {
            match ends.last_mut() {
                Some(end) if epoch_of(*end) == epoch_of(txn.zxid) => *end = txn.zxid,
                _ => ends.push(txn.zxid),
            }
        }
        ends
    }

    /// The last zxid of epoch `epoch` in the log, if any.
    pub(super) fn end_of_epoch(&self, epoch: u64) -> Option<u64> {
        let upto = self.log.partition_point(|txn| epoch_of(txn.zxid) <= epoch);
        self.log[..upto]
            .last()
            .map(|txn| txn.zxid)
            .filter(|&zxid| epoch_of(zxid) == epoch)
    }
}
