//! The keyspace: keys, values, absolute deadlines, and expiry.
//!
//! Like Redis 7, a deadline is an absolute wall-clock time in ms of the
//! node's own clock, and a key is expired once `now > deadline`. Expiry is
//! lazy (on access) plus an active cycle ([`Keyspace::active_expire`]). A
//! replica hides keys that are expired by its own clock but never deletes
//! them itself: it waits for its master's deletion, as Redis 7 replicas do.
//!
//! Every change is recorded as a [`Change`] so the node can turn the changes
//! of one command (or one whole script) into ground-truth events, into
//! replication effects and into persistence records.

use std::collections::{BTreeMap, BTreeSet};

pub use crate::events::Value;

/// A key's value and deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// Absolute deadline (node wall-clock ms), if the key expires.
    pub deadline: Option<i64>,
}

/// One change to the keyspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Created, overwritten, modified, or its deadline changed.
    Written(Vec<u8>),
    /// Deleted by a command.
    Deleted(Vec<u8>),
    /// Removed because it expired; carries its deadline.
    Expired(Vec<u8>, i64),
}

/// The keyspace of one node (one database).
#[derive(Debug, Default)]
pub struct Keyspace {
    map: BTreeMap<Vec<u8>, Entry>,
    expires: BTreeSet<(i64, Vec<u8>)>,
    /// The time commands are judged against (node wall-clock ms). Frozen for
    /// the length of a command or a whole script, as in Redis 7.
    pub now_ms: i64,
    /// Replica mode: hide expired keys but never delete them.
    pub hide_only: bool,
    changes: Vec<Change>,
    /// Which of the pending changes added their key (absent before), by
    /// index into `changes`: the `new` keyspace event. An index, not a
    /// copy of the key, as every command that creates a key passes here.
    created: Vec<usize>,
    /// How many of `changes` and of `created` keyspace events were already
    /// made from (see [`Keyspace::take_unnoticed`]).
    noticed: (usize, usize),
    /// The node's random draws (`SPOP`, `SRANDMEMBER`, `ZRANDMEMBER`,
    /// `RANDOMKEY`, `HRANDFIELD`).
    pub draws: crate::draws::Draws,
    /// The command running now was called by a script (`SORT` then sorts
    /// a set it would leave unsorted, as Redis does for determinism).
    pub(crate) from_script: bool,
}

impl Keyspace {
    /// An empty keyspace.
    pub fn new() -> Keyspace {
        Keyspace::default()
    }

    /// An empty keyspace whose random draws are seeded from `name` (the
    /// node's name), so a run replays the same picks.
    pub fn seeded(name: &str) -> Keyspace {
        Keyspace {
            draws: crate::draws::Draws::seeded(name),
            ..Keyspace::default()
        }
    }

    fn is_expired(&self, e: &Entry) -> bool {
        matches!(e.deadline, Some(d) if self.now_ms > d)
    }

    /// Expires `key` if it is past its deadline (unless hiding only).
    /// Returns whether the key is (now) logically absent.
    fn expire_if_needed(&mut self, key: &[u8]) -> bool {
        let Some(e) = self.map.get(key) else {
            return true;
        };
        if !self.is_expired(e) {
            return false;
        }
        if self.hide_only {
            return true;
        }
        let d = e.deadline.unwrap_or_default();
        self.map.remove(key);
        self.expires.remove(&(d, key.to_vec()));
        self.changes.push(Change::Expired(key.to_vec(), d));
        true
    }

    /// The live entry of `key`, expiring it first if due.
    pub fn get(&mut self, key: &[u8]) -> Option<&Entry> {
        if self.expire_if_needed(key) {
            return None;
        }
        self.map.get(key)
    }

