//! The driver's agenda: what it must do at which simulated instant (start
//! a timed fault, end a pause, heal a partition, restart a host, ...).
//!
//! Actions due at the same instant run in the order they were scheduled,
//! so the agenda is as deterministic as the run.

use model::host::Host;
use std::collections::BTreeMap;
use std::time::Duration;

/// Something the driver does at a simulated time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Start scenario fault `i`.
    Start(usize),
    /// Record the end of a pause of this client.
    EndPause(Host),
    /// Heal the partition of scenario fault `i`.
    Heal(usize),
    /// Deliver the messages held by scenario fault `i`.
    Release(usize),
    /// Restore the latency of the links slowed by scenario fault `i`.
    Unslow(usize),
    /// Restart a crashed host.
    Restart(Host),
    /// Promote the first replica and re-point `master`.
    Promote,
}

/// Actions by due time, then by the order they were scheduled.
#[derive(Debug, Default)]
pub struct Agenda {
    actions: BTreeMap<(u64, u64), Action>,
    scheduled: u64,
}

impl Agenda {
    /// An empty agenda.
    pub fn new() -> Self {
        Agenda::default()
    }

    /// Schedules `action` at `at` (true simulated time).
    pub fn schedule(&mut self, at: Duration, action: Action) {
        self.scheduled += 1;
        self.actions
            .insert((at.as_micros() as u64, self.scheduled), action);
    }

    /// Takes the earliest action due at or before `now_us`, if any.
    pub fn pop_due(&mut self, now_us: u64) -> Option<Action> {
        let (&(at, seq), _) = self.actions.iter().next()?;
        if at > now_us {
            return None;
        }
        self.actions.remove(&(at, seq))
    }

    /// Whether nothing is left to do.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }
}
