//! Linearizable reads on the leader (etcd's "safe" ReadIndex).
//!
//! A leader may serve a read at its commit index only once it knows it is
//! still the leader: a quorum must answer a heartbeat sent after the read
//! arrived. Each read waits here, keyed by its context, which the leader
//! puts on its heartbeats and the followers echo back.

use std::collections::BTreeSet;

/// Who asked for a read, and the id (context) they will recognise it by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReadRequest {
    /// The member whose client asked: the leader itself, or a follower
    /// that forwarded it.
    pub(crate) from: u64,
    pub(crate) context: Vec<u8>,
}

/// One read the leader is confirming its leadership for.
#[derive(Clone, Debug)]
struct PendingRead {
    request: ReadRequest,
    /// The commit index when the read arrived: serving it once this much
    /// is applied sees every write acknowledged before the read began.
    index: u64,
    /// Members that answered a heartbeat carrying this read's context.
    acks: BTreeSet<u64>,
}

/// The reads awaiting a quorum's heartbeat answers, oldest first.
#[derive(Clone, Debug, Default)]
pub(crate) struct PendingReads {
    queue: Vec<PendingRead>,
}

impl PendingReads {
    /// Queues a read at `index`, acknowledged by the leader itself.
    /// Returns false (and changes nothing) when a read with the same
    /// context is already waiting: a retried request joins it.
    pub(crate) fn add(&mut self, request: ReadRequest, index: u64, leader: u64) -> bool {
        if self.position(&request.context).is_some() {
            return false;
        }
        self.queue.push(PendingRead {
            request,
            index,
            acks: BTreeSet::from([leader]),
        });
        true
    }

    /// Records `from`'s answer to a heartbeat carrying `context`, and
    /// returns how many members have now answered (`None` if no such
    /// read waits: a stale or duplicated answer).
    pub(crate) fn acknowledge(&mut self, context: &[u8], from: u64) -> Option<usize> {
        let position = self.position(context)?;
        let pending = &mut self.queue[position];
        pending.acks.insert(from);
        Some(pending.acks.len())
    }

    /// Removes and returns the read with `context` and every read queued
    /// before it: a quorum's answer to a later heartbeat confirms the
    /// leadership for the earlier reads as well.
    pub(crate) fn release_through(&mut self, context: &[u8]) -> Vec<(ReadRequest, u64)> {
        let Some(position) = self.position(context) else {
            return Vec::new();
        };
        self.queue
            .drain(..=position)
            .map(|pending| (pending.request, pending.index))
            .collect()
    }

    /// The newest waiting read's context, which every heartbeat carries so
    /// that a lost heartbeat or answer does not strand the reads.
    pub(crate) fn last_context(&self) -> Option<&[u8]> {
        self.queue
            .last()
            .map(|pending| pending.request.context.as_slice())
    }

    fn position(&self, context: &[u8]) -> Option<usize> {
        self.queue
            .iter()
            .position(|pending| pending.request.context == context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(context: &[u8]) -> ReadRequest {
        ReadRequest {
            from: 1,
            context: context.to_vec(),
        }
    }

    #[test]
    fn a_later_reads_quorum_releases_the_earlier_reads_too() {
        let mut reads = PendingReads::default();
        assert!(reads.add(request(b"a"), 3, 1));
        assert!(reads.add(request(b"b"), 4, 1));
        assert_eq!(reads.acknowledge(b"b", 2), Some(2));
        let released = reads.release_through(b"b");
        assert_eq!(released, vec![(request(b"a"), 3), (request(b"b"), 4)]);
        assert_eq!(reads.last_context(), None);
    }

    #[test]
    fn a_retried_read_joins_the_waiting_one() {
        let mut reads = PendingReads::default();
        assert!(reads.add(request(b"a"), 3, 1));
        assert!(!reads.add(request(b"a"), 5, 1));
        assert_eq!(reads.release_through(b"a"), vec![(request(b"a"), 3)]);
    }

    #[test]
    fn an_answer_for_no_waiting_read_counts_for_nothing() {
        let mut reads = PendingReads::default();
        assert_eq!(reads.acknowledge(b"gone", 2), None);
        assert!(reads.release_through(b"gone").is_empty());
    }

    #[test]
    fn a_duplicated_answer_counts_once() {
        let mut reads = PendingReads::default();
        reads.add(request(b"a"), 3, 1);
        assert_eq!(reads.acknowledge(b"a", 2), Some(2));
        assert_eq!(reads.acknowledge(b"a", 2), Some(2));
    }
}
