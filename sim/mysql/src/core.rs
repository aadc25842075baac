//! The server's state: tables, named locks, row locks and the sessions,
//! all under one lock. A statement runs whole under it (`exec.rs`)
//! against a copy it can throw away: if it finds a lock another session
//! holds, or fails, the copy goes and nothing it did is seen; otherwise
//! its changes go to the observers. Every change wakes the waiting
//! statements, which try again.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::change::{Change, ReleaseReason, RowChange};
use crate::named::NamedLocks;
use crate::table::{RowId, Table, WriteSet};
use crate::value::Value;

/// A connection id, as `CONNECTION_ID()` and `IS_USED_LOCK` give it.
pub type ConnId = u32;

/// The first connection id: the server counts up from it, so a run's ids
/// are the same every time.
const FIRST_ID: ConnId = 4;

/// Server settings.
#[derive(Clone)]
pub struct Config {
    /// The wall clock `NOW()` reads, in ms since the Unix epoch.
    pub wall_clock_ms: Arc<dyn Fn() -> i64 + Send + Sync>,
    /// The version the handshake announces; `5.5.5-` first, as MariaDB
    /// does so that old clients accept it.
    pub server_version: String,
    /// The seed of the handshake's scramble, which is derived from it and
    /// the connection id: the same seed sends the same bytes.
    pub scramble_seed: u64,
}

impl Config {
    /// A MariaDB 10.11.19 (Debian 12's) reading `NOW()` from
    /// `wall_clock_ms`.
    pub fn new(wall_clock_ms: Arc<dyn Fn() -> i64 + Send + Sync>) -> Config {
        Config {
            wall_clock_ms,
            server_version: "5.5.5-10.11.19-MariaDB-0+deb12u1".into(),
            scramble_seed: 0,
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("server_version", &self.server_version)
            .finish_non_exhaustive()
    }
}

/// A session: one per connection.
#[derive(Debug, Clone, Default)]
pub(crate) struct Session {
    /// The current database (`USE`, or the one connected with).
    pub(crate) database: Option<String>,
    /// The open transaction's writes; `None` outside a transaction.
    pub(crate) txn: Option<WriteSet>,
}

/// What a statement may change: copied before it runs, put back if it
/// blocks or fails.
#[derive(Debug, Clone, Default)]
pub(crate) struct Db {
    pub(crate) tables: BTreeMap<String, Table>,
    pub(crate) next_row: RowId,
    pub(crate) named: NamedLocks,
    /// Row locks (FOR UPDATE, UPDATE, DELETE, INSERT) held until their
    /// transaction ends.
    pub(crate) row_locks: BTreeMap<(String, RowId), ConnId>,
    pub(crate) sessions: BTreeMap<ConnId, Session>,
    /// Changes made, not yet reported.
    pub(crate) changes: Vec<Change>,
}

type Observer = Arc<dyn Fn(&Change) + Send + Sync>;

pub(crate) struct State {
    pub(crate) config: Config,
    pub(crate) db: Db,
    next_id: ConnId,
    observers: Vec<Observer>,
}

/// The server: its tables, locks and sessions. Clone = same server.
/// Outlives its host's crashes; a restart ([`crate::serve_sim`] again)
/// keeps the committed rows and loses every session with its locks.
#[derive(Clone)]
pub struct Server {
    state: Arc<Mutex<State>>,
    /// Wakes waiting statements after every change that could unblock one.
    pub(crate) changed: Arc<Notify>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Server")
            .field("sessions", &state.db.sessions.len())
            .field("tables", &state.db.tables.len())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A fresh server: no tables, no sessions.
    pub fn new(config: Config) -> Server {
        Server {
            changed: Arc::new(Notify::new()),
            state: Arc::new(Mutex::new(State {
                config,
                db: Db {
                    next_row: 1,
                    ..Db::default()
                },
                next_id: FIRST_ID,
                observers: Vec::new(),
            })),
        }
    }

    /// Calls `observer` with every [`Change`], under the server's lock (it
    /// must not call back into the server).
    pub fn observe(&self, observer: Arc<dyn Fn(&Change) + Send + Sync>) {
        self.lock().observers.push(observer);
    }

    /// The connection ids of the live sessions.
    pub fn session_ids(&self) -> Vec<ConnId> {
        self.lock().db.sessions.keys().copied().collect()
    }

    /// Every named lock held and its holder, in name order.
    pub fn named_locks(&self) -> Vec<(String, ConnId)> {
        self.lock().db.named.held()
    }

    /// The committed rows of `table`, in insertion order.
    pub fn committed_rows(&self, table: &str) -> Option<Vec<Vec<Value>>> {
        let state = self.lock();
        let t = state.db.tables.get(table)?;
        Some(t.rows.values().cloned().collect())
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere must not take the server with it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new session; its connection id.
    pub(crate) fn open_session(&self) -> ConnId {
        let mut state = self.lock();
        let id = state.next_id;
        state.next_id = state.next_id.wrapping_add(1).max(FIRST_ID);
        state.db.sessions.insert(id, Session::default());
        id
    }

    /// Ends session `id`: its transaction rolls back and its locks go.
    pub(crate) fn close_session(&self, id: ConnId) {
        let mut state = self.lock();
        state.db.end_session(id);
        state.report();
        drop(state);
        self.changed.notify_waiters();
    }

    /// A host restart: sessions left by a crash are gone, with their
    /// locks and uncommitted writes.
    pub(crate) fn restart(&self) {
        let mut state = self.lock();
        let ids: Vec<ConnId> = state.db.sessions.keys().copied().collect();
        for id in ids {
            state.db.end_session(id);
        }
        state.report();
        drop(state);
        self.changed.notify_waiters();
    }
}

impl State {
    /// Hands the changes made so far to the observers.
    pub(crate) fn report(&mut self) {
        for change in std::mem::take(&mut self.db.changes) {
            for observer in &self.observers {
                observer(&change);
            }
        }
    }

    pub(crate) fn now_ms(&self) -> i64 {
        (self.config.wall_clock_ms)()
    }
}

impl Db {
    fn end_session(&mut self, id: ConnId) {
        if !self.sessions.contains_key(&id) {
            return;
        }
        self.end_txn(id, false);
        let mut changes = Vec::new();
        self.named
            .release_all(id, ReleaseReason::SessionEnded, &mut changes);
        self.changes.extend(changes);
        self.sessions.remove(&id);
    }

    /// Ends `id`'s transaction, if any: its writes become the committed
    /// rows (`commit`) or vanish, and its row locks go.
    pub(crate) fn end_txn(&mut self, id: ConnId, commit: bool) {
        let Some(writes) = self.sessions.get_mut(&id).and_then(|s| s.txn.take()) else {
            return;
        };
        if commit {
            for ((name, row), write) in writes {
                let Some(table) = self.tables.get_mut(&name) else {
                    continue;
                };
                let (kind, values) = match write {
                    Some(v) => {
                        let kind = if table.rows.contains_key(&row) {
                            RowChange::Update
                        } else {
                            RowChange::Insert
                        };
                        table.rows.insert(row, v.clone());
                        (kind, v)
                    }
                    None => match table.rows.remove(&row) {
                        Some(v) => (RowChange::Delete, v),
                        None => continue,
                    },
                };
                self.changes.push(Change::RowCommitted {
                    key: table.key_of(&values),
                    values: table
                        .columns
                        .iter()
                        .map(|c| c.name.clone())
                        .zip(values)
                        .collect(),
                    table: name,
                    kind,
                });
            }
        }
        self.row_locks.retain(|_, holder| *holder != id);
    }
}
