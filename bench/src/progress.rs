//! Where a run's progress goes: by default one line per step on standard
//! error (`[mm:ss] what`); a [`ProgressSink`] given in the options (the
//! command line's progress bar) takes the steps instead.

use std::time::Duration;

/// Takes a benchmark run's progress, step by step.
pub trait ProgressSink: Send + Sync + std::fmt::Debug {
    /// One step: `elapsed` since measuring began, of about `planned` in all
    /// (an upper estimate: the pairs stop early once precise); `what` says
    /// what was just measured.
    fn step(&self, elapsed: Duration, planned: Duration, what: &str);
}

/// The line of one step when no sink is given: `[mm:ss] what`.
pub fn line(elapsed: Duration, what: &str) -> String {
    let t = elapsed.as_secs();
    format!("[{:02}:{:02}] {what}", t / 60, t % 60)
}
