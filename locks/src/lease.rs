//! Who holds a lock, and what they know about it.

use crate::error::LockError;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The identity a lock records as its owner.
///
/// Reentrancy needs to tell "the same owner again" from "someone else", so
/// an owner is a per-client id plus a per-task id, like Redisson's UUID +
/// thread id. Two tasks of one client are different owners.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Owner {
    /// Unique per client process (per connection pool, in Redisson's terms).
    pub client_id: String,
    /// Unique per task (thread) within the client.
    pub task_id: u64,
}

impl Owner {
    /// An owner from its two parts.
    pub fn new(client_id: impl Into<String>, task_id: u64) -> Self {
        Owner {
            client_id: client_id.into(),
            task_id,
        }
    }

    /// The `client:task` string stored as a hash field by the reentrant rungs.
    pub fn field(&self) -> String {
        format!("{}:{}", self.client_id, self.task_id)
    }
}

/// A lock held (in the holder's own view).
#[derive(Debug, Clone)]
pub struct Lease {
    /// The lock's name (its Redis key).
    pub resource: String,
    /// What this acquire stored in the key: a random token, a timestamp
    /// (`set-timestamp`) or `1` (`setnx`). Release compares against it.
    pub token: String,
    /// Who acquired it.
    pub owner: Owner,
    /// The fencing token, on the `fenced` rung.
    pub fence: Option<u64>,
    /// When the acquire started, by the holder's monotonic clock.
    pub acquired_at: Duration,
    /// For rungs that track their own validity (Redlock): how long after
    /// `acquired_at` the lease may still be trusted.
    pub validity: Option<Duration>,
    /// How many times this owner holds it (reentrant rungs count nesting).
    pub depth: u32,
    /// Whether it was granted shared, beside other shared holders (a read
    /// lock); false for an exclusive grant, the only kind most rungs have.
    pub shared: bool,
    /// Set by a watchdog when a renewal failed: the lease is lost.
    pub(crate) lost: Option<Arc<LostFlag>>,
}

impl Lease {
    /// A lease with no validity tracking, fence or watchdog.
    pub fn new(resource: &str, token: String, owner: &Owner, acquired_at: Duration) -> Self {
        Lease {
            resource: resource.to_string(),
            token,
            owner: owner.clone(),
            fence: None,
            acquired_at,
            validity: None,
            depth: 1,
            shared: false,
            lost: None,
        }
    }

    /// Whether a watchdog reported that it could not renew this lease.
    pub fn reported_lost(&self) -> bool {
        self.lost.as_ref().is_some_and(|f| f.is_set())
    }

    /// `LeaseLost`, saying `why`, once the lease's watchdog (or a library's
    /// automatic extension) reported that it lost the lease; else `Ok`.
    pub fn check_not_lost(&self, why: &str) -> Result<(), LockError> {
        if self.reported_lost() {
            return Err(LockError::LeaseLost {
                resource: self.resource.clone(),
                why: why.to_string(),
            });
        }
        Ok(())
    }
}

/// A one-way flag a watchdog raises when it loses the lease.
#[derive(Debug, Default)]
pub struct LostFlag {
    lost: AtomicBool,
    stopped: AtomicBool,
}

impl LostFlag {
    /// Marks the lease lost.
    pub fn set(&self) {
        self.lost.store(true, Ordering::SeqCst);
    }

    /// Whether the lease was lost.
    pub fn is_set(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// Tells the watchdog to stop (the lease is being released).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// Whether the watchdog was told to stop.
    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }
}
