//! The interruption flag: set when the user asks a long command to stop
//! (SIGINT or SIGTERM, by a handler the command line installs), read by the
//! simulator between steps and by the loops of `run`, `suite`, `explore`
//! and `tour`, which then keep what is finished and say it is partial.
//!
//! Reading the flag changes nothing in a run that is not interrupted: a
//! history is byte-identical whether or not anyone watches for a signal.
//! The flags are plain statics (no `Arc`), so a signal handler can be
//! given them for the life of the process.

pub use model::interrupt::Cause;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Set once a stop was asked for; never cleared.
static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Which [`Cause`] asked, as its [`Cause::code`]; 0 when none did.
static CAUSE: AtomicUsize = AtomicUsize::new(0);

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
