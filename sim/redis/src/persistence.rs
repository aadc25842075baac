//! Persistence: the node's "disk", which outlives the node's process.
//!
//! The disk lives in the [`crate::NodeHandle`] (outside the turmoil host),
//! so a restarted host finds what the crashed one left. It holds the latest
//! durable state of each key (what an AOF replay would rebuild) plus the
//! records written but not yet fsynced (the OS page cache).
//!
//! * [`Persistence::None`]: nothing is kept; a restart comes back empty.
//! * [`Persistence::AofAlways`]: every write is durable before its reply.
//! * [`Persistence::AofEverysec`]: writes reach the page cache before their
//!   reply (as Redis writes the AOF buffer before answering) and are fsynced
//!   once a second. A process kill keeps the page cache (so no acknowledged
//!   write is lost); a power loss drops it (up to about a second of writes).

use std::collections::BTreeMap;

use crate::keyspace::Entry;

/// How a node persists its writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Persistence {
    /// No persistence: a restart comes back empty.
    #[default]
    None,
    /// `appendfsync always`.
    AofAlways,
    /// `appendfsync everysec`.
    AofEverysec,
}

/// How the node's process is about to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CrashKind {
    /// The process dies; the machine (and its page cache) survives.
    #[default]
    ProcessKill,
    /// The machine loses power: unsynced writes are gone.
    PowerLoss,
}

/// The new state of one key: `None` means deleted.
pub type KeyState = (Vec<u8>, Option<Entry>);

/// The new state of one key of one database (its index first).
pub type DbKeyState = (usize, KeyState);

/// A node's disk: every database's keys, by database index and key.
#[derive(Debug, Default, Clone)]
pub struct Disk {
    durable: BTreeMap<(usize, Vec<u8>), Entry>,
    page_cache: Vec<DbKeyState>,
    next_crash: CrashKind,
    /// The function libraries (a `FUNCTION DUMP` payload) made durable,
    /// and the last ones written but not yet synced (`aof-everysec`).
    durable_functions: Option<Vec<u8>>,
    cached_functions: Option<Vec<u8>>,
}

impl Disk {
    /// Records the effects of one command under `mode`.
    pub fn write(&mut self, mode: Persistence, effects: &[DbKeyState]) {
        match mode {
            Persistence::None => {}
            Persistence::AofAlways => {
                for (db, (k, e)) in effects {
                    apply(&mut self.durable, *db, k, e.clone());
                }
            }
            Persistence::AofEverysec => self.page_cache.extend(effects.iter().cloned()),
        }
    }

    /// Records the function libraries after a change (`FUNCTION LOAD`...),
    /// as a whole, under `mode`: Redis persists functions, not scripts.
    pub fn write_functions(&mut self, mode: Persistence, payload: Vec<u8>) {
        match mode {
            Persistence::None => {}
            Persistence::AofAlways => self.durable_functions = Some(payload),
            Persistence::AofEverysec => self.cached_functions = Some(payload),
        }
    }

    /// The function libraries that survived (call after [`Disk::recover`]).
    pub fn functions(&self) -> Option<Vec<u8>> {
        self.durable_functions.clone()
    }

    /// fsync: makes the page cache durable.
    pub fn fsync(&mut self) {
        if let Some(f) = self.cached_functions.take() {
            self.durable_functions = Some(f);
        }
        for (db, (k, e)) in std::mem::take(&mut self.page_cache) {
            apply(&mut self.durable, db, &k, e);
        }
    }

    /// Declares how the coming crash happens.
    pub fn set_crash_kind(&mut self, kind: CrashKind) {
        self.next_crash = kind;
    }

    /// At start-up: settles the last crash and returns what survives,
    /// each key with its database index.
    pub fn recover(&mut self, mode: Persistence) -> Vec<(usize, Vec<u8>, Entry)> {
        if mode == Persistence::None {
            self.durable.clear();
            self.page_cache.clear();
            self.durable_functions = None;
            self.cached_functions = None;
            return Vec::new();
        }
        match std::mem::take(&mut self.next_crash) {
            CrashKind::ProcessKill => self.fsync(),
            CrashKind::PowerLoss => {
                self.page_cache.clear();
                self.cached_functions = None;
            }
        }
        self.durable
            .iter()
            .map(|((db, k), e)| (*db, k.clone(), e.clone()))
            .collect()
    }
}

fn apply(map: &mut BTreeMap<(usize, Vec<u8>), Entry>, db: usize, k: &[u8], e: Option<Entry>) {
    match e {
        Some(e) => {
            map.insert((db, k.to_vec()), e);
        }
        None => {
            map.remove(&(db, k.to_vec()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::Value;

    fn st(k: &str) -> DbKeyState {
        (
            0,
            (
                k.as_bytes().to_vec(),
                Some(Entry {
                    value: Value::Str(b"v".to_vec()),
                    deadline: None,
                }),
            ),
        )
    }

    #[test]
    fn everysec_keeps_unsynced_writes_after_a_process_kill_but_not_a_power_loss() {
        let mut d = Disk::default();
        d.write(Persistence::AofEverysec, &[st("a")]);
        d.fsync();
        d.write(Persistence::AofEverysec, &[st("b")]);
        let mut d2 = d.clone();
        assert_eq!(d.recover(Persistence::AofEverysec).len(), 2);
        d2.set_crash_kind(CrashKind::PowerLoss);
        assert_eq!(d2.recover(Persistence::AofEverysec).len(), 1);
    }

    #[test]
    fn the_same_key_in_two_databases_is_kept_twice() {
        let mut d = Disk::default();
        let (_, s) = st("k");
        d.write(Persistence::AofAlways, &[(0, s.clone()), (3, s)]);
        let back = d.recover(Persistence::AofAlways);
        assert_eq!(back.iter().map(|(db, ..)| *db).collect::<Vec<_>>(), [0, 3]);
    }

    #[test]
    fn always_makes_every_write_durable_and_none_keeps_nothing() {
        let mut d = Disk::default();
        d.write(Persistence::AofAlways, &[st("a")]);
        d.set_crash_kind(CrashKind::PowerLoss);
        assert_eq!(d.recover(Persistence::AofAlways).len(), 1);
        assert_eq!(d.recover(Persistence::None).len(), 0);
    }
}
