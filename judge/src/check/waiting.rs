//! What waiting cost: how many times waiting clients were woken per
//! hand-off of a lock. Not a checker (nothing about it is unsafe); a
//! figure beside the damage, for the herd a lock hand-off can wake.
//!
//! A hand-off is a lock passing from one client to another: a hold that
//! begins after a different client's hold of the same lock. (A client
//! that takes the lock straight back passes it to no one.) The wake-ups
//! are the run's count, which the simulator and real mode record when
//! the run ends
//! ([`EventKind::Wakeups`]): a polling waiter is woken once per retry, an
//! etcd waiter once per watch response. One wake-up per hand-off is a
//! lock that wakes only the next waiter; a herd of N polling waiters
//! pays about N.

use super::holds::holds;
use model::history::{EventKind, History};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The cost of waiting in one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WaitingDamage {
    /// Times a lock passed from one client to another.
    pub handoffs: u64,
    /// The run's wake-ups per hand-off; `null` when the history counts no
    /// wake-ups or has no hand-off.
    pub wakeups_per_handoff: Option<f64>,
}

/// Measures [`WaitingDamage`] over `history`.
pub fn measure(history: &History) -> WaitingDamage {
    let handoffs = handoffs(history);
    let wakeups = history.events().iter().find_map(|e| match e.kind {
        EventKind::Wakeups { count } => Some(count),
        _ => None,
    });
    WaitingDamage {
        handoffs,
        wakeups_per_handoff: wakeups
            .filter(|_| handoffs > 0)
            .map(|count| count as f64 / handoffs as f64),
    }
}

/// Hand-offs in `history`: holds whose client differs from the previous
/// hold's of the same lock.
pub fn handoffs(history: &History) -> u64 {
    let mut last_holder: BTreeMap<String, usize> = BTreeMap::new();
    let mut count = 0;
    for hold in holds(history) {
        if let Some(previous) = last_holder.insert(hold.lock.clone(), hold.client)
            && previous != hold.client
        {
            count += 1;
        }
    }
    count
}
