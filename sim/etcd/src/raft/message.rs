//! What members say to each other, and what each keeps durable.
//!
//! The field names and meanings follow etcd's `raftpb`, so a reader who
//! knows etcd's raft reads these messages unchanged. They derive
//! `prost::Message`: the driver sends each one as a datagram with
//! `encode_to_vec` and reads it back with `decode`.

/// One log entry: a client's proposal, or a new leader's empty entry.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Entry {
    /// The term of the leader that appended it.
    #[prost(uint64, tag = "1")]
    pub term: u64,
    /// Its position in the log, from 1.
    #[prost(uint64, tag = "2")]
    pub index: u64,
    /// The proposal, opaque to raft; empty for a new leader's entry.
    #[prost(bytes = "vec", tag = "3")]
    pub data: Vec<u8>,
}

/// The kinds of message, numbered for the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum MessageType {
    /// Leader to follower: entries after (`index`, `log_term`), and the
    /// leader's commit.
    App = 0,
    /// Follower to leader: accepted up to `index`, or (`reject`) has no
    /// entry `index` of term `log_term`; `reject_hint` is its last index.
    AppResp = 1,
    /// Candidate to voter: vote for me; `index`/`log_term` describe my
    /// last entry. A `context` of [`TRANSFER_CONTEXT`] marks a campaign
    /// that a leader transfer asked for.
    Vote = 2,
    /// Voter to candidate: granted, or `reject`.
    VoteResp = 3,
    /// Leader to follower: I am alive; you may commit up to `commit`.
    /// `context` names the read requests it confirms leadership for.
    Heartbeat = 4,
    /// Follower to leader: the heartbeat's `context`, echoed.
    HeartbeatResp = 5,
    /// A follower forwards its client's `entries` to the leader.
    Prop = 6,
    /// A follower forwards its client's read (`context`) to the leader.
    ReadIndex = 7,
    /// Leader to follower: the read `context` may be served once
    /// `index` is applied.
    ReadIndexResp = 8,
    /// Leader to its chosen successor: campaign now.
    TimeoutNow = 9,
}

/// The `context` of a vote request sent because a leader transfer asked
/// for it: voters grant it even while they still hear from a leader.
pub const TRANSFER_CONTEXT: &[u8] = b"CampaignTransfer";

/// One message between members, with etcd's `raftpb.Message` fields.
///
/// Fields a kind does not use stay at their defaults.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Message {
    /// Its kind, a [`MessageType`] as a number; an unknown number makes
    /// the receiver ignore the message.
    #[prost(enumeration = "MessageType", tag = "1")]
    pub msg_type: i32,
    /// The receiving member's id.
    #[prost(uint64, tag = "2")]
    pub to: u64,
    /// The sending member's id.
    #[prost(uint64, tag = "3")]
    pub from: u64,
    /// The sender's term; 0 on forwarded proposals and reads, which are
    /// treated as if local to the receiver.
    #[prost(uint64, tag = "4")]
    pub term: u64,
    /// The term of the entry at `index`.
    #[prost(uint64, tag = "5")]
    pub log_term: u64,
    /// An index whose meaning depends on the kind (see [`MessageType`]).
    #[prost(uint64, tag = "6")]
    pub index: u64,
    /// Entries to append (`App`) or to propose (`Prop`).
    #[prost(message, repeated, tag = "7")]
    pub entries: Vec<Entry>,
    /// The leader's commit index, as far as the receiver may use it.
    #[prost(uint64, tag = "8")]
    pub commit: u64,
    /// A refusal: of a vote, or of entries whose predecessor is missing.
    #[prost(bool, tag = "9")]
    pub reject: bool,
    /// On a refused append, the follower's last index, so that the leader
    /// can skip straight back to it.
    #[prost(uint64, tag = "10")]
    pub reject_hint: u64,
    /// Opaque bytes: a read request's id, or [`TRANSFER_CONTEXT`].
    #[prost(bytes = "vec", tag = "11")]
    pub context: Vec<u8>,
}

impl Message {
    /// A message of kind `msg_type` with every other field at its default.
    pub fn of_type(msg_type: MessageType) -> Message {
        Message {
            msg_type: msg_type as i32,
            ..Message::default()
        }
    }
}

/// What a member keeps across a crash besides its log: its term, whom it
/// voted for in that term (0 = nobody), and how far it knows the log is
/// committed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HardState {
    /// The latest term this member has seen.
    pub term: u64,
    /// The candidate it voted for in `term`, or 0.
    pub vote: u64,
    /// The highest index it knows to be committed.
    pub commit: u64,
}
