//! What the multi-node library rungs share besides their
//! [`Masters`](crate::rungs::masters::Masters): counting a round's votes,
//! and the automatic extension that node-redlock's and rslock's `using()`
//! run beside the caller's routine.

use crate::clock::Clock;
use crate::error::LockError;
use crate::lease::LostFlag;
pub use crate::rungs::masters::Masters;
use crate::rungs::watchdog::MAX_RENEWALS;
use std::sync::Arc;
use std::time::Duration;

/// How many replies of a round are `Ok(true)`.
pub(crate) fn votes(replies: &[Result<bool, LockError>]) -> usize {
    replies.iter().filter(|r| matches!(r, Ok(true))).count()
}

/// One automatic extension of a held lock, as a library's `using()` runs
/// it beside the caller's routine.
pub(crate) trait Extension: Send + 'static {
    /// How long after `now` (the holder's monotonic clock) the next
    /// extension is due.
    fn due_in(&self, now: Duration) -> Duration;

    /// Extends the lock once; `Err` when the library gives the lock up.
    fn extend(&mut self) -> impl Future<Output = Result<(), LockError>> + Send;

    /// What the library does once an extension failed, before the routine
    /// is told (rslock releases the lock everywhere); nothing by default.
    fn after_failure(&mut self) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// Runs `extension` until the lease's flag says stop (the release) or an
/// extension fails; then it raises the lost flag, which the holder's check
/// before each write reads (node-redlock's aborted signal, rslock's
/// cancelled routine). The task sleeps on the client's clock, so a paused
/// client's extensions pause with it.
pub(crate) fn spawn_extension<E: Extension>(
    mut extension: E,
    clock: Arc<dyn Clock>,
    flag: Arc<LostFlag>,
) {
    tokio::spawn(async move {
        for _ in 0..MAX_RENEWALS {
            let pause = extension.due_in(clock.monotonic());
            clock.sleep(pause).await;
            if flag.stopped() {
                return;
            }
            if extension.extend().await.is_err() {
                if !flag.stopped() {
                    extension.after_failure().await;
                    flag.set();
                }
                return;
            }
        }
        flag.set();
    });
}

/// Stops a lease's automatic extension (its release is under way).
pub(crate) fn stop_extension(lease: &crate::Lease) {
    if let Some(flag) = &lease.lost {
        flag.stop();
    }
}
