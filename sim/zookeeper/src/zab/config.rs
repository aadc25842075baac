//! How a server of the ensemble is set up.

/// ZooKeeper's sample `initLimit`: ticks a server has to join its new
/// leader (and a new leader to gather a quorum) after an election.
pub const DEFAULT_INIT_LIMIT: u32 = 10;

/// ZooKeeper's sample `syncLimit`: ticks a leader and its followers may go
/// without hearing from each other before they give up.
pub const DEFAULT_SYNC_LIMIT: u32 = 5;

/// ZooKeeper's `finalizeWait`: how long a server whose vote has a quorum
/// waits for a better vote before it settles.
const FINALIZE_WAIT_MS: u64 = 200;

/// One server's identity, its ensemble and its limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// This server's id (ZooKeeper's `myid`); ids are non-zero.
    pub id: u64,
    /// Every voting server's id, this one's included; fixed for the
    /// ensemble's life.
    pub voters: Vec<u64>,
    /// The length of a tick in milliseconds (ZooKeeper's `tickTime`); used
    /// only to turn ZooKeeper's millisecond constants into ticks.
    pub tick_ms: u64,
    /// `initLimit`, in ticks.
    pub init_limit: u32,
    /// `syncLimit`, in ticks.
    pub sync_limit: u32,
    /// A follower missing more than this many transactions gets a SNAP
    /// (the leader's whole log) rather than a DIFF.
    pub snap_threshold: usize,
    /// Seeds the election's jitter, so that a seed replays a run exactly.
    pub seed: u64,
}

impl Config {
    /// Server `id` of the ensemble `voters`, with ZooKeeper's sample limits
    /// and a 2000 ms tick.
    pub fn new(id: u64, voters: &[u64], seed: u64) -> Config {
        Config {
            id,
            voters: voters.to_vec(),
            tick_ms: 2000,
            init_limit: DEFAULT_INIT_LIMIT,
            sync_limit: DEFAULT_SYNC_LIMIT,
            snap_threshold: 1000,
            seed,
        }
    }

    /// The finalize wait in whole ticks, at least one.
    pub(super) fn finalize_ticks(&self) -> u64 {
        FINALIZE_WAIT_MS.div_ceil(self.tick_ms.max(1)).max(1)
    }
}
