//! A simulated client's clock: true simulated time, seen through the
//! client's own offset, drift and jumps, and stopped while it is paused.

use crate::freeze::{Freeze, sim_now};
use locks::{BoxFuture, Clock};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Wall time of the simulated world at the start of every run
/// (2026-01-01T00:00:00Z): fixed, so runs replay.
pub const EPOCH_MS: u64 = 1_767_225_600_000;

#[derive(Debug, Default, Clone, Copy)]
struct Rate {
    /// Local elapsed µs at the moment the drift last changed.
    base_local_us: i64,
    /// True elapsed µs at that moment.
    base_true_us: i64,
    /// Drift in parts per million (positive: runs fast).
    ppm: i64,
    /// Sum of wall-clock jumps, µs.
    jumps_us: i64,
}

/// The clock of one simulated client.
#[derive(Debug)]
pub struct SimClock {
    rate: Mutex<Rate>,
    freeze: Arc<Freeze>,
}

impl SimClock {
    /// A clock in step with true time, that stops while `freeze` is shut.
    pub fn new(freeze: Arc<Freeze>) -> Self {
        SimClock {
            rate: Mutex::new(Rate::default()),
            freeze,
        }
    }

    fn rate(&self) -> Rate {
        *self.rate.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Local elapsed µs at true time `true_us`, under drift.
    fn local_us(rate: &Rate, true_us: i64) -> i64 {
        let since = true_us - rate.base_true_us;
        rate.base_local_us + since + since * rate.ppm / 1_000_000
    }

    /// Moves the wall clock by `jump_ms` (negative: backwards).
    pub fn jump(&self, jump_ms: i64) {
        self.rate.lock().unwrap_or_else(|p| p.into_inner()).jumps_us += jump_ms * 1_000;
    }

    /// Sets the drift from now on.
    pub fn set_drift(&self, ppm: i64) {
        let now = sim_now().as_micros() as i64;
        let mut rate = self.rate.lock().unwrap_or_else(|p| p.into_inner());
        rate.base_local_us = Self::local_us(&rate, now);
        rate.base_true_us = now;
        rate.ppm = ppm;
    }
}

impl Clock for SimClock {
    fn wall_ms(&self) -> u64 {
        let rate = self.rate();
        let local = Self::local_us(&rate, sim_now().as_micros() as i64) + rate.jumps_us;
        (EPOCH_MS as i64 + local.div_euclid(1_000)).max(0) as u64
    }

    fn monotonic(&self) -> Duration {
        let rate = self.rate();
        Duration::from_micros(Self::local_us(&rate, sim_now().as_micros() as i64).max(0) as u64)
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        let ppm = self.rate().ppm;
        // A fast clock's "100 ms" pass in less true time.
        let true_us = duration.as_micros() as i64 * 1_000_000 / (1_000_000 + ppm).max(1);
        let freeze = self.freeze.clone();
        Box::pin(async move {
            tokio::time::sleep(Duration::from_micros(true_us.max(0) as u64)).await;
            freeze.wait().await;
        })
    }
}
