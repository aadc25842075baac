//! The history sink of a run: every host of the run, and the driver
//! between steps, write their events here.
//!
//! A simulated run stamps events with true simulated time. Real mode (the
//! `real` crate) gives its recorder a real monotonic origin instead
//! ([`Recorder::real_time`]): every client thread and the driver share it,
//! so it is the true time of that run. Nothing in the simulator creates
//! such a recorder.

use crate::freeze::sim_now;
use model::history::{EventKind, History};
use std::sync::Mutex;

/// Shared by the driver and every simulated host of one run.
#[derive(Debug, Default)]
pub struct Recorder {
    history: Mutex<History>,
    /// Real mode only: the instant the run's true time counts from.
    real_origin: Option<std::time::Instant>,
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Recorder::default()
    }

    /// An empty recorder for a run on real servers, whose true time is the
    /// machine's monotonic clock since `origin`.
    pub fn real_time(origin: std::time::Instant) -> Self {
        Recorder {
            history: Mutex::default(),
            real_origin: Some(origin),
        }
    }

    /// True time now, µs: simulated, or since the real origin.
    pub fn now_us(&self) -> u64 {
        match self.real_origin {
            Some(origin) => origin.elapsed().as_micros() as u64,
            None => sim_now().as_micros() as u64,
        }
    }

    /// Records an event now (true time).
    pub fn record(&self, kind: EventKind) -> usize {
        self.record_at(self.now_us(), kind)
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
