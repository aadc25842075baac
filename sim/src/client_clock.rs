//! A simulated client's clock: true simulated time, seen through the
//! client's own offset, drift and jumps, and stopped while it is paused.

use crate::freeze::{Freeze, sim_now};
use locks::{BoxFuture, Clock};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Wall time of the simulated world at the start of every run
/// (2026-01-01T00:00:00Z): fixed, so runs replay.
pub const EPOCH_MS: u64 = 1_767_225_600_000;

/// A clock's drift and jumps against true time: the arithmetic of a
/// client's clock, shared with real mode, whose clients read true time
/// from the machine's monotonic clock instead of the simulation.
#[derive(Debug, Default, Clone, Copy)]
pub struct Skew {
    /// Local elapsed µs at the moment the drift last changed.
    base_local_us: i64,
    /// True elapsed µs at that moment.
    base_true_us: i64,
    /// Drift in parts per million (positive: runs fast).
    ppm: i64,
    /// Sum of wall-clock jumps, µs.
    jumps_us: i64,
}

impl Skew {
    /// Local elapsed µs at true time `true_us`, under drift.
    pub fn local_us(&self, true_us: i64) -> i64 {
        let since = true_us - self.base_true_us;
        self.base_local_us + since + since * self.ppm / 1_000_000
    }

    /// Moves the wall clock by `jump_ms` (negative: backwards).
    pub fn jump(&mut self, jump_ms: i64) {
        self.jumps_us += jump_ms * 1_000;
    }

    /// Sets the drift from true time `true_us` on.
    pub fn set_drift(&mut self, true_us: i64, ppm: i64) {
        self.base_local_us = self.local_us(true_us);
        self.base_true_us = true_us;
        self.ppm = ppm;
    }

    /// Wall time in ms at true time `true_us`, for a clock whose wall time
    /// was `epoch_ms` at true time zero.
    pub fn wall_ms(&self, epoch_ms: u64, true_us: i64) -> u64 {
        let local = self.local_us(true_us) + self.jumps_us;
        (epoch_ms as i64 + local.div_euclid(1_000)).max(0) as u64
    }

    /// The monotonic reading at true time `true_us`.
    pub fn monotonic(&self, true_us: i64) -> Duration {
        Duration::from_micros(self.local_us(true_us).max(0) as u64)
    }

    /// How much true time a sleep of `duration` by this clock lasts (a
    /// fast clock's "100 ms" pass in less).
    pub fn true_sleep(&self, duration: Duration) -> Duration {
        let true_us = duration.as_micros() as i64 * 1_000_000 / (1_000_000 + self.ppm).max(1);
        Duration::from_micros(true_us.max(0) as u64)
    }
}

/// The clock of one simulated client.
#[derive(Debug)]
pub struct SimClock {
    rate: Mutex<Skew>,
    freeze: Arc<Freeze>,
}

impl SimClock {
    /// A clock in step with true time, that stops while `freeze` is shut.
    pub fn new(freeze: Arc<Freeze>) -> Self {
        SimClock {
            rate: Mutex::new(Skew::default()),
            freeze,
        }
    }

    fn rate(&self) -> Skew {
        *self.rate.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Moves the wall clock by `jump_ms` (negative: backwards).
    pub fn jump(&self, jump_ms: i64) {
        self.rate
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .jump(jump_ms);
    }

    /// Sets the drift from now on.
    pub fn set_drift(&self, ppm: i64) {
        let now = sim_now().as_micros() as i64;
        self.rate
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .set_drift(now, ppm);
    }
}

impl Clock for SimClock {
    fn wall_ms(&self) -> u64 {
        self.rate().wall_ms(EPOCH_MS, sim_now().as_micros() as i64)
    }

    fn monotonic(&self) -> Duration {
        self.rate().monotonic(sim_now().as_micros() as i64)
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        let true_sleep = self.rate().true_sleep(duration);
        let freeze = self.freeze.clone();
        Box::pin(async move {
            tokio::time::sleep(true_sleep).await;
            freeze.wait().await;
        })
    }
}
