//! What the targets compare: two implementations named in advance,
//! measured pair by pair, and what one pair measured.

use crate::client::{Impl, Wait};
use serde::{Deserialize, Serialize};

/// Where an uncontended comparison's slices run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Client and servers on different CPUs.
    Split,
    /// Node 0 moved onto the client's CPU (needs pinning).
    SameCpu,
}

impl Placement {
    /// `split` or `same-cpu`.
    pub fn label(self) -> &'static str {
        match self {
            Placement::Split => "split",
            Placement::SameCpu => "same-cpu",
        }
    }
}

/// What each slice of a comparison runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// One task acquiring and releasing back to back on the first `nodes`
    /// nodes.
    Uncontended {
        /// Nodes of the lock (and of the floor and rslock).
        nodes: usize,
        /// Where node 0 runs.
        placement: Placement,
    },
    /// `workers` tasks on one key of node 0, client and server split.
    Contention {
        /// Concurrent tasks.
        workers: usize,
    },
}

/// Two implementations measured pair by pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comparison {
    /// A short name, unique.
    pub id: &'static str,
    /// The side the figures are about (the numerator of a ratio).
    pub a: Impl,
    /// The side it is compared to.
    pub b: Impl,
    /// What each slice runs.
    pub work: Work,
}

impl Comparison {
    /// Nodes the comparison needs.
    pub fn nodes(&self) -> usize {
        match self.work {
            Work::Uncontended { nodes, .. } => nodes,
            Work::Contention { .. } => 1,
        }
    }

    /// Where its slices run.
    pub fn placement(&self) -> Placement {
        match self.work {
            Work::Uncontended { placement, .. } => placement,
            Work::Contention { .. } => Placement::Split,
        }
    }
}

/// The implementation the contention targets are about.
pub const NOTIFY: Impl = Impl::Rung("lua-release", Wait::Notify);
/// Workers of the contention comparison, all on one key.
pub const WORKERS: usize = 16;
/// Masters of the Redlock comparisons.
pub const MASTERS: usize = 5;

/// A rung against the floor, on one node that `placement` puts.
const fn single_node(id: &'static str, rung: &'static str, placement: Placement) -> Comparison {
    uncontended(id, Impl::Rung(rung, Wait::Fixed), Impl::Floor, 1, placement)
}

/// Redlock against `b`, both on [`MASTERS`] nodes.
const fn redlock_against(id: &'static str, b: Impl) -> Comparison {
    uncontended(
        id,
        Impl::Rung("redlock", Wait::Fixed),
        b,
        MASTERS,
        Placement::Split,
    )
}

/// `a` against `b` uncontended, on `nodes` nodes.
const fn uncontended(
    id: &'static str,
    a: Impl,
    b: Impl,
    nodes: usize,
    placement: Placement,
) -> Comparison {
    Comparison {
        id,
        a,
        b,
        work: Work::Uncontended { nodes, placement },
    }
}

/// Every comparison the targets read, in the order they are measured.
pub const COMPARISONS: [Comparison; 7] = [
    single_node("set-nx-px/floor split", "set-nx-px", Placement::Split),
    single_node("lua-release/floor split", "lua-release", Placement::Split),
    single_node("set-nx-px/floor same-cpu", "set-nx-px", Placement::SameCpu),
    single_node(
        "lua-release/floor same-cpu",
        "lua-release",
        Placement::SameCpu,
    ),
    redlock_against("redlock/floor 5 nodes", Impl::Floor),
    redlock_against("redlock/rslock 5 nodes", Impl::Rslock),
    Comparison {
        id: "notify/rslock 16 workers",
        a: NOTIFY,
        b: Impl::Rslock,
        work: Work::Contention { workers: WORKERS },
    },
];

/// The comparison named `id`.
pub fn comparison(id: &str) -> Option<&'static Comparison> {
    COMPARISONS.iter().find(|c| c.id == id)
}

/// What one side measured in one slice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SideSample {
    /// Cycles (uncontended) or acquisitions (contention) per second.
    pub rate: f64,
    /// p99.9 wait, µs (contention; open waits at their open time).
    pub wait_p999_us: u64,
    /// Whether that p99.9 is only a lower bound (open waits reach it).
    pub wait_p999_lower_bound: bool,
    /// p99.9 wait in hand-offs: acquisitions by any worker from a wait's
    /// start to its end (contention; see
    /// [`WorkerCount::handoffs`](crate::workload::WorkerCount::handoffs)).
    #[serde(default)]
    pub wait_p999_handoffs: u64,
    /// Whether that p99.9 is only a lower bound (open waits reach it).
    #[serde(default)]
    pub wait_p999_handoffs_lower_bound: bool,
    /// Fewest / most acquisitions of any worker (contention).
    pub fairness: f64,
}

/// One pair: both sides, measured back to back.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PairSample {
    /// Side `a`.
    pub a: SideSample,
    /// Side `b`.
    pub b: SideSample,
    /// Whether `a` ran first.
    pub a_first: bool,
    /// The batch it was measured in (from 0): a stretch of the paired
    /// stage, each in a client process of its own in `locklab bench`.
    pub batch: u32,
}
