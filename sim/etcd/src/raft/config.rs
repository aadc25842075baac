//! How a member is set up.

/// A member's identity, its cluster and its timings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// This member's id; ids are non-zero (0 means "nobody").
    pub id: u64,
    /// Every voting member's id, this one's included. Fixed for the
    /// cluster's life: membership changes are left out.
    pub voters: Vec<u64>,
    /// Ticks without a leader before a follower campaigns (etcd: 10 ticks
    /// of 100 ms). Each wait is drawn from `[election_ticks,
    /// 2 * election_ticks)` so that members seldom campaign together.
    pub election_ticks: u32,
    /// Ticks between a leader's heartbeats (etcd: 1).
    pub heartbeat_ticks: u32,
    /// etcd's CheckQuorum: a leader that has not heard from a quorum for
    /// an election timeout steps down, and members that hear from a leader
    /// refuse to help depose it.
    pub check_quorum: bool,
    /// Seeds the election timeouts, so that a seed replays a run exactly.
    pub seed: u64,
}
