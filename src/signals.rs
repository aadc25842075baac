//! SIGINT and SIGTERM for the long commands (`run`, `suite`, `explore`,
//! `tour`): the first sets [`sim::interrupt`]'s flag, which the simulator
//! reads between steps and the commands' loops before each run, so they
//! stop within a step, keep what is finished and exit 130; a second one
//! ends the process at once, also with 130.
//!
//! Installed only for those commands: `bench` and `sim-server` wait for
//! Ctrl-C themselves (tokio's `ctrl_c`), and `replay`, `ladder` keep the
//! default, which ends the process.

use signal_hook::consts::{SIGINT, SIGTERM};
use sim::exit::ExitCode;
use sim::interrupt::{self, Cause};

/// Installs the handlers. Must run before any work starts; a failure
/// leaves the default (the process ends at the signal) and is returned.
pub fn install() -> std::io::Result<()> {
    let requested = interrupt::requested_flag();
    let status = i32::from(ExitCode::Interrupted.code());
    for (signal, cause) in [(SIGINT, Cause::Sigint), (SIGTERM, Cause::Sigterm)] {
        // Registered first, so it runs first: it ends the process only
        // when an earlier signal already set the flag, i.e. on the second.
        signal_hook::flag::register_conditional_shutdown(signal, status, requested)?;
        // The cause before the flag: whoever sees the flag sees the cause.
        signal_hook::flag::register_usize(signal, interrupt::cause_flag(), cause.code())?;
        signal_hook::flag::register(signal, requested)?;
    }
    Ok(())
}
