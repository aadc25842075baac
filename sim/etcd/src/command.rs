//! What the members replicate, and what they say to each other.
//!
//! Every change to a member's state (a write, a lease's grant or revoke, a
//! compaction) is one entry of the Raft log: an [`InternalRequest`], as
//! etcd's `InternalRaftRequest` carries it, applied by every member in log
//! order. Between members travel [`PeerMessage`]s, one per datagram: Raft's
//! own messages, and the two lease calls a follower forwards to its leader
//! (etcd sends those over its peer HTTP API), because only the leader
//! counts a lease's time.

use crate::raft;
use etcdproto::etcdserverpb::{
    CompactionRequest, LeaseGrantRequest, LeaseRevokeRequest, TxnRequest,
};

/// One entry's request: exactly one of its parts is set.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternalRequest {
    /// The proposer's request ID: the proposing member answers its
    /// caller when it applies the entry. 0: nobody waits for it.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// A write: `Put` and `DeleteRange` travel as one-operation
    /// transactions.
    #[prost(message, optional, tag = "2")]
    pub txn: Option<TxnRequest>,
    /// A compaction.
    #[prost(message, optional, tag = "3")]
    pub compaction: Option<CompactionRequest>,
    /// A lease's grant, with the ID the receiving member chose.
    #[prost(message, optional, tag = "4")]
    pub lease_grant: Option<LeaseGrantRequest>,
    /// A lease's revoke.
    #[prost(message, optional, tag = "5")]
    pub lease_revoke: Option<LeaseRevokeRequest>,
    /// Set when the leader revokes a lease because its time ran out, not
    /// because a client asked: the simulator's ground truth says
    /// `expired`.
    #[prost(bool, tag = "6")]
    pub expired: bool,
}

/// One datagram between members.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PeerMessage {
    /// What it carries.
    #[prost(oneof = "PeerBody", tags = "1, 2, 3")]
    pub body: Option<PeerBody>,
}

/// What a [`PeerMessage`] carries.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum PeerBody {
    /// A Raft message.
    #[prost(message, tag = "1")]
    Raft(raft::Message),
    /// A follower's lease call to its leader.
    #[prost(message, tag = "2")]
    LeaseCall(LeaseCall),
    /// The leader's answer to it.
    #[prost(message, tag = "3")]
    LeaseReply(LeaseReply),
}

/// A lease call a follower forwards to the leader: a keep-alive, or a
/// `LeaseTimeToLive`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseCall {
    /// The caller's call ID, echoed in the reply.
    #[prost(uint64, tag = "1")]
    pub call: u64,
    /// The caller's Raft ID, where the reply goes.
    #[prost(uint64, tag = "2")]
    pub from: u64,
    /// The lease.
    #[prost(int64, tag = "3")]
    pub lease: i64,
    /// A `LeaseTimeToLive` rather than a keep-alive.
    #[prost(bool, tag = "4")]
    pub time_to_live: bool,
    /// For `LeaseTimeToLive`: list the lease's keys.
    #[prost(bool, tag = "5")]
    pub keys: bool,
}

/// The leader's answer to a [`LeaseCall`].
#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseReply {
    /// The call it answers.
    #[prost(uint64, tag = "1")]
    pub call: u64,
    /// The TTL left (keep-alive: the granted TTL after the renewal, 0 if
    /// the lease is gone; time-to-live: seconds left, -1 if gone).
    #[prost(int64, tag = "2")]
    pub ttl: i64,
    /// The TTL the lease was granted.
    #[prost(int64, tag = "3")]
    pub granted_ttl: i64,
    /// The lease's keys, when asked.
    #[prost(bytes = "vec", repeated, tag = "4")]
    pub keys: Vec<Vec<u8>>,
}
