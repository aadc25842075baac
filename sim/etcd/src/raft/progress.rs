//! What a leader knows about one follower's log.
//!
//! Like etcd's tracker, a follower is either probed (one append at a
//! time, until it answers, while the leader looks for where their logs
//! agree) or replicated to (appends sent back to back, `next` moving on
//! optimistically). etcd's in-flight window is left out: the simulated
//! cluster is small and its messages are small.

/// How the leader is sending to one follower.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendMode {
    /// Where the logs agree is unknown: one append, then wait.
    Probe,
    /// The logs agree up to `matched`: stream entries.
    Replicate,
}

/// The leader's view of one follower.
#[derive(Clone, Debug)]
pub(crate) struct Progress {
    /// The highest index known to be the same on the follower.
    pub(crate) matched: u64,
    /// The next index to send.
    pub(crate) next: u64,
    pub(crate) mode: SendMode,
    /// A probe is out and unanswered: send nothing more until a reply.
    pub(crate) paused: bool,
    /// Heard from since the last quorum check (CheckQuorum).
    pub(crate) recently_active: bool,
}

impl Progress {
    /// A follower just after an election: assumed to have the leader's
    /// whole log, until it says otherwise.
    pub(crate) fn new(leader_last_index: u64) -> Progress {
        Progress {
            matched: 0,
            next: leader_last_index + 1,
            mode: SendMode::Probe,
            paused: false,
            recently_active: false,
        }
    }

    /// Whether sending to it now would be wasted.
    pub(crate) fn is_paused(&self) -> bool {
        self.mode == SendMode::Probe && self.paused
    }

    /// Notes that an append carrying entries up to `last_sent` went out.
    pub(crate) fn sent(&mut self, last_sent: u64) {
        match self.mode {
            SendMode::Probe => self.paused = true,
            SendMode::Replicate => self.next = self.next.max(last_sent + 1),
        }
    }

    /// The follower accepted entries up to `index`. Returns whether that
    /// is news (a duplicate or stale answer is not).
    pub(crate) fn accepted(&mut self, index: u64) -> bool {
        self.paused = false;
        if index <= self.matched {
            return false;
        }
        self.matched = index;
        self.next = self.next.max(index + 1);
        if self.mode == SendMode::Probe {
            self.mode = SendMode::Replicate;
            self.next = index + 1;
        }
        true
    }

    /// The follower has no entry `rejected` of the term sent; its log
    /// ends at `hint`. Returns whether to send again from the new `next`
    /// (a stale refusal changes nothing).
    pub(crate) fn refused(&mut self, rejected: u64, hint: u64) -> bool {
        let stale = match self.mode {
            SendMode::Replicate => rejected <= self.matched,
            SendMode::Probe => rejected != self.next.saturating_sub(1),
        };
        if stale {
            return false;
        }
        self.fall_back_to(rejected.min(hint.saturating_add(1)));
        true
    }

    /// Starts probing again from `next` (never below what is known to
    /// match): after a refusal, or when a lagging follower's heartbeat
    /// answer suggests appends were lost.
    pub(crate) fn fall_back_to(&mut self, next: u64) {
        self.mode = SendMode::Probe;
        self.paused = false;
        self.next = next.max(self.matched + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_pauses_until_the_follower_answers() {
        let mut progress = Progress::new(5);
        progress.sent(6);
        assert!(progress.is_paused());
        assert!(progress.accepted(6));
        assert!(!progress.is_paused());
        assert_eq!(progress.mode, SendMode::Replicate);
        assert_eq!(progress.next, 7);
    }

    #[test]
    fn replication_moves_next_on_before_the_answer() {
        let mut progress = Progress::new(5);
        progress.accepted(5);
        progress.sent(9);
        assert_eq!(progress.next, 10);
        assert!(!progress.accepted(4));
        assert_eq!(progress.matched, 5);
    }

    #[test]
    fn a_refusal_moves_next_back_to_the_hint() {
        let mut progress = Progress::new(10);
        assert!(progress.refused(10, 3));
        assert_eq!(progress.next, 4);
        assert!(!progress.refused(10, 3), "the same refusal again is stale");
        assert_eq!(progress.next, 4);
    }

    #[test]
    fn a_refusal_never_moves_next_to_or_below_the_match() {
        let mut progress = Progress::new(10);
        progress.accepted(6);
        progress.sent(10);
        assert!(progress.refused(9, 2));
        assert_eq!(progress.next, 7);
        assert_eq!(progress.mode, SendMode::Probe);
    }
}
