//! The interruption flag: set when the user asks a long command to stop
//! (SIGINT or SIGTERM, by a handler the command line installs), read by the
//! simulator between steps and by the loops of `run`, `suite`, `explore`
//! and `tour`, which then keep what is finished and say it is partial.
//!
//! Reading the flag changes nothing in a run that is not interrupted: a
//! history is byte-identical whether or not anyone watches for a signal.
//! The flags are plain statics (no `Arc`), so a signal handler can be
//! given them for the life of the process.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Set once a stop was asked for; never cleared.
static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Which [`Cause`] asked, as its [`Cause::code`]; 0 when none did.
static CAUSE: AtomicUsize = AtomicUsize::new(0);

/// What asked a command to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, schemars::JsonSchema)]
pub enum Cause {
    /// SIGINT: Ctrl-C at a terminal.
    #[serde(rename = "SIGINT")]
    Sigint,
    /// SIGTERM: `kill`, a job scheduler or a container runtime stopping it.
    #[serde(rename = "SIGTERM")]
    Sigterm,
}

impl Cause {
    /// The value stored in the cause flag (never 0, which means none).
    pub const fn code(self) -> usize {
        match self {
            Cause::Sigint => 1,
            Cause::Sigterm => 2,
        }
    }

    /// The signal's usual name, for messages and reports.
    pub const fn name(self) -> &'static str {
        match self {
            Cause::Sigint => "SIGINT",
            Cause::Sigterm => "SIGTERM",
        }
    }

    fn from_code(code: usize) -> Option<Cause> {
        [Cause::Sigint, Cause::Sigterm]
            .into_iter()
            .find(|c| c.code() == code)
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a stop was asked for. Cheap (one atomic load): the simulator
/// reads it before every step.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// What asked for the stop, if anything did. A stop asked for without a
/// known cause reads as SIGINT.
pub fn cause() -> Option<Cause> {
    requested().then(|| Cause::from_code(CAUSE.load(Ordering::SeqCst)).unwrap_or(Cause::Sigint))
}

/// Asks every long loop of this process to stop, as a signal would.
pub fn request(cause: Cause) {
    CAUSE.store(cause.code(), Ordering::SeqCst);
    REQUESTED.store(true, Ordering::SeqCst);
}

/// The flag a signal handler sets; see [`requested`].
pub fn requested_flag() -> &'static AtomicBool {
    &REQUESTED
}

/// The flag a signal handler stores its [`Cause::code`] in, before it sets
/// [`requested_flag`].
pub fn cause_flag() -> &'static AtomicUsize {
    &CAUSE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_round_trip_through_their_codes_and_none_is_zero() {
        for cause in [Cause::Sigint, Cause::Sigterm] {
            assert_ne!(cause.code(), 0);
            assert_eq!(Cause::from_code(cause.code()), Some(cause));
        }
        assert_eq!(Cause::from_code(0), None);
        assert_eq!(Cause::Sigterm.to_string(), "SIGTERM");
    }
}