    /// The live value of `key` for modification. The caller must call
    /// [`Keyspace::mark_written`] after changing it.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        if self.expire_if_needed(key) {
            return None;
        }
        self.map.get_mut(key)
    }

    /// Records that `key` was modified in place.
    pub fn mark_written(&mut self, key: &[u8]) {
        self.changes.push(Change::Written(key.to_vec()));
    }

    /// Records that `key` is gone without touching the map (`SWAPDB`
    /// swaps whole keyspaces, then records what each one lost).
    pub fn record_deleted(&mut self, key: &[u8]) {
        self.changes.push(Change::Deleted(key.to_vec()));
    }

    /// Whether `key` exists (and is not expired).
    pub fn exists(&mut self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Stores `value` under `key` with `deadline`, replacing anything there.
    pub fn set(&mut self, key: &[u8], value: Value, deadline: Option<i64>) {
        // Drop an expired old entry first so its expiry is reported.
        self.expire_if_needed(key);
        if let Some(old) = self.map.get(key)
            && let Some(d) = old.deadline
        {
            self.expires.remove(&(d, key.to_vec()));
        }
        if let Some(d) = deadline {
            self.expires.insert((d, key.to_vec()));
        }
        if self
            .map
            .insert(key.to_vec(), Entry { value, deadline })
            .is_none()
        {
            self.created.push(self.changes.len());
        }
        self.changes.push(Change::Written(key.to_vec()));
    }

    /// Changes the deadline of a live key. Returns false if the key is absent.
    pub fn set_deadline(&mut self, key: &[u8], deadline: Option<i64>) -> bool {
        if self.expire_if_needed(key) {
            return false;
        }
        let Some(e) = self.map.get_mut(key) else {
            return false;
        };
        if let Some(d) = e.deadline {
            self.expires.remove(&(d, key.to_vec()));
        }
        e.deadline = deadline;
        if let Some(d) = deadline {
            self.expires.insert((d, key.to_vec()));
        }
        self.changes.push(Change::Written(key.to_vec()));
        true
    }

    /// Deletes a live key. Returns whether it existed.
    pub fn remove(&mut self, key: &[u8]) -> bool {
        if self.expire_if_needed(key) {
            return false;
        }
        self.remove_raw(key)
    }

    /// Deletes a key whatever its deadline (replication, flush).
    pub fn remove_raw(&mut self, key: &[u8]) -> bool {
        match self.map.remove(key) {
            Some(e) => {
                if let Some(d) = e.deadline {
                    self.expires.remove(&(d, key.to_vec()));
                }
                self.changes.push(Change::Deleted(key.to_vec()));
                true
            }
            None => false,
        }
    }

    /// Stores an entry whatever it holds (replication, restore).
    pub fn put_raw(&mut self, key: &[u8], entry: Entry) {
        if let Some(old) = self.map.get(key)
            && let Some(d) = old.deadline
        {
            self.expires.remove(&(d, key.to_vec()));
        }
        if let Some(d) = entry.deadline {
            self.expires.insert((d, key.to_vec()));
        }
        if self.map.insert(key.to_vec(), entry).is_none() {
            self.created.push(self.changes.len());
        }
        self.changes.push(Change::Written(key.to_vec()));
    }

    /// After a command changed a container in place: deletes the key if
    /// the container is left empty (Redis keeps no empty set, list or
    /// sorted set), or records the write if `changed`.
    pub(crate) fn settle_container(&mut self, key: &[u8], empty: bool, changed: bool) {
        if empty {
            self.remove(key);
        } else if changed {
            self.mark_written(key);
        }
    }

    /// Stores a container built anew (no deadline), or deletes the key
    /// when it is empty (`SINTERSTORE` of nothing).
    pub(crate) fn store_container(&mut self, key: &[u8], value: Value, empty: bool) {
        if empty {
            self.remove(key);
        } else {
            self.set(key, value, None);
        }
    }

    /// Deletes every key.
    pub fn flush(&mut self) {
        let keys: Vec<Vec<u8>> = self.map.keys().cloned().collect();
        for k in keys {
            self.remove_raw(&k);
        }
    }

    /// Number of keys stored, including expired ones not yet reclaimed
    /// (as Redis's DBSIZE).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no key is stored.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Number of keys with a deadline.
    pub fn expires_len(&self) -> usize {
        self.expires.len()
    }

    /// The active expiry cycle: removes up to `limit` keys whose deadline has
    /// passed at `now_ms` (earliest first). Does nothing on a replica.
    pub fn active_expire(&mut self, now_ms: i64, limit: usize) -> usize {
        if self.hide_only {
            return 0;
        }
        let mut n = 0;
        while n < limit {
            let Some((d, _)) = self.expires.first() else {
                break;
            };
            if *d >= now_ms {
                break;
            }
            let (d, key) = self.expires.pop_first().unwrap_or_default();
            self.map.remove(&key);
            self.changes.push(Change::Expired(key, d));
            n += 1;
        }
        n
    }

    /// The raw entry of a key, expired or not (for snapshots and events).
    pub fn peek(&self, key: &[u8]) -> Option<&Entry> {
        self.map.get(key)
    }

    /// All entries, in key order (for snapshots).
    pub fn iter(&self) -> impl Iterator<Item = (&Vec<u8>, &Entry)> {
        self.map.iter()
    }

    /// Takes the changes recorded since the last call.
    pub fn take_changes(&mut self) -> Vec<Change> {
        self.created.clear();
        self.noticed = (0, 0);
        std::mem::take(&mut self.changes)
    }

    /// The changes, and the keys they added, that no keyspace event was
    /// made from yet; marks them noticed. Called after each command (so a
    /// script's or a transaction's events are each command's) and before a
    /// commit (for keys expired between commands).
    pub(crate) fn take_unnoticed(&mut self) -> (Vec<Change>, Vec<Vec<u8>>) {
        let (changes, created) = self.noticed;
        self.noticed = (self.changes.len(), self.created.len());
        let keys = self.created[created..]
            .iter()
            .filter_map(|&i| match &self.changes[i] {
                Change::Written(k) => Some(k.clone()),
                _ => None,
            })
            .collect();
        (self.changes[changes..].to_vec(), keys)
    }

    /// Marks every pending change noticed, making no event (notifications
    /// are off).
    pub(crate) fn skip_unnoticed(&mut self) {
        self.noticed = (self.changes.len(), self.created.len());
    }

    /// The keys not past their deadline, in key order (none is expired
    /// by looking, as Redis's `KEYS` does not).
    pub fn live_keys(&self) -> Vec<Vec<u8>> {
        self.map
            .iter()
            .filter(|(_, e)| !self.is_expired(e))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Whether changes are pending.
    pub fn has_changes(&self) -> bool {
        !self.changes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::Str(v.as_bytes().to_vec())
    }

    #[test]
    fn a_key_is_visible_until_its_deadline_and_gone_after() {
        let mut ks = Keyspace::new();
        ks.now_ms = 1000;
        ks.set(b"k", s("v"), Some(1100));
        ks.now_ms = 1100;
        assert!(ks.exists(b"k"));
        ks.now_ms = 1101;
        assert!(!ks.exists(b"k"));
        assert_eq!(
            ks.take_changes(),
            vec![
                Change::Written(b"k".to_vec()),
                Change::Expired(b"k".to_vec(), 1100)
            ]
        );
    }

    #[test]
    fn a_replica_hides_expired_keys_without_deleting_them() {
        let mut ks = Keyspace::new();
        ks.hide_only = true;
        ks.now_ms = 0;
        ks.put_raw(
            b"k",
            Entry {
                value: s("v"),
                deadline: Some(10),
            },
        );
        ks.now_ms = 11;
        assert!(!ks.exists(b"k"));
        assert_eq!(ks.len(), 1);
        assert_eq!(ks.active_expire(100, 10), 0);
    }

    #[test]
    fn the_active_cycle_removes_due_keys_earliest_first() {
        let mut ks = Keyspace::new();
        ks.set(b"a", s("1"), Some(20));
        ks.set(b"b", s("1"), Some(10));
        ks.set(b"c", s("1"), Some(30));
        ks.take_changes();
        assert_eq!(ks.active_expire(25, 10), 2);
        assert_eq!(
            ks.take_changes(),
            vec![
                Change::Expired(b"b".to_vec(), 10),
                Change::Expired(b"a".to_vec(), 20)
            ]
        );
        assert_eq!(ks.len(), 1);
    }
}
