//! The history sink of a run: every host of the run, and the driver
//! between steps, write their events here.

use crate::freeze::sim_now;
use crate::history::{EventKind, History};
use std::sync::Mutex;

/// Shared by the driver and every simulated host of one run.
#[derive(Debug, Default)]
pub struct Recorder {
    history: Mutex<History>,
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Recorder::default()
    }

    /// Records an event now (true simulated time).
    pub fn record(&self, kind: EventKind) -> usize {
        self.record_at(sim_now().as_micros() as u64, kind)
    }

    /// Records an event at a given time (used by the driver between steps).
    pub fn record_at(&self, at_us: u64, kind: EventKind) -> usize {
        self.history
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(at_us, kind)
    }

    /// The history so far, in time order (hosts tick one after another
    /// within a step, so insertion order can be off by less than a tick),
    /// renumbered.
    pub fn history(&self) -> History {
        let history = self.history.lock().unwrap_or_else(|p| p.into_inner());
        let mut events: Vec<_> = history.events().to_vec();
        events.sort_by_key(|e| (e.at_us, e.i));
        for (i, e) in events.iter_mut().enumerate() {
            e.i = i;
        }
        events.into_iter().collect()
    }
}
