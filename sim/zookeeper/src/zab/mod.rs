//! ZAB, ZooKeeper's atomic broadcast, as an ensemble of ZooKeeper 3.8
//! servers runs it: a pure, deterministic core that the simulated server
//! drives.
//!
//! # What ZAB does
//!
//! An ensemble keeps one sequence of transactions on every server. Each
//! transaction is named by a *zxid*, `(epoch << 32) | counter`: the epoch
//! numbers the leader that proposed it, the counter its place in that
//! leader's reign (the first transaction of an epoch has counter 1).
//! A server runs through three roles:
//!
//! 1. **Looking: election** (ZooKeeper's `FastLeaderElection`). Each server
//!    votes for the best server it has heard of: the higher current epoch,
//!    then the higher last logged zxid, then the higher server id. Votes
//!    spread in rounds (the *election epoch*); a server settles once a
//!    quorum votes as it does, or joins a leader that a quorum already
//!    follows. The election only picks a likely leader: safety comes from
//!    the next phase.
//! 2. **Discovery and synchronisation** (`Leader.lead`, `LearnerHandler`,
//!    `Learner.registerWithLeader`, `syncWithLeader`). The would-be leader
//!    collects the accepted epochs of a quorum and takes the next epoch
//!    after the highest; a follower that accepts it will never again help
//!    an older leader. The leader then gives up if any follower of that
//!    quorum has a more recent history than its own, so the history it
//!    holds contains every committed transaction. It brings each follower
//!    to that history: a DIFF of the transactions it lacks, a TRUNC of
//!    proposals it logged that the new leader never had, or a SNAP when it
//!    is too far behind. Once a quorum has taken the new history
//!    (`NEWLEADER` acknowledged), the whole history is committed and the
//!    leader serves.
//! 3. **Broadcast.** The leader proposes each write with the next zxid;
//!    followers log it and acknowledge; once a quorum (the leader
//!    included) has logged it, the leader commits it and tells the others.
//!    Everyone applies committed transactions in zxid order.
//!
//! Liveness as clients see it follows ZooKeeper's limits, counted in
//! ticks: a leader pings its followers every tick and gives up leadership
//! when it has not heard from a quorum within `syncLimit` ticks (so a
//! leader cut off with a minority stops accepting writes); a follower that
//! has not heard from its leader within `syncLimit` ticks goes back to
//! Looking, and its server must drop its clients; a server must be in sync
//! with its new leader within `initLimit` ticks of the election.
//!
//! `sync` goes through the leader, as ZooKeeper's does: the leader answers
//! with its last proposal, and the follower reports the sync done once it
//! has applied that far, so a read after it sees every write the leader
//! had committed when the sync reached it.
//!
//! # What it simplifies, and why
//!
//! - **Datagrams, not TCP.** ZooKeeper's servers talk over FIFO TCP
//!   connections and treat a broken one as a lost leader. Here any message
//!   may be lost, duplicated or reordered, so a follower numbers each
//!   attempt to join a leader (durably, standing in for a connection), both
//!   sides ignore messages of another attempt, the handshake is resent
//!   every tick until answered, and a proposal names its predecessor: a
//!   follower logs only the proposal that follows its last one, and the
//!   leader resends what a follower has not acknowledged.
//! - **`NEWLEADER` travels with the synchronisation** (one `Sync` message
//!   carries the DIFF, TRUNC or SNAP and the new epoch), and a follower
//!   describes its log by the last zxid of each epoch in it, so the leader
//!   finds the exact point where their histories part.
//! - **A snapshot is the leader's whole log**; nothing is compacted, runs
//!   are short. A follower gets a SNAP when it lacks more than
//!   [`Config::snap_threshold`] transactions.
//! - **A fixed ensemble of voters**: no observers, no dynamic
//!   reconfiguration, no weighted or hierarchical quorums.
//! - **The election's finalize wait** (200 ms in ZooKeeper) is rounded up
//!   to whole ticks, and skipped when every voter already agrees; a server
//!   joining a running ensemble needs a quorum that names the same leader,
//!   which itself says it leads (ZooKeeper also compares the vote's epoch).
//! - **A leader steps down for a follower that promised a later epoch.**
//!   Such a follower (it promised a would-be leader that never took
//!   office) refuses this leader's epoch; ZooKeeper's would go back to
//!   Looking and find the same leader again for as long as it reigns. Here
//!   the leader goes Looking instead, so that the next epoch passes the
//!   promise and all three servers serve again.
//! - **Writes are proposed at the leader only.** Forwarding a follower's
//!   write is the server's business: the core says who leads.
//! - **Durability is immediate**: [`Durable`] is what ZooKeeper keeps on
//!   disk (its transaction log, `acceptedEpoch`, `currentEpoch`), and the
//!   core changes it as if fsynced before every message it sends; the
//!   caller keeps it outside a crashing host and hands it to
//!   [`Zab::restart`].
//!
//! # Determinism
//!
//! Nothing here reads a clock, spawns a thread or draws unseeded
//! randomness: time is [`Zab::tick`]; the one random timing, when a
//! Looking server sends its vote again, comes from a ChaCha8 generator
//! seeded by [`Config::seed`]; every collection iterates in a fixed order.
//!
//! # Use
//!
//! Call [`Zab::tick`] every `tick_ms`, [`Zab::step`] with each message
//! received from another server, [`Zab::propose`] at the leader for each
//! write and [`Zab::sync`] for a client's `sync`, then [`Zab::ready`] to
//! collect what to send, the transactions to apply, role changes and the
//! syncs that are done. A server drops its clients when the role changes,
//! accepts them while [`Zab::is_serving`], forwards writes to
//! [`Zab::leader`], and keeps [`Zab::durable`] where a crash cannot reach.
//!
//! ```
//! use simzk::zab::{Config, Role, Zab};
//!
//! // An ensemble of one is its own quorum: it leads at once.
//! let mut zab = Zab::new(Config::new(1, &[1], 7));
//! assert_eq!(zab.role(), Role::Leading);
//! let zxid = zab.propose(b"create /lock".to_vec()).unwrap();
//! zab.sync(1).unwrap();
//! let ready = zab.ready();
//! assert_eq!(ready.committed, vec![(zxid, b"create /lock".to_vec())]);
//! assert_eq!(ready.synced, vec![1]);
//! // After a crash, the durable state brings every committed txn back.
//! let zab = Zab::restart(zab.into_durable(), Config::new(1, &[1], 7));
//! assert_eq!(zab.durable().committed_txns().len(), 1);
//! ```

mod codec;
mod config;
mod durable;
mod election;
mod follower;
mod leader;
mod message;
mod node;
mod ready;

#[cfg(test)]
mod tests;

pub use codec::DecodeError;
pub use config::{Config, DEFAULT_INIT_LIMIT, DEFAULT_SYNC_LIMIT};
pub use durable::Durable;
pub use message::{
    Message, Notification, PeerState, SyncMode, Txn, Vote, counter_of, epoch_of, make_zxid,
};
pub use node::{NotLeader, Role, Zab};
pub use ready::Ready;
