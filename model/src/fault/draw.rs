//! What drawing a fault needs: the seeded stream, the case's own timing
//! choices (the swarm) and the facts and bounds of the case the fault is
//! drawn for. Every draw is a pure function of these, so a seed names
//! its case for ever (as long as no draw changes order).

use crate::host::Host;
use crate::scenario::{ClientGroup, Persistence};
use locks::FaultPoint;
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// A small drawing helper over a seeded ChaCha8 stream.
pub struct Draw(ChaCha8Rng);

impl Draw {
    /// The stream of `seed`.
    pub fn from_seed(seed: u64) -> Draw {
        Draw(ChaCha8Rng::seed_from_u64(seed))
    }

    /// Uniform in `0..n` (0 when `n <= 1`).
    pub fn below(&mut self, n: u64) -> u64 {
        if n <= 1 { 0 } else { self.0.next_u64() % n }
    }

    /// Uniform in `lo..=hi` (`lo` when `hi < lo`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            lo + self.below(hi - lo + 1)
        }
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One of `items` (not empty).
    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize].clone()
    }

    /// Log-uniform-ish in `lo..=hi`: small values as likely as large ones.
    pub fn scale(&mut self, lo: u64, hi: u64) -> u64 {
        let hi = hi.max(lo);
        let steps = 8;
        let k = self.below(steps + 1);
        let top = lo + (hi - lo) * k / steps;
        self.range(lo, top.max(lo))
    }

    /// A size up to a bound an assumption sets (`hi`): as [`Draw::scale`],
    /// but one time in three within the last tenth below the bound, where
    /// a promise is nearest to breaking (a pause just inside the lease
    /// budget, a clock jump just inside the allowance).
    pub fn up_to_edge(&mut self, lo: u64, hi: u64) -> u64 {
        let hi = hi.max(lo);
        if self.chance(33) {
            self.range(hi - (hi - lo) / 10, hi)
        } else {
            self.scale(lo, hi)
        }
    }

    /// A non-empty random subset of `items`, in order.
    pub fn some_of(&mut self, items: &[Host]) -> Vec<Host> {
        let mut out: Vec<Host> = items.iter().filter(|_| self.chance(50)).copied().collect();
        if out.is_empty() {
            out.push(self.pick(items));
        }
        out
    }
}

/// The per-case timing choices of the swarm.
pub struct Swarm {
    /// Percent of faults aimed at fault points (the rest fire at a time).
    pub aim_percent: u64,
    /// The points aimed faults pick from.
    pub points: Vec<FaultPoint>,
}

/// The case a fault is drawn for, as the draws see it.
pub struct Scene<'a> {
    /// The clients, one group each (`client-N` is group N).
    pub clients: &'a [ClientGroup],
    /// The deployment's nodes.
    pub nodes: Vec<Host>,
    /// The lock's TTL.
    pub ttl_ms: u64,
    /// The clients' reply timeout.
    pub response_timeout_ms: u64,
    /// How the nodes persist.
    pub persistence: Persistence,
    /// Round trips of the longest lock cycle of any client.
    pub cycle_round_trips: u64,
    /// What of the timing budget each pause, delay or slow link may spend;
    /// `None`: sizes are unbounded.
    pub share_ms: Option<u64>,
    /// The rung's assumptions, when the draws must stay within them.
    pub bounds: Option<Bounds>,
}

/// What a rung's assumptions bound in a single fault (the rest, such as
/// the budget over the whole schedule, is checked on the whole case).
#[derive(Debug, Clone)]
pub struct Bounds {
    /// Fault points at which no pause may be aimed.
    pub no_pause_at: &'static [FaultPoint],
    /// Whether clients may crash.
    pub client_crashes: bool,
    /// Whether messages between clients and Redis may be lost (when not,
    /// they also stay within the reply timeout).
    pub lossy_client_links: bool,
    /// Whether faults may touch the store's links.
    pub store_links: bool,
    /// Whether node clocks may jump forward arbitrarily.
    pub node_forward_jumps: bool,
    /// Whether client wall clocks must stay within the allowance.
    pub client_wall_clock: bool,
    /// The earliest a node without AOF `always` may restart: after every
    /// lease it gave expired.
    pub node_restart_floor_ms: u64,
    /// The largest clock drift allowed.
    pub max_drift_ppm: i64,
}

impl Scene<'_> {
    /// A size within the budget share, or in `lo..=hi` when unbounded.
    pub(super) fn size(&self, d: &mut Draw, lo: u64, hi: u64) -> u64 {
        match self.share_ms {
            Some(s) => d.up_to_edge(1, s.max(1)),
            None => d.scale(lo, hi),
        }
    }

    /// The clients as hosts.
    pub(super) fn client_hosts(&self) -> Vec<Host> {
        (0..self.clients.len()).map(Host::Client).collect()
    }
}
