//! The server's state: tables, advisory locks, row locks and the backend
//! sessions, all under one lock. A statement runs whole under it
//! ([`crate::exec`]), or finds what it needs held by another session and
//! runs nothing: its connection waits for the next change and tries again.
//! Ending a transaction or a session releases what it held and wakes every
//! waiter.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::advisory::{AdvisoryKey, AdvisoryLocks, Released, Scope};
use crate::change::{Change, ReleaseReason};
use crate::replication::{Recovery, Wal, WalChange};
use crate::table::{RowId, Table, WriteSet};

/// A backend's process id, as `pg_backend_pid()` and BackendKeyData give
/// it.
pub type Pid = i32;

/// The first backend pid: the server counts up from it, so a run's pids
/// are the same every time.
const FIRST_PID: Pid = 1000;

/// Server settings.
#[derive(Clone)]
pub struct Config {
    /// The wall clock `now()` reads, in ms since the Unix epoch.
    pub wall_clock_ms: Arc<dyn Fn() -> i64 + Send + Sync>,
    /// What `server_version` reports; psql warns unless its major is 15.
    pub server_version: String,
}

impl Config {
    /// A PostgreSQL 15.18 reading `now()` from `wall_clock_ms`.
    pub fn new(wall_clock_ms: Arc<dyn Fn() -> i64 + Send + Sync>) -> Config {
        Config {
            wall_clock_ms,
            server_version: "15.18".into(),
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

/// An open transaction.
#[derive(Debug)]
pub(crate) struct Txn {
    /// A statement in it failed: only COMMIT or ROLLBACK are taken.
    pub(crate) failed: bool,
    /// When it started (microseconds): `now()` inside it.
    pub(crate) started_us: i64,
    /// Its writes, visible to it alone until it commits.
    pub(crate) writes: WriteSet,
}

/// A backend session: one per connection.
#[derive(Debug, Default)]
pub(crate) struct Session {
    pub(crate) txn: Option<Txn>,
    /// Advisory keys handed to this session while it waited in their
    /// queue: its waiting statement finds them here and completes.
    pub(crate) handed: BTreeSet<AdvisoryKey>,
    /// Its wait closed a cycle: the waiting statement fails with 40P01.
    pub(crate) deadlocked: bool,
}

type Observer = Arc<dyn Fn(&Change) + Send + Sync>;

pub(crate) struct State {
    pub(crate) config: Config,
    pub(crate) tables: BTreeMap<String, Table>,
    pub(crate) next_row: RowId,
    pub(crate) advisory: AdvisoryLocks,
    /// Row locks (FOR UPDATE, UPDATE, DELETE) held until their
    /// transaction ends.
    pub(crate) row_locks: BTreeMap<(String, RowId), Pid>,
    pub(crate) sessions: BTreeMap<Pid, Session>,
    next_pid: Pid,
    observers: Vec<Observer>,
    /// A blocked statement changed another's fate (a deadlock victim):
    /// the waiters must look again.
    pub(crate) wake: bool,
    /// What a standby following this server has yet to replay.
    pub(crate) wal: Wal,
    /// Where its replay stands, while the server is a standby in recovery.
    pub(crate) recovery: Option<Recovery>,
    /// Its host is up and serving: a standby replays only then.
    pub(crate) serving: bool,
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
            .field("sessions", &state.sessions.len())
            .field("tables", &state.tables.len())
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
                tables: BTreeMap::new(),
                next_row: 1,
                advisory: AdvisoryLocks::default(),
                row_locks: BTreeMap::new(),
                sessions: BTreeMap::new(),
                next_pid: FIRST_PID,
                observers: Vec::new(),
                wake: false,
                wal: Wal::default(),
                recovery: None,
                serving: false,
            })),
        }
    }

    /// Calls `observer` with every [`Change`], under the server's lock (it
    /// must not call back into the server).
    pub fn observe(&self, observer: Arc<dyn Fn(&Change) + Send + Sync>) {
        self.lock().observers.push(observer);
    }

    /// The pids of the live sessions.
    pub fn session_pids(&self) -> Vec<Pid> {
        self.lock().sessions.keys().copied().collect()
    }

    /// Every advisory lock held and its holder, in key order.
    pub fn advisory_locks(&self) -> Vec<(AdvisoryKey, Pid)> {
        self.lock().advisory.held()
    }

    /// The committed rows of `table`, in insertion order.
    pub fn committed_rows(&self, table: &str) -> Option<Vec<Vec<crate::value::Value>>> {
        let state = self.lock();
        let t = state.tables.get(table)?;
        Some(t.rows.values().cloned().collect())
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere must not take the server with it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new session; its pid.
    pub(crate) fn open_session(&self) -> Pid {
        let mut state = self.lock();
        let pid = state.next_pid;
        state.next_pid = state.next_pid.wrapping_add(1).max(FIRST_PID);
        state.sessions.insert(pid, Session::default());
        pid
    }

    /// Ends session `pid`: its transaction rolls back and its locks go.
    pub(crate) fn close_session(&self, pid: Pid) {
        let mut state = self.lock();
        state.end_session(pid);
        drop(state);
        self.changed.notify_waiters();
    }

    /// A host restart: sessions left by a crash are gone, with their
    /// locks and uncommitted writes.
    pub(crate) fn restart(&self) {
        let mut state = self.lock();
        state.serving = true;
        let pids: Vec<Pid> = state.sessions.keys().copied().collect();
        for pid in pids {
            state.end_session(pid);
        }
        drop(state);
        self.changed.notify_waiters();
    }

    /// Its host went down: nothing is served until [`Server::restart`].
    pub(crate) fn stopped(&self) {
        self.lock().serving = false;
    }
}

