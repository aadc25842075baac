//! What a member hands its driver after some steps.

use super::message::{Entry, Message};

/// A read that may be served: once entries up to `index` are applied, the
/// state machine reflects every write completed before the read began.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadState {
    /// The commit index the read must wait for.
    pub index: u64,
    /// The context the read was asked with.
    pub context: Vec<u8>,
}

/// Everything produced since the last call to
/// [`Raft::ready`](super::Raft::ready).
///
/// The log and hard state need no saving: the simulator keeps the core
/// outside the crashing host, so both are durable the moment they change,
/// as if etcd had fsynced before every send.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ready {
    /// Messages to send, in order. Any may be lost without harm.
    pub messages: Vec<Message>,
    /// Newly committed entries, to apply in order; each is handed out once.
    pub committed: Vec<Entry>,
    /// Reads that may now be served (after applying `committed`).
    pub read_states: Vec<ReadState>,
}
