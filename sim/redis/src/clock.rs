//! A node's own wall clock, derived from simulated time.
//!
//! Redis expires keys by its wall clock (`mstime()`), so a node whose clock
//! jumps forward expires its keys early. Each simulated node therefore has a
//! clock of its own:
//!
//! ```text
//! wall_ms = epoch_ms + offset_ms + elapsed_ms * (1 + drift_ppm / 1e6)
//! ```
//!
//! where `elapsed` is the true simulated time since the simulation started
//! ([`true_elapsed`]). Drift changes are continuous (the clock is re-based at
//! the change); jumps add to the offset and may go backwards.

use std::time::Duration;

/// How a node's clock starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockSpec {
    /// Wall time (Unix ms) the node reads when true simulated time is zero.
    pub epoch_ms: i64,
    /// Constant offset added to the wall time, in ms.
    pub offset_ms: i64,
    /// Rate error in parts per million (positive runs fast).
    pub drift_ppm: f64,
}

impl Default for ClockSpec {
    fn default() -> Self {
        ClockSpec {
            // 2024-01-01T00:00:00Z, a fixed epoch for determinism.
            epoch_ms: 1_704_067_200_000,
            offset_ms: 0,
            drift_ppm: 0.0,
        }
    }
}

thread_local! {
    static REAL_START: tokio::time::Instant = tokio::time::Instant::now();
}

/// The true time since the start of the simulation: turmoil's simulated
/// elapsed time inside a simulation, else tokio time since first use on
/// this thread (the real-time server).
pub fn true_elapsed() -> Duration {
    if let Some(d) = turmoil::sim_elapsed() {
        return d;
    }
    REAL_START.with(|start| start.elapsed())
}

/// A node clock's state (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeClock {
    /// True elapsed time (ns) at the last re-base.
    base_elapsed_ns: u128,
    /// Node wall time (ns since the Unix epoch) at the last re-base.
    base_wall_ns: i128,
    drift_ppm: f64,
    last_elapsed: Duration,
}

impl NodeClock {
    /// A clock following `spec`.
    pub fn new(spec: ClockSpec) -> NodeClock {
        NodeClock {
            base_elapsed_ns: 0,
            base_wall_ns: i128::from(spec.epoch_ms + spec.offset_ms) * 1_000_000,
            drift_ppm: spec.drift_ppm,
            last_elapsed: Duration::ZERO,
        }
    }

    fn wall_ns_at(&self, elapsed: Duration) -> i128 {
        let since = elapsed.as_nanos().saturating_sub(self.base_elapsed_ns) as f64;
        self.base_wall_ns + (since * (1.0 + self.drift_ppm / 1e6)).round() as i128
    }

    /// The node's wall time in ms at true elapsed time `elapsed`.
    pub fn wall_ms_at(&self, elapsed: Duration) -> i64 {
        self.wall_ns_at(elapsed).div_euclid(1_000_000) as i64
    }

    /// The node's wall time in microseconds at true elapsed time `elapsed`.
    pub fn wall_us_at(&self, elapsed: Duration) -> i64 {
        self.wall_ns_at(elapsed).div_euclid(1_000) as i64
    }

    /// The node's wall time now, in ms.
    pub fn now_ms(&mut self) -> i64 {
        let e = true_elapsed();
        self.last_elapsed = e;
        self.wall_ms_at(e)
    }

    /// The node's wall time now, in microseconds.
    pub fn now_us(&mut self) -> i64 {
        let e = true_elapsed();
        self.last_elapsed = e;
        self.wall_us_at(e)
    }

    /// Moves the clock by `delta_ms` (negative: backwards), at once.
    pub fn jump(&mut self, delta_ms: i64) {
        self.base_wall_ns += i128::from(delta_ms) * 1_000_000;
    }

    /// Changes the drift from now on (true elapsed time `at`).
    pub fn set_drift_at(&mut self, ppm: f64, at: Duration) {
        self.base_wall_ns = self.wall_ns_at(at);
        self.base_elapsed_ns = at.as_nanos();
        self.drift_ppm = ppm;
    }

    /// Changes the drift from now: the current simulated time if called
    /// inside the simulation, else the last time the node read its clock.
    pub fn set_drift(&mut self, ppm: f64) {
        let at = turmoil::sim_elapsed().unwrap_or(self.last_elapsed);
        self.set_drift_at(ppm, at);
    }

    /// Current drift in ppm.
    pub fn drift_ppm(&self) -> f64 {
        self.drift_ppm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(epoch_ms: i64, offset_ms: i64, drift_ppm: f64) -> NodeClock {
        NodeClock::new(ClockSpec {
            epoch_ms,
            offset_ms,
            drift_ppm,
        })
    }

    #[test]
    fn a_clock_without_drift_reads_epoch_plus_elapsed() {
        let c = clock(1000, 5, 0.0);
        assert_eq!(c.wall_ms_at(Duration::from_millis(250)), 1255);
    }

    #[test]
    fn drift_scales_elapsed_time_and_changes_continuously() {
        let mut c = clock(0, 0, 1000.0);
        assert_eq!(c.wall_ms_at(Duration::from_secs(10)), 10_010);
        c.set_drift_at(0.0, Duration::from_secs(10));
        assert_eq!(c.wall_ms_at(Duration::from_secs(20)), 20_010);
    }

    #[test]
    fn jumps_move_the_clock_both_ways() {
        let mut c = clock(0, 0, 0.0);
        c.jump(5000);
        assert_eq!(c.wall_ms_at(Duration::from_secs(1)), 6000);
        c.jump(-7000);
        assert_eq!(c.wall_ms_at(Duration::from_secs(1)), -1000);
    }
}
