//! A search for counterexamples (`locklab explore`) in words its engine
//! and its reports share: how long it goes on ([`Limit`]) and what it
//! counted ([`Stats`]).

use std::time::Duration;

/// How long a search goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// This many cases.
    Cases(u64),
    /// Until this much wall time has passed.
    Time(Duration),
}

/// Running totals of a search.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    /// Cases run.
    pub cases: u64,
    /// Cases that violated safety.
    pub violations: u64,
    /// Cases that deadlocked (and did not violate safety).
    pub deadlocks: u64,
    /// Cases no checker could decide.
    pub unknown: u64,
    /// Cases the simulator could not run (harness errors).
    pub errors: u64,
    /// Simulated time, s.
    pub sim_s: f64,
    /// Wall time, s.
    pub wall_s: f64,
    /// Whether the search stopped because its seeds ran out (every seed is
    /// below 2^53), before its case count or time limit.
    pub seeds_exhausted: bool,
}

impl Stats {
    /// Cases per wall second.
    pub fn cases_per_s(&self) -> f64 {
        if self.wall_s > 0.0 {
            self.cases as f64 / self.wall_s
        } else {
            0.0
        }
    }

    /// Simulated seconds per wall second.
    pub fn sim_per_wall(&self) -> f64 {
        if self.wall_s > 0.0 {
            self.sim_s / self.wall_s
        } else {
            0.0
        }
    }
}
