//! What servers say to each other: the election's votes, the leader's
//! handshake with each follower, and the broadcast.
//!
//! The names follow ZooKeeper's quorum packets (`FOLLOWERINFO`,
//! `LEADERINFO`, `ACKEPOCH`, `NEWLEADER`, `UPTODATE`, `PROPOSAL`, `ACK`,
//! `COMMIT`, `PING`, `SYNC`), so a reader of `Leader.java` and
//! `Learner.java` finds them here. Every message a follower and its leader
//! exchange carries the follower's `attempt` (see [`Durable::attempts`]):
//! messages of another attempt are stale and ignored.
//!
//! [`Durable::attempts`]: super::Durable::attempts

/// `(epoch << 32) | counter`.
pub fn make_zxid(epoch: u64, counter: u64) -> u64 {
    (epoch << 32) | (counter & 0xffff_ffff)
}

/// The epoch of the leader that proposed `zxid`.
pub fn epoch_of(zxid: u64) -> u64 {
    zxid >> 32
}

/// The place of `zxid` in its epoch, from 1.
pub fn counter_of(zxid: u64) -> u64 {
    zxid & 0xffff_ffff
}

/// One transaction: its zxid and the bytes the state machine applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Txn {
    /// Where it stands in the history.
    pub zxid: u64,
    /// Opaque to ZAB.
    pub data: Vec<u8>,
}

/// What a server says it is doing, in its election notifications.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerState {
    /// Electing.
    Looking,
    /// Following the leader its vote names.
    Following,
    /// Leading.
    Leading,
}

/// A vote: the server proposed as leader, with the history that makes it
/// a good choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vote {
    /// The proposed leader's id.
    pub leader: u64,
    /// Its last logged zxid.
    pub zxid: u64,
    /// Its current epoch (ZooKeeper's `peerEpoch`).
    pub peer_epoch: u64,
}

impl Vote {
    /// ZooKeeper's `totalOrderPredicate`: whether `self` beats `other`
    /// (higher epoch, then higher zxid, then higher id).
    pub fn beats(&self, other: &Vote) -> bool {
        (self.peer_epoch, self.zxid, self.leader) > (other.peer_epoch, other.zxid, other.leader)
    }
}

/// An election notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Notification {
    /// The sender's vote: its proposal while Looking, the leader it
    /// settled on otherwise.
    pub vote: Vote,
    /// The sender's election round (ZooKeeper's `logicalclock`).
    pub election_epoch: u64,
    /// What the sender is doing.
    pub state: PeerState,
}

/// How a leader brings a follower to its history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    /// Append the transactions after the follower's last one.
    Diff,
    /// Drop what the follower logged after `trunc_to`, then append.
    Trunc,
    /// Replace the follower's whole log.
    Snap,
}

