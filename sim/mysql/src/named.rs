//! Named (user-level) locks, as MariaDB 10.11 keeps them: exclusive,
//! re-entrant with a count per holder (since MySQL 5.7 and MariaDB
//! 10.0.2 a session may hold many, and the same one many times), owned by
//! a session rather than a transaction, so COMMIT and ROLLBACK leave them
//! alone and only RELEASE_LOCK, RELEASE_ALL_LOCKS() or the session's end
//! let them go.
//!
//! Waiting is the caller's: `NamedLocks::get` says whether the lock is
//! free to take, and a waiting GET_LOCK asks again after every change.
//! Waiters are therefore not queued: whichever asks first after a release
//! wins, as with any set of sessions polling.

use std::collections::BTreeMap;

use crate::change::{Change, ReleaseReason};
use crate::core::ConnId;

/// A held lock: its holder and how many times it took it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hold {
    holder: ConnId,
    count: u32,
}

/// Every named lock held, by name.
#[derive(Debug, Clone, Default)]
pub(crate) struct NamedLocks {
    held: BTreeMap<String, Hold>,
}

impl NamedLocks {
    /// Takes `name` for `id` if no one else holds it (one more level if
    /// `id` does); false if another session holds it. A first grant is
    /// reported in `changes`.
    pub(crate) fn get(&mut self, name: &str, id: ConnId, changes: &mut Vec<Change>) -> bool {
        match self.held.get_mut(name) {
            Some(h) if h.holder == id => {
                h.count = h.count.saturating_add(1);
                true
            }
            Some(_) => false,
            None => {
                self.held.insert(
                    name.to_owned(),
                    Hold {
                        holder: id,
                        count: 1,
                    },
                );
                changes.push(Change::LockGranted {
                    name: name.to_owned(),
                    id,
                });
                true
            }
        }
    }

    /// RELEASE_LOCK: `Some(true)` if `id` held `name` (one level let go),
    /// `Some(false)` if another session holds it, `None` if no one does.
    pub(crate) fn release(
        &mut self,
        name: &str,
        id: ConnId,
        changes: &mut Vec<Change>,
    ) -> Option<bool> {
        let h = self.held.get_mut(name)?;
        if h.holder != id {
            return Some(false);
        }
        h.count -= 1;
        if h.count == 0 {
            self.held.remove(name);
            changes.push(Change::LockReleased {
                name: name.to_owned(),
                id,
                why: ReleaseReason::ReleaseLock,
            });
        }
        Some(true)
    }

    /// Lets go every lock `id` holds; the number of levels released, as
    /// RELEASE_ALL_LOCKS() answers.
    pub(crate) fn release_all(
        &mut self,
        id: ConnId,
        why: ReleaseReason,
        changes: &mut Vec<Change>,
    ) -> i64 {
        let mut levels = 0;
        self.held.retain(|name, h| {
            if h.holder != id {
                return true;
            }
            levels += i64::from(h.count);
            changes.push(Change::LockReleased {
                name: name.clone(),
                id,
                why,
            });
            false
        });
        levels
    }

    /// The holder of `name`, if any (IS_USED_LOCK).
    pub(crate) fn holder(&self, name: &str) -> Option<ConnId> {
        self.held.get(name).map(|h| h.holder)
    }

    /// Every lock held and its holder, in name order.
    pub(crate) fn held(&self) -> Vec<(String, ConnId)> {
        self.held
            .iter()
            .map(|(n, h)| (n.clone(), h.holder))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_taken_twice_needs_two_releases_and_reports_one_grant_and_one_release() {
        let mut locks = NamedLocks::default();
        let mut changes = Vec::new();
        assert!(locks.get("a", 1, &mut changes));
        assert!(locks.get("a", 1, &mut changes));
        assert!(!locks.get("a", 2, &mut changes));
        assert_eq!(locks.release("a", 2, &mut changes), Some(false));
        assert_eq!(locks.release("a", 1, &mut changes), Some(true));
        assert_eq!(locks.holder("a"), Some(1));
        assert_eq!(locks.release("a", 1, &mut changes), Some(true));
        assert_eq!(locks.release("a", 1, &mut changes), None);
        assert_eq!(changes.len(), 2);
    }

    #[test]
    fn release_all_counts_levels() {
        let mut locks = NamedLocks::default();
        let mut changes = Vec::new();
        locks.get("a", 1, &mut changes);
        locks.get("a", 1, &mut changes);
        locks.get("b", 1, &mut changes);
        locks.get("c", 2, &mut changes);
        assert_eq!(
            locks.release_all(1, ReleaseReason::ReleaseAll, &mut changes),
            3
        );
        assert_eq!(locks.held(), [("c".to_owned(), 2)]);
    }
}
