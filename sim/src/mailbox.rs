//! The queue through which code inside a host asks the driver for a fault
//! it cannot carry out itself (crashing a host, cutting links, promoting a
//! replica): only the driver holds the turmoil simulation, between steps.

use std::sync::Mutex;

/// A fault a client reached at a fault point, for the driver to carry out.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRequest {
    /// Index of the fault in the scenario's list.
    pub fault: usize,
    /// When the client already began it itself (a pause of its own), µs:
    /// the driver then only schedules its end.
    pub started_us: Option<u64>,
}

/// Requests from the hosts of one run, oldest first.
#[derive(Debug, Default)]
pub struct Mailbox {
    requests: Mutex<Vec<FaultRequest>>,
}

impl Mailbox {
    /// An empty mailbox.
    pub fn new() -> Self {
        Mailbox::default()
    }

    /// Asks the driver to carry out a fault after the current step.
    pub fn request(&self, request: FaultRequest) {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request);
    }

    /// Takes the pending requests, oldest first.
    pub fn take(&self) -> Vec<FaultRequest> {
        std::mem::take(&mut *self.requests.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
