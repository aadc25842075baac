//! Time, as a lock sees it.
//!
//! Every rung reads time only through [`Clock`], so the simulator can give a
//! client a clock that is offset, drifts or jumps, and can pause it, while a
//! benchmark gives it the machine's clocks. Two readings matter and they are
//! kept apart on purpose: the *wall* clock (what `set-timestamp` writes into
//! the lock and what a jump moves) and the *monotonic* clock (what Redlock
//! uses to measure how long its acquire took).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// A boxed future that can cross task boundaries.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The clocks and the sleep a lock uses.
pub trait Clock: Send + Sync + 'static {
    /// Wall-clock time in milliseconds since the Unix epoch, as this client
    /// believes it to be (it may be wrong: that is what `set-timestamp` trusts).
    fn wall_ms(&self) -> u64;

    /// Time since an arbitrary fixed origin, never going backwards.
    fn monotonic(&self) -> Duration;

    /// Sleeps for `duration` as measured by this clock.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// The machine's clocks: `SystemTime` for wall time, tokio for the rest.
///
/// Only for real Redis (benchmarks, real-Redis tests): inside the simulator
/// `SystemTime` is real time, not simulated time, and would break replay.
#[derive(Debug, Clone)]
pub struct SystemClock {
    origin: tokio::time::Instant,
}

impl SystemClock {
    /// A clock whose monotonic origin is now.
    pub fn new() -> Self {
        SystemClock {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn wall_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }

    fn monotonic(&self) -> Duration {
        self.origin.elapsed()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}