/// One message between servers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Election: a vote.
    Notification(Notification),
    /// Follower to leader: join me to you (`FOLLOWERINFO`).
    FollowerInfo {
        /// The follower's attempt.
        attempt: u64,
        /// Its accepted epoch, from which the leader picks the new one.
        accepted_epoch: u64,
        /// Its last logged zxid.
        last_zxid: u64,
    },
    /// Leader to follower: my new epoch (`LEADERINFO`).
    LeaderInfo {
        /// The follower's attempt.
        attempt: u64,
        /// The epoch the leader proposes.
        epoch: u64,
    },
    /// Follower to leader: epoch accepted (`ACKEPOCH`), and my history.
    AckEpoch {
        /// The follower's attempt.
        attempt: u64,
        /// The epoch accepted.
        epoch: u64,
        /// The follower's current epoch; `None` when it had accepted this
        /// epoch before this attempt (ZooKeeper's -1), which does not count
        /// towards the leader's quorum.
        current_epoch: Option<u64>,
        /// Its last logged zxid.
        last_zxid: u64,
        /// The last zxid of each epoch in its log, in order.
        epoch_ends: Vec<u64>,
    },
    /// Leader to follower: take my history (DIFF, TRUNC or SNAP, then
    /// `NEWLEADER`).
    Sync {
        /// The follower's attempt.
        attempt: u64,
        /// The leader's epoch.
        epoch: u64,
        /// How to apply `txns`.
        mode: SyncMode,
        /// With [`SyncMode::Trunc`], the last zxid to keep.
        trunc_to: u64,
        /// The transactions to append, in zxid order.
        txns: Vec<Txn>,
        /// How far the follower may commit once they are logged.
        commit: u64,
    },
    /// Follower to leader: history taken (`ACK` of `NEWLEADER`).
    AckNewLeader {
        /// The follower's attempt.
        attempt: u64,
        /// The leader's epoch.
        epoch: u64,
        /// The follower's last logged zxid, once the history is taken.
        last_zxid: u64,
    },
    /// Leader to follower: serve (`UPTODATE`), committed up to `commit`.
    UpToDate {
        /// The follower's attempt.
        attempt: u64,
        /// The leader's epoch.
        epoch: u64,
        /// The leader's commit.
        commit: u64,
    },
    /// Leader to follower: log this proposal (`PROPOSAL`).
    Propose {
        /// The follower's attempt.
        attempt: u64,
        /// The leader's epoch.
        epoch: u64,
        /// The zxid it follows in the leader's log.
        prev: u64,
        /// The proposal.
        txn: Txn,
        /// The leader's commit.
        commit: u64,
    },
    /// Follower to leader: logged up to `last_zxid` (`ACK`; also the answer
    /// to a ping).
    Ack {
        /// The follower's attempt.
        attempt: u64,
        /// The leader's epoch.
        epoch: u64,
        /// The follower's last logged zxid.
        last_zxid: u64,
    },
    /// Leader to follower: committed up to `zxid` (`COMMIT`).
    Commit {
        /// The follower's attempt.
        attempt: u64,
        /// The leader's epoch.
        epoch: u64,
        /// The leader's commit.
        zxid: u64,
    },
    /// Leader to follower: I am here (`PING`).
    Ping {
        /// The follower's attempt.
        attempt: u64,
        /// The leader's epoch.
        epoch: u64,
        /// The leader's commit.
        commit: u64,
    },
    /// Follower to leader: a client asked for `sync` (`REQUEST` of a sync).
    SyncRequest {
        /// The follower's attempt.
        attempt: u64,
        /// The leader's epoch.
        epoch: u64,
        /// The follower's id for the request.
        id: u64,
    },
    /// Leader to follower: the sync is done once you applied `zxid`
    /// (`SYNC`).
    SyncReply {
        /// The follower's attempt.
        attempt: u64,
        /// The leader's epoch.
        epoch: u64,
        /// The request's id.
        id: u64,
        /// The leader's last proposal when the request reached it.
        zxid: u64,
    },
}

impl Message {
    /// The follower attempt a follower-leader message belongs to; `None`
    /// for a notification.
    pub fn attempt(&self) -> Option<u64> {
        match *self {
            Message::Notification(_) => None,
            Message::FollowerInfo { attempt, .. }
            | Message::LeaderInfo { attempt, .. }
            | Message::AckEpoch { attempt, .. }
            | Message::Sync { attempt, .. }
            | Message::AckNewLeader { attempt, .. }
            | Message::UpToDate { attempt, .. }
            | Message::Propose { attempt, .. }
            | Message::Ack { attempt, .. }
            | Message::Commit { attempt, .. }
            | Message::Ping { attempt, .. }
            | Message::SyncRequest { attempt, .. }
            | Message::SyncReply { attempt, .. } => Some(attempt),
        }
    }

    /// The leader epoch a message of an established link belongs to;
    /// `None` for a notification and the two messages sent before the
    /// follower knows the epoch.
    pub fn epoch(&self) -> Option<u64> {
        match *self {
            Message::Notification(_)
            | Message::FollowerInfo { .. }
            | Message::LeaderInfo { .. } => None,
            Message::AckEpoch { epoch, .. }
            | Message::Sync { epoch, .. }
            | Message::AckNewLeader { epoch, .. }
            | Message::UpToDate { epoch, .. }
            | Message::Propose { epoch, .. }
            | Message::Ack { epoch, .. }
            | Message::Commit { epoch, .. }
            | Message::Ping { epoch, .. }
            | Message::SyncRequest { epoch, .. }
            | Message::SyncReply { epoch, .. } => Some(epoch),
        }
    }
}