impl State {
    pub(crate) fn emit(&self, change: Change) {
        for observer in &self.observers {
            observer(&change);
        }
    }

    pub(crate) fn now_us(&self) -> i64 {
        (self.config.wall_clock_ms)().saturating_mul(1000)
    }

    fn end_session(&mut self, pid: Pid) {
        if !self.sessions.contains_key(&pid) {
            return;
        }
        self.end_txn_because(pid, false, ReleaseReason::SessionEnded);
        self.advisory.forget_waiter(pid);
        let released = self.advisory.release_all(pid, Scope::Session);
        self.report_releases(pid, released, ReleaseReason::SessionEnded);
        self.sessions.remove(&pid);
    }

    /// Reports `pid`'s releases, and the grants they made to waiters.
    pub(crate) fn report_releases(
        &mut self,
        pid: Pid,
        released: Vec<(AdvisoryKey, Released)>,
        why: ReleaseReason,
    ) {
        for (key, r) in released {
            self.emit(Change::LockReleased { key, pid, why });
            if let Some((next, scope)) = r.next {
                if let Some(s) = self.sessions.get_mut(&next) {
                    s.handed.insert(key);
                }
                self.emit(Change::LockGranted {
                    key,
                    pid: next,
                    scope,
                });
            }
        }
    }

    /// Ends `pid`'s transaction, if any: its writes become the committed
    /// rows (`commit`) or vanish, and its row and transaction locks go.
    pub(crate) fn end_txn(&mut self, pid: Pid, commit: bool) {
        self.end_txn_because(pid, commit, ReleaseReason::TransactionEnded);
    }

    /// Ends `pid`'s transaction; its transaction-level locks go for `why`
    /// (its session's end rolls it back: those locks went with the
    /// session).
    fn end_txn_because(&mut self, pid: Pid, commit: bool, why: ReleaseReason) {
        let Some(txn) = self.sessions.get_mut(&pid).and_then(|s| s.txn.take()) else {
            return;
        };
        if commit && !txn.failed {
            for ((name, id), write) in txn.writes {
                let logged = WalChange::Row {
                    table: name.clone(),
                    id,
                    write: write.clone(),
                };
                // A table dropped meanwhile has nothing to write to.
                let change = (self.tables.get_mut(&name)).and_then(|t| t.commit(name, id, write));
                if let Some(change) = change {
                    self.emit(change);
                    self.wal.log(logged);
                }
            }
        }
        self.row_locks.retain(|_, holder| *holder != pid);
        let released = self.advisory.release_all(pid, Scope::Transaction);
        self.report_releases(pid, released, why);
    }
}
