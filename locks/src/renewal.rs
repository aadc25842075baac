//! A watchdog's renewals, shared by every lock that renews its own lease
//! (the `watchdog` rung, and a rung file with a `[renewal]` table): one
//! renewal task per (key, owner mark), joined by nested holds, stopped by
//! the final release, raising the lease's lost flag when a renewal fails.

use crate::clock::Clock;
use crate::error::LockError;
use crate::lease::{Lease, LostFlag};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The most renewals one renewal task makes before it gives up (and marks
/// the lease lost): a bound on its life should a holder never release.
/// With the default 10 s TTL that is about 39 days; with 300 ms, 2.7 hours.
pub const MAX_RENEWALS: u32 = 100_000;

/// One running renewal task, shared by the nested holds of one owner.
struct Renewal {
    flag: Arc<LostFlag>,
    /// Holds handed out by this lock object and not yet released; the
    /// renewal stops when it reaches 0 (Redisson's local thread counter),
    /// so a release that errors still stops renewing.
    holds: u32,
}

/// The renewal tasks of one lock object, by (resource, owner mark).
/// Ordered, never iterated for anything but stopping everything at drop.
#[derive(Default)]
pub(crate) struct Renewals {
    running: Mutex<BTreeMap<(String, String), Renewal>>,
}

impl Renewals {
    fn registry(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), Renewal>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Attaches the renewal to a fresh hold: joins the running one on a
    /// nested hold; on the outermost, calls `start` with a new lost flag
    /// (it spawns the task).
    pub(crate) fn watch(&self, lease: &mut Lease, start: impl FnOnce(Arc<LostFlag>)) {
        let key = (lease.resource.clone(), lease.token.clone());
        let mut registry = self.registry();
        if lease.depth > 1
            && let Some(running) = registry.get_mut(&key)
        {
            running.holds += 1;
            lease.lost = Some(running.flag.clone());
            return;
        }
        // The outermost hold (or a nested one whose renewal this object
        // never started). A leftover task from an earlier hold that was
        // lost without a release is told to stop.
        let flag = Arc::new(LostFlag::default());
        if let Some(old) = registry.insert(
            key,
            Renewal {
                flag: flag.clone(),
                holds: 1,
            },
        ) {
            old.flag.stop();
        }
        drop(registry);
        start(flag.clone());
        lease.lost = Some(flag);
    }

    /// Counts a release down; stops the renewal when no hold is left, or
    /// at once when `gone` (the server no longer has the lock).
    pub(crate) fn unwatch(&self, lease: &Lease, gone: bool) {
        let key = (lease.resource.clone(), lease.token.clone());
        let mut registry = self.registry();
        let Some(running) = registry.get_mut(&key) else {
            return;
        };
        // Only the renewal this lease belongs to; a newer hold has its own.
        let ours = lease
            .lost
            .as_ref()
            .is_some_and(|f| Arc::ptr_eq(f, &running.flag));
        if !ours {
            return;
        }
        running.holds = running.holds.saturating_sub(1);
        if gone || running.holds == 0 {
            running.flag.stop();
            registry.remove(&key);
        }
    }

    /// Stops every renewal: no renewal may outlive the lock object that
    /// started it.
    pub(crate) fn stop_all(&mut self) {
        let registry = self.running.get_mut().unwrap_or_else(|p| p.into_inner());
        for running in registry.values() {
            running.flag.stop();
        }
    }
}

/// The renewal task: every `period`, `renew` once. Stops when told to, and
/// raises the lost flag when a renewal fails or its renewal budget is
/// spent.
pub(crate) async fn renew_loop<F, Fut>(
    clock: Arc<dyn Clock>,
    period: Duration,
    flag: Arc<LostFlag>,
    mut renew: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), LockError>>,
{
    for _ in 0..MAX_RENEWALS {
        clock.sleep(period).await;
        if flag.stopped() {
            return;
        }
        if renew().await.is_err() {
            // A release racing this tick is no loss: it already let go.
            if !flag.stopped() {
                flag.set();
            }
            return;
        }
    }
    flag.set();
}
