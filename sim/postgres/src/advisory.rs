//! Advisory locks as PostgreSQL's lock manager keeps them: exclusive, held
//! per backend with separate session-level and transaction-level counts
//! (both re-entrant), and a FIFO queue of waiters per key. A release that
//! frees a key grants it straight to the first waiter, as PostgreSQL's
//! `ProcLockWakeup` does, so a `pg_try_advisory_lock` can never jump a
//! queue that is already waiting.

use std::collections::{BTreeMap, VecDeque};

use crate::core::Pid;

/// An advisory lock's key: one `bigint`, or the two-`integer` form (a
/// separate key space in PostgreSQL, as here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AdvisoryKey {
    /// `pg_advisory_lock(bigint)`
    Big(i64),
    /// `pg_advisory_lock(integer, integer)`
    Pair(i32, i32),
}

/// How a lock is held: for the session, or until the transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Until unlocked or the session ends.
    Session,
    /// Until the transaction ends.
    Transaction,
}

#[derive(Debug, Clone, Copy)]
struct Holder {
    pid: Pid,
    session_count: u32,
    xact_count: u32,
}

/// The lock table.
#[derive(Debug, Default)]
pub(crate) struct AdvisoryLocks {
    held: BTreeMap<AdvisoryKey, Holder>,
    waiting: BTreeMap<AdvisoryKey, VecDeque<(Pid, Scope)>>,
}

/// What a lock attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// Held now; `first` when this backend did not hold it before.
    Granted {
        /// Whether the backend newly holds the key.
        first: bool,
    },
    /// Held by another backend.
    Busy,
}

impl AdvisoryLocks {
    /// Takes `key` for `pid` if it is free or already `pid`'s and nobody
    /// waits ahead.
    pub(crate) fn try_lock(&mut self, key: AdvisoryKey, pid: Pid, scope: Scope) -> Attempt {
        match self.held.get_mut(&key) {
            Some(h) if h.pid == pid => {
                bump(h, scope);
                Attempt::Granted { first: false }
            }
            Some(_) => Attempt::Busy,
            None => {
                let mut h = Holder {
                    pid,
                    session_count: 0,
                    xact_count: 0,
                };
                bump(&mut h, scope);
                self.held.insert(key, h);
                Attempt::Granted { first: true }
            }
        }
    }

    /// Queues `pid` for `key` (once).
    pub(crate) fn enqueue(&mut self, key: AdvisoryKey, pid: Pid, scope: Scope) {
        let queue = self.waiting.entry(key).or_default();
        if !queue.iter().any(|(p, _)| *p == pid) {
            queue.push_back((pid, scope));
        }
    }

    /// Whether `pid` is still queued for `key`.
    pub(crate) fn is_waiting(&self, key: AdvisoryKey, pid: Pid) -> bool {
        self.waiting
            .get(&key)
            .is_some_and(|q| q.iter().any(|(p, _)| *p == pid))
    }

    /// Drops `pid` from every queue (its session ended).
    pub(crate) fn forget_waiter(&mut self, pid: Pid) {
        for queue in self.waiting.values_mut() {
            queue.retain(|(p, _)| *p != pid);
        }
        self.waiting.retain(|_, q| !q.is_empty());
    }

    /// Releases one session-level hold of `key` by `pid`; `None` when it
    /// held none (PostgreSQL's warning), else the keys' new owners: the
    /// key's next holder if it was freed.
    pub(crate) fn unlock(&mut self, key: AdvisoryKey, pid: Pid) -> Option<Released> {
        let h = self.held.get_mut(&key).filter(|h| h.pid == pid)?;
        if h.session_count == 0 {
            return None;
        }
        h.session_count -= 1;
        Some(self.settle(key))
    }

    /// Releases every hold of `scope` by `pid` (all session locks at
    /// `pg_advisory_unlock_all` or session end; all transaction locks at
    /// transaction end).
    pub(crate) fn release_all(&mut self, pid: Pid, scope: Scope) -> Vec<(AdvisoryKey, Released)> {
        let keys: Vec<AdvisoryKey> = self
            .held
            .iter()
            .filter(|(_, h)| h.pid == pid)
            .map(|(k, _)| *k)
            .collect();
        let mut out = Vec::new();
        for key in keys {
            if let Some(h) = self.held.get_mut(&key) {
                match scope {
                    Scope::Session => h.session_count = 0,
                    Scope::Transaction => h.xact_count = 0,
                }
            }
            let released = self.settle(key);
            if released.freed {
                out.push((key, released));
            }
        }
        out
    }

    /// After a count fell: frees the key if nothing holds it and hands it
    /// to the first waiter.
    fn settle(&mut self, key: AdvisoryKey) -> Released {
        let Some(h) = self.held.get(&key) else {
            return Released::default();
        };
        if h.session_count + h.xact_count > 0 {
            return Released::default();
        }
        self.held.remove(&key);
        let mut next = None;
        if let Some(queue) = self.waiting.get_mut(&key)
            && let Some((pid, scope)) = queue.pop_front()
        {
            let mut h = Holder {
                pid,
                session_count: 0,
                xact_count: 0,
            };
            bump(&mut h, scope);
            self.held.insert(key, h);
            next = Some((pid, scope));
        }
        self.waiting.retain(|_, q| !q.is_empty());
        Released { freed: true, next }
    }

    /// Who holds `key`.
    pub(crate) fn holder(&self, key: AdvisoryKey) -> Option<Pid> {
        self.held.get(&key).map(|h| h.pid)
    }

    /// The key `pid` waits for, if any.
    pub(crate) fn waiting_for(&self, pid: Pid) -> Option<AdvisoryKey> {
        self.waiting
            .iter()
            .find(|(_, q)| q.iter().any(|(p, _)| *p == pid))
            .map(|(k, _)| *k)
    }

    /// The backend to abort if `pid`, now queued for `key`, closed a
    /// cycle of waits: the one whose lock it waits for, which has waited
    /// longer (PostgreSQL's deadlock check runs in the backend that has
    /// waited `deadlock_timeout` first).
    pub(crate) fn deadlock_victim(&self, key: AdvisoryKey, pid: Pid) -> Option<Pid> {
        let first = self.holder(key)?;
        let mut p = first;
        // Every backend in the cycle waits for one key: at most one step
        // per queued backend.
        for _ in 0..=self.waiting.values().map(VecDeque::len).sum::<usize>() {
            let next = self.holder(self.waiting_for(p)?)?;
            if next == pid {
                return Some(first);
            }
            p = next;
        }
        None
    }

    /// Every key and its holder, in key order.
    pub(crate) fn held(&self) -> Vec<(AdvisoryKey, Pid)> {
        self.held.iter().map(|(k, h)| (*k, h.pid)).collect()
    }
}

/// What a release did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Released {
    /// The releasing backend no longer holds the key.
    pub(crate) freed: bool,
    /// The waiter it was handed to, and how that waiter asked for it.
    pub(crate) next: Option<(Pid, Scope)>,
}

fn bump(h: &mut Holder, scope: Scope) {
    match scope {
        Scope::Session => h.session_count += 1,
        Scope::Transaction => h.xact_count += 1,
    }
}
