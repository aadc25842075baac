//! What a client keeps across restarts of its process, in either engine:
//! its machine clock, its place in the workload, and the bookkeeping of
//! the faults aimed at its fault points.
//!
//! The driver, the client's fault hook and its workload all share one
//! [`ClientState`]: a restart starts a new process (new connections, a new
//! owner id) with the same machine clock and the same place in the
//! workload. What else an engine's machine keeps (the simulator's pause
//! gate and socket holds) is its `machine` part.

use crate::hook::{AimedFault, due_at};
use locks::FaultPoint;
use model::host::Host;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// What a client keeps across restarts of its process; `C` is the
/// engine's machine clock, `M` what else the engine's machine keeps.
#[derive(Debug)]
pub struct ClientState<C, M = ()> {
    /// The client's index.
    pub index: usize,
    /// Its machine clock (skew, jumps and drift survive a restart).
    pub clock: Arc<C>,
    /// The lock cycle it is in, from 1 (0 before the first).
    pub cycle: Arc<AtomicU32>,
    /// The scenario faults already fired at its fault points: a fault
    /// fires once per run, restarts included.
    pub fired: Mutex<BTreeSet<usize>>,
    /// How many times it has passed each fault point, by cycle (kept
    /// across restarts, like the cycle itself).
    pub passes: Mutex<BTreeMap<(u32, FaultPoint), u32>>,
    /// How many times its process has started.
    pub incarnation: AtomicU32,
    /// Whether it crashed and will not restart.
    pub crashed_for_good: AtomicBool,
    /// What else the engine's machine keeps across restarts.
    pub machine: M,
}

impl<C, M> ClientState<C, M> {
    /// A client that has not started yet.
    pub fn new(index: usize, clock: Arc<C>, machine: M) -> Self {
        ClientState {
            index,
            clock,
            cycle: Arc::new(AtomicU32::new(0)),
            fired: Mutex::new(BTreeSet::new()),
            passes: Mutex::new(BTreeMap::new()),
            incarnation: AtomicU32::new(0),
            crashed_for_good: AtomicBool::new(false),
            machine,
        }
    }

    /// Its host.
    pub fn host(&self) -> Host {
        Host::Client(self.index)
    }

    /// Counts one more pass of `point` in `cycle`; returns how many there
    /// have been.
    pub fn pass(&self, cycle: u32, point: FaultPoint) -> u32 {
        let mut passes = self.passes.lock().unwrap_or_else(|p| p.into_inner());
        let count = passes.entry((cycle, point)).or_insert(0);
        *count += 1;
        *count
    }

    /// Of `aimed`, the faults that fire on reaching `point` now, marked as
    /// fired (the rule is [`due_at`]'s).
    pub fn due(&self, aimed: &[AimedFault], point: FaultPoint) -> Vec<AimedFault> {
        // Most clients have no fault aimed at them: their points cost no
        // lock and no count.
        if aimed.is_empty() {
            return Vec::new();
        }
        let cycle = self.cycle.load(Ordering::SeqCst);
        let passes = self.pass(cycle, point);
        let mut fired = self.fired.lock().unwrap_or_else(|p| p.into_inner());
        due_at(aimed, cycle, point, passes, &mut fired)
    }
}
