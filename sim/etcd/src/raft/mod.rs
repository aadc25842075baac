//! Raft, as etcd 3.4's members run it: a pure, deterministic core that the
//! simulated member drives.
//!
//! # What it is
//!
//! Raft keeps one log of proposals identical on a cluster's members. A
//! leader, elected by a majority (quorum) of voters for a numbered term,
//! appends proposals and replicates them; an entry is committed once a
//! quorum holds it, and then never lost: every later leader has it,
//! because votes go only to candidates whose log is at least as up to date
//! as the voter's. Members apply committed entries in order, so their
//! state machines agree.
//!
//! This core does what etcd 3.4's `raft` package does with the options
//! etcd sets:
//!
//! - **CheckQuorum on.** A leader that has not heard from a quorum for an
//!   election timeout steps down, so a leader cut off from the majority
//!   stops serving; and a member that heard from a leader within an
//!   election timeout ignores vote requests, so a member returning from a
//!   partition with a higher term cannot depose a healthy leader.
//! - **PreVote off.** etcd 3.4 does not enable it.
//! - **ReadIndex, "safe".** A read is served at the commit index once a
//!   quorum has answered a heartbeat sent after the read arrived.
//! - **Leader transfer**, as etcd uses it when a leader shuts down.
//!
//! # What it leaves out, and why
//!
//! Membership changes, learners, snapshots and log compaction: the
//! simulated cluster has three fixed voters and runs are short enough for
//! the whole log to stay in memory. Flow control (etcd's in-flight window)
//! and batching: datagrams are small. Persistence: the simulator keeps
//! this value outside the crashing host, so the log and [`HardState`] are
//! durable the moment they change; [`Raft::restart`] forgets the rest.
//!
//! # Determinism
//!
//! Nothing here reads a clock, spawns a thread or draws unseeded
//! randomness: time is [`Raft::tick`], the election timeouts come from a
//! generator seeded by [`Config::seed`], and every collection iterates in
//! a fixed order. A seed and a sequence of calls replay a run exactly.
//!
//! # Use
//!
//! Call [`Raft::tick`] on a timer, [`Raft::step`] with each message
//! received, [`Raft::propose`] and [`Raft::read_index`] for clients, then
//! [`Raft::ready`] to collect messages to send, committed entries to apply
//! and reads to serve.

mod config;
mod log;
mod message;
mod node;
mod progress;
mod read_only;
mod ready;

#[cfg(test)]
mod tests;

pub use config::Config;
pub use message::{Entry, HardState, Message, MessageType, TRANSFER_CONTEXT};
pub use node::{ProposeError, Raft, Role};
pub use ready::{ReadState, Ready};
