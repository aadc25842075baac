//! The one place every host of a run writes its events to, and the queue
//! through which code inside a host asks the driver for a fault.

use crate::freeze::sim_now;
use crate::history::{EventKind, History};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// A fault a client reached at a fault point and that only the driver can
/// carry out (crashing a host, cutting links, promoting a replica).
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRequest {
    /// Index of the fault in the scenario's list.
    pub fault: usize,
    /// When the client already began it itself (a pause of its own), µs.
    pub started_us: Option<u64>,
}

/// Shared by the driver and every simulated host of one run.
#[derive(Debug, Default)]
pub struct Recorder {
    history: Mutex<History>,
    requests: Mutex<Vec<FaultRequest>>,
    /// Current master of each name clients dial (failover re-points it).
    directory: Mutex<BTreeMap<String, String>>,
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

    /// Asks the driver to carry out a fault after the current step.
    pub fn request(&self, request: FaultRequest) {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request);
    }

    /// Takes the pending requests, oldest first.
    pub fn take_requests(&self) -> Vec<FaultRequest> {
        std::mem::take(&mut *self.requests.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Points a name (e.g. `master`) at a host.
    pub fn point_name(&self, name: &str, host: &str) {
        self.directory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string(), host.to_string());
    }

    /// The host a name points at (a host name points at itself).
    pub fn resolve(&self, name: &str) -> String {
        self.directory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_string())
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
