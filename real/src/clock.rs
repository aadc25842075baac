//! A real-mode client's clock: the run's true time (the machine's
//! monotonic clock since the run's origin, shared by every client and the
//! driver) seen through the client's own drift and jumps, with the same
//! arithmetic as the simulator's clients ([`sim::client_clock::Skew`]).
//!
//! Its wall time starts from the machine's wall clock at the run's origin;
//! a jump moves only the wall time (what `set-timestamp` writes and
//! compares), as in the simulator. A pause needs nothing here: a paused
//! client's whole thread stands still ([`crate::client`]), and its clock
//! reads true time when it resumes, as after a real stop-the-world pause.

use locks::{BoxFuture, Clock};
use sim::client_clock::Skew;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The clock of one real-mode client.
#[derive(Debug)]
pub struct RealClock {
    origin: Instant,
    origin_wall_ms: u64,
    skew: Mutex<Skew>,
}

impl RealClock {
    /// A clock in step with the run's true time, which counts from
    /// `origin`, when the machine's wall clock read `origin_wall_ms`.
    pub fn new(origin: Instant, origin_wall_ms: u64) -> Self {
        RealClock {
            origin,
            origin_wall_ms,
            skew: Mutex::new(Skew::default()),
        }
    }

    fn true_us(&self) -> i64 {
        self.origin.elapsed().as_micros() as i64
    }

    fn skew(&self) -> Skew {
        *self.skew.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Moves the wall clock by `jump_ms` (negative: backwards).
    pub fn jump(&self, jump_ms: i64) {
        self.skew
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .jump(jump_ms);
    }

    /// Sets the drift from now on.
    pub fn set_drift(&self, ppm: i64) {
        let now = self.true_us();
        self.skew
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .set_drift(now, ppm);
    }
}

impl Clock for RealClock {
    fn wall_ms(&self) -> u64 {
        self.skew().wall_ms(self.origin_wall_ms, self.true_us())
    }

    fn monotonic(&self) -> Duration {
        self.skew().monotonic(self.true_us())
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(self.skew().true_sleep(duration)))
    }
}

/// The machine's wall clock now, ms since the Unix epoch.
pub fn machine_wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jump_moves_the_wall_clock_and_not_the_monotonic_one() {
        let clock = RealClock::new(Instant::now(), 1_000_000);
        let before = clock.monotonic();
        clock.jump(5_000);
        assert!(clock.wall_ms() >= 1_005_000);
        assert!(clock.monotonic() - before < Duration::from_millis(100));
    }

    #[test]
    fn a_fast_clock_sleeps_less_true_time() {
        let clock = RealClock::new(Instant::now(), 0);
        clock.set_drift(1_000_000);
        assert_eq!(
            clock.skew().true_sleep(Duration::from_millis(100)),
            Duration::from_millis(50)
        );
    }
}
